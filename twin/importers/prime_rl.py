"""prime-rl (PrimeIntellect): an ``rl`` TOML config (``uv run rl @ rl.toml``) with its
``[deployment]``, ``[trainer]``, ``[orchestrator]`` and ``[inference]`` sections; a trainer,
orchestrator or inference TOML of a split launch reads as its section.

Key names and defaults are prime-rl's configs package (packages/prime-rl-configs/src/prime_rl/
configs: rl.py, orchestrator.py, inference.py, trainer.py, 2026). prime-rl always runs its
pools apart and asynchronously: the orchestrator keeps generating while the trainer steps, and
drops rollouts more than ``max_off_policy_steps`` versions old.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from twin.config.io import MAX_FILE_BYTES
from twin.errors import InputError
from twin.importers.base import Builder, Imported, Importer, Knobs, resolve_model, workload

VERSION = "0.5 (prime-rl-configs rl/orchestrator/inference/trainer key names and defaults, 2026)"
SECTIONS = {"orch": "orchestrator", "orchestrator": "orchestrator", "train": "trainer", "trainer": "trainer",
            "infer": "inference", "inference": "inference"}


def read_toml(path: Path) -> dict:
    """A TOML file as a mapping (at most MAX_FILE_BYTES, as YAML inputs)."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise InputError("file too large to be an input", file=path, allowed=f"at most {MAX_FILE_BYTES // 2**20} MiB")
        return tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=path) from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise InputError(f"malformed TOML: {str(exc).splitlines()[0] if str(exc) else 'nested too deep'}",
                         file=path) from None


def read(paths: list[Path]) -> Knobs:
    knobs = Knobs()
    for path in paths:
        if path.suffix != ".toml":
            raise InputError("prime-rl configs are TOML files", file=path, allowed="an rl.toml (or train/orch/infer.toml)")
        data = read_toml(path)
        section = SECTIONS.get(path.stem.split("_")[0].split("-")[0])
        if section and not ({"trainer", "orchestrator", "inference", "deployment"} & set(data)):
            data = {section: data}  # a split launch's file holds one section's keys
        knobs.put_tree(data, path)
    return knobs


