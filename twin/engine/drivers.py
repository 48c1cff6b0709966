"""Kernel entry points over many engines: submit, advance, peek, interrupt.

One call per pool operation keeps Numba's per-call dispatch cost off the per-engine path.
``static`` selects the batching policy (the same state layout serves both): None for
continuous batching, True for static. It is read from its type when a kernel is compiled
(:func:`twin.jit.by_batching`), so a pool compiles only the batching it uses.

Multi-turn trajectories (agentic RL) live in the pool whole: a request carries its follow-up
turns (rows of a table: tool latency, reply tokens, tokens to generate). When a turn finishes
with turns left, :func:`advance_pool` holds the next one on a heap of tool returns and, at its
return time, routes it like a new request (the router sees the engines' loads of that instant)
with its context grown by what was generated and the tool's reply — a full re-prefill, as its
KV cache was freed at the finish.

Why steps are still needed: a returning turn is routed again, as when the producer
re-submitted each turn itself, and least-loaded routing reads every engine's load at the
return instant, so no engine may have run past it. The engines therefore advance in lockstep
*steps*: a step ends at the first pending return and, while engines hold work, at most
``gap`` (the least tool latency) after it starts, so a turn that finishes inside a step
returns after the step's end. (With ``gap == 0`` a step ends at the pool's next finish.)
These are the windows the producer used to cut, one Python round trip each; here they cost a
loop iteration, and reports are unchanged to the last bit. Routing a returning turn back to
its own engine (sticky sessions, as verl's agent loop does for prefix caching) would need no
steps at all, but it changes which engine serves a turn, so it is not done here.
"""

from __future__ import annotations

import numpy as np

from twin.engine.continuous import advance_continuous, interrupt_continuous
from twin.engine.layout import (
    EV_CONTEXT,
    EV_FIELDS,
    EV_ID,
    EV_LEFT,
    EV_NEXT,
    EV_STEP,
    FU_NEW,
    FU_REPLY,
    ID,
    LEAST_LOADED,
    MAX_SEQS,
    NEW,
    NFREE,
    NRET,
    PREFIX,
    PROMPT,
    RET_END,
    RET_FIELDS,
    RET_ID,
    RET_NEW,
    RET_NEXT,
    RET_PROMPT,
    RET_SEQ,
    SCRATCH_ROWS,
    SEQ,
    TURN_END,
    TURN_NEXT,
    WCOUNT,
    WHEAD,
)
from twin.engine.static import advance_static, interrupt_static
from twin.jit import by_batching, njit

_advance_one = by_batching(advance_continuous, advance_static)
_interrupt_one = by_batching(interrupt_continuous, interrupt_static)


@njit
def _enqueue(req, arrival, waiting, free_slots, eng, e, id_, prompt, new, at, turn_next, turn_end):
    """Append one request to engine ``e``'s waiting queue (a slot must be free)."""
    eng[e, NFREE] -= 1
    slot = free_slots[e, eng[e, NFREE]]
    req[e, :, slot] = 0
    req[e, ID, slot] = id_
    req[e, PROMPT, slot] = prompt
    req[e, NEW, slot] = new
    req[e, TURN_NEXT, slot] = turn_next
    req[e, TURN_END, slot] = turn_end
    arrival[e, slot] = at
    waiting[e, (eng[e, WHEAD] + eng[e, WCOUNT]) % waiting.shape[1]] = slot
    eng[e, WCOUNT] += 1
    return slot


@njit
def submit_requests(req, arrival, waiting, free_slots, eng, engines, ids, prompts, news, arrivals,
                    turn_next, turn_end, prefixes):
    """Append requests to their engines' waiting queues (slots must have been reserved);
    ``prefixes``: prompt tokens a group sibling caches for each (the PREFIX field)."""
    for k in range(ids.shape[0]):
        slot = _enqueue(req, arrival, waiting, free_slots, eng, engines[k], ids[k], prompts[k], news[k],
                        arrivals[k], turn_next[k], turn_end[k])
        req[engines[k], PREFIX, slot] = prefixes[k]


@njit
def _before(t1, s1, t2, s2):
    return t1 < t2 or (t1 == t2 and s1 < s2)


@njit
def _move(ret_t, ret_i, src, dst):
    ret_t[dst] = ret_t[src]
    for f in range(RET_FIELDS):
        ret_i[f, dst] = ret_i[f, src]


