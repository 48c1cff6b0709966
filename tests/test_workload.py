import numpy as np

from twin.config.load import load_scenario
from twin.workload import sample_batch


def test_multi_turn_layout():
    s = load_scenario("agentic-search-4b")
    b = sample_batch(s, 10, np.random.default_rng(0))
    turns = np.diff(b.turn_start)
    assert b.size == 10 * s.algorithm.responses_per_prompt
    assert turns.min() >= 3 and turns.max() <= 7  # 2–6 tool calls + the final turn
    last = b.turn_start[1:] - 1
    assert (b.tool_s[last] == 0).all() and (b.reply[last] == 0).all()
    assert (b.context() == b.prompt + b.generated() + np.add.reduceat(b.reply, b.turn_start[:-1])).all()
    # A group's responses share their prompt.
    assert (b.prompt.reshape(10, -1) == b.prompt.reshape(10, -1)[:, :1]).all()


def test_dapo_filters_groups_at_the_given_rate():
    s = load_scenario({"model": "qwen3-4b", "algorithm": {"name": "dapo",
                       "dynamic_sampling": {"enabled": True, "zero_variance_fraction": 0.3}}})
    b = sample_batch(s, 20_000, np.random.default_rng(0), responses=1)
    assert abs(b.filtered.mean() - 0.3) < 0.02
