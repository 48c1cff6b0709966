"""Timeline and step records → the figures people read first.

* step time: the steady-state interval between steps (the first step also fills the
  pipeline in staleness modes, so it is left out when there are more steps);
* breakdown: mean seconds per phase per step;
* utilisation: busy unit-seconds / (units × simulated wall time), per resource;
* critical-path share: the fraction of wall time each link held the trainer up;
* throughput: tokens/s (prompt + response of trajectories the optimizer consumed, as
  NeMo-RL counts), per GPU, trajectories per hour, useful experience per hour, over the
  same steady state as the step time.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from twin.cost.engine import engine_costs
from twin.sim.links import LINKS
from twin.sim.result import SimResult


def step_time(result: SimResult) -> float:
    steps = result.steps
    if len(steps) == 1:
        return steps[0].end - steps[0].start
    return (steps[-1].end - steps[0].end) / (len(steps) - 1)


def breakdown(result: SimResult) -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for rec in result.steps:
        for phase, sec in rec.phases.items():
            totals[phase] += sec
    return {k: v / len(result.steps) for k, v in totals.items()}


def utilization(result: SimResult) -> dict[str, float]:
    """Per role (``rollout``, ``trainer``, …) and per resource (``rollout/engine-3``)."""
    spans, wall = result.spans, result.wall_s
    if wall <= 0:
        return {}
    busy = spans.busy_seconds()
    out: dict[str, float] = {}
    role_busy: dict[str, float] = defaultdict(float)
    role_units: dict[str, float] = defaultdict(float)
    for name, units in zip(spans.resources, spans.capacity):
        out[name] = min(1.0, busy[name] / (units * wall))
        role = name.split("/", 1)[0]
        role_busy[role] += busy[name]
        role_units[role] += units
    for role in role_busy:
        out[role] = min(1.0, role_busy[role] / (role_units[role] * wall))
    return dict(sorted(out.items()))


def critical_path_share(result: SimResult) -> dict[str, float]:
    per_link: dict[str, float] = defaultdict(float)
    for rec in result.steps:
        for link, sec in rec.critical:
            per_link[link] += sec
    total = sum(per_link.values())
    return {k: v / total for k, v in sorted(per_link.items(), key=lambda kv: -kv[1])} if total > 0 else {}


def steady_state(result: SimResult) -> tuple[list, float]:
    """The steps after the first and the wall time they took: the window :func:`step_time`
    measures. In staleness modes the first step also fills the pipeline (the first rollout
    runs with nothing to overlap), a cost a long run pays once; rates over the whole of a
    short simulation would charge it to every step. One step: the whole run."""
    steps = result.steps
    if len(steps) > 1:
        return steps[1:], steps[-1].end - steps[0].end
    return steps, result.wall_s


def throughput(result: SimResult) -> dict[str, float]:
    """Rates over the steady state (:func:`steady_state`)."""
    steps, wall = steady_state(result)
    gpus = sum(result.gpus.values())
    tokens = sum(r.tokens for r in steps)
    trajs = sum(r.trajectories for r in steps)
    bound = result.plan.algorithm.max_lag
    useful = sum(r.trajectories for r in steps if r.max_staleness <= bound)
    hours = wall / 3600 if wall > 0 else float("nan")
    return {
        "tokens_per_s": tokens / wall,
        "tokens_per_s_per_gpu": tokens / wall / gpus,
        "generated_tokens_per_s": sum(r.generated_tokens for r in steps) / wall,
        "trajectories_per_hour": trajs / hours,
        "useful_trajectories_per_hour": useful / hours,
    }


# A link is saturated when its resource is busy nearly all the time (DESIGN: "busy nearly
# all the time"); 85% leaves room for the scheduling gaps every real system shows.
SATURATED = 0.85


def rollout_capacity_tokens_per_s(result: SimResult) -> float:
    """Tokens per second the rollout engines could generate at full batch: each engine
    decoding the largest batch its max_num_seqs and KV cache allow, at the run's mean
    context. A busy engine decoding one long response is busy, not saturated."""
    steps = result.steps
    trajectories = sum(r.trajectories for r in steps)
    if trajectories == 0:
        return 0.0
    generated = sum(r.generated_tokens for r in steps) / trajectories
    context = sum(r.tokens for r in steps) / trajectories - generated / 2
    costs = engine_costs(result.plan)
    batch = int(max(1, min(costs.max_num_seqs, costs.kv_capacity_tokens // max(context, 1.0))))
    return result.plan.rollout_engines * batch / costs.decode_time(batch, batch * context)


def link_utilization(result: SimResult, util: dict[str, float]) -> dict[str, float]:
    """How much of each link's capacity the run used, over the time the link held its GPUs.

    Rollout: tokens generated against the engines' full-batch token rate (see
    :func:`rollout_capacity_tokens_per_s`); the others: their resource's busy time. Colocated
    rollout and trainer time-share the GPUs, so each is measured over the time it holds them.
    """
    out = {name: util[link.role] for name, link in LINKS.items()
           if link.role and name != "rollout" and link.role in util}
    wall = result.wall_s
    if wall <= 0:
        return out
    held: dict[str, float] = defaultdict(float)
    for rec in result.steps:
        for link, sec in rec.critical:
            held[link] += sec
    colocated = result.plan.mode.shares_gpus
    rollout_time = (held["rollout"] + held["tools"] + held["reward"] + held["evaluation"]) if colocated else wall
    capacity = rollout_capacity_tokens_per_s(result)
    generated = result.counters.get("tokens_generated", 0.0)
    if capacity > 0 and rollout_time > 0:
        out["rollout"] = min(1.0, generated / (capacity * rollout_time))
    trainer_held = held["optimization"] + held["switch"] + held["weight_sync"]
    if colocated and trainer_held > 0 and "trainer" in util:
        out["optimization"] = min(1.0, util["trainer"] * wall / trainer_held)
    return out


def engine_spread(util: dict[str, float]) -> dict[str, float]:
    """Min, mean and max utilisation over the rollout engines (imbalance shows here)."""
    values = np.array([v for k, v in util.items() if k.startswith("rollout/engine-")])
    if values.size == 0:
        return {}
    return {"min": float(values.min()), "mean": float(values.mean()), "max": float(values.max())}
