"""Goodput in the studies: what a report's ``faults`` section adds to a scaling curve.

At each size of a scaling curve the report's goodput (:mod:`twin.analysis.faults`) weighs its
useful trajectories per hour; the curve names the first size where failures bind — where
interruptions (restarts, lost work, checkpoints, node waits) and engine failures take 5% of
the wall time or more, the threshold at which a link binds in the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from twin.analysis.faults import BINDS, failures_bind, rates
from twin.analysis.report import ReportData

# A re-simulation that only reads the loop's own rates need not pay for the faults section's
# second simulation (the stragglers'): the verdict's and the planner's jobs that read no goodput.
WITHOUT_FAULTS = {"faults.enabled": False}


def point_figures(report: ReportData | None) -> dict[str, Any]:
    """A scaling point's goodput, goodput-weighted useful trajectories/h, and whether failures
    bind there (None for each where the size could not run)."""
    faults = report.faults if report is not None else None
    if not faults or report.goodput is None:  # faults off (the planner's screening runs): not priced, not 1.0
        return {"goodput": None, "goodput_useful_trajectories_per_hour": None, "failures_bind": None}
    return {"goodput": faults["goodput"],
            "goodput_useful_trajectories_per_hour": faults["useful_trajectories_per_hour"],
            "failures_bind": failures_bind(faults)}


def failures_bind_at(points: Iterable[dict[str, Any]]) -> int | None:
    """The first size (``gpus`` of the points, ascending) where failures bind."""
    return next((p["gpus"] for p in points if p.get("failures_bind")), None)


def bind_line(at: int | None) -> str:
    """The scaling curve's sentence on failures."""
    if at is None:
        return (f"  failures stay under {BINDS * 100:.0f}% of the wall time at every size "
                "(interruptions, restarts, checkpoints; goodput: docs/goodput.md)")
    return (f"  failures start to bind at {at} GPUs: interruptions, restarts and checkpoints take "
            f"{BINDS * 100:.0f}% of the wall time or more (goodput: docs/goodput.md)")


# ----------------------------------------------------------------------------- the verdict's levers
# Three pressures of twin.studies.verdict act on interruptions alone: the loop they re-simulate
# is the baseline's, so their gain is the change in the share of wall time interruptions leave.
INTERRUPTION_CAUSES = ("checkpoints", "lost_work", "restarts", "node_waits")


def interruption_kept(faults: dict[str, Any]) -> float:
    """The share of wall time interruptions (checkpoints, lost work, restarts, node waits) leave."""
    lost = faults.get("lost") or {}
    return 1.0 - sum(lost.get(k, 0.0) for k in INTERRUPTION_CAUSES)


def goodput_gain(base: ReportData, pressured: ReportData, overrides: dict[str, Any] | None = None) -> float:
    """A fault lever's gain in goodput-weighted useful experience per hour. The loop itself is
    the baseline's: a lever on interruptions alone gains the ratio of the shares of wall time
    interruptions leave (exact: no simulated window enters it); one that also changes the
    stragglers (or turns faults on or off), the ratio of the goodputs."""
    keys = [str(k) for k in (overrides or {})]
    if any(k.startswith("faults.stragglers") or k == "faults.enabled" for k in keys):
        was = (base.faults or {}).get("goodput") or 0.0
        return (pressured.faults or {}).get("goodput", 0.0) / was - 1.0 if was > 0 else 0.0
    kept = interruption_kept(base.faults or {})
    return interruption_kept(pressured.faults or {}) / kept - 1.0 if kept > 0 else 0.0


def _faults_on(plan) -> bool:
    return plan.scenario.faults.enabled


def optimal_interval(plan, report) -> dict | None:
    """Checkpoints at Young's optimum, where the scenario sets its own interval."""
    if not _faults_on(plan) or plan.scenario.faults.checkpoint.every_steps is None:
        return None
    return {"faults.checkpoint.every_steps": None}


def async_checkpointing(plan, report) -> dict | None:
    """Checkpoints written in the background (training waits only for the copy to host memory)."""
    if not _faults_on(plan) or plan.scenario.faults.checkpoint.asynchronous:
        return None
    return {"faults.checkpoint.asynchronous": True}


def more_spare_nodes(plan, report) -> dict | None:
    """Spare nodes for the failed nodes away on average (at least one more)."""
    if not _faults_on(plan):
        return None
    r = rates(plan)
    away = r.job * r.hardware_share * plan.scenario.faults.restart.node_replace_s
    return {"faults.spare_nodes": plan.scenario.faults.spare_nodes + max(1, math.ceil(away))}
