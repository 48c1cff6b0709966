"""slime (THUDM): a run script passing Megatron, SGLang and slime arguments to ``train.py``
(``train_async.py`` for its asynchronous trainer), usually through ``ray job submit ... --
python3 train.py ${MODEL_ARGS[@]} ${ROLLOUT_ARGS[@]} ...`` with the arguments kept in arrays.

Argument names and defaults are slime's (slime/utils/arguments.py, 2026): ``--colocate``
shares the actor's GPUs with the SGLang engines (and offloads between the phases), otherwise
``--rollout-num-gpus`` are the engines' own; ``--rollout-batch-size`` prompts of
``--n-samples-per-prompt`` samples make a rollout, trained in ``--global-batch-size`` samples
per optimizer step.
"""

from __future__ import annotations

from pathlib import Path

from twin.errors import InputError
from twin.importers import shell
from twin.importers.base import Builder, Imported, Importer, Knobs, ceil_div, resolve_model, scalar, workload

VERSION = "0.2 (slime/utils/arguments.py argument names and defaults, 2026)"
ESTIMATORS = {"grpo": "grpo", "gspo": "grpo", "reinforce_plus_plus": "grpo", "reinforce_plus_plus_baseline": "grpo",
              "ppo": "ppo"}


def read(paths: list[Path]) -> tuple[Knobs, str]:
    """The arguments of the script's (last) ``train*.py`` command; the entry script."""
    knobs, entry = Knobs(), ""
    for path in paths:
        script = shell.read(path)
        found = [(m, a) for m, a in map(shell.python_module, script.commands)
                 if m and m.rsplit("/", 1)[-1].startswith("train") and m.endswith(".py")]
        if not found:
            raise InputError("the script runs no slime entry point", file=path,
                             allowed="a script running python3 train.py (or train_async.py) --actor-num-nodes N ...")
        entry, args = found[-1]
        for key, value in shell.flags(args):
            knobs.drop(key)
            knobs.put(key, scalar(value) if isinstance(value, str) and shell.UNSET not in value else value, path)
    return knobs, entry


