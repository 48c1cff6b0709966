"""When a simulation may stop before ``run.steps``: the step time has settled.

A planner ranking hundreds of placements, or a verdict re-simulating a scenario once per
pressure, needs each one's steady-state rate, not its ten-step history. Step times of a
steady loop scatter around their mean (each step samples its own response lengths) and the
first step also fills the pipeline, so the rule reads the steps after the first
(:func:`twin.analysis.metrics.steady_state` measures the same window) and stops when both:

* the mean is known to the tolerance: its standard error is at most ``tolerance`` × the mean;
* nothing drifts: the means of the first and the second half of those steps differ by at
  most twice that (a pipeline still filling, a queue still growing, shows as a trend whose
  standard error alone could look small);

after at least :data:`MIN_STEADY_STEPS` steady steps. A workload whose lengths change by step
(``workload.schedule``) never settles: the rule is not applied to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

MIN_STEADY_STEPS = 4  # the fewest steps after the first a standard error is read from
DRIFT_FACTOR = 2.0    # the halves' means may differ by this many tolerances


def settled(step_times: Sequence[float], tolerance: float) -> bool:
    """Whether a run whose steps took ``step_times`` (the first, pipeline-filling one included)
    has a steady step time known within ``tolerance`` (relative)."""
    steady = list(step_times[1:])
    n = len(steady)
    if n < MIN_STEADY_STEPS:
        return False
    mean = sum(steady) / n
    if not mean > 0:
        return False
    variance = sum((t - mean) ** 2 for t in steady) / (n - 1)
    half = n // 2
    drift = abs(sum(steady[n - half:]) / half - sum(steady[:half]) / half)
    return math.sqrt(variance / n) <= tolerance * mean and drift <= DRIFT_FACTOR * tolerance * mean


def step_times(steps: Sequence[Any]) -> list[float]:
    """Each step's time from the previous step's end (the first from 0), of step records."""
    ends = [0.0] + [rec.end for rec in steps]
    return [b - a for a, b in zip(ends, ends[1:])]


def settled_after(times: Sequence[float], tolerance: float) -> int | None:
    """The number of steps after which a run with these step times settles, if it does."""
    return next((k for k in range(MIN_STEADY_STEPS + 1, len(times) + 1) if settled(times[:k], tolerance)), None)


# What the planner and the verdict re-simulate with: a step-time mean known to 1% changes
# their figures by well under the spread across seeds (docs/noise.md: 1-5% on the built-ins),
# and halves the cost of a 10-step re-simulation on every built-in scenario (docs/performance.md).
RESIMULATION_TOLERANCE = 0.01


def settling(data: dict) -> dict:
    """A scenario (as data) that stops at steady state: ``run.steady_tolerance`` set to
    :data:`RESIMULATION_TOLERANCE` unless the scenario sets its own."""
    run = dict(data.get("run") or {})
    if run.get("steady_tolerance") is None:
        run["steady_tolerance"] = RESIMULATION_TOLERANCE
    return {**data, "run": run}
