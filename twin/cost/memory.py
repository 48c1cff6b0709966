"""Device memory per role: what each GPU holds, and whether it fits.

Training state follows the ZeRO accounting of Rajbhandari et al. (2020): with mixed
precision and Adam, Ψ parameters cost 2Ψ (16-bit weights) + 2Ψ (16-bit grads) + 12Ψ
(fp32 master weights, momentum, variance) bytes; ZeRO stage 1 shards the 12Ψ, stage 2
also the grads, stage 3 (FSDP full-shard) also the weights, over the data-parallel group.
Activations follow Korthikanti et al. (2022): about 34·h bytes per token per layer in 16-bit
with flash attention and sequence parallelism (divided by tp); with full recomputation only
each layer's 2·h-byte input is kept, plus one layer recomputed at a time. Logits cost
4 bytes per vocabulary entry per token twice (fp32 logits and their gradient).
With expert parallelism the routed experts are split by ep·pp and ZeRO-sharded over the
expert-data-parallel ranks, the rest by tp·pp and over dp·cp·sp (Megatron's MoE folding).
The inference engine follows vLLM: it may take ``gpu_memory_utilization`` of the device for
weights, activations and KV cache; what is left after weights and activations is KV cache.
On GPUs shared with the trainer (colocated), the trainer's state that is not offloaded stays
resident beside that budget — vLLM checks at start-up that the free memory covers its budget,
so budget + resident state must fit the GPU (:func:`resident_trainer_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.config.hardware import DTYPE_BYTES
from twin.config.model import ModelArch
from twin.config.engines import ENGINE_KINDS
from twin.config.plan import Plan
from twin.cost.logits import logits_bytes
from twin.cost.mixers import engine_mixers
from twin.errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class RoleMemory:
    """Bytes per GPU of one role, by item, against the device's capacity."""

    role: str
    capacity_bytes: float
    items: dict[str, float] = field(default_factory=dict)
    problem: str | None = None
    field_path: str | None = None
    fix: str | None = None  # what to change, where the problem has one answer

    @property
    def used_bytes(self) -> float:
        return sum(self.items.values())

    @property
    def headroom_bytes(self) -> float:
        return self.capacity_bytes - self.used_bytes

    @property
    def fits(self) -> bool:
        return self.problem is None and self.headroom_bytes >= 0


def trainer_state_bytes(arch: ModelArch, plan: Plan) -> dict[str, float]:
    """Weights, grads and optimizer state per trainer GPU (resident between steps)."""
    t = plan.placement.trainer
    experts = arch.moe_layers * arch.moe.num_experts * arch.expert_params if arch.moe and t.ep > 1 else 0.0
    dense = (arch.total_params - experts) / (t.tp * t.pp)  # the rest: split by tp·pp, ZeRO over dp·cp·sp
    routed = experts / (t.ep * t.pp)  # EP: routed experts split by ep·pp, ZeRO over expert-dp
    dp, edp = plan.trainer_shards, plan.trainer_expert_dp

    def sharded(stage: int) -> float:
        on = t.zero_stage >= stage
        return dense / (dp if on else 1) + routed / (edp if on else 1)

    return {
        "weights (16-bit)": 2 * sharded(3),
        "gradients (16-bit)": 2 * sharded(2),
        "optimizer (fp32 master, m, v)": 12 * sharded(1),
    }


def offloaded_state_bytes(arch: ModelArch, plan: Plan) -> float:
    """Trainer state moved to the host while the engine generates (colocated mode), and back
    for training: verl's param/optimizer offload, NeMo-RL's offload before refit."""
    t, state = plan.placement.trainer, trainer_state_bytes(arch, plan)
    moved = 0.0
    if t.offload_params:
        moved += state["weights (16-bit)"] + state["gradients (16-bit)"]
    if t.offload_optimizer:
        moved += state["optimizer (fp32 master, m, v)"]
    return moved


def trainer_activation_bytes(arch: ModelArch, plan: Plan) -> dict[str, float]:
    """Peak activations of one trainer GPU, in the pass that needs most: the update (a
    micro-batch of ``micro_batch_tokens``) or, when the step has one, a scoring pass (old
    log-probs, reference, values: ``logprob_micro_batch_tokens``, no activations kept for a
    backward). Under a 1F1B pipeline the first stage holds the activations of ``pp``
    micro-batches in flight, each for its 1/pp of the layers: one whole model's worth
    (Korthikanti et al. 2022, section 4.2.3). The head's output follows
    ``placement.trainer.logprob_kernel`` (:mod:`twin.cost.logits`)."""
    t = plan.placement.trainer
    tokens = t.micro_batch_tokens
    layers = arch.num_layers / t.pp
    in_flight = t.pp
    h = arch.hidden_size
    per_layer_full = 34 * h * tokens / t.tp
    if t.recompute:  # each layer's input kept per micro-batch; one layer rebuilt at a time
        acts = in_flight * layers * 2 * h * tokens + per_layer_full
    else:
        acts = in_flight * layers * per_layer_full
    label, head = logits_bytes(arch, tokens, t.logprob_kernel, "train", t.tp)
    update = {"activations (micro-batch)": acts, label: head}
    a = plan.algorithm
    if not (a.old_logprob or a.reference or a.critic):
        return update
    # a scoring forward keeps nothing for a backward: one layer's working set and the head's output
    scored = t.logprob_micro_batch_tokens or tokens
    label, head = logits_bytes(arch, scored, t.logprob_kernel, "score", t.tp)
    score = {"activations (scoring micro-batch)": 34 * h * scored / t.tp, label: head}
    return score if sum(score.values()) > sum(update.values()) else update