@njit
def push_return(ret_t, ret_i, pstate, t, id_, prompt, new, turn_next, turn_end):
    """Hold a turn until its tool returns at ``t`` (ties: in the order they were pushed)."""
    k = pstate[NRET]
    seq = pstate[SEQ]
    pstate[NRET] = k + 1
    pstate[SEQ] = seq + 1
    while k > 0:
        parent = (k - 1) // 2
        if not _before(t, seq, ret_t[parent], ret_i[RET_SEQ, parent]):
            break
        _move(ret_t, ret_i, parent, k)
        k = parent
    ret_t[k] = t
    ret_i[RET_SEQ, k] = seq
    ret_i[RET_ID, k] = id_
    ret_i[RET_PROMPT, k] = prompt
    ret_i[RET_NEW, k] = new
    ret_i[RET_NEXT, k] = turn_next
    ret_i[RET_END, k] = turn_end


@njit
def pop_return(ret_t, ret_i, pstate, out):
    """Remove the earliest return; its fields go to ``out``, its time is returned."""
    t = ret_t[0]
    for f in range(RET_FIELDS):
        out[f] = ret_i[f, 0]
    n = pstate[NRET] - 1
    pstate[NRET] = n
    if n == 0:
        return t
    last_t, last_s = ret_t[n], ret_i[RET_SEQ, n]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(ret_t[child + 1], ret_i[RET_SEQ, child + 1],
                                     ret_t[child], ret_i[RET_SEQ, child]):
            child += 1
        if not _before(ret_t[child], ret_i[RET_SEQ, child], last_t, last_s):
            break
        _move(ret_t, ret_i, child, i)
        i = child
    _move(ret_t, ret_i, n, i)
    return t


@njit
def pick_engine(router, eng, rr, cap):
    """The engine for one request: round robin from ``rr[0]`` (the caller moves it on), or the
    fewest outstanding requests, lowest index on ties (twin.engine.router's rules, one request
    at a time)."""
    engines = eng.shape[0]
    if router == LEAST_LOADED:
        best, load = 0, cap - eng[0, NFREE]
        for e in range(1, engines):
            if cap - eng[e, NFREE] < load:
                best, load = e, cap - eng[e, NFREE]
        return best
    return rr[0] % engines

@njit
def peek_engines(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 which, out):
    """``out[i]``: time of the next finish on engine ``which[i]`` if nothing else is submitted
    (``cf``: a row per engine, :meth:`twin.engine.layout.KernelCosts.per_engine`).

    Runs a copy of the engine's state, so the pool itself does not move.
    """
    scratch = np.empty((SCRATCH_ROWS, params[MAX_SEQS]), np.int64)
    for i in range(which.shape[0]):
        e = which[i]
        r, a = req[e:e + 1].copy(), arrival[e:e + 1].copy()
        ru, w, fs = running[e:e + 1].copy(), waiting[e:e + 1].copy(), free_slots[e:e + 1].copy()
        en, ef = eng[e:e + 1].copy(), engf[e:e + 1].copy()
        cap = r.shape[2]
        ev_i = np.empty((EV_FIELDS, cap), np.int64)
        ev_t = np.empty(cap, np.float64)
        sp_e = np.empty(cap + 2, np.int64)
        sp_t = np.empty((2, cap + 2), np.float64)
        counts = np.zeros(2, np.int64)
        # np.int64, not a literal 0 or 1: Numba would compile the whole chain again for literals
        _advance_one(static, r, a, ru, w, fs, en, ef, tab, cf[e], params, np.int64(0), np.inf, np.int64(1),
                     scratch, ev_i, ev_t, sp_e, sp_t, counts)
        out[i] = ev_t[0] if counts[0] > 0 else np.inf


@njit
def interrupt_engines(static, req, arrival, running, waiting, free_slots, eng, engf, params, at, keep,
                      dropped, sp_e, sp_t, counts):
    """Apply a weight update at ``at`` to every engine; returns how many ids were dropped."""
    n_dropped = 0
    for e in range(eng.shape[0]):
        n_dropped = _interrupt_one(static, req, arrival, running, waiting, free_slots, eng, engf, params,
                                   e, at, keep, dropped, n_dropped, sp_e, sp_t, counts)
    return n_dropped


