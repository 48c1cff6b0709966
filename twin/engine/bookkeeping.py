"""Kernel helpers shared by both batching policies: busy spans, events, slots, the waiting ring.

Outputs go to caller-allocated buffers: ``ev_i[:, k]`` (the ``EV_*`` fields of
:mod:`twin.engine.layout`: request id, engine, turns left, context, follow-up row) and
``ev_t[k]`` for finish events, ``sp_e[k]``/``sp_t[0|1, k]`` (engine, start, end) for closed
busy spans, with ``counts[0]`` events and ``counts[1]`` spans written so far.
"""

from __future__ import annotations

import numpy as np

from twin.engine import layout
from twin.engine.layout import (BUSY, CLOCK, EV_CONTEXT, EV_ENGINE, EV_ID, EV_LEFT, EV_NEXT, ID, NEW,
                                NFREE, PROMPT, SPAN_END, SPAN_START, TURN_END, TURN_NEXT, WCOUNT,
                                WHEAD)
from twin.jit import njit


# the reference calls the same rules in plain Python
contiguous = njit(layout.spans_touch)
arrived_by = njit(layout.arrived_by)


@njit
def record_busy(engf, e, start, dt, sp_e, sp_t, counts):
    """Account ``dt`` busy seconds from ``start``; contiguous work extends the open span."""
    engf[e, BUSY] += dt
    if np.isfinite(engf[e, SPAN_START]):
        if contiguous(engf[e, SPAN_END], start):
            engf[e, SPAN_END] = start + dt
            return
        k = counts[1]
        sp_e[k] = e
        sp_t[0, k] = engf[e, SPAN_START]
        sp_t[1, k] = engf[e, SPAN_END]
        counts[1] = k + 1
    engf[e, SPAN_START] = start
    engf[e, SPAN_END] = start + dt


@njit
def release(req, free_slots, eng, e, slot):
    """Give a finished or dropped request's slot back to the engine."""
    req[e, TURN_NEXT, slot] = 0  # a free slot holds no follow-up rows (the table's compaction counts on it)
    req[e, TURN_END, slot] = 0
    free_slots[e, eng[e, NFREE]] = slot
    eng[e, NFREE] += 1


@njit
def emit_finish(req, free_slots, eng, engf, e, slot, ev_i, ev_t, counts):
    """Report that the request in ``slot`` finished its turn at the engine's clock, with what
    its next turn needs (the pool's driver queues that one after the tool call)."""
    k = counts[0]
    ev_i[EV_ID, k] = req[e, ID, slot]
    ev_i[EV_ENGINE, k] = e
    ev_i[EV_LEFT, k] = req[e, TURN_END, slot] - req[e, TURN_NEXT, slot]
    ev_i[EV_CONTEXT, k] = req[e, PROMPT, slot] + req[e, NEW, slot]
    ev_i[EV_NEXT, k] = req[e, TURN_NEXT, slot]
    ev_t[k] = engf[e, CLOCK]
    counts[0] = k + 1
    release(req, free_slots, eng, e, slot)


@njit
def waiting_front(waiting, eng, e):
    return waiting[e, eng[e, WHEAD]]


@njit
def wake_if_idle(arrival, waiting, eng, engf, e, until):
    """An idle engine's next start: now, or when its first waiting request arrives.

    Returns -1.0 when nothing can start by ``until`` (nothing waits, or it arrives later);
    otherwise moves the clock there (an idle engine waits, it does not work) and returns it.
    """
    if eng[e, WCOUNT] == 0:
        return -1.0
    start = max(engf[e, CLOCK], arrival[e, waiting_front(waiting, eng, e)])
    if start > until:
        return -1.0
    engf[e, CLOCK] = start
    return start


@njit
def pop_front(waiting, eng, e):
    slot = waiting[e, eng[e, WHEAD]]
    eng[e, WHEAD] = (eng[e, WHEAD] + 1) % waiting.shape[1]
    eng[e, WCOUNT] -= 1
    return slot


@njit
def push_front(waiting, eng, e, slot):
    eng[e, WHEAD] = (eng[e, WHEAD] - 1) % waiting.shape[1]
    waiting[e, eng[e, WHEAD]] = slot
    eng[e, WCOUNT] += 1


@njit
def abort_in_flight(arrival, waiting, eng, engf, e, at, has_batch, sp_e, sp_t, counts):
    """An interrupt at ``at`` abandons the iteration in flight; the GPU was busy until then."""
    clock = engf[e, CLOCK]
    start = np.inf
    if has_batch:
        start = clock
    elif eng[e, WCOUNT] > 0:
        first = arrival[e, waiting_front(waiting, eng, e)]
        if first < at:
            start = max(clock, first)
    if start < at:
        record_busy(engf, e, start, at - start, sp_e, sp_t, counts)
    engf[e, CLOCK] = max(clock, at)


@njit
def drop_arrived(req, arrival, waiting, free_slots, eng, e, at, dropped, n_dropped):
    """Drop waiting requests that have arrived by ``at``; returns the new dropped count."""
    while eng[e, WCOUNT] > 0 and arrival[e, waiting_front(waiting, eng, e)] <= at:
        slot = pop_front(waiting, eng, e)
        dropped[n_dropped] = req[e, ID, slot]
        n_dropped += 1
        release(req, free_slots, eng, e, slot)
    return n_dropped