def run(paths: list[Path], model_given: bool) -> Imported:
    k, entry = read(paths)
    b = Builder(k)
    model_key = next((key for key in ("hf-checkpoint", "ref-load", "load") if key in k), "hf-checkpoint")
    b.set("model", resolve_model(k, model_key, model_given, [p.parent for p in paths], b), model_key)
    k.mark("ref-load", "load", "save")
    deployment(k, b, "async" in entry.rsplit("/", 1)[-1])
    algorithm(k, b)
    b.set("placement.rollout.engine", "continuous")
    b.set("placement.rollout.tp", k.int_("rollout-num-gpus-per-engine", 1), "rollout-num-gpus-per-engine")
    b.set("placement.rollout.gpu_memory_utilization", k.float_("sglang-mem-fraction-static", None, high=1.0),
          "sglang-mem-fraction-static")
    b.set("placement.rollout.max_num_seqs", k.int_("sglang-max-running-requests", None), "sglang-max-running-requests")
    trainer(k, b)
    return Imported("slime", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def deployment(k: Knobs, b: Builder, asynchronous: bool) -> None:
    nodes = k.int_("actor-num-nodes", 1)
    per_node = k.int_("actor-num-gpus-per-node", 8)
    trainer_gpus = nodes * per_node
    if k.bool_("colocate", False):
        b.set("cluster.nodes", nodes, "actor-num-nodes")
        b.set("cluster.gpus_per_node", per_node, "actor-num-gpus-per-node")
        b.set("placement.mode", "colocated", "colocate")
        b.set("placement.trainer.offload_params", True, "colocate")
        b.set("placement.trainer.offload_optimizer", True, "colocate")
        b.note("--colocate: slime offloads the actor's weights and optimizer while SGLang generates")
        return
    if k.bool_("debug-train-only", False):
        raise InputError("a --debug-train-only run (SFT, or training on saved rollouts) generates nothing: no RL "
                         "step for the twin to simulate", file=k.file("debug-train-only"), field="debug-train-only",
                         allowed="a run with rollouts (--colocate or --rollout-num-gpus N)")
    rollout_gpus = k.int_("rollout-num-gpus", None)
    if rollout_gpus is None:
        raise InputError("separate pools need the rollout's GPUs", field="rollout-num-gpus",
                         file=k.file("actor-num-nodes"), allowed="--rollout-num-gpus N, or --colocate")
    b.set("cluster.gpus_per_node", per_node, "actor-num-gpus-per-node")
    b.set("cluster.nodes", nodes + ceil_div(rollout_gpus, per_node), "actor-num-nodes", "rollout-num-gpus")
    b.set("placement.trainer.gpus", trainer_gpus, "actor-num-nodes", "actor-num-gpus-per-node")
    b.set("placement.rollout.gpus", rollout_gpus, "rollout-num-gpus")
    b.set("placement.mode", "async" if asynchronous else "disaggregated", "rollout-num-gpus")
    if asynchronous:
        b.set("algorithm.staleness", 1)
        b.note("train_async.py generates the next rollout while the actor trains on this one (one version stale)")


def algorithm(k: Knobs, b: Builder) -> None:
    name = k.choice("advantage-estimator", ESTIMATORS, "grpo")
    dynamic = "dynamic-sampling-filter-path" in k
    b.set("algorithm.name", "dapo" if dynamic and name == "grpo" else name, "advantage-estimator")
    if dynamic:
        k.mark("dynamic-sampling-filter-path", "over-sampling-batch-size")
        b.set("algorithm.dynamic_sampling", {"enabled": True}, "dynamic-sampling-filter-path")
        b.note("dynamic sampling's share of all-correct/all-wrong groups is unknown to the config: 0")
    prompts = k.int_("rollout-batch-size", None)
    if prompts is None:
        raise InputError("the script gives no --rollout-batch-size", file=k.file("actor-num-nodes"),
                         field="rollout-batch-size", allowed="prompts per rollout (--rollout-batch-size N)")
    samples = k.int_("n-samples-per-prompt", 1)
    b.set("algorithm.prompts_per_step", prompts, "rollout-batch-size")
    b.set("algorithm.responses_per_prompt", samples, "n-samples-per-prompt")
    steps = k.int_("num-steps-per-rollout", None)
    global_batch = k.int_("global-batch-size", None)
    if steps:
        b.set("algorithm.minibatches", steps, "num-steps-per-rollout")
    elif global_batch:
        if (prompts * samples) % global_batch:
            raise InputError("a rollout must split into whole optimizer steps", file=k.file("global-batch-size"),
                             field="global-batch-size", value=global_batch,
                             allowed=f"a divisor of rollout-batch-size × n-samples-per-prompt = {prompts * samples}")
        b.set("algorithm.minibatches", prompts * samples // global_batch, "global-batch-size")
    b.set("algorithm.reference", k.bool_("use-kl-loss", False), "use-kl-loss")
    workload(b, k.int_("rollout-max-prompt-len", None), k.int_("rollout-max-response-len", 1024),
             ("rollout-max-prompt-len",), ("rollout-max-response-len",))


def trainer(k: Knobs, b: Builder) -> None:
    """Megatron: parallelism, recompute, dynamic batches."""
    for field, key in (("tp", "tensor-model-parallel-size"), ("pp", "pipeline-model-parallel-size"),
                       ("cp", "context-parallel-size"), ("ep", "expert-model-parallel-size")):
        b.set(f"placement.trainer.{field}", k.int_(key, 1), key)
    b.set("placement.trainer.zero_stage", 1)
    b.set("placement.trainer.kernels", "fused")
    b.set("placement.trainer.recompute", k.str_("recompute-granularity", None) in ("full", "selective"),
          "recompute-granularity")
    k.mark("recompute-method", "recompute-num-layers", "sequence-parallel", "expert-tensor-parallel-size")
    if k.bool_("use-dynamic-batch-size", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_("max-tokens-per-gpu", 16384), "max-tokens-per-gpu",
              "use-dynamic-batch-size")


IMPORTER = Importer("slime", "slime", VERSION,
                    "slime run scripts: python3 train.py (or train_async.py) with Megatron, SGLang and slime "
                    "arguments (--actor-num-nodes, --colocate or --rollout-num-gpus, --rollout-batch-size, ...)", run)
