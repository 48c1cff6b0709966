"""The slime and prime-rl importers on scripts and configs in those frameworks' own shapes."""

import pytest

from twin.errors import InputError
from twin.importers import import_files, validated


def _import(fx, framework, name, env=None):
    result = import_files(framework, [fx / name], env=env or {})
    return result, result.scenario


def test_slime_colocated_script_with_argument_arrays(fx):
    result, s = _import(fx, "slime", "slime/run_qwen3_4b_colocated.sh")
    a, t, r = s["algorithm"], s["placement"]["trainer"], s["placement"]["rollout"]
    assert s["model"] == "qwen3-4b" and s["placement"]["mode"] == "colocated"
    assert s["cluster"] == {"nodes": 1, "gpus_per_node": 8}
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"]) == (32, 8, 1)
    assert a["reference"] is True and s["workload"]["response_tokens"]["max"] == 8192
    assert (t["tp"], t["recompute"], t["micro_batch_tokens"]) == (2, True, 9216)
    assert t["offload_params"] and t["offload_optimizer"]
    assert (r["tp"], r["gpu_memory_utilization"]) == (2, 0.7)
    validated(result)
    _, s = _import(fx, "slime", "slime/run_qwen3_4b_colocated.sh", {"NUM_GPUS": "4"})
    assert s["cluster"]["gpus_per_node"] == 4


def test_slime_async_moe_on_separate_pools(fx):
    result, s = _import(fx, "slime", "slime/run_moe_async.sh")
    p, a = s["placement"], s["algorithm"]
    assert p["mode"] == "async" and a["staleness"] == 1
    assert (p["trainer"]["gpus"], p["rollout"]["gpus"], p["rollout"]["tp"]) == (16, 8, 4)
    assert (p["trainer"]["tp"], p["trainer"]["ep"], p["trainer"]["cp"]) == (4, 8, 2)
    assert a["name"] == "dapo" and a["minibatches"] == 4 and s["cluster"]["nodes"] == 3
    validated(result)


def test_prime_rl_single_node_split(fx):
    result, s = _import(fx, "prime-rl", "prime_rl/rl.toml")
    p, a = s["placement"], s["algorithm"]
    assert s["cluster"] == {"nodes": 1, "gpus_per_node": 8} and p["mode"] == "async"
    assert (p["trainer"]["gpus"], p["rollout"]["gpus"]) == (6, 2)
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["staleness"]) == (32, 16, 2)
    assert s["workload"]["response_tokens"]["max"] == 3072 and s["workload"]["prompt_tokens"]["value"] == 141
    assert p["rollout"]["enforce_eager"] is True and p["rollout"]["gpu_memory_utilization"] == 0.85
    assert p["trainer"]["cp"] == 2 and p["trainer"]["recompute"] is True
    assert result.unused == ["trainer.optim.lr"]
    validated(result)


def test_prime_rl_multi_node_and_the_old_group_name(fx):
    result, s = _import(fx, "prime-rl", "prime_rl/rl_multinode.toml")
    p, a = s["placement"], s["algorithm"]
    assert s["cluster"]["nodes"] == 5 and (p["trainer"]["gpus"], p["rollout"]["gpus"]) == (16, 24)
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["staleness"]) == (32, 8, 8)
    validated(result)


def test_prime_rl_malformed_toml_is_one_error(tmp_path):
    f = tmp_path / "rl.toml"
    f.write_text("[orchestrator\nbatch_size = 1\n")
    with pytest.raises(InputError, match="malformed TOML"):
        import_files("prime-rl", [f], env={})


def test_prime_rl_batch_of_partial_groups(tmp_path):
    f = tmp_path / "rl.toml"
    f.write_text('[model]\nname = "Qwen/Qwen3-4B"\n[orchestrator]\nbatch_size = 10\ngroup_size = 4\n')
    with pytest.raises(InputError, match="a step must hold whole groups"):
        import_files("prime-rl", [f], env={})
