import shutil


def _beside(fx, folder) -> str:
    """The NeMo-RL fixtures copied beside a test's config (defaults are read only inside the
    config's own tree); returns "" to prefix the config's text."""
    shutil.copytree(fx / "nemo_rl", folder, dirs_exist_ok=True)
    return ""


def test_base_config_imports_and_checks(fx, twin_import, twin_check):
    code, data, err = twin_import("nemo-rl", fx / "nemo_rl/grpo_base.yaml")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert data["model"] == "qwen2.5-1.5b"
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"]) == (32, 16, 1)
    assert p["mode"] == "colocated" and p["trainer"]["zero_stage"] == 3
    # sequence_packing.train_mb_tokens = ${mul:${policy.max_total_sequence_length}, ${...train_micro_batch_size}}
    assert p["trainer"]["micro_batch_tokens"] == 512 * 4
    assert data["workload"]["response_tokens"]["max"] == 512 - 141
    assert "NeMo-RL 0.3" in data["description"]
    # the knobs that change time or memory come first, then the rest, each group sorted
    assert len(err) == 1 and err[0].startswith("twin: warning: nemo_rl: not used: policy.train_micro_batch_size, "
                                               "data.dataset_name, ")
    assert "policy.optimizer.kwargs.lr" in err[0] and "grpo.num_prompts_per_step" not in err[0]
    assert twin_check(data) == 0


def test_defaults_inheritance_megatron(fx, twin_import, twin_check):
    code, data, _ = twin_import("nemo-rl", fx / "nemo_rl/grpo_llama8b_megatron.yaml")
    assert code == 0
    t = data["placement"]["trainer"]
    assert data["model"] == "llama-3.1-8b" and data["cluster"]["nodes"] == 2
    assert t["kernels"] == "fused" and t["zero_stage"] == 1 and t["pp"] == 2 and t["recompute"] is True
    assert t["offload_params"] and t["offload_optimizer"]  # colocated: NeMo-RL offloads before refit
    assert data["algorithm"]["minibatches"] == 64 * 32 // 512
    assert twin_check(data) == 0


def test_async_grpo_two_levels_of_defaults(fx, twin_import, twin_check):
    code, data, _ = twin_import("nemo-rl", fx / "nemo_rl/grpo_async.yaml")
    assert code == 0
    p, a = data["placement"], data["algorithm"]
    assert p["mode"] == "async" and p["rollout"]["gpus"] == 8
    assert a["staleness"] == 2 and a["partial_rollout"] is True
    assert twin_check(data) == 0


def test_context_parallel_is_refused(fx, tmp_path, twin_import):
    cfg = tmp_path / "cp.yaml"
    cfg.write_text(_beside(fx, tmp_path) + "defaults: grpo_base.yaml\npolicy:\n  dtensor_cfg:\n    context_parallel_size: 2\n")
    code, _, err = twin_import("nemo-rl", cfg)
    assert code == 2 and len(err) == 1
    assert err[0] == (f"twin: error: {cfg}: policy.dtensor_cfg.context_parallel_size: context parallelism is not "
                      "modelled (got 2); allowed: 1 (the twin models tensor, pipeline and Ulysses sequence parallelism)")


def test_unknown_hub_id_says_how_to_fix(fx, tmp_path, twin_import):
    cfg = tmp_path / "m.yaml"
    cfg.write_text(_beside(fx, tmp_path) + "defaults: grpo_base.yaml\npolicy:\n  model_name: someorg/Mystery-9B\n")
    code, _, err = twin_import("nemo-rl", cfg)
    assert code == 2 and len(err) == 1
    assert f"{cfg}: policy.model_name: a hub id without a built-in preset (got 'someorg/Mystery-9B')" in err[0]
    assert "--set model=path/to/config.json" in err[0] and "nothing is downloaded" in err[0]
    # the fix works
    code, data, _ = twin_import("nemo-rl", cfg, "--set", "model=qwen2.5-1.5b")
    assert code == 0 and data["model"] == "qwen2.5-1.5b"


def test_megatron_expert_and_context_parallelism_and_vllm_pipelines_import(fx, tmp_path, twin_import, twin_check):
    """NeMo-RL v0.4's Qwen3-30B-A3B layout (PUBLISHED.md F): Megatron EP8 with tp 2, here with
    cp 2 too, and two-stage vLLM engines."""
    cfg = tmp_path / "moe.yaml"
    cfg.write_text(_beside(fx, tmp_path) + "defaults: grpo_llama8b_megatron.yaml\n"
                   "policy:\n  model_name: Qwen/Qwen3-30B-A3B\n  megatron_cfg:\n    tensor_model_parallel_size: 2\n"
                   "    pipeline_model_parallel_size: 1\n    context_parallel_size: 2\n"
                   "    expert_model_parallel_size: 8\n"
                   "  generation:\n    vllm_cfg:\n      tensor_parallel_size: 2\n      pipeline_parallel_size: 2\n"
                   "cluster:\n  num_nodes: 4\n")
    code, data, err = twin_import("nemo-rl", cfg)
    assert code == 0, err
    t, r = data["placement"]["trainer"], data["placement"]["rollout"]
    assert (t["tp"], t["cp"], t["ep"], t["pp"]) == (2, 2, 8, 1)
    assert (r["tp"], r["pp"]) == (2, 2)
    assert twin_check(data) == 0


def test_refit_method_follows_the_placement(fx, twin_import, twin_check):
    """NeMo-RL refits colocated workers by CUDA IPC and separate pools shard to shard over NCCL."""
    code, data, _ = twin_import("nemo-rl", fx / "nemo_rl/grpo_base.yaml")
    assert code == 0 and data["placement"]["mode"] == "colocated" and "weight_sync" not in data  # auto: reshard
    code, data, _ = twin_import("nemo-rl", fx / "nemo_rl/grpo_async.yaml")
    assert code == 0 and data["placement"]["mode"] == "async" and data["weight_sync"]["method"] == "nccl_reshard"
    assert twin_check(data) == 0
