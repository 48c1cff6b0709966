"""Iteration cost on the kernels' arrays, and its closed forms over runs of decode iterations.

One iteration costs (the formula of :mod:`twin.cost.engine`)::

    device(n, pairs, kv) = overhead + comm[n] + max(linear[n], weights[n]) + max(attn·pairs, kvs·kv)
                           + copy·kv
    t = max(device, host_floor) · slow

(``slow``: a straggling engine's factor, 1 at the table's rate; it scales every time alike.)

``copy`` and ``host_floor`` are zero except for HF generate (twin.cost.hf_generate: the
DynamicCache's concatenation, and a GPU's wait on an eager host). While a batch of ``n``
decoding sequences keeps its composition, iteration ``j`` has ``kv = ctx + n·j`` context
tokens and ``pairs = kv + n`` attention pairs: the GEMMs' term is constant, attention's two
paths and the copy are linear in ``j``, and the time of ``k`` iterations is two arithmetic
series split where the lines cross. ``device`` never decreases with ``j``, so the iterations
held at the host floor are a prefix of the run, found by bisection. "Skip events, not
tokens": everything here is O(1) or O(log k) per call.
"""

from __future__ import annotations

import math

import numpy as np

from twin.engine.bookkeeping import arrived_by
from twin.engine.layout import (
    ATTN_PER_PAIR,
    COMM,
    COPY_PER_TOKEN,
    HOST_FLOOR,
    KV_PER_TOKEN,
    LINEAR,
    OVERHEAD,
    SLOW,
    WEIGHTS,
)
from twin.jit import njit

# Integer arguments as np.int64, not literals: Numba compiles a callee once per literal value
# passed to it (Literal[int](0) and int64 are two specialisations, each compiled in full).
ZERO, ONE = np.int64(0), np.int64(1)


@njit
def iteration_time(tab, cf, n, pairs, kv):
    """Seconds of one iteration of ``n`` tokens (same operations as EngineCosts.iteration_time)."""
    if n <= 0:
        return 0.0
    last = tab.shape[1] - 1
    if n > last:
        n = last
    gemms = max(tab[LINEAR, n], tab[WEIGHTS, n])
    attention = max(cf[ATTN_PER_PAIR] * pairs, cf[KV_PER_TOKEN] * kv)
    t = cf[OVERHEAD] + tab[COMM, n] + gemms + attention + cf[COPY_PER_TOKEN] * kv
    return max(t, cf[HOST_FLOOR]) * cf[SLOW]


@njit
def _series(alpha, beta, j0, j1):
    """Sum of ``alpha + beta·j`` for ``j0 <= j < j1``."""
    count = j1 - j0
    if count <= 0:
        return 0.0
    return count * alpha + beta * float((count * (j0 + j1 - 1)) // 2)


@njit
def decode_run_time(tab, cf, n, ctx, k):
    """Seconds of ``k`` decode iterations of ``n`` sequences starting with ``ctx`` context tokens."""
    if k <= 0 or n <= 0:
        return 0.0
    floor = cf[HOST_FLOOR]
    if floor <= 0.0 or _device_run_time(tab, cf, n, ctx, ONE) >= floor:
        return _device_run_time(tab, cf, n, ctx, k) * cf[SLOW]
    # iterations 0..j-1 wait on the host; j: the first whose device time reaches the floor
    lo, hi = 0, k  # iteration lo is below the floor; hi reaches it (or is past the run)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _device_run_time(tab, cf, n, ctx + n * mid, ONE) >= floor:
            hi = mid
        else:
            lo = mid
    return (hi * floor + _device_run_time(tab, cf, n, ctx + n * hi, k - hi)) * cf[SLOW]


@njit
def _device_run_time(tab, cf, n, ctx, k):
    """``decode_run_time`` without the host floor."""
    if k <= 0:
        return 0.0
    nn = min(n, tab.shape[1] - 1)
    base = cf[OVERHEAD] + tab[COMM, nn] + max(tab[LINEAR, nn], tab[WEIGHTS, nn])
    a_c = cf[ATTN_PER_PAIR] * float(ctx + n)  # attention: compute path ...
    b_c = cf[ATTN_PER_PAIR] * float(n)
    a_m = cf[KV_PER_TOKEN] * float(ctx)  # ... and its KV-cache read
    b_m = cf[KV_PER_TOKEN] * float(n)
    a_m += cf[COPY_PER_TOKEN] * float(ctx)  # the cache copy adds to both paths alike
    a_c += cf[COPY_PER_TOKEN] * float(ctx)
    b_m += cf[COPY_PER_TOKEN] * float(n)
    b_c += cf[COPY_PER_TOKEN] * float(n)
    d0 = a_c - a_m
    db = b_c - b_m
    if db == 0.0:
        body = _series(a_c, b_c, ZERO, k) if d0 >= 0.0 else _series(a_m, b_m, ZERO, k)
    else:
        root = -d0 / db  # compute == memory here
        if db > 0.0:  # compute path overtakes memory from ceil(root) on
            split = 0 if root <= 0.0 else (k if root >= k else int(math.ceil(root)))
            body = _series(a_m, b_m, ZERO, split) + _series(a_c, b_c, split, k)
        else:  # memory path overtakes compute after floor(root)
            split = 0 if root < 0.0 else (k if root >= k else int(math.floor(root)) + 1)
            body = _series(a_c, b_c, ZERO, split) + _series(a_m, b_m, split, k)
    return k * base + body


@njit
def iterations_within(tab, cf, n, ctx, kmax, start, until):
    """Largest ``k <= kmax`` with ``start + decode_run_time(k) <= until`` (bisection)."""
    if start + decode_run_time(tab, cf, n, ctx, kmax) <= until:
        return kmax
    lo, hi = 0, kmax  # lo fits, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if start + decode_run_time(tab, cf, n, ctx, mid) <= until:
            lo = mid
        else:
            hi = mid
    return lo


@njit
def iterations_until_reached(tab, cf, n, ctx, kmax, start, target):
    """Smallest ``k`` in ``1..kmax`` with ``start + decode_run_time(k) >= target``, else ``kmax``."""
    if not arrived_by(target, start + decode_run_time(tab, cf, n, ctx, kmax)):
        return kmax
    lo, hi = 0, kmax  # lo misses, hi reaches
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if arrived_by(target, start + decode_run_time(tab, cf, n, ctx, mid)):
            hi = mid
        else:
            lo = mid
    return hi


@njit
def static_prefill_time(tab, cf, budget, batch, length):
    """Prefill of ``batch`` padded sequences of ``length`` tokens, in iterations of ``budget``.

    Whole sequences share an iteration while they fit the token budget; longer ones are
    chunked one sequence at a time (as EngineCosts.prefill_time does).
    """
    if batch <= 0 or length <= 0:
        return 0.0
    if length <= budget:
        per = budget // length
        full, rest = batch // per, batch % per
        pairs = float(length * (length + 1) // 2)
        t = full * iteration_time(tab, cf, per * length, per * pairs, 0.0)
        return t + iteration_time(tab, cf, rest * length, rest * pairs, 0.0)
    one, done = 0.0, 0
    while done < length:
        m = min(budget, length - done)
        one += iteration_time(tab, cf, m, float(m * done + m * (m + 1) // 2), float(done))
        done += m
    return batch * one
