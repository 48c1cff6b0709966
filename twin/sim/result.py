"""What a simulation hands to analysis: spans, per-step records, counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from twin.config.scenario import Scenario
from twin.config.plan import Plan
from twin.sim.timeline import Spans

@dataclass
class StepRecord:
    """One optimizer step as the trainer saw it.

    ``critical`` is the chain of (link, seconds) that made up this step's wall time, from
    the end of the previous step to the end of this one: what the step waited on.
    """

    step: int
    start: float
    end: float
    phases: dict[str, float] = field(default_factory=dict)
    critical: list[tuple[str, float]] = field(default_factory=list)
    trajectories: int = 0
    tokens: float = 0.0
    generated_tokens: float = 0.0
    max_staleness: int = 0


@dataclass
class SimResult:
    plan: Plan
    spans: Spans
    steps: list[StepRecord]
    gpus: dict[str, int]
    counters: dict[str, float] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    settled: bool = False  # stopped before run.steps: the step time had settled (twin.sim.settle)
    # For the Chrome trace (twin.analysis.trace): each engine's running preemption and recompute
    # counts at every step's end, and each rollout batch (the groups submitted at once) from its
    # submission to its last group's reward.
    engine_steps: list[dict] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)

    @property
    def scenario(self) -> Scenario:
        return self.plan.scenario

    @property
    def wall_s(self) -> float:
        return self.steps[-1].end - self.steps[0].start if self.steps else 0.0
