"""verl: Hydra YAML (``defaults:`` composed) and launch scripts passing ``key=value``
overrides to ``python3 -m verl.trainer.main_ppo`` (or a recipe's entry point)."""

from __future__ import annotations

import re
from pathlib import Path

from twin.errors import InputError
from twin.importers import compose, shell
from twin.importers.base import Builder, Imported, Importer, Knobs, resolve_model, scalar, workload

VERSION = "0.5 (verl/trainer/config/ppo_trainer.yaml key names and defaults, 2025)"
ARR = "actor_rollout_ref"
BUILTIN = ("ppo_trainer", "ppo_megatron_trainer", "_generated_ppo_trainer", "_generated_ppo_megatron_trainer",
           "actor", "rollout", "ref", "critic", "data", "reward_model", "model", "npu_profile", "algorithm",
           "engine", "optim")
ENGINES = {"vllm": "continuous", "sglang": "continuous", "hf": "static"}
# adv_estimator -> the twin's algorithm: the critic-free estimators run GRPO's phases.
ESTIMATORS = {"grpo": "grpo", "gae": "ppo", "rloo": "grpo", "reinforce_plus_plus": "grpo",
              "reinforce_plus_plus_baseline": "grpo", "opo": "grpo", "grpo_passk": "grpo", "gpg": "grpo"}


def read(paths: list[Path]) -> tuple[Knobs, str | None, list[str]]:
    """The knobs of YAML configs (composed, in order) then of the scripts' overrides; the
    entry module the script runs; builtin configs left out."""
    knobs, module, skipped = Knobs(), None, []
    for path in paths:
        if path.suffix in (".yaml", ".yml"):
            knobs.put_tree(compose.hydra(path, BUILTIN, skipped), path)
    for path in paths:
        if path.suffix in (".yaml", ".yml"):
            continue
        script = shell.read(path)
        found = [(m, a) for m, a in map(shell.python_module, script.commands)
                 if m and ("verl" in m or "main_ppo" in m or "recipe" in m or "main_dapo" in m)]
        if not found:
            raise InputError("the script runs no verl entry point", file=path,
                             allowed="a script running python3 -m verl.trainer.main_ppo key=value ... "
                             "(or a recipe's main), or a verl YAML config")
        module, args = found[-1]
        config_path, config_name = None, None
        overrides: list[tuple[str, str]] = []
        i = 0
        while i < len(args):
            arg = args[i]
            m = re.fullmatch(r"--config[-_](path|name)(?:=(.*))?", arg)
            if m:
                value = m.group(2) if m.group(2) is not None else (args[i + 1] if i + 1 < len(args) else "")
                i += 1 if m.group(2) is not None else 2
                if m.group(1) == "path":
                    config_path = value
                else:
                    config_name = value
                continue
            if arg.startswith("~"):
                overrides.append((arg[1:].partition("=")[0], None))
            elif "=" in arg and not arg.startswith("-"):
                key, _, value = arg.lstrip("+").partition("=")
                overrides.append((key.strip(), value))
            i += 1
        if config_name:
            base = Path(config_path or ".")
            base = base if base.is_absolute() else path.parent / base
            cfg = base / f"{config_name.removesuffix('.yaml')}.yaml"
            if cfg.is_file():
                knobs.put_tree(compose.hydra(cfg, BUILTIN, skipped), cfg)
            elif config_name not in BUILTIN:
                raise InputError("--config-name names a config that is not there", file=path,
                                 field="--config-name", value=config_name, allowed=f"an existing {cfg}")
        for key, value in overrides:
            if value is None:
                knobs.drop(key)
            else:
                knobs.drop(key)
                knobs.put(key, scalar(value) if shell.UNSET not in value else value, path)
    return knobs, module, skipped


