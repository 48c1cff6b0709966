"""The bottleneck verdict: which link binds, whether it is saturated, and what each pressure buys.

A link *binds* when it holds the trainer up (its share of the critical path); it is
*saturated* when its resource is also busy nearly all the time. What settles the question is
the **marginal gain** of raising one pressure alone — ×2 rollout GPUs, ×2 trainer GPUs, ×2
reward workers, ×2 network bandwidth, ×2 weight-sync speed, +1 staleness, partial rollout on —
measured by re-simulating the scenario once per pressure, in parallel processes, and
comparing useful experience per hour (trajectories that reach the optimizer within the
staleness bound).

A pressure that needs more GPUs adds nodes of the same kind; one that a deployment mode cannot
express (staleness on colocated GPUs) re-places the same GPUs as separate pools, whose engines,
alone on their GPUs, take vLLM's default memory fraction where the colocated one was smaller
(:func:`twin.studies.placement.engines_on_their_own_gpus`). How to split
them is itself the question a planner would ask, so the verdict tries the splits between two
bounds and keeps the best: the rollout pool needs at least its share of the work at full batch
(what it does once the tail no longer idles it) and at most its share of the step's time.

Each gain is read within a noise band from other seeds (:func:`noise_bands`, docs/noise.md):
one inside it is "within noise", not a gain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Union

from twin.analysis.metrics import throughput
from twin.analysis.report import LinkRow, ReportData
from twin.analysis.learning import effect as learning_effect
from twin.config.frameworks import lever_availability
from twin.config.overrides import apply_overrides, parse_overrides, split_top_level
from twin.config.plan import Plan
from twin.cost.engine import engine_costs
from twin.cost.weight_sync import call_overhead, collective_overhead, convert_rate, staging_rate, tensor_overhead
from twin.errors import InputError, choices
from twin.runner import Report
from twin.sim.settle import RESIMULATION_TOLERANCE, settled_after, settling, step_times
from twin.studies import executors, goodput, noise
from twin.studies.noise import reseeded
from twin.studies.placement import PoolSplit, engines_on_their_own_gpus

Overrides = dict[str, Any]


@dataclass(frozen=True)
class Pressure:
    """One lever: the scenario overrides that raise it (any number of fields at once)."""

    name: str
    short: str         # as the diagnosis says it: "more rollout GPUs"
    description: str
    link: str          # the link of the loop it relieves
    # None: not applicable here; a list: alternatives, of which the verdict keeps the best
    overrides: Callable[[Plan, Report], Overrides | list[Overrides] | None]
    shared_description: str | None = None  # what it means where rollout and trainer share GPUs
    absent: str = "already so in this scenario"  # why it has no row where ``overrides`` gives None
    goodput: bool = False  # acts on interruptions alone: gain in goodput-weighted experience (studies.goodput)
    shared_short: str | None = None  # ``short`` where rollout and trainer share GPUs, as the row names it

    def describe(self, plan: Plan) -> str:
        """The row's label, in the terms of the plan's deployment mode."""
        return self.shared_description if plan.mode.shares_gpus and self.shared_description else self.description

    def named(self, plan: Plan) -> str:
        """The lever as the diagnosis says it, in the terms of the plan's deployment mode."""
        return self.shared_short if plan.mode.shares_gpus and self.shared_short else self.short


def _nodes_for(plan: Plan, gpus: int) -> int:
    return max(plan.cluster.nodes, math.ceil(gpus / plan.cluster.gpus_per_node))


def _more_rollout(plan: Plan, report: Report) -> Overrides:
    rm = plan.reward_model_gpus
    if plan.mode.shares_gpus:  # the shared pool doubles: both roles get the new GPUs
        gpus = 2 * plan.rollout_gpus
        return {"cluster.nodes": _nodes_for(plan, gpus + rm),
                "placement.rollout.gpus": gpus, "placement.trainer.gpus": 2 * plan.trainer_gpus}
    rollout = 2 * plan.rollout_gpus
    return {"placement.rollout.gpus": rollout, "placement.trainer.gpus": plan.trainer_gpus,
            "cluster.nodes": _nodes_for(plan, rollout + plan.trainer_gpus + rm)}


