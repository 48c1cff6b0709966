"""The scaling curve: a scenario at several GPU counts, and which link binds at each.

:func:`scale` simulates the scenario at each size in ``gpus`` — its own placement scaled
proportionally (:func:`scaled_overrides`), or with ``replan`` the planner's best deployment at
that size (:func:`twin.studies.planner.plan_budget`) — and reports per size the throughput, the scaling
efficiency against the smallest size that runs, and the binding link with its load. It names
the sizes at which the binding link changes and the first size whose efficiency falls below a
threshold: where an added GPU stops paying.

docs/planner.md describes it for users.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from twin import runner
from twin.analysis.learning import hours
from twin.analysis.learning import point_figures as learning_figures
from twin.analysis.frames import frame
from twin.analysis.html import Views, scale_html
from twin.analysis.pricing import check_price, costs, money
from twin.analysis.report import ReportData
from twin.config import arguments, limits
from twin.config.modes import MODES
from twin.config.overrides import apply_overrides, parse_overrides
from twin.config.scenario import placement_pools
from twin.errors import InputError
from twin.sim.settle import settling
from twin.studies import executors
from twin.studies.goodput import bind_line, failures_bind_at, point_figures
from twin.studies.placement import PoolSplit
from twin.studies.planner import pin_lr_batch, plan_budget

DEFAULT_THRESHOLD = 0.7   # efficiency below which an added GPU "stops paying" (user-settable)
MAX_POINTS = 64           # sizes in one call
MAX_GPUS = limits.MAX_GPUS  # the schema's own bound on a cluster


# ----------------------------------------------------------------------------- inputs
def parse_gpus(value: str | Iterable[int]) -> list[int]:
    """``"16,32,64"`` or integers → the sizes, ascending, without repeats."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
        sizes = []
        for item in items:
            try:
                sizes.append(int(item))
            except ValueError:
                raise InputError("not a GPU count", field="--gpus", value=item,
                                 allowed="comma-separated integers, e.g. --gpus 16,32,64") from None
    else:
        sizes = arguments.items(value, "--gpus", (int,), "a list of integers, or '16,32,64'")
    if not sizes:
        raise InputError("no sizes given", field="--gpus", value=value, allowed="e.g. --gpus 16,32,64")
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_GPUS:
            raise InputError("out of range", field="--gpus", value=n, allowed=f"integers 1..{MAX_GPUS}")
    sizes = sorted(set(sizes))
    if len(sizes) > MAX_POINTS:
        raise InputError("too many sizes", field="--gpus", value=len(sizes), allowed=f"at most {MAX_POINTS}")
    return sizes


def scaled_overrides(scenario, gpus: int) -> dict[str, Any]:
    """The scenario's placement on ``gpus`` GPUs, scaled proportionally.

    ``cluster.nodes`` = ceil(gpus / gpus_per_node); the reward model keeps its GPUs; a shared
    pool (colocated) takes the rest; separate pools keep the scenario's rollout share
    (rollout / (rollout + trainer)) at the nearest split :class:`PoolSplit` allows (whole
    engines, whole nodes where the GPUs span two nodes or more; a trainer pool the scenario's
    tp × pp × sp × cp and ep accept). Engine tp, trainer parallelism and the batch are kept.
    Raises :class:`InputError` when no split fits."""
    c, p = scenario.cluster, scenario.placement
    nodes = max(1, math.ceil(gpus / c.gpus_per_node))
    free = gpus - p.reward_model_gpus
    out: dict[str, Any] = {"cluster.nodes": nodes}
    if free < 1:
        raise InputError(f"{gpus} GPUs leave none beside the reward model's {p.reward_model_gpus}",
                         field="--gpus", value=gpus, allowed=f"more than {p.reward_model_gpus}")
    if MODES[p.mode].shares_gpus:
        return {**out, "placement.rollout.gpus": free, "placement.trainer.gpus": free}
    rollout0, trainer0 = placement_pools(scenario)
    rule = PoolSplit.of(scenario, free)
    split = rule.nearest(rollout0 / (rollout0 + trainer0))
    if split is None:
        raise InputError(f"{gpus} GPUs do not split into whole engines of {rule.engine_gpus} GPUs and a trainer "
                         f"pool in multiples of {rule.trainer_multiple}", field="--gpus", value=gpus,
                         allowed=f"sizes with room for both (e.g. multiples of {rule.unit + rule.trainer_multiple})")
    return {**out, "placement.rollout.gpus": split[0], "placement.trainer.gpus": split[1]}


