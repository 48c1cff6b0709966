"""OpenRLHF: launch scripts running ``openrlhf.cli.train_ppo_ray`` with flat flags
(``--actor_num_gpus_per_node``) or the dotted spelling that replaced some of them
(``--actor.num_gpus_per_node``, ``--train.colocate_all``)."""

from __future__ import annotations

from pathlib import Path

from twin.errors import InputError
from twin.importers import shell
from twin.importers.base import Builder, Imported, Importer, Knobs, ceil_div, resolve_model, scalar, workload

VERSION = "0.8 (openrlhf.cli.train_ppo_ray flags, flat and dotted spellings)"
# The dotted spelling of each flat flag the twin reads: both name one knob.
DOTTED = {
    "actor_num_nodes": "actor.num_nodes",
    "actor_num_gpus_per_node": "actor.num_gpus_per_node",
    "vllm_num_engines": "vllm.num_engines",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "colocate_all_models": "train.colocate_all",
    "n_samples_per_prompt": "rollout.n_samples_per_prompt",
    "rollout_batch_size": "rollout.batch_size",
    "train_batch_size": "train.batch_size",
    "micro_train_batch_size": "train.micro_batch_size",
    "prompt_max_len": "data.prompt_max_len",
    "generate_max_len": "rollout.max_new_tokens",
    "pretrain": "actor.model_name_or_path",
    "zero_stage": "ds.zero_stage",
    "gradient_checkpointing": "actor.gradient_checkpointing_enable",
    "adam_offload": "ds.adam_offload",
    "advantage_estimator": "algo.advantage.estimator",
    "async_train": "train.async_enable",
    "async_queue_size": "train.async_queue_size",
    "partial_rollout": "train.partial_rollout_enable",
    "max_epochs": "train.max_epochs",
    "use_kl_loss": "algo.kl.use_loss",
    "init_kl_coef": "algo.kl.init_coef",
    "dynamic_filtering": "algo.dynamic_filtering_enable",
    "enforce_eager": "vllm.enforce_eager",
    "vllm_enable_sleep": "vllm.enable_sleep",
    "deepspeed_enable_sleep": "ds.enable_sleep",
    "ring_attn_size": "ds.ring_attn_size",
}
ESTIMATORS = {"gae": "ppo", "group_norm": "grpo", "reinforce": "grpo", "reinforce_baseline": "grpo",
              "rloo": "grpo", "dr_grpo": "grpo"}


class _Flags:
    """Knob access under either spelling: the flat name is the key the twin reads."""

    def __init__(self, knobs: Knobs) -> None:
        self.k = knobs

    def key(self, flat: str) -> str:
        dotted = DOTTED.get(flat)
        if dotted and dotted in self.k and flat not in self.k:
            return dotted
        return flat


def read(paths: list[Path]) -> Knobs:
    knobs = Knobs()
    for path in paths:
        script = shell.read(path)
        found = [a for m, a in map(shell.python_module, script.commands) if m and "openrlhf" in m and "ppo" in m]
        if not found:
            raise InputError("the script runs no OpenRLHF PPO entry point", file=path,
                             allowed="a script running python3 -m openrlhf.cli.train_ppo_ray --flag value ...")
        for key, value in shell.flags(found[-1]):
            knobs.drop(key)
            knobs.put(key, scalar(value) if isinstance(value, str) and shell.UNSET not in value else value, path)
    return knobs


