"""Closed forms of :mod:`twin.engine.iteration` against one-iteration-at-a-time sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_workloads import scenario_costs, synthetic_costs
from twin.engine.iteration import (decode_run_time, iteration_time, iterations_until_reached,
                                   iterations_within, static_prefill_time)
from twin.engine.layout import KernelCosts


def stepped(costs, n, ctx, k):
    return [costs.iteration_time(n, ctx + n * j + n, ctx + n * j) for j in range(k)]


def test_iteration_time_is_engine_costs_formula_bit_for_bit(real_costs):
    kc = KernelCosts.of(real_costs)
    for n, pairs, kv in [(1, 10.0, 9.0), (256, 1e6, 9e5), (8192, 3e7, 0.0), (0, 5.0, 5.0)]:
        assert iteration_time(kc.tab, kc.cf, n, pairs, kv) == real_costs.iteration_time(n, pairs, kv)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 64), ctx=st.integers(0, 5000), k=st.integers(0, 400),
       attn=st.floats(0, 1e-5), kv=st.floats(0, 1e-4))
def test_decode_run_time_sums_the_iterations(n, ctx, k, attn, kv):
    costs = synthetic_costs(attn=attn, kv=kv)
    kc = KernelCosts.of(costs)
    expected = math.fsum(stepped(costs, n, ctx, k))
    assert math.isclose(decode_run_time(kc.tab, kc.cf, n, ctx, k), expected, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.parity
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 64), ctx=st.integers(0, 5000), k=st.integers(0, 400),
       attn=st.sampled_from([0.0, 3e-7, 1e-5]), kv=st.sampled_from([0.0, 2e-6, 1e-4]),
       floor=st.sampled_from([0.0, 1e-3, 5e-3, 0.05, 1.0]), copy=st.sampled_from([0.0, 1e-7, 4e-6]))
def test_decode_run_time_sums_hf_generate_iterations(n, ctx, k, attn, kv, floor, copy):
    # HF generate's terms: the host floor holds a prefix of the run, the copy grows with context
    costs = synthetic_costs(attn=attn, kv=kv, host_floor=floor, copy=copy)
    kc = KernelCosts.of(costs)
    expected = math.fsum(stepped(costs, n, ctx, k))
    assert math.isclose(decode_run_time(kc.tab, kc.cf, n, ctx, k), expected, rel_tol=1e-12, abs_tol=1e-15)


def test_host_floor_and_copy_enter_one_iteration():
    costs = synthetic_costs(host_floor=0.5, copy=1e-6)
    assert costs.iteration_time(4, 104, 100) == 0.5  # the device's work hides under the host's
    free = synthetic_costs(copy=1e-6)
    assert math.isclose(free.iteration_time(4, 104, 100) - synthetic_costs().iteration_time(4, 104, 100), 1e-4)


def test_decode_run_time_crosses_from_memory_to_compute_bound(real_costs):
    # A large batch starts memory-bound (weights) and turns compute-bound as context grows.
    kc = KernelCosts.of(real_costs)
    steps = stepped(real_costs, 256, 256 * 100, 3000)
    assert math.isclose(decode_run_time(kc.tab, kc.cf, 256, 256 * 100, 3000), math.fsum(steps), rel_tol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 32), ctx=st.integers(0, 2000), kmax=st.integers(1, 300),
       frac=st.floats(0, 1.2))
def test_bisections_match_stepping(n, ctx, kmax, frac):
    costs = synthetic_costs()
    kc = KernelCosts.of(costs)
    ends = np.cumsum(stepped(costs, n, ctx, kmax))
    target = 1.0 + frac * ends[-1]
    within = iterations_within(kc.tab, kc.cf, n, ctx, kmax, 1.0, target)
    # a target that lands on an iteration boundary may round either way
    assert within in {int(np.sum(1.0 + ends <= target * (1 - 1e-12))), int(np.sum(1.0 + ends <= target))}
    reached = iterations_until_reached(kc.tab, kc.cf, n, ctx, kmax, 1.0, target)
    first = np.flatnonzero(1.0 + ends >= target)
    assert reached == (first[0] + 1 if first.size else kmax)


def test_static_prefill_of_one_long_sequence_is_engine_costs_prefill():
    costs = scenario_costs()
    kc = KernelCosts.of(costs)
    length = 3 * costs.max_num_batched_tokens + 17
    got = static_prefill_time(kc.tab, kc.cf, costs.max_num_batched_tokens, 1, length)
    assert math.isclose(got, costs.prefill_time(length), rel_tol=1e-12)


def test_static_prefill_packs_whole_prompts_into_the_budget():
    costs = synthetic_costs(budget=64)
    kc = KernelCosts.of(costs)
    # 10 prompts of 20 tokens: 3 per iteration -> 3 full iterations and one of 1 prompt
    full = costs.iteration_time(60, 3 * 210, 0)
    last = costs.iteration_time(20, 210, 0)
    assert math.isclose(static_prefill_time(kc.tab, kc.cf, 64, 10, 20), 3 * full + last, rel_tol=1e-12)
