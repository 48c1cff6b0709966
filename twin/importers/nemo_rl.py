"""NeMo-RL: a GRPO YAML config with ``defaults:`` inheritance (a base file, recursively)."""

from __future__ import annotations

from pathlib import Path

from twin.errors import InputError
from twin.importers import compose, shell
from twin.importers.base import Builder, Imported, Importer, Knobs, resolve_model, workload

VERSION = "0.3 (examples/configs/grpo_math_1B.yaml key names and defaults, 2025)"
BACKENDS = {"vllm": "continuous", "sglang": "continuous", "hf": "static"}


def read(paths: list[Path]) -> Knobs:
    knobs = Knobs()
    for path in paths:
        if path.suffix in (".yaml", ".yml"):
            knobs.put_tree(compose.inherit(path), path)
        else:  # a launch script: `uv run examples/run_grpo_math.py --config X.yaml key=value ...`
            script = shell.read(path)
            found = [(m, a) for m, a in map(shell.python_module, script.commands) if m and "grpo" in m]
            if not found:
                raise InputError("the script runs no NeMo-RL GRPO entry point", file=path,
                                 allowed="a script running examples/run_grpo_math.py (or another run_grpo*.py) "
                                 "with --config and key=value overrides, or a NeMo-RL YAML config")
            knobs.put_launch_args(found[-1][1], path, compose.inherit, "NeMo-RL")
    return knobs


