
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from twin.analysis import metrics
from twin.analysis.report import build_report
from twin.runner import plan as plan_of
from twin.cost.phases import learner_phases, switch_time
from twin.cost.weight_sync import weight_sync_cost
from twin.sim.loop import simulate


def small(**over) -> dict:
    data = {
        "model": "qwen2.5-1.5b",
        "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "placement": {"mode": "colocated"},
        "algorithm": {"prompts_per_step": 8, "responses_per_prompt": 4},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 100},
                     "response_tokens": {"kind": "lognormal", "median": 200, "sigma": 1.0, "max": 2048}},
        "run": {"steps": 3, "seed": 1},
    }
    for path, value in over.items():
        node = data
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return data


SCENARIOS = st.fixed_dictionaries({
    "placement.mode": st.sampled_from(["colocated", "disaggregated", "async"]),
    # Integers are AReaL's/NeMo-RL's bound, fractions verl's fully-async staleness_threshold.
    "algorithm.staleness": st.one_of(st.integers(0, 3), st.sampled_from([0.1, 0.5, 1.5, 2.75])),
    "algorithm.partial_rollout": st.booleans(),
    "algorithm.name": st.sampled_from(["grpo", "dapo", "ppo"]),
    "algorithm.prompts_per_step": st.integers(1, 12),
    "algorithm.responses_per_prompt": st.integers(1, 4),
    "placement.rollout.engine": st.sampled_from(["continuous", "static"]),
    "placement.rollout.max_num_seqs": st.sampled_from([4, 64, 256]),
    "run.steps": st.integers(1, 4),
    "run.seed": st.integers(0, 1000),
    "multi_turn": st.booleans(),
    "sandbox_workers": st.sampled_from([0, 2, 16]),
    "eval_every": st.sampled_from([0, 2]),
})


def _build(params: dict) -> dict:
    over = {k: v for k, v in params.items() if "." in k}
    if over["placement.mode"] == "colocated":
        over["algorithm.staleness"] = 0
    if over["algorithm.name"] == "dapo":
        over["algorithm.dynamic_sampling"] = {"enabled": True, "zero_variance_fraction": 0.3}
    data = small(**over)
    if params["multi_turn"]:
        data["workload"]["multi_turn"] = {
            "tool_calls": {"kind": "empirical", "values": [1, 2], "weights": [1, 1]},
            "tool_latency_s": {"kind": "uniform", "low": 0.5, "high": 2.0},
            "tool_reply_tokens": {"kind": "fixed", "value": 50}}
    if params["sandbox_workers"]:
        data["reward"] = {"kind": "sandbox", "workers": params["sandbox_workers"],
                          "latency_s": {"kind": "uniform", "low": 0.5, "high": 5}, "failure_rate": 0.1}
    if params["eval_every"]:
        data["evaluation"] = {"every_steps": params["eval_every"], "prompts": 4}
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=SCENARIOS)
@example(params={"placement.mode": "async", "algorithm.staleness": 0.5, "algorithm.partial_rollout": False,
                 "algorithm.name": "grpo", "algorithm.prompts_per_step": 8, "algorithm.responses_per_prompt": 4,
                 "placement.rollout.engine": "continuous", "placement.rollout.max_num_seqs": 64,
                 "run.steps": 4, "run.seed": 3, "multi_turn": False, "sandbox_workers": 0, "eval_every": 0})
def test_loop_invariants(params):
    s = plan_of(_build(params))
    result = simulate(s)
    steps = result.steps
    # Every optimizer step happened, in order, and simulated time never runs backwards.
    assert [r.step for r in steps] == list(range(s.run.steps))
    ends = [r.end for r in steps]
    assert ends == sorted(ends) and all(r.end >= r.start for r in steps)
    assert (result.spans.end >= result.spans.start).all()
    # Each trajectory is consumed once or reported dropped with its reason.
    consumed = sum(r.trajectories for r in steps)
    assert consumed + sum(result.dropped.values()) == result.counters["trajectories_generated"]
    assert all(r.trajectories <= s.algorithm.trajectories_per_step for r in steps)
    # The staleness bound holds for everything the optimizer sees: a lag of ceil(staleness)
    # versions (verl's staleness_threshold 0.5 admits half of the next batch early).
    assert max(r.max_staleness for r in steps) <= s.algorithm.max_lag
    # Useful experience is what was trained within that bound: never more than what was
    # trained, and never nothing when something was.
    rates = metrics.throughput(result)
    assert rates["useful_trajectories_per_hour"] <= rates["trajectories_per_hour"]
    if rates["trajectories_per_hour"] > 0:
        assert rates["useful_trajectories_per_hour"] > 0
    util = metrics.utilization(result)
    assert all(0.0 <= u <= 1.0 for u in util.values())
    shares = metrics.critical_path_share(result)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_same_scenario_and_seed_give_identical_reports():
    data = _build({"placement.mode": "async", "algorithm.staleness": 2, "algorithm.partial_rollout": True,
                   "algorithm.name": "grpo", "algorithm.prompts_per_step": 8,
                   "algorithm.responses_per_prompt": 4, "placement.rollout.engine": "continuous",
                   "placement.rollout.max_num_seqs": 64, "run.steps": 4, "run.seed": 7,
                   "multi_turn": True, "sandbox_workers": 4, "eval_every": 2})
    a = build_report(simulate(plan_of(data))).model_dump_json()
    b = build_report(simulate(plan_of(data))).model_dump_json()
    assert a == b
    c = build_report(simulate(plan_of(data, ["run.seed=8"]))).model_dump_json()
    assert c != a


