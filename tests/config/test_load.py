import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.config.load import load_scenario
from twin.config.overrides import apply_overrides, parse_overrides
from twin.config.registry import builtin_scenarios
from twin.errors import InputError


def test_every_builtin_scenario_loads():
    assert len(builtin_scenarios()) >= 6
    for name in builtin_scenarios():
        s = load_scenario(name)
        assert s.name == name


def test_defaults_fill_placement_by_mode_in_the_plan_not_the_input(base):
    from twin.config.plan import resolve

    colocated = load_scenario(base)
    assert colocated.placement.rollout.gpus is None and colocated.placement.trainer.gpus is None
    plan = resolve(colocated)
    assert plan.rollout_gpus == plan.trainer_gpus == 8 and plan.gpus == {"shared": 8}
    split = resolve(load_scenario(base, ["placement.mode=disaggregated", "placement.trainer.gpus=2"]))
    assert (split.rollout_gpus, split.trainer_gpus) == (6, 2)
    assert split.scenario.placement.rollout.gpus is None  # derived, never written back


def test_algorithm_defaults():
    assert load_scenario({"model": "qwen3-4b", "algorithm": {"name": "ppo"}}).algorithm.critic is True
    dapo = load_scenario({"model": "qwen3-4b", "algorithm": {"name": "dapo"}}).algorithm
    assert dapo.reference is False and dapo.dynamic_sampling.enabled


def test_overrides_parse_yaml_values_and_apply_anywhere(base):
    assert parse_overrides(["a.b=64", "c=true", "d=0.5", "e={kind: fixed, value: 3}"]) == {
        "a.b": 64, "c": True, "d": 0.5, "e": {"kind": "fixed", "value": 3}}
    s = load_scenario(base, ["cluster.gpu=h200", "workload.prompt_tokens={kind: fixed, value: 77}",
                             "model.dtype=fp8"])
    assert s.cluster.gpu.name == "h200" and s.workload.prompt_tokens.value == 77
    assert s.model.dtype == "fp8"
    assert apply_overrides({"a": {"b": 1}}, {"a.c": 2}) == {"a": {"b": 1, "c": 2}}


def _error(data, overrides=()) -> InputError:
    with pytest.raises(InputError) as err:
        load_scenario(data, list(overrides))
    return err.value


def test_unknown_field_names_the_path_and_suggests(base):
    err = _error(base, ["placement.rollout.gpu=4"])
    assert err.field == "placement.rollout.gpu"
    assert "did you mean 'gpus'" in err.message


def test_wrong_type_and_negative_count(base):
    err = _error(base, ["algorithm.prompts_per_step=many"])
    assert err.field == "algorithm.prompts_per_step" and "'many'" in err.message
    err = _error(base, ["cluster.nodes=-1"])
    assert err.field == "cluster.nodes" and "-1" in err.message


def test_unknown_distribution_kind_lists_the_kinds(base):
    err = _error(base, ["workload.prompt_tokens={kind: gamma, value: 3}"])
    assert "lognormal" in err.message and "gamma" in err.message


def test_pools_must_fit_the_cluster(base):
    err = _error(base, ["placement.mode=disaggregated", "placement.rollout.gpus=6",
                        "placement.trainer.gpus=6"])
    assert err.field == "placement.rollout.gpus"
    err = _error(base, ["placement.rollout.tp=3"])
    assert "multiple" in err.message


def test_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    err = _error(str(bad))
    assert err.file == str(bad) and "malformed YAML" in err.message and "line" in err.message
    err = _error(str(tmp_path / "missing.yaml"))
    assert "not found" in err.message
    err = _error("grpo-7b-colocatd")
    assert "did you mean 'grpo-7b-colocated'" in err.message
    lst = tmp_path / "list.yaml"
    lst.write_text("- 1\n- 2\n")
    assert "mapping" in _error(str(lst)).message


def test_histogram_file_relative_to_scenario(tmp_path, base):
    (tmp_path / "lengths.csv").write_text("# value,weight\n100,1\n200,3\n")
    data = dict(base, workload={"response_tokens": {"kind": "empirical", "path": "lengths.csv"}})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    s = load_scenario(str(tmp_path / "s.yaml"))
    assert s.workload.max_response_tokens == 200
    data["workload"]["response_tokens"]["path"] = "nope.csv"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    err = _error(str(tmp_path / "s.yaml"))
    assert err.field == "workload.response_tokens.path" and "not found" in err.message


