"""Weight sync: getting the trainer's new weights into the rollout engines.

Every method costs the terms measured systems show (PUBLISHED.md C and G):

* **gather/convert** on the sender: summoning FSDP shards into full tensors, renaming,
  re-layout, bucketing — verl spent ~23.5 s of a 72B broadcast here and only 0.5–1.8 s on
  the wire, so a model with only a wire term is wrong by an order of magnitude;
* the **wire**: a collective or point-to-point transfer on the topology;
* **staging** on the receiver: copying received bytes into the engine's fused parameters;
* **software overhead**: one call (an RPC to the engines, a ``load_weights`` call, a collective
  launch) per bucket — per *tensor* in naive loops (``bucket_bytes: 0``): open-instruct #1535
  spent 0.5 s of a 120 s sync in NCCL and the rest in per-parameter RPCs — and a loader cost
  per tensor each rollout GPU loads (DeepSeek-V3 has 45,395 tensors per vLLM rank);
* **precision and deltas**: with fp8 engines and a bf16 trainer the weights are quantised on the
  sender (fp8 bytes on the wire) or the receiver, an element-wise pass at the GPU's bandwidth;
  a delta sync compares against a baseline on the sender and sends only the changed fraction
  (``delta_density``) with an index per changed weight.

Methods:

* ``reshard`` (colocated, verl hybrid engine / NeMo-RL colocated IPC): an all-gather over
  the trainer GPUs, then every GPU stages its engine's shard (W/tp) into the engine.
* ``nccl_broadcast`` (separate pools, verl): trainer rank 0 gathers and converts the full
  weights and broadcasts them to every rollout GPU; each engine rank keeps and stages its
  shard.
* ``nccl_reshard`` (separate pools, NeMo-RL's shard-to-shard refit): each rollout GPU
  receives exactly its shard of the FFN weights from the trainer ranks; the rest
  (attention, embeddings, norms, shared experts) goes by packed broadcast.
* ``checkpoint``: gather, write to shared storage, every engine reads it back.
* ``checkpoint_engine``: buckets broadcast to every rollout node's host memory; each GPU copies
  its part in over the host link and stages it. Pack, wire, H2D and staging are pipelined
  over the buckets.
* ``nixl``: each rollout GPU pulls its destination-local bytes from the trainer GPUs by RDMA
  (NeMo-RL's checkpoint-engine refit with NIXL); two buffers let the wire overlap loading.

The first four run their terms one after another; the last two run them as a pipeline over
``n`` buckets: ``sum(stage) / n + (n - 1) · max(stage) / n`` — big buckets pay a long fill and
drain, small ones many calls.

Each software rate is a property of the stack, not the hardware, and is fitted once on one
published figure (below) that predicts the others (``scenarios/validation/``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.config.hardware import DTYPE_BYTES
from twin.config.model import ModelArch
from twin.config.plan import Plan
from twin.cost.collectives import Topology
from twin.cost.roofline import elementwise_time

# verl issue 7060 (H100, NCCL full broadcast): Qwen2.5-72B, ~23.5 s of sender-side gathering
# and bucketing of its 72.7 B bf16 parameters (scenarios/validation/C2-verl-broadcast.yaml).
CONVERT_BYTES_PER_S = 72.7e9 * 2 / 23.5
# NeMo-RL nccl-reshard-refit docs (H100, DP8 -> TP8): Qwen3-4B refit 0.21–0.34 s (midpoint
# 0.275 s), 3.33 GB received and staged per GPU (FFN shard + broadcast rest). Fitted by
# `twin validate` on scenarios/validation/C1-nemo-rl-refit.yaml with the two overheads below at
# their defaults (the three fits were iterated to a fixed point; each moves the others <1%).
STAGING_BYTES_PER_S = 1.937e10
# SkyRL PR #161 (8xH100, a 14B model at TP2, colocated CUDA IPC): a per-parameter sync of 4.4 s
# falls to 1.6 s with 1 GB buckets; fitted on the 4.4 s (G2-skyrl-bucketing.yaml), 1.6 s predicted.
CALL_OVERHEAD_S = 8.09e-3
# NeMo-RL checkpoint-engine-refit guide (36 x 8 H100): DeepSeek-V3 refit by NIXL in 9.25 s, each
# vLLM rank loading 45,395 tensors (69.95 GiB, 18 buckets); fitted there (G1-nemo-rl-checkpoint-
# engine.yaml), the NCCL, full-expert and 0.5B FP8 refits predicted.
TENSOR_OVERHEAD_S = 1.12e-4
# Delta sync: bytes of the index sent with each changed weight (a 32-bit position; NeMo-RL's
# sparse refit packs positions into 16/32/64-bit deltas, slime and the HF blog send int32 indices).
DELTA_INDEX_BYTES = 4.0


@dataclass(frozen=True)
class WeightSyncCost:
    """Seconds of one weight sync. The terms are each stage's own time; ``total_s`` is their sum
    for the serial methods and the pipeline's time for ``checkpoint_engine`` and ``nixl``."""

    method: str
    gather_convert_s: float
    wire_s: float
    load_s: float
    overhead_s: float = 0.0  # per-call and per-tensor software costs
    convert_precision_s: float = 0.0  # quantise-on-sync and delta encoding passes
    pipelined_s: float | None = None

    @property
    def total_s(self) -> float:
        if self.pipelined_s is not None:
            return self.pipelined_s
        return self.gather_convert_s + self.wire_s + self.load_s + self.overhead_s + self.convert_precision_s


