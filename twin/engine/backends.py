"""Two interchangeable implementations behind :class:`twin.engine.pool.EnginePool`.

``KernelBackend`` keeps every engine in the arrays of :mod:`twin.engine.layout` and runs the
Numba kernels; ``ReferenceBackend`` holds one plain-Python engine object per engine. Both
answer the same calls with NumPy arrays, so the pool, and the parity tests, cannot tell
them apart except by speed.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from twin.cost.engine import EngineCosts
from twin.engine import drivers
from twin.engine.layout import (BUSY, CLOCK, PADDING, PREEMPTIONS, SPAN_END, SPAN_START, TOKENS,
                                WASTED, KernelCosts, PoolArrays, total_blocks)
from twin.engine.reference import reference_engine

COUNTERS = ("busy_s", "tokens_generated", "preemptions", "wasted_tokens", "padding_tokens")

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


def _empty_triple() -> Triple:
    return np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.int64)


class KernelBackend:
    """All engines of a pool as arrays, advanced by the Numba kernels."""

    def __init__(self, costs: EngineCosts, engines: int, kind: str) -> None:
        self.kc = KernelCosts.of(costs)
        self.static = kind in ("static", "hf_generate")  # one kernel; the costs differ
        self.s = PoolArrays.empty(engines, costs.max_num_seqs, total_blocks(costs))
        self._closed_spans: list[Triple] = []

    def _args(self):
        s = self.s
        return (self.static, s.req, s.arrival, s.running, s.waiting, s.free_slots, s.eng, s.engf)

    def outstanding(self) -> np.ndarray:
        return self.s.outstanding()

    def clocks(self) -> np.ndarray:
        return self.s.engf[:, CLOCK].copy()

    def submit(self, engines, ids, prompts, news, arrivals) -> None:
        counts = np.bincount(engines, minlength=self.s.eng.shape[0])
        self.s.reserve(int((self.s.outstanding() + counts).max()))
        s = self.s
        drivers.submit_requests(s.req, s.arrival, s.waiting, s.free_slots, s.eng,
                                engines, ids, prompts, news, arrivals)

    def _span_buffers(self, n: int):
        return np.empty(n, np.int64), np.empty((2, n), np.float64), np.zeros(2, np.int64)

    def _keep_spans(self, sp_e, sp_t, n) -> None:
        if n:
            self._closed_spans.append((sp_e[:n].copy(), sp_t[0, :n].copy(), sp_t[1, :n].copy()))

    def advance(self, which: np.ndarray, until: float) -> Triple:
        """Finish events (ids, times, engines) of ``which`` up to ``until``, per engine in time order."""
        if which.size == 0:
            return _empty_triple()
        n = int(self.s.outstanding()[which].sum()) + which.size + 1
        ev_i, ev_t = np.empty((2, n), np.int64), np.empty(n, np.float64)
        sp_e, sp_t, counts = self._span_buffers(n)
        drivers.advance_engines(*self._args(), self.kc.tab, self.kc.cf, self.kc.params,
                                which.astype(np.int64), float(until), ev_i, ev_t, sp_e, sp_t, counts)
        self._keep_spans(sp_e, sp_t, counts[1])
        k = counts[0]
        return ev_i[0, :k].copy(), ev_t[:k].copy(), ev_i[1, :k].copy()

    def preview(self, which: np.ndarray, until: float) -> Triple:
        """What :meth:`advance` would report, run on copies of the engines (state unchanged)."""
        if which.size == 0:
            return _empty_triple()
        s = self.s
        copies = [a[which] for a in (s.req, s.arrival, s.running, s.waiting, s.free_slots, s.eng, s.engf)]
        n = int(s.outstanding()[which].sum()) + which.size + 1
        ev_i, ev_t = np.empty((2, n), np.int64), np.empty(n, np.float64)
        sp_e, sp_t, counts = self._span_buffers(n)
        drivers.advance_engines(self.static, *copies, self.kc.tab, self.kc.cf, self.kc.params,
                                np.arange(which.size, dtype=np.int64), float(until), ev_i, ev_t,
                                sp_e, sp_t, counts)
        k = counts[0]
        return ev_i[0, :k].copy(), ev_t[:k].copy(), which[ev_i[1, :k]].astype(np.int64)

    def peek(self, which: np.ndarray) -> np.ndarray:
        out = np.empty(which.size, np.float64)
        if which.size:
            drivers.peek_engines(*self._args(), self.kc.tab, self.kc.cf, self.kc.params,
                                 which.astype(np.int64), out)
        return out

    def interrupt(self, at: float, keep: bool) -> np.ndarray:
        n = int(self.s.outstanding().sum()) + 1
        dropped = np.empty(n, np.int64)
        engines = self.s.eng.shape[0]
        sp_e, sp_t, counts = self._span_buffers(engines + 1)
        k = drivers.interrupt_engines(*self._args(), self.kc.params, float(at), keep,
                                      dropped, sp_e, sp_t, counts)
        self._keep_spans(sp_e, sp_t, counts[1])
        return dropped[:k].copy()

    def counters(self) -> dict[str, np.ndarray]:
        eng, engf = self.s.eng, self.s.engf
        return {"busy_s": engf[:, BUSY].copy(), "tokens_generated": eng[:, TOKENS].copy(),
                "preemptions": eng[:, PREEMPTIONS].copy(), "wasted_tokens": eng[:, WASTED].copy(),
                "padding_tokens": eng[:, PADDING].copy()}

    def spans(self) -> Triple:
        engf = self.s.engf
        open_ = np.flatnonzero(np.isfinite(engf[:, SPAN_START]))
        parts = self._closed_spans + [(open_, engf[open_, SPAN_START], engf[open_, SPAN_END])]
        return tuple(np.concatenate(p) for p in zip(*parts))


class ReferenceBackend:
    """One plain-Python reference engine per engine (slow; the kernels' oracle)."""

    def __init__(self, costs: EngineCosts, engines: int, kind: str) -> None:
        self.engines = [reference_engine(costs, kind) for _ in range(engines)]

    def outstanding(self) -> np.ndarray:
        return np.array([e.outstanding for e in self.engines], np.int64)

    def clocks(self) -> np.ndarray:
        return np.array([e.clock for e in self.engines], np.float64)

    def submit(self, engines, ids, prompts, news, arrivals) -> None:
        for e, i, p, g, a in zip(engines, ids, prompts, news, arrivals):
            self.engines[e].submit(int(i), int(p), int(g), float(a))

    @staticmethod
    def _triple(rows) -> Triple:
        if not rows:
            return _empty_triple()
        ids, times, engines = zip(*rows)
        return np.array(ids, np.int64), np.array(times, np.float64), np.array(engines, np.int64)

    def advance(self, which: np.ndarray, until: float) -> Triple:
        rows = [(i, t, e) for e in which for i, t in self.engines[e].advance(until)]
        return self._triple(rows)

    def preview(self, which: np.ndarray, until: float) -> Triple:
        rows = [(i, t, e) for e in which for i, t in copy.deepcopy(self.engines[e]).advance(until)]
        return self._triple(rows)

    def peek(self, which: np.ndarray) -> np.ndarray:
        out = np.empty(which.size, np.float64)
        for k, e in enumerate(which):
            events = copy.deepcopy(self.engines[e]).advance(math.inf, max_events=1)
            out[k] = events[0][1] if events else math.inf
        return out

    def interrupt(self, at: float, keep: bool) -> np.ndarray:
        return np.array([i for e in self.engines for i in e.interrupt(at, keep)], np.int64)

    def counters(self) -> dict[str, np.ndarray]:
        return {name: np.array([getattr(e, name) for e in self.engines]) for name in COUNTERS}

    def spans(self) -> Triple:
        rows = [(k, s, t) for k, e in enumerate(self.engines)
                for s, t in e.spans + ([tuple(e.open_span)] if e.open_span else [])]
        if not rows:
            return np.empty(0, np.int64), np.empty(0), np.empty(0)
        engines, starts, ends = zip(*rows)
        return np.array(engines, np.int64), np.array(starts), np.array(ends)
