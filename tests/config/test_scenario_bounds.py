"""Every number a scenario takes is finite, not a boolean, and within what the simulation holds."""

import pytest

from twin.config import limits
from twin.config.load import load_scenario
from twin.config.registry import builtin_scenarios
from twin.errors import InputError
from twin.validation.validate import builtin_cases_dir, load_source


def _error(base, *overrides) -> InputError:
    with pytest.raises(InputError) as err:
        load_scenario(base, list(overrides))
    assert "\n" not in err.value.message
    return err.value


@pytest.mark.parametrize("override, field", [
    ("workload.response_tokens={kind: mixture, max: 100, components: [{weight: 1, mean: .nan, sd: 1}]}",
     "workload.response_tokens.components[0].mean"),
    ("workload.response_tokens={kind: mixture, max: 100, components: [{weight: .inf, mean: 5, sd: 1}]}",
     "workload.response_tokens.components[0].weight"),
    ("workload.response_tokens={kind: empirical, values: [1, 2], weights: [.inf, 1]}",
     "workload.response_tokens.weights[0]"),
    ("workload.response_tokens={kind: uniform, low: 1, high: .inf, max: 100}", "workload.response_tokens.high"),
    ("reward={kind: rule, cpu_seconds: {kind: fixed, value: .inf}}", "reward.cpu_seconds.value"),
    ("placement.rollout.gpu_memory_utilization=.nan", "placement.rollout.gpu_memory_utilization"),
    ("weight_sync.storage_bytes_per_s=.inf", "weight_sync.storage_bytes_per_s"),
])
def test_nan_and_inf_are_refused(base, override, field):
    err = _error(base, override)
    assert err.field == field and "finite" in err.message


def test_histogram_file_with_inf_weight_is_refused(tmp_path, base):
    (tmp_path / "h.csv").write_text("100,1\n200,inf\n")
    err = _error(base, f"workload.response_tokens={{kind: empirical, path: {tmp_path / 'h.csv'}}}")
    assert "not a finite number" in err.message


@pytest.mark.parametrize("override, field", [
    ("cluster.gpus_per_node=true", "cluster.gpus_per_node"),
    ("algorithm.prompts_per_step=false", "algorithm.prompts_per_step"),
    ("cluster.compute_scale=true", "cluster.compute_scale"),
    ("placement.trainer.zero_stage=true", "placement.trainer.zero_stage"),
    ("workload.response_tokens={kind: empirical, values: [1, true]}", "workload.response_tokens.values[1]"),
])
def test_a_boolean_is_not_a_number(base, override, field):
    err = _error(base, override)
    assert err.field == field and ("(got true)" in err.message or "(got false)" in err.message)


def test_numbers_still_read_as_before(base):
    s = load_scenario(base, ["weight_sync.bucket_bytes=2e9", "algorithm.responses_per_prompt=8.0",
                             "placement.trainer.recompute=1"])
    assert s.weight_sync.bucket_bytes == 2e9 and s.algorithm.responses_per_prompt == 8
    assert s.placement.trainer.recompute is True


@pytest.mark.parametrize("override, field, words", [
    ("cluster.nodes=125000000000", "cluster.nodes", "at most 131,072 GPUs"),
    ("algorithm.minibatches=1000000000000", "algorithm.minibatches", "at least one of the step's"),
    ("algorithm.responses_per_prompt=10000000", "algorithm.responses_per_prompt", "bytes per trajectory"),
    ("algorithm.prompts_per_step=1000000000", "algorithm.prompts_per_step", "~1,320 GB"),
    ("cluster.host_cpu_cores=1000000000000", "cluster.host_cpu_cores", "queue server per core"),
    ("evaluation.prompts=1000000000", "evaluation.prompts", "evaluation rollouts"),
    ("reward={kind: sandbox, workers: 8, latency_s: {kind: fixed, value: 1}, max_retries: 1000000}",
     "reward.max_retries", "0..100"),
    ("placement.rollout.block_size=1000000000", "placement.rollout.block_size", "1..1024"),
    ("placement.rollout.max_num_batched_tokens=100000000", "placement.rollout.max_num_batched_tokens", "cost table"),
    ("algorithm.staleness=100000", "algorithm.staleness", "in flight"),
    ("run.steps=1000000000", "run.steps", "1..10,000"),
    ("model.num_layers=1000000000", "model.num_layers", "65536"),
    ("cluster.nodes=" + "1" * 400, "cluster.nodes", "~1e400"),
])
def test_sizes_beyond_what_the_simulation_holds_are_refused_with_a_reason(base, override, field, words):
    err = _error(base, override)
    assert err.field == field and words in err.message, err.message


def test_joint_bounds_name_the_field_to_change(base):
    err = _error(base, "algorithm.prompts_per_step=65537", "algorithm.responses_per_prompt=64")
    assert err.field == "algorithm.prompts_per_step" and "4,194,304" in err.message
    err = _error(base, "algorithm.ppo_epochs=64", "algorithm.minibatches=32")
    assert err.field == "algorithm.minibatches" and "optimizer steps" in err.message
    sandbox = "reward={kind: sandbox, workers: 8, latency_s: {kind: fixed, value: 1}, max_retries: 100}"
    err = _error(base, sandbox, "algorithm.prompts_per_step=262144", "algorithm.responses_per_prompt=4")
    assert err.field == "reward.max_retries" and "attempts" in err.message
    tools = ("workload.multi_turn={tool_calls: {kind: fixed, value: 2000}, tool_latency_s: {kind: fixed, value: 1}, "
             "tool_reply_tokens: {kind: fixed, value: 10}}")
    assert _error(base, tools).field == "workload.multi_turn.tool_calls"


@pytest.mark.parametrize("override, field", [
    ("cluster.compute_scale=1e-300", "cluster.compute_scale"),
    ("weight_sync.storage_bytes_per_s=1e-300", "weight_sync.storage_bytes_per_s"),
    ("weight_sync.staging_bytes_per_s=10", "weight_sync.staging_bytes_per_s"),
    ("reward={kind: rule, cpu_seconds: {kind: fixed, value: 1.0e+9}}", "reward.cpu_seconds"),
    ("reward={kind: rule, cpu_seconds: {kind: lognormal, median: 1, sigma: 10}}", "reward.cpu_seconds"),
    ("workload.prompt_tokens={kind: lognormal, median: 1.0e+300, sigma: 5}", "workload.prompt_tokens"),
])
def test_values_that_would_stall_the_clock_are_refused(base, override, field):
    err = _error(base, "weight_sync.method=checkpoint", override)
    assert err.field == field and "allowed" in err.message


def test_the_largest_allowed_sizes_load(base):
    load_scenario(base, ["cluster.nodes=16384", "algorithm.prompts_per_step=262144",
                         "algorithm.responses_per_prompt=16", "algorithm.minibatches=1024",
                         "placement.rollout.max_num_batched_tokens=1048576", "cluster.compute_scale=0.001"])


def test_every_shipped_scenario_and_validation_case_is_within_bounds():
    for name in builtin_scenarios():
        load_scenario(name)
    for path in builtin_cases_dir().glob("*.yaml"):
        source = load_source(path)
        for case in source.cases:
            from twin.config.overrides import apply_overrides

            load_scenario(apply_overrides(source.base, case.set))


def test_limits_say_what_they_cost():
    assert limits.MAX_GPUS >= 100_000 and limits.MAX_TRAJECTORIES >= 4_000_000
    assert limits._n(10**20) == "~1e20" and limits._gb(10**400) == "~1,000,000,000,000,000,000,000 GB"
