"""Stragglers: how much slower than the profile each GPU of a plan runs, and what that paces.

The profile's rates are nominal; real GPUs of one SKU differ (``faults.stragglers``: a spread
drawn per GPU or per node, outliers, named slow units). The draw is deterministic per seed, on
a random stream of its own (the run's other draws do not move). Where a slowdown bites depends
on the loop's structure, so the simulation applies it where it acts and lets the step show
what is absorbed:

* an engine runs at its slowest GPU's pace (tensor parallelism waits on every rank): every
  iteration × that factor (:class:`twin.engine.pool.EnginePool`'s ``slow``);
* the trainer's passes wait on the slowest rank of the synchronous update (data, tensor and
  pipeline parallel ranks all meet in collectives): each learner phase × the largest factor
  over its GPUs;
* a reward server runs at its node's pace (rule rewards on the hosts' CPU cores, with
  ``unit: node``) or its GPUs' (a reward model); remote sandboxes are not the cluster's.

GPUs are numbered node by node; separate pools take the rollout GPUs first, then the
trainer's, then the reward model's (a shared pool: rollout and trainer are the same GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.config.plan import Plan
from twin.config.rewards import RuleReward, SandboxReward
from twin.cost import reward as reward_cost

STREAM = 0x57A6  # the draw's own random stream beside the run's seed


@dataclass(frozen=True)
class Slowdowns:
    """Factors >= 1 (1: the profile's rate) for each GPU, engine and reward server, and the
    trainer's pace (its slowest GPU's)."""

    gpus: np.ndarray
    engines: np.ndarray
    trainer: float
    reward_servers: np.ndarray

    @property
    def any(self) -> bool:
        """Whether anything runs slower than the profile."""
        return bool(self.gpus.max(initial=1.0) > 1.0 or self.reward_servers.max(initial=1.0) > 1.0)


def unit_factors(plan: Plan) -> np.ndarray:
    """Each unit's (GPU's or node's) slowdown: 1 + spread × U(0, 1), outliers and named slow units
    at ``outlier_slowdown``. Deterministic for the plan's seed."""
    s, c = plan.scenario.faults.stragglers, plan.cluster
    units = c.total_gpus if s.unit == "gpu" else c.nodes
    rng = np.random.default_rng([plan.run.seed, STREAM])
    factors = 1.0 + s.spread * rng.random(units)
    outliers = rng.random(units) < s.outlier_share
    factors[outliers] = s.outlier_slowdown
    factors[np.asarray(s.slow, dtype=np.int64)] = s.outlier_slowdown
    return factors


def draw(plan: Plan) -> Slowdowns:
    """The plan's slowdowns (see the module), from :func:`unit_factors`."""
    c, s = plan.cluster, plan.scenario.faults.stragglers
    units = unit_factors(plan)
    gpus = units if s.unit == "gpu" else np.repeat(units, c.gpus_per_node)
    rollout = gpus[:plan.rollout_gpus]
    engine = plan.placement.rollout.engine_gpus
    engines = rollout.reshape(plan.rollout_engines, engine).max(axis=1)
    first = 0 if plan.mode.shares_gpus else plan.rollout_gpus
    trainer = float(gpus[first:first + plan.trainer_gpus].max())
    return Slowdowns(gpus, engines, trainer, _reward_servers(plan, gpus, units))


def _reward_servers(plan: Plan, gpus: np.ndarray, units: np.ndarray) -> np.ndarray:
    r, c = plan.reward, plan.cluster
    n = reward_cost.servers(plan)
    if isinstance(r, SandboxReward):
        return np.ones(n)  # remote sandboxes: not the cluster's hosts
    if isinstance(r, RuleReward):  # CPU cores of each node, node by node
        if plan.scenario.faults.stragglers.unit != "node":
            return np.ones(n)
        return np.repeat(units, c.cpu_cores)[:n]
    first = plan.rollout_gpus + (0 if plan.mode.shares_gpus else plan.trainer_gpus)
    model = gpus[first:first + n * r.tp]
    return model.reshape(n, r.tp).max(axis=1)