def _more_trainer(plan: Plan, report: Report) -> Overrides | None:
    if plan.mode.shares_gpus:
        return None  # the same GPUs: "×2 rollout GPUs" already doubles them
    trainer = 2 * plan.trainer_gpus
    return {"placement.rollout.gpus": plan.rollout_gpus, "placement.trainer.gpus": trainer,
            "cluster.nodes": _nodes_for(plan, plan.rollout_gpus + trainer + plan.reward_model_gpus)}


def _more_reward(plan: Plan, report: Report) -> Overrides:
    more = plan.reward.doubled(plan)
    gpus = more.get("placement.reward_model_gpus")
    if gpus is None:
        return more
    pools = plan.rollout_gpus + (0 if plan.mode.shares_gpus else plan.trainer_gpus)
    return {**more, "placement.rollout.gpus": plan.rollout_gpus, "placement.trainer.gpus": plan.trainer_gpus,
            "cluster.nodes": _nodes_for(plan, gpus + pools)}


def _faster_network(plan: Plan, report: Report) -> Overrides:
    out = {}
    for key in ("intra_node_link", "inter_node_link"):
        link = getattr(plan.cluster, key).model_dump(mode="json")
        link["bandwidth_bytes_per_s"] *= 2
        if link.get("peer_bandwidth_bytes_per_s"):  # a mesh: each direct link too
            link["peer_bandwidth_bytes_per_s"] *= 2
        link["name"] += "-x2"
        out[f"cluster.{key}"] = link
    return out


def _faster_sync(plan: Plan, report: Report) -> Overrides:
    return {"weight_sync.collective_overhead_s": collective_overhead(plan) / 2,
            "weight_sync.gather_convert_bytes_per_s": 2 * convert_rate(plan),
            "weight_sync.staging_bytes_per_s": 2 * staging_rate(plan),
            "weight_sync.call_overhead_s": call_overhead(plan) / 2,
            "weight_sync.tensor_overhead_s": tensor_overhead(plan) / 2}


def rollout_share_bounds(plan: Plan, report: Report) -> tuple[float, float]:
    """The share of a colocated run's GPUs a separate rollout pool needs: at least rollout's
    work at full batch (``phases.generation_bound``'s bulk) against the trainer's time, at
    most rollout's wall time (its long tail included) against the trainer's."""
    from twin.cost.phases import generation_bound, sample_step

    br = report.breakdown
    gen = br.get("generation", 0.0) + br.get("reward", 0.0)
    train = sum(v for k, v in br.items() if k not in ("generation", "reward", "evaluation"))
    bulk = generation_bound(engine_costs(plan), plan.rollout_engines, sample_step(plan))["bulk"] + br.get("reward", 0.0)
    bulk = min(bulk, gen)
    return bulk / max(bulk + train, 1e-9), gen / max(gen + train, 1e-9)


def _split(plan: Plan, share: float) -> Overrides:
    """Colocated GPUs re-placed as a rollout pool of about ``share`` of them and a trainer pool
    of the rest (:class:`~twin.studies.placement.PoolSplit`; where none fits, the scenario's own
    check then says why)."""
    rule = PoolSplit.of(plan.scenario, plan.cluster.total_gpus - plan.reward_model_gpus)
    rollout, trainer = rule.nearest(share) or (rule.unit, rule.free - rule.unit)
    return {"placement.mode": "async", "placement.rollout.gpus": rollout, "placement.trainer.gpus": trainer,
            **engines_on_their_own_gpus(plan.mode.name, plan.placement.rollout.gpu_memory_utilization)}


SPLITS_TRIED = 5  # shares from the lower bound to the upper, evenly spaced


def _splits(plan: Plan, report: Report) -> list[Overrides]:
    """Distinct splits from one bound of :func:`rollout_share_bounds` to the other."""
    low, high = rollout_share_bounds(plan, report)
    out: list[Overrides] = []
    for k in range(SPLITS_TRIED):
        share = low + (high - low) * k / (SPLITS_TRIED - 1)
        split = _split(plan, share)
        if split not in out:
            out.append(split)
    return out


