"""The learner's passes over one step's sequences, rank by rank.

Data-parallel training splits each (mini-)batch over the DP ranks; a pass lasts as long as
its slowest rank. RL frameworks balance sequences by token count (verl's ``balance_batch``,
NeMo-RL's sequence packing) — modelled here as longest-first to the least-loaded rank.
Balancing cannot split a sequence: with few sequences per rank (many GPUs, 28K-token
responses) the longest sequence sets the pace and adding GPUs stops helping, exactly the
flattening verl measured from 64 to 128 GPUs (PUBLISHED.md A).

Each rank's time is the larger of its compute and its ZeRO-3 traffic (parameter
all-gathers and gradient reduce-scatters per micro-batch), which FSDP overlaps with compute.
Compute is the sum of three kinds of kernels that run one after another:

* GEMMs: their FLOPs at the profile's GEMM efficiency for the FLOP of one GEMM of a
  micro-batch and its token rows;
* attention: its FLOPs at the attention efficiency of one call (one layer, one micro-batch);
* element-wise kernels (norms, rotary, SiLU·mul, residual adds, the log-softmax over the
  vocabulary and their gradients): the bytes they read and write
  (``transformer.elementwise_work``, HF-style ``eager`` kernels by default, as verl, OpenRLHF
  and TRL trainers run them) at the profile's element-wise bandwidth.

With pipeline parallelism each DP rank is a pipeline of ``pp`` stages, each holding 1/pp of
the layers; a pass of m micro-batches takes m + pp − 1 stage slots (fill and drain, once per
pass: the update's mini-batches each end in an optimizer step, which flushes the pipeline).
Tensor parallelism adds two all-reduces per layer and direction, Ulysses sequence
parallelism its all-to-alls; neither overlaps with compute. Expert parallelism (the
dispatch/combine all-to-alls, the busiest rank's expert GEMMs) and context parallelism
(ring attention's K/V exchange) are priced in :mod:`twin.cost.moe`.
"""

from __future__ import annotations

import numpy as np

from twin.config.limits import reach
from twin.config.plan import Plan
from twin.cost import logits, micro_batch, moe, transformer
from twin.cost.collectives import Topology
from twin.cost.mixers import trainer_mixer_time
from twin.cost.roofline import (
    attention_backward_time,
    attention_backward_times,
    attention_time,
    attention_times,
    compute_time,
    compute_times,
    elementwise_time_by_class,
    elementwise_times_by_class,
    memory_time,
)
from twin.engine.balance import balance


def rank_compute_time(plan: Plan, tokens: float, pairs: float, kind: str,
                      kernels: transformer.Kernels = "eager") -> float:
    """Compute seconds of one rank's pass over ``tokens`` tokens holding ``pairs`` causal
    attention pairs: ``kind`` 'score' (one forward, logits everywhere) or 'train' (forward
    + backward, + a recomputed forward with activation recomputation).

    The plain-Python reference of :func:`rank_compute_times`, which prices every rank of a
    step at once and is held to this bit for bit (tests/cost/test_learner.py)."""
    if tokens <= 0:
        return 0.0
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    recompute = kind == "train" and t.recompute
    factor = 1.0 if kind == "score" else (4.0 if recompute else 3.0)
    split = t.tp * t.pp
    micro = float(micro_batch.count(t, tokens, kind))
    rows = min(micro_batch.cap(t, kind), tokens)  # GEMM rows of one micro-batch
    dense = transformer.body_params(arch) - moe.routed_active_params(arch)  # routed experts: moe.py
    # recomputation re-runs the decoder layers, not the head (logits.head_flop_factor)
    head = logits.head_flop_factor(t.logprob_kernel, kind) * transformer.head_params(arch)
    gemm = 2.0 * (factor * dense + head) * tokens / split
    per_call = 2.0 * dense * max(rows, 1.0) / (transformer.GEMMS_PER_LAYER * arch.num_layers) / t.tp
    layers = transformer.context_attention_layers(arch)  # those whose attention reaches every token
    attn_call = arch.attention_flops_per_token_pair / layers * pairs / micro / t.tp
    d_head = transformer.attention_head_dim(arch)
    forwards = 1.0 if kind == "score" else (2.0 if recompute else 1.0)
    attention = forwards * attention_time(attn_call, gpu, arch.dtype, d_head)
    if kind == "train":
        attention += attention_backward_time(attn_call, gpu, arch.dtype, d_head)
    attention *= layers / t.pp * micro
    attention += trainer_mixer_time(plan, tokens, pairs, kind)  # windowed, top-k, linear attention
    work = transformer.elementwise_work_by_class(arch, tokens, kind, kernels=kernels, recompute=recompute)
    # a stage launches its layers' kernels (1/pp of them) once per micro-batch, each TP-split
    elementwise = elementwise_time_by_class(work, gpu, kernel_factor=micro / t.pp, byte_divisor=split)
    # placement.trainer.dtype: fp8 GEMMs (TransformerEngine) at the profile's fp8 peak; attention stays
    busy = (compute_time(gemm, gpu, plan.trainer_dtype, per_call, rows) + moe.expert_gemm_time(plan, tokens, kind)
            + moe.routing_time(plan, tokens, kind) + attention + elementwise)
    return busy * pipeline_factor(micro, t.pp)