def batch_override(scenario, gpus: int) -> dict[str, Any]:
    """Weak scaling: ``algorithm.prompts_per_step`` times ``gpus`` over the GPUs the scenario
    uses (its pools and the reward model), rounded to the nearest whole prompt, at least one."""
    p = scenario.placement
    rollout, trainer = placement_pools(scenario)
    used = (rollout if MODES[p.mode].shares_gpus else rollout + trainer) + p.reward_model_gpus
    prompts = scenario.algorithm.prompts_per_step
    return {"algorithm.prompts_per_step": max(1, math.floor(prompts * gpus / used + 0.5))}


def _check(threshold: float) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise InputError("out of range", field="--threshold", value=threshold,
                         allowed="a scaling efficiency between 0 and 1, e.g. 0.7")


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ScalePoint:
    """One size: the deployment simulated there and its figures (``error``: why it could not
    run, the figures None)."""

    gpus: int
    overrides: dict[str, Any]
    report: ReportData | None = field(repr=False, default=None)
    error: str | None = None
    scaling_efficiency: float | None = None

    @property
    def useful_trajectories_per_hour(self) -> float | None:
        return self.report.useful_trajectories_per_hour if self.report else None

    @property
    def binding_link(self) -> str | None:
        return self.report.binding_link if self.report else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"gpus": self.gpus, "overrides": dict(self.overrides), "error": self.error,
                               "scaling_efficiency": self.scaling_efficiency}
        r = self.report
        if r is None:
            keys = ("mode", "staleness", "partial_rollout", "rollout_gpus", "trainer_gpus", "engine_tp", "step_time_s", "useful_trajectories_per_hour",
                    "tokens_per_s", "binding_link", "binding_critical_path_share", "binding_load")
            return {**out, **dict.fromkeys(keys), **point_figures(None), **learning_figures(None)}
        binding = r.binding
        plan, algorithm = r.plan, r.scenario["algorithm"]
        return {**out, "mode": plan["mode"], "staleness": algorithm["staleness"],
                "partial_rollout": algorithm["partial_rollout"], "rollout_gpus": plan["rollout_gpus"],
                "trainer_gpus": plan["trainer_gpus"], "engine_tp": plan["rollout_tp"],
                "step_time_s": r.step_time_s,
                "useful_trajectories_per_hour": r.useful_trajectories_per_hour,
                "tokens_per_s": r.throughput.tokens_per_s,
                "binding_link": binding.link if binding else None,
                "binding_critical_path_share": binding.critical_path_share if binding else None,
                "binding_load": binding.load if binding else None, **point_figures(r), **learning_figures(r)}