def run(paths: list[Path], model_given: bool) -> Imported:
    knobs, module, skipped = read(paths)
    k, b = knobs, Builder(knobs)
    search = [p.parent for p in paths]
    b.set("framework", "verl")  # the stack's profile: framework_profiles/verl.yaml
    b.set("model", resolve_model(k, f"{ARR}.model.path", model_given, search), f"{ARR}.model.path")

    # ------------------------------------------------------------ deployment
    fully_async = (module is not None and "fully_async" in module) or any(x.startswith("async_training.") for x in k.keys())
    one_step_off = module is not None and "one_step_off" in module
    nnodes = k.int_("trainer.nnodes", 1)
    per_node = k.int_("trainer.n_gpus_per_node", 8)
    b.set("cluster.gpus_per_node", per_node, "trainer.n_gpus_per_node")
    if fully_async or one_step_off:
        r_nodes = k.int_("rollout.nnodes", 1)
        r_per_node = k.int_("rollout.n_gpus_per_node", per_node)
        b.set("cluster.nodes", nnodes + r_nodes, "trainer.nnodes", "rollout.nnodes")
        b.set("placement.mode", "async" if fully_async else "disaggregated")
        b.set("placement.rollout.gpus", r_nodes * r_per_node, "rollout.n_gpus_per_node", "rollout.nnodes")
        b.set("placement.trainer.gpus", nnodes * per_node, "trainer.n_gpus_per_node", "trainer.nnodes")
        if fully_async:
            # A fraction of a sync period's batch that may be generated ahead: the twin's
            # staleness quota is the same rule (twin.sim.producer).
            threshold = k.float_("async_training.staleness_threshold", 1.0)
            b.set("algorithm.staleness", int(threshold) if threshold == int(threshold) else threshold,
                  "async_training.staleness_threshold")
            b.set("algorithm.partial_rollout", k.bool_("async_training.partial_rollout", True),
                  "async_training.partial_rollout")
            b.set("algorithm.updates_per_sync", k.int_("async_training.trigger_parameter_sync_step", 1),
                  "async_training.trigger_parameter_sync_step")
            # The trainer scores with the rollout's log-probs unless told to recompute them.
            rollout_logprobs = k.bool_("async_training.use_rollout_log_probs", True)
            recompute = k.bool_("async_training.recompute_old_log_prob", False)
            b.set("algorithm.old_logprob", recompute or not rollout_logprobs,
                  "async_training.use_rollout_log_probs", "async_training.recompute_old_log_prob")
            b.note("a twin step is one parameter sync: trigger_parameter_sync_step × require_batches × "
                   "ppo_mini_batch_size prompts, trained in trigger_parameter_sync_step chunks as they arrive")
        else:
            b.set("algorithm.staleness", 1)
            b.note("verl's one-step-off-policy recipe: separate pools, rollouts one policy version stale")
    else:
        b.set("cluster.nodes", nnodes, "trainer.nnodes")
        b.set("placement.mode", "colocated")

    # ------------------------------------------------------------ algorithm
    estimator = k.choice("algorithm.adv_estimator", ESTIMATORS, "ppo")  # verl's default: gae
    dapo = k.bool_("algorithm.filter_groups.enable", False)
    name = "dapo" if dapo and estimator == "grpo" else estimator
    b.set("algorithm.name", name, "algorithm.adv_estimator")
    if dapo:
        rounds = k.int_("algorithm.filter_groups.max_num_gen_batches", None, low=0)
        ds = {"enabled": True}
        if rounds:
            ds["max_rounds"] = rounds
        b.set("algorithm.dynamic_sampling", ds, "algorithm.filter_groups.enable")
        b.note("dynamic sampling's share of all-correct/all-wrong groups is unknown to the config: 0 "
               "(set algorithm.dynamic_sampling.zero_variance_fraction)")
    k.mark("algorithm.filter_groups.metric")
    kl_loss = k.bool_(f"{ARR}.actor.use_kl_loss", False)
    kl_reward = k.bool_("algorithm.use_kl_in_reward", False)
    b.set("algorithm.reference", kl_loss or kl_reward, f"{ARR}.actor.use_kl_loss", "algorithm.use_kl_in_reward")
    batch = k.int_("data.train_batch_size", 1024, low=0)  # 0: the fully-async recipe sizes by mini-batches
    mini = k.int_(f"{ARR}.actor.ppo_mini_batch_size", 256)
    if fully_async:  # train_batch_size is not used by the fully-async trainer (0 in its recipes)
        batch = (mini * k.int_("async_training.require_batches", 1)
                 * k.int_("async_training.trigger_parameter_sync_step", 1))
    b.set("algorithm.prompts_per_step", batch, "data.train_batch_size")
    n = k.int_(f"{ARR}.rollout.n", 1)
    b.set("algorithm.responses_per_prompt", n, f"{ARR}.rollout.n")
    if batch and mini:
        if batch % mini:
            raise InputError("the mini-batch must divide the batch: the twin runs whole mini-batches",
                             file=k.file(f"{ARR}.actor.ppo_mini_batch_size"), field=f"{ARR}.actor.ppo_mini_batch_size",
                             value=mini, allowed=f"a divisor of data.train_batch_size={batch}")
        b.set("algorithm.minibatches", batch // mini, f"{ARR}.actor.ppo_mini_batch_size")
    b.set("algorithm.ppo_epochs", k.int_(f"{ARR}.actor.ppo_epochs", None), f"{ARR}.actor.ppo_epochs")

    # ------------------------------------------------------------ workload
    max_prompt = k.int_("data.max_prompt_length", 512)
    max_response = k.int_("data.max_response_length", 512)
    k.mark(f"{ARR}.rollout.prompt_length", f"{ARR}.rollout.response_length")
    workload(b, max_prompt, max_response, ("data.max_prompt_length",), ("data.max_response_length",))

    # ------------------------------------------------------------ rollout
    R = f"{ARR}.rollout"
    engine = k.choice(f"{R}.name", ENGINES, "continuous")
    b.set("placement.rollout.engine", engine, f"{R}.name")
    b.set("placement.rollout.tp", k.int_(f"{R}.tensor_model_parallel_size", 2), f"{R}.tensor_model_parallel_size")
    b.set("placement.rollout.gpu_memory_utilization", k.float_(f"{R}.gpu_memory_utilization", 0.5, high=1.0),
          f"{R}.gpu_memory_utilization")
    b.set("placement.rollout.max_num_seqs", k.int_(f"{R}.max_num_seqs", 1024), f"{R}.max_num_seqs")
    b.set("placement.rollout.max_num_batched_tokens", k.int_(f"{R}.max_num_batched_tokens", 8192),
          f"{R}.max_num_batched_tokens")
    if engine == "continuous":
        b.set("placement.rollout.scheduling", "synchronous")
        b.note("the rollout engine schedules synchronously (verl's vLLM V1 of 2025, docs/validation.md A)")

    b.blame("placement.rollout.gpus", f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes")

    # ------------------------------------------------------------ trainer
    A = f"{ARR}.actor"
    strategy = k.str_(f"{A}.strategy", "fsdp")
    if strategy in ("fsdp", "fsdp2"):
        b.set("placement.trainer.zero_stage", 3, f"{A}.strategy")
    elif strategy == "megatron":
        M = f"{A}.megatron"
        b.set("placement.trainer.tp", k.int_(f"{M}.tensor_model_parallel_size", 1), f"{M}.tensor_model_parallel_size")
        b.set("placement.trainer.pp", k.int_(f"{M}.pipeline_model_parallel_size", 1), f"{M}.pipeline_model_parallel_size")
        b.set("placement.trainer.zero_stage", 1, f"{A}.strategy")
        b.set("placement.trainer.kernels", "fused", f"{A}.strategy")
        b.set("placement.trainer.offload_params", k.bool_(f"{M}.param_offload", False), f"{M}.param_offload")
        b.set("placement.trainer.offload_optimizer", k.bool_(f"{M}.optimizer_offload", False), f"{M}.optimizer_offload")
    else:
        raise InputError("unknown actor strategy", file=k.file(f"{A}.strategy"), field=f"{A}.strategy",
                         value=strategy, allowed="fsdp, fsdp2, megatron")
    if strategy != "megatron":
        b.set("placement.trainer.offload_params", k.bool_(f"{A}.fsdp_config.param_offload", False),
              f"{A}.fsdp_config.param_offload")
        b.set("placement.trainer.offload_optimizer", k.bool_(f"{A}.fsdp_config.optimizer_offload", False),
              f"{A}.fsdp_config.optimizer_offload")
    b.set("placement.trainer.sp", k.int_(f"{A}.ulysses_sequence_parallel_size", 1), f"{A}.ulysses_sequence_parallel_size")
    b.set("placement.trainer.recompute", k.bool_(f"{ARR}.model.enable_gradient_checkpointing", True),
          f"{ARR}.model.enable_gradient_checkpointing")
    if k.bool_(f"{A}.use_dynamic_bsz", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_(f"{A}.ppo_max_token_len_per_gpu", 16384),
              f"{A}.ppo_max_token_len_per_gpu", f"{A}.use_dynamic_bsz")
    else:
        micro = k.int_(f"{A}.ppo_micro_batch_size_per_gpu", None)
        if micro:
            b.set("placement.trainer.micro_batch_tokens", micro * (max_prompt + max_response),
                  f"{A}.ppo_micro_batch_size_per_gpu")
            b.note("without use_dynamic_bsz a micro-batch is ppo_micro_batch_size_per_gpu sequences of up to "
                   "max_prompt_length + max_response_length tokens")
    trainer_fsdp_knobs(k, b, strategy)
    b.blame("placement.trainer.gpus", f"{A}.ulysses_sequence_parallel_size", f"{A}.megatron.tensor_model_parallel_size",
            f"{A}.megatron.pipeline_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes")
    if skipped:
        b.note("verl's own defaults stand for " + ", ".join(sorted(set(skipped))))
    return Imported("verl", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def trainer_fsdp_knobs(k: Knobs, b: Builder, strategy: str) -> None:
    """What verl's FSDP actor does per micro-batch (verl/workers/actor/dp_actor.py): the scoring
    passes' own token cap (log_prob_max_token_len_per_gpu, with dynamic batch sizes), packed
    sequences without padding (use_remove_padding), fused log-prob kernels (use_fused_kernels),
    and hybrid sharding (fsdp_config.fsdp_size: -1 shards over every GPU)."""
    A, R = f"{ARR}.actor", f"{ARR}.rollout"
    if k.bool_(f"{R}.log_prob_use_dynamic_bsz", k.bool_(f"{A}.use_dynamic_bsz", False)):
        b.set("placement.trainer.logprob_micro_batch_tokens", k.int_(f"{R}.log_prob_max_token_len_per_gpu", None),
              f"{R}.log_prob_max_token_len_per_gpu", f"{R}.log_prob_use_dynamic_bsz")
    k.mark(f"{ARR}.ref.log_prob_max_token_len_per_gpu", f"{ARR}.ref.log_prob_use_dynamic_bsz")
    b.set("placement.trainer.remove_padding", k.bool_(f"{ARR}.model.use_remove_padding", None),
          f"{ARR}.model.use_remove_padding")
    if k.bool_(f"{ARR}.model.use_fused_kernels", False):
        b.set("placement.trainer.logprob_kernel", "fused", f"{ARR}.model.use_fused_kernels")
    if strategy != "megatron":
        size = k.int_(f"{A}.fsdp_config.fsdp_size", -1, low=-1)
        if size > 0:
            b.set("placement.trainer.shard_size", size, f"{A}.fsdp_config.fsdp_size")


IMPORTER = Importer("verl", "verl", VERSION,
                    "verl YAML configs (Hydra defaults composed) and launch scripts passing key=value "
                    "overrides to python3 -m verl.trainer.main_ppo", run)
