"""verl: Hydra YAML (``defaults:`` composed) and launch scripts passing ``key=value``
overrides to ``python3 -m verl.trainer.main_ppo`` (or a recipe's entry point)."""

from __future__ import annotations

import re
from pathlib import Path

from twin.config.io import read_mapping
from twin.errors import InputError
from twin.importers import compose, shell
from twin.importers.base import Builder, Imported, Importer, Knobs, named_file, resolve_model, scalar, workload

VERSION = "0.8 (verl/trainer/config key names and defaults, 2026: defaults/verl.yaml)"
DEFAULTS = Path(__file__).with_name("defaults") / "verl.yaml"
BASES = ("ppo_trainer", "ppo_megatron_trainer")
NOT_RL = ("main_generation", "main_generation_server", "fsdp_sft_trainer", "sft_trainer", "main_eval", "model_merger")
ARR = "actor_rollout_ref"
BUILTIN = ("ppo_trainer", "ppo_megatron_trainer", "_generated_ppo_trainer", "_generated_ppo_megatron_trainer",
           "actor", "rollout", "ref", "critic", "data", "reward_model", "model", "npu_profile", "algorithm",
           "engine", "optim")
ENGINES = {"vllm": "continuous", "sglang": "continuous", "hf": "static"}
# adv_estimator -> the twin's algorithm: the critic-free estimators run GRPO's phases.
ESTIMATORS = {"grpo": "grpo", "gae": "ppo", "rloo": "grpo", "reinforce_plus_plus": "grpo",
              "reinforce_plus_plus_baseline": "grpo", "opo": "grpo", "grpo_passk": "grpo", "gpg": "grpo"}


def bundled(name: str) -> tuple[dict, str]:
    """verl's own defaults for ``name`` (ppo_trainer or ppo_megatron_trainer) from the newest
    release in defaults/verl.yaml: (flat knobs, where they came from)."""
    data = read_mapping(DEFAULTS)
    release = data["releases"][0]
    table = release["configs"][name]
    return table["values"], f"verl {release['version']} {table['source']} (commit {release['commit'][:9]})"


def _config_file(script: Path, module: str | None, config_path: str | None, name: str) -> tuple[Path | None, str]:
    """The config ``--config-path``/``--config-name`` name, searched where Hydra would find it:
    beside the script, then beside the entry module (``verl/trainer/config``, a recipe's
    ``config``) in the checkout; (None, why) when it is not inside the config's tree."""
    file = f"{name.removesuffix('.yaml')}.yaml"
    if config_path and shell.UNSET in config_path:
        # "$PROJECT_DIR/examples/x/config": the part after the environment's folder, from the checkout
        tail = config_path.rpartition("\x00")[2].lstrip("/")
        config_path = tail if tail and shell.UNSET not in tail else None
    folders = [config_path] if config_path else []
    if module and "." in module and not module.endswith(".py"):
        package = module.rsplit(".", 1)[0].replace(".", "/")
        folders += [f"{package}/{config_path or 'config'}", f"{package.removeprefix('recipe/')}/{config_path or 'config'}"]
    folders.append(".")
    for folder in folders:
        try:
            found = named_file(f"{folder}/{file}", script, "--config-path", "--config-path")
        except InputError:
            return None, f"--config-path {config_path} lies outside the config's tree, so it was not read"
        if found is not None:
            return found, ""
    return None, f"{file} is not in the checkout"


def _script(path: Path, knobs: Knobs, skipped: list[str], notes: list[str]) -> str:
    """One launch script: the config it names (found, or verl's bundled defaults), then its
    ``key=value`` overrides; returns the entry module."""
    script = shell.read(path)
    found = [(m, a) for m, a in map(shell.python_module, script.commands)
             if m and ("verl" in m or "main_ppo" in m or "recipe" in m or "main_dapo" in m)]
    if not found:
        raise InputError("the script runs no verl entry point", file=path,
                         allowed="a script running python3 -m verl.trainer.main_ppo key=value ... "
                         "(or a recipe's main), or a verl YAML config")
    module, args = found[-1]
    if module.rsplit(".", 1)[-1] in NOT_RL:
        raise InputError(f"the script runs verl's {module}, not an RL trainer: no step for the twin to simulate",
                         file=path, allowed="a script running verl.trainer.main_ppo (or a recipe's RL entry point)")
    config_path, config_name, overrides = None, None, []
    i = 0
    while i < len(args):
        arg = args[i]
        m = re.fullmatch(r"--config[-_](path|name)(?:=(.*))?", arg)
        if m:
            value = m.group(2) if m.group(2) is not None else (args[i + 1] if i + 1 < len(args) else "")
            i += 1 if m.group(2) is not None else 2
            config_path, config_name = (value, config_name) if m.group(1) == "path" else (config_path, value)
            continue
        if arg.startswith("~"):
            overrides.append((arg[1:].partition("=")[0], None))
        elif "=" in arg and not arg.startswith("-"):
            key, _, value = arg.lstrip("+").partition("=")
            overrides.append((key.strip(), value))
        i += 1
    if config_name and shell.UNSET not in config_name:
        _named_config(path, module, config_path, config_name.strip("'\""), knobs, skipped, notes)
    for key, value in overrides:
        knobs.drop(key)
        if value is not None:
            knobs.put(key, scalar(value) if shell.UNSET not in value else value, path)
    return module