def rank_compute_times(plan: Plan, tokens: np.ndarray, pairs: np.ndarray, kind: str,
                       kernels: transformer.Kernels = "eager") -> np.ndarray:
    """:func:`rank_compute_time` of every element of ``tokens`` (all > 0) and ``pairs`` at once:
    the same operations in the same order on arrays, so each element is the reference's figure
    exactly. A step has a load per data-parallel rank, and pricing them one by one in Python
    was most of a large simulation's time. The rarer terms (windowed and linear attention,
    routed experts) are the reference's own functions, element by element."""
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    recompute = kind == "train" and t.recompute
    factor = 1.0 if kind == "score" else (4.0 if recompute else 3.0)
    split = t.tp * t.pp
    micro = micro_batch.count(t, tokens, kind)
    rows = np.minimum(micro_batch.cap(t, kind), tokens)
    dense = transformer.body_params(arch) - moe.routed_active_params(arch)
    head = logits.head_flop_factor(t.logprob_kernel, kind) * transformer.head_params(arch)
    gemm = 2.0 * (factor * dense + head) * tokens / split
    per_call = 2.0 * dense * np.maximum(rows, 1.0) / (transformer.GEMMS_PER_LAYER * arch.num_layers) / t.tp
    layers = transformer.context_attention_layers(arch)
    attn_call = arch.attention_flops_per_token_pair / layers * pairs / micro / t.tp
    d_head = transformer.attention_head_dim(arch)
    forwards = 1.0 if kind == "score" else (2.0 if recompute else 1.0)
    attention = forwards * attention_times(attn_call, gpu, arch.dtype, d_head)
    if kind == "train":
        attention = attention + attention_backward_times(attn_call, gpu, arch.dtype, d_head)
    attention = attention * (layers / t.pp * micro)
    if arch.windowed_attention or arch.linear_attention:
        attention = attention + _each(trainer_mixer_time, plan, tokens, pairs, kind)
    work = transformer.elementwise_work_by_class(arch, tokens, kind, kernels=kernels, recompute=recompute)
    elementwise = elementwise_times_by_class(work, gpu, kernel_factor=micro / t.pp, byte_divisor=split)
    busy = compute_times(gemm, gpu, plan.trainer_dtype, per_call, rows)
    if arch.moe:
        busy = busy + _each(moe.expert_gemm_time, plan, tokens, None, kind)
        busy = busy + _each(moe.routing_time, plan, tokens, None, kind)
    busy = busy + attention + elementwise
    return busy * pipeline_factor(micro, t.pp)


