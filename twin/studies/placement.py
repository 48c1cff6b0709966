"""How a number of GPUs splits into a rollout pool and a trainer pool: one rule for every study.

The verdict re-places a colocated run's GPUs as two pools, the planner lists the splits of a
budget, the scaling curve keeps a scenario's rollout share at another size; all three ask
:class:`PoolSplit`. A rollout pool is whole engines (``tp × pp`` GPUs each), in whole nodes
where the GPUs span two nodes or more; a trainer pool is what the scenario's own validation
accepts: a multiple of ``tp × pp × sp × cp`` whose pipeline stages ``ep`` divides
(:func:`twin.config.scenario.placement_pools`, :func:`twin.config.scenario.check_moe_layout`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from twin.config.modes import MODES
from twin.config.scenario import RolloutPlacement, Scenario


@dataclass(frozen=True)
class PoolSplit:
    """The ways ``free`` GPUs split into a rollout pool and a trainer pool."""

    free: int             # GPUs for the two pools (the reward model's set apart)
    engine_gpus: int      # GPUs of one rollout engine (tp × pp)
    gpus_per_node: int
    trainer_multiple: int  # the trainer pool is a multiple of this

    @classmethod
    def of(cls, scenario: Scenario, free: int, engine_gpus: int | None = None) -> PoolSplit:
        """The rule for ``scenario``'s trainer layout on ``free`` GPUs (``engine_gpus``: another
        engine size than the scenario's, as the planner tries)."""
        t = scenario.placement.trainer
        group = t.tp * t.pp * t.sp * t.cp  # one data-parallel rank's GPUs
        return cls(free, engine_gpus or scenario.placement.rollout.engine_gpus, scenario.cluster.gpus_per_node,
                   math.lcm(group, t.pp * t.ep))  # and whole ep groups in every pipeline stage

    @property
    def unit(self) -> int:
        """The rollout pool's step: whole engines, and whole nodes when the GPUs span two
        nodes or more (an engine wider than a node is its own unit)."""
        tp, node = self.engine_gpus, self.gpus_per_node
        unit = max(tp, min(math.lcm(tp, node), node))
        return tp if self.free < 2 * unit else unit

    def trainer_fits(self, trainer: int) -> bool:
        return trainer >= self.trainer_multiple and trainer % self.trainer_multiple == 0

    def rollout_sizes(self) -> list[int]:
        """Every rollout pool, smallest first, whose remainder is a trainer pool."""
        unit = self.unit
        return [k * unit for k in range(1, self.free // unit + 1) if self.trainer_fits(self.free - k * unit)]

    def nearest(self, share: float) -> tuple[int, int] | None:
        """The split whose rollout pool is nearest ``share`` of the GPUs (half way: toward more
        rollout), as (rollout, trainer); None when no split fits."""
        sizes = self.rollout_sizes()
        if not sizes:
            return None
        want = max(1, math.floor(share * self.free / self.unit + 0.5)) * self.unit
        rollout = min(sizes, key=lambda r: (abs(r - want), -r))
        return rollout, self.free - rollout


def engines_on_their_own_gpus(mode_name: str, gpu_memory_utilization: float) -> dict[str, float]:
    """Overrides for a scenario's engines moved from GPUs they shared with the trainer onto
    GPUs of their own (the planner's and the verdict's separate-pool alternatives to a colocated
    run). The memory fraction a colocated engine is given leaves the rest of the GPU to the
    trainer (verl's recipes use 0.4–0.6, NeMo-RL's 0.6); alone on its GPUs an engine takes
    vLLM's default, the field's default (0.9), unless the scenario gave it more — otherwise the
    alternative would keep the shared run's KV cache and its preemptions for no reason."""
    dedicated = RolloutPlacement.model_fields["gpu_memory_utilization"].default
    if not MODES[mode_name].shares_gpus or gpu_memory_utilization >= dedicated:
        return {}
    return {"placement.rollout.gpu_memory_utilization": dedicated}