def _more_staleness(plan: Plan, report: Report) -> Overrides | list[Overrides]:
    more = {"algorithm.staleness": plan.algorithm.staleness + 1}
    if plan.mode.shares_gpus:
        return [{**split, **more} for split in _splits(plan, report)]
    return more


def _partial_rollout(plan: Plan, report: Report) -> Overrides | list[Overrides] | None:
    if plan.mode.streaming and plan.algorithm.partial_rollout:
        return None
    on = {"algorithm.staleness": max(1, plan.algorithm.staleness), "algorithm.partial_rollout": True}
    if plan.mode.shares_gpus:
        return [{**split, **on} for split in _splits(plan, report)]
    return {"placement.mode": "async", **on}


# A sensitivity, not a lever: how much the answer leans on the stack reaching the profile's
# kernel rates (the figure a datasheet does not have). A quarter less is within what published
# stacks show (NeMo-RL's Megatron trainer reached 0.53 of them, docs/validation.md).
LESS_EFFICIENT_STACK = 0.75


def _less_efficient_stack(plan: Plan, report: Report) -> Overrides:
    return {"cluster.compute_scale": max(1e-3, round(plan.cluster.compute_scale * LESS_EFFICIENT_STACK, 6))}


def _async_scheduling(plan: Plan, report: Report) -> Overrides | None:
    """The engine's host work overlapped with the GPU's (vLLM's async scheduling, its default
    from 0.14): a software lever, only for an engine that schedules synchronously."""
    if plan.placement.rollout.scheduling == "overlapped":
        return None
    return {"placement.rollout.scheduling": "overlapped"}


PRESSURES: dict[str, Pressure] = {p.name: p for p in (
    Pressure("rollout_gpus_x2", "more rollout GPUs", "×2 rollout GPUs", "rollout", _more_rollout,
             "×2 GPUs (rollout and trainer share them)", shared_short="×2 GPUs (shared)"),
    Pressure("trainer_gpus_x2", "more trainer GPUs", "×2 trainer GPUs", "optimization", _more_trainer,
             absent="shared GPUs: the ×2 GPUs row doubles the trainer's too"),
    Pressure("reward_x2", "more reward workers",
             "×2 reward workers (sandboxes, CPU cores or reward-model GPUs)", "reward", _more_reward),
    Pressure("network_x2", "faster links", "×2 link bandwidth (NVLink and network)", "weight_sync",
             _faster_network),
    Pressure("weight_sync_x2", "faster weight sync", "×2 weight-sync software speed (every software cost of a sync)",
             "weight_sync", _faster_sync),
    Pressure("staleness_plus1", "staleness +1", "+1 staleness", "rollout", _more_staleness,
             "+1 staleness (async pools on the same GPUs)"),
    Pressure("partial_rollout", "partial rollout", "partial rollout on (async, staleness ≥ 1)",
             "rollout", _partial_rollout, "partial rollout on (async pools, same GPUs, staleness ≥ 1)"),
    Pressure("async_scheduling", "async engine scheduling",
             "engine schedules asynchronously (was synchronous; vLLM ≥ 0.14)", "rollout", _async_scheduling),
    Pressure("checkpoint_interval", "checkpoint interval", "checkpoint interval at Young's optimum (goodput-weighted)",
             "faults", goodput.optimal_interval, absent="already at Young's optimum, or faults off",
             goodput=True),
    Pressure("async_checkpointing", "async checkpointing",
             "asynchronous checkpointing (goodput-weighted)", "faults",
             goodput.async_checkpointing, absent="already asynchronous, or faults off", goodput=True),
    Pressure("spare_nodes", "spare nodes", "spare nodes for the failed ones away (goodput-weighted)",
             "faults", goodput.more_spare_nodes, absent="faults off", goodput=True),
    Pressure("compute_share_x0.75", "a less efficient stack",
             "sensitivity: a stack 25% less efficient (compute_scale ×0.75)", "compute",
             _less_efficient_stack),
)}

