"""EnginePool: kernel/reference parity on random workloads, invariants, and the API contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
from engine_workloads import Workload, drive, long_tailed, synthetic_costs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.engine import EnginePool
from twin.engine.router import ROUTERS


@st.composite
def scenarios(draw, kinds=("continuous", "static")):
    """Random costs, pools and workloads small enough for the reference to step through
    (``hf_generate`` among ``kinds``: HF generate's host floor and cache copy drawn too)."""
    group = draw(st.sampled_from([1, 1, 2, 3]))  # GRPO groups: one prompt, one arrival
    n = group * draw(st.integers(1, 20 // group))
    prompts = np.repeat(draw(st.lists(st.integers(1, 40), min_size=n // group, max_size=n // group)), group)
    news = np.array(draw(st.lists(st.integers(1, 90), min_size=n, max_size=n)))
    gaps = np.repeat(draw(st.lists(st.sampled_from([0.0, 0.0, 0.003, 0.02, 0.1]), min_size=n // group,
                                   max_size=n // group)), group) * (np.arange(n) % group == 0)
    second = {}
    for i in draw(st.sets(st.integers(0, n - 1), max_size=n)):
        second[i] = (draw(st.integers(1, 20)), draw(st.integers(1, 30)))
    longest = int(max(prompts.max() + news.max(), max((prompts[i] + news[i] + t + g
                                                       for i, (t, g) in second.items()), default=0)))
    max_seqs = draw(st.integers(1, 6))
    block = draw(st.integers(1, 8))
    costs = synthetic_costs(
        max_num_seqs=max_seqs,
        budget=draw(st.integers(max_seqs, 48)),
        block_size=block,
        # from "one sequence barely fits" (preemption storms) to ample
        kv_tokens=block * math.ceil(longest / block) + draw(st.sampled_from([0, 7, 40, 400, 4000])),
        attn=draw(st.sampled_from([0.0, 3e-7, 3e-6])),
        kv=draw(st.sampled_from([0.0, 2e-6, 2e-5])),
        # off the grid of the drawn arrivals and interrupts, so that no boundary is a rounding tie
        # off the grid of the drawn gaps and interrupts: no boundary is a rounding tie
        host_floor=draw(st.sampled_from([0.0, 1.7e-3, 0.0371])) if "hf_generate" in kinds else 0.0,
        copy=draw(st.sampled_from([0.0, 1.3e-6, 1.1e-5])) if "hf_generate" in kinds else 0.0,
        prefix_caching=draw(st.booleans()),
    )
    workload = Workload(
        ids=np.arange(n), prompts=prompts, news=news, arrivals=np.cumsum(gaps),
        second_turn=second, tool_latency=draw(st.sampled_from([0.0, 0.01, 0.2])),
        interrupt_at=draw(st.sampled_from([math.inf, 0.0, 0.013, 0.05, 0.31])),
        keep=draw(st.booleans()),
        group=group,
    )
    engines = draw(st.integers(1, 3))
    # some engines straggle (every iteration x its factor, twin.sim.stragglers)
    slow = np.array(draw(st.lists(st.sampled_from([1.0, 1.0, 1.13, 1.5]), min_size=engines, max_size=engines)))
    pool = dict(engines=engines, kind=draw(st.sampled_from(kinds)),
                router=draw(st.sampled_from(ROUTERS)), slow=slow)
    return costs, workload, pool


def assert_same(a, b):
    assert a.finished.keys() == b.finished.keys()
    for key, t in a.finished.items():
        assert math.isclose(t, b.finished[key], rel_tol=1e-9, abs_tol=1e-12), key
    assert a.dropped == b.dropped
    sa, sb = a.pool.stats(), b.pool.stats()
    for name in ("tokens_generated", "preemptions", "wasted_tokens", "padding_tokens"):
        np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
    np.testing.assert_allclose(sa.busy_s, sb.busy_s, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sa.recompute_s, sb.recompute_s, rtol=1e-9, atol=1e-12)
    spans_a, spans_b = a.pool.spans(), b.pool.spans()
    np.testing.assert_array_equal(spans_a.engines, spans_b.engines)
    np.testing.assert_allclose(spans_a.starts, spans_b.starts, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(spans_a.ends, spans_b.ends, rtol=1e-9, atol=1e-12)


@pytest.mark.parity
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_kernel_matches_reference(case):
    costs, workload, pool = case
    kernel = drive(EnginePool(costs, **pool, backend="kernel"), workload)
    reference = drive(EnginePool(costs, **pool, backend="reference"), workload)
    assert_same(kernel, reference)


@pytest.mark.parity
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(kinds=("hf_generate",)))
def test_hf_generate_kernel_matches_reference(case):
    # hf_generate runs the static kernel on a table with a host floor and a cache copy
    costs, workload, pool = case
    kernel = drive(EnginePool(costs, **pool, backend="kernel"), workload)
    reference = drive(EnginePool(costs, **pool, backend="reference"), workload)
    assert_same(kernel, reference)


@pytest.mark.parity
@settings(max_examples=30, deadline=None)
@given(scenarios(kinds=("continuous",)))
def test_kernel_matches_reference_advancing_all_at_once(case):
    # The same work in one advance(inf) call, as a non-streaming orchestrator would do it.
    costs, w, pool = case
    results = []
    for backend in ("kernel", "reference"):
        p = EnginePool(costs, **pool, backend=backend)
        p.submit(w.ids, w.prompts, w.news, w.arrivals)
        events = p.advance()
        results.append((dict(zip(events.ids.tolist(), events.times.tolist())), p.stats()))
    (tk, sk), (tr, sr) = results
    assert tk.keys() == tr.keys() == set(w.ids.tolist())
    assert all(math.isclose(tk[i], tr[i], rel_tol=1e-9) for i in tk)
    np.testing.assert_array_equal(sk.preemptions, sr.preemptions)


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_invariants(case):
    costs, w, pool = case
    out = drive(EnginePool(costs, **pool), w)
    # every segment finishes exactly once unless dropped (drive asserts "at most once")
    last_turn = {i: 2 if i in w.second_turn else 1 for i in w.ids.tolist()}
    for i, last in last_turn.items():
        assert ((i, last) in out.finished) != (i in out.dropped)
        assert (i, 1) in out.finished or i in out.dropped
    arrivals = dict(zip(w.ids.tolist(), w.arrivals.tolist()))
    for (i, turn), t in out.finished.items():
        assert t >= arrivals[i]
    for events in out.events:
        assert np.all(np.diff(events.times) >= 0)
    stats, spans = out.pool.stats(), out.pool.spans()
    assert np.all(stats.busy_s <= stats.clock_s + 1e-12)
    for e in range(out.pool.engines):
        s, t = spans.starts[spans.engines == e], spans.ends[spans.engines == e]
        assert np.all(t > s) and np.all(s[1:] >= t[:-1])  # disjoint, in order
        assert math.isclose((t - s).sum(), stats.busy_s[e], rel_tol=1e-9, abs_tol=1e-12)


def test_drop_returns_in_flight_and_arrived_ids_only(small_costs):
    pool = EnginePool(small_costs, 2)
    pool.submit([1, 2, 3], 10, 40, 0.0)
    pool.submit([4], 10, 40, 5.0)  # not yet arrived at the interrupt
    events, dropped = pool.interrupt(0.01, keep=False)
    assert len(events) == 0 and sorted(dropped.tolist()) == [1, 2, 3]
    assert pool.advance().ids.tolist() == [4]


def test_keep_recomputes_context_and_loses_no_tokens(small_costs):
    plain, interrupted = EnginePool(small_costs), EnginePool(small_costs)
    for p in (plain, interrupted):
        p.submit([7], 30, 50, 0.0)
    t_plain = plain.advance().times[0]
    events, dropped = interrupted.interrupt(t_plain / 2, keep=True)
    t_kept = interrupted.advance().times[0]
    stats = interrupted.stats()
    assert len(events) == 0 and dropped.size == 0
    assert t_kept > t_plain
    assert stats.tokens_generated[0] == 50 and stats.wasted_tokens[0] > 30


def test_next_event_time_does_not_move_the_pool(small_costs):
    pool = EnginePool(small_costs, 2)
    pool.submit(np.arange(6), 12, long_tailed(6, 1, 20, 60), 0.0)
    t = pool.next_event_time()
    assert pool.now == 0.0
    events = pool.advance(t)
    assert len(events) >= 1 and np.all(events.times == t)


@pytest.mark.parametrize("kind", ["continuous", "static"])
@pytest.mark.parametrize("backend", ["kernel", "reference"])
def test_preview_reports_what_advance_will_without_moving_the_pool(small_costs, kind, backend):
    def started():
        pool = EnginePool(small_costs, 3, kind=kind, backend=backend)
        pool.submit(np.arange(9), 12, long_tailed(9, 2, 20, 60), 0.0)
        pool.advance(pool.next_event_time())
        return pool

    until = float(np.median(started().advance(math.inf).times))
    pool = started()
    clocks, outstanding = pool.stats().clock_s.copy(), pool.outstanding().copy()
    seen = pool.preview(until)
    assert np.array_equal(pool.stats().clock_s, clocks) and np.array_equal(pool.outstanding(), outstanding)
    got = pool.advance(until)
    assert len(got) > 1
    for a, b in zip(seen, got):
        assert np.array_equal(a, b)
    # advancing only to a finish the preview showed stops right after it
    cut = started().advance(got.times[0])
    assert np.array_equal(cut.ids, got.ids[got.times <= got.times[0]])


def test_once_idle_the_pool_takes_arrivals_at_its_last_finish(small_costs):
    pool = EnginePool(small_costs, 2)
    pool.submit(np.arange(4), 12, long_tailed(4, 3, 20, 60), 0.0)
    events = pool.advance(1e9)
    assert pool.outstanding().sum() == 0 and pool.now == events.times[-1]
    pool.submit([9], 12, 10, events.times[-1])  # not 1e9: no engine ran past its last finish


def test_submissions_cannot_go_back_in_time(small_costs):
    pool = EnginePool(small_costs)
    pool.submit([1], 10, 10, 1.0)
    pool.advance(2.0, settle=True)
    with pytest.raises(ValueError, match="back in time"):
        pool.submit([2], 10, 10, 0.5)
    with pytest.raises(ValueError, match="exceeds the engine's KV cache"):
        pool.submit([3], 5000, 10, 3.0)


def test_unknown_names_are_rejected(small_costs):
    with pytest.raises(ValueError, match="allowed: continuous, static"):
        EnginePool(small_costs, kind="paged")
    with pytest.raises(ValueError, match="allowed: round_robin, least_loaded"):
        EnginePool(small_costs, router="random")


def test_from_scenario_builds_one_engine_per_tp_group():
    from twin.runner import plan as plan_of
    pool = EnginePool.from_scenario(plan_of(overrides={"placement.rollout.tp": 2}))
    assert pool.engines == 16 and pool.kind == "continuous" and pool.router == "least_loaded"


@pytest.mark.parametrize("kind", ["continuous", "static"])
def test_a_slow_engine_takes_its_factor_longer(small_costs, kind):
    # two engines, the same requests each (round robin), the second 20% slow: every finish of
    # the second comes 1.2 times as late, and its busy time is 1.2 times the first's
    pool = EnginePool(small_costs, 2, kind=kind, router="round_robin", slow=np.array([1.0, 1.2]))
    pool.submit(np.arange(8), 12, np.repeat([30, 30, 55, 55, 80, 80, 17, 17], 1), 0.0)
    events = pool.advance()
    by_engine = {e: sorted(events.times[events.engines == e]) for e in (0, 1)}
    np.testing.assert_allclose(by_engine[1], 1.2 * np.array(by_engine[0]), rtol=1e-12)
    busy = pool.stats().busy_s
    assert busy[1] == pytest.approx(1.2 * busy[0], rel=1e-12)


def test_slow_factors_are_checked(small_costs):
    with pytest.raises(ValueError, match="one factor >= 1 per engine"):
        EnginePool(small_costs, 2, slow=np.array([1.0]))
    with pytest.raises(ValueError, match="one factor >= 1 per engine"):
        EnginePool(small_costs, 2, slow=np.array([1.0, 0.9]))
