"""The plan: what follows from a scenario, derived once.

A :class:`~twin.config.scenario.Scenario` holds what the user wrote (with defaults) and is
never changed. :func:`resolve` derives from it, once, everything later layers need: GPUs per
role, rollout engines, the trainer's data-parallel sizes, the GPU profile scaled by the stack's
compute share, the host link, the deployment mode and reward kind as behaviour. Cost models,
kernels and the simulation read the plan; overrides and pressures apply to the scenario, which
is then resolved again — so a pressure on ``cluster.nodes`` changes every count derived from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from twin.config.hardware import DeviceProfile, LinkProfile
from twin.config.registry import resolve_profile
from twin.config.scenario import Scenario, placement_pools
from twin.config.modes import Mode, mode


@dataclass(frozen=True, eq=False)
class Plan:
    """A resolved scenario. The scenario's sections are readable on the plan itself
    (``plan.algorithm``, ``plan.workload``, …); derived figures are its own attributes."""

    scenario: Scenario
    mode: Mode
    rollout_gpus: int
    trainer_gpus: int
    gpu: DeviceProfile  # the cluster's GPU profile, compute efficiencies × cluster.compute_scale

    # ------------------------------------------------------------ the input's sections
    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def model(self):
        return self.scenario.model

    @property
    def cluster(self):
        return self.scenario.cluster

    @property
    def placement(self):
        return self.scenario.placement

    @property
    def algorithm(self):
        return self.scenario.algorithm

    @property
    def workload(self):
        return self.scenario.workload

    @property
    def reward(self):
        return self.scenario.reward

    @property
    def weight_sync(self):
        return self.scenario.weight_sync

    @property
    def evaluation(self):
        return self.scenario.evaluation

    @property
    def run(self):
        return self.scenario.run

    # ------------------------------------------------------------ derived
    @property
    def reward_model_gpus(self) -> int:
        return self.scenario.placement.reward_model_gpus

    @property
    def rollout_tp(self) -> int:
        return self.scenario.placement.rollout.tp

    @property
    def rollout_dtype(self) -> str:
        """Precision of the engines' weights and GEMMs (placement.rollout.dtype, else the model's)."""
        return self.scenario.placement.rollout.dtype or self.scenario.model.dtype

    @property
    def kv_dtype(self) -> str:
        """Precision of the engines' KV cache (placement.rollout.kv_dtype, else the model's)."""
        return self.scenario.placement.rollout.kv_dtype or self.scenario.model.dtype

    @property
    def trainer_dtype(self) -> str:
        """Precision of the trainer's GEMMs (placement.trainer.dtype, else the model's)."""
        return self.scenario.placement.trainer.dtype or self.scenario.model.dtype

    @property
    def rollout_engines(self) -> int:
        return self.rollout_gpus // self.scenario.placement.rollout.engine_gpus

    @property
    def trainer_dp(self) -> int:
        """Data-parallel groups: each takes whole sequences (sp or cp GPUs share each of them)."""
        t = self.scenario.placement.trainer
        return self.trainer_gpus // (t.tp * t.pp * t.sp * t.cp)

    @property
    def trainer_expert_dp(self) -> int:
        """Expert-data-parallel ranks: the copies of one EP shard of the experts, over which their
        gradients are reduced and their optimizer state sharded (Megatron's MoE folding: a pipeline
        stage's GPUs regrouped as ep × expert-dp, experts not tensor-split)."""
        t = self.scenario.placement.trainer
        return self.trainer_gpus // (t.pp * t.ep)

    @property
    def trainer_shards(self) -> int:
        """GPUs that ZeRO/FSDP shards one tp × pp slice of the model over (data and sequence
        parallel ranks alike)."""
        t = self.scenario.placement.trainer
        slices = self.trainer_gpus // (t.tp * t.pp)
        return slices if t.shard_size is None else min(slices, t.shard_size)  # hybrid sharding: one group

    @property
    def trainer_replicas(self) -> int:
        """Copies of the sharded state (hybrid sharding: groups of ``shard_size`` GPUs; else 1)."""
        t = self.scenario.placement.trainer
        return self.trainer_gpus // (t.tp * t.pp) // self.trainer_shards

    @property
    def gpus(self) -> dict[str, int]:
        """GPUs per role as the report lists them (a shared pool counted once)."""
        out = self.mode.gpus_by_role(self.rollout_gpus, self.trainer_gpus)
        if self.reward_model_gpus:
            out["reward_model"] = self.reward_model_gpus
        return out

    @property
    def total_gpus(self) -> int:
        return sum(self.gpus.values())

    @cached_property
    def host_link(self) -> LinkProfile:
        """The link between a GPU and its host's memory (the GPU profile names it)."""
        return resolve_profile(self.gpu.host_link or "pcie5", ("link",), "cluster.gpu.host_link")

    def __repr__(self) -> str:
        """One line (a notebook's ``report.plan``): the mode, the GPUs per role, the engines."""
        gpus = (f"{self.rollout_gpus} shared GPUs" if self.mode.shares_gpus
                else f"{self.rollout_gpus} rollout / {self.trainer_gpus} trainer GPUs")
        return (f"Plan({self.name}: {self.mode.name}, {gpus}, {self.rollout_engines} engines of tp "
                f"{self.rollout_tp}, {self.gpu.name}, {self.model.name})")

    def summary(self) -> dict[str, Any]:
        """The derived figures as plain data (the report's ``plan``)."""
        t = self.scenario.placement.trainer
        return {"mode": self.mode.name, "rollout_gpus": self.rollout_gpus, "trainer_gpus": self.trainer_gpus,
                "reward_model_gpus": self.reward_model_gpus, "rollout_engines": self.rollout_engines,
                "rollout_tp": self.rollout_tp, "trainer_dp": self.trainer_dp, "trainer_tp": t.tp,
                "trainer_pp": t.pp, "trainer_sp": t.sp, "total_gpus": self.total_gpus,
                "compute_scale": self.scenario.cluster.compute_scale,
                **self._layout_summary()}

    def _layout_summary(self) -> dict[str, Any]:
        """Expert, context and engine-pipeline parallelism, listed where they are used."""
        p = self.scenario.placement
        out: dict[str, Any] = {}
        if p.trainer.ep > 1:
            out.update(trainer_ep=p.trainer.ep, trainer_expert_dp=self.trainer_expert_dp)
        if p.trainer.cp > 1:
            out["trainer_cp"] = p.trainer.cp
        if p.rollout.pp > 1:
            out["rollout_pp"] = p.rollout.pp
        if p.rollout.expert_parallel:
            out["rollout_ep"] = p.rollout.tp
        return out


def resolve(scenario: Scenario) -> Plan:
    """Derive the plan of a validated scenario (cheap: counts and one scaled profile)."""
    rollout, trainer = placement_pools(scenario)
    c = scenario.cluster
    gpu = c.gpu.with_compute_scaled(c.compute_scale) if c.compute_scale != 1.0 else c.gpu
    return Plan(scenario=scenario, mode=mode(scenario.placement.mode), rollout_gpus=rollout,
                trainer_gpus=trainer, gpu=gpu)
