"""Goodput at scale: the report's ``faults`` section.

Goodput is the share of wall time that produced kept training progress, against the loop as
simulated at the profiles' rates (the report's step time). Four causes take the rest:

* **stragglers**: GPUs slower than the profile (``faults.stragglers``), simulated where they
  act (:mod:`twin.sim.stragglers`): the second simulation's step time over the first's;
* **interruptions**: the job's failures (the GPU profile's rate per GPU-hour, by default the
  Llama 3 report's) send it back to its last checkpoint. Per failure it loses the work since
  that checkpoint and a restart (detection, scheduling, reading the checkpoint, engine start,
  NCCL initialisation, the weight sync to the engines, and, after a hardware failure with no
  spare node free, the wait for a replacement); between failures it pays the checkpoints that
  block training. The interval is the user's or Young's optimum sqrt(2 · C · MTBF) (Young 1974),
  and the expected wall time per checkpoint interval is Daly's for exponential failures
  (Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps"):
  ``M·exp(R/M)·(exp((τ + C)/M) − 1)`` for work τ, blocking checkpoint C, restart R, MTBF M;
* **engine failures**: on separate rollout GPUs a failed engine restarts alone; its in-flight
  trajectories are lost — regenerated before a synchronous step can end (about half the
  generation phase when it lands in it), dropped and replaced in a streaming run (the engine's
  work in flight and its restart, a share of the rollout pool, as far as rollout holds the step).

Interruptions are rare events over days; a simulation of minutes would see none, so their
expected cost is closed-form. docs/goodput.md gives every default's source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twin.analysis import metrics
from twin.config.plan import Plan
from twin.cost.checkpoint import CheckpointCost, checkpoint_cost
from twin.sim.result import SimResult
from twin.sim.stragglers import Slowdowns

DAY = 86_400.0
BINDS = 0.05  # failures bind where they take 5% of the wall time (the verdict's threshold for a link)


@dataclass(frozen=True)
class Rates:
    """Failures per second: per GPU, the job's restarts (every failure but those of engines
    that restart alone), engines lost on their own, and the shares of the failure model. The
    MTBF is the job's: the mean time between restarts from a checkpoint."""

    per_gpu_s: float
    job: float
    engines_lost: float
    node_share: float
    hardware_share: float

    @property
    def mtbf_s(self) -> float | None:
        return 1.0 / self.job if self.job > 0 else None


def engines_restart_alone(plan: Plan) -> bool:
    """Whether a failed rollout engine restarts without the job (separate rollout GPUs)."""
    return not plan.mode.shares_gpus and plan.scenario.faults.engine_restart


def rates(plan: Plan) -> Rates:
    """The plan's failure rates: the GPU profile's model, with the scenario's overrides."""
    f, model = plan.scenario.faults, plan.gpu.failure_model
    per_hour = model.failures_per_gpu_hour if f.failures_per_gpu_hour is None else f.failures_per_gpu_hour
    node = model.node_share if f.node_share is None else f.node_share
    hardware = model.hardware_share if f.hardware_share is None else f.hardware_share
    lam = per_hour / 3600.0
    alone = plan.rollout_gpus if engines_restart_alone(plan) else 0
    engine = plan.placement.rollout.engine_gpus
    per_event = (1.0 - node) + node * max(1.0, plan.cluster.gpus_per_node / engine)  # a node takes all its engines
    return Rates(lam, lam * (plan.total_gpus - alone), lam * alone * per_event, node, hardware)


def no_spare_probability(spares: int, nodes_away: float) -> float:
    """Chance that a hardware failure finds every spare taken: the nodes away for replacement
    are Poisson with mean ``nodes_away`` (failures × replacement time); P(at least ``spares``)."""
    if spares <= 0:
        return 1.0
    term = total = math.exp(-nodes_away)
    for k in range(1, spares):
        term *= nodes_away / k
        total += term
    return max(0.0, 1.0 - total)