# The pressure that adds hardware to each link: its "marginal gain" in the bottleneck table.
OWN_PRESSURE = {"rollout": "rollout_gpus_x2", "optimization": "trainer_gpus_x2",
                "reward": "reward_x2", "weight_sync": "network_x2", "tools": None}


def _custom(text: str, overrides: Overrides) -> Pressure:
    """A pressure the user names as scenario overrides (one field or several at once); one on
    ``faults.*`` fields alone is read in goodput-weighted experience, as the built-in fault levers."""
    faults_only = all(str(k).startswith("faults.") for k in overrides)
    return Pressure(text, text, f"set {text}", "custom", lambda plan, report: dict(overrides), goodput=faults_only)


PressureSpec = Union[str, Mapping[str, Any]]  # a built-in name, "path=value[,path=value…]", or a dict


def resolve_pressures(specs: Iterable[PressureSpec] | None) -> list[Pressure]:
    """Built-in pressures by name, or custom ones: ``"path=value"``, several joined by commas
    (``"placement.rollout.gpus=24,placement.trainer.gpus=40"``), or a mapping of paths to
    values. Raises :class:`InputError` on an unknown name or a malformed override."""
    out = []
    for spec in PRESSURES if specs is None else specs:
        if isinstance(spec, Mapping):
            if not spec:
                raise InputError("an empty pressure", field="--pressure", value={},
                                 allowed="a mapping of scenario paths to values")
            out.append(_custom(",".join(f"{k}={v}" for k, v in spec.items()), {str(k): v for k, v in spec.items()}))
        elif not isinstance(spec, str):
            raise InputError("a pressure is a name, path=value, or a mapping of paths to values",
                             field="--pressure", value=spec, allowed=choices(PRESSURES))
        elif "=" in spec:
            out.append(_custom(spec, parse_overrides(split_assignments(spec))))
        elif spec in PRESSURES:
            out.append(PRESSURES[spec])
        else:
            raise InputError("unknown pressure", field="--pressure", value=spec,
                             allowed=choices(PRESSURES, spec) + ", or scenario overrides path=value[,path=value…]")
    return out


def split_assignments(text: str) -> list[str]:
    """``"a.b=1,c.d={x: 1, y: 2}"`` -> ``["a.b=1", "c.d={x: 1, y: 2}"]``: commas split
    assignments only outside brackets and quotes, and only before another ``path=``."""
    return split_top_level(text, at=lambda rest: "=" in rest.split(",", 1)[0])


@dataclass(frozen=True)
class Row:
    """One pressure, re-simulated (the best of its alternatives), or why it could not be.

    ``noise`` is the band the gain is read within (:func:`noise_bands`): the largest spread
    across seeds of the baseline and, where it was re-simulated (``reseeded``), of the
    pressured run; ``within_noise`` says the gain is smaller than it."""

    pressure: Pressure
    description: str  # the pressure's label in this plan's terms
    short: str | None = None  # the lever as the diagnosis names it in this plan's terms (None: pressure.short)
    not_in_framework: str | None = None  # "not in TRL's GRPOTrainer; verl ... have it" (the framework profiles)
    step_time_s: float | None = None
    useful_trajectories_per_hour: float | None = None
    gain: float | None = None
    added_gpus: int = 0
    placement: dict[str, int] | None = None  # the same GPUs re-placed as two pools
    error: str | None = None
    noise: float | None = None
    within_noise: bool = False
    reseeded: bool = False
    overrides: Overrides | None = field(default=None, repr=False, compare=False)  # the alternative kept
    time_to_target: dict[str, float] | None = None  # relative change of steps, s/step, time (analysis.learning)

    def to_dict(self) -> dict[str, Any]:
        p = self.pressure
        out: dict[str, Any] = {"pressure": p.name, "short": self.short or p.short, "description": self.description, "link": p.link}
        if self.error is not None:
            return {**out, "error": self.error}
        out.update(step_time_s=self.step_time_s, useful_trajectories_per_hour=self.useful_trajectories_per_hour,
                   gain=self.gain, added_gpus=self.added_gpus)
        if self.placement is not None:
            out["placement"] = self.placement
        if self.noise is not None:
            out.update(noise=self.noise, within_noise=self.within_noise, noise_reseeded=self.reseeded)
        if self.time_to_target is not None:
            out["time_to_target"] = self.time_to_target
        if self.not_in_framework:
            out["not_in_framework"] = self.not_in_framework
        return out