def _each(cost, plan: Plan, tokens: np.ndarray, pairs: np.ndarray | None, kind: str, topo: Topology | None = None):
    """A scalar cost function of a rank's load, of every element (the reference's own terms)."""
    front = (plan,) if topo is None else (plan, topo)
    if pairs is None:
        return np.array([cost(*front, n, kind) for n in tokens.tolist()])
    return np.array([cost(*front, n, p, kind) for n, p in zip(tokens.tolist(), pairs.tolist())])


def pipeline_factor(micro_batches: float, stages: int) -> float:
    """How much longer a pipeline of ``stages`` takes than its busiest stage's own work when
    ``micro_batches`` flow through it: a 1F1B (or forward-only) schedule fills and drains once
    per pass, (m + p − 1) micro-batch slots for m micro-batches' work (Narayanan et al. 2021,
    Megatron-LM, non-interleaved schedule). 1 without pipeline parallelism."""
    return (micro_batches + stages - 1) / micro_batches


def _rank_times(plan: Plan, topo: Topology, tokens: np.ndarray, pairs: np.ndarray, kind: str,
                priced_ranks: int | None) -> np.ndarray:
    """Seconds of every rank's pass, compute and the communication inside it (one array
    evaluation, :func:`rank_compute_times`); a rank without tokens computes nothing.
    ``priced_ranks``: price only that many of the most loaded ranks (by tokens and by pairs),
    the others count as idle: a lower bound of the slowest rank, cheap on 100k ranks."""
    t = plan.placement.trainer
    out = np.zeros(len(tokens))
    busy = np.flatnonzero(tokens > 0)
    if priced_ranks is not None and len(busy) > priced_ranks:
        k = priced_ranks - 1
        busy = np.union1d(busy[np.argpartition(-tokens[busy], k)[:priced_ranks]],
                          busy[np.argpartition(-pairs[busy], k)[:priced_ranks]])
    if len(busy) == 0:
        return out
    n, p = np.asarray(tokens[busy], dtype=np.float64), np.asarray(pairs[busy], dtype=np.float64)
    times = rank_compute_times(plan, n, p, kind, t.kernels)
    # the communication inside a pass, each term only where its parallelism is on (zero else),
    # added in the reference order: Ulysses, tensor parallel, expert parallel, context parallel
    if t.sp > 1:
        times = times + _each(ulysses_time, plan, n, None, kind, topo)
    if t.tp > 1:
        times = times + _each(tensor_parallel_time, plan, n, None, kind, topo)
    if t.ep > 1 and plan.model.moe:
        times = times + _each(moe.ep_all_to_all_time, plan, n, None, kind, topo)
    if t.cp > 1:
        times = times + _each(moe.cp_ring_time, plan, n, p, kind, topo)
    out[busy] = times
    return out


