"""The cost of one inference-engine iteration, tabulated for the rollout kernels.

An iteration processes ``n`` tokens (one per decoding sequence plus any prefill chunk),
``pairs`` attention (query, key) pairs and reads ``kv_tokens`` tokens of KV cache. On an
engine of ``tp`` GPUs its time is a roofline per kind of kernel plus fixed costs::

    t = overhead + comm[n] + max(linear[n], weights[n])                      # the GEMMs
                           + max(attn_per_pair·pairs, kv_per_token·kv_tokens)  # attention

The GEMMs and the attention kernels run one after the other on the GPU's stream, so each is
bounded by its own roofline and their times add: a decode GEMM of a large batch that is
compute-bound does not hide the attention kernel's KV-cache read that follows it.

The routed experts of a MoE model are not in the roofline: they run as vLLM's/SGLang's
fused-MoE block (router, top-k, align, two grouped GEMMs streaming the touched experts, sum),
priced by ``moe_engine.fused_moe_s`` and added to ``comm`` with the other serial terms.

``overhead`` is the host's share of a step that the GPU waits for: small when the engine
schedules the next step while the GPU runs this one, a few milliseconds when it does not
(``placement.rollout.scheduling``). ``comm[n]`` holds the terms that run *serially* with the
roofline: the TP all-reduces and the element-wise kernels (norms, rotary, SiLU·mul, residual
adds, the KV-cache write, the sampler's softmax over the vocabulary;
``transformer.elementwise_work``). On a GPU those are
separate kernels that start when the GEMM producing their input has finished, so their time
adds to the GEMMs' instead of hiding under a roofline max; ``elementwise_s`` records them
alone. ``linear[n]`` prices each GEMM at the profile's efficiency for its FLOP and, where
the profile has one, its token rows (n for the layers, one row per sequence for the head):
a decode GEMM of few rows is bound by streaming its weight.

Everything that depends non-linearly on n (GEMM efficiency by size, MoE expert coverage,
the TP all-reduces) is tabulated once per engine for n = 0 … max_num_batched_tokens;
everything that grows with context is linear. Between two changes of a batch's
composition n is fixed and the context grows by n per iteration, so the kernels can sum
many iterations in closed form instead of stepping token by token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from twin.config.engines import ENGINE_KINDS
from twin.config.hardware import DTYPE_BYTES
from twin.config.plan import Plan
from twin.cost import engine_modes, moe_engine, transformer
from twin.cost.collectives import Topology
from twin.cost.hf_generate import hf_generate_costs
from twin.cost.memory import engine_kv_shards, max_sequence_tokens, rollout_memory
from twin.cost.mixers import engine_mixers
from twin.cost.roofline import elementwise_op_time, memory_rate


@dataclass(frozen=True)
class EngineCosts:
    """Cost table of one engine; arrays are indexed by tokens in the iteration."""

    overhead_s: float
    linear_s: np.ndarray
    weights_s: np.ndarray
    comm_s: np.ndarray
    attn_s_per_pair: float
    kv_s_per_token: float
    kv_capacity_tokens: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    max_model_len: int
    elementwise_s: np.ndarray | None = None  # the element-wise part of comm_s (informational)
    # HF generate (twin.cost.hf_generate): host time an iteration cannot be shorter than (a GPU
    # behind an eager host), and the DynamicCache's copy per cached token; 0 for other engines
    host_floor_s: float = 0.0
    cache_copy_s_per_token: float = 0.0
    # vLLM V1 / SGLang prefix caching: freed blocks stay cached until reused (twin.engine.reference)
    prefix_caching: bool = False
    slow: float = 1.0  # every iteration × this: a straggling engine (twin.config.stragglers)

    def iteration_time(self, n: int, pairs: float, kv_tokens: float) -> float:
        """Seconds of one iteration (the formula of the module docstring)."""
        if n <= 0:
            return 0.0
        n = min(n, len(self.linear_s) - 1)
        gemms = max(self.linear_s[n], self.weights_s[n])
        attention = max(self.attn_s_per_pair * pairs, self.kv_s_per_token * kv_tokens)
        t = self.overhead_s + self.comm_s[n] + gemms + attention + self.cache_copy_s_per_token * kv_tokens
        return max(t, self.host_floor_s) * self.slow

    def slowed(self, factor: float) -> EngineCosts:
        """This table with every iteration ``factor`` times as long (a straggling engine); the
        table itself when ``factor`` is 1."""
        if factor == 1.0:
            return self
        return replace(self, slow=self.slow * factor)

    def decode_time(self, batch: int, context_tokens: float) -> float:
        """One decode iteration of ``batch`` sequences holding ``context_tokens`` in total."""
        return self.iteration_time(batch, context_tokens, context_tokens)

    def prefill_time(self, prompt_tokens: int) -> float:
        """Prefill of one prompt alone, in chunks of the token budget."""
        total, done, chunk = 0.0, 0, self.max_num_batched_tokens
        while done < prompt_tokens:
            n = min(chunk, prompt_tokens - done)
            pairs = n * done + n * (n + 1) / 2
            total += self.iteration_time(n, pairs, done)
            done += n
        return total


def engine_costs(plan: Plan, kernels: transformer.Kernels = "fused") -> EngineCosts:
    """Tabulate the iteration cost of one rollout engine of ``plan``.

    ``kernels``: the engine's element-wise kernels, ``fused`` as vLLM and SGLang run them,
    ``eager`` for a plain PyTorch ``generate`` (see ``transformer.layer_elementwise``).
    Engine kind ``hf_generate`` is the eager table with HF's host dispatch and cache growth
    (twin.cost.hf_generate).
    """
    r = plan.placement.rollout
    if ENGINE_KINDS[r.engine].hf_costs:
        return hf_generate_costs(_engine_costs(plan, "eager"), plan)
    spec = r.speculative != "none"
    costs = _engine_costs(plan, kernels, logit_rows=r.max_num_seqs * (r.num_speculative_tokens + 1) if spec else None)
    if r.enforce_eager:
        costs = engine_modes.eager(costs, plan)
    return engine_modes.speculative(costs, plan, lambda draft: _engine_costs(draft, "fused")) if spec else costs


def _engine_costs(plan: Plan, kernels: transformer.Kernels, logit_rows: int | None = None) -> EngineCosts:
    arch, gpu = plan.model, plan.gpu
    r = plan.placement.rollout
    n = np.arange(r.max_num_batched_tokens + 1, dtype=np.float64)
    # sampling needs logits only per sequence (a speculative verify step: at every verified position)
    logit_tokens = np.minimum(n, logit_rows or r.max_num_seqs)
    peak = gpu.compute.peak(arch.dtype)  # attention runs on the KV cache's activations, in the model's dtype
    if r.pp > 1 or r.dp_attention:
        linear_s, weight_bytes, comm_s = _layout_terms(plan, n, logit_tokens)
    else:
        linear_s, weight_bytes, comm_s = _tensor_parallel_terms(plan, n, logit_tokens)
    weights_s = weight_bytes / memory_rate(gpu, float(weight_bytes[-1]))
    elementwise_s = _elementwise_s(plan, kernels, n, logit_tokens)
    comm_s = comm_s + elementwise_s
    attn_curve = gpu.compute.attention_efficiency or gpu.compute.gemm_efficiency
    attn_best = attn_curve.best
    if gpu.compute.attention_efficiency_by_head_dim is not None:
        attn_best *= gpu.compute.attention_efficiency_by_head_dim.at(transformer.attention_head_dim(arch))
    # full attention per pair and per cached token; windowed, top-k and linear-attention layers
    # per new token and per sequence (twin.cost.mixers), serially after the GEMMs like attention
    mix = engine_mixers(arch, r, max_sequence_tokens(plan), plan.kv_dtype, engine_kv_shards(arch, r))
    attn_s_per_pair = mix.flops_per_pair / (peak * attn_best)
    rate = memory_rate(gpu, float(weight_bytes[-1]))
    kv_s_per_token = mix.read_per_context_token / rate
    if mix.grows:
        comm_s = comm_s + np.where(n > 0, np.maximum(mix.flops_per_token * n / (peak * attn_best),
                                                     mix.read_per_sequence * logit_tokens / rate), 0.0)
    kv_bytes = rollout_memory(plan).items["KV cache"]
    overhead = gpu.overhead.per_iteration_s if r.scheduling == "overlapped" else gpu.overhead.synchronous_step_s
    if r.step_overhead_s is not None:  # the stack's own, fitted on its run (twin fit --profile)
        overhead = r.step_overhead_s
    return EngineCosts(
        overhead_s=overhead,
        linear_s=linear_s,
        weights_s=weights_s,
        comm_s=comm_s,
        attn_s_per_pair=attn_s_per_pair,
        kv_s_per_token=kv_s_per_token,
        kv_capacity_tokens=kv_capacity_tokens(kv_bytes, mix.stored_per_token, plan),
        max_num_seqs=r.max_num_seqs,
        max_num_batched_tokens=r.max_num_batched_tokens,
        block_size=r.block_size,
        max_model_len=max_sequence_tokens(plan),
        elementwise_s=elementwise_s,
        prefix_caching=r.prefix_caching,
    )


def _tensor_parallel_terms(plan: Plan, n: np.ndarray, logit_tokens: np.ndarray):
    """GEMM seconds, weight bytes read and serial communication per step of an engine of one
    stage with tensor parallelism, for a step of ``n`` tokens."""
    arch, gpu, r = plan.model, plan.gpu, plan.placement.rollout
    tp, c = r.tp, gpu.compute
    # placement.rollout.dtype (fp8 weights): GEMMs at the profile's peak for it, under the same
    # efficiency curves (h100-sxm notes fp8 reaches 0.709 of its peak at large size against
    # bf16's 0.803; one curve serves all dtypes), and the weights a step reads shrink with it.
    gemm_peak = c.peak(plan.rollout_dtype)
    weight_scale = DTYPE_BYTES[plan.rollout_dtype] / arch.bytes_per_param
    # the routed experts run as the fused-MoE block (moe_engine), serial with the rest
    body = transformer.body_params(arch) - moe_engine.routed_active_params(plan)
    per_call = 2.0 * body * np.maximum(n, 1.0) / (transformer.GEMMS_PER_LAYER * arch.num_layers) / tp
    body_eff = c.gemm_eff_array(per_call, n)
    head_eff = c.gemm_eff_array(2.0 * transformer.head_params(arch) * np.maximum(logit_tokens, 1.0) / tp, logit_tokens)
    linear_s = np.where(n > 0, (2.0 * body * n / body_eff
                                + 2.0 * transformer.head_params(arch) * logit_tokens / head_eff) / (tp * gemm_peak), 0.0)
    dense_bytes = transformer.weight_bytes_read(arch, n) - moe_engine.routed_bytes_read(plan, n)
    weight_bytes = dense_bytes * weight_scale / tp
    comm_s = moe_engine.fused_moe_s(plan, n, whole_experts=r.expert_parallel)
    if tp > 1:  # an engine across nodes: the group's ring crosses the inter-node link (Topology)
        topo = Topology.of(plan.cluster)
        fixed, per_byte = topo.collective_cost("all_reduce", topo.gpus(0, tp))
        # Megatron-style TP: two all-reduces of the hidden states per layer.
        hidden_bytes = n * arch.hidden_size * arch.bytes_per_param
        comm_s = comm_s + np.where(n > 0, 2 * arch.num_layers * (fixed + per_byte * hidden_bytes), 0.0)
    return linear_s, weight_bytes, comm_s


def _elementwise_s(plan: Plan, kernels: transformer.Kernels, n: np.ndarray, logit_tokens: np.ndarray) -> np.ndarray:
    """Element-wise kernels' seconds per step of ``n`` tokens. Their bytes are linear in
    (tokens, sequences): a·n + b·rows; kernels are fixed. Without class curves in the profile the
    work is priced as one average kernel (as roofline.elementwise_time); with them, per class (as
    roofline.elementwise_time_by_class)."""
    gpu, r = plan.gpu, plan.placement.rollout
    one = transformer.elementwise_work_by_class(plan.model, 1.0, "generate", 0.0, kernels)
    with_row = transformer.elementwise_work_by_class(plan.model, 1.0, "generate", 1.0, kernels)
    if gpu.memory.elementwise_classes is None:
        classes = {"binary": (sum(b for b, _ in one.values()), sum(o for _, o in one.values()),
                              sum(b for b, _ in with_row.values()) - sum(b for b, _ in one.values()))}
    else:
        classes = {c: (one[c][0], one[c][1], with_row[c][0] - one[c][0]) for c in one}
    mem = gpu.memory
    elementwise_s = np.zeros_like(n)
    for cls, (a, ops, row) in classes.items():
        if ops <= 0:
            continue
        per_op = (a * n + row * logit_tokens) / (r.tp * r.pp) / ops  # roofline.elementwise_op_time, vectorised
        curve = mem.elementwise_class_curve(cls)
        t_op = per_op / (mem.bandwidth_bytes_per_s * np.maximum(curve.at_array(per_op), 1e-9))
        t_op = np.maximum(t_op, elementwise_op_time(0.0, gpu, cls))  # the per-call floor
        elementwise_s = elementwise_s + np.where(n > 0, ops * t_op, 0.0)
    return elementwise_s


def kv_capacity_tokens(kv_bytes: float, per_token: float, plan: Plan) -> int:
    """Tokens the engine's KV cache holds; with no layer caching every token (every layer windowed
    or linear), every sequence the engine may run, at full length."""
    if per_token > 0:
        return int(kv_bytes // per_token)
    r = plan.placement.rollout
    return r.max_num_seqs * -(-max_sequence_tokens(plan) // r.block_size) * r.block_size


def _layout_terms(plan: Plan, n: np.ndarray, logit_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(linear_s, weight bytes read per GPU, comm_s) of an engine with pipeline stages or
    data-parallel attention, for iterations of ``n`` tokens.

    Pipeline: pp micro-batches of n/pp tokens are in flight (vLLM's virtual engines), so an
    iteration is the pipeline's cycle: each GPU runs its 1/pp of the layers for every
    micro-batch, reading its stage's weights once per micro-batch, and hands each micro-batch's
    hidden states to the next stage (a point-to-point send, across nodes where the stages are).
    A sequence's token still takes the whole cycle, which is what the queue's iteration is.

    Data-parallel attention with expert parallelism (wide EP, as SGLang runs it): each of the
    tp GPUs runs the attention of its own n/tp tokens with whole attention weights (no
    all-reduce); every MoE layer dispatches its tokens' top-k rows to the experts' GPUs and
    combines them back (two all-to-alls over the engine's GPUs per MoE layer and micro-batch),
    each GPU's E/tp whole experts run as the fused-MoE block (``moe_engine``); dense FFN layers, shared
    experts and the vocabulary stay tensor-split over all the tokens (a dense layer gathers and
    scatters them: one all-reduce's traffic).
    """
    arch, gpu, r = plan.model, plan.gpu, plan.placement.rollout
    c, peak = gpu.compute, gpu.compute.peak(plan.rollout_dtype)  # GEMMs at the weights' dtype (engine_costs)
    scale = DTYPE_BYTES[plan.rollout_dtype] / arch.bytes_per_param  # weight bytes at that dtype
    tp, pp = r.tp, r.pp
    b, h = arch.bytes_per_param, arch.hidden_size
    micro = n / pp  # tokens of one micro-batch
    body, head = transformer.body_params(arch), transformer.head_params(arch)
    topo = Topology.of(plan.cluster)
    comm = np.zeros_like(n)
    if r.dp_attention:
        m = arch.moe
        attention = arch.mixer_params
        routed = moe_engine.routed_active_params(plan)
        other = body - attention - routed  # dense FFNs, shared experts, routers: TP-split over all tokens
        own = np.maximum(micro / tp, 1.0)  # a GPU's own tokens of a micro-batch
        attn_eff = c.gemm_eff_array(2.0 * attention * own / (2 * arch.num_layers), own)  # QKV and output
        rows = np.maximum(micro, 1.0)
        other_eff = c.gemm_eff_array(2.0 * other * rows / (2 * arch.num_layers) / tp, rows)
        head_rows = np.maximum(logit_tokens / pp, 1.0)
        head_eff = c.gemm_eff_array(2.0 * head * head_rows / tp, head_rows)
        flops_s = (2.0 * attention * n / attn_eff + 2.0 * other * n / np.maximum(other_eff, 1e-9)
                   + 2.0 * head * logit_tokens / head_eff) / (tp * pp * peak)
        attention_bytes = attention * b * scale
        read = (transformer.weight_bytes_read(arch, micro) - moe_engine.routed_bytes_read(plan, micro)) * scale
        weight_bytes = attention_bytes + (read - attention_bytes) / tp  # whole attention; a share of the rest
        # every GPU holds E/tp whole experts and computes them for the dispatched micro-batch
        comm = comm + moe_engine.fused_moe_s(plan, micro, whole_experts=True)
        group = topo.gpus(0, tp)
        slope = topo.all_to_all_time(2.0, group) - topo.all_to_all_time(1.0, group)  # linear in bytes
        fixed = topo.all_to_all_time(1.0, group) - slope
        sent = micro / tp * m.experts_per_token * h * b
        comm = comm + np.where(n > 0, arch.moe_layers * 2 * (fixed + slope * sent), 0.0)
        if arch.dense_layers:  # a dense FFN layer gathers the tokens and scatters its output back
            ar_fixed, ar_byte = topo.collective_cost("all_reduce", group)
            comm = comm + np.where(n > 0, arch.dense_layers * (ar_fixed + ar_byte * micro * h * b), 0.0)
    else:
        body = body - moe_engine.routed_active_params(plan)  # the routed experts: the fused-MoE block
        rows = np.maximum(micro, 1.0)
        body_eff = c.gemm_eff_array(2.0 * body * rows / (transformer.GEMMS_PER_LAYER * arch.num_layers) / tp, rows)
        head_rows = np.maximum(logit_tokens / pp, 1.0)
        head_eff = c.gemm_eff_array(2.0 * head * head_rows / tp, head_rows)
        flops_s = (2.0 * body * n / body_eff + 2.0 * head * logit_tokens / head_eff) / (tp * pp * peak)
        read = transformer.weight_bytes_read(arch, micro) - moe_engine.routed_bytes_read(plan, micro)
        weight_bytes = read * scale / tp
        comm = comm + moe_engine.fused_moe_s(plan, micro, whole_experts=r.expert_parallel)
        if tp > 1:
            fixed, per_byte = topo.collective_cost("all_reduce", topo.gpus(0, tp))
            comm = comm + np.where(n > 0, 2 * arch.num_layers * (fixed + per_byte * micro * h * b), 0.0)
    if pp > 1:  # each micro-batch crosses pp - 1 stage boundaries; a GPU sends once per micro-batch
        slope = topo.p2p_time(2.0, 0, tp) - topo.p2p_time(1.0, 0, tp)  # stage 0's GPU to stage 1's
        fixed = topo.p2p_time(1.0, 0, tp) - slope
        sent = micro * h * b / (tp if r.dp_attention else 1)
        comm = comm + np.where(n > 0, pp * (fixed + slope * sent), 0.0)
    linear_s = np.where(n > 0, flops_s, 0.0)
    return linear_s, weight_bytes, comm