@dataclass(frozen=True)
class ScaleResult(Views):
    """The scaling curve: one point per size, ascending; the sizes where the binding link
    changes; and the first size below the efficiency threshold."""

    scenario_name: str
    replan: bool
    threshold: float
    points: list[ScalePoint]
    scale_batch: bool = False
    gpu_hour_price: float | None = None

    @property
    def binding_changes(self) -> list[dict[str, Any]]:
        """Each size whose binding link differs from the previous size's that ran."""
        out, prev = [], None
        for p in self.points:
            if p.report is None:
                continue
            if prev is not None and p.binding_link != prev.binding_link:
                out.append({"gpus": p.gpus, "from_gpus": prev.gpus, "from": prev.binding_link, "to": p.binding_link})
            prev = p
        return out

    @property
    def failures_bind_at(self) -> int | None:
        """The first size where failures take 5% of the wall time (:mod:`twin.studies.goodput`)."""
        return failures_bind_at(p.to_dict() for p in self.points)

    @staticmethod
    def _to_target(d: dict) -> str:
        """With --scale-batch: rollouts per step, steps to the target and the hours to it with the
        learning rate retuned for each batch and held at the scenario's (docs/time-to-target.md)."""
        steps = f"{d['steps_to_target']:7,.0f}" if d["steps_to_target"] is not None else f"{'-':>7s}"
        return (f"{d['rollouts_per_step']:7,d} {steps} {hours(d['time_to_target_retuned_s'])} "
                f"{hours(d['time_to_target_not_retuned_s'], 10)}  ")

    @property
    def stops_paying_at(self) -> int | None:
        """The first size whose scaling efficiency is below the threshold (None: none is)."""
        for p in self.points:
            if p.scaling_efficiency is not None and p.scaling_efficiency < self.threshold:
                return p.gpus
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario_name, "replan": self.replan, "scale_batch": self.scale_batch,
                "threshold": self.threshold,
                "points": [p.to_dict() for p in self.points], "binding_changes": self.binding_changes,
                "stops_paying_at": self.stops_paying_at, "failures_bind_at": self.failures_bind_at,
                "trust": next((p.report.trust for p in self.points if p.report is not None), []),
                **({"gpu_hour_price": self.gpu_hour_price, "costs": self.costs} if self.gpu_hour_price else {})}

    @property
    def costs(self) -> list[dict[str, Any] | None]:
        """Each size's money at ``gpu_hour_price`` (:func:`twin.analysis.pricing.costs`; None:
        no price, or the size did not run)."""
        if not self.gpu_hour_price:
            return [None] * len(self.points)
        return [costs(p.report, self.gpu_hour_price) if p.report is not None else None for p in self.points]

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): the same for the same inputs."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_html(self, *, whole: bool = True) -> str:
        """The curve as one self-contained HTML page (``twin scale --html``; the ``html`` extra)."""
        return scale_html(self, whole=whole)

    def to_frame(self):
        """One row per size (the JSON's ``points``): a pandas DataFrame."""
        return frame(self.to_dict()["points"])

    def render(self) -> str:
        """The table and the two findings, as the command line prints them."""
        how = "the planner's best at each size" if self.replan else "its placement scaled proportionally"
        how += ", the batch grown with the GPUs" if self.scale_batch else ", the batch fixed"
        lines = [f"Scaling {self.scenario_name}: {how}; efficiency = useful trajectories/h per GPU "
                 "against the smallest size that runs; × goodput: useful trajectories/h over the wall time "
                 "failures and stragglers leave",
                 f"{'GPUs':>6s}  {'mode':15s} {'rollout':>7s} {'trainer':>7s} {'tp':>3s} {'stale':>5s} {'step (s)':>9s} "
                 f"{'useful/h':>11s} {'per GPU':>8s} {'effic.':>7s} {'goodput':>7s} {'× goodput':>11s}  "
                 + (f"{'N/step':>7s} {'steps':>7s} {'retuned h':>9s} {'fixed-lr h':>10s}  " if self.scale_batch else "")
                 + (f"{'$/1k useful':>11s} {'$/run':>9s}  " if self.gpu_hour_price else "")
                 + "binding link (share of the step, load)"]
        for p, cost in zip(self.points, self.costs):
            d = p.to_dict()
            if p.report is None:
                lines.append(f"{p.gpus:6d}  cannot run: {p.error}")
                continue
            shared = MODES[d["mode"]].shares_gpus
            load = (f" ({d['binding_critical_path_share'] * 100:.0f}%"
                    + (f", load {d['binding_load'] * 100:.0f}%)" if d["binding_load"] is not None else ")"))
            mode = d["mode"] + ("+partial" if d["partial_rollout"] else "")
            lines.append(f"{p.gpus:6d}  {mode:15s} {d['rollout_gpus']:7d} "
                         f"{('shared' if shared else str(d['trainer_gpus'])):>7s} {d['engine_tp']:3d} {d['staleness']:5g} "
                         f"{d['step_time_s']:9.1f} {d['useful_trajectories_per_hour']:11,.0f} "
                         f"{d['useful_trajectories_per_hour'] / p.gpus:8,.0f} {d['scaling_efficiency']:7.2f} "
                         + (f"{d['goodput']:7.3f} {d['goodput_useful_trajectories_per_hour']:11,.0f}  "
                            if d["goodput"] is not None else f"{'-':>7s} {'-':>11s}  ")
                         + (self._to_target(d) if self.scale_batch else "")
                         + (f"{money(cost['per_1000_useful_trajectories']):>11s} {money(cost['per_run']):>9s}  "
                            if cost else "")
                         + f"{d['binding_link']}{load}")
        changes = self.binding_changes
        if changes:
            for c in changes:
                lines.append(f"  the binding link changes between {c['from_gpus']} and {c['gpus']} GPUs: "
                             f"{c['from']} -> {c['to']}")
        elif any(p.report for p in self.points):
            lines.append(f"  the binding link stays {next(p.binding_link for p in self.points if p.report)} "
                         "at every size")
        stop = self.stops_paying_at
        if stop is not None:
            lines.append(f"  an added GPU stops paying at {stop} GPUs: scaling efficiency below "
                         f"{self.threshold:g} (--threshold)")
        else:
            lines.append(f"  scaling efficiency stays at or above {self.threshold:g} (--threshold) at every size")
        if any(p.report for p in self.points):
            lines.append(bind_line(self.failures_bind_at))
            first = next(p.report for p in self.points if p.report)
            lines += [f"  how far to trust this: {t['text']}" for t in first.trust[:1]]
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the curve
def scale(scenario=None, overrides: Mapping[str, object] | Sequence[str] | None = None, *,
          gpus: str | Iterable[int], replan: bool = False, scale_batch: bool = False,
          threshold: float = DEFAULT_THRESHOLD,
          max_staleness: int = 1, workers: int | None = None, executor: str | executors.Executor = "local",
          ray_address: str | None = None, progress=None, gpu_hour_price: float | None = None) -> ScaleResult:
    """The scaling curve of ``scenario`` over the sizes ``gpus`` ("16,32,64" or integers).

    Without ``replan`` each size runs the scenario's placement scaled proportionally
    (:func:`scaled_overrides`); with it, the best of :func:`twin.studies.planner.plan_budget` at that
    size (``max_staleness`` bounds its search). ``scale_batch``: weak scaling, the batch
    (``algorithm.prompts_per_step``) grown with the GPUs (:func:`batch_override`); without it
    the batch stays the scenario's (strong scaling). A size that cannot run (memory, a split that
    does not fit) is a point with its ``error``, not a failure. ``gpu_hour_price``: also each
    size's money (per step, per 1,000 useful trajectories, per run). Raises :class:`InputError` on
    bad input, :class:`twin.studies.executors.Interrupted` on Ctrl-C (with the points so far).
    """
    sizes = parse_gpus(gpus)
    _check(threshold)
    arguments.source(scenario)
    arguments.flag(replan, "--replan")
    arguments.flag(scale_batch, "--scale-batch")
    arguments.integer(max_staleness, "--max-staleness", 0)
    if workers is not None:
        arguments.integer(workers, "--workers", 1)
    arguments.optional_name(ray_address, "--ray-address", "HOST:PORT, or None")
    overrides = arguments.overrides(overrides)
    if gpu_hour_price is not None:
        check_price(gpu_hour_price)
    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_overrides(list(overrides))
    overrides = dict(overrides or {})
    base_scenario = runner.load(scenario, overrides)
    base = pin_lr_batch(base_scenario.model_dump(mode="json"))  # without retuning: the scenario's lr
    ex = executors.make(executor, workers=workers, ray_address=ray_address)
    points: list[ScalePoint] = []
    try:
        if replan:
            points = _replanned(scenario, overrides, base_scenario if scale_batch else None, sizes,
                                max_staleness, ex, progress, points)
        else:
            jobs, slots = [], []
            for n in sizes:
                try:
                    o = {**scaled_overrides(base_scenario, n),
                         **(batch_override(base_scenario, n) if scale_batch else {})}
                except InputError as exc:
                    points.append(ScalePoint(n, {}, None, exc.message))
                    continue
                points.append(ScalePoint(n, o))
                jobs.append(settling(apply_overrides(base, o)))  # a rate: stop at steady state
                slots.append(len(points) - 1)
            tick = (lambda done, total: progress(done, total, "simulating each size")) if progress else None

            def finished(j, result):
                i = slots[j]
                p = points[i]
                points[i] = (ScalePoint(p.gpus, p.overrides, None, result.message) if isinstance(result, InputError)
                             else ScalePoint(p.gpus, p.overrides, result))

            if jobs:
                ex.map(jobs, tick, finished)
    except KeyboardInterrupt:
        done = [p for p in points if p.report is not None]
        best = ", ".join(f"{p.gpus} GPUs: {p.useful_trajectories_per_hour:,.0f} useful/h" for p in done)
        raise executors.Interrupted(best or None) from None
    finally:
        ex.close()
    return ScaleResult(base_scenario.name, replan, float(threshold), _efficiencies(points), scale_batch,
                       gpu_hour_price)