def _pass_time(plan: Plan, seqs: np.ndarray, flop_factor: float, gathers: int,
               reduce_scatters: int, priced_ranks: int | None = None) -> float:
    """One pass over ``seqs`` split across the DP ranks; ``flop_factor`` 1 for a scoring
    forward, 3 or 4 (recompute) for forward + backward."""
    if len(seqs) == 0:
        return 0.0
    t = plan.placement.trainer
    # With fewer sequences than ranks, longest-first placement puts one on each of the first
    # ranks (the least loaded, ties to the lowest) and leaves the rest idle: balancing over as
    # many ranks as sequences gives the same loads, at a cost independent of the rank count.
    idle = len(seqs) < plan.trainer_dp
    tokens, pairs = balance(seqs, min(plan.trainer_dp, len(seqs)))
    if not t.remove_padding:
        # padded batches: ranks take equal counts of sequences, each computed at the padded length
        # (GEMMs and element-wise kernels); flash-attention still skips the padding (varlen)
        per_rank = np.ceil(len(seqs) / min(plan.trainer_dp, len(seqs)))
        tokens = np.full(len(tokens), per_rank * padded_length(plan))
    # per GPU: a group's tokens, and its heads (Ulysses) or its causal chunks (ring), split sp·cp ways
    tokens, pairs = tokens / (t.sp * t.cp), pairs / (t.sp * t.cp)
    kind = "score" if flop_factor == 1.0 else "train"
    topo = Topology.of(plan.cluster)
    compute = _rank_times(plan, topo, tokens, pairs, kind, priced_ranks)
    shards = plan.trainer_shards
    if t.zero_stage < 3 or shards == 1:
        return float(compute.max())
    per_micro = 0.0
    for nbytes, group in zero3_groups(plan, topo):
        per_micro += (gathers * topo.collective_time("all_gather", nbytes, group)
                      + reduce_scatters * topo.collective_time("reduce_scatter", nbytes, group))
    if reduce_scatters and plan.trainer_replicas > 1:
        # hybrid sharding: each GPU's reduced gradient shard is then all-reduced over the replicas
        # (the GPUs holding the same shard, shard_size apart), once per backward
        replicas = range(0, plan.trainer_shards * plan.trainer_replicas, plan.trainer_shards)
        per_micro += topo.collective_time("all_reduce", plan.model.weight_bytes / (t.tp * t.pp * plan.trainer_shards),
                                          replicas)
    micro = micro_batch.count(t, tokens, kind)
    slowest = float(np.maximum(compute, micro * per_micro).max())
    return max(slowest, per_micro) if idle else slowest  # an idle rank still joins one micro-batch's collectives


def zero3_groups(plan: Plan, topo: Topology) -> list[tuple[float, range]]:
    """(bytes of one GPU's model slice, the GPUs sharding it) for each part ZeRO-3 gathers and
    reduce-scatters: the whole tp × pp slice over ``trainer_shards`` GPUs; with EP, the dense
    part so and the routed experts' 1/(ep·pp) over the expert-data-parallel ranks."""
    arch, t = plan.model, plan.placement.trainer
    split = t.tp * t.pp
    if t.ep == 1:
        return [(arch.weight_bytes / split, topo.gpus(0, plan.trainer_shards))]
    experts = moe.routed_params(arch) * arch.bytes_per_param
    out = [((arch.weight_bytes - experts) / split, topo.gpus(0, plan.trainer_shards))]
    if plan.trainer_expert_dp > 1:  # expert ranks ordered ep innermost (etp 1): expert-dp ranks ep apart
        out.append((experts / (t.ep * t.pp), range(0, t.ep * plan.trainer_expert_dp, t.ep)))
    return out


def ulysses_time(plan: Plan, topo: Topology, tokens: float, kind: str) -> float:
    """All-to-all seconds of Ulysses sequence parallelism for a GPU holding ``tokens`` tokens.

    Around each layer's attention, q, k and v go from sequence-sharded to head-sharded and
    the output comes back (DeepSpeed-Ulysses): per token, the query and output widths and
    the key and value widths, each moved once per forward and once more as gradients. The
    exchanges sit between the projections and the attention kernel, so they do not overlap
    with compute. Zero without sequence parallelism.
    """
    t, arch = plan.placement.trainer, plan.model
    if t.sp == 1 or tokens <= 0:
        return 0.0
    forwards = 1 if kind == "score" else (2 if t.recompute else 1)
    directions = forwards + (1 if kind == "train" else 0)  # forwards, and the backward's gradients
    q_width = arch.num_heads * arch.d_head
    kv_width = 2 * arch.num_kv_heads * arch.d_head
    group = topo.gpus(0, t.sp)
    per_token = arch.bytes_per_param / t.tp
    per_layer = (topo.collective_time("all_to_all", tokens * (q_width + kv_width) * per_token, group)
                 + topo.collective_time("all_to_all", tokens * q_width * per_token, group))
    return directions * arch.num_layers / t.pp * per_layer