def run(paths: list[Path], model_given: bool) -> Imported:
    k = read(paths)
    f = _Flags(k).key
    b = Builder(k)
    b.set("framework", "openrlhf")  # the stack's profile: framework_profiles/openrlhf.yaml
    b.set("model", resolve_model(k, f("pretrain"), model_given, [p.parent for p in paths], b), f("pretrain"))

    # ------------------------------------------------------------ deployment
    nodes = k.int_(f("actor_num_nodes"), 1)
    per_node = k.int_(f("actor_num_gpus_per_node"), 8)
    engines = k.int_(f("vllm_num_engines"), None)
    tp = k.int_(f("vllm_tensor_parallel_size"), 1)
    if engines is None:
        raise InputError("OpenRLHF without vLLM engines generates with the trainer's HF model, which the "
                         "importer does not read", file=paths[0], field="--vllm_num_engines",
                         allowed="--vllm_num_engines N (or --vllm.num_engines N)")
    colocate = k.bool_(f("colocate_all_models"), False)
    async_train = k.bool_(f("async_train"), False)
    trainer_gpus = nodes * per_node
    rollout_gpus = engines * tp
    b.set("cluster.gpus_per_node", per_node, f("actor_num_gpus_per_node"))
    b.set("placement.rollout.tp", tp, f("vllm_tensor_parallel_size"))
    if colocate:
        if rollout_gpus != trainer_gpus:
            raise InputError("colocated engines must cover the actor's GPUs exactly", file=k.file(f("vllm_num_engines")),
                             field=f("vllm_num_engines"), value=engines,
                             allowed=f"vllm_num_engines × vllm_tensor_parallel_size = {trainer_gpus} "
                             "(actor_num_nodes × actor_num_gpus_per_node)")
        b.set("cluster.nodes", nodes, f("actor_num_nodes"))
        b.set("placement.mode", "colocated", f("colocate_all_models"))
    else:
        b.set("cluster.nodes", ceil_div(trainer_gpus + rollout_gpus, per_node), f("actor_num_nodes"), f("vllm_num_engines"))
        b.set("placement.mode", "async" if async_train else "disaggregated", f("async_train"))
        b.set("placement.rollout.gpus", rollout_gpus, f("vllm_num_engines"), f("vllm_tensor_parallel_size"))
        b.set("placement.trainer.gpus", trainer_gpus, f("actor_num_nodes"), f("actor_num_gpus_per_node"))
    if async_train:
        b.set("algorithm.staleness", k.int_(f("async_queue_size"), 1), f("async_queue_size"))
        b.set("algorithm.partial_rollout", k.bool_(f("partial_rollout"), False), f("partial_rollout"))
        b.note("OpenRLHF's async queue of async_queue_size batches is read as that many policy versions of staleness")

    lengths = algorithm(k, b, f)
    trainer(k, b, f, colocate, lengths)
    return Imported("openrlhf", VERSION, [str(p) for p in paths], b.data, k.unused(), b.notes, b.provenance)


