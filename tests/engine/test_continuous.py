"""Physics of continuous batching: the long tail, the makespan floor, KV pressure."""

from __future__ import annotations

import math

import numpy as np
from engine_workloads import long_tailed, synthetic_costs

from twin.engine import EnginePool


def alone(costs, prompt: int, new: int) -> float:
    """Lower bound: one sequence by itself, prefill then decode (EngineCosts' own formulas)."""
    return costs.prefill_time(prompt) + sum(costs.decode_time(1, prompt + j) for j in range(new - 1))


def makespan(costs, engines: int, prompts, news, kind="continuous") -> float:
    pool = EnginePool(costs, engines, kind=kind)
    pool.submit(np.arange(len(news)), prompts, news, 0.0)
    return float(pool.advance().times.max())


def test_one_engine_long_tail_approaches_the_longest_sequence_alone(real_costs):
    news = long_tailed(64, seed=3, median=300, cap=12000)
    news[0] = 12000  # the tail: one response far longer than the rest
    floor = alone(real_costs, 141, int(news.max()))
    t = makespan(real_costs, 1, 141, news)
    assert floor <= t <= 1.25 * floor
    # the floor really is "max length x small-batch iteration time"
    assert math.isclose(floor, news.max() * real_costs.decode_time(1, 141 + news.max() / 2), rel_tol=0.05)


def test_more_engines_cannot_beat_the_longest_sequence(real_costs):
    news = long_tailed(512, seed=5, median=2000, cap=16000)
    floor = alone(real_costs, 141, int(news.max()))
    spans = [makespan(real_costs, e, 141, news) for e in (1, 2, 4, 8, 16, 32)]
    assert all(t >= floor for t in spans)
    assert spans[-1] <= spans[0]
    assert spans[-1] < 1.2 * floor  # diminishing returns: the tail binds, not the engines


def test_kv_exhaustion_preempts_and_recomputes():
    costs = synthetic_costs(max_num_seqs=8, budget=64, block_size=4, kv_tokens=160)
    pool = EnginePool(costs)
    pool.submit(np.arange(8), 10, 60, 0.0)
    events = pool.advance()
    stats = pool.stats()
    assert sorted(events.ids.tolist()) == list(range(8))
    assert stats.preemptions[0] > 0 and stats.wasted_tokens[0] > 0
    assert stats.tokens_generated[0] == 8 * 60  # preemption keeps generated tokens
    roomy = EnginePool(synthetic_costs(max_num_seqs=8, budget=64, block_size=4, kv_tokens=4096))
    roomy.submit(np.arange(8), 10, 60, 0.0)
    assert roomy.advance().times.max() < events.times.max()
    assert roomy.stats().preemptions[0] == 0


def test_preemption_takes_the_newest_sequence(small_costs):
    # Room for 2 sequences' growth: the oldest keeps running, the newest restarts.
    costs = synthetic_costs(max_num_seqs=4, budget=64, block_size=1, kv_tokens=100)
    pool = EnginePool(costs)
    pool.submit([0, 1, 2], 30, 30, 0.0)
    events = pool.advance()
    order = events.ids.tolist()
    assert order[0] == 0 and pool.stats().preemptions[0] > 0


def test_max_num_seqs_caps_the_running_batch():
    costs = synthetic_costs(max_num_seqs=2, budget=64)
    pool = EnginePool(costs)
    pool.submit(np.arange(4), 5, 20, 0.0)
    times = pool.advance().times
    # two waves of two: the second wave starts when the first finishes
    assert times[1] == times[0] and times[2] > times[1] * 1.8


def test_chunked_prefill_respects_the_token_budget():
    costs = synthetic_costs(max_num_seqs=4, budget=16, linear=1e-3, weights=0.0, attn=0.0, kv=0.0,
                            overhead=0.0)
    pool = EnginePool(costs)
    pool.submit([0], 40, 1, 0.0)  # 40 prompt tokens: chunks of 16, 16, 8
    t = pool.advance().times[0]
    assert math.isclose(t, 1e-3 * 40, rel_tol=1e-12)
    assert math.isclose(t, costs.prefill_time(40), rel_tol=1e-12)


def test_arrivals_join_a_running_batch(small_costs):
    pool = EnginePool(small_costs)
    pool.submit([0], 10, 200, 0.0)
    pool.submit([1], 10, 5, 0.05)
    events = pool.advance()
    assert events.ids.tolist() == [1, 0]  # no waiting for the long one
    assert 0.05 < events.times[0] < 0.05 + 10 * small_costs.decode_time(2, 300)


def _storm(prefix_caching: bool, backend: str = "kernel"):
    """Eight sequences growing past a KV cache that holds about three of them."""
    costs = synthetic_costs(max_num_seqs=8, budget=64, block_size=4, kv_tokens=160,
                            prefix_caching=prefix_caching)
    pool = EnginePool(costs, backend=backend)
    pool.submit(np.arange(8), 10, 60, 0.0)
    events = pool.advance()
    return events, pool.stats()


def test_recompute_is_counted_with_its_seconds():
    events, stats = _storm(False)
    assert stats.preemptions[0] > 0 and stats.wasted_tokens[0] > 0
    assert 0 < stats.recompute_s[0] < stats.busy_s[0]
    roomy = EnginePool(synthetic_costs(max_num_seqs=8, budget=64, block_size=4, kv_tokens=4096))
    roomy.submit(np.arange(8), 10, 60, 0.0)
    roomy.advance()
    assert roomy.stats().recompute_s[0] == 0.0 and roomy.stats().wasted_tokens[0] == 0


def test_prefix_cache_keeps_part_of_a_preempted_sequence():
    """vLLM V1 frees a victim's blocks into the cache, tail first: what the others have not
    reused by the time it is admitted again is a cache hit, not recomputed."""
    _, plain = _storm(False)
    events, cached = _storm(True)
    assert sorted(events.ids.tolist()) == list(range(8))
    assert cached.tokens_generated[0] == plain.tokens_generated[0] == 8 * 60
    assert cached.wasted_tokens[0] < plain.wasted_tokens[0]
    assert cached.recompute_s[0] < plain.recompute_s[0]
    ref_events, ref = _storm(True, backend="reference")
    np.testing.assert_allclose(np.sort(ref_events.times), np.sort(events.times), rtol=1e-9)
    assert ref.wasted_tokens[0] == cached.wasted_tokens[0]


def test_a_group_goes_to_one_engine_and_prefills_its_prompt_once():
    """GRPO's n responses share a prompt: with prefix caching they are routed together and the
    members after the first find its full blocks cached (the last partial block and the last
    token are computed by each)."""
    def run(prefix_caching):
        costs = synthetic_costs(max_num_seqs=8, budget=512, block_size=4, kv_tokens=4096, linear=1e-4,
                                weights=0.0, attn=0.0, kv=0.0, overhead=0.0, prefix_caching=prefix_caching)
        pool = EnginePool(costs, 2)
        engines = pool.submit(np.arange(8), 40, 5, 0.0, group=4)
        return engines, pool.advance().times.max()
    engines, t_cached = run(True)
    assert engines.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    spread, t_plain = run(False)
    assert len(set(spread[:4].tolist())) > 1  # without it, least-loaded spreads the members
    # per engine: one prefill of 40 tokens + three of 4 (40 - 36 cached), against 2 x 40 spread
    assert t_cached < t_plain
