"""A pool of rollout engines behind a router, with the advance-until interface.

The experience producer (twin.sim.producer) drives the pool; the pool never sees per-token or
per-request events, only the finishes it reports. Contract:

* ``submit(ids, prompt_tokens, new_tokens, arrival)`` queues segments (a single-turn
  trajectory is one segment; a multi-turn one re-submits each turn with its longer
  context). Arrivals never go back in time: ``arrival >= pool.now`` and non-decreasing.
* ``next_event_time()`` is when the earliest finish will happen if nothing else is
  submitted; ``advance(until)`` returns every finish up to ``until`` in time order. After
  ``advance(t)`` the caller may submit at ``t`` and later.
* ``interrupt(at, keep=...)`` is a weight update: it reports finishes before ``at``, then
  drops in-flight and arrived work (``keep=False``, ids returned) or keeps it and recomputes
  its KV cache under the new weights (partial rollout, ``keep=True``).

Engines advance lazily: one whose next finish is known to lie after ``until`` is left where
it is (its future cannot change until something is submitted to it). ``settle=True`` brings
every engine with work up to ``until``, so that busy time and spans are current.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from twin.plan import Plan
from twin.cost.engine import EngineCosts, engine_costs
from twin.engine.backends import KernelBackend, ReferenceBackend
from twin.engine.layout import check_costs, total_blocks
from twin.engine.router import ROUTERS, route

KINDS = ("continuous", "static", "hf_generate")  # hf_generate: the static kernel, HF's costs
BACKENDS = {"kernel": KernelBackend, "reference": ReferenceBackend}


class Events(NamedTuple):
    """Finished segments in time order: trajectory id, finish time, engine index."""

    ids: np.ndarray
    times: np.ndarray
    engines: np.ndarray

    def __len__(self) -> int:
        return self.ids.size


class EngineSpans(NamedTuple):
    """Busy intervals per engine (contiguous iterations merged), sorted by engine then start."""

    engines: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


@dataclass(frozen=True)
class EngineStats:
    """Per-engine counters, each an array indexed by engine.

    ``tokens_generated`` counts sampled response tokens (padding excluded, dropped work
    included); ``wasted_tokens`` counts KV tokens discarded by preemption or by a
    partial-rollout interrupt (they are computed again); ``padding_tokens`` is static
    batching's padding of prompts and responses.
    """

    clock_s: np.ndarray
    busy_s: np.ndarray
    tokens_generated: np.ndarray
    preemptions: np.ndarray
    wasted_tokens: np.ndarray
    padding_tokens: np.ndarray


def _sorted(ids, times, engines) -> Events:
    order = np.argsort(times, kind="stable")
    return Events(ids[order], times[order], engines[order])


class EnginePool:
    """``engines`` identical engines of one :class:`EngineCosts`, fed by a router."""

    def __init__(self, costs: EngineCosts, engines: int = 1, *, kind: str = "continuous",
                 router: str = "least_loaded", backend: str = "kernel") -> None:
        if engines < 1:
            raise ValueError(f"a pool needs at least one engine, got {engines}")
        for name, value, allowed in (("kind", kind, KINDS), ("router", router, ROUTERS),
                                     ("backend", backend, tuple(BACKENDS))):
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")
        check_costs(costs)
        self.costs, self.kind, self.router = costs, kind, router
        self._backend = BACKENDS[backend](costs, engines, kind)
        self._max_tokens = total_blocks(costs) * costs.block_size
        self._next = np.full(engines, math.inf)
        self._dirty = np.zeros(engines, bool)
        self._rr = 0
        self._last_arrival = -math.inf

    @classmethod
    def from_scenario(cls, plan: Plan, *, backend: str = "kernel") -> "EnginePool":
        """The rollout pool of ``plan``: its engines, batching kind and router."""
        r = plan.placement.rollout
        return cls(engine_costs(plan), plan.rollout_engines, kind=r.engine,
                   router=r.router, backend=backend)

    @property
    def engines(self) -> int:
        return self._next.size

    @property
    def now(self) -> float:
        """The latest time any engine has been simulated to."""
        return float(max(0.0, self._backend.clocks().max()))

    def outstanding(self) -> np.ndarray:
        """Requests per engine that have not finished (waiting or running)."""
        return self._backend.outstanding()

    def submit(self, ids, prompt_tokens, new_tokens, arrival) -> np.ndarray:
        """Queue segments; returns the engine each one was routed to.

        ``ids`` identify trajectories in events; ``prompt_tokens`` is the context the segment
        starts from, ``new_tokens`` the tokens to generate in it. Scalars broadcast.
        """
        ids = np.atleast_1d(np.asarray(ids, np.int64))
        n = ids.size
        prompts = np.broadcast_to(np.asarray(prompt_tokens, np.int64), n).copy()
        news = np.broadcast_to(np.asarray(new_tokens, np.int64), n).copy()
        arrivals = np.broadcast_to(np.asarray(arrival, np.float64), n).copy()
        if n == 0:
            return np.empty(0, np.int64)
        if prompts.min() < 1 or news.min() < 1:
            raise ValueError("prompt_tokens and new_tokens must be >= 1")
        if (prompts + news).max() > self._max_tokens:
            raise ValueError(f"a segment of {(prompts + news).max()} tokens exceeds the engine's "
                             f"KV cache of {self._max_tokens} tokens")
        if np.any(np.diff(arrivals) < 0) or arrivals[0] < max(self.now, self._last_arrival):
            raise ValueError(f"arrivals must not go back in time (now {self.now}, "
                             f"last arrival {self._last_arrival})")
        engines = route(self.router, n, self.outstanding(), self._rr)
        self._rr = (self._rr + n) % self.engines
        self._last_arrival = float(arrivals[-1])
        self._backend.submit(engines, ids, prompts, news, arrivals)
        self._dirty[engines] = True
        return engines

    def advance(self, until: float = math.inf, *, settle: bool = False) -> Events:
        """Every finish up to ``until``, in time order (ties: engine order)."""
        busy = self.outstanding() > 0
        run = busy if settle else busy & (self._dirty | (self._next <= until))
        which = np.flatnonzero(run)
        events = _sorted(*self._backend.advance(which, until))
        self._dirty[which] = True
        return events

    def preview(self, until: float) -> Events:
        """The finishes ``advance(until)`` would return, from copies of the engines that would
        run; the pool itself does not move."""
        busy = self.outstanding() > 0
        which = np.flatnonzero(busy & (self._dirty | (self._next <= until)))
        return _sorted(*self._backend.preview(which, until))

    def next_event_time(self) -> float:
        """When the earliest pending segment finishes if nothing else is submitted (inf: none)."""
        busy = self.outstanding() > 0
        self._next[~busy] = math.inf
        self._dirty[~busy] = False
        stale = np.flatnonzero(self._dirty)
        self._next[stale] = self._backend.peek(stale)
        self._dirty[stale] = False
        return float(self._next.min())

    def interrupt(self, at: float, *, keep: bool) -> tuple[Events, np.ndarray]:
        """Weight update at ``at``: (finishes before it, ids dropped — empty when ``keep``)."""
        if at < self.now:
            raise ValueError(f"interrupt at {at} is before the pool's time {self.now}")
        events = self.advance(at, settle=True)
        dropped = self._backend.interrupt(at, keep)
        self._dirty[:] = True
        return events, dropped

    def stats(self) -> EngineStats:
        """Counters per engine, current up to each engine's clock (see ``settle``)."""
        return EngineStats(clock_s=self._backend.clocks(), **self._backend.counters())

    def spans(self) -> EngineSpans:
        """Busy intervals of every engine, up to its clock."""
        engines, starts, ends = self._backend.spans()
        order = np.lexsort((starts, engines))
        return EngineSpans(engines[order], starts[order], ends[order])
