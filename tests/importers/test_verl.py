def test_hydra_yaml_with_defaults_imports_and_checks(fx, twin_import, twin_check):
    code, data, err = twin_import("verl", fx / "verl/grpo_qwen7b.yaml")
    assert code == 0
    assert data["model"] == "qwen2.5-7b"  # Qwen/Qwen2.5-7B-Instruct, from base.yaml
    assert data["cluster"] == {"gpus_per_node": 8, "nodes": 2}  # the file's own keys win over base
    a, p = data["algorithm"], data["placement"]
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"]) == (256, 8, 4)
    assert a["reference"] is True  # use_kl_loss
    assert p["mode"] == "colocated"
    # the rollout group composed at its package
    assert p["rollout"]["tp"] == 2 and p["rollout"]["gpu_memory_utilization"] == 0.6
    assert p["rollout"]["max_num_seqs"] == 512 and p["rollout"]["max_num_batched_tokens"] == 16384
    assert p["trainer"]["micro_batch_tokens"] == 16384 and p["trainer"]["recompute"] is True
    assert data["workload"]["response_tokens"]["max"] == 3072
    assert "verl 0.8" in data["description"]
    assert err == ["twin: warning: verl: not used: actor_rollout_ref.actor.kl_loss_coef, "
                   "actor_rollout_ref.actor.optim.lr, trainer.project_name"]
    assert twin_check(data) == 0


def test_launch_script_with_variables_and_arithmetic(fx, twin_import):
    code, data, err = twin_import("verl", fx / "verl/run_grpo.sh")
    assert code == 0
    a, t, r = data["algorithm"], data["placement"]["trainer"], data["placement"]["rollout"]
    assert data["cluster"]["nodes"] == 4  # ${NNODES:-4}
    assert (a["prompts_per_step"], a["responses_per_prompt"], a["minibatches"]) == (512, 16, 16)
    assert a["reference"] is False
    assert t["sp"] == 2 and t["offload_params"] and t["offload_optimizer"]
    assert t["micro_batch_tokens"] == (2048 + 8192) * 2  # $(( (a + b) * 2 ))
    assert r["max_num_batched_tokens"] == 10240
    assert data["workload"]["response_tokens"]["max"] == 8192
    assert len(err) == 1 and err[0].startswith("twin: warning: verl: not used: ")
    assert "data.train_files" in err[0] and "trainer.total_epochs" in err[0]


def test_array_built_overrides(fx, twin_import, twin_check):
    code, data, err = twin_import("verl", fx / "verl/run_array.sh")
    assert code == 0 and err == []
    a = data["algorithm"]
    assert data["model"] == "llama-3.1-8b"
    assert a["name"] == "ppo" and a["ppo_epochs"] == 2 and a["minibatches"] == 4
    assert a["responses_per_prompt"] == 4  # appended with +=( ... )
    assert data["placement"]["trainer"]["micro_batch_tokens"] == 4 * (512 + 2048)
    assert twin_check(data) == 0


def test_script_overrides_a_yaml_given_with_it(fx, twin_import, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=3 "
                      "actor_rollout_ref.rollout.tensor_model_parallel_size=4\n")
    code, data, _ = twin_import("verl", fx / "verl/grpo_qwen7b.yaml", script)
    assert code == 0
    assert data["cluster"]["nodes"] == 3 and data["placement"]["rollout"]["tp"] == 4


def test_unmappable_value_is_exit_2_with_one_line(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=remax "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n")
    code, data, err = twin_import("verl", script)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"twin: error: {script}: algorithm.adv_estimator: cannot be mapped (got 'remax'); "
                             "allowed: ")
    assert "gae" in err[0] and "grpo" in err[0]


def test_mini_batch_that_does_not_divide(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=100 "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=32 actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n")
    code, _, err = twin_import("verl", script)
    assert code == 2 and len(err) == 1
    assert "actor_rollout_ref.actor.ppo_mini_batch_size" in err[0] and "a divisor of" in err[0]


def test_environment_variable_the_script_does_not_set(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=$NNODES "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n")
    code, _, err = twin_import("verl", script)
    assert code == 2 and len(err) == 1
    assert "trainer.nnodes" in err[0] and "NNODES" in err[0] and "--set" in err[0]