def run(paths: list[Path], model_given: bool) -> Imported:
    k = read(paths)
    b = Builder(k)
    b.set("model", resolve_model(k, "policy.model_name", model_given, [p.parent for p in paths], b), "policy.model_name")
    k.mark("policy.tokenizer.name")
    colocated = deployment(k, b)
    total = algorithm(k, b)
    rollout(k, b)
    trainer(k, b, colocated, total)
    return Imported("nemo_rl", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def deployment(k: Knobs, b: Builder) -> bool:
    """Nodes, colocation or the generation's own GPUs, async GRPO, the refit; whether colocated."""
    nodes = k.int_("cluster.num_nodes", 1)
    per_node = k.int_("cluster.gpus_per_node", 8)
    b.set("cluster.nodes", nodes, "cluster.num_nodes")
    b.set("cluster.gpus_per_node", per_node, "cluster.gpus_per_node")
    colocated = k.bool_("policy.generation.colocated.enabled", True)
    async_grpo = k.bool_("grpo.async_grpo.enabled", False)
    if colocated:
        b.set("placement.mode", "colocated", "policy.generation.colocated.enabled")
        k.mark("policy.generation.colocated.resources.gpus_per_node", "policy.generation.colocated.resources.num_nodes")
    else:
        g_nodes = k.int_("policy.generation.colocated.resources.num_nodes", None)
        g_per_node = k.int_("policy.generation.colocated.resources.gpus_per_node", None)
        if g_per_node is None and g_nodes is None:
            raise InputError("a non-colocated generation needs its GPUs",
                             file=k.file("policy.generation.colocated.enabled"),
                             field="policy.generation.colocated.resources.gpus_per_node",
                             allowed="policy.generation.colocated.resources.gpus_per_node (and num_nodes)")
        gpus = (g_nodes or 1) * (g_per_node or per_node)
        b.set("placement.rollout.gpus", gpus, "policy.generation.colocated.resources.gpus_per_node",
              "policy.generation.colocated.resources.num_nodes")
        b.set("placement.mode", "async" if async_grpo else "disaggregated", "policy.generation.colocated.enabled")
    if async_grpo:
        b.set("algorithm.staleness", k.int_("grpo.async_grpo.max_trajectory_age_steps", 1, low=0),
              "grpo.async_grpo.max_trajectory_age_steps")
        b.set("algorithm.partial_rollout", k.bool_("grpo.async_grpo.in_flight_weight_updates", False),
              "grpo.async_grpo.in_flight_weight_updates")
    else:
        k.mark("grpo.async_grpo.max_trajectory_age_steps", "grpo.async_grpo.in_flight_weight_updates")
    # NeMo-RL's refit: CUDA IPC between the colocated workers; between separate pools each
    # trainer shard goes straight to the generation workers that hold it, over NCCL.
    if not colocated:  # colocated: auto is already the twin's reshard (CUDA IPC)
        b.set("weight_sync.method", "nccl_reshard", "policy.generation.colocated.enabled")
    return colocated


def algorithm(k: Knobs, b: Builder) -> int:
    """The batch shape, KL, dynamic sampling and lengths; the total sequence length."""
    prompts = k.int_("grpo.num_prompts_per_step", 32)
    gens = k.int_("grpo.num_generations_per_prompt", 16)
    gbs = k.int_("policy.train_global_batch_size", 512)
    b.set("algorithm.name", "grpo")
    b.set("algorithm.prompts_per_step", prompts, "grpo.num_prompts_per_step")
    b.set("algorithm.responses_per_prompt", gens, "grpo.num_generations_per_prompt")
    if (prompts * gens) % gbs:
        raise InputError("the training batch must divide the samples of a step: the twin runs whole batches",
                         file=k.file("policy.train_global_batch_size"), field="policy.train_global_batch_size",
                         value=gbs, allowed=f"a divisor of num_prompts_per_step × num_generations_per_prompt = {prompts * gens}")
    b.set("algorithm.minibatches", prompts * gens // gbs, "policy.train_global_batch_size")
    penalty = k.float_("loss_fn.reference_policy_kl_penalty", 0.01)
    b.set("algorithm.reference", penalty > 0, "loss_fn.reference_policy_kl_penalty")
    if k.bool_("grpo.use_dynamic_sampling", False):
        b.set("algorithm.dynamic_sampling", {"enabled": True}, "grpo.use_dynamic_sampling")
        b.note("dynamic sampling's share of all-correct/all-wrong groups is unknown to the config: 0")

    # ------------------------------------------------------------ workload
    total = k.int_("policy.max_total_sequence_length", 512)
    prompt_max = k.int_("data.max_input_seq_length", total)
    new_tokens = k.int_("policy.generation.max_new_tokens", total)
    k.mark("policy.generation.vllm_cfg.max_model_len")
    prompt = min(141, prompt_max)
    workload(b, prompt_max, max(1, min(new_tokens, total - prompt)),
             ("data.max_input_seq_length",), ("policy.max_total_sequence_length", "policy.generation.max_new_tokens"))
    return total


def rollout(k: Knobs, b: Builder) -> None:
    G = "policy.generation"
    b.set("placement.rollout.engine", k.choice(f"{G}.backend", BACKENDS, "continuous"), f"{G}.backend")
    b.set("placement.rollout.tp", k.int_(f"{G}.vllm_cfg.tensor_parallel_size", 1), f"{G}.vllm_cfg.tensor_parallel_size")
    if k.int_(f"{G}.vllm_cfg.pipeline_parallel_size", 1) > 1:
        b.set("placement.rollout.pp", k.int_(f"{G}.vllm_cfg.pipeline_parallel_size", 1), f"{G}.vllm_cfg.pipeline_parallel_size")
    b.set("placement.rollout.gpu_memory_utilization", k.float_(f"{G}.vllm_cfg.gpu_memory_utilization", 0.6, high=1.0),
          f"{G}.vllm_cfg.gpu_memory_utilization")
    b.set("placement.rollout.scheduling", "synchronous")
    b.note("the rollout engine schedules synchronously (NeMo-RL's vLLM V1 of 2025, docs/validation.md B)")

    b.blame("placement.rollout.gpus", f"{G}.vllm_cfg.tensor_parallel_size", "cluster.gpus_per_node", "cluster.num_nodes")


def trainer(k: Knobs, b: Builder, colocated: bool, total: int) -> None:
    """Megatron or DTensor: parallelism, recompute, offload, micro-batches."""
    P = "policy"
    if k.bool_(f"{P}.megatron_cfg.enabled", False):
        M = f"{P}.megatron_cfg"
        b.set("framework", "nemo-rl-megatron")  # the stack's profile: framework_profiles/nemo-rl-megatron.yaml
        b.set("placement.trainer.kernels", "fused", f"{M}.enabled")
        b.set("placement.trainer.zero_stage", 1, f"{M}.enabled")
        b.set("placement.trainer.tp", k.int_(f"{M}.tensor_model_parallel_size", 1), f"{M}.tensor_model_parallel_size")
        b.set("placement.trainer.pp", k.int_(f"{M}.pipeline_model_parallel_size", 1), f"{M}.pipeline_model_parallel_size")
        for ours, theirs in (("cp", "context_parallel_size"), ("ep", "expert_model_parallel_size")):
            if k.int_(f"{M}.{theirs}", 1) > 1:  # ring attention; experts not tensor-split (etp 1)
                b.set(f"placement.trainer.{ours}", k.int_(f"{M}.{theirs}", 1), f"{M}.{theirs}")
        b.set("placement.trainer.recompute", k.bool_(f"{M}.activation_checkpointing", False), f"{M}.activation_checkpointing")
        k.mark(f"{P}.dtensor_cfg.enabled")
        if colocated:
            b.set("placement.trainer.offload_params", True)
            b.set("placement.trainer.offload_optimizer", True)
            b.note("colocated: the trainer's weights and optimizer wait on the host while vLLM generates "
                   "(NeMo-RL offloads before refit)")
    else:
        D = f"{P}.dtensor_cfg"
        k.mark(f"{D}.enabled", f"{P}.megatron_cfg.enabled")
        b.set("placement.trainer.zero_stage", 3, f"{D}.enabled")
        b.set("placement.trainer.tp", k.int_(f"{D}.tensor_parallel_size", 1), f"{D}.tensor_parallel_size")
        _no_cp(k, f"{D}.context_parallel_size")
        b.set("placement.trainer.recompute", k.bool_(f"{D}.activation_checkpointing", False), f"{D}.activation_checkpointing")
        offload = k.bool_(f"{D}.cpu_offload", False)
        b.set("placement.trainer.offload_params", offload, f"{D}.cpu_offload")
        b.set("placement.trainer.offload_optimizer", offload, f"{D}.cpu_offload")
    if k.bool_(f"{P}.sequence_packing.enabled", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_(f"{P}.sequence_packing.train_mb_tokens", total),
              f"{P}.sequence_packing.train_mb_tokens")
    elif k.bool_(f"{P}.dynamic_batching.enabled", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_(f"{P}.dynamic_batching.train_mb_tokens", total),
              f"{P}.dynamic_batching.train_mb_tokens")
    else:
        micro = k.int_(f"{P}.train_micro_batch_size", 4)
        b.set("placement.trainer.micro_batch_tokens", micro * total, f"{P}.train_micro_batch_size")
    b.blame("placement.trainer.gpus", f"{P}.megatron_cfg.tensor_model_parallel_size",
            f"{P}.megatron_cfg.pipeline_model_parallel_size", f"{P}.dtensor_cfg.tensor_parallel_size",
            "cluster.gpus_per_node", "cluster.num_nodes")


def _no_cp(k: Knobs, key: str) -> None:
    cp = k.int_(key, 1)
    if cp > 1:
        raise InputError("context parallelism is not modelled", file=k.file(key), field=key, value=cp,
                         allowed="1 (the twin models tensor, pipeline and Ulysses sequence parallelism)")


IMPORTER = Importer("nemo_rl", "NeMo-RL", VERSION,
                    "NeMo-RL GRPO YAML configs (defaults: inheritance), or a script running "
                    "examples/run_grpo_math.py --config X.yaml key=value ...", run)
