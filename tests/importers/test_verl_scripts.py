"""verl run scripts as verl's own examples are written (issue 28): shell control flow, the
environment, verl's config tree carried as data, Megatron, the node split, rollout defaults."""

import pytest

from twin.errors import InputError
from twin.importers import import_files, validated

SCRIPTS = "verl/scripts"


def imported(fx, name, env=None, *files):
    result = import_files("verl", [fx / SCRIPTS / name, *files], env=env or {})
    return result, result.scenario


def test_case_on_device_takes_the_gpu_branch_by_default(fx):
    result, s = imported(fx, "run_qwen3_8b_device.sh")
    a, r, t = s["algorithm"], s["placement"]["rollout"], s["placement"]["trainer"]
    assert a["prompts_per_step"] == 1024 and s["workload"]["response_tokens"]["max"] == 2048
    assert r["gpu_memory_utilization"] == 0.6 and t["offload_params"] is False and t["offload_optimizer"] is False
    validated(result)


def test_case_follows_the_environment_and_env_flags(fx):
    _, s = imported(fx, "run_qwen3_8b_device.sh", {"DEVICE": "npu"})
    assert s["algorithm"]["prompts_per_step"] == 16 and s["workload"]["response_tokens"]["max"] == 32768
    assert s["placement"]["rollout"]["gpu_memory_utilization"] == 0.3 and s["placement"]["trainer"]["offload_params"]


def test_if_and_test_brackets_read_the_environment(fx):
    _, s = imported(fx, "run_qwen3_8b_device.sh", {"NNODES": "4"})
    assert s["cluster"] == {"gpus_per_node": 8, "nodes": 4}
    _, s = imported(fx, "run_qwen3_8b_device.sh", {"GPUS_PER_NODE": "4"})
    assert s["cluster"] == {"gpus_per_node": 4, "nodes": 1}
    _, s = imported(fx, "run_qwen3_8b_device.sh", {"USE_EAGER": "1"})  # [[ -n ... && ... ]] && a || b
    assert s["placement"]["rollout"]["enforce_eager"] is True
    _, s = imported(fx, "run_qwen3_8b_device.sh")
    assert "enforce_eager" not in s["placement"]["rollout"]


def test_model_path_from_the_environment_is_named_by_its_folder(fx):
    result, s = imported(fx, "run_qwen3_8b_device.sh")
    assert s["model"] == "Qwen3-8B"  # ${RAY_DATA_HOME}/models/Qwen3-8B, RAY_DATA_HOME unset
    assert any("named by its folder's name 'Qwen3-8B'" in n and "RAY_DATA_HOME" in n for n in result.notes)
    # set, but no folder there: the same
    _, s = imported(fx, "run_qwen3_8b_device.sh", {"RAY_DATA_HOME": "/nonexistent/data"})
    assert s["model"] == "Qwen3-8B"


def test_dynamic_batches_and_remove_padding(fx):
    _, s = imported(fx, "run_qwen3_8b_device.sh")
    t = s["placement"]["trainer"]
    assert t["micro_batch_tokens"] == 24576 and t["remove_padding"] is True


def test_megatron_moe_without_verls_config_tree(fx):
    result, s = imported(fx, "run_moe_megatron.sh")
    t = s["placement"]["trainer"]
    assert (t["tp"], t["pp"], t["ep"], t["cp"]) == (2, 2, 8, 2)
    assert t["offload_params"] and t["offload_optimizer"] and t["recompute"] is True
    assert t["zero_stage"] == 1 and t["kernels"] == "fused"
    assert s["model"] == "qwen3-30b-a3b"  # $HOME/models/Qwen3-30B-A3B: the preset of that hub id
    assert s["placement"]["rollout"]["max_num_seqs"] == 256  # verl's rollout.yaml default
    assert not any("megatron" in k for k in result.unused)
    _, s = imported(fx, "run_moe_megatron.sh", {"EP": "4", "TP": "1"})
    assert (s["placement"]["trainer"]["tp"], s["placement"]["trainer"]["ep"]) == (1, 4)


def test_node_split_per_pool(fx):
    result, s = imported(fx, "run_one_step_off_split.sh")
    assert s["cluster"] == {"gpus_per_node": 8, "nodes": 2}
    assert s["placement"]["trainer"]["gpus"] == 12 and s["placement"]["rollout"]["gpus"] == 4
    assert s["placement"]["mode"] == "disaggregated" and s["algorithm"]["old_logprob"] is False
    _, s = imported(fx, "run_one_step_off_split.sh", {"NNODES_TRAIN": "4", "NNODES_ROLLOUT": "1"})
    assert s["placement"]["trainer"]["gpus"] == 24 and s["placement"]["rollout"]["gpus"] == 2
    assert s["cluster"]["nodes"] == 5


def test_cli_env_flag_over_the_environment(fx, twin_import, monkeypatch):
    monkeypatch.setenv("NNODES", "2")
    code, data, _ = twin_import("verl", fx / SCRIPTS / "run_qwen3_8b_device.sh", "--env", "NNODES=3")
    assert code == 0 and data["cluster"]["nodes"] == 3
    code, data, _ = twin_import("verl", fx / SCRIPTS / "run_qwen3_8b_device.sh")
    assert code == 0 and data["cluster"]["nodes"] == 2
    code, _, err = twin_import("verl", fx / SCRIPTS / "run_qwen3_8b_device.sh", "--env", "3=x")
    assert code == 2 and len(err) == 1 and err[0].startswith("twin: error: --env: --env takes NAME=VALUE")


def test_command_substitution_is_named_not_run(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("NODES=$(scontrol show hostnames | wc -l)\n"
                      "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=$NODES\n")
    with pytest.raises(InputError, match=r"command substitution \$\(scontrol show hostnames \| wc -l\), which the "
                                         "importer does not run"):
        import_files("verl", [script], env={})


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-inf"])
def test_non_finite_numbers_are_one_line_errors(tmp_path, value):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m recipe.fully_async_policy.fully_async_main actor_rollout_ref.model.path=Qwen/Qwen3-8B "
                      f"async_training.staleness_threshold={value}\n")
    with pytest.raises(InputError, match="staleness_threshold: not a number the twin can use"):
        import_files("verl", [script], env={})


def test_wrong_importer_says_what_the_file_looks_like(fx):
    with pytest.raises(InputError, match="looks like a NeMo-RL config"):
        import_files("verl", [fx / "nemo_rl/grpo_base.yaml"], env={})


def test_a_generation_or_sft_script_is_named_as_not_rl(tmp_path):
    script = tmp_path / "gen.sh"
    script.write_text("python3 -m verl.trainer.main_generation trainer.nnodes=1 model.path=Qwen/Qwen3-8B\n")
    with pytest.raises(InputError, match="runs verl's verl.trainer.main_generation, not an RL trainer"):
        import_files("verl", [script], env={})


def test_a_positional_parameter_with_a_default_reads_as_a_script_run_without_arguments():
    """verl's Qwen2.5-VL examples start ENGINE=${1:-vllm}: bash run with no arguments takes vllm."""
    from twin.importers.shell import parse

    text = "ENGINE=${1:-vllm}\nMODE=${2}\npython3 -m verl.trainer.main_ppo rollout.name=$ENGINE x=$1\n"
    script = parse(text, env={})
    assert script.get("ENGINE") == "vllm" and script.commands[-1][-2] == "rollout.name=vllm"
    assert "x=vllm" not in script.commands[-1]  # $1 itself stays unset (a marker the importer names)
    assert parse(text, env={"1": "sglang"}).get("ENGINE") == "sglang"  # --env 1=sglang
