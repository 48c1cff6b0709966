"""Weight sync: getting the trainer's new weights into the rollout engines.

Every method costs three terms, as measured systems show (PUBLISHED.md C):

* **gather/convert** on the sender: summoning FSDP shards into full tensors, renaming,
  re-layout, bucketing — verl spent ~23.5 s of a 72B broadcast here and only 0.5–1.8 s on
  the wire, so a model with only a wire term is wrong by an order of magnitude;
* the **wire**: a collective on the topology;
* **staging** on the receiver: copying received bytes into the engine's fused parameters.

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

The two software rates are properties of the stack, not the hardware. Each is fitted on one
published figure (below) and predicts the others (``scenarios/validation/``).
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.plan import Plan
from twin.cost.collectives import Topology

# verl issue 7060 (H100, NCCL full broadcast): Qwen2.5-72B, ~23.5 s of sender-side gathering
# and bucketing of its 72.7 B bf16 parameters.
CONVERT_BYTES_PER_S = 72.7e9 * 2 / 23.5
# NeMo-RL nccl-reshard-refit docs (H100, DP8 -> TP8): Qwen3-4B refit 0.21–0.34 s (midpoint
# 0.275 s). Of its 8.04 GB, 5.38 GB are FFN weights (each of the 8 rollout GPUs receives
# 1/8; the docs' "XferDTensor fraction" 66.9% agrees) and 2.66 GB go by broadcast to all of
# them: 3.33 GB staged per GPU in 0.265 s (the midpoint less ~0.01 s on the wire here).
STAGING_BYTES_PER_S = 3.33e9 / 0.265

@dataclass(frozen=True)
class WeightSyncCost:
    method: str
    gather_convert_s: float
    wire_s: float
    load_s: float

    @property
    def total_s(self) -> float:
        return self.gather_convert_s + self.wire_s + self.load_s


def sync_method(plan: Plan) -> str:
    m = plan.weight_sync.method
    if m == "auto":
        return plan.mode.auto_weight_sync
    return m


def convert_rate(plan: Plan) -> float:
    return plan.weight_sync.gather_convert_bytes_per_s or CONVERT_BYTES_PER_S


def staging_rate(plan: Plan) -> float:
    return plan.weight_sync.staging_bytes_per_s or STAGING_BYTES_PER_S


def weight_sync_cost(plan: Plan) -> WeightSyncCost:
    """Seconds to move one new set of weights from the trainer into every engine."""
    arch, ws, p = plan.model, plan.weight_sync, plan.placement
    topo = Topology.of(plan.cluster)
    method = sync_method(plan)
    w = arch.weight_bytes
    tp = p.rollout.tp
    trainer = topo.gpus(0, plan.trainer_gpus)
    if method == "reshard":
        wire = topo.collective_time("all_gather", w / (p.trainer.tp * p.trainer.pp), trainer)
        return WeightSyncCost(method, 0.0, wire, w / tp / staging_rate(plan))
    rollout = topo.gpus(plan.trainer_gpus, plan.rollout_gpus)  # pools laid out trainer first
    if method == "nccl_broadcast":
        wire = topo.collective_time("broadcast", w, [0, *rollout])
        return WeightSyncCost(method, w / convert_rate(plan), wire, w / tp / staging_rate(plan))
    if method == "nccl_reshard":
        bulk = arch.ffn_params * arch.bytes_per_param
        misc = w - bulk
        per_gpu = bulk / tp  # each rollout GPU receives its own shard of the FFN weights
        # The bulk moves point to point: a rollout GPU's shard arrives over its own link,
        # while the trainer GPUs send in parallel; the misc part is one packed broadcast.
        fixed, per_byte = topo.collective_cost("p2p", [0, rollout[0]])
        send_per_gpu = bulk * (len(rollout) // tp) / plan.trainer_gpus
        wire = fixed + per_byte * max(per_gpu, send_per_gpu)
        wire += topo.collective_time("broadcast", misc, [0, *rollout])
        return WeightSyncCost(method, 0.0, wire, (per_gpu + misc) / staging_rate(plan))
    gather = w / convert_rate(plan)
    return WeightSyncCost(method, gather, 2 * w / ws.storage_bytes_per_s, w / tp / staging_rate(plan))
