"""Framework profiles (twin/config/frameworks.py): a stack's settings fill what a scenario
leaves out, the scenario's own values win, and bad references are clear errors."""

import pytest

from twin.config.frameworks import builtin_frameworks, framework_profile, with_framework
from twin.config.load import load_scenario
from twin.errors import InputError


def test_every_builtin_profile_loads_and_every_setting_has_a_source():
    assert {"verl", "nemo-rl-megatron", "areal", "openrlhf", "trl"} <= set(builtin_frameworks())
    for name in builtin_frameworks():
        profile = framework_profile(name)
        assert profile.name == name
        assert all(s.source.strip() for s in profile.settings.values())


def test_every_setting_is_a_scenario_field_it_can_set():
    """Each profile, applied to a minimal scenario, validates and sets what it says."""
    for name in builtin_frameworks():
        scenario = load_scenario({"model": "qwen2.5-1.5b", "framework": name,
                                  "placement": {"mode": "disaggregated"}})
        dumped = scenario.model_dump(mode="json")
        for path, setting in framework_profile(name).settings.items():
            node = dumped
            for part in path.split("."):
                node = node[part]
            assert node == setting.value, (name, path)


def test_the_scenarios_own_values_win():
    data = {"model": "qwen2.5-1.5b", "framework": "nemo-rl-megatron",
            "placement": {"rollout": {"scheduling": "overlapped"}}}
    s = load_scenario(data)
    assert s.placement.rollout.scheduling == "overlapped"  # given: kept
    assert s.placement.trainer.kernels == "fused"          # left out: the profile's
    assert s.cluster.compute_scale == framework_profile("nemo-rl-megatron").settings["cluster.compute_scale"].value
    assert load_scenario(data, ["cluster.compute_scale=1.0"]).cluster.compute_scale == 1.0


def test_without_a_framework_nothing_changes():
    data = {"model": "qwen2.5-1.5b"}
    assert with_framework(data) is data
    assert load_scenario(data).framework is None


def test_an_unknown_profile_is_an_error_naming_the_field_and_the_choices():
    with pytest.raises(InputError) as exc:
        load_scenario({"model": "qwen2.5-1.5b", "framework": "verll"})
    text = str(exc.value)
    assert "framework" in text and "verll" in text and "verl" in text


def test_a_profile_file_by_path(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "name: mine\nframework: verl\nversion: '1'\ndescription: my stack\n"
        "settings:\n  placement.rollout.max_num_seqs: {value: 64, source: measured on our cluster}\n")
    (tmp_path / "s.yaml").write_text("model: qwen2.5-1.5b\nframework: mine.yaml\n")
    assert load_scenario(tmp_path / "s.yaml").placement.rollout.max_num_seqs == 64
    (tmp_path / "bad.yaml").write_text("name: bad\nframework: verl\nversion: '1'\ndescription: x\n"
                                       "settings:\n  placement.rollout.max_num_seqs: {value: 64}\n")
    (tmp_path / "t.yaml").write_text("model: qwen2.5-1.5b\nframework: bad.yaml\n")
    with pytest.raises(InputError, match="source"):
        load_scenario(tmp_path / "t.yaml")


def test_a_profile_path_is_kept_absolute_so_a_dumped_scenario_still_loads(tmp_path):
    (tmp_path / "stack.yaml").write_text(
        "name: stack\nframework: verl\nversion: '1'\ndescription: my stack\n"
        "settings:\n  placement.rollout.max_num_seqs: {value: 64, source: measured on our cluster}\n")
    (tmp_path / "s.yaml").write_text("model: qwen2.5-1.5b\nframework: stack.yaml\n")
    dumped = load_scenario(tmp_path / "s.yaml").model_dump(mode="json")
    assert dumped["framework"] == str((tmp_path / "stack.yaml").resolve())
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    import yaml
    (elsewhere / "copy.yaml").write_text(yaml.safe_dump(dumped))
    assert load_scenario(elsewhere / "copy.yaml").placement.rollout.max_num_seqs == 64
