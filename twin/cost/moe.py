"""Mixture-of-experts and context parallelism in the trainer: what EP and CP add to a rank's pass.

Megatron lays a trainer out as TP × CP × DP × PP for the dense layers and, with MoE parallel
folding, as EP × expert-DP × PP for the experts (experts not tensor-split): the ep ranks of an
expert group are ep consecutive GPUs of one pipeline stage, whatever the attention's layout.

A MoE layer, per micro-batch, on one GPU:

* **dispatch and combine**: the GPU's tokens (split over its tp ranks by sequence
  parallelism) go to their top-k experts' ranks and come back: two all-to-alls of
  tokens·k·hidden values in every forward, two more of their gradients in the backward
  (and two in a recomputed forward), over the EP group on the topology graph
  (:meth:`Topology.all_to_all_time`: on-node shares over NVLink, off-node ones through the
  rank's NIC). They sit between the router and the expert GEMMs: no overlap is assumed.
* **expert GEMMs**: the rank computes its experts' rows; the busiest rank of an EP group
  sets the pace, ``expert_load_imbalance`` × the mean (a field; its default is stated there).
  The experts run as one grouped GEMM per projection whose efficiency is read off the
  profile's GEMM curves at the whole grouped GEMM's FLOP and at one expert's token rows — far
  fewer rows than a dense GEMM of the micro-batch (128 experts top-8: 1/16 of the rows per
  expert), which is what makes a fine-grained MoE slower per FLOP than a dense model.

Context parallelism (ring attention, Megatron/TransformerEngine): a sequence's tokens are split
over cp GPUs (load-balanced causal chunks), each GPU's attention covers 1/cp of the pairs, and in
every layer each GPU passes its key/value chunk cp − 1 times round the ring (forward: K and V;
backward: K, V and their gradients). TransformerEngine overlaps each hop with the attention of
the chunk in hand, so only what the attention does not hide is exposed.
"""

from __future__ import annotations

from twin.config.model import ModelArch
from twin.config.plan import Plan
from twin.cost import micro_batch, transformer
from twin.cost.collectives import Topology
from twin.cost.roofline import attention_time, compute_time, elementwise_time


def routed_params(arch: ModelArch) -> float:
    """Parameters of all routed experts of all MoE layers (what EP shards)."""
    return arch.moe_layers * arch.moe.num_experts * arch.expert_params if arch.moe else 0.0


def routed_active_params(arch: ModelArch) -> float:
    """Routed-expert parameters one token passes through (top-k in every MoE layer)."""
    return arch.moe_layers * arch.moe.experts_per_token * arch.expert_params if arch.moe else 0.0


def _directions(kind: str, recompute: bool) -> int:
    """Passes that move activations across a layer: forwards (two with recomputation) and the
    backward's gradients."""
    if kind == "score":
        return 1
    return (2 if recompute else 1) + 1


def ep_group(plan: Plan, topo: Topology) -> range:
    """The first EP group's GPUs: ``ep`` consecutive ranks. MoE parallel folding orders the
    expert layers' ranks expert-tp, ep, expert-dp, pp, independently of the attention's
    tp-cp-dp-pp; with experts not tensor-split an EP group is ep neighbours (one node when ep
    fits in one)."""
    return topo.gpus(0, plan.placement.trainer.ep)


def expert_gemm_time(plan: Plan, tokens: float, kind: str) -> float:
    """Seconds of the routed experts' GEMMs on one GPU holding ``tokens`` tokens of a pass
    (forward, or forward + backward (+ recomputed forward)), its 1/pp of the layers.

    Each GPU computes 1/(tp) of its tokens' routed rows on average (the tp ranks split the
    tokens before dispatch, EP spreads them over the ep ranks whose experts they chose); the
    busiest EP rank does ``expert_load_imbalance`` times that. Efficiency: the GEMM curves at
    the grouped GEMM's FLOP (all the rank's rows of a micro-batch) and at one expert's rows
    (micro-batch tokens · k · ep / (tp · experts))."""
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    if not arch.moe or tokens <= 0:
        return 0.0
    recompute = kind == "train" and t.recompute
    factor = 1.0 if kind == "score" else (4.0 if recompute else 3.0)
    imbalance = t.expert_load_imbalance if t.ep > 1 else 1.0  # one rank holding every expert sums them
    flops = factor * 2.0 * routed_active_params(arch) * tokens / (t.tp * t.pp) * imbalance
    micro_tokens = min(micro_batch.cap(t, kind), tokens)
    m = arch.moe
    routed_rows = micro_tokens * m.experts_per_token / t.tp  # the rank's rows of a micro-batch, all experts
    rows = max(1.0, routed_rows * t.ep / m.num_experts)  # one expert's
    # One grouped GEMM (gate, up or down) runs all the rank's experts in one kernel: its size is
    # their rows together, its tiles as short as one expert's rows.
    per_call = 2.0 * routed_rows * arch.hidden_size * m.expert_intermediate_size
    return compute_time(flops, gpu, arch.dtype, per_call, rows)