def engine_workspace_bytes(arch: ModelArch, plan: Plan) -> float:
    """Peak activation workspace of one engine GPU during its biggest iteration.

    One layer's widest intermediate (the fused gate+up of the FFN) for the iteration's
    token budget, plus fp32 logits for every running sequence.
    """
    r = plan.placement.rollout
    ffn = arch.moe.expert_intermediate_size * arch.moe.experts_per_token if arch.moe else arch.intermediate_size
    layer = r.max_num_batched_tokens * (2 * ffn + 4 * arch.hidden_size) * arch.bytes_per_param / r.tp
    logits = r.max_num_seqs * arch.vocab_size * 4 / r.tp
    return layer + logits


def kv_shards(arch: ModelArch, tp: int) -> int:
    """GPUs a token's KV is split over: heads split across TP; MLA's latent is replicated."""
    return 1 if arch.mla else min(tp, arch.num_kv_heads)


def kv_bytes_per_token(plan: Plan) -> float:
    """KV-cache bytes one token occupies in the engines, at placement.rollout.kv_dtype."""
    arch = plan.model
    return arch.kv_bytes_per_token * DTYPE_BYTES[plan.kv_dtype] / arch.bytes_per_param


def engine_kv_shards(arch: ModelArch, rollout) -> int:
    """How many ways an engine's KV cache is divided over its GPUs: pipeline stages each hold
    their layers'; data-parallel attention gives each of the tp GPUs its own sequences (whole
    heads, an MLA latent held once); otherwise heads split over tp (:func:`kv_shards`)."""
    within = rollout.tp if rollout.dp_attention else kv_shards(arch, rollout.tp)
    return within * rollout.pp


def engine_weight_bytes(arch: ModelArch, rollout) -> float:
    """Weight bytes per engine GPU at the model's dtype: 1/pp of the layers, each tensor-split
    (or, with expert parallelism, its experts spread) over tp; with data-parallel attention the
    attention projections are whole on every GPU (the rest stays split: experts by EP, dense
    FFNs and the vocabulary by TP, as SGLang runs DP attention)."""
    if not rollout.dp_attention:
        return arch.weight_bytes / (rollout.tp * rollout.pp)
    attention = arch.mixer_params * arch.bytes_per_param
    return (attention + (arch.weight_bytes - attention) / rollout.tp) / rollout.pp


