import pytest

from twin.config.warnings import warnings
from twin.runner import plan as load_plan
from twin.config.registry import builtin_scenarios


def _warn(base, overrides=()) -> list[str]:
    return warnings(load_plan(base, list(overrides)))


def _one(base, overrides, field: str) -> str:
    found = _warn(base, overrides)
    assert len(found) == 1, found
    assert found[0].startswith(field), found[0]
    assert "\n" not in found[0]
    return found[0]


def test_a_plain_scenario_has_no_warnings(base):
    assert _warn(base) == []
    assert _warn(base, ["placement.mode=async", "algorithm.staleness=2", "algorithm.partial_rollout=true",
                        "placement.trainer.gpus=4"]) == []


def test_builtin_scenarios_set_nothing_inert():
    for name in builtin_scenarios():
        assert warnings(load_plan(name)) == [], name


def test_async_without_staleness(base):
    text = _one(base, ["placement.mode=async", "placement.trainer.gpus=4"], "placement.mode: async")
    assert "algorithm.staleness: 0" in text and "disaggregated" in text and "1 or more" in text


def test_partial_rollout_outside_async_or_without_staleness(base):
    text = _one(base, ["algorithm.partial_rollout=true"], "algorithm.partial_rollout")
    assert "colocated mode" in text and "async" in text
    text = _one(base, ["placement.mode=disaggregated", "algorithm.staleness=1", "algorithm.partial_rollout=true",
                       "placement.trainer.gpus=4"], "algorithm.partial_rollout")
    assert "disaggregated mode" in text
    found = _warn(base, ["placement.mode=async", "algorithm.partial_rollout=true", "placement.trainer.gpus=4"])
    assert len(found) == 2 and found[1].startswith("algorithm.partial_rollout") and "staleness: 0" in found[1]


def test_the_async_and_partial_warnings_say_what_the_simulator_does(base):
    """async at staleness 0 steps like disaggregated (to rounding: the async producer advances in
    windows); partial rollout changes nothing outside async mode nor at staleness 0."""
    from twin.sim.loop import simulate

    def steps(*sets):
        result = simulate(load_plan(dict(base, run={"steps": 3}), ["placement.trainer.gpus=4", *sets]))
        return pytest.approx([t for r in result.steps for t in (r.start, r.end)], rel=1e-9)

    disaggregated = steps("placement.mode=disaggregated")
    assert disaggregated == steps("placement.mode=async").expected
    assert disaggregated == steps("placement.mode=async", "algorithm.partial_rollout=true").expected
    assert disaggregated == steps("placement.mode=disaggregated", "algorithm.partial_rollout=true").expected
    stale = steps("placement.mode=disaggregated", "algorithm.staleness=1")
    assert stale != disaggregated.expected  # staleness does overlap: the comparisons above mean something
    assert stale == steps("placement.mode=disaggregated", "algorithm.staleness=1",
                          "algorithm.partial_rollout=true").expected


def test_more_trainer_ranks_than_sequences_per_minibatch(base):
    # 16 prompts × 4 responses = 64 sequences; 8 mini-batches of 8 on 8 ranks is fine
    assert _warn(base, ["algorithm.minibatches=8"]) == []
    text = _one(base, ["algorithm.minibatches=16"], "placement.trainer")
    assert "8 data-parallel ranks but only 4 sequences per mini-batch" in text and "4 ranks" in text
    text = _one(base, ["algorithm.minibatches=20"], "placement.trainer")
    assert "3 to 4 sequences" in text
    # tp splits the ranks: 8 GPUs at tp 2 are 4 data-parallel ranks
    assert _warn(base, ["algorithm.minibatches=16", "placement.trainer.tp=2"]) == []


def test_offload_outside_colocated(base):
    text = _one(base, ["placement.mode=disaggregated", "placement.trainer.gpus=4",
                       "placement.trainer.offload_optimizer=true"], "placement.trainer.offload_optimizer")
    assert "around every learner pass" in text and "saves no memory" in text
    assert _warn(base, ["placement.trainer.offload_optimizer=true", "placement.trainer.offload_params=true"]) == []


def test_reward_resources_nothing_uses(base):
    text = _one(base, ["placement.reward_model_gpus=2"], "placement.reward_model_gpus")
    assert "rule" in text and "idle" in text
    sandbox = "reward={kind: sandbox, workers: 64, latency_s: {kind: fixed, value: 2}}"
    assert "reward.workers" in _one(base, [sandbox, "cluster.host_cpu_cores=64"], "cluster.host_cpu_cores")
    assert "cpu_seconds" in _one(base, ["cluster.host_cpu_cores=64"], "cluster.host_cpu_cores")
    assert _warn(base, ["cluster.host_cpu_cores=64", "reward={kind: rule, cpu_seconds: {kind: fixed, value: 0.1}}"]) == []


def test_evaluation_needs_a_period_and_prompts(base):
    _one(base, ["evaluation.every_steps=5"], "evaluation.every_steps")
    _one(base, ["evaluation.prompts=100"], "evaluation.prompts")
    assert _warn(base, ["evaluation={every_steps: 5, prompts: 100}"]) == []


def test_dynamic_sampling_settings_that_do_nothing(base):
    # name: dapo with a dynamic_sampling block of its own: enabled stays false
    text = _one(base, ["algorithm={name: dapo, prompts_per_step: 16, responses_per_prompt: 4, "
                       "dynamic_sampling: {zero_variance_fraction: 0.3}}"],
                "algorithm.dynamic_sampling.zero_variance_fraction")
    assert "enabled" in text
    _one(base, ["algorithm.dynamic_sampling={enabled: true, zero_variance_fraction: 0.2, max_rounds: 3}"],
         "algorithm.dynamic_sampling.max_rounds")


@pytest.mark.parametrize("sets, field", [
    (["weight_sync.expert_transfer=full"], "weight_sync.expert_transfer"),
    (["weight_sync.quantise_on=receiver"], "weight_sync.quantise_on"),
    (["weight_sync.storage_bytes_per_s=1e10"], "weight_sync.storage_bytes_per_s"),
    (["weight_sync.gather_convert_bytes_per_s=1e10"], "weight_sync.gather_convert_bytes_per_s"),
])
def test_weight_sync_rates_the_method_does_not_use(base, sets, field):
    _one(base, sets, field)  # colocated: auto is reshard


def test_weight_sync_rates_the_method_uses(base):
    assert _warn(base, ["weight_sync={method: checkpoint, storage_bytes_per_s: 1e10, "
                        "gather_convert_bytes_per_s: 1e10}"]) == []


def test_warnings_survive_a_dump_and_reload(base):
    s = load_plan(base, ["placement.mode=async", "placement.trainer.gpus=4", "weight_sync.expert_transfer=full"])
    assert warnings(load_plan(s.scenario.model_dump(mode="json"))) == warnings(s)
    clean = load_plan(base)
    assert warnings(load_plan(clean.scenario.model_dump(mode="json"))) == []


def test_per_stage_senders_without_pipeline_stages(base):
    text = _one(base, ["weight_sync.senders=per_stage"], "weight_sync.senders")
    assert "pp 1" in text
    assert _warn(base, ["weight_sync.senders=per_stage", "placement.trainer.pp=2"]) == []
