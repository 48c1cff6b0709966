"""The sandbox reward service as a many-server FCFS queue: a Numba kernel and its reference.

Jobs (one per trajectory) arrive in time order; each takes the worker that frees first
(ties to the lowest worker id, so runs are deterministic). An attempt lasts its sampled
service time times the worker's slowdown (a straggler's factor, 1 at full speed), cut at the
timeout; a failed or timed-out attempt is retried at once on the
same worker (the sandbox restarts the test run) until ``max_retries`` are spent, after which
the job is reported failed. Service times and failure draws are sampled by the caller, so
kernel and reference see identical inputs.
"""

from __future__ import annotations

import heapq

import numpy as np

from twin.engine.heap import sift_down
from twin.jit import njit


def new_pool(workers: int, slow: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The queue's state between calls: a min-heap of (free time, worker id), and each
    worker's slowdown (``slow``; None: all at full speed)."""
    factors = np.ones(workers) if slow is None else np.ascontiguousarray(slow, dtype=np.float64)
    return np.zeros(workers), np.arange(workers, dtype=np.int64), factors


@njit
def serve(service, failed, j, timeout, t0, slow):
    """Job ``j`` from ``t0`` on a worker ``slow`` times slower than its sampled times: attempts
    until one succeeds within the timeout or the retries run out; returns (end time, attempts,
    success)."""
    t = t0
    k = 0
    while k < service.shape[1]:
        took = service[j, k] * slow
        t += min(took, timeout)
        k += 1
        if took <= timeout and not failed[j, k - 1]:
            return t, k, True
    return t, k, False


@njit
def sandbox_queue_kernel(arrival, service, failed, keys, ids, slow, timeout):
    """Serve jobs in order; returns (start, end, worker, attempts, ok) per job and the busy
    seconds per worker. ``keys``/``ids``/``slow`` (see :func:`new_pool`; keys and ids are
    updated in place, so a later call continues where this one left off). ``service`` and
    ``failed`` have one column per attempt (1 + max_retries).
    """
    workers = len(keys)
    n = service.shape[0]
    start = np.empty(n)
    end = np.empty(n)
    worker = np.empty(n, np.int64)
    attempts = np.empty(n, np.int64)
    ok = np.empty(n, np.bool_)
    busy = np.zeros(workers)
    for j in range(n):
        w = ids[0]
        t0 = max(arrival[j], keys[0])
        t, k, success = serve(service, failed, j, timeout, t0, slow[w])
        start[j], end[j], worker[j], attempts[j], ok[j] = t0, t, w, k, success
        busy[w] += t - t0
        keys[0] = t
        sift_down(keys, ids, workers, 0)
    return start, end, worker, attempts, ok, busy


def sandbox_queue_reference(arrival, service, failed, keys, ids, slow, timeout):
    """Plain-Python twin of :func:`sandbox_queue_kernel` (same semantics, heapq)."""
    n = service.shape[0]
    workers = len(keys)
    heap = [(float(k), int(w)) for k, w in zip(keys, ids)]
    heapq.heapify(heap)
    start, end = np.empty(n), np.empty(n)
    worker, attempts = np.empty(n, np.int64), np.empty(n, np.int64)
    ok, busy = np.empty(n, np.bool_), np.zeros(workers)
    for j in range(n):
        free, w = heapq.heappop(heap)
        t0 = max(float(arrival[j]), free)
        t, k, success = serve(service, failed, j, timeout, t0, slow[w])  # the queue, not the attempts, is on trial
        start[j], end[j], worker[j], attempts[j], ok[j] = t0, t, w, k, success
        busy[w] += t - t0
        heapq.heappush(heap, (t, w))
    heap.sort()  # a sorted array is a valid heap: hand the state back in the kernel's layout
    keys[:] = [k for k, _ in heap]
    ids[:] = [w for _, w in heap]
    return start, end, worker, attempts, ok, busy
