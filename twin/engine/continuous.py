"""Continuous batching (vLLM/SGLang) as a Numba kernel that skips from event to event.

The scheduling rules are those of :class:`twin.engine.reference.ContinuousEngine`. An
iteration that admits, preempts or prefills is planned and run on its own; a pure decode
iteration (every running sequence owes exactly one token, nobody is admitted or preempted)
starts a *run* whose composition cannot change until one of:

* a sequence finishes (``min(new - generated)`` iterations),
* the running set needs more KV blocks than exist (first ``j`` with
  ``sum(ceil((computed + 1 + j) / block_size)) > blocks``, found by bisection),
* the first waiting request arrives while a seat is free (bisection on the run's time),
* the caller's ``until`` (bisection on the run's time).

The whole run is then committed at once with :func:`decode_run_time`, so the cost per engine
is O(events · running), independent of how many tokens are generated.
"""

from __future__ import annotations

import numpy as np

from twin.engine.bookkeeping import (abort_in_flight, arrived_by, drop_arrived, emit_finish, pop_front,
                                     push_front, record_busy, release, waiting_front,
                                     wake_if_idle)
from twin.engine.iteration import (decode_run_time, iteration_time, iterations_until_reached,
                                   iterations_within)
from twin.engine.layout import (ALLOCS, BLOCK_SIZE, BLOCKS, CACHED, CLOCK, COMPUTED, EVICT,
                                FREE_BLOCKS, GENERATED, ID, MAX_SEQS, NEW, NRUN, PREEMPTIONS,
                                PREFIX, PREFIX_CACHING, PROMPT, RECOMP, RECOMPUTE_S, S_ADM_BLOCKS,
                                S_ADM_START, S_ADM_TOKENS, S_RUN_BLOCKS, S_RUN_TOKENS, S_VICTIM_MARK,
                                TOKEN_BUDGET, TOKENS, TOTAL_BLOCKS, WASTED, WCOUNT, WHEAD)
from twin.jit import njit