def run(paths: list[Path], model_given: bool) -> Imported:
    k = read(paths)
    b = Builder(k)
    model_key = k.first("model.name", "orchestrator.model.name", "trainer.model.name", "inference.model.name")
    b.set("model", resolve_model(k, model_key, model_given, [p.parent for p in paths], b), model_key)
    k.mark("orchestrator.model.name", "trainer.model.name", "inference.model.name", "inference.vllm.model")
    deployment(k, b)
    algorithm(k, b)
    rollout(k, b)
    trainer(k, b)
    return Imported("prime_rl", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def deployment(k: Knobs, b: Builder) -> None:
    """[deployment]: one node split num_train_gpus + num_infer_gpus, or num_train_nodes +
    num_infer_nodes (× num_infer_replicas) whole nodes of gpus_per_node."""
    D = "deployment"
    per_node = k.int_(f"{D}.gpus_per_node", 8)
    if f"{D}.num_train_nodes" in k:
        train_nodes = k.int_(f"{D}.num_train_nodes", 1)
        infer_nodes = k.int_(f"{D}.num_infer_nodes", 1, low=0) * k.int_(f"{D}.num_infer_replicas", 1)
        if infer_nodes == 0:
            raise InputError("a run without inference nodes trains on fake data: nothing to simulate",
                             file=k.file(f"{D}.num_infer_nodes"), field=f"{D}.num_infer_nodes", value=0,
                             allowed="at least 1")
        b.set("cluster.nodes", train_nodes + infer_nodes, f"{D}.num_train_nodes", f"{D}.num_infer_nodes")
        trainer_gpus, rollout_gpus = train_nodes * per_node, infer_nodes * per_node
    else:
        trainer_gpus = k.int_(f"{D}.num_train_gpus", 1)
        rollout_gpus = k.int_(f"{D}.num_infer_gpus", 1)
        b.set("cluster.nodes", 1)
        if trainer_gpus + rollout_gpus > per_node:
            raise InputError("the single-node deployment needs more GPUs than the node has",
                             file=k.file(f"{D}.num_train_gpus"), field=f"{D}.num_train_gpus",
                             value=trainer_gpus, allowed=f"num_train_gpus + num_infer_gpus <= gpus_per_node ({per_node})")
    b.set("cluster.gpus_per_node", per_node, f"{D}.gpus_per_node")
    b.set("placement.mode", "async")
    b.set("placement.trainer.gpus", trainer_gpus, f"{D}.num_train_gpus", f"{D}.num_train_nodes")
    b.set("placement.rollout.gpus", rollout_gpus, f"{D}.num_infer_gpus", f"{D}.num_infer_nodes")
    k.mark(f"{D}.nodes_per_fsdp_group")


def algorithm(k: Knobs, b: Builder) -> None:
    """[orchestrator]: batch_size samples per step in groups of group_size; staleness bounded
    by max_off_policy_steps; lengths from seq_len and max_completion_tokens."""
    O = "orchestrator"
    b.set("algorithm.name", "grpo")
    group_key = k.first(f"{O}.group_size", f"{O}.rollouts_per_example")
    group = k.int_(group_key, 1)
    batch = k.int_(f"{O}.batch_size", None)
    if batch is None:
        if f"{O}.token_batch_size" in k:
            raise InputError("token-based batches are not read: the twin counts prompts per step",
                             file=k.file(f"{O}.token_batch_size"), field=f"{O}.token_batch_size",
                             allowed="orchestrator.batch_size (samples per step)")
        raise InputError("the config gives no orchestrator.batch_size", file=b.knobs.file(group_key),
                         field=f"{O}.batch_size", allowed="samples per step, a multiple of group_size")
    if batch % group:
        raise InputError("a step must hold whole groups", file=k.file(f"{O}.batch_size"), field=f"{O}.batch_size",
                         value=batch, allowed=f"a multiple of {group_key}={group}")
    b.set("algorithm.prompts_per_step", batch // group, f"{O}.batch_size")
    b.set("algorithm.responses_per_prompt", group, group_key)
    staleness = k.int_(f"{O}.max_off_policy_steps", 8, low=0)
    b.set("algorithm.staleness", max(1, min(staleness, 1024)), f"{O}.max_off_policy_steps")
    b.set("algorithm.partial_rollout", True, f"{O}.max_off_policy_steps")
    b.note("prime-rl generates while it trains and a rollout may span weight updates: rollouts at most "
           "max_off_policy_steps versions old (8 by default)")
    seq_key = k.first(f"{O}.seq_len", "seq_len", "trainer.model.seq_len")
    seq_len = k.int_(seq_key, 2048)
    k.mark("seq_len", "trainer.model.seq_len", f"{O}.seq_len")
    new_key = k.first(f"{O}.train.sampling.max_completion_tokens", f"{O}.sampling.max_completion_tokens",
                     f"{O}.sampling.max_tokens")
    new = k.int_(new_key, None)
    if new:
        response = min(new, seq_len)
        prompt = seq_len - response if seq_len > response else None
    else:  # no completion cap: a sample (the twin's 141-token prompt and its response) fills seq_len
        response, prompt = max(seq_len - 141, 1), None
        b.note("no max_completion_tokens: responses are capped at seq_len less the assumed 141-token prompt")
    workload(b, prompt, response, (seq_key,), (new_key, seq_key))
    k.mark("max_steps", f"{O}.max_steps")


def rollout(k: Knobs, b: Builder) -> None:
    """[inference.vllm]: tp, memory share, CUDA graphs."""
    V = "inference.vllm"
    b.set("placement.rollout.engine", "continuous")
    tp_key = k.first(f"{V}.tensor_parallel_size", "inference.parallel.tp")
    b.set("placement.rollout.tp", k.int_(tp_key, 1), tp_key)
    b.set("placement.rollout.gpu_memory_utilization", k.float_(f"{V}.gpu_memory_utilization", 0.9, high=1.0),
          f"{V}.gpu_memory_utilization")
    if k.bool_(f"{V}.enforce_eager", False):
        b.set("placement.rollout.enforce_eager", True, f"{V}.enforce_eager")
    k.mark(f"{V}.data_parallel_size", f"{V}.max_model_len")


def trainer(k: Knobs, b: Builder) -> None:
    """[trainer.model]: FSDP2 with context parallelism, activation checkpointing."""
    M = "trainer.model"
    b.set("placement.trainer.zero_stage", 3)
    b.set("placement.trainer.cp", k.int_(f"{M}.cp", 1), f"{M}.cp")
    ac = k.raw(f"{M}.ac", "default") if f"{M}.ac" in k else "default"
    b.set("placement.trainer.recompute", ac is not None and ac is not False, f"{M}.ac")
    k.mark(f"{M}.ac.freq")
    if k.bool_(f"{M}.fsdp_cpu_offload", False):
        b.set("placement.trainer.offload_params", True, f"{M}.fsdp_cpu_offload")


IMPORTER = Importer("prime_rl", "prime-rl", VERSION,
                    "prime-rl TOML configs: rl.toml with [deployment], [trainer], [orchestrator], [inference] "
                    "(or a split launch's train/orch/infer.toml)", run)