def restart_times(plan: Plan, ckpt: CheckpointCost, sync_s: float, r: Rates) -> dict[str, float]:
    """Seconds of one restart, step by step (the node wait is its expectation over failures)."""
    f = plan.scenario.faults
    away = r.job * r.hardware_share * f.restart.node_replace_s
    wait = r.hardware_share * no_spare_probability(f.spare_nodes, away) * f.restart.node_replace_s
    return {"detect_s": f.restart.detect_s, "scheduler_s": f.restart.scheduler_s,
            "checkpoint_read_s": ckpt.read_s, "engine_start_s": f.restart.engine_start_s,
            "nccl_init_s": f.restart.nccl_init_s, "weight_sync_s": sync_s, "node_wait_s": wait}


def checkpoint_interval(plan: Plan, ckpt: CheckpointCost, step_s: float, mtbf: float | None) -> tuple[float | None, float | None]:
    """(interval used, Young's optimum) in seconds. The user's ``every_steps`` × the step;
    otherwise the optimum, at least one step (checkpoints fall between steps) and, written in
    the background, at least one write (the next cannot start before it ends). None: no
    failures and no interval set, so no checkpoint is needed."""
    c = plan.scenario.faults.checkpoint
    young = math.sqrt(2.0 * ckpt.blocking_s * mtbf) if mtbf is not None else None
    if c.every_steps is not None:
        return c.every_steps * step_s, young
    if young is None:
        return None, None
    floor = max(step_s, ckpt.write_s if c.asynchronous else 0.0)
    return max(young, floor), young


def daly_efficiency(tau: float, blocking: float, restart: float, mtbf: float | None) -> float:
    """Work over expected wall time per checkpoint interval (exponential failures)."""
    if mtbf is None:
        return tau / (tau + blocking)
    x = (tau + blocking) / mtbf
    if restart / mtbf + x > 700:  # fails long before it completes an interval
        return 0.0
    return tau / (mtbf * math.exp(restart / mtbf) * math.expm1(x))


def _interruption_losses(waste: float, tau: float, blocking: float, restart: dict[str, float],
                         lost_per_failure: float, mtbf: float | None) -> dict[str, float]:
    """``waste`` (the share of wall time interruptions and checkpoints take) split among
    checkpoints, lost work, restarts and node waits in proportion to their first-order terms."""
    wait = restart["node_wait_s"]
    terms = {"checkpoints": blocking / tau if tau > 0 else 0.0,
             "lost_work": lost_per_failure / mtbf if mtbf else 0.0,
             "restarts": (sum(restart.values()) - wait) / mtbf if mtbf else 0.0,
             "node_waits": wait / mtbf if mtbf else 0.0}
    total = sum(terms.values())
    return {k: waste * v / total if total > 0 else 0.0 for k, v in terms.items()}


def _engine_loss(plan: Plan, straggled: SimResult, step_s: float, r: Rates) -> float:
    """Share of running time engine failures cost (see the module)."""
    if r.engines_lost <= 0:
        return 0.0
    br = metrics.breakdown(straggled)
    if not plan.mode.streaming:  # regenerated before the step can end
        gen = br.get("generation", 0.0)
        return min(1.0, r.engines_lost * gen * gen / (2.0 * step_s))
    share = metrics.critical_path_share(straggled).get("rollout", 0.0)
    per_event = (step_s / 2.0 + plan.scenario.faults.restart.engine_start_s) / plan.rollout_engines * share
    return min(1.0, r.engines_lost * per_event)


def _stragglers(result: SimResult, straggled: SimResult, slow: Slowdowns | None) -> dict[str, Any]:
    return {"unit": result.plan.scenario.faults.stragglers.unit,
            "slowest": float(slow.gpus.max()) if slow is not None else 1.0,
            "trainer_pace": slow.trainer if slow is not None else 1.0,
            "slow_engines": int((slow.engines > 1.0).sum()) if slow is not None else 0,
            "step_time_s": metrics.step_time(straggled),
            "breakdown": metrics.breakdown(straggled)}