def _replanned(scenario, overrides, batch_of, sizes, max_staleness, ex, progress, points) -> list[ScalePoint]:
    for n in sizes:
        batch = batch_override(batch_of, n) if batch_of is not None else {}
        try:
            result = plan_budget(scenario, {**overrides, **batch}, gpus=n, max_staleness=max_staleness, top=1, executor=ex,
                                 progress=(lambda d, t, w, n=n: progress(d, t, f"{n} GPUs: {w}")) if progress else None)
        except InputError as exc:
            if exc.field != "--gpus":  # bad input (a --set the planner refuses): not a size's misfit
                raise
            points.append(ScalePoint(n, {}, None, exc.message))
            continue
        best = result.best
        points.append(ScalePoint(n, {**dict(best.candidate.overrides), **batch}, best.report))
    return points


def _efficiencies(points: list[ScalePoint]) -> list[ScalePoint]:
    """Each point's throughput per GPU over the smallest running size's (which is 1.0)."""
    ref = next((p for p in points if p.report is not None), None)
    if ref is None:
        return points
    per_gpu = ref.useful_trajectories_per_hour / ref.gpus
    out = []
    for p in points:
        eff = None
        if p.report is not None and per_gpu > 0:
            eff = float(f"{p.useful_trajectories_per_hour / p.gpus / per_gpu:.4g}")
        out.append(ScalePoint(p.gpus, p.overrides, p.report, p.error, eff))
    return out
