"""A simulation result → the report of the DESIGN contract: a typed object whose JSON is its
serialisation (:class:`ReportData`; plain, sorted, rounded data).

Every reader — the CLI's text, the verdict, the planner, the scaling curve, the sweep, the TUI —
reads the typed figures (``report.throughput.useful_trajectories_per_hour``,
``report.bottleneck[0].link``); one name per figure: a link's **load** (the share of its
capacity it used while it held its GPUs) in the bottleneck rows, a resource's **busy** share
in ``utilization``. Rounding to a fixed number of significant digits keeps the report
byte-identical across platforms for the same scenario and seed.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from twin.analysis import metrics
from twin.analysis import run as whole_run
from twin.analysis.assumptions import assumptions
from twin.analysis.faults import faults_report
from twin.analysis.learning import learning_report, mean_lag
from twin.analysis.trust import nearest
from twin.config.scenario import resolved_dict
from twin.config.warnings import warnings
from twin.cost.memory import GiB, memory_report
from twin.sim.result import SimResult
from twin.sim.stragglers import Slowdowns


class _Section(BaseModel):
    # Frozen: a report is never changed after it is made. Extra keys are ignored so that a
    # report written by an older version (or with sections added later) still reads.
    model_config = ConfigDict(frozen=True, extra="ignore")


class LinkRow(_Section):
    """One link of the loop in the bottleneck table (:func:`bottleneck_table`)."""

    link: str
    critical_path_share: float
    load: float | None = Field(description="Share of its capacity the link used while it held its GPUs; "
                                           "None for a link with no resource of its own.")
    binds: bool
    saturated: bool


class Throughput(_Section):
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    generated_tokens_per_s: float
    trajectories_per_hour: float
    useful_trajectories_per_hour: float


class RoleMemory(_Section):
    used_gib: float
    capacity_gib: float
    headroom_gib: float
    fits: bool


class StepRow(_Section):
    step: int
    start_s: float
    end_s: float
    trajectories: int
    max_staleness: int
    phases: dict[str, float]
    step_s: float
    generated_tokens: float
    mean_response_tokens: float
    binding_link: str | None


class ReportData(_Section):
    """The report of one simulation (no verdict: :class:`twin.runner.Report` adds it)."""

    step_time_s: float
    breakdown: dict[str, float]
    utilization: dict[str, float] = Field(description="Busy share of each resource over the run.")
    rollout_engine_utilization: dict[str, float]
    throughput: Throughput
    bottleneck: list[LinkRow]
    critical_path_share: dict[str, float]
    memory: dict[str, RoleMemory]
    steps: list[StepRow]
    run: dict[str, Any]
    counters: dict[str, float]
    dropped: dict[str, int]
    gpus: dict[str, int]
    simulated_s: float
    scenario: dict[str, Any]
    plan: dict[str, Any]
    warnings: list[str]
    assumptions: list[dict[str, Any]]
    faults: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None,
                                          description="Failures, checkpoints, stragglers and goodput (twin.analysis.faults).")
    learning: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None,
                                            description="Steps and seconds to the target reward (twin.analysis.learning).")
    time_to_target_s: float | None = Field(default=None, description="Steps to the target × seconds per step "
                                           "(learning.time_to_target_s; None where the step size diverges).")
    time_to: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)
    trust: list[dict[str, Any]] = Field(default_factory=list,
                                        description="The validation sources nearest to the scenario and the twin's "
                                                    "error there (twin.analysis.trust).")
    cost: dict[str, Any] | None = Field(default=None, exclude_if=lambda v: v is None,
                                        description="Money at --gpu-hour-price: per step, per 1,000 useful "
                                                    "trajectories, per run (twin.analysis.pricing).")

    @property
    def binding(self) -> LinkRow | None:
        """The link with the largest share of the critical path."""
        return self.bottleneck[0] if self.bottleneck else None

    @property
    def binding_link(self) -> str | None:
        return self.bottleneck[0].link if self.bottleneck else None

    @property
    def useful_trajectories_per_hour(self) -> float:
        return self.throughput.useful_trajectories_per_hour

    @property
    def goodput(self) -> float | None:
        """The share of wall time that produced kept training progress, where faults are priced."""
        return self.faults["goodput"] if self.faults and self.faults.get("enabled") else None

    @property
    def total_gpus(self) -> int:
        return sum(self.gpus.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (the JSON's content)."""
        return self.model_dump(mode="json")