def faults_report(result: SimResult, straggled: SimResult | None = None,
                  slow: Slowdowns | None = None) -> dict[str, Any]:
    """The ``faults`` section: rates, checkpoint, restart, goodput and what each cause takes.
    ``straggled``: the same plan simulated with its slowdowns ``slow`` (None: nothing slower)."""
    plan, straggled = result.plan, straggled or result
    healthy = metrics.throughput(result)
    if not plan.scenario.faults.enabled:
        return {"enabled": False, "goodput": 1.0,
                "useful_trajectories_per_hour": healthy["useful_trajectories_per_hour"],
                "tokens_per_s": healthy["tokens_per_s"]}
    r, ckpt = rates(plan), checkpoint_cost(plan)
    base_s, step_s = metrics.step_time(result), metrics.step_time(straggled)
    restart = restart_times(plan, ckpt, result.counters.get("weight_sync_s", 0.0), r)
    tau, young = checkpoint_interval(plan, ckpt, step_s, r.mtbf_s)
    asynchronous = plan.scenario.faults.checkpoint.asynchronous
    lost_per_failure = (tau or 0.0) / 2.0 + (ckpt.write_s if asynchronous else 0.0)
    restart_s = sum(restart.values())
    if tau is None:
        efficiency = 1.0
    else:
        extra = ckpt.write_s if asynchronous else 0.0  # the checkpoint being written is lost too
        efficiency = daly_efficiency(tau, ckpt.blocking_s, restart_s + extra, r.mtbf_s)
    engine = _engine_loss(plan, straggled, step_s, r)
    pace = min(1.0, base_s / step_s) if step_s > 0 else 1.0
    goodput = efficiency * (1.0 - engine) * pace
    lost = _interruption_losses(1.0 - efficiency, tau or 0.0, ckpt.blocking_s if tau else 0.0, restart,
                                lost_per_failure, r.mtbf_s)
    lost.update(engine_failures=efficiency * engine, stragglers=efficiency * (1.0 - engine) * (1.0 - pace))
    spare_gpus = plan.scenario.faults.spare_nodes * plan.cluster.gpus_per_node
    mtbf = r.mtbf_s
    return {
        "enabled": True,
        "failures_per_gpu_hour": r.per_gpu_s * 3600.0,
        "interruptions_per_day": r.per_gpu_s * plan.total_gpus * DAY,
        "job_restarts_per_day": r.job * DAY,
        "mtbf_s": mtbf,
        "engine_failures_per_day": r.engines_lost * DAY,
        "checkpoint_bytes": ckpt.bytes, "checkpoint_write_s": ckpt.write_s,
        "checkpoint_blocking_s": ckpt.blocking_s, "checkpoint_asynchronous": asynchronous,
        "checkpoint_interval_s": tau, "checkpoint_interval_optimal_s": young,
        "checkpoint_every_steps": max(1, round(tau / step_s)) if tau and step_s > 0 else None,
        "restart_s": restart_s, "restart": restart,
        "spare_nodes": plan.scenario.faults.spare_nodes, "spare_gpus": spare_gpus,
        "stragglers": _stragglers(result, straggled, slow),
        "goodput": goodput,
        "lost": dict(sorted(lost.items())),
        "useful_trajectories_per_hour": healthy["useful_trajectories_per_hour"] * goodput,
        "tokens_per_s": healthy["tokens_per_s"] * goodput,
        "useful_trajectories_per_hour_per_gpu":
            healthy["useful_trajectories_per_hour"] * goodput / (sum(result.gpus.values()) + spare_gpus),
    }


def failures_bind(faults: dict[str, Any]) -> bool:
    """Whether interruptions (restarts, lost work, checkpoints, node waits) and engine failures
    take at least 5% of the wall time."""
    lost = faults.get("lost") or {}
    return sum(v for k, v in lost.items() if k != "stragglers") >= BINDS


def describe(faults: dict[str, Any]) -> str | None:
    """One line for people: goodput and where the rest of the wall time goes."""
    if not faults.get("enabled"):
        return None
    lost = sorted(((v, k) for k, v in faults["lost"].items() if v >= 0.0005), reverse=True)
    parts = ", ".join(f"{k.replace('_', ' ')} {v * 100:.1f}%" for v, k in lost)
    every = faults["checkpoint_interval_s"]
    when = (f"{every / 3600:.1f} h" if every >= 7200 else f"{every / 60:.1f} min") if every else None
    line = (f"Goodput {faults['goodput'] * 100:.1f}% ({faults['interruptions_per_day']:.2f} interruptions a day"
            + (f", a checkpoint every {when}" if when else "") + ")")
    return line + (f"; lost to {parts}" if parts else "")
