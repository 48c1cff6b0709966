import numpy as np

from twin.config.load import load_scenario
from twin.config.workload import sample_batch


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


# --------------------------------------------------------------------------- workload.schedule
import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from twin import runner  # noqa: E402
from twin.errors import InputError  # noqa: E402

SMALL = {"model": "qwen2.5-1.5b", "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
         "placement": {"mode": "colocated"}, "algorithm": {"prompts_per_step": 8, "responses_per_prompt": 4},
         "workload": {"response_tokens": {"kind": "uniform", "low": 50, "high": 4096}}}


def _with(schedule: dict, **workload) -> dict:
    return {**SMALL, "workload": {**SMALL["workload"], **workload, "schedule": schedule}}


def test_windows_pick_the_step_s_lengths():
    s = load_scenario(_with({"windows": [
        {"from_step": 0, "response_tokens": {"kind": "fixed", "value": 200}},
        {"from_step": 3, "response_tokens": {"kind": "fixed", "value": 300},
         "prompt_tokens": {"kind": "fixed", "value": 50}}]}))
    rng = np.random.default_rng(0)
    for step, gen, prompt in ((1, 200, 141), (2, 200, 141), (3, 300, 50), (99, 300, 50)):
        b = sample_batch(s, 2, rng, step=step)
        assert (b.gen == gen).all() and (b.prompt == prompt).all()


def test_without_a_schedule_every_step_draws_as_before():
    s = load_scenario("grpo-7b-colocated")
    a = sample_batch(s, 16, np.random.default_rng(3))
    b = sample_batch(s, 16, np.random.default_rng(3), step=250)
    assert (a.gen == b.gen).all() and (a.prompt == b.prompt).all()


@settings(max_examples=30, deadline=None)
@given(rate=st.floats(-0.05, 0.05), step=st.integers(1, 2000))
def test_growth_multiplies_lengths_capped_at_the_max(rate, step):
    s = load_scenario(_with({"growth": {"per_step": rate}},
                            response_tokens={"kind": "fixed", "value": 1000, "max": 3000}))
    b = sample_batch(s, 4, np.random.default_rng(0), step=step)
    want = np.clip(np.rint(1000 * (1 + rate) ** (step - 1)), 1, 3000)
    assert np.allclose(b.gen, want, rtol=1e-9, atol=1)  # rounding of the scaled draw
    assert b.gen.max() <= 3000


def test_growth_runs_from_each_window_s_start():
    s = load_scenario(_with({"windows": [{"from_step": 1, "response_tokens": {"kind": "fixed", "value": 100}},
                                         {"from_step": 11, "response_tokens": {"kind": "fixed", "value": 500}}],
                             "growth": {"per_step": 0.1}}, response_tokens={"kind": "uniform", "low": 50, "high": 4096,
                                                                           "max": 4096}))
    assert s.workload.at_step(10)[1].clipped_mean() == pytest.approx(100 * 1.1 ** 9)
    assert s.workload.at_step(11)[1].clipped_mean() == 500
    assert s.workload.at_step(12)[1].clipped_mean() == pytest.approx(550)


def test_lengths_follow_the_admitting_policy_s_step():
    """A trajectory draws the lengths of the step its policy version would train (version + 1)."""
    sched = {"windows": [{"from_step": 1, "response_tokens": {"kind": "fixed", "value": 100}},
                         {"from_step": 3, "response_tokens": {"kind": "fixed", "value": 1000}}]}
    sync = runner.run(_with(sched) | {"run": {"steps": 5}}).to_dict()["steps"]
    assert [s["mean_response_tokens"] for s in sync] == [100, 100, 1000, 1000, 1000]
    # One step of staleness: step 3 trains on groups admitted under version 1 (step 2's lengths).
    stale = runner.run(_with(sched) | {"placement": {"mode": "async", "rollout": {"gpus": 4}, "trainer": {"gpus": 4}},
                                       "algorithm": {**SMALL["algorithm"], "staleness": 1},
                                       "run": {"steps": 5}}).to_dict()["steps"]
    assert [s["mean_response_tokens"] for s in stale][:3] == [100, 100, 100]
    assert stale[-1]["mean_response_tokens"] == 1000


@pytest.mark.parametrize("schedule, field, allowed", [
    ({"windows": [{"from_step": 2, "response_tokens": {"kind": "fixed", "value": 1}}]},
     "workload.schedule.windows[0].from_step", "0 or 1"),
    ({"windows": [{"from_step": 1, "response_tokens": {"kind": "fixed", "value": 1}},
                  {"from_step": 9, "response_tokens": {"kind": "fixed", "value": 1}},
                  {"from_step": 9, "response_tokens": {"kind": "fixed", "value": 1}}]},
     "workload.schedule.windows[2].from_step", "> 9"),
    ({"windows": [{"from_step": 0, "response_tokens": {"kind": "fixed", "value": 1}},
                  {"from_step": 1, "response_tokens": {"kind": "fixed", "value": 1}}]},
     "workload.schedule.windows[1].from_step", "> 1"),
    ({"windows": [{"from_step": 1, "response_tokens": {"kind": "lognormal", "median": 100, "sigma": 1, "max": 8192}}]},
     "workload.schedule.windows[0].response_tokens", "at most 4,096"),
    ({"windows": [{"from_step": 1, "response_tokens": {"kind": "lognormal", "median": 100, "sigma": 1}}]},
     "workload.schedule.windows[0].response_tokens", "at most 4,096"),
    ({"growth": {"per_step": 0.01}}, "workload.response_tokens.max", "max response length"),
])
def test_bad_schedules_name_the_field(schedule, field, allowed):
    with pytest.raises(InputError) as err:
        load_scenario(_with(schedule))
    assert err.value.field == field and allowed in err.value.allowed


def test_window_prompts_stay_within_the_workload_s_bound():
    sched = {"windows": [{"from_step": 1, "response_tokens": {"kind": "fixed", "value": 1},
                          "prompt_tokens": {"kind": "uniform", "low": 10, "high": 900}}]}
    with pytest.raises(InputError) as err:
        load_scenario(_with(sched, prompt_tokens={"kind": "uniform", "low": 10, "high": 500}))
    assert err.value.field == "workload.schedule.windows[0].prompt_tokens"
    with pytest.raises(Exception, match="per_step"):
        load_scenario(_with({"growth": {"per_step": -1}}))
