"""Routers that spread requests over the engines of a pool.

``round_robin`` cycles through the engines. ``least_loaded`` sends each request to the
engine with the fewest outstanding requests (waiting + running), lowest index on ties —
what request-count routers in front of vLLM/SGLang do. It counts sequences, not tokens:
a router cannot know how long a response will be, and prompt lengths in one RL step are
nearly equal.
"""

from __future__ import annotations

import heapq

import numpy as np

from twin.jit import njit

ROUTERS = ("round_robin", "least_loaded")


@njit
def least_loaded(load, n):
    """Engines for ``n`` requests, each to the least-loaded engine, counting earlier ones."""
    heap = [(load[e], e) for e in range(load.shape[0])]
    heapq.heapify(heap)
    out = np.empty(n, np.int64)
    for k in range(n):
        count, e = heapq.heappop(heap)
        out[k] = e
        heapq.heappush(heap, (count + 1, e))
    return out


def round_robin(start: int, engines: int, n: int) -> np.ndarray:
    """Engines for ``n`` requests cycling from ``start``."""
    return (start + np.arange(n, dtype=np.int64)) % engines


def route(policy: str, n: int, outstanding: np.ndarray, rr_start: int) -> np.ndarray:
    """Engine index for each of ``n`` new requests under ``policy``."""
    if policy == "round_robin":
        return round_robin(rr_start, outstanding.size, n)
    if policy == "least_loaded":
        return least_loaded(outstanding.astype(np.int64), n)
    raise ValueError(f"unknown router {policy!r}; allowed: {', '.join(ROUTERS)}")
