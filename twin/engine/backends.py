"""Two interchangeable implementations behind :class:`twin.engine.pool.EnginePool`.

``KernelBackend`` keeps every engine in the arrays of :mod:`twin.engine.layout` and runs the
Numba kernels; ``ReferenceBackend`` holds one plain-Python engine object per engine. Both
answer the same calls with NumPy arrays, so the pool, and the parity tests, cannot tell
them apart except by speed.
"""

from __future__ import annotations

import copy
import heapq
import math
from dataclasses import dataclass, replace

import numpy as np

from twin.config.engines import ENGINE_KINDS
from twin.cost.engine import EngineCosts
from twin.engine import drivers
from twin.engine.layout import (
    BUSY,
    CLOCK,
    EV_ENGINE,
    EV_FIELDS,
    EV_ID,
    EV_LEFT,
    EV_STEP,
    LEAST_LOADED,
    PADDING,
    PREEMPTIONS,
    RECOMPUTE_S,
    RET_END,
    RET_NEXT,
    SPAN_END,
    SPAN_START,
    TOKENS,
    TURN_END,
    TURN_NEXT,
    WASTED,
    KernelCosts,
    PoolArrays,
    TurnArrays,
    total_blocks,
)
from twin.engine.reference import reference_engine

COUNTERS = ("busy_s", "tokens_generated", "preemptions", "wasted_tokens", "padding_tokens", "recompute_s")

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]
Finishes = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # id, time, engine, left, step


@dataclass
class Steps:
    """How one advance is cut into lockstep steps (twin.engine.drivers), and the pool's lazy
    bookkeeping it updates: per engine whether its future changed since it was last peeked
    (``dirty``) and its next finish as then known (``next``); the round-robin cursor ``rr``."""

    dirty: np.ndarray
    next: np.ndarray
    rr: np.ndarray
    router: int
    since: float
    until: float
    settle: bool
    gap: float

    def copy(self) -> "Steps":
        return replace(self, dirty=self.dirty.copy(), next=self.next.copy(), rr=self.rr.copy())


def _empty_triple() -> Triple:
    return np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.int64)


def _follow_rows(count: int, follow) -> tuple[np.ndarray, np.ndarray]:
    """Per request (first follow-up row, one past its last) relative to row 0 of ``follow``."""
    if follow is None:
        zeros = np.zeros(count, np.int64)
        return zeros, zeros
    counts = np.asarray(follow[0], np.int64)
    ends = np.cumsum(counts)
    return ends - counts, ends


