"""Cost tables and workloads shared by the engine tests (imported as a plain module)."""

from __future__ import annotations

import functools
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from twin.runner import plan as plan_of
from twin.cost.engine import EngineCosts, engine_costs
from twin.engine import EnginePool


def synthetic_costs(*, max_num_seqs: int = 8, budget: int = 64, block_size: int = 4,
                    kv_tokens: int = 4096, overhead: float = 1e-3, linear: float = 2e-5,
                    weights: float = 4e-4, attn: float = 3e-7, kv: float = 2e-6,
                    comm: float = 0.0, host_floor: float = 0.0, copy: float = 0.0,
                    prefix_caching: bool = False) -> EngineCosts:
    """A small EngineCosts whose compute and memory paths cross at modest batch and context
    (``host_floor``, ``copy``: HF generate's terms, twin.cost.hf_generate)."""
    n = np.arange(budget + 1, dtype=np.float64)
    return EngineCosts(
        overhead_s=overhead,
        linear_s=linear * n,
        weights_s=np.where(n > 0, weights + 1e-7 * n, 0.0),
        comm_s=np.where(n > 0, comm * (1 + n / budget), 0.0),
        attn_s_per_pair=attn,
        kv_s_per_token=kv,
        kv_capacity_tokens=kv_tokens,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=budget,
        block_size=block_size,
        max_model_len=kv_tokens,
        host_floor_s=host_floor,
        cache_copy_s_per_token=copy,
        prefix_caching=prefix_caching,
    )


@functools.cache
def scenario_costs(**overrides) -> EngineCosts:
    """EngineCosts of the built-in scenario (tp=1), with optional ``--set``-style overrides."""
    return engine_costs(plan_of(overrides=overrides or None))



def long_tailed(n: int, seed: int, median: float, cap: int, sigma: float = 1.0) -> np.ndarray:
    """Lognormal response lengths (the long tail of RL reasoning rollouts), clipped to ``cap``."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(np.log(median), sigma, n), 1, cap).astype(np.int64)


@dataclass
class Workload:
    """First-turn segments (sorted by arrival), optional second turns, an optional interrupt."""

    ids: np.ndarray
    prompts: np.ndarray
    news: np.ndarray
    arrivals: np.ndarray
    second_turn: dict = field(default_factory=dict)  # id -> (tool reply tokens, new tokens)
    tool_latency: float = 0.0
    interrupt_at: float = math.inf
    keep: bool = True
    group: int = 1  # consecutive first turns sharing a prompt and an arrival (GRPO's group)


@dataclass
class Outcome:
    finished: dict  # (id, turn) -> time
    dropped: set
    events: list  # every Events returned, in order
    pool: EnginePool


def drive(pool: EnginePool, w: Workload) -> Outcome:
    """Play ``w`` against ``pool`` the way the simulator will: event by event.

    Submissions happen when time reaches them, a finished first turn comes back after the
    tool latency with its context grown, and the interrupt fires when its time comes.
    """
    first = deque(zip(w.arrivals.tolist(), w.ids.tolist(), w.prompts.tolist(), w.news.tolist()))
    later: deque = deque()
    turn = {i: 1 for i in w.ids.tolist()}
    out = Outcome({}, set(), [], pool)
    interrupt_at = w.interrupt_at

    def handle(events):
        out.events.append(events)
        for i, t in zip(events.ids.tolist(), events.times.tolist()):
            assert (i, turn[i]) not in out.finished
            out.finished[(i, turn[i])] = t
            if turn[i] == 1 and i in w.second_turn:
                tool, new = w.second_turn[i]
                p = dict(zip(w.ids.tolist(), w.prompts.tolist()))[i]
                g = dict(zip(w.ids.tolist(), w.news.tolist()))[i]
                turn[i] = 2
                later.append((t + w.tool_latency, i, p + g + tool, new))

    while True:
        t_event = pool.next_event_time()
        t_submit = min(first[0][0] if first else math.inf, later[0][0] if later else math.inf)
        t = min(t_event, t_submit, interrupt_at)
        if t == math.inf:
            return out
        if interrupt_at == t:
            events, dropped = pool.interrupt(interrupt_at, keep=w.keep)
            handle(events)
            out.dropped |= set(dropped.tolist())
            interrupt_at = math.inf
        elif t_submit == t:
            handle(pool.advance(t))
            batch = []
            only_first = True
            while first and first[0][0] <= t or later and later[0][0] <= t:
                q = first if first and (not later or first[0][0] <= later[0][0]) else later
                only_first = only_first and q is first
                batch.append(q.popleft())
            a, ids, p, g = (np.array(x) for x in zip(*batch))
            whole = only_first and len(batch) % w.group == 0
            pool.submit(ids, p, g, a, group=w.group if whole else 1)
        else:
            events = pool.advance(t)
            assert len(events) > 0, "next_event_time promised a finish that advance did not deliver"
            handle(events)
