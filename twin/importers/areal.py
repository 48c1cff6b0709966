"""AReaL: an experiment YAML (and ``key=value`` overrides on its launch command) with an
``allocation_mode`` string placing the inference servers and the trainer on separate GPUs."""

from __future__ import annotations

import re
from pathlib import Path

from twin.errors import InputError
from twin.importers import compose, shell
from twin.importers.base import Builder, Imported, Importer, Knobs, ceil_div, resolve_model, workload

VERSION = "0.3 (AReaL-lite experiment config: allocation_mode, rollout, gconfig, actor, 2025)"
FORMS = ("<sglang|vllm>:d<N>[p1]t<N> + [fsdp:|megatron:]d<N>[p<N>]t<N>, or the older "
         "<sglang|vllm>.d<N>p<N>t<N>+d<N>p<N>t<N> (m for t); separate pools only")


def parse_allocation(text: str) -> dict:
    """``sglang:d4t2 + fsdp:d8`` / ``sglang.d4p1t2+d4p1t1`` → engine, rollout dims, trainer
    backend and dims. Other forms (colocated, MoE hybrid, context or expert parallel, a lone
    component) raise ValueError saying why."""
    s = re.sub(r"\s+", "", str(text))
    if "(" in s or "|" in s:
        raise ValueError("hybrid or '|' forms are not read")
    parts = s.split("+")
    if len(parts) != 2:
        raise ValueError("needs an inference part and a training part joined by '+'")
    m = re.fullmatch(r"(sglang|vllm)[:.]([a-z0-9]+)", parts[0])
    if not m:
        raise ValueError("the inference part must name sglang or vllm")
    engine = _dims(m.group(2))
    t = re.fullmatch(r"(?:(fsdp|megatron|archon):)?([a-z0-9]+)", parts[1])
    if not t:
        raise ValueError("the training part must be [fsdp:|megatron:]dims")
    train = _dims(t.group(2))
    backend = t.group(1) or ("megatron" if train["p"] > 1 else "fsdp")
    if engine["p"] > 1 or engine["c"] > 1 or engine["e"] > 1:
        raise ValueError("inference with pipeline, context or expert parallelism is not modelled")
    if train["c"] > 1 or train["e"] > 1:
        raise ValueError("training with context or expert parallelism is not modelled")
    return {"backend": m.group(1), "engine": engine, "trainer_backend": backend, "trainer": train}


def _dims(text: str) -> dict:
    dims = {"d": 1, "p": 1, "t": 1, "c": 1, "e": 1}
    if not re.fullmatch(r"([dptcme]\d+)+", text):
        raise ValueError(f"dimensions {text!r} are not letters d, p, t (or m), c, e each with a size")
    for letter, size in re.findall(r"([dptcme])(\d+)", text):
        dims["t" if letter == "m" else letter] = int(size)
    if min(dims.values()) < 1:
        raise ValueError("a size of 0")
    return dims


def read(paths: list[Path]) -> Knobs:
    knobs = Knobs()
    for path in paths:
        if path.suffix in (".yaml", ".yml"):
            knobs.put_tree(compose.hydra(path), path)
            continue
        script = shell.read(path)
        found = [a for m, a in map(shell.python_module, script.commands) if m and ("areal" in m or m.endswith(".py"))]
        if not found:
            raise InputError("the script runs no AReaL entry point", file=path,
                             allowed="a script running python3 -m areal.launcher.local train.py --config X.yaml key=value ...")
        knobs.put_launch_args(found[-1], path, compose.hydra, "AReaL")
    return knobs