# A row whose gain is at least this many times the baseline's own spread across seeds is read
# as outside the band without re-simulating the pressured scenario: it could only be inside if
# its own spread were larger than its gain. Measured with tools/noise_rows.py on seven
# built-ins (all but agentic-search-4b, every row re-simulated; docs/noise.md): pressured
# runs spread up to 4.1x their baseline, but every row this rule skips spread at most 0.34 of
# its gain (grpo-8b-disaggregated's faster weight sync, +3.2% at 3.1x a 1.05% baseline spread).
# A row under the baseline's spread is not re-simulated either: the band is the larger of the
# two spreads, so it is within noise whatever its own.
NOISE_SKIP = 3.0


NOISE_RULE = (
    "Noise bands: the baseline is re-simulated with 2 other seeds (run.seed+1, +2); its spread "
    "across the 3 seeds ((max-min)/mean of useful trajectories/h) is every row's band. A gain "
    "smaller than it is within noise as it stands; a gain from 1x to "
    f"{NOISE_SKIP:g}x it has its pressured scenario re-simulated with the same seeds, and its band "
    "is the larger of the two spreads; a gain further out keeps the baseline's band (on the "
    "built-ins no pressured run spread more than a third of such a gain). A gain inside its band "
    "prints as 'within noise'.")


def noise_bands(base: Report, rows: list[Row], base_again: list[ReportData | InputError],
                executor: executors.Executor, progress: Callable[[int, int], None] | None = None) -> list[Row]:
    """``rows`` with their noise bands, given the baseline re-simulated with the other seeds
    (``base_again``: ``noise.reseeded`` of its scenario, simulated): the baseline's spread is
    every row's band; a row whose |gain| is at least that and under ``NOISE_SKIP`` times it is
    re-simulated with the same seeds and its band is the larger of the two spreads. Same seed,
    same bands."""
    base_spread = noise.spread([steady_useful(base)] + [_useful(r) for r in _ok(base_again)])
    if base_spread is None:
        return rows
    # a lever on interruptions alone moves a closed-form share, not the simulated loop: no band
    near = [r for r in rows if r.gain is not None and not r.pressure.goodput
            and base_spread <= abs(r.gain) < NOISE_SKIP * base_spread]
    data = settling(base.plan.scenario.model_dump(mode="json"))
    jobs = [d for r in near for d in noise.reseeded(apply_overrides(data, {**(r.overrides or {}),
                                                                            **goodput.WITHOUT_FAULTS}))]
    reports = executor.map(jobs, progress) if jobs else []
    spreads: dict[str, float | None] = {}
    for i, r in enumerate(near):
        again = reports[i * noise.EXTRA_SEEDS:(i + 1) * noise.EXTRA_SEEDS]
        spreads[r.pressure.name] = noise.spread([r.useful_trajectories_per_hour] + [_useful(x) for x in _ok(again)])
    out = []
    for r in rows:
        if r.gain is None or r.pressure.goodput:
            out.append(r)
            continue
        band = noise.band([base_spread, spreads.get(r.pressure.name)])
        out.append(replace(r, noise=band, within_noise=noise.within(r.gain, band),
                           reseeded=r.pressure.name in spreads))
    return out


def steady_useful(base: Report) -> float:
    """The baseline's useful trajectories/h as its re-simulations measure it: they stop at
    steady state (:func:`twin.sim.settle.settling`), and the same seed draws the same steps, so
    it is the rate over the baseline's own steps up to where the rule would have stopped it. A
    pressure that changes nothing then gains exactly 0, not the difference of two windows."""

    result, plan = base.result, base.plan
    if result is None or plan.workload.schedule is not None or result.settled:
        return base.useful_trajectories_per_hour
    k = settled_after(step_times(result.steps), plan.run.steady_tolerance or RESIMULATION_TOLERANCE)
    if k is None or k >= len(result.steps):
        return base.useful_trajectories_per_hour
    return float(f"{throughput(replace(result, steps=result.steps[:k]))['useful_trajectories_per_hour']:.6g}")


