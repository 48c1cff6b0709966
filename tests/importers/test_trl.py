def test_grpo_config_with_accelerate_file(fx, twin_import, twin_check):
    code, data, err = twin_import("trl", fx / "trl/grpo_config.yaml", fx / "trl/accelerate_zero3.yaml")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert data["model"] == "qwen2.5-1.5b" and data["cluster"] == {"nodes": 1, "gpus_per_node": 8}
    # 4 per device × 8 processes × 4 accumulation = 128 completions per generation, 16 prompts of 8
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"], a["ppo_epochs"]) == (16, 8, 1, 1)
    assert a["reference"] is False  # beta 0
    assert p["mode"] == "colocated" and p["rollout"]["gpu_memory_utilization"] == 0.3
    assert p["trainer"]["zero_stage"] == 3 and p["trainer"]["micro_batch_tokens"] == 4 * (512 + 1024)
    assert err == ["twin: warning: trl: not used: accelerate:deepspeed_config.deepspeed_multinode_launcher, "
                   "accelerate:deepspeed_config.zero3_init_flag, accelerate:mixed_precision, bf16, learning_rate, "
                   "logging_steps, output_dir"]
    assert twin_check(data) == 0


def test_script_with_a_vllm_server(fx, twin_import, twin_check):
    code, data, _ = twin_import("trl", fx / "trl/launch_server.sh")
    assert code == 0
    a, p = data["algorithm"], data["placement"]
    assert p["mode"] == "disaggregated" and p["rollout"]["gpus"] == 2 and p["rollout"]["tp"] == 2
    assert p["trainer"]["gpus"] == 6  # --num_processes on the command line beats the config file's 8
    # 4 × 6 × 4 steps per generation = 96 completions = 8 prompts × 12; 4 / 2 accumulation = 2 optimizer steps
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"], a["ppo_epochs"]) == (8, 12, 2, 2)
    assert a["reference"] is True
    assert twin_check(data) == 0


def test_without_vllm_the_engine_is_hf_generate_and_processes_default(fx, twin_import, twin_check):
    code, data, _ = twin_import("trl", fx / "trl/grpo_hf.json")
    assert code == 0
    p = data["placement"]
    assert p["rollout"]["engine"] == "hf_generate" and p["mode"] == "colocated"
    # one process generates its 8 completions (8 per device × 1 step per generation) in one call,
    # prefilled at once (8 × 256 prompt tokens)
    assert p["rollout"]["max_num_seqs"] == 8 and p["rollout"]["max_num_batched_tokens"] == 8 * 256
    assert "8 training processes" in data["description"]
    assert twin_check(data) == 0


def test_without_vllm_a_process_generates_its_share_of_the_generation_batch(tmp_path, twin_import, twin_check):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-1.5B\nper_device_train_batch_size: 4\nnum_generations: 8\n"
                   "steps_per_generation: 4\nmax_prompt_length: 128\n")
    acc = tmp_path / "acc.yaml"
    acc.write_text("distributed_type: MULTI_GPU\nnum_processes: 2\n")
    code, data, _ = twin_import("trl", cfg, acc)
    assert code == 0
    r = data["placement"]["rollout"]
    # generation batch 4 × 2 processes × 4 steps = 32 completions, 16 per process
    assert data["algorithm"]["prompts_per_step"] * data["algorithm"]["responses_per_prompt"] == 32
    assert (r["engine"], r["max_num_seqs"], r["max_num_batched_tokens"]) == ("hf_generate", 16, 16 * 128)
    assert twin_check(data) == 0


def test_generation_batch_that_splits_groups(tmp_path, twin_import):
    cfg = tmp_path / "g.yaml"
    cfg.write_text("model_name_or_path: Qwen/Qwen2.5-1.5B\nper_device_train_batch_size: 3\nnum_generations: 5\n")
    code, _, err = twin_import("trl", cfg)
    assert code == 2 and len(err) == 1 and f"{cfg}: num_generations: a generation batch must hold whole groups" in err[0]


def test_server_on_nodes_of_its_own_when_training_spans_machines(tmp_path, twin_import):
    script = tmp_path / "multi.sh"
    script.write_text("trl vllm-serve --model Qwen/Qwen2.5-1.5B --tensor-parallel-size 1 --data-parallel-size 8\n"
                      "accelerate launch --num_machines 2 --num_processes 16 grpo.py --model_name_or_path "
                      "Qwen/Qwen2.5-1.5B --use_vllm --vllm_mode server --per_device_train_batch_size 4\n")
    code, data, _ = twin_import("trl", script)
    assert code == 0
    assert data["cluster"] == {"nodes": 3, "gpus_per_node": 8}
    assert data["placement"]["rollout"]["gpus"] == 8 and data["placement"]["trainer"]["gpus"] == 16


def test_server_mode_without_a_process_count_leaves_the_server_its_gpu(tmp_path, twin_import):
    """TRL's documented pattern: one node, the server on one GPU, training on the other seven (not a
    node of 9); the colocated engine's knobs are named as not used in server mode."""
    script = tmp_path / "launch.sh"
    script.write_text("CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen2.5-1.5B &\n"
                      "CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7 accelerate launch grpo.py --model_name_or_path Qwen/Qwen2.5-1.5B "
                      "--use_vllm --vllm_mode server --vllm_gpu_memory_utilization 0.5 --per_device_train_batch_size 8 "
                      "--num_generations 8\n")
    code, data, err = twin_import("trl", script)
    assert code == 0, err
    assert data["cluster"] == {"nodes": 1, "gpus_per_node": 8}
    assert (data["placement"]["trainer"]["gpus"], data["placement"]["rollout"]["gpus"]) == (7, 1)
    assert len(err) == 1 and err[0].startswith("twin: warning: trl: not used: vllm_gpu_memory_utilization")
