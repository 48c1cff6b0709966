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

* ``p2p`` (Mooncake/NIXL-style point to point, one RDMA transfer per tensor shard): each rollout
  GPU receives its destination-local shard of every tensor straight from the trainer GPU that
  holds it, one transfer per tensor, nothing packed; transfers overlap loading.

**The sender** (``weight_sync.sender``): before a gathered broadcast, a reshard or a checkpoint the
trainer's sharded weights are gathered into whole tensors, one tensor at a time, each gather a
collective on the topology with its own launch (``collective_overhead_s``):

* ``fsdp`` (verl, OpenRLHF's FSDP, SkyRL): ``DTensor.full_tensor()`` per tensor, an all-gather over
  the shard group (verl fully_async_policy base_detach_sync ``_sync_vllm_weights``);
* ``megatron`` (verl/NeMo-RL Megatron): per tensor, an all-gather over the tp ranks (dense tensors),
  over the ep ranks (routed experts), and a broadcast from the pipeline stage that holds it
  (verl ``per_tensor_generator``); with ``senders: per_stage`` each stage sends its own layers
  (slime, NeMo-RL) and no pipeline broadcast is needed;
* ``deepspeed`` (OpenRLHF): ``GatheredParameters`` per parameter, an all-gather over every ZeRO-3 rank.

Every broadcast on the wire is a collective too: one per bucket, or per tensor unbucketed, each
paying ``collective_overhead_s`` plus the topology's launch and hop latency. With ``senders:
per_stage`` the pp stages broadcast their layers in parallel: the senders' share is 1/pp each,
the receivers still take every byte.

The first four run their terms one after another; the pipelined ones run them as a pipeline over
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
# and bucketing of its 72.7 B bf16 parameters (scenarios/validation/C2-verl-broadcast.yaml), the
# per-tensor FSDP all-gathers priced on the topology taking their share: the FSDP sender's rate.
# The five fits below (C2, C1, G1, G2, G4) were iterated to a fixed point (the last pass moved
# none by more than 0.2%).
CONVERT_BYTES_PER_S = 6323599485.7777
# NeMo-RL nccl-reshard-refit docs (H100, DP8 -> TP8): Qwen3-4B refit 0.21–0.34 s (midpoint
# 0.275 s), 3.33 GB received and staged per GPU (FFN shard + broadcast rest). Fitted by
# `twin validate` on scenarios/validation/C1-nemo-rl-refit.yaml with the overheads below at
# their defaults.
STAGING_BYTES_PER_S = 19128338391.2596
# SkyRL PR #161 (8xH100, a 14B model at TP2, colocated CUDA IPC): a per-parameter sync of 4.4 s
# falls to 1.6 s with 1 GB buckets; fitted on the 4.4 s (G2-skyrl-bucketing.yaml), 1.6 s predicted.
CALL_OVERHEAD_S = 0.007776
# NeMo-RL checkpoint-engine-refit guide (36 x 8 H100): DeepSeek-V3 refit by NIXL in 9.25 s, each
# vLLM rank loading 45,395 tensors (69.95 GiB, 18 buckets); fitted there (G1-nemo-rl-checkpoint-
# engine.yaml), the NCCL, full-expert and 0.5B FP8 refits predicted.
TENSOR_OVERHEAD_S = 0.0001114
# verl's fully-async trainer, its per-tensor NCCL sync without checkpoint engine (Megatron trainer
# on H20, docs/advance/fully_async.md "checkpoint-engine Ablation"): Qwen3-30B-A3B 16 -> 16 GPUs in
# 15.76 s, ~18.8K tensors each gathered (tp, ep), broadcast and loaded one at a time. Fitted there
# (G4-verl-checkpoint-engine.yaml); the 235B sync, the checkpoint-engine syncs predicted.
COLLECTIVE_OVERHEAD_S = 0.0002783
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


def convert_time(plan: Plan, nbytes: float, tensors: int) -> float:
    """Seconds the sender spends turning gathered tensors into what it sends (renaming, re-layout,
    packing into buckets) for ``nbytes`` of weights. FSDP and DeepSpeed senders pay the rate fitted
    on verl's FSDP gather (C2; ``gather_convert_bytes_per_s`` when given), whose full tensors pass
    through the sender's state-dict path; a Megatron sender converts on the GPU, tensor by tensor
    (verl's per_tensor_generator): one copy, read and written at the GPU profile's element-wise
    bandwidth."""
    if sender_engine(plan) == "megatron":
        return elementwise_time(2 * nbytes, tensors, plan.gpu)
    return nbytes / convert_rate(plan)


def staging_rate(plan: Plan) -> float:
    return plan.weight_sync.staging_bytes_per_s or STAGING_BYTES_PER_S


def call_overhead(plan: Plan) -> float:
    ws = plan.weight_sync
    return CALL_OVERHEAD_S if ws.call_overhead_s is None else ws.call_overhead_s


def tensor_overhead(plan: Plan) -> float:
    ws = plan.weight_sync
    return TENSOR_OVERHEAD_S if ws.tensor_overhead_s is None else ws.tensor_overhead_s


def collective_overhead(plan: Plan) -> float:
    ws = plan.weight_sync
    return COLLECTIVE_OVERHEAD_S if ws.collective_overhead_s is None else ws.collective_overhead_s


def sender_engine(plan: Plan) -> str:
    """The trainer stack that gathers the weights: the scenario's, else Megatron for a trainer
    with tensor, pipeline or expert parallelism or a ZeRO stage below 3, else FSDP."""
    s = plan.weight_sync.sender
    if s != "auto":
        return s
    t = plan.placement.trainer
    return "megatron" if (t.tp > 1 or t.pp > 1 or t.ep > 1 or t.zero_stage < 3) else "fsdp"


def senders(plan: Plan) -> str:
    """Who sends (``weight_sync.senders``; auto: each trainer GPU its own shards for the methods
    built that way, one gathering rank otherwise)."""
    s = plan.weight_sync.senders
    if s != "auto":
        return s
    return "per_rank" if sync_method(plan) in ("checkpoint_engine", "nixl", "p2p", "nccl_reshard") else "one"


def sender_gather_time(plan: Plan, topo: Topology, tensors: int, waits: bool = False) -> float:
    """Seconds the trainer spends gathering whole tensors out of its shards, one tensor at a
    time (see the module docstring, "The sender"): each gather a collective over the group that
    shards it, paying the collective's launch and hop latency on the topology and moving the
    tensor's bytes at the group's bus bandwidth. A loop that sends tensor by tensor (``waits``:
    one send per tensor) waits on every collective it issues, each a synchronous round of
    ``collective_overhead_s`` (verl's per-tensor sync runs ray.util.collective ops, which wait);
    gathers feeding buckets are issued back to back on the GPU's stream and pay only the topology."""
    arch, t = plan.model, plan.placement.trainer
    engine, c = sender_engine(plan), (collective_overhead(plan) if waits else 0.0)
    w = float(arch.total_params) * arch.bytes_per_param
    experts = routed_expert_params(arch) * arch.bytes_per_param
    n_experts = arch.moe_layers * 3 * arch.moe.num_experts if arch.moe else 0

    def gathers(op: str, nbytes: float, count: int, group: range) -> float:
        if count <= 0 or len(group) <= 1:
            return 0.0
        fixed, per_byte = topo.collective_cost(op, group)
        return count * (fixed + c) + per_byte * nbytes

    if engine == "fsdp":
        return gathers("all_gather", w, tensors, topo.gpus(0, plan.trainer_shards))
    if engine == "deepspeed":
        return gathers("all_gather", w, tensors, topo.gpus(0, plan.trainer_gpus))
    dense_count = max(tensors - n_experts, 0)
    out = gathers("all_gather", w - experts if t.ep > 1 else w, dense_count if t.ep > 1 else tensors,
                  topo.gpus(0, t.tp))
    if t.ep > 1:
        out += gathers("all_gather", experts, n_experts, topo.gpus(0, t.ep))
    if t.pp > 1 and senders(plan) == "one":
        stage = plan.trainer_gpus // t.pp
        out += gathers("broadcast", w, tensors, range(0, plan.trainer_gpus, stage))
    return out


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

    ctx = _Context(plan, ws, topo, method, tp, params, b_train, b_wire, shrink, w, tensors, t_tensor, t_call,
                   collective_overhead(plan), trainer, rollout, passes)
    if method in ("reshard", "nccl_broadcast", "nccl_reshard", "checkpoint"):
        return _serial_cost(ctx)
    return _pipelined_cost(ctx)


@dataclass(frozen=True)
class _Context:
    """What every method's pricing reads (see :func:`weight_sync_cost`)."""

    plan: Plan
    ws: object
    topo: Topology
    method: str
    tp: int
    params: float
    b_train: float
    b_wire: float
    shrink: float
    w: float
    tensors: int
    t_tensor: float
    t_call: float
    c: float
    trainer: range
    rollout: range
    passes: object


def _serial_cost(x: _Context) -> WeightSyncCost:
    """reshard, nccl_broadcast, nccl_reshard and checkpoint: their terms one after another."""
    plan, ws, topo, method, tp, params = x.plan, x.ws, x.topo, x.method, x.tp, x.params
    b_train, b_wire, shrink, w, tensors = x.b_train, x.b_wire, x.shrink, x.w, x.tensors
    t_tensor, t_call, c, trainer, rollout, passes = x.t_tensor, x.t_call, x.c, x.trainer, x.rollout, x.passes
    arch = plan.model
    if method == "reshard":
        # the trainer's shards gathered tensor by tensor on its own GPUs (the wire of a reshard)
        gather = 0.0
        wire = sender_gather_time(plan, topo, tensors, waits=_calls(plan, w, tensors) >= tensors)
        staged, sent = w / tp, w  # a bucket holds whole gathered tensors (SkyRL #161's 1 GB of IPC handles)
        prec = passes(params / tp, params / tp)
    elif method == "nccl_broadcast":
        gather = (sender_gather_time(plan, topo, tensors, waits=_calls(plan, w, tensors) >= tensors)
                  + convert_time(plan, params * b_train, tensors))
        wire = _broadcast_time(plan, topo, rollout, w, _calls(plan, w, tensors), c)
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
        wire += topo.collective_time("broadcast", misc, [0, *rollout]) + c
        staged = sent = per_gpu + misc
        prec = passes(params / plan.trainer_gpus, staged / (b_wire * shrink))
    else:
        gather = sender_gather_time(plan, topo, tensors) + convert_time(plan, params * b_train, tensors)
        wire = 2 * w / ws.storage_bytes_per_s
        staged, sent = w / tp, w
        prec = passes(params, params / tp)
    if method == "nccl_reshard":  # written shard to shard into the engine's fused parameters
        tensors = tensor_count(arch, "engine")
    overhead = _calls(plan, sent, tensors) * t_call + tensors * t_tensor
    return WeightSyncCost(method, gather, wire, staged / staging_rate(plan), overhead, prec)


def _pipelined_cost(x: _Context) -> WeightSyncCost:
    """checkpoint_engine, nixl and p2p: their stages pipelined over buckets (p2p: over tensors)."""
    plan, ws, topo, method, tp, params = x.plan, x.ws, x.topo, x.method, x.tp, x.params
    b_train, b_wire, shrink, w, tensors = x.b_train, x.b_wire, x.shrink, x.w, x.tensors
    t_tensor, t_call, c, trainer, rollout, passes = x.t_tensor, x.t_call, x.c, x.trainer, x.rollout, x.passes
    arch = plan.model
    # checkpoint_engine, nixl and p2p: what each rollout GPU keeps — every tensor but the routed
    # experts whole (dense tensors travel whole, as NeMo-RL's shard_expert_weights sends them),
    # its 1/tp slice of each routed expert.
    experts = routed_expert_params(arch)
    local = (params - experts + experts / tp) * b_wire * shrink
    received = w if ws.expert_transfer == "full" else local
    prec = passes(params / plan.trainer_gpus, local / (b_wire * shrink))
    if method == "p2p":
        # One RDMA write per tensor shard, from the trainer GPU holding it to the rollout GPU that
        # keeps it (Mooncake transfer engine, NIXL): nothing packed, no collective, no bucket; a
        # rollout GPU's transfers arrive over its own rail while the trainer GPUs send in parallel,
        # and its loader takes each tensor as it lands (transfers and loading overlap).
        fixed, recv, send = _p2p_per_byte(topo, trainer, rollout)
        served = received * len(rollout) / plan.trainer_gpus
        wire = tensors * fixed + max(recv * received, send * served)
        load = local / staging_rate(plan) + tensors * t_tensor
        total = _pipeline([prec, wire, load], tensors)
        return WeightSyncCost(method, 0.0, wire, load, 0.0, prec, total)
    n = _calls(plan, received, tensors)
    # the loader copies the local slice; the rest of a full expert is received and dropped
    load = local / staging_rate(plan) + tensors * t_tensor + n * t_call
    if senders(plan) == "per_rank":
        # each trainer GPU packs the weights it owns into its send buffer once
        pack = params * b_train / plan.trainer_gpus / convert_rate(plan)
    else:
        # whole tensors gathered first (verl's checkpoint engine: every rank gathers each tensor and
        # keeps a 1/world share in host memory for the buckets), each GPU's share copied down its link
        link = plan.host_link
        share = params * b_train / plan.trainer_gpus
        pack = sender_gather_time(plan, topo, tensors) + share / (link.bandwidth_bytes_per_s * link.efficiency.at(share))
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
    wire = n * (fixed + c) + per_byte * w
    link = plan.host_link
    h2d = received / (link.bandwidth_bytes_per_s * link.efficiency.at(min(received, ws.bucket_bytes or received)))
    # the engine loads a bucket once it is in (no second device buffer): loading runs after the
    # pipelined pack, wire and H2D copies, not under them
    total = _pipeline([pack + prec, wire, h2d], n) + load
    return WeightSyncCost(method, pack, wire + h2d, load, 0.0, prec, total)


def _broadcast_time(plan: Plan, topo: Topology, rollout: range, nbytes: float, calls: int, c: float) -> float:
    """Seconds of a gathered broadcast of ``nbytes`` in ``calls`` collectives (one per bucket, or per
    tensor) from the trainer to every rollout GPU: each call its launch, hops and ``c``; the bytes at
    the ring's bus bandwidth. With ``senders: per_stage`` the trainer's pp stages broadcast their own
    layers at once, each in 1/pp of the calls; every rollout GPU still receives every byte, so the
    bytes take as long as one ring's."""
    fixed, per_byte = topo.collective_cost("broadcast", [0, *rollout])
    pp = plan.placement.trainer.pp if senders(plan) == "per_stage" else 1
    return math.ceil(calls / pp) * (fixed + c) + per_byte * nbytes
