"""Static batching (plain HF generate): padding is paid, and it never beats continuous."""

from __future__ import annotations

import math

import numpy as np
from engine_workloads import long_tailed, synthetic_costs
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.engine import EnginePool


def run(costs, kind, engines, prompts, news):
    pool = EnginePool(costs, engines, kind=kind)
    pool.submit(np.arange(len(news)), prompts, news, 0.0)
    events = pool.advance()
    return events, pool.stats()


def test_a_batch_returns_together_at_its_longest_response(small_costs):
    events, stats = run(small_costs, "static", 1, [5, 9, 3], [4, 20, 7])
    assert np.all(events.times == events.times[0])
    # prefill the padded batch (3 x 9 tokens), then 19 decodes of 3 sequences of padded context
    prefill = small_costs.iteration_time(27, 3 * 45, 0)
    decode = sum(small_costs.iteration_time(3, 3 * (9 + j) + 3, 3 * (9 + j)) for j in range(19))
    assert math.isclose(events.times[0], prefill + decode, rel_tol=1e-12)
    assert stats.padding_tokens[0] == (9 - 5) + (9 - 3) + (20 - 4) + (20 - 7)
    assert stats.tokens_generated[0] == 4 + 20 + 7


def test_batches_run_one_after_another():
    costs = synthetic_costs(max_num_seqs=2)
    events, _ = run(costs, "static", 1, 8, [10, 10, 10, 10, 3])
    times = np.unique(events.times)
    assert times.size == 3 and math.isclose(times[1], 2 * times[0], rel_tol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 10_000), median=st.integers(5, 200),
       engines=st.integers(1, 3), max_seqs=st.integers(1, 8))
def test_static_never_beats_continuous(n, seed, median, engines, max_seqs):
    costs = synthetic_costs(max_num_seqs=max_seqs, budget=64, kv_tokens=1 << 20)
    news = long_tailed(n, seed, median, cap=600)
    prompts = long_tailed(n, seed + 1, 20, cap=60)
    static, _ = run(costs, "static", engines, prompts, news)
    continuous, _ = run(costs, "continuous", engines, prompts, news)
    assert static.times.max() >= continuous.times.max() * (1 - 1e-9)
    assert static.times.mean() >= continuous.times.mean()


def test_static_pays_for_the_tail_on_a_real_engine(real_costs):
    news = long_tailed(256, seed=11, median=1500, cap=16000)
    static, s_stats = run(real_costs, "static", 2, 141, news)
    continuous, c_stats = run(real_costs, "continuous", 2, 141, news)
    assert static.times.max() > 1.2 * continuous.times.max()
    assert s_stats.padding_tokens.sum() > s_stats.tokens_generated.sum()