class KernelBackend:
    """All engines of a pool as arrays, advanced by the Numba kernels."""

    def __init__(self, costs: EngineCosts, engines: int, kind: str, slow: np.ndarray | None = None) -> None:
        self.kc = KernelCosts.of(costs)
        self.cf = self.kc.per_engine(np.ones(engines) if slow is None else slow)  # a row per engine
        # the batching, as the kernels take it: None (continuous) or True (static), a type, so
        # that a pool compiles only its own (twin.jit.by_batching)
        self.static = True if ENGINE_KINDS[kind].batching == "static" else None
        self.s = PoolArrays.empty(engines, costs.max_num_seqs, total_blocks(costs))
        self.t = TurnArrays.empty()
        self._closed_spans: list[Triple] = []

    def _args(self):
        s = self.s
        return (self.static, s.req, s.arrival, s.running, s.waiting, s.free_slots, s.eng, s.engf)

    def outstanding(self) -> np.ndarray:
        return self.s.outstanding()

    def pending(self) -> int:
        return self.t.pending

    def next_return(self) -> float:
        return float(self.t.heap_view()[0].min()) if self.t.pending else math.inf

    def clocks(self) -> np.ndarray:
        return self.s.engf[:, CLOCK].copy()

    def _first_live(self) -> int:
        """The lowest follow-up row a request or a pending return still points at."""
        req = self.s.req
        nxt, end = req[:, TURN_NEXT], req[:, TURN_END]
        _, ret = self.t.heap_view()
        live = np.r_[nxt[end > nxt], ret[RET_NEXT][ret[RET_END] > ret[RET_NEXT]]]
        return int(live.min()) if live.size else self.t.base + self.t.held

    def submit(self, engines, ids, prompts, news, arrivals, follow=None, prefixes=None) -> None:
        counts = np.bincount(engines, minlength=self.s.eng.shape[0])
        self.s.reserve(int((self.s.outstanding() + counts).max()))
        first, last = _follow_rows(ids.size, follow)
        if follow is not None:
            base = self.t.add(*(np.asarray(f) for f in follow[1:]), self._first_live())
            first, last = first + base, last + base
        s = self.s
        if prefixes is None:
            prefixes = np.zeros(ids.size, np.int64)
        drivers.submit_requests(s.req, s.arrival, s.waiting, s.free_slots, s.eng,
                                engines, ids, prompts, news, arrivals, first, last,
                                np.asarray(prefixes, np.int64))

    def _buffers(self, s: PoolArrays, t: TurnArrays):
        """Event and span buffers that hold every turn still to finish."""
        req = s.req
        held = s.outstanding()
        _, ret = t.heap_view()
        t.reserve_returns(int((req[:, TURN_END] > req[:, TURN_NEXT]).sum()) + t.pending + 1)
        n = (int(held.sum()) + int((req[:, TURN_END] - req[:, TURN_NEXT]).sum()) + t.pending
             + int((ret[RET_END] - ret[RET_NEXT]).sum()) + held.size + 1)
        return (np.empty((EV_FIELDS, n), np.int64), np.empty(n, np.float64), np.empty(n + held.size, np.int64),
                np.empty((2, n + held.size), np.float64), np.zeros(3, np.int64))

    def _keep_spans(self, sp_e, sp_t, n) -> None:
        if n:
            self._closed_spans.append((sp_e[:n].copy(), sp_t[0, :n].copy(), sp_t[1, :n].copy()))

    def _run(self, s: PoolArrays, t: TurnArrays, steps: Steps):
        ev_i, ev_t, sp_e, sp_t, counts = self._buffers(s, t)
        since, resume, at = steps.since, False, np.zeros(1)
        while True:
            full = drivers.advance_pool(
                self.static, s.req, s.arrival, s.running, s.waiting, s.free_slots, s.eng, s.engf,
                self.kc.tab, self.cf, self.kc.params, steps.dirty, steps.next, steps.rr, steps.router,
                float(since), float(steps.until), bool(steps.settle), float(steps.gap), resume,
                t.ret_t, t.ret_i, t.pstate, t.fu_t, t.fu_i, t.base, ev_i, ev_t, sp_e, sp_t, counts, at)
            if full < 0:
                break
            s.reserve(2 * s.cap)  # a tool return found its engine's slots all taken
            since, resume = float(at[0]), True
        k = counts[0]
        return tuple(a[:k].copy() for a in (ev_i[EV_ID], ev_t, ev_i[EV_ENGINE], ev_i[EV_LEFT],
                                           ev_i[EV_STEP])), (sp_e, sp_t, counts[1])

    def advance(self, steps: Steps) -> Finishes:
        """Every turn's finish (ids, times, engines, turns left, step) from ``steps.since`` to
        ``steps.until``; updates ``steps``' dirty, next and rr in place."""
        events, spans = self._run(self.s, self.t, steps)
        self._keep_spans(*spans)
        return events

    def preview(self, steps: Steps) -> Finishes:
        """What :meth:`advance` would report, run on copies of the pool (state unchanged)."""
        s = self.s
        copy = PoolArrays(*(a.copy() for a in (s.req, s.arrival, s.running, s.waiting, s.free_slots,
                                               s.eng, s.engf)))
        return self._run(copy, self.t.copy(), steps.copy())[0]

    def peek(self, which: np.ndarray) -> np.ndarray:
        out = np.empty(which.size, np.float64)
        if which.size:
            drivers.peek_engines(*self._args(), self.kc.tab, self.cf, self.kc.params,
                                 which.astype(np.int64), out)
        return out

    def interrupt(self, at: float, keep: bool) -> np.ndarray:
        n = int(self.s.outstanding().sum()) + self.t.pending + 1
        dropped = np.empty(n, np.int64)
        engines = self.s.eng.shape[0]
        sp_e, sp_t = np.empty(engines + 1, np.int64), np.empty((2, engines + 1), np.float64)
        counts = np.zeros(2, np.int64)
        k = drivers.interrupt_engines(*self._args(), self.kc.params, float(at), keep,
                                      dropped, sp_e, sp_t, counts)
        if not keep:
            k = drivers.drop_returns(self.t.ret_i, self.t.pstate, dropped, k)
        self._keep_spans(sp_e, sp_t, counts[1])
        return dropped[:k].copy()

    def counters(self) -> dict[str, np.ndarray]:
        eng, engf = self.s.eng, self.s.engf
        return {"busy_s": engf[:, BUSY].copy(), "tokens_generated": eng[:, TOKENS].copy(),
                "preemptions": eng[:, PREEMPTIONS].copy(), "wasted_tokens": eng[:, WASTED].copy(),
                "padding_tokens": eng[:, PADDING].copy(), "recompute_s": engf[:, RECOMPUTE_S].copy()}

    def spans(self) -> Triple:
        engf = self.s.engf
        open_ = np.flatnonzero(np.isfinite(engf[:, SPAN_START]))
        parts = self._closed_spans + [(open_, engf[open_, SPAN_START], engf[open_, SPAN_END])]
        return tuple(np.concatenate(p) for p in zip(*parts))