def _r(x: float, digits: int = 6) -> float:
    if x == 0 or not math.isfinite(x):
        return 0.0 if x == 0 else x
    return float(f"{x:.{digits}g}")


def _rd(d: dict[str, float]) -> dict[str, float]:
    return {k: _r(v) for k, v in d.items()}


def bottleneck_table(result: SimResult, util: dict[str, float]) -> list[LinkRow]:
    """Links ranked by their share of the critical path, with the load behind them.

    The words, used the same way in the CLI, the TUI and the JSON:

    * **critical-path share**: the part of the step the trainer spent waiting on the link;
    * **binds**: a share of at least 5% (several links can bind); **the binding link** is the
      one with the largest share;
    * **load**: the share of the link's capacity it used while it held its GPUs (rollout:
      tokens generated against the engines' full-batch rate); not the same as a resource's
      **busy** share (``utilization`` at the report's top level: busy time over the run);
    * **saturated**: binds at a load of at least ``metrics.SATURATED`` — more of it buys
      experience; binding but not saturated, the link waits more than it works, and only the
      marginal gain (the verdict) says what more of it would buy.
    """
    shares = metrics.critical_path_share(result)
    link_util = metrics.link_utilization(result, util)
    rows = []
    for link, share in shares.items():
        u = link_util.get(link)
        rows.append(LinkRow(link=link, critical_path_share=_r(share), load=_r(u) if u is not None else None,
                            binds=bool(share >= 0.05),
                            saturated=bool(u is not None and u >= metrics.SATURATED and share >= 0.05)))
    return rows


def rounded(x):
    """Numbers in nested data rounded as :func:`_r` does."""
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [rounded(v) for v in x]
    return _r(x) if isinstance(x, float) else x


def build_report(result: SimResult, straggled: SimResult | None = None, slow: Slowdowns | None = None) -> ReportData:
    """The report of ``result``; ``straggled``: the same plan simulated with its GPUs' slowdowns
    ``slow`` (the ``faults`` section's stragglers; None: nothing runs slower)."""
    util = metrics.utilization(result)
    figures = whole_run.step_figures(result)
    scenario = resolved_dict(result.scenario)
    memory = {
        m.role: {"used_gib": _r(m.used_bytes / GiB), "capacity_gib": _r(m.capacity_bytes / GiB),
                 "headroom_gib": _r(m.headroom_bytes / GiB), "fits": m.fits}
        for m in memory_report(result.plan)
    }
    return ReportData.model_validate({
        "step_time_s": _r(metrics.step_time(result)),
        "breakdown": _rd(metrics.breakdown(result)),
        "utilization": _rd({k: v for k, v in util.items() if not k.startswith("rollout/engine-")}),
        "rollout_engine_utilization": _rd(metrics.engine_spread(util)),
        "throughput": _rd(metrics.throughput(result)),
        "bottleneck": bottleneck_table(result, util),
        "critical_path_share": _rd(metrics.critical_path_share(result)),
        "memory": memory,
        "steps": [
            {"step": r.step, "start_s": _r(r.start), "end_s": _r(r.end), "trajectories": r.trajectories,
             "max_staleness": r.max_staleness, "phases": _rd(r.phases), "step_s": _r(f["step_s"]),
             "generated_tokens": _r(f["generated_tokens"]), "mean_response_tokens": _r(f["mean_response_tokens"]),
             "binding_link": f["binding_link"]}
            for r, f in zip(result.steps, figures)
        ],
        "run": rounded(whole_run.run_summary(result)),
        "counters": _rd(result.counters),
        "dropped": dict(sorted(result.dropped.items())),
        "gpus": dict(result.gpus),
        "simulated_s": _r(result.wall_s),
        "scenario": scenario,
        "plan": result.plan.summary(),
        "warnings": warnings(result.plan),
        "assumptions": assumptions(result.plan),
        "faults": rounded(faults_report(result, straggled, slow)),
        "trust": nearest(scenario),
        **_learning(result, metrics.step_time(result)),
    })


def _learning(result: SimResult, step_time_s: float) -> dict[str, Any]:
    """The ``learning`` section and its ``time_to_target_s`` at the steady step time."""
    algorithm = result.scenario.algorithm
    section = rounded(learning_report(result.scenario.learning, algorithm.trajectories_per_step, step_time_s, mean_lag([r.max_staleness for r in result.steps]),
                                      algorithm.partial_rollout))
    return {"learning": section, "time_to_target_s": section["time_to_target_s"]}