def _useful(report: ReportData) -> float:
    return report.throughput.useful_trajectories_per_hour


def _ok(reports: list) -> list[ReportData]:
    return [r for r in reports if not isinstance(r, InputError)]


def sensitivity(base: Report, pressures: Iterable[PressureSpec] | None = None,
                workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                noise: bool = True, executor: str | executors.Executor = "local") -> list[Row]:
    """Re-simulate once per pressure (each alternative of it) on ``executor`` (a local process
    pool of ``workers`` by default; Ray with ``"ray"``);
    rows sorted by gain (largest first), a pressure that cannot apply last with its reason.
    Pressures that do not apply here at all (their lever is already pulled) have no row.
    With ``noise`` (the default) each row carries its band (:func:`noise_bands`): the
    baseline's other seeds run in the same batch as the pressures, a few rows again after."""
    plan = base.plan
    # Re-simulations stop at steady state: a pressure's rate, not its ten-step history.
    base_data = settling(plan.scenario.model_dump(mode="json"))
    jobs: list[tuple[Pressure, Overrides]] = []
    for pressure in resolve_pressures(pressures):
        overrides = pressure.overrides(plan, base)
        for alternative in [overrides] if isinstance(overrides, dict) else overrides or []:
            jobs.append((pressure, alternative))
    # the baseline's other seeds, in the same batch; rows that read no goodput skip the faults section
    again = noise_seeds(apply_overrides(base_data, goodput.WITHOUT_FAULTS)) if noise and jobs else []
    data = [apply_overrides(base_data, o if p.goodput else {**o, **goodput.WITHOUT_FAULTS}) for p, o in jobs]
    ex = executors.make(executor, workers=workers)
    try:
        return _rows(base, jobs, ex.map(data + again, progress), progress, noise, ex, len(again))
    finally:
        if ex is not executor:
            ex.close()


def _rows(base: Report, jobs: list[tuple[Pressure, Overrides]], reports: list[ReportData | InputError],
          progress: Callable[[int, int], None] | None, noise: bool, ex: executors.Executor, extra: int) -> list[Row]:
    """The rows of :func:`sensitivity` from its reports: each pressure's best alternative,
    ranked, with noise bands."""
    plan = base.plan
    reports, base_again = reports[:len(jobs)], reports[len(jobs):]
    useful = steady_useful(base)
    base_gpus = sum(base.gpus.values()) + _spares(base.data)
    best: dict[str, Row] = {}  # per pressure, its best alternative (the first error if all fail)
    for (p, alternative), rep in zip(jobs, reports):
        if isinstance(rep, InputError):
            best.setdefault(p.name, Row(p, p.describe(plan), p.named(plan), error=rep.message))
            continue
        now = rep.useful_trajectories_per_hour
        gain = now / useful - 1.0 if useful > 0 else 0.0
        if p.goodput:  # a lever on interruptions: its figure is goodput-weighted
            now, gain = rep.faults["useful_trajectories_per_hour"], goodput.goodput_gain(base.data, rep, alternative)
        placed = rep.plan
        row = Row(
            p, p.describe(plan), p.named(plan), step_time_s=rep.step_time_s, useful_trajectories_per_hour=now,
            gain=float(f"{gain:.6g}"),
            added_gpus=rep.total_gpus + _spares(rep) - base_gpus,
            placement=({"rollout_gpus": placed["rollout_gpus"], "trainer_gpus": placed["trainer_gpus"]}
                       if plan.mode.shares_gpus and placed["mode"] != plan.mode.name else None),
            overrides=alternative, time_to_target=learning_effect(base.data.learning, rep.learning),
            not_in_framework=lever_availability(plan.scenario.framework, p.name),
        )
        held = best.get(p.name)
        if held is None or held.gain is None or row.gain > held.gain:
            best[p.name] = row
    rows = list(best.values())
    rows.sort(key=lambda r: (-(r.gain if r.gain is not None else -math.inf), r.pressure.name))
    if noise:
        first = len(jobs) + extra
        tick = (lambda n, total: progress(first + n, first + total)) if progress else None
        rows = noise_bands(base, rows, base_again, ex, tick)
    return rows