class ReferenceBackend:
    """One plain-Python reference engine per engine (slow; the kernels' oracle), with the
    lockstep steps of :func:`twin.engine.drivers.advance_pool` written out in Python."""

    def __init__(self, costs: EngineCosts, engines: int, kind: str, slow: np.ndarray | None = None) -> None:
        factors = np.ones(engines) if slow is None else slow
        self.engines = [reference_engine(costs.slowed(float(f)), kind) for f in factors]
        self.returns: list = []  # heap of (time, seq, id, prompt, new, follow-ups)
        self.seq = 0

    def outstanding(self) -> np.ndarray:
        return np.array([e.outstanding for e in self.engines], np.int64)

    def pending(self) -> int:
        return len(self.returns)

    def next_return(self) -> float:
        return self.returns[0][0] if self.returns else math.inf

    def clocks(self) -> np.ndarray:
        return np.array([e.clock for e in self.engines], np.float64)

    def submit(self, engines, ids, prompts, news, arrivals, follow=None, prefixes=None) -> None:
        first, last = _follow_rows(ids.size, follow)
        rows = list(zip(*(np.asarray(f).tolist() for f in follow[1:]))) if follow is not None else []
        if prefixes is None:
            prefixes = np.zeros(ids.size, np.int64)
        for k, (e, i, p, g, a) in enumerate(zip(engines, ids, prompts, news, arrivals)):
            self.engines[e].submit(int(i), int(p), int(g), float(a), tuple(rows[first[k]:last[k]]),
                                   int(prefixes[k]))

    @staticmethod
    def _peek(engine) -> float:
        events = copy.deepcopy(engine).advance(math.inf, max_events=1)
        return events[0][1] if events else math.inf

    def _run(self, engines, returns, steps: Steps) -> Finishes:
        rows = []
        start, step, stepped = steps.since, 0, False
        while True:
            while returns and returns[0][0] <= start:  # the last step's returns
                t, _, i, prompt, new, follow = heapq.heappop(returns)
                if steps.router == LEAST_LOADED:
                    loads = [e.outstanding for e in engines]
                    k = loads.index(min(loads))
                else:
                    k = int(steps.rr[0]) % len(engines)
                    steps.rr[0] = (k + 1) % len(engines)
                engines[k].submit(i, prompt, new, t, follow)
                steps.dirty[k] = True
            if stepped and start >= steps.until:
                break
            stepped = True
            held = sum(e.outstanding for e in engines)
            if held == 0 and not returns:
                break
            end = steps.until
            if returns:
                end = min(end, returns[0][0])
            if held and steps.gap < math.inf:
                if steps.gap > 0:
                    end = min(end, start + steps.gap)
                else:  # EnginePool.next_event_time's rule
                    for k, e in enumerate(engines):
                        if not e.outstanding:
                            steps.next[k], steps.dirty[k] = math.inf, False
                        elif steps.dirty[k]:
                            steps.next[k], steps.dirty[k] = self._peek(e), False
                    end = min(end, max(start, float(steps.next.min())))
            for k, e in enumerate(engines):
                if e.outstanding and (steps.settle or steps.dirty[k] or steps.next[k] <= end):
                    for r, t in e.advance(end):
                        rows.append((r.id, t, k, len(r.follow), step))
                        if r.follow:
                            tool, reply, new = r.follow[0]
                            heapq.heappush(returns, (t + tool, self.seq, r.id, r.prompt + r.new + reply,
                                                     new, r.follow[1:]))
                            self.seq += 1
                    steps.dirty[k] = True
            step += 1
            start = end
        if not rows:
            return _empty_triple() + (np.empty(0, np.int64), np.empty(0, np.int64))
        return tuple(np.array(c, dtype) for c, dtype in
                     zip(zip(*rows), (np.int64, np.float64, np.int64, np.int64, np.int64)))

    def advance(self, steps: Steps) -> Finishes:
        return self._run(self.engines, self.returns, steps)

    def preview(self, steps: Steps) -> Finishes:
        seq = self.seq
        out = self._run(copy.deepcopy(self.engines), copy.deepcopy(self.returns), steps.copy())
        self.seq = seq
        return out

    def peek(self, which: np.ndarray) -> np.ndarray:
        return np.array([self._peek(self.engines[e]) for e in which], np.float64)

    def interrupt(self, at: float, keep: bool) -> np.ndarray:
        dropped = [i for e in self.engines for i in e.interrupt(at, keep)]
        if not keep:
            dropped += [r[2] for r in self.returns]
            self.returns = []
        return np.array(dropped, np.int64)

    def counters(self) -> dict[str, np.ndarray]:
        return {name: np.array([getattr(e, name) for e in self.engines]) for name in COUNTERS}

    def spans(self) -> Triple:
        rows = [(k, s, t) for k, e in enumerate(self.engines)
                for s, t in e.spans + ([tuple(e.open_span)] if e.open_span else [])]
        if not rows:
            return np.empty(0, np.int64), np.empty(0), np.empty(0)
        engines, starts, ends = zip(*rows)
        return np.array(engines, np.int64), np.array(starts), np.array(ends)