def tensor_parallel_time(plan: Plan, topo: Topology, tokens: float, kind: str) -> float:
    """All-reduce seconds of Megatron tensor parallelism for a GPU holding ``tokens`` tokens.

    A layer's attention and MLP blocks each end in a row-parallel GEMM whose partial outputs
    the tp ranks sum: one all-reduce of the micro-batch's hidden states per block in every
    forward, one of the input gradients per block in the backward (Shoeybi et al. 2019,
    Megatron-LM §3; sequence parallelism turns each into a reduce-scatter and an all-gather
    of the same bytes, Korthikanti et al. 2022). They sit between dependent GEMMs, so they
    do not overlap with compute; a stage runs its 1/pp of the layers. Zero without TP."""
    t, arch = plan.placement.trainer, plan.model
    if t.tp == 1 or tokens <= 0:
        return 0.0
    forwards = 1 if kind == "score" else (2 if t.recompute else 1)
    directions = forwards + (1 if kind == "train" else 0)
    micro = float(micro_batch.count(t, tokens, kind))
    hidden_bytes = tokens / micro * arch.hidden_size * arch.bytes_per_param
    per_block = topo.collective_time("all_reduce", hidden_bytes, topo.gpus(0, t.tp))
    return directions * 2 * arch.num_layers / t.pp * micro * per_block


def forward_pass_time(plan: Plan, seqs: np.ndarray, priced_ranks: int | None = None) -> float:
    """A scoring pass (old log-probs, reference, values): one forward with logits everywhere.
    ``priced_ranks``: see :func:`_rank_times` (None: every rank, as the simulation prices)."""
    return _pass_time(plan, seqs, 1.0, gathers=1, reduce_scatters=0, priced_ranks=priced_ranks)


def update_time(plan: Plan, seqs: np.ndarray, priced_ranks: int | None = None,
                minibatches: int | None = None) -> float:
    """PPO epochs × mini-batches of forward + backward (+ recompute), each ending in an
    optimizer step; mini-batches are consecutive slices of ``seqs`` (``minibatches`` of them,
    default the algorithm's)."""
    a, t = plan.algorithm, plan.placement.trainer
    factor = 4.0 if t.recompute else 3.0
    gathers = 3 if t.recompute else 2  # forward, backward (and the recomputed forward)
    total = 0.0
    optimizer = optimizer_time(plan)
    for _ in range(a.ppo_epochs):
        for chunk in np.array_split(np.asarray(seqs), minibatches or a.minibatches):
            total += _pass_time(plan, chunk, factor, gathers, reduce_scatters=1, priced_ranks=priced_ranks)
            total += optimizer
    return total


def padded_length(plan: Plan) -> float:
    """Positions of a padded sequence: the longest prompt plus the longest response (verl's
    DataProto pads prompts to max_prompt_length and responses to max_response_length)."""
    w = plan.workload
    return reach(w.prompt_tokens) + reach(w.response_tokens)


def controller_time(plan: Plan, sequences: int) -> float:
    """Seconds a single-controller framework spends shipping ``sequences`` of a learner pass
    between its driver and the workers: each padded to the longest position a sequence may
    reach (verl's DataProto pads prompts to max_prompt_length and responses to
    max_response_length), at the trainer's ``controller_positions_per_s``. It runs on the
    controller, so no GPU count shortens it. Zero when the rate is not given."""
    rate = plan.placement.trainer.controller_positions_per_s
    if rate is None or sequences == 0:
        return 0.0
    return sequences * padded_length(plan) / rate


def optimizer_time(plan: Plan) -> float:
    """Adam step on one GPU's shard: read and write fp32 master, m, v and read the grads
    (memory-bound: 4·3·2 + 2 = 26 bytes per parameter)."""
    t = plan.placement.trainer
    zero = t.zero_stage >= 1
    experts = moe.routed_params(plan.model) if t.ep > 1 else 0.0  # with EP: sharded over ep, then expert-dp
    shard = (plan.model.total_params - experts) / (t.tp * t.pp * (plan.trainer_shards if zero else 1))
    shard += experts / (t.ep * t.pp * (plan.trainer_expert_dp if zero else 1))
    return memory_time(26 * shard, plan.gpu)
