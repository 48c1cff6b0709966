"""A simulation result → the JSON report of the DESIGN contract (plain, sorted, rounded data).

Rounding to a fixed number of significant digits keeps the report byte-identical across
platforms for the same scenario and seed.
"""

from __future__ import annotations

import math
from typing import Any

from twin.analysis import metrics
from twin.analysis import run as whole_run
from twin.analysis.assumptions import assumptions
from twin.config.scenario import resolved_dict
from twin.cost.memory import GiB, memory_report
from twin.config.warnings import warnings
from twin.sim.result import SimResult


def _r(x: float, digits: int = 6) -> float:
    if x == 0 or not math.isfinite(x):
        return 0.0 if x == 0 else x
    return float(f"{x:.{digits}g}")


def _rd(d: dict[str, float]) -> dict[str, float]:
    return {k: _r(v) for k, v in d.items()}


def bottleneck_table(result: SimResult, util: dict[str, float]) -> list[dict[str, Any]]:
    """Links ranked by their share of the critical path, with the load behind them.

    The words, used the same way in the CLI, the TUI and the JSON:

    * **critical-path share**: the part of the step the trainer spent waiting on the link;
    * **binds**: a share of at least 5% (several links can bind); **the binding link** is the
      one with the largest share;
    * **load**: the share of the link's capacity it used while it held its GPUs (rollout:
      tokens generated against the engines' full-batch rate); not the same as a resource's
      **busy** fraction (``utilization`` at the report's top level: busy time over the run);
    * **saturated**: binds at a load of at least ``metrics.SATURATED`` — more of it buys
      experience; binding but not saturated, the link waits more than it works, and only the
      marginal gain (the verdict) says what more of it would buy.
    """
    shares = metrics.critical_path_share(result)
    link_util = metrics.link_utilization(result, util)
    rows = []
    for link, share in shares.items():
        u = link_util.get(link)
        rows.append({
            "link": link,
            "critical_path_share": _r(share),
            "load": _r(u) if u is not None else None,
            "utilization": _r(u) if u is not None else None,  # the same figure: its name before 'load'
            "binds": bool(share >= 0.05),
            "saturated": bool(u is not None and u >= metrics.SATURATED and share >= 0.05),
        })
    return rows


def _rounded(x):
    """Numbers in nested data rounded as :func:`_r` does."""
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return _r(x) if isinstance(x, float) else x


def build_report(result: SimResult) -> dict[str, Any]:
    util = metrics.utilization(result)
    figures = whole_run.step_figures(result)
    memory = {
        m.role: {"used_gib": _r(m.used_bytes / GiB), "capacity_gib": _r(m.capacity_bytes / GiB),
                 "headroom_gib": _r(m.headroom_bytes / GiB), "fits": m.fits}
        for m in memory_report(result.plan)
    }
    return {
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
        "run": _rounded(whole_run.run_summary(result)),
        "counters": _rd(result.counters),
        "dropped": dict(sorted(result.dropped.items())),
        "gpus": dict(result.gpus),
        "simulated_s": _r(result.wall_s),
        "scenario": resolved_dict(result.scenario),
        "plan": result.plan.summary(),
        "warnings": warnings(result.plan),
        "assumptions": assumptions(result.plan),
    }
