def test_flat_flags_colocated(fx, twin_import, twin_check):
    code, data, err = twin_import("openrlhf", fx / "openrlhf/train_grpo_ray.sh")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert data["model"] == "qwen2.5-7b" and data["cluster"] == {"gpus_per_node": 8, "nodes": 1}
    assert p["mode"] == "colocated" and p["rollout"]["tp"] == 2
    assert (a["name"], a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"]) == ("grpo", 128, 8, 8)
    assert a["reference"] is True
    t = p["trainer"]
    assert t["zero_stage"] == 3 and t["recompute"] and t["offload_optimizer"]
    assert t["micro_batch_tokens"] == 2 * (1024 + 4096)
    assert err == ["twin: warning: openrlhf: not used: actor_learning_rate, apply_chat_template, bf16, input_key, "
                   "micro_rollout_batch_size, packing_samples, prompt_data, ref_num_gpus_per_node, ref_num_nodes, "
                   "save_path"]
    assert twin_check(data) == 0


def test_dotted_spelling_async(fx, twin_import, twin_check):
    code, data, err = twin_import("openrlhf", fx / "openrlhf/train_dotted.sh")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert data["model"] == "llama-3.1-8b"
    assert p["mode"] == "async" and p["rollout"]["gpus"] == 8 and p["trainer"]["gpus"] == 8
    assert data["cluster"]["nodes"] == 2
    assert a["staleness"] == 1 and a["minibatches"] == 64 * 8 // 256
    assert p["trainer"]["zero_stage"] == 2 and p["trainer"]["recompute"] is True
    assert err == ["twin: warning: openrlhf: not used: eval.steps"]
    assert twin_check(data) == 0


def test_colocated_engines_must_cover_the_actor(tmp_path, twin_import):
    script = tmp_path / "t.sh"
    script.write_text("python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8 --vllm_num_engines 2 "
                      "--colocate_all_models --pretrain Qwen/Qwen2.5-7B\n")
    code, _, err = twin_import("openrlhf", script)
    assert code == 2 and len(err) == 1 and "vllm_num_engines" in err[0] and "(got 2)" in err[0]


def test_dotted_dapo_eager_sleep_and_total_length(fx, twin_import, twin_check, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the catalog names the base; nothing is fetched
    code, data, err = twin_import("openrlhf", fx / "openrlhf/train_dapo_dotted.sh")
    assert code == 0, err
    a, r, t = data["algorithm"], data["placement"]["rollout"], data["placement"]["trainer"]
    assert a["name"] == "dapo" and a["dynamic_sampling"]["enabled"] is True
    assert r["enforce_eager"] is True
    assert t["offload_params"] is True and t["offload_optimizer"] is True  # --ds.enable_sleep
    assert data["workload"]["response_tokens"]["max"] == 4096
    assert t["micro_batch_tokens"] == 4 * 6144  # micro_train_batch_size 4 × (2,048 + 4,096)
    assert data["model"] == "OpenRLHF/Llama-3-8b-sft-mixture"  # a fine-tune named after its base (the catalog)
    assert twin_check(data) == 0


def test_ring_attention_is_refused_in_either_spelling(tmp_path, twin_import):
    """docs/frameworks.md: ring attention (context parallelism) is an error, flat or dotted."""
    for flag in ("--ring_attn_size", "--ds.ring_attn_size"):
        script = tmp_path / "r.sh"
        script.write_text("python3 -m openrlhf.cli.train_ppo_ray --actor_num_gpus_per_node 8 --vllm_num_engines 4 "
                          f"--pretrain Qwen/Qwen2.5-7B {flag} 4\n")
        code, _, err = twin_import("openrlhf", script)
        assert code == 2 and len(err) == 1 and "ring attention" in err[0] and "(got 4)" in err[0]
