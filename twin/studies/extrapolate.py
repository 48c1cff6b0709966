"""A long run's time from a few simulated steps per segment (``twin run --sample-steps K``).

Simulating every step of a long run of a big scenario takes long (the built-in
grpo-7b-colocated: ~45 s per simulated step on a shared 2-core machine). The rule here:

* the run is cut into **segments**: the schedule's windows, each cut further into tenths of the
  run when the lengths grow (``workload.schedule.growth``) or there are no windows;
* each segment is simulated alone for ``1 + K`` steps with the lengths of its **middle** step
  held fixed (``workload.at_step``; the schedule dropped), and its steady-state step time (the
  steps after the first, which fills the pipeline) stands for each of its steps;
* the run's total = the first segment's first step (the pipeline fill, paid once) + Σ segment
  steps × that segment's step time (its first step counted once, as the fill);
* the binding link of a segment is its simulation's binding link; a change is named at the
  first step of the segment where it differs from the segment before.

Its error against a full simulation is held in tests/analysis/test_extrapolate.py; a growing
length is priced at its middle, so convexity (step time superlinear in length) shows up as an
error of the order of the segment's spread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from twin.config.plan import Plan
from twin.errors import InputError
from twin.studies import executors

SEGMENTS = 10


def segments(plan: Plan) -> list[tuple[int, int]]:
    """(first, last) training steps of each segment (see the module's docstring)."""
    n = plan.run.steps
    schedule = plan.workload.schedule
    starts = {1}
    if schedule is not None:
        starts |= {max(1, w.from_step) for w in schedule.windows if w.from_step <= n}
    if schedule is None or not schedule.windows or schedule.growth is not None:
        size = max(1, math.ceil(n / SEGMENTS))
        starts |= set(range(1, n + 1, size))
    ordered = sorted(starts)
    return [(a, (ordered[i + 1] - 1) if i + 1 < len(ordered) else n) for i, a in enumerate(ordered)]


def frozen(plan: Plan, step: int, steps: int) -> dict:
    """The plan's scenario as data with the lengths of ``step`` held fixed for ``steps`` steps."""
    data = plan.scenario.model_dump(mode="json")
    prompt, response = plan.workload.at_step(step)
    data["workload"]["prompt_tokens"] = prompt.model_dump(mode="json")
    data["workload"]["response_tokens"] = response.model_dump(mode="json")
    data["workload"].pop("schedule", None)
    data["run"]["steps"] = steps
    return data


def extrapolate_run(plan: Plan, sample_steps: int, progress: Callable[[int, int], None] | None = None, *,
                    workers: int | None = None, executor: str | executors.Executor = "local") -> dict[str, Any]:
    """The whole run's time and binding links from ``sample_steps`` simulated steps (after a
    pipeline-filling one) per segment, the segments simulated on ``executor``; see the
    module's docstring."""
    parts = segments(plan)
    jobs = [frozen(plan, (a + b) // 2, 1 + min(sample_steps, b - a + 1)) for a, b in parts]
    reports = executors.simulate_many(jobs, workers, progress, executor)
    rows: list[dict[str, Any]] = []
    total = 0.0
    for i, ((a, b), report) in enumerate(zip(parts, reports)):
        if isinstance(report, InputError):
            raise report
        steps, step_s = report.steps, report.step_time_s
        if i == 0:
            total += steps[0].end_s + (b - a) * step_s  # the pipeline fill, then the steady state
        else:
            total += (b - a + 1) * step_s
        rows.append({"from_step": a, "to_step": b, "at_step": (a + b) // 2, "simulated_steps": len(steps),
                     "step_s": step_s, "binding_link": report.binding_link,
                     "mean_response_tokens": sum(s.mean_response_tokens for s in steps[1:] or steps)
                     / len(steps[1:] or steps)})
    changes = [{"training_step": cur["from_step"], "link": cur["binding_link"], "previous": prev["binding_link"],
                "mean_response_tokens": cur["mean_response_tokens"]}
               for prev, cur in zip(rows, rows[1:]) if cur["binding_link"] != prev["binding_link"]]
    return {"steps": plan.run.steps, "sample_steps": sample_steps, "total_s": total,
            "simulated_steps": sum(r["simulated_steps"] for r in rows),
            "segments": rows, "binding_changes": changes}
