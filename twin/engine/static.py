"""Static batching (plain HF ``generate``) as a Numba kernel.

A batch takes up to ``max_num_seqs`` arrived requests in arrival order, is padded to its
longest prompt and runs until its longest response: every decode iteration carries the
full batch and the padded context, and every request of the batch is returned when the
batch ends. The next batch starts after that. The semantics are those of
:class:`twin.engine.reference.StaticEngine`; the decode phase of a batch is one closed-form
run, so a batch costs O(batch size), whatever its length. HF ``generate`` pre-allocates no
paged KV cache, so no block budget applies (a batch that does not fit would OOM, which is
the memory model's business, not the scheduler's).
"""

from __future__ import annotations

from twin.engine.bookkeeping import (abort_in_flight, arrived_by, drop_arrived, emit_finish, pop_front,
                                     record_busy, release, waiting_front, wake_if_idle)
from twin.engine.iteration import decode_run_time, iterations_within, static_prefill_time
from twin.engine.layout import (BATCH_DONE, BATCH_LEN, BATCH_PREFILL, BATCH_PROMPT, CLOCK, ID,
                                MAX_SEQS, NEW, NRUN, PADDING, PROMPT, TOKEN_BUDGET, TOKENS, WASTED,
                                WCOUNT)
from twin.jit import njit


@njit
def _form_batch(req, arrival, running, waiting, eng, e, clock, params):
    nrun, prompt, length = 0, 0, 0
    while (eng[e, WCOUNT] > 0 and nrun < params[MAX_SEQS]
           and arrived_by(arrival[e, waiting_front(waiting, eng, e)], clock)):
        s = pop_front(waiting, eng, e)
        running[e, nrun] = s
        nrun += 1
        prompt = max(prompt, req[e, PROMPT, s])
        length = max(length, req[e, NEW, s])
    for i in range(nrun):
        s = running[e, i]
        eng[e, PADDING] += prompt - req[e, PROMPT, s] + length - req[e, NEW, s]
    eng[e, NRUN] = nrun
    eng[e, BATCH_PROMPT] = prompt
    eng[e, BATCH_LEN] = length
    eng[e, BATCH_DONE] = 0
    eng[e, BATCH_PREFILL] = 1


@njit
def _useful_tokens(req, running, nrun, e, d0, d1):
    """Tokens of steps ``d0..d1`` that belong to a response (the rest is padding)."""
    total = 0
    for i in range(nrun):
        total += max(0, min(d1, req[e, NEW, running[e, i]]) - d0)
    return total


@njit
def advance_static(req, arrival, running, waiting, free_slots, eng, engf, tab, cf, params,
                   e, until, max_events, scratch, ev_i, ev_t, sp_e, sp_t, counts):
    """Run engine ``e``'s batches through iterations that end by ``until``."""
    first_event = counts[0]
    while counts[0] - first_event < max_events:
        clock = engf[e, CLOCK]
        if eng[e, NRUN] == 0:
            clock = wake_if_idle(arrival, waiting, eng, engf, e, until)
            if clock < 0.0:
                break
            _form_batch(req, arrival, running, waiting, eng, e, clock, params)
        b, prompt = eng[e, NRUN], eng[e, BATCH_PROMPT]
        done, length = eng[e, BATCH_DONE], eng[e, BATCH_LEN]
        if eng[e, BATCH_PREFILL] == 1:
            # prefill the padded prompt plus what was generated before an interrupt; it
            # samples the next token
            dt = static_prefill_time(tab, cf, params[TOKEN_BUDGET], b, prompt + done)
            if clock + dt > until:
                break
            k = 1
            eng[e, BATCH_PREFILL] = 0
        else:
            ctx = b * (prompt + done - 1)
            k = iterations_within(tab, cf, b, ctx, length - done, clock, until)
            if k == 0:
                break
            dt = decode_run_time(tab, cf, b, ctx, k)
        eng[e, TOKENS] += _useful_tokens(req, running, b, e, done, done + k)
        eng[e, BATCH_DONE] = done + k
        record_busy(engf, e, clock, dt, sp_e, sp_t, counts)
        engf[e, CLOCK] = clock + dt
        if done + k == length:
            for i in range(b):
                emit_finish(req, free_slots, eng, engf, e, running[e, i], ev_i, ev_t, counts)
            eng[e, NRUN] = 0


@njit
def interrupt_static(req, arrival, running, waiting, free_slots, eng, engf, params, e, at, keep,
                     dropped, n_dropped, sp_e, sp_t, counts):
    """Weight update at ``at``: the batch re-prefills its context (``keep``) or is dropped."""
    b = eng[e, NRUN]
    abort_in_flight(arrival, waiting, eng, engf, e, at, b > 0, sp_e, sp_t, counts)
    if keep:
        if b > 0 and eng[e, BATCH_PREFILL] == 0:
            eng[e, WASTED] += b * (eng[e, BATCH_PROMPT] + eng[e, BATCH_DONE] - 1)
            eng[e, BATCH_PREFILL] = 1
        return n_dropped
    for i in range(b):
        s = running[e, i]
        dropped[n_dropped] = req[e, ID, s]
        n_dropped += 1
        release(req, free_slots, eng, e, s)
    eng[e, NRUN] = 0
    return drop_arrived(req, arrival, waiting, free_slots, eng, e, at, dropped, n_dropped)
