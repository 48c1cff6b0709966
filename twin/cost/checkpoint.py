"""What a checkpoint costs: its size, the time to write it, the time training waits, the time
to read it back on a restart.

A checkpoint holds what a restart cannot rebuild: the trainer's weights (16-bit) and its
optimizer state (fp32 master weights, Adam's m and v), once each — the ZeRO accounting of
:mod:`twin.cost.memory`, 2 + 12 bytes per parameter — and the critic's where there is one. The
reference policy is the initial model (reloadable) and the engines hold a copy of the weights,
so neither is saved. Every trainer GPU writes its shard: through its host link to host memory,
then from its node to shared storage at the host profile's rate (default: the Llama 3 storage
fabric's share, docs/goodput.md). Training waits for the whole write (synchronous) or only for
the copy to host memory (``faults.checkpoint.asynchronous``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.config.hardware import LLAMA3_GPUS
from twin.config.plan import Plan

BYTES_PER_PARAM = 2 + 12  # 16-bit weights + fp32 master weights, m and v (twin.cost.memory)
# Llama 3's storage fabric (Tectonic): 2 TB/s sustained for its 16,384-GPU job (arXiv 2407.21783, 3.3.1)
LLAMA3_STORAGE_BYTES_PER_S = 2e12
STORAGE_PER_GPU = LLAMA3_STORAGE_BYTES_PER_S / LLAMA3_GPUS


@dataclass(frozen=True)
class CheckpointCost:
    """Bytes saved, and seconds: the write to storage, what training waits for, the read back."""

    bytes: float
    write_s: float
    blocking_s: float
    read_s: float
    copy_s: float  # device to host memory, every trainer GPU at once


def checkpoint_bytes(plan: Plan) -> float:
    """The trainer's weights and optimizer state, once (the critic's too: same architecture)."""
    models = 2 if plan.algorithm.critic else 1
    return plan.model.total_params * BYTES_PER_PARAM * models


def trainer_nodes(plan: Plan) -> int:
    """Nodes the trainer's GPUs occupy (each writes its GPUs' shards)."""
    return max(1, math.ceil(plan.trainer_gpus / plan.cluster.gpus_per_node))


def storage_rates(plan: Plan) -> tuple[float, float]:
    """(write, read) bytes/s of one node to shared storage: the host profile's, else the Llama 3
    fabric's share per GPU times the node's GPUs."""
    host = plan.cluster.host
    write = host.storage_write_bytes_per_s or STORAGE_PER_GPU * plan.cluster.gpus_per_node
    return write, host.storage_read_bytes_per_s or write


def checkpoint_cost(plan: Plan) -> CheckpointCost:
    """The plan's checkpoint: its bytes and the seconds of :class:`CheckpointCost`."""
    size = checkpoint_bytes(plan)
    nodes = trainer_nodes(plan)
    write, read = storage_rates(plan)
    link = plan.host_link
    copy = size / plan.trainer_gpus / (link.bandwidth_bytes_per_s * link.efficiency.best)
    write_s = max(size / (nodes * write), copy)
    read_s = max(size / (nodes * read), copy)
    blocking = copy if plan.scenario.faults.checkpoint.asynchronous else write_s
    return CheckpointCost(size, write_s, blocking, read_s, copy)