def run(paths: list[Path], model_given: bool) -> Imported:
    k = read(paths)
    b = Builder(k)
    model_key = k.first("actor.path", "model_path")
    b.set("framework", "areal")  # the stack's profile: framework_profiles/areal.yaml
    b.set("model", resolve_model(k, model_key, model_given, [p.parent for p in paths], b), model_key)
    k.mark("ref.path", "tokenizer_path", "sglang.model_path", "vllm.model")

    alloc = allocation(k, b, paths[0])
    eta_key = k.first("rollout.max_head_offpolicyness", "max_head_offpolicyness")
    eta = k.int_(eta_key, 0, low=0)
    if eta > 0:
        b.set("placement.mode", "async", eta_key)
        b.set("algorithm.staleness", eta, eta_key)
        b.set("algorithm.partial_rollout", True, eta_key)
        b.note("AReaL interrupts generation for new weights (partial rollout)")
    else:
        b.set("placement.mode", "disaggregated", eta_key)
    k.mark("async_training")

    # ------------------------------------------------------------ algorithm
    b.set("algorithm.name", "grpo")
    batch_key = k.first("train_dataset.batch_size", "dataset.train_bs_n_seqs")
    n_key = k.first("gconfig.n_samples", "group_size")
    mb_key = k.first("actor.ppo_n_minibatches", "ppo.ppo_n_minibatches")
    b.set("algorithm.prompts_per_step", k.int_(batch_key, None), batch_key)
    b.set("algorithm.responses_per_prompt", k.int_(n_key, 1), n_key)
    b.set("algorithm.minibatches", k.int_(mb_key, 1), mb_key)
    kl = k.float_(k.first("actor.kl_ctl", "ppo.kl_ctl"), 0.0)
    b.set("algorithm.reference", kl > 0, "actor.kl_ctl", "ppo.kl_ctl")
    b.set("algorithm.old_logprob", k.bool_("actor.recompute_logprob", True), "actor.recompute_logprob")

    # ------------------------------------------------------------ workload
    new_key = k.first("gconfig.max_new_tokens", "ppo.gen.max_new_tokens")
    prompt_key = "train_dataset.max_length"
    workload(b, k.int_(prompt_key, None), k.int_(new_key, 16384), (prompt_key,), (new_key,))

    engines(k, b, alloc)
    b.set("placement.trainer.recompute", k.bool_("actor.gradient_checkpointing", True), "actor.gradient_checkpointing")
    tokens_key = k.first("actor.mb_spec.max_tokens_per_mb", "actor_train.mb_spec.max_tokens_per_mb")
    b.set("placement.trainer.micro_batch_tokens", k.int_(tokens_key, None), tokens_key)
    return Imported("areal", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def allocation(k: Knobs, b: Builder, first: Path) -> dict:
    """The pools from ``allocation_mode``, or from AReaL's current per-engine backends
    (``rollout.backend: "sglang:d4p1t1"``, ``actor.backend: "fsdp:d4p1t1"``)."""
    key = "allocation_mode"
    text = k.str_(key)
    if text is None and "rollout.backend" in k and "actor.backend" in k:
        key = "rollout.backend"
        text = f"{k.str_('rollout.backend')} + {k.str_('actor.backend')}"
    if text is None:
        raise InputError("the inputs give no allocation_mode (nor rollout.backend and actor.backend)", file=first,
                         field="allocation_mode", allowed=FORMS)
    try:
        alloc = parse_allocation(text)
    except ValueError as exc:
        raise InputError(f"an allocation mode the importer cannot read: {exc}", file=k.file(key), field=key,
                         value=text, allowed=FORMS) from None
    e, t = alloc["engine"], alloc["trainer"]
    rollout_gpus, trainer_gpus = e["d"] * e["t"], t["d"] * t["t"] * t["p"]
    nodes_key = k.first("cluster.n_nodes", "n_nodes")
    per_key = k.first("cluster.n_gpus_per_node", "n_gpus_per_node")
    per_node = k.int_(per_key, 8)
    nodes = k.int_(nodes_key, ceil_div(rollout_gpus + trainer_gpus, per_node))
    b.set("cluster.nodes", nodes, nodes_key, key)
    b.set("cluster.gpus_per_node", per_node, per_key)
    b.set("placement.rollout.gpus", rollout_gpus, key)
    b.set("placement.rollout.tp", e["t"], key)
    b.set("placement.trainer.gpus", trainer_gpus, key, "actor.backend")
    b.set("placement.trainer.tp", t["t"], key, "actor.backend")
    b.set("placement.trainer.pp", t["p"], key, "actor.backend")
    if alloc["trainer_backend"] == "megatron":
        b.set("placement.trainer.zero_stage", 1, key, "actor.backend")
        b.set("placement.trainer.kernels", "fused", key, "actor.backend")
    else:
        b.set("placement.trainer.zero_stage", 3, key, "actor.backend")
    k.mark("ref.backend", "critic.backend")
    return alloc


def engines(k: Knobs, b: Builder, alloc: dict) -> None:
    """The inference servers' memory share and batch limits; running sequences from the
    concurrent rollouts (each ``gconfig.n_samples`` sequences) spread over the servers."""
    engine = alloc["backend"]
    if engine == "sglang":
        b.set("placement.rollout.gpu_memory_utilization", k.float_("sglang.mem_fraction_static", None, high=1.0),
              "sglang.mem_fraction_static")
        b.set("placement.rollout.max_num_seqs", k.int_("sglang.max_running_requests", None), "sglang.max_running_requests")
        b.set("placement.rollout.max_num_batched_tokens", k.int_("sglang.chunked_prefill_size", None),
              "sglang.chunked_prefill_size")
    else:
        b.set("placement.rollout.gpu_memory_utilization", k.float_("vllm.gpu_memory_utilization", None, high=1.0),
              "vllm.gpu_memory_utilization")
        b.set("placement.rollout.max_num_seqs", k.int_("vllm.max_num_seqs", None), "vllm.max_num_seqs")
        b.set("placement.rollout.max_num_batched_tokens", k.int_("vllm.max_num_batched_tokens", None),
              "vllm.max_num_batched_tokens")
    concurrent_key = k.first("rollout.max_concurrent_rollouts", "max_concurrent_rollouts")
    concurrent = k.int_(concurrent_key, None)
    samples = b.get("algorithm.responses_per_prompt", 1)
    if concurrent and b.get("placement.rollout.max_num_seqs") is None:
        b.set("placement.rollout.max_num_seqs", max(1, ceil_div(concurrent * samples, alloc["engine"]["d"])),
              concurrent_key)
        b.note("max_concurrent_rollouts (each gconfig.n_samples sequences) is spread evenly over the inference "
               "servers as each one's running sequences")


IMPORTER = Importer("areal", "AReaL", VERSION,
                    "AReaL experiment YAML configs, or a launch script with --config X.yaml and key=value "
                    "overrides", run)
