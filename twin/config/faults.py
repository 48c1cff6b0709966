"""The ``faults`` section of a scenario: what interrupts a run at scale and what it costs.

A run of thousands of GPUs is interrupted every few hours (the GPU profile's reliability,
:class:`twin.config.hardware.Reliability`: the Llama 3 report's rate by default), restarts from
its last checkpoint, and runs at the pace of its slowest GPU in between. This section says how
the job restarts (each step's time, with its source or marked assumed), how it checkpoints, how
much slower than the profile its GPUs run (stragglers) and how many spare nodes it holds. What
it all costs is the report's ``faults`` section (:mod:`twin.analysis.faults`); docs/goodput.md
gives every default's source.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from twin.config import limits
from twin.config.hardware import Strict
from twin.errors import InputError

Seconds = float


class Restart(Strict):
    """The time from a failure to training again, step by step (the checkpoint's read and the
    weight sync to the engines are priced, not set: :mod:`twin.cost.checkpoint`)."""

    detect_s: Seconds = Field(
        default=30.0, ge=0, le=limits.MAX_SECONDS,
        description="From the failure until the launcher (torchrun, Ray) tears the job down. Assumed: a crashed "
        "rank's error reaches it in seconds; a hang waits for the NCCL watchdog (PyTorch's default 600 s, "
        "pytorch/pytorch#110947): set 600 if your failures hang.")
    scheduler_s: Seconds = Field(
        default=120.0, ge=0, le=limits.MAX_SECONDS,
        description="Requeueing the job and starting its processes on every node. Assumed.")
    engine_start_s: Seconds = Field(
        default=60.0, ge=0, le=limits.MAX_SECONDS,
        description="An inference engine's start-up (vLLM: model init, CUDA-graph capture) before it takes "
        "requests; also how long a lost engine is out when it restarts alone. Assumed.")
    nccl_init_s: Seconds = Field(
        default=30.0, ge=0, le=limits.MAX_SECONDS,
        description="Creating the job's NCCL communicators again. Assumed.")
    node_replace_s: Seconds = Field(
        default=600.0, ge=0, le=limits.MAX_SECONDS,
        description="After a hardware failure, until a replacement for the failed node joins when no spare node "
        "is free (drain, swap, health check); also how long a failed node is away, so how long a spare "
        "stays taken. Assumed.")

    def fixed_s(self) -> float:
        """The steps every restart pays whatever the model: detection, scheduling, engine start and
        NCCL initialisation."""
        return self.detect_s + self.scheduler_s + self.engine_start_s + self.nccl_init_s


class Checkpoint(Strict):
    """How the trainer saves the state a restart resumes from."""

    every_steps: int | None = Field(
        default=None, ge=1, le=limits.MAX_STEPS * 1000,
        description="A checkpoint every this many optimizer steps (verl trainer.save_freq, NeMo-RL "
        "checkpointing.save_period). None: Young's optimum, sqrt(2 × the time a checkpoint blocks training × "
        "the job's mean time between interruptions), at least one step.")
    asynchronous: bool = Field(
        default=False,
        description="false: training waits while the checkpoint is written to storage (verl's and NeMo-RL's "
        "default). true: training waits only while the state is copied to host memory, the write runs in "
        "the background (PyTorch DCP async_save, Megatron async_save); a failure during the write loses "
        "the checkpoint being written.")


class Stragglers(Strict):
    """How much slower than the profile a cluster's GPUs run (the profile is the nominal rate)."""

    unit: Literal["gpu", "node"] = Field(
        default="gpu",
        description="What a slowdown is drawn for: each GPU, or each node (all its GPUs, and the CPU cores "
        "rule rewards run on, alike).")
    spread: float = Field(
        default=0.08, ge=0, le=1,
        description="Each unit is slower than the profile by a share drawn uniformly from 0 to spread: 0.08, "
        "Sinha et al. (SC'22, arXiv 2208.11035): 8% average performance variation between GPUs of one SKU "
        "on five clusters (the uniform shape is assumed). 0: every unit at the profile's rate.")
    outlier_share: float = Field(
        default=0.0, ge=0, le=1,
        description="Share of units that are outliers, outlier_slowdown times slower (the same study saw "
        "outliers up to 1.5x the median; how often is not published: 0 by default).")
    outlier_slowdown: float = Field(
        default=1.5, ge=1, le=100,
        description="How many times slower an outlier (or a unit named in slow) runs.")
    slow: list[int] = Field(
        default_factory=list, max_length=limits.MAX_GPUS,
        description="Units (GPU or node indices, from 0) that run outlier_slowdown times slower, for a what-if "
        "(one GPU 20% slow: slow: [0], outlier_slowdown: 1.2, spread: 0). GPUs are numbered node by node; "
        "separate pools take the rollout GPUs first, then the trainer's, then the reward model's.")


class Faults(Strict):
    """Interruptions, restarts, checkpoints, stragglers and spare nodes (docs/goodput.md)."""

    enabled: bool = Field(default=True, description="false: no faults section figures (goodput 1).")
    failures_per_gpu_hour: float | None = Field(
        default=None, ge=0, le=1,
        description="Unexpected interruptions per GPU-hour. None: the GPU profile's reliability (the Llama 3 "
        "report: 419 in 54 days on 16,384 H100s, 1.97e-5).")
    node_share: float | None = Field(
        default=None, ge=0, le=1,
        description="Share of interruptions that take a whole node. None: the GPU profile's (Llama 3: 88 of 419).")
    hardware_share: float | None = Field(
        default=None, ge=0, le=1,
        description="Share that needs the failed node replaced. None: the GPU profile's (Llama 3: about 78%).")
    engine_restart: bool = Field(
        default=True,
        description="On separate rollout GPUs, a failed engine restarts alone and the job goes on (its "
        "in-flight trajectories lost: regenerated by a synchronous step, dropped and replaced by an "
        "asynchronous one), as AReaL and slime do. false: any failure restarts the whole job.")
    spare_nodes: int = Field(
        default=0, ge=0, le=limits.MAX_GPUS,
        description="Idle nodes held beside the cluster's to replace a failed one at once.")
    restart: Restart = Field(default_factory=Restart)
    checkpoint: Checkpoint = Field(default_factory=Checkpoint)
    stragglers: Stragglers = Field(default_factory=Stragglers)

    def check(self, cluster) -> None:
        """Slow units named must exist in ``cluster``; raises :class:`InputError`."""
        s = self.stragglers
        units = cluster.total_gpus if s.unit == "gpu" else cluster.nodes
        bad = [u for u in s.slow if not 0 <= u < units]
        if bad:
            raise InputError(f"no such {s.unit}", field="faults.stragglers.slow", value=bad[0],
                             allowed=f"{s.unit} indices 0..{units - 1}")