def routing_time(plan: Plan, tokens: float, kind: str) -> float:
    """Seconds of the memory-bound work around the experts on one GPU holding ``tokens`` tokens
    of a pass, its 1/pp of the MoE layers (Megatron-Core's router and token dispatcher,
    megatron/core/transformer/moe/router.py and token_dispatcher.py):

    * **router**: the gate's scores over every expert in fp32 (``moe_router_dtype``), their
      softmax or sigmoid and the top-k: written once, read and written once, read once — 4·E
      bytes × 4 per token in 3 kernels; its backward about the same in 2. (The gate's matmul
      is a dense GEMM, priced with the others.)
    * **permute / unpermute**: each token copied to its k experts' rows (read h, write k·h) and
      their outputs summed back weighted by the router's probabilities (read k·h and k
      probabilities, write h), in the model's dtype, one kernel each (TransformerEngine's fused
      ``moe_permute``/``moe_unpermute``); with expert parallelism the received tokens are sorted
      by local expert and back once more (``sort_chunks_by_idxs``), a second pair. The backward
      moves the same bytes again.

    Each GPU handles its tokens / tp (sequence parallel) of a micro-batch per layer."""
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    if not arch.moe or tokens <= 0:
        return 0.0
    m = arch.moe
    routed = tokens / t.tp
    pairs = 2 if t.ep > 1 else 1  # permute + unpermute, and the sort by local expert under EP
    copy_bytes = pairs * 2 * (m.experts_per_token + 1) * arch.hidden_size * arch.bytes_per_param
    router_bytes = 4 * 4 * m.num_experts
    micro = float(micro_batch.count(t, tokens, kind))
    layers = arch.moe_layers / t.pp
    directions = _directions(kind, t.recompute)
    per_direction = elementwise_time(routed * (copy_bytes + router_bytes) * layers, (2 * pairs + 3) * layers * micro,
                                     gpu)
    return directions * per_direction


def ep_all_to_all_time(plan: Plan, topo: Topology, tokens: float, kind: str) -> float:
    """All-to-all seconds of expert parallelism for a GPU holding ``tokens`` tokens: dispatch
    and combine in each direction of each MoE layer of its stage. Zero without EP."""
    arch, t = plan.model, plan.placement.trainer
    if t.ep == 1 or not arch.moe or tokens <= 0:
        return 0.0
    micro = float(micro_batch.count(t, tokens, kind))
    sent = tokens / micro / t.tp * arch.moe.experts_per_token * arch.hidden_size * arch.bytes_per_param
    per_layer = 2 * topo.all_to_all_time(sent, ep_group(plan, topo))  # dispatch, combine
    return _directions(kind, t.recompute) * arch.moe_layers / t.pp * micro * per_layer


def cp_ring_time(plan: Plan, topo: Topology, tokens: float, pairs: float, kind: str) -> float:
    """Exposed seconds of ring attention's key/value exchange for a GPU holding ``tokens``
    tokens (1/cp of its sequences) and ``pairs`` attention pairs: per layer and direction,
    cp − 1 hops of its K/V chunk (and, backward, their gradients too) to the next ring rank,
    less the attention compute each hop hides behind. Zero without CP."""
    arch, t, gpu = plan.model, plan.placement.trainer, plan.gpu
    if t.cp == 1 or tokens <= 0:
        return 0.0
    _, kv_width = transformer._qkv_dims(arch)
    if not arch.mla:
        kv_width *= 2  # keys and values (MLA: the latent carries both)
    micro = float(micro_batch.count(t, tokens, kind))
    chunk = tokens / micro * kv_width * arch.bytes_per_param / min(t.tp, arch.num_kv_heads)
    ring = topo.gpus(0, t.tp * t.cp)
    hop = topo.p2p_time(chunk, ring[0], ring[-1] if t.cp > 1 else ring[0])  # the ring's slowest hop
    layers = transformer.context_attention_layers(arch)  # the ring runs in the full-attention layers
    attn = attention_time(arch.attention_flops_per_token_pair / layers * pairs / micro / t.tp,
                          gpu, arch.dtype, transformer.attention_head_dim(arch))
    forward = (t.cp - 1) * max(0.0, hop - attn / t.cp)
    backward = (t.cp - 1) * max(0.0, 2 * hop - 2 * attn / t.cp)  # K, V and dK, dV; backward ≈ 2× forward
    forwards = 1 if kind == "score" else (2 if t.recompute else 1)
    per_layer = forwards * forward + (backward if kind == "train" else 0.0)
    return layers / t.pp * micro * per_layer
