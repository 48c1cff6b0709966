"""The bottleneck verdict: which link binds, whether it is saturated, and what each pressure buys.

A link *binds* when it holds the trainer up (its share of the critical path); it is
*saturated* when its resource is also busy nearly all the time. What settles the question is
the **marginal gain** of raising one pressure alone — ×2 rollout GPUs, ×2 trainer GPUs, ×2
reward workers, ×2 network bandwidth, ×2 weight-sync speed, +1 staleness, partial rollout on —
measured by re-simulating the scenario once per pressure, in parallel processes, and
comparing useful experience per hour (trajectories that reach the optimizer within the
staleness bound).

A pressure that needs more GPUs adds nodes of the same kind; one that a deployment mode cannot
express (staleness on colocated GPUs) re-places the same GPUs as separate pools. How to split
them is itself the question a planner would ask, so the verdict tries the splits between two
bounds and keeps the best: the rollout pool needs at least its share of the work at full batch
(what it does once the tail no longer idles it) and at most its share of the step's time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from twin.config.scenario import Scenario
from twin.errors import InputError, choices


@dataclass(frozen=True)
class Pressure:
    name: str
    short: str         # as the diagnosis says it: "more rollout GPUs"
    description: str
    link: str          # the link of the loop it relieves
    # None: not applicable here; a list: alternatives, of which the verdict keeps the best
    overrides: Callable[[Scenario, dict], dict | list[dict] | None]


def _nodes_for(s: Scenario, gpus: int) -> int:
    return max(s.cluster.nodes, math.ceil(gpus / s.cluster.gpus_per_node))


def _more_rollout(s: Scenario, report: dict) -> dict:
    p = s.placement
    if p.mode == "colocated":  # the shared pool doubles: both roles get the new GPUs
        gpus = 2 * p.rollout.gpus
        return {"cluster.nodes": _nodes_for(s, gpus + p.reward_model_gpus),
                "placement.rollout.gpus": gpus, "placement.trainer.gpus": 2 * p.trainer.gpus}
    rollout = 2 * p.rollout.gpus
    return {"placement.rollout.gpus": rollout, "placement.trainer.gpus": p.trainer.gpus,
            "cluster.nodes": _nodes_for(s, rollout + p.trainer.gpus + p.reward_model_gpus)}


def _more_trainer(s: Scenario, report: dict) -> dict | None:
    p = s.placement
    if p.mode == "colocated":
        return None  # the same GPUs: "×2 rollout GPUs" already doubles them
    trainer = 2 * p.trainer.gpus
    return {"placement.rollout.gpus": p.rollout.gpus, "placement.trainer.gpus": trainer,
            "cluster.nodes": _nodes_for(s, p.rollout.gpus + trainer + p.reward_model_gpus)}


def _more_reward(s: Scenario, report: dict) -> dict | None:
    r = s.reward
    if r.kind == "sandbox":
        return {"reward.workers": 2 * r.workers}
    if r.kind == "rule":
        return {"cluster.host_cpu_cores": 2 * s.cluster.cpu_cores}
    gpus = 2 * s.placement.reward_model_gpus
    p = s.placement
    return {"placement.reward_model_gpus": gpus, "placement.rollout.gpus": p.rollout.gpus,
            "placement.trainer.gpus": p.trainer.gpus,
            "cluster.nodes": _nodes_for(s, gpus + p.rollout.gpus + (0 if p.mode == "colocated" else p.trainer.gpus))}


def _faster_network(s: Scenario, report: dict) -> dict | None:
    out = {}
    for key in ("intra_node_link", "inter_node_link"):
        link = getattr(s.cluster, key).model_dump(mode="json")
        link["bandwidth_bytes_per_s"] *= 2
        link["name"] += "-x2"
        out[f"cluster.{key}"] = link
    return out


def _faster_sync(s: Scenario, report: dict) -> dict:
    from twin.cost.weight_sync import convert_rate, staging_rate

    return {"weight_sync.gather_convert_bytes_per_s": 2 * convert_rate(s),
            "weight_sync.staging_bytes_per_s": 2 * staging_rate(s)}


def rollout_share_bounds(s: Scenario, report: dict) -> tuple[float, float]:
    """The share of a colocated run's GPUs a separate rollout pool needs: at least rollout's
    work at full batch (``phases.generation_bound``'s bulk) against the trainer's time, at
    most rollout's wall time (its long tail included) against the trainer's."""
    from twin.cost.engine import engine_costs
    from twin.cost.phases import generation_bound, sample_step

    br = report["breakdown"]
    gen = br.get("generation", 0.0) + br.get("reward", 0.0)
    train = sum(v for k, v in br.items() if k not in ("generation", "reward", "evaluation"))
    bulk = generation_bound(engine_costs(s), s.rollout_engines, sample_step(s))["bulk"] + br.get("reward", 0.0)
    bulk = min(bulk, gen)
    return bulk / max(bulk + train, 1e-9), gen / max(gen + train, 1e-9)


def _split(s: Scenario, share: float) -> dict:
    """Colocated GPUs re-placed as a rollout pool of about ``share`` of them (whole engines;
    whole nodes where an engine fits in one and there are nodes to spare) and a trainer pool of
    the rest."""
    total = s.cluster.total_gpus - s.placement.reward_model_gpus
    tp = s.placement.rollout.tp
    unit = tp * s.cluster.gpus_per_node // math.gcd(tp, s.cluster.gpus_per_node)
    unit = max(tp, min(unit, s.cluster.gpus_per_node))
    if total < 2 * unit:  # one node: split it by engines
        unit = tp
    t = s.placement.trainer
    group = t.tp * t.pp * t.sp  # the trainer's smallest whole data-parallel rank
    most = (total - group) // tp * tp  # whole engines
    rollout = min(max(unit, round(total * share / unit) * unit), most)
    trainer = total - rollout
    trainer -= trainer % group
    return {"placement.mode": "async", "placement.rollout.gpus": rollout, "placement.trainer.gpus": trainer}


SPLITS_TRIED = 5  # shares from the lower bound to the upper, evenly spaced


def _splits(s: Scenario, report: dict) -> list[dict]:
    """Distinct splits from one bound of :func:`rollout_share_bounds` to the other."""
    low, high = rollout_share_bounds(s, report)
    out: list[dict] = []
    for k in range(SPLITS_TRIED):
        share = low + (high - low) * k / (SPLITS_TRIED - 1)
        split = _split(s, share)
        if split not in out:
            out.append(split)
    return out


def _more_staleness(s: Scenario, report: dict) -> dict | list[dict]:
    more = {"algorithm.staleness": s.algorithm.staleness + 1}
    if s.placement.mode == "colocated":
        return [{**split, **more} for split in _splits(s, report)]
    return more


def _partial_rollout(s: Scenario, report: dict) -> dict | list[dict] | None:
    if s.placement.mode == "async" and s.algorithm.partial_rollout:
        return None
    on = {"algorithm.staleness": max(1, s.algorithm.staleness), "algorithm.partial_rollout": True}
    if s.placement.mode == "colocated":
        return [{**split, **on} for split in _splits(s, report)]
    return {"placement.mode": "async", **on}


def _async_scheduling(s: Scenario, report: dict) -> dict | None:
    """The engine's host work overlapped with the GPU's (vLLM's async scheduling, its default
    from 0.14): a software lever, only for an engine that schedules synchronously."""
    if s.placement.rollout.scheduling == "overlapped":
        return None
    return {"placement.rollout.scheduling": "overlapped"}


PRESSURES: dict[str, Pressure] = {p.name: p for p in (
    Pressure("rollout_gpus_x2", "more rollout GPUs", "×2 rollout GPUs (colocated: ×2 GPUs)",
             "rollout", _more_rollout),
    Pressure("trainer_gpus_x2", "more trainer GPUs", "×2 trainer GPUs", "optimization", _more_trainer),
    Pressure("reward_x2", "more reward workers",
             "×2 reward workers (sandboxes, CPU cores or reward-model GPUs)", "reward", _more_reward),
    Pressure("network_x2", "faster links", "×2 link bandwidth (NVLink and network)", "weight_sync",
             _faster_network),
    Pressure("weight_sync_x2", "faster weight sync", "×2 weight-sync software speed (gather/convert and staging)",
             "weight_sync", _faster_sync),
    Pressure("staleness_plus1", "staleness +1", "+1 staleness (colocated: async on the same GPUs)",
             "rollout", _more_staleness),
    Pressure("partial_rollout", "partial rollout", "partial rollout on (async, staleness ≥ 1)",
             "rollout", _partial_rollout),
    Pressure("async_scheduling", "async engine scheduling",
             "engine schedules asynchronously (was synchronous; vLLM ≥ 0.14)", "rollout", _async_scheduling),
)}

# The pressure that adds hardware to each link: its "marginal gain" in the bottleneck table.
OWN_PRESSURE = {"rollout": "rollout_gpus_x2", "optimization": "trainer_gpus_x2",
                "reward": "reward_x2", "weight_sync": "network_x2", "tools": None}


def _useful(report: dict) -> float:
    return report["throughput"]["useful_trajectories_per_hour"]


def _simulate_data(data: dict) -> dict:
    """Worker: one simulation of a scenario given as data; returns its report (no verdict)."""
    from twin.analysis.report import build_report
    from twin.config.load import load_scenario
    from twin.sim.loop import simulate

    try:
        return build_report(simulate(load_scenario(data)))
    except InputError as exc:
        return {"error": exc.message}


def resolve_pressures(names: Iterable[str] | None) -> list[Pressure]:
    """Built-in pressures by name, or custom ones given as a scenario override ``path=value``."""
    from twin.config.load import parse_overrides

    out = []
    for name in names or PRESSURES:
        if "=" in name:
            fixed = parse_overrides([name])
            out.append(Pressure(name, name, f"set {name}", "custom", lambda s, r, fixed=fixed: fixed))
        elif name in PRESSURES:
            out.append(PRESSURES[name])
        else:
            raise InputError("unknown pressure", field="--pressure", value=name,
                             allowed=choices(PRESSURES, name) + ", or a scenario override path=value")
    return out


def sensitivity(scenario: Scenario, base_report: dict, pressures: Iterable[str] | None = None,
                workers: int | None = None) -> list[dict[str, Any]]:
    """Re-simulate once per pressure; rows sorted by gain (largest first)."""
    from twin.config.load import apply_overrides

    base_data = scenario.model_dump(mode="json")
    jobs: list[tuple[Pressure, dict]] = []
    for pressure in resolve_pressures(pressures):
        overrides = pressure.overrides(scenario, base_report)
        for alternative in [overrides] if isinstance(overrides, dict) else overrides or []:
            jobs.append((pressure, apply_overrides(base_data, alternative)))
    workers = workers if workers is not None else min(len(jobs), os.cpu_count() or 1)
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            reports = list(pool.map(_simulate_data, [data for _, data in jobs]))
    else:
        reports = [_simulate_data(data) for _, data in jobs]
    base = _useful(base_report)
    base_gpus = sum(base_report["gpus"].values())
    best: dict[str, dict] = {}  # per pressure, its best alternative (the first error if all fail)
    for (p, _), rep in zip(jobs, reports):
        head = {"pressure": p.name, "short": p.short, "description": p.description, "link": p.link}
        if "error" in rep:
            best.setdefault(p.name, {**head, "error": rep["error"]})
            continue
        useful = _useful(rep)
        row = {
            **head,
            "step_time_s": rep["step_time_s"],
            "useful_trajectories_per_hour": useful,
            "gain": float(f"{useful / base - 1.0:.6g}") if base > 0 else 0.0,
            "added_gpus": sum(rep["gpus"].values()) - base_gpus,
        }
        placed = rep["scenario"]["placement"]
        if scenario.placement.mode == "colocated" and placed["mode"] != "colocated":
            # the same GPUs re-placed as two pools
            row["placement"] = {"rollout_gpus": placed["rollout"]["gpus"], "trainer_gpus": placed["trainer"]["gpus"]}
        if row["gain"] > best.get(p.name, {}).get("gain", -math.inf):
            best[p.name] = row
    rows = list(best.values())
    rows.sort(key=lambda r: (-r.get("gain", -math.inf), r["pressure"]))
    return rows


DESCRIBE = {
    ("rollout", False): "rollout long tail",
    ("rollout", True): "rollout throughput",
    ("tools", False): "tool latency",
    ("tools", True): "tool latency",
    ("reward", False): "reward latency",
    ("reward", True): "reward service capacity",
    ("optimization", False): "trainer (waiting on its own passes)",
    ("optimization", True): "trainer compute",
    ("weight_sync", False): "weight sync",
    ("weight_sync", True): "weight sync",
    ("switch", False): "colocated switch",
    ("switch", True): "colocated switch",
    ("evaluation", False): "evaluation",
    ("evaluation", True): "evaluation",
}


def diagnosis(bottleneck: list[dict], rows: list[dict]) -> str:
    """One line in the words of the field, e.g. "rollout long tail: on the critical path 61%
    of the step at 34% utilisation (binds, not saturated); more rollout GPUs: +3%, staleness
    +1: +41%" — the binding link's own hardware first, then the two best pressures."""
    if not bottleneck:
        return "nothing holds the trainer up"
    top = bottleneck[0]
    name = DESCRIBE.get((top["link"], top["saturated"]), top["link"])
    util = top["utilization"]
    line = f"{name}: on the critical path {top['critical_path_share'] * 100:.0f}% of the step"
    line += f" at {util * 100:.0f}% utilisation" if util is not None else ""
    line += " (binds, saturated)" if top["saturated"] else " (binds, not saturated)"
    ok = [r for r in rows if "gain" in r]
    own = next((r for r in ok if r["pressure"] == OWN_PRESSURE.get(top["link"])), None)
    shown = ([own] if own else []) + [r for r in ok[:2] if r is not own]
    parts = [f"{r['short']}: {r['gain'] * 100:+.0f}%" for r in shown]
    return line + ("; " + ", ".join(parts) if parts else "")


def verdict(scenario: Scenario, report: dict, pressures: Iterable[str] | None = None,
            workers: int | None = None) -> dict[str, Any]:
    """The ranked marginal gains and the one-line diagnosis; also fills each bottleneck row's
    ``marginal_gain`` (the gain of adding hardware to that link)."""
    rows = sensitivity(scenario, report, pressures, workers)
    gains = {r["pressure"]: r.get("gain") for r in rows}
    for row in report["bottleneck"]:
        row["marginal_gain"] = gains.get(OWN_PRESSURE.get(row["link"]) or "")
    return {"diagnosis": diagnosis(report["bottleneck"], rows), "marginal_gains": rows}