JUNK = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.text(max_size=8),
                 st.booleans(), st.none(), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
PATHS = st.sampled_from([
    "model", "model.num_layers", "cluster.nodes", "cluster.gpu", "cluster.gpus_per_node",
    "placement.mode", "placement.rollout.tp", "placement.rollout.gpus", "placement.trainer.zero_stage",
    "placement.rollout.gpu_memory_utilization", "algorithm.name", "algorithm.prompts_per_step",
    "algorithm.staleness", "workload.response_tokens", "workload.response_tokens.max",
    "workload.prompt_tokens.kind", "reward", "reward.kind", "reward.workers", "run.seed", "nonsense",
    "weight_sync.method", "evaluation.every_steps", "workload.multi_turn",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(PATHS, JUNK), min_size=1, max_size=3))
def test_generated_bad_input_is_an_input_error_or_valid(base, edits):
    """Whatever is thrown at the loader, it either loads or raises one InputError."""
    try:
        load_scenario(base, dict(edits))
    except InputError as err:
        assert err.message and "\n" not in err.message


def test_import_twin_does_not_import_torch():
    code = "import sys, twin, twin.cli, twin.analysis.check; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_relative_paths_in_overrides_mean_the_current_directory(tmp_path, monkeypatch, base):
    cfg = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "intermediate_size": 128, "vocab_size": 100}
    (tmp_path / "config.json").write_text(__import__("json").dumps(cfg))
    monkeypatch.chdir(tmp_path)
    assert parse_overrides(["model=./config.json"])["model"] == str(tmp_path / "config.json")
    s = load_scenario("grpo-8b-disaggregated", ["model=./config.json"])  # a built-in scenario
    assert s.model.num_layers == 2


def test_an_error_in_an_override_names_the_override_not_the_file():
    err = _error("grpo-7b-colocated", ["placement.rollout.gpus=abc"])
    assert err.file == "--set placement.rollout.gpus=abc" and err.field == "placement.rollout.gpus"
    assert err.message.startswith("--set placement.rollout.gpus=abc: placement.rollout.gpus: ")
    assert "grpo-7b-colocated.yaml" not in err.message


def test_an_override_owns_the_fields_inside_its_value():
    err = _error("grpo-7b-colocated", ["placement.rollout={gpus: abc}"])
    assert err.file == "--set placement.rollout={gpus: abc}" and err.field == "placement.rollout.gpus"
    err = _error("grpo-7b-colocated", ["reward={kind: sandbox, workers: 0, latency_s: {kind: fixed, value: 1}}"])
    assert err.file.startswith("--set reward=") and err.field == "reward.workers"
    err = _error("grpo-7b-colocated", ["placement.rollout.gpu=4"])  # an unknown field typed in an override
    assert err.file == "--set placement.rollout.gpu=4" and "did you mean 'gpus'" in err.message
    err = _error("grpo-7b-colocated", ["model.dtype=fp9"])
    assert err.file == "--set model.dtype=fp9" and err.field == "model.dtype"


def test_the_longest_owning_override_is_named(base):
    err = _error(base, ["placement.rollout={tp: 1}", "placement.rollout.gpus=-2"])
    assert err.file == "--set placement.rollout.gpus=-2"


def test_an_override_replaced_by_a_later_one_is_not_blamed(tmp_path, base):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(dict(base, run={"steps": "many"})))
    err = _error(str(tmp_path / "s.yaml"), ["run.steps=3", "run={seed: 1, steps: many}"])
    assert err.file == "--set run={seed: 1, steps: many}"
    err = _error(str(tmp_path / "s.yaml"), ["run.seed=1"])  # the file's own mistake
    assert err.file == str(tmp_path / "s.yaml") and err.field == "run.steps"


def test_a_file_error_under_overrides_still_names_the_file(tmp_path, base):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(dict(base, cluster={"nodes": 0})))
    err = _error(str(tmp_path / "s.yaml"), ["cluster.gpus_per_node=8"])
    assert err.file == str(tmp_path / "s.yaml") and err.field == "cluster.nodes"