@njit
def _next_finish(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 dirty, nxt):
    """The pool's next finish if nothing else is submitted (EnginePool.next_event_time's rule:
    peek the engines whose future changed, forget idle ones)."""
    cap = req.shape[2]
    stale = np.zeros(eng.shape[0], np.int64)
    n = 0
    for e in range(eng.shape[0]):
        if cap - eng[e, NFREE] == 0:
            nxt[e] = np.inf
            dirty[e] = False
        elif dirty[e]:
            stale[n] = e
            n += 1
    out = np.empty(n, np.float64)
    peek_engines(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 stale[:n], out)
    for i in range(n):
        nxt[stale[i]] = out[i]
        dirty[stale[i]] = False
    return nxt.min()


@njit
def advance_pool(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                 dirty, nxt, rr, router, since, until, settle, gap, resume,
                 ret_t, ret_i, pstate, fu_t, fu_i, fu_base, ev_i, ev_t, sp_e, sp_t, counts, at):
    """Advance the pool from ``since`` to ``until`` in lockstep steps (see the module); ``cf``
    holds a row per engine (its own slowdown).

    In each step the engines with work run to its end — all of them with ``settle``,
    otherwise those whose future changed (``dirty``) or whose known next finish (``nxt``)
    falls in the step — a finished turn with turns left is held until its tool returns, and
    the returns due by the step's end are routed and queued. Stops early once the pool holds
    nothing (no request, no return), so the caller can admit work at its last finish. Each
    event's ``EV_STEP`` numbers the step that handled it (``counts[2]`` steps so far).

    Returns -1 when done, or the engine a return was routed to that has no free slot: the
    caller grows the slots and calls again with ``since = at[0]`` and ``resume``, which
    carries on where this call stopped.
    """
    engines = eng.shape[0]
    cap = req.shape[2]
    scratch = np.empty((SCRATCH_ROWS, params[MAX_SEQS]), np.int64)
    popped = np.empty(RET_FIELDS, np.int64)
    unlimited = np.int64(1) << 62
    start = since
    scanned = counts[0]
    stepped = resume
    while True:
        while pstate[NRET] > 0 and ret_t[0] <= start:  # the last step's returns
            e = pick_engine(router, eng, rr, cap)
            if eng[e, NFREE] == 0:
                at[0] = start
                return e
            if router != LEAST_LOADED:
                rr[0] = (e + 1) % engines
            t = pop_return(ret_t, ret_i, pstate, popped)
            _enqueue(req, arrival, waiting, free_slots, eng, e, popped[RET_ID], popped[RET_PROMPT],
                     popped[RET_NEW], t, popped[RET_NEXT], popped[RET_END])
            dirty[e] = True
        if stepped and start >= until:
            break
        stepped = True
        held = 0
        for e in range(engines):
            held += cap - eng[e, NFREE]
        if held == 0 and pstate[NRET] == 0:
            break
        end = until
        if pstate[NRET] > 0:
            end = min(end, ret_t[0])
        if held > 0 and gap < np.inf:
            if gap > 0.0:
                end = min(end, start + gap)
            else:  # zero-latency tools: step from finish to finish
                end = min(end, max(start, _next_finish(static, req, arrival, running, waiting,
                                                       free_slots, eng, engf, tab, cf, params,
                                                       dirty, nxt)))
        for e in range(engines):
            if cap - eng[e, NFREE] > 0 and (settle or dirty[e] or nxt[e] <= end):
                _advance_one(static, req, arrival, running, waiting, free_slots, eng, engf, tab, cf[e],
                             params, e, end, unlimited, scratch, ev_i, ev_t, sp_e, sp_t, counts)
                dirty[e] = True
        for k in range(scanned, counts[0]):
            ev_i[EV_STEP, k] = counts[2]
            left = ev_i[EV_LEFT, k]
            if left > 0:
                row = ev_i[EV_NEXT, k]
                r = row - fu_base
                push_return(ret_t, ret_i, pstate, ev_t[k] + fu_t[r], ev_i[EV_ID, k],
                            ev_i[EV_CONTEXT, k] + fu_i[FU_REPLY, r], fu_i[FU_NEW, r], row + 1, row + left)
        scanned = counts[0]
        counts[2] += 1
        start = end
    return -1


@njit
def drop_returns(ret_i, pstate, dropped, n_dropped):
    """Forget every turn waiting on a tool (its trajectory is dropped); returns the new count."""
    for k in range(pstate[NRET]):
        dropped[n_dropped] = ret_i[RET_ID, k]
        n_dropped += 1
    pstate[NRET] = 0
    return n_dropped