def sync_method(plan: Plan) -> str:
    m = plan.weight_sync.method
    if m == "auto":
        return plan.mode.auto_weight_sync
    return m


def convert_rate(plan: Plan) -> float:
    return plan.weight_sync.gather_convert_bytes_per_s or CONVERT_BYTES_PER_S


def staging_rate(plan: Plan) -> float:
    return plan.weight_sync.staging_bytes_per_s or STAGING_BYTES_PER_S


def call_overhead(plan: Plan) -> float:
    ws = plan.weight_sync
    return CALL_OVERHEAD_S if ws.call_overhead_s is None else ws.call_overhead_s


def tensor_overhead(plan: Plan) -> float:
    ws = plan.weight_sync
    return TENSOR_OVERHEAD_S if ws.tensor_overhead_s is None else ws.tensor_overhead_s


def tensor_count(arch: ModelArch, layout: str = "hf") -> int:
    """Weight tensors one rollout GPU loads, counted from the architecture.

    ``hf``: the checkpoint's tensors as HF names them, which a loader fed by state dicts takes one
    by one. Per layer: the attention projections (q, k, v, o; MLA: q_a_proj, q_a_layernorm,
    q_b_proj — or q_proj without a q LoRA — kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
    o_proj) and two norms; a dense FFN's gate, up and down; a MoE layer's router, three matrices
    per routed expert and three for the shared expert(s). Plus the embedding, the final norm and
    an untied head. Not in the architecture, so not counted: attention biases (Qwen2: 3 per
    layer), q/k norms (Qwen3: 2 per layer), a router's score-correction bias (DeepSeek-V3: 1 per
    MoE layer).

    ``engine``: the engine's fused parameters, which a shard-to-shard refit writes directly
    (vLLM: qkv_proj, o_proj, gate_up_proj, down_proj, the experts as w13 and w2 of all experts).
    """
    if layout == "engine":
        attention = 5 if arch.mla else 2  # MLA: fused q_a/kv_a, q_a/kv_a norms, q_b, kv_b, o
        count = arch.num_layers * (attention + 2) + arch.dense_layers * 2
        if arch.moe:
            count += arch.moe_layers * (3 + (2 if arch.moe.shared_experts else 0))
        return count + (1 if arch.tie_embeddings else 2) + 1
    if arch.mla:
        attention = (3 if arch.mla.q_lora_rank else 1) + 4
    else:
        attention = 4
    count = arch.num_layers * (attention + 2) + arch.dense_layers * 3
    if arch.moe:
        count += arch.moe_layers * (1 + 3 * arch.moe.num_experts + (3 if arch.moe.shared_experts else 0))
    return count + (1 if arch.tie_embeddings else 2) + 1


