"""Kernel entry points over many engines: submit, advance, peek, interrupt.

One call per pool operation keeps Numba's per-call dispatch cost off the per-engine path.
``static`` selects the batching policy (the same state layout serves both).
"""

from __future__ import annotations

import numpy as np

from twin.engine.continuous import advance_continuous, interrupt_continuous
from twin.engine.layout import ID, MAX_SEQS, NEW, NFREE, PROMPT, WCOUNT, WHEAD
from twin.engine.static import advance_static, interrupt_static
from twin.jit import njit


@njit
def submit_requests(req, arrival, waiting, free_slots, eng, engines, ids, prompts, news, arrivals):
    """Append requests to their engines' waiting queues (slots must have been reserved)."""
    cap = waiting.shape[1]
    for k in range(ids.shape[0]):
        e = engines[k]
        eng[e, NFREE] -= 1
        slot = free_slots[e, eng[e, NFREE]]
        req[e, :, slot] = 0
        req[e, ID, slot] = ids[k]
        req[e, PROMPT, slot] = prompts[k]
        req[e, NEW, slot] = news[k]
        arrival[e, slot] = arrivals[k]
        waiting[e, (eng[e, WHEAD] + eng[e, WCOUNT]) % cap] = slot
        eng[e, WCOUNT] += 1


@njit
def _advance_one(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 e, until, max_events, scratch, ev_i, ev_t, sp_e, sp_t, counts):
    if static:
        advance_static(req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                       e, until, max_events, scratch, ev_i, ev_t, sp_e, sp_t, counts)
    else:
        advance_continuous(req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                           e, until, max_events, scratch, ev_i, ev_t, sp_e, sp_t, counts)


@njit
def advance_engines(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                    which, until, ev_i, ev_t, sp_e, sp_t, counts):
    """Advance each engine in ``which`` to ``until``; finishes and closed spans go to the buffers."""
    scratch = np.empty((4, params[MAX_SEQS]), np.int64)
    unlimited = np.int64(1) << 62
    for e in which:
        _advance_one(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                     e, until, unlimited, scratch, ev_i, ev_t, sp_e, sp_t, counts)


@njit
def peek_engines(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 which, out):
    """``out[i]``: time of the next finish on engine ``which[i]`` if nothing else is submitted.

    Runs a copy of the engine's state, so the pool itself does not move.
    """
    scratch = np.empty((4, params[MAX_SEQS]), np.int64)
    for i in range(which.shape[0]):
        e = which[i]
        r, a = req[e:e + 1].copy(), arrival[e:e + 1].copy()
        ru, w, fs = running[e:e + 1].copy(), waiting[e:e + 1].copy(), free_slots[e:e + 1].copy()
        en, ef = eng[e:e + 1].copy(), engf[e:e + 1].copy()
        cap = r.shape[2]
        ev_i = np.empty((2, cap), np.int64)
        ev_t = np.empty(cap, np.float64)
        sp_e = np.empty(cap + 2, np.int64)
        sp_t = np.empty((2, cap + 2), np.float64)
        counts = np.zeros(2, np.int64)
        _advance_one(static, r, a, ru, w, fs, en, ef, tab, cf, params, 0, np.inf, 1, scratch,
                     ev_i, ev_t, sp_e, sp_t, counts)
        out[i] = ev_t[0] if counts[0] > 0 else np.inf


@njit
def interrupt_engines(static, req, arrival, running, waiting, free_slots, eng, engf, params, at, keep,
                      dropped, sp_e, sp_t, counts):
    """Apply a weight update at ``at`` to every engine; returns how many ids were dropped."""
    n_dropped = 0
    for e in range(eng.shape[0]):
        if static:
            n_dropped = interrupt_static(req, arrival, running, waiting, free_slots, eng, engf, params,
                                         e, at, keep, dropped, n_dropped, sp_e, sp_t, counts)
        else:
            n_dropped = interrupt_continuous(req, arrival, running, waiting, free_slots, eng, engf,
                                             params, e, at, keep, dropped, n_dropped, sp_e, sp_t,
                                             counts)
    return n_dropped
