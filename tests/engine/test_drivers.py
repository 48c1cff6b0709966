"""Multi-turn trajectories inside the pool (twin.engine.drivers.advance_pool): kernel/reference
parity, the turn-order invariant, preview, and agreement with turns driven from outside."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from engine_workloads import Workload, drive, synthetic_costs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pool import assert_same

from twin.engine import EnginePool
from twin.engine.router import ROUTERS


@dataclass
class Turns:
    """Requests (sorted by arrival), each with its follow-up turns (tool s, reply, new)."""

    ids: np.ndarray
    prompts: np.ndarray
    news: np.ndarray
    arrivals: np.ndarray
    follow: list
    interrupt_at: float = math.inf
    keep: bool = True

    def flat(self, rows: np.ndarray):
        """``follow`` of requests ``rows`` as EnginePool.submit takes it."""
        turns = [t for r in rows for t in self.follow[r]]
        tool, reply, new = (np.array(c) for c in zip(*turns)) if turns else (np.zeros(0),) * 3
        return np.array([len(self.follow[r]) for r in rows]), tool, reply, new


@dataclass
class Outcome:
    finished: dict  # (id, turn) -> time
    dropped: set
    events: list
    pool: EnginePool


def drive_turns(pool: EnginePool, w: Turns) -> Outcome:
    """Submit each request, with all its turns, when time reaches its arrival; fire the
    interrupt when its time comes; then run the pool until it holds nothing."""
    out = Outcome({}, set(), [], pool)
    interrupt_at = w.interrupt_at
    count = {int(i): len(f) for i, f in zip(w.ids, w.follow)}

    def handle(events):
        out.events.append(events)
        for i, t, left in zip(events.ids.tolist(), events.times.tolist(), events.left.tolist()):
            key = (i, count[i] - left)
            assert key not in out.finished
            out.finished[key] = t

    k = 0
    while True:
        t_submit = w.arrivals[k] if k < len(w.ids) else math.inf
        t = min(t_submit, interrupt_at)
        if t == math.inf:
            handle(pool.advance())
            assert pool.pending_returns() == 0 and pool.outstanding().sum() == 0
            return out
        handle(pool.advance(t))
        if interrupt_at == t:
            events, dropped = pool.interrupt(t, keep=w.keep)
            handle(events)
            out.dropped |= set(dropped.tolist())
            interrupt_at = math.inf
            continue
        rows = np.flatnonzero(w.arrivals == t_submit)
        pool.submit(w.ids[rows], w.prompts[rows], w.news[rows], t_submit, w.flat(rows))
        k = rows[-1] + 1


@st.composite
def multi_turn(draw, kinds=("continuous", "static", "hf_generate"), interrupts=True):
    """Random pools and multi-turn workloads small enough for the reference."""
    n = draw(st.integers(1, 12))
    prompts = np.array(draw(st.lists(st.integers(1, 30), min_size=n, max_size=n)))
    news = np.array(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n)))
    gaps = draw(st.lists(st.sampled_from([0.0, 0.0, 0.003, 0.02, 0.1]), min_size=n, max_size=n))
    latency = st.sampled_from([0.0, 0.0041, 0.0293, 0.2017])  # off the grid of the arrivals
    follow = [draw(st.lists(st.tuples(latency, st.integers(0, 15), st.integers(1, 25)), max_size=3))
              for _ in range(n)]
    longest = max(int(p + g + sum(r + h for _, r, h in f)) for p, g, f in zip(prompts, news, follow))
    kind = draw(st.sampled_from(kinds))
    max_seqs = draw(st.integers(1, 6))
    block = draw(st.integers(1, 8))
    costs = synthetic_costs(
        max_num_seqs=max_seqs, budget=draw(st.integers(max_seqs, 48)), block_size=block,
        kv_tokens=block * math.ceil(longest / block) + draw(st.sampled_from([0, 7, 40, 400, 4000])),
        attn=draw(st.sampled_from([0.0, 3e-7, 3e-6])), kv=draw(st.sampled_from([0.0, 2e-6, 2e-5])),
        # No host floor here: a floor above every iteration puts all finishes on its lattice, so two
        # engines tie exactly; the kernel's closed form (k·floor) and the reference's running sum
        # round such a tie apart in opposite directions, and the tie's order routes the next turns.
        # The floor's parity is held by test_pool (turns routed from outside, ties harmless).
        host_floor=0.0,
        copy=draw(st.sampled_from([0.0, 1.3e-6])) if kind == "hf_generate" else 0.0)
    w = Turns(ids=np.arange(n), prompts=prompts, news=news, arrivals=np.cumsum(gaps), follow=follow,
              interrupt_at=draw(st.sampled_from([math.inf, 0.013, 0.05, 0.31])) if interrupts else math.inf,
              keep=draw(st.booleans()))
    pool = dict(engines=draw(st.integers(1, 3)), kind=kind, router=draw(st.sampled_from(ROUTERS)))
    return costs, w, pool


@pytest.mark.parity
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_turn())
def test_in_pool_turns_kernel_matches_reference(case):
    costs, w, pool = case
    kernel = drive_turns(EnginePool(costs, **pool, backend="kernel"), w)
    reference = drive_turns(EnginePool(costs, **pool, backend="reference"), w)
    assert_same(kernel, reference)
    for a, b in zip(kernel.events, reference.events):
        np.testing.assert_array_equal(a.left, b.left)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_turn())
def test_every_turn_finishes_once_in_order_after_its_tool(case):
    costs, w, pool = case
    out = drive_turns(EnginePool(costs, **pool), w)
    for i, prompt, arrival, follow in zip(w.ids.tolist(), w.prompts, w.arrivals, w.follow):
        done = sorted(turn for (j, turn) in out.finished if j == i)
        if i in out.dropped:  # a dropped trajectory finished a prefix of its turns
            assert not w.keep and done == list(range(len(done))) and len(done) <= len(follow)
        else:
            assert done == list(range(len(follow) + 1))
        assert not done or out.finished[(i, 0)] >= arrival
        for turn in done[1:]:
            tool = follow[turn - 1][0]
            assert out.finished[(i, turn)] >= out.finished[(i, turn - 1)] + tool
    for events in out.events:
        assert np.all(np.diff(events.times) >= 0)
    stats = out.pool.stats()
    assert np.all(stats.busy_s <= stats.clock_s + 1e-12)


def test_a_returning_turn_prefills_its_grown_context():
    # one engine, one trajectory: turn 2 starts after the tool from prompt + generated + reply
    costs = synthetic_costs(max_num_seqs=4, budget=64, kv_tokens=4096)
    pool = EnginePool(costs, 1)
    pool.submit([7], 10, 5, 0.0, ([1], [0.5], [20], [3]))
    events = pool.advance()
    assert events.ids.tolist() == [7, 7] and events.left.tolist() == [1, 0]
    alone = EnginePool(costs, 1)
    alone.submit([7], 10, 5, 0.0)
    t1 = alone.advance().times[0]
    alone.submit([7], 10 + 5 + 20, 3, t1 + 0.5)
    t2 = alone.advance().times[0]
    assert events.times.tolist() == pytest.approx([t1, t2], rel=1e-12)
    assert pool.stats().tokens_generated[0] == 8


def test_a_turn_waiting_on_its_tool_is_held_by_the_pool():
    costs = synthetic_costs()
    pool = EnginePool(costs, 2)
    pool.submit([1], 10, 5, 0.0, ([1], [3.0], [4], [6]))
    first = pool.advance(1.0)
    assert first.left.tolist() == [1]
    assert pool.pending_returns() == 1 and pool.outstanding().sum() == 0
    assert pool.next_return_time() == pytest.approx(first.times[0] + 3.0)
    events, dropped = pool.interrupt(2.0, keep=True)  # an update does not touch a tool call
    assert len(events) == 0 and pool.pending_returns() == 1
    later = pool.advance()
    assert later.left.tolist() == [0] and later.times[0] > first.times[0] + 3.0
    pool.submit([2], 10, 5, pool.now, ([1], [3.0], [4], [6]))
    pool.advance(pool.now + 1.0)
    events, dropped = pool.interrupt(pool.now + 1.5, keep=False)  # dropped with its trajectory
    assert dropped.tolist() == [2] and pool.pending_returns() == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_turn(interrupts=False), st.sampled_from([0.005, 0.03, 0.2, math.inf]))
def test_preview_sees_the_turns_after_tool_calls(case, until):
    costs, w, pool_args = case
    pool = EnginePool(costs, **pool_args)
    pool.submit(w.ids, w.prompts, w.news, w.arrivals, w.flat(np.arange(len(w.ids))))
    seen = pool.preview(until)
    got = pool.advance(until)
    for name in ("ids", "engines", "left", "step"):
        np.testing.assert_array_equal(getattr(seen, name), getattr(got, name), err_msg=name)
    np.testing.assert_array_equal(seen.times, got.times)


@st.composite
def two_turns(draw):
    """engine_workloads' second-turn workloads (one tool latency), without a dropping interrupt."""
    costs, w, pool = draw(multi_turn(kinds=("continuous", "static"), interrupts=False))
    latency = draw(st.sampled_from([0.0041, 0.0293, 0.2017]))
    second = {i: (reply, new) for i, f in enumerate(w.follow) if f for (_, reply, new) in f[:1]}
    return costs, Workload(ids=w.ids, prompts=w.prompts, news=w.news, arrivals=w.arrivals,
                           second_turn=second, tool_latency=latency,
                           interrupt_at=draw(st.sampled_from([math.inf, 0.013, 0.31]))), pool


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(two_turns())
def test_in_pool_turns_agree_with_turns_driven_from_outside(case):
    # The same second turns, submitted by the caller at each tool return (engine_workloads.drive)
    # or held by the pool: the same finishes, routing included, up to rounding of the steps.
    costs, w, pool = case
    outside = drive(EnginePool(costs, **pool), w)
    follow = [[(w.tool_latency, *w.second_turn[i])] if i in w.second_turn else [] for i in w.ids.tolist()]
    inside = drive_turns(EnginePool(costs, **pool), Turns(w.ids, w.prompts, w.news, w.arrivals, follow,
                                                          w.interrupt_at, keep=True))
    assert {(i, t + 1) for i, t in inside.finished} == set(outside.finished)
    for (i, t), at in inside.finished.items():
        assert math.isclose(at, outside.finished[(i, t + 1)], rel_tol=1e-9, abs_tol=1e-12), (i, t)