def routed_expert_params(arch: ModelArch) -> float:
    return arch.moe_layers * arch.moe.num_experts * arch.expert_params if arch.moe else 0.0


def _calls(plan: Plan, nbytes: float, tensors: int) -> int:
    """Calls to move ``nbytes`` in ``tensors`` tensors: one per bucket, or per tensor unbucketed."""
    bucket = plan.weight_sync.bucket_bytes
    if bucket <= 0:
        return tensors
    # a tensor is never split across buckets: a bucket smaller than a tensor carries it alone,
    # so there are never more calls than tensors (and a tiny bucket cannot overflow the count)
    buckets = nbytes / bucket
    return tensors if buckets >= tensors else max(1, math.ceil(buckets))


def _p2p_per_byte(topo: Topology, trainer: range, rollout: range) -> tuple[float, float, float]:
    """(fixed s, s per byte received by each rollout GPU, s per byte sent by each trainer GPU) when
    every GPU of both pools moves its part at once: a node's GPUs share its NICs (the topology's
    node egress), so one GPU alone does not get them all. Pools in one NVLink domain use NVLink."""
    fixed, alone = topo.collective_cost("p2p", [trainer[0], rollout[0]])
    if topo.domain_of(trainer[0]) == topo.domain_of(rollout[-1]):
        return fixed, alone, alone

    def per_byte(pool: range) -> float:
        return max(len(m) / topo.node_egress(m) for m in topo._by_node(pool))

    return fixed, max(alone, per_byte(rollout)), max(alone, per_byte(trainer))


def _pipeline(stages: list[float], n: int) -> float:
    """Seconds of ``n`` buckets through stages whose totals over all buckets are ``stages``."""
    per_bucket = [s / n for s in stages]
    return sum(per_bucket) + (n - 1) * max(per_bucket)


