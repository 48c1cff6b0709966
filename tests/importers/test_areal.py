import pytest

from twin.importers.areal import parse_allocation


def test_experiment_yaml_imports_and_checks(fx, twin_import, twin_check):
    code, data, err = twin_import("areal", fx / "areal/gsm8k_grpo.yaml")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert data["model"] == "qwen2.5-1.5b"
    assert p["mode"] == "async" and a["staleness"] == 2 and a["partial_rollout"] is True
    assert p["rollout"]["gpus"] == 4 and p["trainer"]["gpus"] == 4
    assert p["rollout"]["max_num_seqs"] == 256  # 256 concurrent rollouts of 4 samples each over 4 servers
    assert p["rollout"]["gpu_memory_utilization"] == 0.8
    assert (a["prompts_per_step"], a["responses_per_prompt"]) == (256, 4)
    assert data["workload"]["response_tokens"]["max"] == 1024
    assert "actor.optimizer.lr" in err[0] and "allocation_mode" not in err[0]
    assert twin_check(data) == 0


def test_launch_overrides_with_the_older_allocation_form(fx, twin_import, twin_check):
    code, data, _ = twin_import("areal", fx / "areal/run_legacy.sh")
    assert code == 0
    p = data["placement"]
    assert data["model"] == "deepseek-r1-distill-qwen-1.5b"
    assert p["mode"] == "disaggregated" and "staleness" not in data["algorithm"]
    assert p["rollout"] == {**p["rollout"], "gpus": 4, "tp": 2} and p["trainer"]["tp"] == 2
    assert twin_check(data) == 0


@pytest.mark.parametrize("text, engine, trainer", [
    ("sglang:d4t2 + fsdp:d8", (4, 2), (8, 1, 1)),
    ("vllm:d8t1+megatron:d2p2t2", (8, 1), (2, 2, 2)),
    ("sglang.d4p1m2+d2p2m1", (4, 2), (2, 2, 1)),
])
def test_allocation_forms(text, engine, trainer):
    alloc = parse_allocation(text)
    assert (alloc["engine"]["d"], alloc["engine"]["t"]) == engine
    assert (alloc["trainer"]["d"], alloc["trainer"]["p"], alloc["trainer"]["t"]) == trainer


@pytest.mark.parametrize("text", ["vllm:d8t1|fsdp:d8", "sglang:d4t4", "d8", "megatron:(attn:d4p2t2c2|ffn:d2p2t4e2)",
                                  "sglang:d4t1+fsdp:d2c2", "trtllm:d4+fsdp:d4", "sglang:d4x2+fsdp:d4"])
def test_allocation_forms_refused(text, tmp_path, twin_import):
    cfg = tmp_path / "a.yaml"
    cfg.write_text(f"allocation_mode: '{text}'\nactor: {{path: Qwen/Qwen2.5-1.5B}}\n")
    code, _, err = twin_import("areal", cfg)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"twin: error: {cfg}: allocation_mode: an allocation mode the importer cannot read")
    assert "allowed: <sglang|vllm>:d<N>" in err[0]


def test_per_engine_backends_stand_for_allocation_mode(fx, twin_import, twin_check):
    code, data, err = twin_import("areal", fx / "areal/backend/gsm8k_grpo.yaml")
    assert code == 0, err
    p = data["placement"]
    assert (p["rollout"]["gpus"], p["trainer"]["gpus"], p["mode"]) == (4, 4, "async")
    assert p["rollout"]["max_num_seqs"] == 64  # 64 concurrent rollouts × 4 samples over 4 servers
    assert not any("backend" in line for line in err)
    assert twin_check(data) == 0
