"""The kernels' memory layout: a pool of engines as a handful of 2-D/3-D NumPy arrays.

Numba kernels take plain arrays, and every extra argument costs dispatch time, so the
state of all engines of a pool lives in a few arrays indexed ``[engine, ...]`` with the
named field constants below. Each engine owns ``cap`` request slots (recycled when a
request finishes), a ring buffer of waiting slots and a list of running slots, so memory is
O(outstanding requests), never O(tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.cost.engine import EngineCosts

# req[engine, field, slot] (int64); TURN_NEXT..TURN_END: the request's follow-up turns, rows
# of the pool's follow-up table (empty for a single-turn request); CACHED, EVICT: its full blocks
# left in the prefix cache when it was preempted and the engine's ALLOCS at which the first is
# evicted; RECOMP: tokens it had computed before its KV was discarded (recomputing them is
# preemption's cost); PREFIX: prompt tokens a group sibling cached (reference.py has the rules)
(ID, PROMPT, NEW, GENERATED, COMPUTED, BLOCKS, TURN_NEXT, TURN_END, CACHED, EVICT, RECOMP,
 PREFIX) = range(12)
REQ_FIELDS = 12

# ev_i[field, event] (int64): a finished turn, the turns left after it, the context it ends
# with (prompt + generated), its follow-up rows, and the lockstep step that handled it
EV_ID, EV_ENGINE, EV_LEFT, EV_CONTEXT, EV_NEXT, EV_STEP = range(6)
EV_FIELDS = 6

# ret_i[field, k] (int64), with ret_t[k] the return time: the heap of turns waiting on a tool,
# ordered by (time, RET_SEQ); RET_SEQ numbers returns in the order their turns finished
RET_SEQ, RET_ID, RET_PROMPT, RET_NEW, RET_NEXT, RET_END = range(6)
RET_FIELDS = 6

# pstate[field] (int64): pool-wide counters
NRET, SEQ, RR = range(3)
PSTATE_FIELDS = 3

# fu_i[field, row] (int64), with fu_t[row] the tool's latency: one follow-up turn
FU_REPLY, FU_NEW = range(2)
FU_FIELDS = 2

# routers, as the kernels know them
ROUND_ROBIN, LEAST_LOADED = range(2)

# eng[engine, field] (int64); WASTED: tokens recomputed; ALLOCS: blocks the free pool handed out
(NRUN, WHEAD, WCOUNT, NFREE, FREE_BLOCKS, TOKENS, PREEMPTIONS, WASTED, PADDING,
 BATCH_PROMPT, BATCH_LEN, BATCH_DONE, BATCH_PREFILL, ALLOCS) = range(14)
ENG_FIELDS = 14

# engf[engine, field] (float64); a span is open while SPAN_START is finite; RECOMPUTE_S: the
# marginal seconds of the iterations' recomputed tokens
CLOCK, BUSY, SPAN_START, SPAN_END, RECOMPUTE_S = range(5)
ENGF_FIELDS = 5

# tab[row, tokens in the iteration] and cf[field]: the EngineCosts table; SLOW multiplies every
# iteration's time (a straggling engine: twin.config.stragglers), 1 for an engine at the table's rate
LINEAR, WEIGHTS, COMM = range(3)
OVERHEAD, ATTN_PER_PAIR, KV_PER_TOKEN, HOST_FLOOR, COPY_PER_TOKEN, SLOW = range(6)

# params[field]
MAX_SEQS, TOKEN_BUDGET, BLOCK_SIZE, TOTAL_BLOCKS, PREFIX_CACHING = range(5)

# rows of the continuous kernel's per-iteration plan (scratch[row, i]): per scheduled running
# sequence its tokens and new blocks; per admitted request its tokens, blocks and first token (a
# cache hit); per victim (running index) its eviction mark
S_RUN_TOKENS, S_RUN_BLOCKS, S_ADM_TOKENS, S_ADM_BLOCKS, S_ADM_START, S_VICTIM_MARK = range(6)
SCRATCH_ROWS = 6


@dataclass(frozen=True)
class KernelCosts:
    """An :class:`EngineCosts` flattened into the arrays the kernels read."""

    tab: np.ndarray      # (3, max_num_batched_tokens + 1): linear, weights, comm seconds
    cf: np.ndarray       # overhead_s, attn_s_per_pair, kv_s_per_token, host_floor_s, cache_copy_s_per_token, slow
    params: np.ndarray   # max_num_seqs, max_num_batched_tokens, block_size, total blocks, prefix caching

    @classmethod
    def of(cls, costs: EngineCosts) -> "KernelCosts":
        check_costs(costs)
        tab = np.ascontiguousarray(np.stack([costs.linear_s, costs.weights_s, costs.comm_s]),
                                   dtype=np.float64)
        cf = np.array([costs.overhead_s, costs.attn_s_per_pair, costs.kv_s_per_token, costs.host_floor_s,
                       costs.cache_copy_s_per_token, costs.slow], np.float64)
        params = np.array([costs.max_num_seqs, costs.max_num_batched_tokens, costs.block_size,
                           total_blocks(costs), int(costs.prefix_caching)], np.int64)
        return cls(tab, cf, params)

    def per_engine(self, slow: np.ndarray) -> np.ndarray:
        """``cf`` for each engine (rows), each slowed by its factor in ``slow`` (>= 1; 1: the
        table's rate). The kernels read engine ``e``'s row."""
        rows = np.repeat(self.cf[None, :], len(slow), axis=0)
        rows[:, SLOW] = self.cf[SLOW] * slow
        return np.ascontiguousarray(rows)


def total_blocks(costs: EngineCosts) -> int:
    """KV-cache blocks of one engine (vLLM's paged-attention block budget)."""
    return costs.kv_capacity_tokens // costs.block_size


def check_costs(costs: EngineCosts) -> None:
    """Reject cost tables the scheduler cannot run (vLLM refuses the same configurations)."""
    if costs.max_num_batched_tokens < costs.max_num_seqs:
        raise ValueError("max_num_batched_tokens must be >= max_num_seqs (as vLLM requires): "
                         f"{costs.max_num_batched_tokens} < {costs.max_num_seqs}")
    if len(costs.linear_s) < 2 or not (len(costs.linear_s) == len(costs.weights_s) == len(costs.comm_s)):
        raise ValueError("EngineCosts tables must have equal lengths of at least 2")
    if total_blocks(costs) < 1:
        raise ValueError(f"KV capacity {costs.kv_capacity_tokens} tokens holds no block of "
                         f"{costs.block_size}")


@dataclass
class PoolArrays:
    """State of every engine of a pool (see the field constants of this module)."""

    req: np.ndarray       # (E, REQ_FIELDS, cap) int64
    arrival: np.ndarray   # (E, cap) float64
    running: np.ndarray   # (E, max_num_seqs) int64 slots, oldest admission first
    waiting: np.ndarray   # (E, cap) int64 ring buffer of slots, FCFS
    free_slots: np.ndarray  # (E, cap) int64 stack
    eng: np.ndarray       # (E, ENG_FIELDS) int64
    engf: np.ndarray      # (E, ENGF_FIELDS) float64

    @classmethod
    def empty(cls, engines: int, max_num_seqs: int, total_blocks: int, cap: int = 16) -> "PoolArrays":
        eng = np.zeros((engines, ENG_FIELDS), np.int64)
        eng[:, NFREE] = cap
        eng[:, FREE_BLOCKS] = total_blocks
        engf = np.zeros((engines, ENGF_FIELDS), np.float64)
        engf[:, SPAN_START] = np.inf
        return cls(
            req=np.zeros((engines, REQ_FIELDS, cap), np.int64),
            arrival=np.zeros((engines, cap), np.float64),
            running=np.zeros((engines, max_num_seqs), np.int64),
            waiting=np.zeros((engines, cap), np.int64),
            free_slots=np.tile(np.arange(cap - 1, -1, -1, dtype=np.int64), (engines, 1)),
            eng=eng,
            engf=engf,
        )

    @property
    def cap(self) -> int:
        return self.req.shape[2]

    def outstanding(self) -> np.ndarray:
        """Requests held per engine (waiting or running)."""
        return self.cap - self.eng[:, NFREE]

    def reserve(self, needed: int) -> None:
        """Grow every engine's slot capacity to at least ``needed`` (amortised doubling)."""
        old = self.cap
        if needed <= old:
            return
        cap = max(needed, 2 * old)
        engines = self.req.shape[0]
        req = np.zeros((engines, REQ_FIELDS, cap), np.int64)
        req[:, :, :old] = self.req
        arrival = np.zeros((engines, cap), np.float64)
        arrival[:, :old] = self.arrival
        waiting = np.zeros((engines, cap), np.int64)
        free_slots = np.zeros((engines, cap), np.int64)
        for e in range(engines):
            head, count, nfree = self.eng[e, WHEAD], self.eng[e, WCOUNT], self.eng[e, NFREE]
            waiting[e, :count] = self.waiting[e, (head + np.arange(count)) % old]
            # new slots go below the old free ones so that pops stay lowest-slot-first
            free_slots[e, : cap - old] = np.arange(cap - 1, old - 1, -1)
            free_slots[e, cap - old : cap - old + nfree] = self.free_slots[e, :nfree]
        self.eng[:, WHEAD] = 0
        self.eng[:, NFREE] += cap - old
        self.req, self.arrival, self.waiting, self.free_slots = req, arrival, waiting, free_slots


# The kernels price a run of decode iterations in closed form and the reference steps one
# iteration at a time, so the same instant can differ in its last bits between the two. Two
# instants this close are the same instant: a request arriving then has arrived, and a span
# ending then is continued, not followed by idle time.
# (Plain functions, compiled for the kernels in bookkeeping.py.)
SAME_INSTANT = 1e-12  # relative, for times above a second; absolute below


def spans_touch(end: float, start: float) -> bool:
    """Whether work starting at ``start`` continues a busy span ending at ``end``."""
    return abs(start - end) <= SAME_INSTANT * max(1.0, abs(start))


def arrived_by(arrival: float, clock: float) -> bool:
    """Whether a request arriving at ``arrival`` is there at ``clock``."""
    return arrival <= clock + SAME_INSTANT * max(1.0, abs(clock))


@dataclass
class TurnArrays:
    """Multi-turn state of a pool: the follow-up table and the heap of pending tool returns.

    Follow-up rows keep global indices (row ``r`` lives at ``r - base``); rows no request
    points at any more are dropped when the table would grow, so memory follows the
    trajectories in flight.
    """

    ret_t: np.ndarray     # (P,) float64 return times (a heap, see drivers.push_return)
    ret_i: np.ndarray     # (RET_FIELDS, P) int64
    pstate: np.ndarray    # (PSTATE_FIELDS,) int64
    fu_t: np.ndarray      # (F,) float64 tool latency before each follow-up turn
    fu_i: np.ndarray      # (FU_FIELDS, F) int64 reply tokens, tokens to generate
    base: int = 0         # global index of fu row 0
    held: int = 0         # rows in use

    @classmethod
    def empty(cls, size: int = 16) -> "TurnArrays":
        return cls(np.zeros(size), np.zeros((RET_FIELDS, size), np.int64),
                   np.zeros(PSTATE_FIELDS, np.int64), np.zeros(size), np.zeros((FU_FIELDS, size), np.int64))

    @property
    def pending(self) -> int:
        """Turns waiting on a tool."""
        return int(self.pstate[NRET])

    def heap_view(self) -> tuple[np.ndarray, np.ndarray]:
        """(return times, RET_* fields) of the pending returns, in heap order."""
        n = self.pending
        return self.ret_t[:n], self.ret_i[:, :n]

    def reserve_returns(self, needed: int) -> None:
        """Room for ``needed`` pending returns."""
        size = self.ret_t.size
        if needed <= size:
            return
        size = max(needed, 2 * size)
        ret_t, ret_i = np.zeros(size), np.zeros((RET_FIELDS, size), np.int64)
        ret_t[: self.ret_t.size], ret_i[:, : self.ret_t.size] = self.ret_t, self.ret_i
        self.ret_t, self.ret_i = ret_t, ret_i

    def add(self, tool_s: np.ndarray, reply: np.ndarray, new: np.ndarray, first_live: int) -> int:
        """Append follow-up rows; returns the global index of the first. ``first_live``: the
        lowest row still referenced (rows below it may be dropped)."""
        n = tool_s.size
        if self.held + n > self.fu_t.size:
            k = min(max(0, first_live - self.base), self.held)
            self.fu_t[: self.held - k] = self.fu_t[k: self.held]
            self.fu_i[:, : self.held - k] = self.fu_i[:, k: self.held]
            self.held -= k
            self.base += k
        if self.held + n > self.fu_t.size:
            size = max(self.held + n, 2 * self.fu_t.size)
            fu_t, fu_i = np.zeros(size), np.zeros((FU_FIELDS, size), np.int64)
            fu_t[: self.held], fu_i[:, : self.held] = self.fu_t[: self.held], self.fu_i[:, : self.held]
            self.fu_t, self.fu_i = fu_t, fu_i
        first = self.base + self.held
        self.fu_t[self.held: self.held + n] = tool_s
        self.fu_i[FU_REPLY, self.held: self.held + n] = reply
        self.fu_i[FU_NEW, self.held: self.held + n] = new
        self.held += n
        return first

    def copy(self) -> "TurnArrays":
        return TurnArrays(self.ret_t.copy(), self.ret_i.copy(), self.pstate.copy(), self.fu_t,
                          self.fu_i, self.base, self.held)