def test_validation_error_names_the_framework_knob(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.gpu_memory_utilization=1.5 "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B\n")
    code, _, err = twin_import("verl", script)
    assert code == 2 and "actor_rollout_ref.rollout.gpu_memory_utilization" in err[-1]


def test_fully_async_recipe_keeps_its_semantics(tmp_path, twin_import):
    """verl's fully-async trainer: a twin step is one parameter sync (trigger × require ×
    mini prompts) trained in trigger chunks; the fractional staleness_threshold is kept; the
    rollout's log-probs are used (no old-log-prob pass)."""
    script = tmp_path / "run.sh"
    script.write_text(
        "python -m recipe.fully_async_policy.fully_async_main "
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B data.train_batch_size=0 "
        "actor_rollout_ref.actor.ppo_mini_batch_size=32 async_training.require_batches=4 "
        "async_training.staleness_threshold=0.5 async_training.trigger_parameter_sync_step=4 "
        "async_training.partial_rollout=True rollout.nnodes=1 rollout.n_gpus_per_node=8 "
        "trainer.nnodes=1 trainer.n_gpus_per_node=8 actor_rollout_ref.rollout.n=16\n")
    code, data, err = twin_import("verl", script)
    assert code == 0
    a = data["algorithm"]
    assert data["placement"]["mode"] == "async"
    assert a["staleness"] == 0.5 and a["partial_rollout"] is True
    assert a["prompts_per_step"] == 512 and a["minibatches"] == 16 and a["updates_per_sync"] == 4
    assert a["old_logprob"] is False
    assert not err or "async_training" not in err[0]  # every async knob is used


def test_missing_defaults_file_is_an_error(tmp_path, twin_import):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("defaults:\n  - my_base\n  - _self_\ntrainer: {nnodes: 1}\n")
    code, _, err = twin_import("verl", cfg)
    assert code == 2 and "defaults" in err[0] and "my_base" in err[0]


def test_knobs_left_out_take_verls_defaults(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B\n")
    code, data, err = twin_import("verl", script)
    assert code == 0 and err == []
    a, r = data["algorithm"], data["placement"]["rollout"]
    assert (a["name"], a["prompts_per_step"], a["minibatches"], a["responses_per_prompt"]) == ("ppo", 1024, 4, 1)
    assert (r["tp"], r["gpu_memory_utilization"], r["max_num_seqs"]) == (2, 0.5, 256)  # verl's rollout.yaml
    assert data["workload"]["response_tokens"]["max"] == 512


def test_pool_that_does_not_split_names_the_knobs_behind_it(tmp_path, twin_import):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-4B "
                      "actor_rollout_ref.rollout.tensor_model_parallel_size=3 trainer.n_gpus_per_node=8\n")
    code, _, err = twin_import("verl", script)
    assert code == 2
    assert err[-1].startswith(f"twin: error: {script}: actor_rollout_ref.rollout.tensor_model_parallel_size, "
                              "trainer.n_gpus_per_node (scenario placement.rollout.gpus): rollout GPUs must split")


def test_verls_fully_async_dapo_7b_script_fits_on_its_h20s(fx, twin_import, twin_check, tmp_path):
    """verl's fully-async DAPO 7B scripts (28K responses, 61,440 update and 92,160 scoring tokens
    per GPU, Ulysses sp 4, fsdp_size 8) ran on H20s: the memory model must fit them with their
    own micro-batch settings (16-bit logits with the gradient in place, state sharded over 8)."""
    code, data, _ = twin_import("verl", fx / "verl/dapo_7b_fully_async_16_16.sh", "--set", "model=qwen2.5-7b",
                                "--set", "cluster.gpu=h20")
    assert code == 0
    t = data["placement"]["trainer"]
    assert (t["micro_batch_tokens"], t["logprob_micro_batch_tokens"]) == (61_440, 92_160)
    assert (t["shard_size"], t["sp"], t["remove_padding"]) == (8, 4, True)
    assert twin_check(data) == 0