def algorithm(k: Knobs, b: Builder, f) -> tuple[int, int]:
    """The estimator (DAPO's dynamic filtering), the batch shape, KL, the lengths."""
    name = k.choice(f("advantage_estimator"), ESTIMATORS, "ppo")
    filtering = k.bool_(f("dynamic_filtering"), False)
    b.set("algorithm.name", "dapo" if filtering and name == "grpo" else name, f("advantage_estimator"),
          f("dynamic_filtering"))
    if filtering:
        b.set("algorithm.dynamic_sampling", {"enabled": True}, f("dynamic_filtering"))
        b.note("dynamic filtering's share of filtered groups is unknown to the flags: 0 "
               "(set algorithm.dynamic_sampling.zero_variance_fraction)")
        k.mark("algo.dynamic_filtering_range", "dynamic_filtering_reward_range")
    prompts = k.int_(f("rollout_batch_size"), 1024)
    n = k.int_(f("n_samples_per_prompt"), 1)
    train_batch = k.int_(f("train_batch_size"), 128)
    b.set("algorithm.prompts_per_step", prompts, f("rollout_batch_size"))
    b.set("algorithm.responses_per_prompt", n, f("n_samples_per_prompt"))
    if (prompts * n) % train_batch:
        raise InputError("the training batch must divide a rollout's samples: the twin runs whole batches",
                         file=k.file(f("train_batch_size")), field=f("train_batch_size"), value=train_batch,
                         allowed=f"a divisor of rollout_batch_size × n_samples_per_prompt = {prompts * n}")
    b.set("algorithm.minibatches", prompts * n // train_batch, f("train_batch_size"))
    b.set("algorithm.ppo_epochs", k.int_(f("max_epochs"), 1), f("max_epochs"))
    kl_coef = k.float_(f("init_kl_coef"), 0.01)
    use_kl_loss = k.bool_(f("use_kl_loss"), False)
    b.set("algorithm.reference", kl_coef > 0 or use_kl_loss, f("init_kl_coef"), f("use_kl_loss"))

    max_new = k.int_(f("generate_max_len"), 1024)
    if "data.max_len" in k:  # the dotted flags' total: prompt + response
        total = k.int_("data.max_len", 2048)
        max_prompt = max(total - max_new, 1)
        b.note("--data.max_len is prompt + response: prompts up to data.max_len - rollout.max_new_tokens")
        prompt_keys = ("data.max_len",)
    else:
        max_prompt = k.int_(f("prompt_max_len"), 1024)
        prompt_keys = (f("prompt_max_len"),)
    workload(b, max_prompt, max_new, prompt_keys, (f("generate_max_len"),))
    return max_prompt, max_new


def trainer(k: Knobs, b: Builder, f, colocate: bool, lengths: tuple[int, int]) -> None:
    """The engines' memory and CUDA graphs, DeepSpeed's stage, offload and micro-batches."""
    max_prompt, max_new = lengths
    b.set("placement.rollout.gpu_memory_utilization", k.float_(f("vllm_gpu_memory_utilization"), 0.95, high=1.0),
          f("vllm_gpu_memory_utilization"))
    b.set("placement.rollout.scheduling", "synchronous")
    b.note("the rollout engine schedules synchronously (OpenRLHF's vLLM V1 LLM.generate of 2025)")
    if k.bool_(f("enforce_eager"), False):
        b.set("placement.rollout.enforce_eager", True, f("enforce_eager"))
    sleep = k.bool_(f("deepspeed_enable_sleep"), False)
    k.mark(f("vllm_enable_sleep"))
    zero = k.int_(f("zero_stage"), 2, low=0)
    if zero > 3:
        raise InputError("unknown ZeRO stage", file=k.file(f("zero_stage")), field=f("zero_stage"), value=zero,
                         allowed="0, 1, 2, 3")
    b.set("placement.trainer.zero_stage", zero, f("zero_stage"))
    b.set("placement.trainer.recompute", k.bool_(f("gradient_checkpointing"), False), f("gradient_checkpointing"))
    if colocate:  # elsewhere the twin has no host-side Adam: the flag stays in the not-used list
        b.set("placement.trainer.offload_optimizer", k.bool_(f("adam_offload"), False) or sleep, f("adam_offload"),
              f("deepspeed_enable_sleep"))
        if sleep:  # DeepSpeed sleep moves the weights and optimizer to the host while vLLM generates
            b.set("placement.trainer.offload_params", True, f("deepspeed_enable_sleep"))
    if k.bool_("use_dynamic_batch", False):
        b.set("placement.trainer.micro_batch_tokens", k.int_("train_max_tokens_per_gpu", 16192),
              "train_max_tokens_per_gpu", "use_dynamic_batch")
        k.mark(f("micro_train_batch_size"))
    else:
        micro = k.int_(f("micro_train_batch_size"), 4)
        b.set("placement.trainer.micro_batch_tokens", micro * (max_prompt + max_new), f("micro_train_batch_size"))
        b.note("a training micro-batch is micro_train_batch_size sequences of up to prompt_max_len + "
               "generate_max_len tokens")
    b.set("placement.trainer.tp", k.int_("ds_tensor_parallel_size", None), "ds_tensor_parallel_size")
    ring = k.int_(f("ring_attn_size"), 1)
    if ring > 1:
        raise InputError("ring attention (context parallelism) is not modelled", file=k.file(f("ring_attn_size")),
                         field=f("ring_attn_size"), value=ring, allowed="1")
    b.set("placement.rollout.max_num_seqs", k.int_("vllm_max_num_seqs", 256), "vllm_max_num_seqs")
    b.set("placement.rollout.max_num_batched_tokens", k.int_("max_num_batched_tokens", None), "max_num_batched_tokens")


IMPORTER = Importer("openrlhf", "OpenRLHF", VERSION,
                    "launch scripts running python3 -m openrlhf.cli.train_ppo_ray with --flags "
                    "(flat or dotted spelling)", run)