def test_overrides_given_as_data_are_named_as_typed(base):
    with pytest.raises(InputError) as err:
        load_scenario(base, {"placement.rollout.gpus": "abc", "workload.prompt_tokens": {"kind": "gamma"}})
    assert err.value.file == "--set placement.rollout.gpus=abc"
    with pytest.raises(InputError) as err:
        load_scenario(base, {"workload.prompt_tokens": {"kind": "gamma"}})
    assert err.value.file == '--set workload.prompt_tokens={"kind": "gamma"}'


def test_an_override_that_cannot_be_applied_is_named(base):
    err = _error(base, ["cluster.gpu.name=x"])
    assert err.file == "--set cluster.gpu.name=x" and err.field == "cluster.gpu"


def test_a_path_given_twice_applies_its_last_value_last():
    assert parse_overrides(["a.b=1", "a={b: 2}", "a.b=3"]) == {"a": {"b": 2}, "a.b": 3}
    assert list(parse_overrides(["a.b=1", "a={b: 2}", "a.b=3"])) == ["a", "a.b"]


def test_every_builtin_validation_case_loads():
    from twin.validation.validate import builtin_cases_dir, load_source

    for path in sorted(builtin_cases_dir().glob("*.yaml")):
        source = load_source(path)
        for case in source.cases:
            load_scenario(apply_overrides(source.base, case.set))


def test_a_trajectory_longer_than_the_models_positions_is_refused(base):
    base = dict(base, model="qwen3-4b")  # 40,960 positions
    err = _error(base, ["workload.response_tokens.max=40960"])
    assert err.field == "workload.response_tokens.max" and err.file == "--set workload.response_tokens.max=40960"
    assert "41,101 tokens" in err.message and "40,960" in err.message and "max_position_embeddings" in err.message
    err = _error(base, ["workload.response_tokens={kind: fixed, value: 50000}"])
    assert err.field == "workload.response_tokens"
    # Up to the limit is fine; so is a longer response on a model run with YaRN.
    load_scenario(base, ["workload.response_tokens.max=40819"])
    load_scenario(base, ["workload.response_tokens.max=65536",
                         "model={preset: qwen3-4b, max_position_embeddings: 131072}"])
    # A model that declares no limit is not checked.
    load_scenario(base, ["model=qwen2.5-7b", "workload.response_tokens.max=500000"])


def test_the_multi_turn_context_must_fit_too(base):
    base = dict(base, model="qwen3-4b", workload={
        "prompt_tokens": {"kind": "fixed", "value": 400},
        "response_tokens": {"kind": "lognormal", "median": 350, "sigma": 0.6, "max": 8192},
        "multi_turn": {"tool_calls": {"kind": "empirical", "values": [2, 6], "weights": [1, 1]},
                       "tool_latency_s": {"kind": "fixed", "value": 0.1},
                       "tool_reply_tokens": {"kind": "uniform", "low": 540, "high": 1550}}})
    err = _error(base)  # 400 + 7 × 8,192 + 6 × 1,550: named by its largest term, the responses
    assert err.field == "workload.response_tokens.max" and "67,044 tokens" in err.message
    load_scenario(base, ["workload.response_tokens.max=4096"])  # 400 + 7 × 4,096 + 6 × 1,550 = 38,372
    err = _error(base, ["workload.response_tokens.max=4096", "workload.multi_turn.tool_reply_tokens.high=9000"])
    assert err.field == "workload.multi_turn" and "6 tool replies of up to 9,000" in err.message


def test_only_lengths_the_workload_surely_reaches_count(base):
    # An unbounded prompt length proves nothing: its lower bound counts.
    load_scenario(dict(base, model="qwen3-4b"),
                  ["workload.prompt_tokens={kind: lognormal, median: 2000, sigma: 1}",
                   "workload.response_tokens.max=40000"])


def test_an_override_with_a_line_break_is_named_on_one_line(base):
    with pytest.raises(InputError) as err:
        load_scenario(base, {"run.steps": "a\nb"})
    assert err.value.file == "--set run.steps=a\\nb" and "\n" not in err.value.message