def _named_config(path: Path, module: str, config_path: str | None, name: str, knobs: Knobs,
                  skipped: list[str], notes: list[str]) -> None:
    base = name.removesuffix(".yaml").removeprefix("_generated_")
    cfg, why = (None, "") if base in BASES else _config_file(path, module, config_path, name)
    if cfg is not None:
        composed = compose.hydra(cfg, BUILTIN, skipped)
        if any("megatron" in s for s in skipped):
            _put_bundled(knobs, "ppo_megatron_trainer")
        knobs.put_tree(composed, cfg)
        return
    fallback = base if base in BASES else ("ppo_megatron_trainer" if "megatron" in base else "ppo_trainer")
    origin = _put_bundled(knobs, fallback)
    if base not in BASES:
        notes.append(f"--config-name {name}: {why}; verl's {fallback} defaults stand for it ({origin})")


def _put_bundled(knobs: Knobs, name: str) -> str:
    values, origin = bundled(name)
    for key, value in values.items():
        knobs.put(key, value, f"verl's {name} defaults", default=True)
    return origin


def read(paths: list[Path]) -> tuple[Knobs, str | None, list[str], list[str]]:
    """The knobs of verl's own defaults, then YAML configs (composed, in order), then the
    scripts' configs and overrides; the entry module the script runs; builtin configs left
    out; notes on what stood in for a config that was not there."""
    knobs, module, skipped, notes = Knobs(), None, [], []
    _put_bundled(knobs, "ppo_trainer")
    for path in paths:
        if path.suffix in (".yaml", ".yml"):
            composed = compose.hydra(path, BUILTIN, skipped)
            if any("megatron" in s for s in skipped):
                _put_bundled(knobs, "ppo_megatron_trainer")
            knobs.put_tree(composed, path)
    for path in paths:
        if path.suffix not in (".yaml", ".yml"):
            module = _script(path, knobs, skipped, notes)
    return knobs, module, skipped, notes