@pytest.mark.parity
def test_returns_routed_to_an_engine_with_no_free_slot_grow_its_slots():
    # round robin over 2 engines, 16 slots each: engine 0 holds 16 long requests when engine
    # 1's 16 short ones come back from their tools, half of them routed to engine 0
    costs = synthetic_costs(max_num_seqs=32, budget=64, kv_tokens=1 << 16)
    results = []
    for backend in ("kernel", "reference"):
        pool = EnginePool(costs, 2, router="round_robin", backend=backend)
        ids = np.arange(32)
        long = ids % 2 == 0
        follow = ((~long).astype(int), np.full(16, 0.01), np.full(16, 5), np.full(16, 5))
        pool.submit(ids, 10, np.where(long, 400, 5), 0.0, follow)
        if backend == "kernel":
            assert pool._backend.s.cap == 16
        events = pool.advance()
        results.append(events)
        assert sorted(events.ids.tolist()) == sorted(ids.tolist() + ids[~long].tolist())
        assert (events.engines == 0).sum() == 16 + 8  # half the second turns went to engine 0
        if backend == "kernel":
            assert pool._backend.s.cap > 16
    kernel, reference = results
    np.testing.assert_array_equal(kernel.ids, reference.ids)
    np.testing.assert_array_equal(kernel.engines, reference.engines)
    np.testing.assert_allclose(kernel.times, reference.times, rtol=1e-9)
