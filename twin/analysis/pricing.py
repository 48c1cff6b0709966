"""Money: a report's GPU time at a price per GPU-hour.

One place prices GPU time for every command: ``twin plan --objective cost`` ranks by
:func:`cost_per_1000_useful`; ``twin run`` and ``twin scale --gpu-hour-price P`` print and write
:func:`costs` (per step, per 1,000 useful trajectories, per run). Every GPU the plan holds is
paid for the whole wall time, busy or not: that is how GPUs are rented.
"""

from __future__ import annotations

import math
from typing import Any

from twin.errors import InputError


def check_price(price: Any, option: str = "--gpu-hour-price") -> None:
    """Refuse what is not a price (a positive, finite number)."""
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not math.isfinite(price) or price <= 0:
        raise InputError("not a price", field=option, value=price, allowed="a positive number (money per GPU-hour)")


def run_time_s(report) -> float:
    """The wall time of the report's ``run.steps``: simulated, or where the run stopped at
    steady state, estimated at its steady step time (:mod:`twin.sim.settle`). A drifting
    workload is always simulated to its last step, so its drift is in the figure."""
    run = report.run
    return run["settled"]["estimated_total_s"] if run.get("settled") else run["total_s"]


def cost_per_1000_useful(report, price: float | None = None) -> float | None:
    """GPU-hours (``price`` None) or money per 1,000 useful trajectories; None when none is useful."""
    useful = report.throughput.useful_trajectories_per_hour
    if useful <= 0:
        return None
    return float(f"{report.total_gpus * (price or 1.0) / useful * 1000:.6g}")


def costs(report, price: float) -> dict[str, Any]:
    """The report's cost at ``price`` per GPU-hour: per step (its mean step time), per 1,000
    useful trajectories, and per run (``run.steps`` over :func:`run_time_s`)."""
    check_price(price)
    per_s = report.total_gpus * price / 3600
    return {"gpu_hour_price": price, "gpus": report.total_gpus,
            "per_step": float(f"{report.step_time_s * per_s:.6g}"),
            "per_1000_useful_trajectories": cost_per_1000_useful(report, price),
            "per_run": float(f"{run_time_s(report) * per_s:.6g}"),
            "run_steps": report.run.get("steps") if report.run else None}


def money(x: float | None) -> str:
    """``$1,234``, ``$12.35``, ``$0.0123``: enough digits to compare, no more."""
    if x is None:
        return "-"
    return f"${x:,.0f}" if x >= 100 else f"${x:.2f}" if x >= 1 else f"${x:.3g}"


def cost_line(c: dict[str, Any]) -> str:
    """The costs of :func:`costs` in one line."""
    steps = f" ({c['run_steps']:,} steps)" if c.get("run_steps") else ""
    return (f"Cost at {money(c['gpu_hour_price'])} per GPU-hour × {c['gpus']} GPUs: {money(c['per_step'])} per step, "
            f"{money(c['per_1000_useful_trajectories'])} per 1,000 useful trajectories, "
            f"{money(c['per_run'])} per run{steps}")
