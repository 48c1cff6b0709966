"""A pool of rollout engines behind a router, with the advance-until interface.

The experience producer (twin.sim.producer) drives the pool; the pool never sees per-token or
per-request events, only the finishes it reports. Contract:

* ``submit(ids, prompt_tokens, new_tokens, arrival, follow=...)`` queues requests, each with
  the turns that follow its first (agentic RL: tool latency, reply tokens, tokens to
  generate). The pool runs a trajectory's turns itself: a turn that finishes with turns left
  comes back after its tool's latency, routed again, with its context grown by what it
  generated and the tool's reply (its KV cache is freed meanwhile, so it prefills again). A
  caller may also submit each turn itself (``follow`` omitted). Arrivals never go back in
  time: ``arrival >= pool.now`` and non-decreasing.
* ``next_event_time()`` is when the earliest finish will happen if nothing else is
  submitted (``next_return_time()``: the earliest tool return); ``advance(until)`` returns
  every turn's finish up to ``until`` in time order. After ``advance(t)`` the caller may
  submit at ``t`` and later.
* ``interrupt(at, keep=...)`` is a weight update: it reports finishes before ``at``, then
  drops in-flight and arrived work (``keep=False``, ids returned) or keeps it and recomputes
  its KV cache under the new weights (partial rollout, ``keep=True``; a turn waiting on its
  tool keeps its return time, and ``keep=False`` drops it with its trajectory).

Engines advance lazily: one whose next finish is known to lie after ``until`` is left where
it is (its future cannot change until something is submitted to it). ``settle=True`` brings
every engine with work up to ``until``, so that busy time and spans are current.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from twin.config.engines import ENGINE_KINDS
from twin.config.plan import Plan
from twin.cost.engine import EngineCosts, engine_costs
from twin.engine.backends import KernelBackend, ReferenceBackend, Steps
from twin.engine.layout import LEAST_LOADED, ROUND_ROBIN, check_costs, total_blocks
from twin.engine.router import ROUTERS, route

KINDS = tuple(ENGINE_KINDS)
BACKENDS = {"kernel": KernelBackend, "reference": ReferenceBackend}


class Events(NamedTuple):
    """Finished turns in time order: trajectory id, finish time, engine index, turns the
    trajectory has left after this one (0: its last), and the lockstep step of the advance
    that handled it (twin.engine.drivers; the producer scores one step's rewards together)."""

    ids: np.ndarray
    times: np.ndarray
    engines: np.ndarray
    left: np.ndarray
    step: np.ndarray

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
    included); ``wasted_tokens`` counts tokens computed again after their KV was discarded by
    preemption or by a partial-rollout interrupt (less what the prefix cache kept; static
    batching: counted when discarded), ``recompute_s`` the seconds that cost (per iteration,
    its time less what it would take without the recomputed tokens; continuous batching
    only); ``padding_tokens`` is static batching's padding of prompts and responses.
    """

    clock_s: np.ndarray
    busy_s: np.ndarray
    tokens_generated: np.ndarray
    preemptions: np.ndarray
    wasted_tokens: np.ndarray
    padding_tokens: np.ndarray
    recompute_s: np.ndarray


def _sorted(ids, times, engines, left, step) -> Events:
    order = np.argsort(times, kind="stable")
    return Events(ids[order], times[order], engines[order], left[order], step[order])


class EnginePool:
    """``engines`` engines of one :class:`EngineCosts`, fed by a router; ``slow`` makes some
    of them slower (every iteration × its factor)."""

    def __init__(self, costs: EngineCosts, engines: int = 1, *, kind: str = "continuous",
                 router: str = "least_loaded", backend: str = "kernel",
                 min_tool_s: float = math.inf, slow: np.ndarray | None = None) -> None:
        if engines < 1:
            raise ValueError(f"a pool needs at least one engine, got {engines}")
        for name, value, allowed in (("kind", kind, KINDS), ("router", router, ROUTERS),
                                     ("backend", backend, tuple(BACKENDS))):
            if value not in allowed:
                raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(allowed)}")
        check_costs(costs)
        if slow is not None and (len(slow) != engines or np.min(slow) < 1.0):
            raise ValueError(f"slow: one factor >= 1 per engine ({engines}), got {slow!r}")
        self.costs, self.kind, self.router = costs, kind, router
        self._backend = BACKENDS[backend](costs, engines, kind, slow)
        self._max_tokens = total_blocks(costs) * costs.block_size
        self._next = np.full(engines, math.inf)
        self._dirty = np.zeros(engines, bool)
        self._rr = np.zeros(1, np.int64)
        self._last_arrival = -math.inf
        # The least tool latency: the longest lockstep step (twin.engine.drivers) that no
        # tool return can fall inside. Lowered by any follow-up turn submitted with less.
        self.min_tool_s = float(min_tool_s)
        self._horizon = 0.0

    @classmethod
    def from_scenario(cls, plan: Plan, *, backend: str = "kernel", slow: np.ndarray | None = None) -> "EnginePool":
        """The rollout pool of ``plan``: its engines, batching kind and router; its steps
        are bounded by the least tool latency of the workload. ``slow``: each engine's
        slowdown (a straggler's factor, :mod:`twin.config.stragglers`; None: all at the
        cost table's rate)."""
        r = plan.placement.rollout
        mt = plan.workload.multi_turn
        return cls(engine_costs(plan), plan.rollout_engines, kind=r.engine, router=r.router,
                   backend=backend, min_tool_s=mt.tool_latency_s.lower_bound() if mt else math.inf, slow=slow)

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

    def pending_returns(self) -> int:
        """Turns waiting on a tool (they come back to the engines by themselves)."""
        return self._backend.pending()

    def next_return_time(self) -> float:
        """When the earliest turn waiting on a tool comes back (inf: none)."""
        return self._backend.next_return()

    def submit(self, ids, prompt_tokens, new_tokens, arrival, follow=None, group: int = 1) -> np.ndarray:
        """Queue requests; returns the engine each one was routed to.

        ``ids`` identify trajectories in events; ``prompt_tokens`` is the context the first
        turn starts from, ``new_tokens`` the tokens to generate in it. Scalars broadcast.
        ``follow``: the later turns, as ``(count, tool_s, reply_tokens, new_tokens)`` — turns
        per request, then per turn (requests in order, turns in order) the tool latency
        before it, the tool reply's tokens and the tokens to generate.
        ``group``: consecutive requests that share a prompt (GRPO's responses per prompt). With
        prefix caching a group goes to one engine, as vLLM's ``SamplingParams(n)`` and a
        prompt-sharded batch send it, and its members after the first find the prompt's full
        blocks cached (``twin.engine.reference``).
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
        total = prompts + news
        if follow is not None:
            follow = self._check_follow(n, follow)
            ends = np.cumsum(follow[0])
            grown = np.r_[0, np.cumsum(follow[2] + follow[3])]
            total = total + grown[ends] - grown[ends - follow[0]]
        if total.max() > self._max_tokens:
            raise ValueError(f"a trajectory of {total.max()} tokens exceeds the engine's "
                             f"KV cache of {self._max_tokens} tokens")
        if np.any(np.diff(arrivals) < 0) or arrivals[0] < max(self.now, self._last_arrival):
            raise ValueError(f"arrivals must not go back in time (now {self.now}, "
                             f"last arrival {self._last_arrival})")
        prefixes = None
        if self.costs.prefix_caching and group > 1 and n % group == 0:
            groups = n // group
            engines = np.repeat(route(self.router, groups, self.outstanding() // group, int(self._rr[0])), group)
            self._rr[0] = (self._rr[0] + groups) % self.engines
            prefixes = np.where(np.arange(n) % group == 0, 0, prompts)
        else:
            engines = route(self.router, n, self.outstanding(), int(self._rr[0]))
            self._rr[0] = (self._rr[0] + n) % self.engines
        self._last_arrival = float(arrivals[-1])
        self._backend.submit(engines, ids, prompts, news, arrivals, follow, prefixes)
        self._dirty[engines] = True
        return engines

    def _check_follow(self, n: int, follow):
        count, tool, reply, new = follow
        count = np.broadcast_to(np.asarray(count, np.int64), n).copy()
        tool, reply, new = (np.atleast_1d(np.asarray(a, dt)) for a, dt in
                            ((tool, np.float64), (reply, np.int64), (new, np.int64)))
        if count.min() < 0 or not (tool.size == reply.size == new.size == count.sum()):
            raise ValueError("follow: counts must be >= 0 and the per-turn arrays as long as their sum")
        if tool.size:
            if not (np.isfinite(tool).all() and tool.min() >= 0) or new.min() < 1:
                raise ValueError("follow: tool latencies must be >= 0 and new tokens >= 1")
            self.min_tool_s = min(self.min_tool_s, float(tool.min()))
        return count, tool, reply, new

    def _steps(self, until: float, settle: bool, since: float | None) -> Steps:
        since = self._horizon if since is None else since
        router = LEAST_LOADED if self.router == "least_loaded" else ROUND_ROBIN
        return Steps(self._dirty, self._next, self._rr, router, float(since), float(until), settle,
                     self.min_tool_s)

    def advance(self, until: float = math.inf, *, settle: bool = False,
                since: float | None = None) -> Events:
        """Every turn's finish up to ``until``, in time order (ties: step, then engine order).

        Stops early, at its last finish, once the pool holds nothing (no request, no turn
        waiting on a tool). ``since``: where the lockstep steps start counting (default: where
        the last advance ended); the producer passes its clock.
        """
        events = _sorted(*self._backend.advance(self._steps(until, settle, since)))
        self._horizon = max(self._horizon, until if until < math.inf else self.now)
        return events

    def preview(self, until: float, *, since: float | None = None) -> Events:
        """The finishes ``advance(until)`` would return — tool returns and the turns after them
        included — from a copy of the pool; the pool itself does not move."""
        return _sorted(*self._backend.preview(self._steps(until, False, since)))

    def next_event_time(self) -> float:
        """When the earliest turn on an engine finishes if nothing else is submitted (inf: none;
        a turn waiting on its tool counts only once it is back: see :meth:`next_return_time`)."""
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
        self._horizon = max(self._horizon, at)
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