def run(paths: list[Path], model_given: bool) -> Imported:
    knobs, module, skipped, notes = read(paths)
    k, b = knobs, Builder(knobs)
    b.notes.extend(notes)
    b.set("framework", "verl")  # the stack's profile: framework_profiles/verl.yaml
    b.set("model", resolve_model(k, f"{ARR}.model.path", model_given, [p.parent for p in paths], b),
          f"{ARR}.model.path")
    fully_async = deployment(k, b, module)
    max_prompt, max_response = algorithm(k, b, fully_async)
    rollout(k, b)
    strategy = trainer(k, b, max_prompt, max_response)
    trainer_fsdp_knobs(k, b, strategy)
    if skipped:
        b.note("verl's own defaults stand for " + ", ".join(sorted(set(skipped))))
    return Imported("verl", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def deployment(k: Knobs, b: Builder, module: str | None) -> bool:
    """Nodes, pools and the async recipes' knobs; whether the run is the fully-async trainer."""
    fully_async = (module is not None and "fully_async" in module) or any(x.startswith("async_training.") for x in k.keys())
    one_step_off = module is not None and "one_step_off" in module
    nnodes = k.int_("trainer.nnodes", 1)
    per_node = k.int_("trainer.n_gpus_per_node", 8)
    if not (fully_async or one_step_off):
        b.set("cluster.gpus_per_node", per_node, "trainer.n_gpus_per_node")
        b.set("cluster.nodes", nnodes, "trainer.nnodes")
        b.set("placement.mode", "colocated")
        return False
    # Separate pools: trainer.* sizes the trainer's, rollout.* the rollout's (verl's
    # fully-async and one-step-off recipes); a node may hold both (6 + 2 GPUs).
    r_nodes = k.int_("rollout.nnodes", 1)
    r_per_node = k.int_("rollout.n_gpus_per_node", per_node)
    trainer_gpus, rollout_gpus = nnodes * per_node, r_nodes * r_per_node
    if r_nodes == nnodes and per_node + r_per_node <= 16 and r_per_node != per_node:
        node_gpus, nodes = per_node + r_per_node, nnodes  # both pools on the same nodes
        b.note(f"each node holds {per_node} trainer and {r_per_node} rollout GPUs (trainer.n_gpus_per_node + "
               "rollout.n_gpus_per_node on trainer.nnodes = rollout.nnodes nodes)")
    else:
        node_gpus, nodes = max(per_node, r_per_node), nnodes + r_nodes
    b.set("cluster.gpus_per_node", node_gpus, "trainer.n_gpus_per_node", "rollout.n_gpus_per_node")
    b.set("cluster.nodes", nodes, "trainer.nnodes", "rollout.nnodes")
    b.set("placement.mode", "async" if fully_async else "disaggregated")
    b.set("placement.rollout.gpus", rollout_gpus, "rollout.n_gpus_per_node", "rollout.nnodes")
    b.set("placement.trainer.gpus", trainer_gpus, "trainer.n_gpus_per_node", "trainer.nnodes")
    if fully_async:
        _fully_async(k, b)
    else:
        b.set("algorithm.staleness", 1)
        b.note("verl's one-step-off-policy recipe: separate pools, rollouts one policy version stale")
    return fully_async


def _fully_async(k: Knobs, b: Builder) -> None:
    # A fraction of a sync period's batch that may be generated ahead: the twin's staleness
    # quota is the same rule (twin.sim.producer).
    threshold = k.float_("async_training.staleness_threshold", 1.0, high=1024)
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


def algorithm(k: Knobs, b: Builder, fully_async: bool) -> tuple[int, int]:
    """The estimator, filtering, batch shape and lengths; (max prompt, max response)."""
    estimator = k.choice("algorithm.adv_estimator", ESTIMATORS, "ppo")  # verl's default: gae
    dapo = k.bool_("algorithm.filter_groups.enable", False)
    b.set("algorithm.name", "dapo" if dapo and estimator == "grpo" else estimator, "algorithm.adv_estimator")
    if dapo:
        rounds = k.int_("algorithm.filter_groups.max_num_gen_batches", None, low=0)
        b.set("algorithm.dynamic_sampling", {"enabled": True, **({"max_rounds": rounds} if rounds else {})},
              "algorithm.filter_groups.enable")
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
    b.set("algorithm.responses_per_prompt", k.int_(f"{ARR}.rollout.n", 1), f"{ARR}.rollout.n")
    if batch and mini:
        if batch % mini:
            raise InputError("the mini-batch must divide the batch: the twin runs whole mini-batches",
                             file=k.file(f"{ARR}.actor.ppo_mini_batch_size"), field=f"{ARR}.actor.ppo_mini_batch_size",
                             value=mini, allowed=f"a divisor of data.train_batch_size={batch}")
        b.set("algorithm.minibatches", batch // mini, f"{ARR}.actor.ppo_mini_batch_size")
    b.set("algorithm.ppo_epochs", k.int_(f"{ARR}.actor.ppo_epochs", None), f"{ARR}.actor.ppo_epochs")
    if k.bool_("algorithm.rollout_correction.bypass_mode", False):  # the rollout's log-probs stand as the old ones
        b.set("algorithm.old_logprob", False, "algorithm.rollout_correction.bypass_mode")
    max_prompt = k.int_("data.max_prompt_length", 512)
    max_response = k.int_("data.max_response_length", 512)
    k.mark(f"{ARR}.rollout.prompt_length", f"{ARR}.rollout.response_length")
    workload(b, max_prompt, max_response, ("data.max_prompt_length",), ("data.max_response_length",))
    return max_prompt, max_response


def rollout(k: Knobs, b: Builder) -> None:
    """The rollout engine: its kind, tp, memory share, batch limits and CUDA graphs."""
    R = f"{ARR}.rollout"
    engine = k.choice(f"{R}.name", ENGINES, "continuous")
    b.set("placement.rollout.engine", engine, f"{R}.name")
    b.set("placement.rollout.tp", k.int_(f"{R}.tensor_model_parallel_size", 2), f"{R}.tensor_model_parallel_size")
    b.set("placement.rollout.gpu_memory_utilization", k.float_(f"{R}.gpu_memory_utilization", 0.5, high=1.0),
          f"{R}.gpu_memory_utilization")
    b.set("placement.rollout.max_num_seqs", k.int_(f"{R}.max_num_seqs", 256), f"{R}.max_num_seqs")
    b.set("placement.rollout.max_num_batched_tokens", k.int_(f"{R}.max_num_batched_tokens", 8192),
          f"{R}.max_num_batched_tokens")
    if k.bool_(f"{R}.enforce_eager", False):
        b.set("placement.rollout.enforce_eager", True, f"{R}.enforce_eager")
    if engine == "continuous":
        b.set("placement.rollout.scheduling", "synchronous")
        b.note("the rollout engine schedules synchronously (verl's vLLM V1 of 2025, docs/validation.md A)")
    b.blame("placement.rollout.gpus", f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes")


def trainer(k: Knobs, b: Builder, max_prompt: int, max_response: int) -> str:
    """The actor's engine (FSDP or Megatron), its parallelism, offload, recompute and
    micro-batches; returns the strategy."""
    A = f"{ARR}.actor"
    engine = k.str_("model_engine", None)  # verl 0.7+: the new engine workers' switch
    strategy = engine if engine in ("megatron", "fsdp", "fsdp2") else k.str_(f"{A}.strategy", "fsdp")
    if strategy in ("fsdp", "fsdp2"):
        b.set("placement.trainer.zero_stage", 3, f"{A}.strategy")
        b.set("placement.trainer.offload_params", k.bool_(f"{A}.fsdp_config.param_offload", False),
              f"{A}.fsdp_config.param_offload")
        b.set("placement.trainer.offload_optimizer", k.bool_(f"{A}.fsdp_config.optimizer_offload", False),
              f"{A}.fsdp_config.optimizer_offload")
        b.set("placement.trainer.recompute", k.bool_(f"{ARR}.model.enable_gradient_checkpointing", True),
              f"{ARR}.model.enable_gradient_checkpointing")
    elif strategy == "megatron":
        megatron(k, b)
    else:
        raise InputError("unknown actor strategy", file=k.file(f"{A}.strategy"), field=f"{A}.strategy",
                         value=strategy, allowed="fsdp, fsdp2, megatron")
    b.set("placement.trainer.sp", k.int_(f"{A}.ulysses_sequence_parallel_size", 1), f"{A}.ulysses_sequence_parallel_size")
    if k.bool_(f"{A}.use_dynamic_bsz", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_(f"{A}.ppo_max_token_len_per_gpu", 16384),
              f"{A}.ppo_max_token_len_per_gpu", f"{A}.use_dynamic_bsz")
        b.note("use_dynamic_bsz: micro-batches packed to ppo_max_token_len_per_gpu tokens per GPU")
    else:
        k.mark(f"{A}.ppo_max_token_len_per_gpu")
        micro = k.int_(f"{A}.ppo_micro_batch_size_per_gpu", None)
        if micro:
            b.set("placement.trainer.micro_batch_tokens", micro * (max_prompt + max_response),
                  f"{A}.ppo_micro_batch_size_per_gpu")
            b.note("without use_dynamic_bsz a micro-batch is ppo_micro_batch_size_per_gpu sequences of up to "
                   "max_prompt_length + max_response_length tokens")
    b.blame("placement.trainer.gpus", f"{A}.ulysses_sequence_parallel_size", f"{A}.megatron.tensor_model_parallel_size",
            f"{A}.megatron.pipeline_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes")
    return strategy


def megatron(k: Knobs, b: Builder) -> None:
    """verl's Megatron actor (actor.megatron.*): parallelism, offload (grads go with the
    params), recompute from override_transformer_config."""
    M = f"{ARR}.actor.megatron"
    for field, key in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
                       ("ep", "expert_model_parallel_size"), ("cp", "context_parallel_size")):
        b.set(f"placement.trainer.{field}", k.int_(f"{M}.{key}", 1), f"{M}.{key}")
    vpp = k.int_(f"{M}.virtual_pipeline_model_parallel_size", None)
    if vpp and vpp > 1:
        b.note(f"virtual pipeline stages ({vpp} per rank) are not modelled: 1F1B's bubble is priced without them")
    etp = k.int_(f"{M}.expert_tensor_parallel_size", None)
    if etp and etp > 1:
        b.note(f"expert_tensor_parallel_size {etp}: experts are priced untensor-split (Megatron's MoE folding)")
    b.set("placement.trainer.zero_stage", 1, f"{ARR}.actor.strategy")
    b.set("placement.trainer.kernels", "fused", f"{ARR}.actor.strategy")
    params = k.bool_(f"{M}.param_offload", False)
    grads = k.bool_(f"{M}.grad_offload", False)
    b.set("placement.trainer.offload_params", params or grads, f"{M}.param_offload", f"{M}.grad_offload")
    b.set("placement.trainer.offload_optimizer", k.bool_(f"{M}.optimizer_offload", False), f"{M}.optimizer_offload")
    T = f"{M}.override_transformer_config"
    granularity = k.str_(f"{T}.recompute_granularity", None)
    k.mark(f"{T}.recompute_method", f"{T}.recompute_num_layers", f"{T}.recompute_modules")
    if granularity is not None:
        b.set("placement.trainer.recompute", granularity in ("full", "selective"), f"{T}.recompute_granularity")
    else:
        b.set("placement.trainer.recompute", k.bool_(f"{ARR}.model.enable_gradient_checkpointing", True),
              f"{ARR}.model.enable_gradient_checkpointing")


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