def rollout_memory(plan: Plan) -> RoleMemory:
    arch, cap = plan.model, plan.gpu.memory.capacity_bytes
    r = plan.placement.rollout
    items: dict[str, float] = {}
    resident = resident_trainer_bytes(plan)
    in_process = ENGINE_KINDS[r.engine].in_trainer_process
    if in_process and resident:
        # HF generate runs in the trainer's own process: no engine budget of its own, its cache
        # grows in what the trainer's state leaves of the memory fraction
        items["trainer state (not offloaded)"] = resident
    # placement.rollout.dtype: the engine holds its weights at that dtype
    items["weights"] = engine_weight_bytes(arch, r) * DTYPE_BYTES[plan.rollout_dtype] / arch.bytes_per_param
    items["activation workspace"] = engine_workspace_bytes(arch, plan)
    budget = cap * r.gpu_memory_utilization
    max_len = max_sequence_tokens(plan)
    mix = engine_mixers(arch, r, max_len, plan.kv_dtype, engine_kv_shards(arch, r))
    states = r.max_num_seqs * mix.stored_per_sequence  # twin.cost.mixers: one per sequence it may run
    if states > 0:
        items["recurrent state and windows"] = states
    kv = budget - sum(items.values())
    # in whole KV blocks: the engine holds a sequence only if its blocks fit
    need = -(-max_len // r.block_size) * r.block_size * kv_bytes_per_token(plan) / engine_kv_shards(arch, r)
    if mix.grows:
        need = -(-max_len // r.block_size) * r.block_size * mix.stored_per_token
    problem = fix = None
    if states > 0 and kv < need:
        room = budget - sum(v for k, v in items.items() if k != "recurrent state and windows") - need
        most = int(max(room, 0.0) // mix.stored_per_sequence)
        fix = (f"lower placement.rollout.max_num_seqs to at most {most}" if most >= 1 else
               "raise placement.rollout.tp or gpu_memory_utilization, or shorten responses")
    if not in_process and budget + resident > cap:
        # vLLM's start-up check: the memory free when it starts must cover its whole budget
        room = (cap - resident) / cap
        fix = (f"lower gpu_memory_utilization to at most {room:.2f}" if room >= 0.05 else
               (f"offload the trainer's state ({', '.join(_offload_off(plan))}) or shard it over more GPUs"
                if _offload_off(plan) else "shard the trainer's state over more GPUs (offload is on already)"))
        problem = (f"the engine's budget ({r.gpu_memory_utilization:g} of {cap / GiB:.1f} GiB) and the trainer "
                   f"state left on each GPU while it generates ({resident / GiB:.1f} GiB) exceed the GPU: "
                   f"vLLM refuses to start")
    elif kv <= 0:
        what = "weights, workspace and recurrent state" if states > 0 else "weights and workspace"
        problem = (f"{what} take {sum(items.values()) / GiB:.1f} GiB per rollout GPU "
                   f"of its {budget / GiB:.1f} GiB budget, leaving nothing for the KV cache")
    elif kv < need:
        problem = (f"rollout KV cache of {kv / GiB:.1f} GiB per GPU cannot hold one "
                   f"{max_len}-token sequence in {r.block_size}-token blocks ({need / GiB:.2f} GiB)")
        if states > 0:
            problem += (f" beside the recurrent state and windows of {r.max_num_seqs} sequences "
                        f"({states / GiB:.2f} GiB)")
    items["KV cache"] = max(kv, 0.0)
    return RoleMemory("rollout", budget, items, problem,
                      "placement.rollout" if problem else None, fix)


def resident_trainer_bytes(plan: Plan) -> float:
    """Trainer state that stays on a shared GPU while the engine generates (colocated, not
    offloaded). It lies outside the engine's ``gpu_memory_utilization`` budget: vLLM sizes its KV
    cache as the budget less its own weights and activations, and refuses to start when the free
    memory at start-up (the GPU less what the trainer holds) is below the budget. Zero on GPUs
    of the engine's own."""
    if not plan.mode.shares_gpus:
        return 0.0
    return sum(trainer_state_bytes(plan.model, plan).values()) - offloaded_state_bytes(plan.model, plan)


def trainer_memory(plan: Plan) -> RoleMemory:
    arch, cap = plan.model, plan.gpu.memory.capacity_bytes
    items = {**trainer_state_bytes(arch, plan), **trainer_activation_bytes(arch, plan)}
    used = sum(items.values())
    problem = None
    if used > cap:
        problem = (f"trainer needs {used / GiB:.1f} GiB per GPU of {cap / GiB:.1f} GiB")
    return RoleMemory("trainer", cap, items, problem, "placement.trainer" if problem else None)


def memory_report(plan: Plan) -> list[RoleMemory]:
    return [rollout_memory(plan), trainer_memory(plan)]


def max_sequence_tokens(plan: Plan) -> int:
    """Longest context a trajectory can reach: prompt + responses (+ tool replies)."""
    w = plan.workload
    prompt = _upper(w.prompt_tokens)
    per_turn = w.max_response_tokens
    mt = w.multi_turn
    if mt is None:
        return int(prompt + per_turn)
    calls = _upper(mt.tool_calls)
    return int(prompt + (calls + 1) * per_turn + calls * _upper(mt.tool_reply_tokens))


def _upper(dist) -> float:
    """An upper bound of a distribution (its bound, or a high quantile when unbounded)."""
    bound = dist.upper_bound()
    if np.isfinite(bound):
        return bound
    return float(np.quantile(dist.sample(np.random.default_rng(0), 100_000), 0.999))


def _offload_off(plan: Plan) -> list[str]:
    """The trainer's offload settings not on yet: the only ones a remedy may suggest."""
    t = plan.placement.trainer
    return [f"placement.trainer.{flag}" for flag in ("offload_params", "offload_optimizer") if not getattr(t, flag)]


def memory_problem(plan: Plan, file: str | None = None) -> InputError | None:
    """The first role that does not fit, as an input error naming the field to change."""
    off = _offload_off(plan)
    hints = {
        "rollout": "raise placement.rollout.tp or gpu_memory_utilization, shorten responses"
        + (f", or (colocated) offload trainer state with {' and '.join(off)}" if off else ""),
        "trainer": "raise trainer GPUs, zero_stage or tp/pp; enable recompute; lower micro_batch_tokens",
    }
    for m in memory_report(plan):
        if not m.fits:
            return InputError(f"model does not fit in memory: {m.problem}", file=file,
                              field=m.field_path, allowed=m.fix or hints[m.role])
    return None