@njit
def _cdiv(a, b):
    return -(-a // b)


@njit
def _hit(req, eng, e, s, params):
    """A waiting request's prefix-cache hit: (tokens already computed, own cached blocks reused)
    (the reference's ``ContinuousEngine._hit``)."""
    if params[PREFIX_CACHING] == 0:
        return 0, 0
    bs = params[BLOCK_SIZE]
    cached = req[e, CACHED, s]
    retained = cached - min(max(0, eng[e, ALLOCS] - req[e, EVICT, s]), cached)
    tokens = req[e, PROMPT, s] + req[e, GENERATED, s]
    hit = min(max(retained, req[e, PREFIX, s] // bs), (tokens - 1) // bs)
    return hit * bs, min(retained, hit)


@njit
def _eviction_may_admit(req, eng, e, s, nrun, params):
    """Whether the waiting request ``s``, refused now, could be admitted during a pure-decode run
    of ``nrun`` sequences because allocations evict its own cached blocks: its hit would shrink,
    and with the hit its shared prefix alone gives, its first chunk fits the blocks free now
    (free blocks only fall during the run, so if that does not fit, nothing will)."""
    if params[PREFIX_CACHING] == 0:
        return False
    bs = params[BLOCK_SIZE]
    cached = req[e, CACHED, s]
    retained = cached - min(max(0, eng[e, ALLOCS] - req[e, EVICT, s]), cached)
    tokens = req[e, PROMPT, s] + req[e, GENERATED, s]
    floor_hit = min(req[e, PREFIX, s] // bs, (tokens - 1) // bs)
    if min(retained, (tokens - 1) // bs) <= floor_hit:
        return False
    start = floor_hit * bs
    m = min(tokens - start, params[TOKEN_BUDGET] - nrun)
    return m > 0 and _cdiv(start + m, bs) <= eng[e, FREE_BLOCKS]


@njit
def _recomputed(f, m, recomp):
    """Of a chunk of ``m`` tokens from ``f``, those computed before a discard (below ``recomp``):
    (tokens, their attention pairs, their KV read when the whole chunk is recomputed)."""
    r = max(0, min(f + m, recomp) - f)
    if r == 0:
        return 0, 0, 0
    return r, r * f + r * (r + 1) // 2, f if r == m else 0


@njit
def _plan(req, arrival, running, waiting, eng, e, clock, params, scratch):
    """Plan one iteration without changing state (see the reference's ``_plan``).

    Writes per scheduled running sequence its tokens and new blocks, per admitted request its
    tokens, blocks, first token and own cached blocks, per victim its eviction mark, to the
    ``S_*`` rows of ``scratch``. Returns (scheduled, kept, admitted, free blocks after, tokens,
    attention pairs, kv tokens, pure decode?, blocks allocated, recomputed tokens, their pairs,
    their kv tokens).
    """
    budget, bs = params[TOKEN_BUDGET], params[BLOCK_SIZE]
    free = eng[e, FREE_BLOCKS]
    nrun = eng[e, NRUN]
    nkeep = nrun
    n = 0
    pairs = 0
    kv = 0
    allocs = 0
    rec = 0
    rec_pairs = 0
    rec_kv = 0
    decoding = True
    i = 0
    while i < nkeep and budget > 0:
        s = running[e, i]
        tokens = req[e, PROMPT, s] + req[e, GENERATED, s]
        f = req[e, COMPUTED, s]
        m = min(tokens - f, budget)
        need = max(0, _cdiv(f + m, bs) - req[e, BLOCKS, s])
        while need > free and nkeep > i:  # preempt the newest running sequence
            nkeep -= 1
            scratch[S_VICTIM_MARK, nkeep] = eng[e, ALLOCS] + allocs + free
            free += req[e, BLOCKS, running[e, nkeep]]
        if nkeep == i:
            break
        decoding = decoding and tokens - f == 1
        free -= need
        allocs += need
        budget -= m
        scratch[S_RUN_TOKENS, i] = m
        scratch[S_RUN_BLOCKS, i] = need
        n += m
        pairs += m * f + m * (m + 1) // 2
        kv += f
        r, rp, rk = _recomputed(f, m, req[e, RECOMP, s])
        rec, rec_pairs, rec_kv = rec + r, rec_pairs + rp, rec_kv + rk
        i += 1
    nsched = i
    nadm = 0
    if nkeep == nrun:
        cap = waiting.shape[1]
        head, wcount = eng[e, WHEAD], eng[e, WCOUNT]
        while nadm < wcount and nkeep + nadm < params[MAX_SEQS] and budget > 0:
            s = waiting[e, (head + nadm) % cap]
            if not arrived_by(arrival[e, s], clock):
                break
            tokens = req[e, PROMPT, s] + req[e, GENERATED, s]
            start, own = _hit(req, eng, e, s, params)
            m = min(tokens - start, budget)
            need = _cdiv(start + m, bs)
            if need > free:
                break
            free -= need
            allocs += need - own
            budget -= m
            scratch[S_ADM_TOKENS, nadm] = m
            scratch[S_ADM_BLOCKS, nadm] = need
            scratch[S_ADM_START, nadm] = start
            n += m
            pairs += m * start + m * (m + 1) // 2
            kv += start
            r, rp, rk = _recomputed(start, m, req[e, RECOMP, s])
            rec, rec_pairs, rec_kv = rec + r, rec_pairs + rp, rec_kv + rk
            nadm += 1
    pure = decoding and nsched == nrun and nrun > 0 and nadm == 0
    return nsched, nkeep, nadm, free, n, pairs, kv, pure, allocs, rec, rec_pairs, rec_kv


@njit
def _take_tokens(req, eng, e, s, m, need):
    """Commit ``m`` computed tokens; a sequence with all its tokens computed samples one."""
    req[e, BLOCKS, s] += need
    req[e, COMPUTED, s] += m
    req[e, CACHED, s] = 0
    if req[e, COMPUTED, s] == req[e, PROMPT, s] + req[e, GENERATED, s]:
        req[e, GENERATED, s] += 1
        eng[e, TOKENS] += 1


@njit
def _finish(req, running, free_slots, eng, engf, e, ev_i, ev_t, counts):
    """Remove sequences that completed their segment, free their blocks, emit events."""
    kept = 0
    for i in range(eng[e, NRUN]):
        s = running[e, i]
        if req[e, GENERATED, s] == req[e, NEW, s]:
            eng[e, FREE_BLOCKS] += req[e, BLOCKS, s]
            emit_finish(req, free_slots, eng, engf, e, s, ev_i, ev_t, counts)
        else:
            running[e, kept] = s
            kept += 1
    eng[e, NRUN] = kept


@njit
def _blocks_after(req, running, nrun, e, j, bs):
    """Blocks the running set holds for decode iteration ``j`` of a run."""
    total = 0
    for i in range(nrun):
        s = running[e, i]
        total += max(req[e, BLOCKS, s], _cdiv(req[e, COMPUTED, s] + 1 + j, bs))
    return total


@njit
def _decode_run_length(req, arrival, running, waiting, eng, tab, cf, params, e, clock, ctx, until):
    """Iterations the current pure-decode composition lasts (0: the next one misses ``until``)."""
    nrun = eng[e, NRUN]
    kmax = np.int64(1) << 62
    for i in range(nrun):
        s = running[e, i]
        kmax = min(kmax, req[e, NEW, s] - req[e, GENERATED, s])
    bs, blocks = params[BLOCK_SIZE], params[TOTAL_BLOCKS]
    if _blocks_after(req, running, nrun, e, kmax - 1, bs) > blocks:
        lo, hi = 0, kmax - 1  # iteration lo fits (the plan said so), hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _blocks_after(req, running, nrun, e, mid, bs) > blocks:
                hi = mid
            else:
                lo = mid
        kmax = hi
    if nrun < params[MAX_SEQS] and eng[e, WCOUNT] > 0:
        front = waiting_front(waiting, eng, e)
        first = arrival[e, front]
        if first > clock:
            kmax = iterations_until_reached(tab, cf, nrun, ctx, kmax, clock, first)
        elif _eviction_may_admit(req, eng, e, front, nrun, params):
            # each allocation may evict the front's cached prefix, shortening its first chunk so
            # that it fits: the reference re-plans every iteration, so must this run
            kmax = 1
    return iterations_within(tab, cf, nrun, ctx, kmax, clock, until)


@njit
def advance_continuous(req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                       e, until, max_events, scratch, ev_i, ev_t, sp_e, sp_t, counts):
    """Run engine ``e`` through iterations that end by ``until`` (or ``max_events`` finishes)."""
    first_event = counts[0]
    while counts[0] - first_event < max_events:
        clock = engf[e, CLOCK]
        if eng[e, NRUN] == 0:
            clock = wake_if_idle(arrival, waiting, eng, engf, e, until)
            if clock < 0.0:
                break
        nsched, nkeep, nadm, free, n, pairs, kv, pure, allocs, rec, rec_pairs, rec_kv = _plan(
            req, arrival, running, waiting, eng, e, clock, params, scratch)
        if n == 0:
            raise RuntimeError("scheduler made no progress (a request larger than the KV cache?)")
        if pure:
            k = _decode_run_length(req, arrival, running, waiting, eng, tab, cf, params, e,
                                   clock, kv, until)
            if k == 0:
                break
            nrun = eng[e, NRUN]
            dt = decode_run_time(tab, cf, nrun, kv, k)
            held = 0
            before = 0
            for i in range(nrun):
                s = running[e, i]
                before += req[e, BLOCKS, s]
                req[e, COMPUTED, s] += k
                req[e, GENERATED, s] += k
                req[e, BLOCKS, s] = max(req[e, BLOCKS, s], _cdiv(req[e, COMPUTED, s], params[BLOCK_SIZE]))
                held += req[e, BLOCKS, s]
            eng[e, TOKENS] += nrun * k
            eng[e, FREE_BLOCKS] = params[TOTAL_BLOCKS] - held
            eng[e, ALLOCS] += held - before
        else:
            dt = iteration_time(tab, cf, n, float(pairs), float(kv))
            if clock + dt > until:
                break
            nrun = eng[e, NRUN]
            bs = params[BLOCK_SIZE]
            for i in range(nrun - 1, nkeep - 1, -1):  # newest first, so the oldest ends up in front
                v = running[e, i]
                req[e, RECOMP, v] = max(req[e, RECOMP, v], req[e, COMPUTED, v])
                req[e, CACHED, v] = req[e, COMPUTED, v] // bs if params[PREFIX_CACHING] != 0 else 0
                req[e, EVICT, v] = scratch[S_VICTIM_MARK, i]
                req[e, COMPUTED, v] = 0
                req[e, BLOCKS, v] = 0
                push_front(waiting, eng, e, v)
                eng[e, PREEMPTIONS] += 1
            for i in range(nsched):
                _take_tokens(req, eng, e, running[e, i], scratch[S_RUN_TOKENS, i], scratch[S_RUN_BLOCKS, i])
            nrun = nkeep
            for k in range(nadm):
                s = pop_front(waiting, eng, e)
                running[e, nrun] = s
                nrun += 1
                req[e, COMPUTED, s] = scratch[S_ADM_START, k]
                _take_tokens(req, eng, e, s, scratch[S_ADM_TOKENS, k], scratch[S_ADM_BLOCKS, k])
            eng[e, NRUN] = nrun
            eng[e, FREE_BLOCKS] = free
            eng[e, ALLOCS] += allocs
            if rec > 0:
                eng[e, WASTED] += rec
                without = 0.0
                if n > rec:
                    without = iteration_time(tab, cf, n - rec, float(pairs - rec_pairs), float(kv - rec_kv))
                engf[e, RECOMPUTE_S] += dt - without
        record_busy(engf, e, clock, dt, sp_e, sp_t, counts)
        engf[e, CLOCK] = clock + dt
        _finish(req, running, free_slots, eng, engf, e, ev_i, ev_t, counts)


@njit
def interrupt_continuous(req, arrival, running, waiting, free_slots, eng, engf, params, e, at, keep,
                         dropped, n_dropped, sp_e, sp_t, counts):
    """Weight update at ``at``: re-queue running sequences without KV (``keep``) or drop them;
    either way the prefix cache is reset.

    Returns the new number of ids written to ``dropped``.
    """
    nrun = eng[e, NRUN]
    abort_in_flight(arrival, waiting, eng, engf, e, at, nrun > 0, sp_e, sp_t, counts)
    if keep:
        for i in range(nrun - 1, -1, -1):
            s = running[e, i]
            req[e, RECOMP, s] = max(req[e, RECOMP, s], req[e, COMPUTED, s])
            req[e, COMPUTED, s] = 0
            req[e, BLOCKS, s] = 0
            push_front(waiting, eng, e, s)
    else:
        for i in range(nrun):
            s = running[e, i]
            dropped[n_dropped] = req[e, ID, s]
            n_dropped += 1
            release(req, free_slots, eng, e, s)
        n_dropped = drop_arrived(req, arrival, waiting, free_slots, eng, e, at, dropped, n_dropped)
    cap = waiting.shape[1]
    for k in range(eng[e, WCOUNT]):  # new weights: the prefix cache is reset
        req[e, CACHED, waiting[e, (eng[e, WHEAD] + k) % cap]] = 0
    eng[e, NRUN] = 0
    eng[e, FREE_BLOCKS] = params[TOTAL_BLOCKS]
    return n_dropped