def test_colocated_step_is_the_sum_of_its_phases_plus_switch():
    s = plan_of(small())
    r = simulate(s)
    for rec in r.steps[1:]:
        gen = rec.phases["generation"]
        trainer = sum(v for k, v in rec.phases.items() if k not in ("generation", "reward"))
        assert rec.end - rec.start == pytest.approx(gen + rec.phases.get("reward", 0) + trainer)
        assert rec.phases["switch"] == pytest.approx(2 * switch_time(s))
        assert rec.phases["weight_sync"] == pytest.approx(weight_sync_cost(s).total_s)
    assert set(learner_phases(s, np.full(32, 300.0))) <= set(r.steps[0].phases)


def test_pipelined_step_is_the_slower_pool():
    """With staleness the step settles at max(rollout, trainer)."""
    short_answers = {"placement.mode": "async", "algorithm.staleness": 2, "run.steps": 6,
                     "algorithm.prompts_per_step": 64, "algorithm.responses_per_prompt": 16,
                     "workload.prompt_tokens": {"kind": "fixed", "value": 2000},
                     "workload.response_tokens": {"kind": "fixed", "value": 64}}
    r = simulate(plan_of(small(**short_answers, **{"placement.rollout.gpus": 7,
                                                         "placement.trainer.gpus": 1})))
    steady = r.steps[-1]
    trainer_s = sum(v for k, v in steady.phases.items() if k not in ("generation", "reward", "tools"))
    assert steady.end - steady.start == pytest.approx(trainer_s, rel=0.01)
    assert metrics.critical_path_share(r)["optimization"] > 0.8

    long_answers = dict(short_answers, **{"workload.prompt_tokens": {"kind": "fixed", "value": 100},
                                          "workload.response_tokens": {"kind": "fixed", "value": 4000},
                                          "algorithm.prompts_per_step": 8})
    r = simulate(plan_of(small(**long_answers, **{"placement.rollout.gpus": 1,
                                                        "placement.trainer.gpus": 7})))
    steady = r.steps[-1]
    trainer_s = sum(v for k, v in steady.phases.items() if k not in ("generation", "reward", "tools"))
    assert steady.end - steady.start > 3 * trainer_s
    assert metrics.critical_path_share(r)["rollout"] > 0.7


def test_async_beats_sync_on_a_long_tail():
    tail = {"workload.response_tokens": {"kind": "lognormal", "median": 300, "sigma": 1.3, "max": 8192},
            "algorithm.prompts_per_step": 32, "run.steps": 6,
            "placement.rollout.gpus": 4, "placement.trainer.gpus": 4}
    sync = simulate(plan_of(small(**tail, **{"placement.mode": "disaggregated"})))
    asyn = simulate(plan_of(small(**tail, **{"placement.mode": "async", "algorithm.staleness": 2,
                                                   "algorithm.partial_rollout": True})))
    assert metrics.step_time(asyn) < 0.9 * metrics.step_time(sync)


def test_a_starved_sandbox_pool_makes_reward_bind():
    starved = small(**{"reward": {"kind": "sandbox", "workers": 2,
                                  "latency_s": {"kind": "fixed", "value": 5.0}}})
    r = simulate(plan_of(starved))
    shares = metrics.critical_path_share(r)
    assert max(shares, key=shares.get) == "reward"
    assert metrics.utilization(r)["reward"] > 0.8


def test_staleness_drops_are_reported_not_trained_on():
    data = small(**{"placement.mode": "async", "algorithm.staleness": 0, "run.steps": 4,
                    "workload.response_tokens": {"kind": "lognormal", "median": 100, "sigma": 2.0,
                                                 "max": 4096}})
    r = simulate(plan_of(data))
    assert all(rec.max_staleness == 0 for rec in r.steps)


def test_streaming_updates_overlap_training_with_the_rest_of_the_rollout():
    """verl's stream off-policy pipeline (staleness 0, trigger_parameter_sync_step > 1): the
    trainer trains each chunk as it arrives, so the step is shorter than rollout + training,
    it trains the same trajectories, and no group lags a version."""
    tail = {"placement.mode": "disaggregated", "run.steps": 4, "algorithm.prompts_per_step": 32,
            "algorithm.minibatches": 4, "placement.rollout.gpus": 4, "placement.trainer.gpus": 4,
            "workload.response_tokens": {"kind": "lognormal", "median": 300, "sigma": 1.0, "max": 4096}}
    whole = simulate(plan_of(small(**tail)))
    chunked = simulate(plan_of(small(**tail, **{"algorithm.updates_per_sync": 4})))
    assert metrics.step_time(chunked) < metrics.step_time(whole)
    assert [r.trajectories for r in chunked.steps] == [r.trajectories for r in whole.steps]
    assert all(r.max_staleness == 0 for r in chunked.steps)
    # each chunk ends in an update: 4 updates of minibatches/4 optimizer steps per step
    assert chunked.steps[-1].phases["update_actor"] > 0


def test_updates_per_sync_must_divide_the_batch_and_needs_separate_pools():
    from twin.errors import InputError
    with pytest.raises(InputError, match="updates_per_sync"):
        plan_of(small(**{"placement.mode": "disaggregated", "algorithm.updates_per_sync": 3,
                         "placement.rollout.gpus": 4, "placement.trainer.gpus": 4}))
    with pytest.raises(InputError, match="separate pools"):
        plan_of(small(**{"algorithm.updates_per_sync": 2, "algorithm.minibatches": 2}))