def weight_sync_cost(plan: Plan) -> WeightSyncCost:
    """Seconds to move one new set of weights from the trainer into every engine."""
    arch, ws, p = plan.model, plan.weight_sync, plan.placement
    topo = Topology.of(plan.cluster)
    method = sync_method(plan)
    tp = p.rollout.tp
    params = float(arch.total_params)
    b_train = arch.bytes_per_param  # the trainer's weights keep the model's dtype
    b_roll = DTYPE_BYTES[plan.rollout_dtype]
    quantise = b_roll != b_train
    b_wire = b_roll if quantise and ws.quantise_on == "sender" else b_train
    # delta sync: the changed fraction, each changed weight with its index
    shrink = ws.delta_density * (b_wire + DELTA_INDEX_BYTES) / b_wire if ws.delta else 1.0
    w = params * b_wire * shrink  # bytes of one full copy on the wire
    tensors = tensor_count(arch)
    t_tensor, t_call = tensor_overhead(plan), call_overhead(plan)
    trainer = topo.gpus(0, plan.trainer_gpus)
    rollout = topo.gpus(plan.trainer_gpus, plan.rollout_gpus)  # pools laid out trainer first

    def passes(sender_params: float, receiver_params: float) -> float:
        """Element-wise passes over the weights: a delta's compare against the baseline (read
        both) on the sender, quantisation (read one dtype, write the other) where it happens;
        one kernel per tensor, at the profile's element-wise bandwidth."""
        t = 0.0
        if ws.delta:
            t += elementwise_time(sender_params * 2 * b_train, tensors, plan.gpu)
        if quantise:
            where = sender_params if ws.quantise_on == "sender" else receiver_params
            t += elementwise_time(where * (b_train + b_roll), tensors, plan.gpu)
        return t

    if method in ("reshard", "nccl_broadcast", "nccl_reshard", "checkpoint"):
        if method == "reshard":
            gather = 0.0
            wire = topo.collective_time("all_gather", params * b_train / (p.trainer.tp * p.trainer.pp), trainer)
            staged, sent = w / tp, w  # a bucket holds whole gathered tensors (SkyRL #161's 1 GB of IPC handles)
            prec = passes(params / tp, params / tp)
        elif method == "nccl_broadcast":
            gather = params * b_train / convert_rate(plan)
            wire = topo.collective_time("broadcast", w, [0, *rollout])
            staged, sent = w / tp, w
            prec = passes(params, params / tp)
        elif method == "nccl_reshard":
            gather = 0.0
            bulk = arch.ffn_params * b_wire * shrink
            misc = w - bulk
            per_gpu = bulk / tp  # each rollout GPU receives its own shard of the FFN weights
            # The bulk moves point to point: a rollout GPU's shard arrives over its own link,
            # while the trainer GPUs send in parallel; the misc part is one packed broadcast.
            fixed, recv, send = _p2p_per_byte(topo, trainer, rollout)
            send_per_gpu = bulk * (len(rollout) // tp) / plan.trainer_gpus
            wire = fixed + max(recv * per_gpu, send * send_per_gpu)
            wire += topo.collective_time("broadcast", misc, [0, *rollout])
            staged = sent = per_gpu + misc
            prec = passes(params / plan.trainer_gpus, staged / (b_wire * shrink))
        else:
            gather = params * b_train / convert_rate(plan)
            wire = 2 * w / ws.storage_bytes_per_s
            staged, sent = w / tp, w
            prec = passes(params, params / tp)
        if method == "nccl_reshard":  # written shard to shard into the engine's fused parameters
            tensors = tensor_count(arch, "engine")
        overhead = _calls(plan, sent, tensors) * t_call + tensors * t_tensor
        return WeightSyncCost(method, gather, wire, staged / staging_rate(plan), overhead, prec)

    # checkpoint_engine and nixl: what each rollout GPU keeps — every tensor but the routed
    # experts whole (dense tensors travel whole, as NeMo-RL's shard_expert_weights sends them),
    # its 1/tp slice of each routed expert.
    experts = routed_expert_params(arch)
    local = (params - experts + experts / tp) * b_wire * shrink
    received = w if ws.expert_transfer == "full" else local
    n = _calls(plan, received, tensors)
    # the loader copies the local slice; the rest of a full expert is received and dropped
    load = local / staging_rate(plan) + tensors * t_tensor + n * t_call
    prec = passes(params / plan.trainer_gpus, local / (b_wire * shrink))
    # each trainer GPU packs the weights it owns into its send buffer once
    pack = params * b_train / plan.trainer_gpus / convert_rate(plan)
    if method == "nixl":
        # One-sided reads: a rollout GPU's bytes come over its own NIC while the trainer GPUs
        # serve all rollout GPUs' reads in parallel.
        fixed, recv, send = _p2p_per_byte(topo, trainer, rollout)
        served = received * len(rollout) / plan.trainer_gpus
        wire = n * fixed + max(recv * received, send * served)
        total = _pipeline([pack + prec, wire, load], n)
        return WeightSyncCost(method, pack, wire, load, 0.0, prec, total)
    # checkpoint_engine: one broadcast of every bucket to the rollout nodes' host memory, then
    # each GPU copies its part in over its host link (pinned memory).
    fixed, per_byte = topo.collective_cost("broadcast", [0, *rollout])
    wire = n * fixed + per_byte * w
    link = plan.host_link
    h2d = received / (link.bandwidth_bytes_per_s * link.efficiency.at(min(received, ws.bucket_bytes or received)))
    # the engine loads a bucket once it is in (no second device buffer): loading runs after the
    # pipelined pack, wire and H2D copies, not under them
    total = _pipeline([pack + prec, wire, h2d], n) + load
    return WeightSyncCost(method, pack, wire + h2d, load, 0.0, prec, total)
