"""Weight sync: getting the trainer's new weights into the rollout engines.

Three costs, as measured systems show (PUBLISHED.md C): the sender-side *gather/convert*
(summoning FSDP shards into full tensors, renaming, re-layout for the engine's TP,
bucketing), the *wire* (a collective on the topology), and the engine's *load* (copying
into its own buffers). For a 72B model verl spent ~23.5 s gathering and bucketing and only
0.5–1.8 s on the wire: a model with only a wire term is wrong by an order of magnitude.

Methods:
* ``reshard`` (colocated, verl hybrid engine / NeMo-RL refit): an all-gather over the
  trainer GPUs, then each GPU converts the full weights into its engine's layout.
* ``nccl_broadcast`` (separate pools): the trainer gathers and buckets the full weights,
  then broadcasts them to every rollout GPU over the network.
* ``checkpoint``: write to shared storage, every engine reads it back.

The gather/convert throughput is a property of the software stack, not the hardware. Its
defaults are fitted on one published figure per method (below) and predict the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.config.scenario import Scenario
from twin.cost.collectives import Topology
from twin.cost.roofline import memory_time

QWEN3_4B_BYTES = 4.02e9 * 2  # bf16 weights, from the model's config
QWEN25_72B_BYTES = 72.7e9 * 2

# NeMo-RL nccl-reshard-refit docs: Qwen3-4B refit 0.21–0.34 s on H100 (midpoint 0.275 s).
RESHARD_CONVERT_BYTES_PER_S = QWEN3_4B_BYTES / 0.275
# verl issue 7060: 72B full broadcast on H100, ~23.5 s of sender-side gather and bucketing.
BROADCAST_CONVERT_BYTES_PER_S = QWEN25_72B_BYTES / 23.5

DEFAULT_CONVERT_RATE = {
    "reshard": (RESHARD_CONVERT_BYTES_PER_S, "NeMo-RL refit, Qwen3-4B 0.21–0.34 s on H100"),
    "nccl_broadcast": (BROADCAST_CONVERT_BYTES_PER_S, "verl issue 7060, 72B gather 23.5 s on H100"),
    "checkpoint": (BROADCAST_CONVERT_BYTES_PER_S, "as nccl_broadcast: the same gather precedes the write"),
}


@dataclass(frozen=True)
class WeightSyncCost:
    method: str
    gather_convert_s: float
    wire_s: float
    load_s: float

    @property
    def total_s(self) -> float:
        return self.gather_convert_s + self.wire_s + self.load_s


def sync_method(scenario: Scenario) -> str:
    m = scenario.weight_sync.method
    if m == "auto":
        return "reshard" if scenario.placement.mode == "colocated" else "nccl_broadcast"
    return m


def weight_sync_cost(scenario: Scenario) -> WeightSyncCost:
    """Seconds to move one new set of weights from the trainer into every engine."""
    arch, ws, p = scenario.model, scenario.weight_sync, scenario.placement
    topo = Topology.of(scenario.cluster)
    method = sync_method(scenario)
    w = arch.weight_bytes
    rate = ws.gather_convert_bytes_per_s or DEFAULT_CONVERT_RATE[method][0]
    load = memory_time(w / p.rollout.tp, scenario.cluster.gpu)
    if method == "reshard":
        trainer = topo.gpus(0, p.trainer.gpus)
        wire = topo.collective_time("all_gather", w / (p.trainer.tp * p.trainer.pp), trainer)
        return WeightSyncCost(method, w / rate, wire, load)
    if method == "nccl_broadcast":
        # Trainer pool first, rollout pool after it; the broadcast spans trainer rank 0 and
        # every rollout GPU.
        group = [0] + topo.gpus(p.trainer.gpus, p.rollout.gpus)
        wire = topo.collective_time("broadcast", w, group)
        return WeightSyncCost(method, w / rate, wire, load)
    storage = ws.storage_bytes_per_s
    return WeightSyncCost(method, w / rate, 2 * w / storage, load)