def _spares(report: ReportData) -> int:
    """Spare GPUs a report's scenario holds beside its roles' (``faults.spare_nodes``)."""
    sc = report.scenario
    return int(sc.get("faults", {}).get("spare_nodes", 0)) * int(sc["cluster"]["gpus_per_node"])


def noise_seeds(data: dict) -> list[dict]:
    """The scenario (as data) with the other seeds its noise band is measured with."""
    return reseeded(data)


DESCRIBE = {
    ("rollout", False): "rollout long tail",
    ("rollout", True): "rollout throughput",
    ("tools", False): "tool latency",
    ("tools", True): "tool latency",
    ("reward", False): "reward latency",
    ("reward", True): "reward service capacity",
    ("optimization", False): "trainer, not saturated (its GPUs idle inside its passes: uneven ranks, "
                              "communication, pipeline bubbles)",
    ("optimization", True): "trainer compute",
    ("weight_sync", False): "weight sync",
    ("weight_sync", True): "weight sync",
    ("switch", False): "colocated switch",
    ("switch", True): "colocated switch",
    ("evaluation", False): "evaluation",
    ("evaluation", True): "evaluation",
}


def diagnosis(bottleneck: list[LinkRow], rows: list[dict]) -> str:
    """One line in the words of the field, e.g. "rollout long tail: on the critical path 61%
    of the step at 34% load (binds, not saturated); more rollout GPUs: +3%, staleness
    +1: +41%" — the binding link's own hardware first, then the two best pressures."""
    if not bottleneck:
        return "nothing holds the trainer up"
    top = bottleneck[0]
    name = DESCRIBE.get((top.link, top.saturated), top.link)
    util = top.load
    line = f"{name}: on the critical path {top.critical_path_share * 100:.0f}% of the step"
    line += f" at {util * 100:.0f}% load" if util is not None else ""
    line += " (binds, saturated)" if top.saturated else " (binds, not saturated)"
    ok = [r for r in rows if "gain" in r and r["link"] != "compute"]  # levers, not the sensitivity
    own = next((r for r in ok if r["pressure"] == OWN_PRESSURE.get(top.link)), None)
    # The best two beside it, of those that are gains at all (not within noise).
    shown = ([own] if own else []) + [r for r in ok if r is not own and not r.get("within_noise")][:2]
    parts = [f"{r['short']}" + (f" ({r['not_in_framework'].split(';')[0]})" if r.get("not_in_framework") else "")
             + ": " + ("within noise" if r.get("within_noise") else f"{r['gain'] * 100:+.0f}%")
             for r in shown]
    return line + ("; " + ", ".join(parts) if parts else "")


@dataclass(frozen=True)
class Verdict:
    """The ranked marginal gains and the one-line diagnosis."""

    diagnosis: str
    rows: list[Row] = field(default_factory=list)

    def gain_by_link(self) -> dict[str, float | None]:
        """Each link's marginal gain: that of the pressure adding hardware to it."""
        gains = {r.pressure.name: r.gain for r in self.rows}
        return {link: gains.get(name or "") for link, name in OWN_PRESSURE.items()}

    def to_dict(self) -> dict[str, Any]:
        return {"diagnosis": self.diagnosis, "marginal_gains": [r.to_dict() for r in self.rows]}


def judge(report: Report, pressures: Iterable[PressureSpec] | None = None, workers: int | None = None,
          progress: Callable[[int, int], None] | None = None, noise: bool = True,
          executor: str | executors.Executor = "local") -> Verdict:
    """The verdict on a report: every pressure re-simulated, ranked, and the diagnosis; with
    ``noise``, each gain read within its band from other seeds (:func:`noise_bands`)."""
    rows = sensitivity(report, pressures, workers, progress, noise, executor)
    return Verdict(diagnosis(report.bottleneck, [r.to_dict() for r in rows]), rows)
