"""The capacity planner: the best way to spend a budget of GPUs on one RL run.

Given a scenario and a number of GPUs, :func:`plan_budget` lists the deployments a team would
consider for that budget — the deployment mode (colocated; disaggregated, synchronous or k
steps off; async with staleness 1..K, partial rollout off or on), the rollout:trainer split in
whole engines (whole nodes where the budget spans two or more), the engines' tensor parallelism
— times any axes the user adds (``vary``), prunes the ones that cannot run (validation, memory,
an engine wider than a node or than the model's heads allow) without simulating them, and
simulates the rest on an executor (:mod:`twin.studies.executors`: the local process pool, or Ray).

Up to :data:`EXHAUSTIVE_LIMIT` feasible candidates are all simulated at the scenario's
``run.steps``. Beyond it the search is successive halving: every candidate is simulated with
few steps, the best quarter again with twice as many, and so on up to ``run.steps``; the final
ranking holds only candidates simulated at full steps. The top candidates are then re-simulated
with two other seeds, and the spread of the objective across the three seeds is their
``noise``. Same inputs → same result: candidates are generated in a fixed order and ties are
broken by that order.

docs/planner.md describes it for users.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from twin import runner
from twin.analysis.frames import frame
from twin.analysis.html import Views, plan_html
from twin.analysis.pricing import check_price, cost_per_1000_useful, run_time_s
from twin.analysis.report import LinkRow, ReportData
from twin.config import arguments, limits
from twin.config.modes import MODES
from twin.config.overrides import apply_overrides, parse_overrides, split_top_level
from twin.config.plan import resolve
from twin.cost.memory import memory_problem, resident_trainer_bytes, rollout_memory
from twin.errors import InputError, choices
from twin.sim.settle import settling
from twin.studies import executors, noise
from twin.studies.goodput import WITHOUT_FAULTS
from twin.studies.placement import PoolSplit, engines_on_their_own_gpus

EXHAUSTIVE_LIMIT = 256     # feasible candidates simulated at full steps without screening
FIRST_RUNG_STEPS = 3       # successive halving: steps of the first (cheapest) rung
KEEP_FRACTION = 4          # each rung keeps the best quarter ...
MIN_SURVIVORS = 8          # ... but never fewer than this (nor fewer than --top)
MAX_SPLITS = 64            # rollout:trainer splits tried per engine size (evenly spaced beyond)
# The whole space, before pruning. What bounds it is the parent's memory and serial work: every
# candidate's overrides (~1.5 kB) and, per rung, one score each (the reports of the top only,
# the scenarios built as workers take them); generating 100,000 takes 1.5 s, pruning them
# ~80 CPU-seconds spread over the executor (benchmarks/plan.py --parent-cost 100000).
MAX_CANDIDATES = 262_144
MAX_STALENESS = 8          # --max-staleness
ENGINE_TPS = (1, 2, 4, 8)
NOISE_SEEDS = 2            # other seeds the top candidates are re-simulated with (twin.studies.noise)

OBJECTIVES = {
    "useful_trajectories_per_hour": "useful trajectories/h (higher is better)",
    "tokens_per_s": "tokens/s (higher is better)",
    "cost": "GPU-hours (or, with a price, money) per 1,000 useful trajectories (lower is better)",
    "run_time": "hours for the scenario's run.steps, its drift included (lower is better)",
    "goodput_useful_trajectories_per_hour": "useful trajectories/h × goodput: over the wall time failures and "
                                            "stragglers leave (higher is better; docs/goodput.md)",
    "goodput_tokens_per_s": "tokens/s × goodput (higher is better)",
    "time_to_target": "hours to the learning section's target reward: steps to it (the noise-scale law, "
                      "docs/time-to-target.md) × seconds per step (lower is better)",
}

# The fields the search sets itself: a --set or --vary of one would be overwritten.
SEARCHED = ("cluster.nodes", "placement.mode", "placement.rollout.gpus", "placement.trainer.gpus",
            "placement.rollout.tp", "algorithm.staleness", "algorithm.partial_rollout")

# A placement any scenario can be validated with, to learn its sizes before the search.
_PROBE = {"placement.mode": "colocated", "placement.rollout.gpus": None, "placement.trainer.gpus": None,
          "placement.rollout.tp": 1, "algorithm.staleness": 0, "algorithm.partial_rollout": False}


PRUNE_REASONS = {
    "tp_beyond_node": "engine tp wider than a node and not whole nodes",
    "tp_heads": "engine tp does not divide the model's attention heads",
    "invalid": "invalid scenario",
    "memory": "does not fit in GPU memory",
    "failed": "the simulation refused it",
}

Progress = Callable[[int, int, str], None]  # (done, total, what)


# ----------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    """One deployment to try: the scenario overrides that make it (searched fields first, then
    the ``vary`` axes). ``index`` is its place in the generation order (the tie-break)."""

    index: int
    overrides: dict[str, Any]
    context: "_Context" = field(repr=False, compare=False)

    @property
    def mode(self) -> str:
        return self.overrides["placement.mode"]

    @property
    def tp(self) -> int:
        return self.overrides["placement.rollout.tp"]

    @property
    def staleness(self) -> int:
        return self.overrides["algorithm.staleness"]

    @property
    def partial_rollout(self) -> bool:
        return self.overrides["algorithm.partial_rollout"]

    @property
    def label(self) -> str:
        """The mode as the table says it: 'async+partial', 'disaggregated'."""
        return self.mode + ("+partial" if self.partial_rollout else "")


def _modes(max_staleness: int) -> list[tuple[str, int, bool]]:
    """(mode, staleness, partial rollout) in the order they are tried."""
    out = [("colocated", 0, False)]
    out += [("disaggregated", s, False) for s in range(max_staleness + 1)]
    out += [("async", s, p) for s in range(1, max_staleness + 1) for p in (False, True)]
    return out


@dataclass(frozen=True)
class _Context:
    """What candidate generation needs to know of one scenario (one combination of axes)."""

    gpus_per_node: int
    num_heads: int
    num_kv_heads: int
    mla: bool
    reward_model_gpus: int
    trainer_multiple: int  # the trainer pool's GPUs are a multiple of this (PoolSplit)
    trainer_given: frozenset[str] = frozenset()  # trainer fields the scenario (or its profile) sets


def _context(scenario) -> _Context:
    m = scenario.model
    return _Context(scenario.cluster.gpus_per_node, m.num_heads, m.num_kv_heads, m.mla is not None,
                    scenario.placement.reward_model_gpus, PoolSplit.of(scenario, 1).trainer_multiple,
                    frozenset(scenario.placement.trainer.model_fields_set))


def _heads_allow(ctx: _Context, tp: int) -> bool:
    """vLLM's rule: tp divides the attention heads; the KV heads split over tp or are
    replicated (tp a multiple of them); MLA's latent KV is replicated."""
    if ctx.num_heads % tp:
        return False
    return ctx.mla or ctx.num_kv_heads % tp == 0 or tp % ctx.num_kv_heads == 0


def _splits(ctx: _Context, free: int, tp: int) -> list[int]:
    """Rollout GPUs of separate pools out of ``free`` (:class:`~twin.studies.placement.PoolSplit`:
    whole engines of ``tp``, in whole nodes where the budget spans two nodes or more, a trainer
    pool its layout accepts); at most :data:`MAX_SPLITS`, evenly spaced."""
    sizes = PoolSplit(free, tp, ctx.gpus_per_node, ctx.trainer_multiple).rollout_sizes()
    if len(sizes) > MAX_SPLITS:
        sizes = [sizes[i] for i in sorted({round(k * (len(sizes) - 1) / (MAX_SPLITS - 1)) for k in range(MAX_SPLITS)})]
    return sizes


# ----------------------------------------------------------------------------- inputs
def parse_vary(items: Iterable[str] | Mapping[str, Sequence[Any]] | None) -> dict[str, list[Any]]:
    """``["path=v1,v2", ...]`` (values read as YAML, as ``--set`` reads them; commas inside
    brackets or quotes do not split) or a mapping of paths to lists → path → values."""
    if not items:
        return {}
    out: dict[str, list[Any]] = {}
    if isinstance(items, Mapping):
        for path, values in items.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
                raise InputError("a --vary axis is a non-empty list of values", field=f"--vary {path}",
                                 value=values, allowed="e.g. {'algorithm.prompts_per_step': [256, 512]}")
            out[str(path)] = list(values)
        return out
    for item in items:
        path, sep, raw = item.partition("=")
        path = path.strip()
        if not sep or not path or not raw.strip():
            raise InputError("a --vary axis must look like dotted.path=v1,v2,...", field="--vary", value=item,
                             allowed="e.g. --vary algorithm.prompts_per_step=256,512")
        if path in out:
            raise InputError("the same field varied twice", field="--vary", value=item,
                             allowed="one --vary per field, all its values in it")
        out[path] = [parse_overrides([f"{path}={v}"])[path] for v in split_top_level(raw)]
    return out


def _owned(path: str, searched: str) -> bool:
    """Whether setting ``path`` would set (or replace) the searched field ``searched``."""
    return searched == path or searched.startswith(path + ".")


def _check_not_searched(paths: Iterable[str], option: str) -> None:
    for path in paths:
        for searched in SEARCHED + ("run.steps",) * (option == "--vary"):
            if _owned(path, searched):
                allowed = ("the fields the search does not set" if searched != "run.steps"
                           else "--set run.steps=N: every candidate is simulated with it")
                raise InputError(f"the planner sets {searched} itself", field=f"{option} {path}",
                                 allowed=allowed)


def _check_arguments(gpus, max_staleness, objective, gpu_hour_price, top, workers) -> None:
    def count(name, value, low, high=None):
        if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
            raise InputError("out of range", field=name, value=value,
                             allowed=f"an integer {low}..{high}" if high is not None else f"an integer >= {low}")

    arguments.integer(gpus, "--gpus", 1, limits.MAX_GPUS)  # before any candidate is made
    count("--max-staleness", max_staleness, 0, MAX_STALENESS)
    count("--top", top, 1)
    if workers is not None:
        count("--workers", workers, 1)
    if objective not in OBJECTIVES:
        raise InputError("unknown objective", field="--objective", value=objective,
                         allowed=choices(OBJECTIVES, str(objective)))
    if gpu_hour_price is not None:
        if objective != "cost":
            raise InputError("a GPU-hour price only prices the cost objective", field="--gpu-hour-price",
                             value=gpu_hour_price, allowed="--objective cost with it, or no price")
        check_price(gpu_hour_price)


def _checked(scenario, overrides, vary, resume, ray_address, progress) -> tuple:
    """The API's other arguments, checked (a string is one item, never its letters)."""
    arguments.source(scenario)
    if vary is not None and not isinstance(vary, Mapping):
        vary = arguments.items(vary, "--vary", (str,), "'path=v1,v2' strings, or a mapping of paths to lists of values")
    arguments.optional_name(ray_address, "--ray-address", "HOST:PORT, or None")
    if progress is not None and not callable(progress):
        raise InputError("not a function", field="progress", value=progress, allowed="a function, or None")
    overrides = arguments.overrides(overrides)
    if overrides is not None and not isinstance(overrides, Mapping):
        overrides = parse_overrides(overrides)
    return dict(overrides or {}), vary, arguments.optional_path(resume, "--resume")


def _base(source, overrides) -> tuple[Any, dict]:
    """The scenario with the user's overrides, validated, and its data (self-contained: every
    profile and the model inline, as the verdict re-simulates it). The scenario as given may not
    fit its own cluster after the overrides; then it is tried as one colocated pool, then as
    two halves, since the search replaces its placement anyway."""
    probes = [{}, _PROBE, {**_PROBE, "placement.mode": "disaggregated"}]
    first: InputError | None = None
    scenario = None
    for probe in probes:
        try:
            scenario = runner.load(source, {**overrides, **probe})
            break
        except InputError as exc:
            first = first or exc
    if scenario is None:
        raise first
    return scenario, scenario.model_dump(mode="json")


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Ranked:
    """One candidate simulated at full steps, with its rank."""

    rank: int
    candidate: Candidate
    report: ReportData = field(repr=False)
    score: float
    objective: str
    cost: float | None = None
    noise: float | None = None

    @property
    def plan(self) -> dict:
        return self.report.plan

    @property
    def binding(self) -> LinkRow | None:
        return self.report.binding

    @property
    def placement_words(self) -> str:
        """'async, 32 rollout / 32 trainer GPUs, engine tp 4, staleness 1'."""
        c, p = self.candidate, self.plan
        gpus = (f"{p['rollout_gpus']} shared GPUs" if MODES[p["mode"]].shares_gpus
                else f"{p['rollout_gpus']} rollout / {p['trainer_gpus']} trainer GPUs")
        return f"{c.label}, {gpus}, engine tp {c.tp}, staleness {c.staleness}"

    def to_dict(self) -> dict[str, Any]:
        plan, binding = self.plan, self.binding
        out = {
            "rank": self.rank,
            "overrides": dict(self.candidate.overrides),
            "mode": plan["mode"],
            "rollout_gpus": plan["rollout_gpus"],
            "trainer_gpus": plan["trainer_gpus"],
            "engine_tp": plan["rollout_tp"],
            "staleness": self.candidate.staleness,
            "partial_rollout": self.candidate.partial_rollout,
            "step_time_s": self.report.step_time_s,
            "useful_trajectories_per_hour": self.report.throughput.useful_trajectories_per_hour,
            "tokens_per_s": self.report.throughput.tokens_per_s,
            "run_time_s": run_time_s(self.report),
            "goodput": self.report.goodput,
            "time_to_target_s": self.report.time_to_target_s,
            "steps_to_target": (self.report.learning or {}).get("steps_to_target"),
            "binding_link": binding.link if binding else None,
            "binding_load": binding.load if binding else None,
            "binding_critical_path_share": binding.critical_path_share if binding else None,
            "noise": self.noise,
        }
        if self.objective == "cost":
            out["cost_per_1000_useful"] = self.cost
        return out


@dataclass(frozen=True)
class PlanResult(Views):
    """The planner's answer: the ranked candidates (the top ones), the best as a scenario, and
    how the search went."""

    scenario_name: str
    budget_gpus: int
    nodes: int
    gpus_per_node: int
    gpu: str
    objective: str
    gpu_hour_price: float | None
    max_staleness: int
    vary: dict[str, list[Any]]
    candidates_total: int
    pruned_by_reason: dict[str, int]
    pruned_examples: dict[str, str]
    evaluated: int
    simulations: int
    search: dict[str, Any]
    ranked: list[Ranked]
    best_scenario: dict = field(repr=False)

    @property
    def pruned(self) -> int:
        return sum(self.pruned_by_reason.values())

    @property
    def best(self) -> Ranked:
        return self.ranked[0]

    def to_dict(self) -> dict[str, Any]:
        rows = [r.to_dict() for r in self.ranked]
        return {
            "scenario": self.scenario_name,
            "budget_gpus": self.budget_gpus,
            "cluster": {"nodes": self.nodes, "gpus_per_node": self.gpus_per_node, "gpu": self.gpu},
            "objective": self.objective,
            "gpu_hour_price": self.gpu_hour_price,
            "max_staleness": self.max_staleness,
            "vary": self.vary,
            "candidates_total": self.candidates_total,
            "pruned": self.pruned,
            "pruned_by_reason": dict(self.pruned_by_reason),
            "evaluated": self.evaluated,
            "simulations": self.simulations,
            "search": self.search,
            "candidates": rows,
            "best": rows[0],
            "trust": self.best.report.trust,  # the best's scenario against the validation sources
        }

    def to_json(self) -> str:
        """Canonical JSON (sorted keys): the same for the same inputs."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_html(self, *, whole: bool = True) -> str:
        """The ranking as one self-contained HTML page (``twin plan --html``; the ``html`` extra)."""
        return plan_html(self, whole=whole)

    def to_frame(self):
        """One row per ranked candidate (the JSON's ``candidates``): a pandas DataFrame."""
        return frame(self.to_dict()["candidates"])

    def __repr__(self) -> str:
        best = self.best
        return (f"PlanResult({self.scenario_name} on {self.budget_gpus} GPUs by {self.objective}: "
                f"{self.evaluated} simulated, best {best.placement_words}, "
                f"{best.report.useful_trajectories_per_hour:,.0f} useful trajectories/h)")

    def best_yaml(self) -> str:
        """The best candidate as a scenario file: the whole scenario, self-contained (every
        profile inline), under a header naming what the planner chose."""
        import yaml

        best = self.best
        head = [f"# twin plan: the best of {self.evaluated} candidates for {self.budget_gpus} GPUs "
                f"by {self.objective} (rank 1 of the table)",
                f"# {best.placement_words}: "
                f"step {best.report.step_time_s:.1f} s, "
                f"{best.report.useful_trajectories_per_hour:,.0f} useful trajectories/h",
                "# set by the planner:"]
        head += [f"#   {k}={json.dumps(v)}" for k, v in best.candidate.overrides.items()]
        head += [f"#   run.steady_tolerance={self.best_scenario['run']['steady_tolerance']} (as every candidate "
                 "was simulated: stop once the step time has settled; remove it to simulate every step)"]
        data = dict(self.best_scenario)  # the description no longer says how its GPUs are placed
        data["description"] = (f"twin plan's best for {self.budget_gpus} GPUs: {best.placement_words}. "
                               f"Planned from: {data.get('description') or data.get('name')}")
        return "\n".join(head) + "\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)

    def _by(self) -> str:
        if self.objective == "cost":
            return (f"cost per 1,000 useful trajectories at {self.gpu_hour_price:g} per GPU-hour"
                    if self.gpu_hour_price else "GPU-hours per 1,000 useful trajectories")
        return OBJECTIVES[self.objective].split(" (")[0]

    def render(self, top: int | None = None) -> str:
        """The ranked table as text."""
        rows = self.ranked[:top] if top else self.ranked
        pruned = ", ".join(f"{n} {PRUNE_REASONS[k]}" for k, n in self.pruned_by_reason.items() if n)
        lines = [f"Plan for {self.scenario_name} on {self.budget_gpus} GPUs ({self.nodes} node"
                 f"{'s' if self.nodes != 1 else ''} of {self.gpus_per_node} × {self.gpu}), by {self._by()}",
                 f"  {self.candidates_total} candidates: {self.pruned} pruned before simulating"
                 + (f" ({pruned})" if pruned else "") + f", {self.evaluated} simulated "
                 f"({self.search['strategy']}" + ("".join(
                     f"{', ' if i else ': '}{r['candidates']} at {r['steps']} steps"
                     for i, r in enumerate(self.search["rungs"])) if len(self.search["rungs"]) > 1 else "") + ")",
                 f"  staleness searched up to {self.max_staleness} (--max-staleness {self.max_staleness})"
                 + (": the best is at that cap, so its verdict may gain from more; raise --max-staleness to "
                    "search further" if self.ranked and self.best.candidate.mode != "colocated"
                    and self.best.candidate.staleness >= self.max_staleness and self.max_staleness < MAX_STALENESS
                    else "")]
        vary = list(self.vary)
        cost, timed = self.objective == "cost", self.objective == "run_time"
        weighted = self.objective.startswith("goodput_")
        to_target = self.objective == "time_to_target"
        unit = "$" if self.gpu_hour_price else "GPU-h"
        header = (f"{'rank':>4s}  {'mode':15s} {'rollout':>7s} {'trainer':>7s} {'tp':>3s} {'stale':>5s} "
                  f"{'step (s)':>9s} {'useful/h':>11s} {'tokens/s':>10s}"
                  + (f" {unit + '/1k':>9s}" if cost else "") + (f" {'run (h)':>8s}" if timed else "")
                  + (f" {'goodput':>7s} {'× goodput':>11s}" if weighted else "")
                  + (f" {'steps':>7s} {'to target (h)':>13s}" if to_target else "")
                  + f"  {'binding link (critical-path share, load)':42s} {'noise':>6s}")
        header += "".join(f"  {p}" for p in vary)
        lines.append(header)
        for r in rows:
            d = r.to_dict()
            link = _binding_words(d)
            shared = MODES[d["mode"]].shares_gpus
            line = (f"{d['rank']:4d}  {r.candidate.label:15s} {d['rollout_gpus']:7d} "
                    f"{('shared' if shared else str(d['trainer_gpus'])):>7s} {d['engine_tp']:3d} "
                    f"{d['staleness']:5g} {d['step_time_s']:9.1f} {d['useful_trajectories_per_hour']:11,.0f} "
                    f"{d['tokens_per_s']:10,.0f}")
            if cost:
                line += f" {d['cost_per_1000_useful']:9.3g}" if d["cost_per_1000_useful"] is not None else f" {'-':>9s}"
            if timed:
                line += f" {d['run_time_s'] / 3600:8.2f}"
            if weighted:
                line += f" {d['goodput']:7.3f} {r.score:11,.0f}"
            if to_target:
                line += (f" {d['steps_to_target']:7,.0f} {d['time_to_target_s'] / 3600:13.2f}"
                         if d["time_to_target_s"] is not None else f" {'-':>7s} {'-':>13s}")
            noise = f"{d['noise'] * 100:.1f}%" if d["noise"] is not None else "-"
            line += f"  {link:42s} {noise:>6s}"
            line += "".join(f"  {json.dumps(r.candidate.overrides[p])}" for p in vary)
            lines.append(line)
        if len(self.ranked) > 1 and self.best.noise is not None:
            first, second = self.ranked[0], self.ranked[1]
            gap = abs(first.score - second.score) / max(abs(first.score), 1e-12)
            if gap < max(first.noise, second.noise or 0.0):
                lines.append(f"  note: #1 and #2 differ by {gap * 100:.1f}%, within their spread across seeds: "
                             "either will do (simulate more steps to separate them)")
        lines += [f"  how far to trust this: {t['text']}" for t in self.best.report.trust[:1]]
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the search
def _binding_words(d: dict[str, Any]) -> str:
    """'rollout (55%, load 12%)': the binding link, its share of the critical path and its load,
    in the glossary's words."""
    if d["binding_link"] is None:
        return "none"
    load = f", load {d['binding_load'] * 100:.0f}%" if d["binding_load"] is not None else ""
    return f"{d['binding_link']} ({d['binding_critical_path_share'] * 100:.0f}%{load})"


def _metric(report: ReportData, objective: str) -> float:
    if objective.startswith("goodput_"):  # the report's faults section weighs the rate by its goodput
        return report.faults[objective.removeprefix("goodput_")]
    if objective == "tokens_per_s":
        return report.throughput.tokens_per_s
    if objective == "run_time":
        return run_time_s(report)
    if objective == "time_to_target":
        return report.time_to_target_s if report.time_to_target_s is not None else math.inf
    return report.throughput.useful_trajectories_per_hour


def _score(report: ReportData, objective: str, price: float | None) -> tuple[float, float | None]:
    """(score, cost): higher score is better; cost per 1,000 useful trajectories for "cost"."""
    if objective == "run_time":
        return -run_time_s(report), None
    if objective == "time_to_target":  # None: the step size diverges at this batch (lr not retuned)
        return -(report.time_to_target_s if report.time_to_target_s is not None else math.inf), None
    if objective != "cost":
        return _metric(report, objective), None
    cost = cost_per_1000_useful(report, price)
    return (-math.inf, None) if cost is None else (-cost, cost)


def pin_lr_batch(data: dict) -> dict:
    """The scenario (as data) with ``learning.lr_tuned_at_rollouts`` set to its own batch where
    unset: a candidate that changes the batch keeps the learning rate of the scenario's."""
    learning = data.get("learning") or {}
    if learning.get("lr_tuned_at_rollouts") is not None:
        return data
    a = data["algorithm"]
    return {**data, "learning": {**learning, "lr_tuned_at_rollouts": a["prompts_per_step"] * a["responses_per_prompt"]}}


def plan_budget(scenario=None, overrides: Mapping[str, object] | Sequence[str] | None = None, *,
                gpus: int, max_staleness: int = 1,
                vary: Mapping[str, Sequence[Any]] | Iterable[str] | None = None,
                objective: str = "useful_trajectories_per_hour", gpu_hour_price: float | None = None,
                top: int = 10, workers: int | None = None, progress: Progress | None = None,
                executor: str | executors.Executor = "local", ray_address: str | None = None,
                resume: str | None = None) -> PlanResult:
    """Search the deployments of ``scenario`` on ``gpus`` GPUs and rank them by ``objective``.

    ``overrides`` apply to the scenario first (dotted paths or ``path=value`` strings, as
    ``--set``); ``vary`` adds axes (path → values, or ``"path=v1,v2"`` strings), tried in every
    combination. ``executor``: 'local' (a process pool of ``workers``), 'ray' (Ray tasks; a
    local Ray, or the cluster at ``ray_address``) or an :class:`twin.studies.executors.Executor`.
    ``resume``: a checkpoint file, continued when it exists (it must be of this scenario) and
    written as simulations finish. Raises :class:`InputError` on bad input, or when no
    candidate fits the budget; :class:`twin.studies.executors.Interrupted` (a KeyboardInterrupt) on
    Ctrl-C, carrying the best candidate so far.
    """
    _check_arguments(gpus, max_staleness, objective, gpu_hour_price, top, workers)
    overrides, vary, resume = _checked(scenario, overrides, vary, resume, ray_address, progress)
    _check_not_searched(overrides, "--set")
    axes = parse_vary(vary)
    _check_not_searched(axes, "--vary")

    scenario_obj, base = _base(scenario, overrides)
    base = pin_lr_batch(base)

    steps = scenario_obj.run.steps
    owned = not isinstance(executor, executors.Executor)  # one handed in is closed by its owner
    ex = executors.make(executor, workers=workers, ray_address=ray_address)
    try:
        candidates, feasible, pruned, examples = _feasible_candidates(base, scenario_obj, axes, gpus, max_staleness, ex)
        journal = executors.Journal(resume, executors.scenario_hash(base), "plan") if resume else None
    except (InputError, KeyboardInterrupt):
        if owned:
            ex.close()
        raise
    session = _Session(ex, journal, progress, objective, gpu_hour_price, base, owned)
    try:
        shown, search, simulations = _search(session, feasible, steps, objective, gpu_hour_price, top,
                                             pruned, examples)
        noise = _noise(session, shown, scenario_obj.run.seed, objective)
    except KeyboardInterrupt:
        raise executors.Interrupted(session.best_so_far(), resume) from None
    finally:
        session.close()
    if not shown:
        raise _no_fit(gpus, pruned, examples)

    simulations += NOISE_SEEDS * len(shown)
    ranked = []
    for rank, (cand, report) in enumerate(shown, 1):
        score, cost = _score(report, objective, gpu_hour_price)
        ranked.append(Ranked(rank, cand, report, score, objective, cost, noise[cand.index]))
    # as it was simulated: `twin run BEST.yaml` reproduces the row (it stops at steady state too)
    best_data = _with_steps(apply_overrides(base, ranked[0].candidate.overrides))
    c = scenario_obj.cluster
    return PlanResult(
        scenario_name=scenario_obj.name, budget_gpus=gpus, nodes=ranked[0].candidate.overrides["cluster.nodes"],
        gpus_per_node=ranked[0].report.scenario["cluster"]["gpus_per_node"], gpu=c.gpu.name,
        objective=objective, gpu_hour_price=gpu_hour_price, max_staleness=max_staleness,
        vary={k: list(v) for k, v in axes.items()}, candidates_total=len(candidates),
        pruned_by_reason={k: n for k, n in pruned.items() if n}, pruned_examples=examples,
        evaluated=search.pop("evaluated"), simulations=simulations, search=search, ranked=ranked,
        best_scenario=best_data)


def _feasible_candidates(base: dict, scenario_obj, axes: dict, gpus: int, max_staleness: int,
                         ex: executors.Executor | None = None):
    """Every candidate of the search (each combination of the ``--vary`` axes, mode, engine tp,
    split), and those left after pruning (on ``ex`` in blocks when there are many): (candidates,
    feasible, pruned counts, an example of each reason). Raises InputError when there are too
    many, or none fits."""
    if math.prod(len(v) for v in axes.values()) > MAX_CANDIDATES:
        raise InputError("more combinations of --vary values than the planner searches", field="--vary",
                         value=math.prod(len(v) for v in axes.values()), allowed=f"at most {MAX_CANDIDATES:,}")
    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())] or [{}]
    candidates = _generate(base, scenario_obj, combos, gpus, max_staleness)
    if len(candidates) > MAX_CANDIDATES:
        raise InputError(f"{len(candidates):,} candidates are more than the planner searches",
                         field="--vary" if axes else "--max-staleness", value=len(candidates),
                         allowed=f"at most {MAX_CANDIDATES:,}: fewer --vary values or a lower --max-staleness")
    _check_vary(base, candidates[0] if candidates else None, axes)
    feasible, pruned, examples = _prune_on(ex, base, candidates)
    if not feasible:
        raise _no_fit(gpus, pruned, examples, len(candidates))
    return candidates, feasible, pruned, examples


def _no_fit(gpus: int, pruned: dict, examples: dict, candidates: int | None = None) -> InputError:
    reasons = "; ".join(f"{n} {PRUNE_REASONS[k]} (e.g. {examples[k]})" for k, n in pruned.items() if n)
    if candidates is not None:
        reasons = f"a budget some deployment fits in; of {candidates} candidates: {reasons}"
    return InputError(f"no candidate fits {gpus} GPU{'s' * (gpus != 1)}", field="--gpus", value=gpus,
                      allowed=reasons)


def _generate(base: dict, scenario, combos: list[dict], gpus: int, max_staleness: int) -> list[Candidate]:
    """Every candidate, in a fixed order: axes combination, mode, engine tp, split."""
    out: list[Candidate] = []
    given = frozenset(scenario.placement.trainer.model_fields_set)  # as the user's scenario sets them
    # a colocated scenario's engines, on GPUs of their own in a separate-pool candidate
    alone = engines_on_their_own_gpus(scenario.placement.mode, scenario.placement.rollout.gpu_memory_utilization)
    # On GPUs of its own the trainer's offload saves no memory at a pass's peak and costs host
    # transfers around every pass (config/warnings.py _offload): a separate-pool candidate drops it.
    alone = {**alone, **{f"placement.trainer.{flag}": False for flag in ("offload_params", "offload_optimizer")
                         if getattr(scenario.placement.trainer, flag)}}
    for combo in combos:
        try:  # the combination's own sizes (an axis may change the node or the model)
            ctx = replace(_context(runner.load(base, {**combo, **_PROBE})), trainer_given=given)
        except InputError:
            ctx = _context(scenario)  # its candidates will be pruned with their own reason
        nodes = max(1, math.ceil(gpus / ctx.gpus_per_node))
        free = gpus - ctx.reward_model_gpus
        for mode_name, staleness, partial in _modes(max_staleness):
            for tp in ENGINE_TPS:
                if mode_name == "colocated":
                    pools = [(free, free)]
                else:
                    pools = [(r, free - r) for r in _splits(ctx, free, tp)]
                for rollout, trainer in pools:
                    o = {"cluster.nodes": nodes, "placement.mode": mode_name, "placement.rollout.gpus": rollout,
                         "placement.trainer.gpus": trainer, "placement.rollout.tp": tp,
                         "algorithm.staleness": staleness, "algorithm.partial_rollout": partial,
                         **(alone if mode_name != "colocated" else {}), **combo}
                    out.append(Candidate(len(out), o, ctx))
    return out


def _check_vary(base: dict, first: Candidate | None, axes: dict[str, list]) -> None:
    """Each value of each axis, tried on the first candidate: an unknown field or a value the
    field refuses is bad input (a value that only misfits a placement is pruned later)."""
    if not axes or first is None:
        return
    fixed = {k: v for k, v in first.overrides.items() if k not in axes}
    for path, values in axes.items():
        for value in values:
            try:
                runner.load(base, {**fixed, path: value})
            except InputError as exc:
                f = exc.field or ""
                if f and (f == path or f.startswith(path + ".") or path.startswith(f + ".")):
                    raise InputError(exc.problem, field=f"--vary {path}", value=value,
                                     allowed=exc.allowed) from None


# Pruning validates each candidate's scenario and checks its memory: ~1.6 ms each, serial in
# the parent it was 161 s of a 100,000-candidate plan (benchmarks/plan.py --parent-cost). Beyond
# one block the blocks go to the executor, whose workers prune them as they simulate.
PRUNE_BLOCK = 256


def _prune_on(ex: executors.Executor | None, base: dict, candidates: list[Candidate]):
    """:func:`_prune` of ``candidates``, in blocks of PRUNE_BLOCK on ``ex`` when there are more
    than one block's: the same feasible list in the same order, the same counts and examples
    (each reason's first, in candidate order)."""
    if ex is None or len(candidates) <= PRUNE_BLOCK:
        return _prune(base, candidates)
    blocks = [(base, candidates[i:i + PRUNE_BLOCK]) for i in range(0, len(candidates), PRUNE_BLOCK)]
    feasible: list[Candidate] = []
    pruned = {k: 0 for k in PRUNE_REASONS}
    examples: dict[str, str] = {}
    for kept, counts, first in ex.map(blocks, fn=_prune_block):
        feasible += kept
        for reason, n in counts.items():
            pruned[reason] += n
        for reason, message in first.items():
            examples.setdefault(reason, message)
    return feasible, pruned, examples


def _prune_block(block: tuple[dict, list[Candidate]]):
    """One block of :func:`_prune_on` (a module-level function: any worker process imports it)."""
    return _prune(*block)


def _prune(base: dict, candidates: list[Candidate]) -> tuple[list[Candidate], dict[str, int], dict[str, str]]:
    """The candidates that validate and fit in memory (checked without simulating); the
    others counted by reason, with the first message of each."""
    pruned = {k: 0 for k in PRUNE_REASONS}
    examples: dict[str, str] = {}
    feasible = []

    def drop(reason: str, message: str) -> None:
        pruned[reason] += 1
        examples.setdefault(reason, message)

    for cand in candidates:
        ctx = cand.context
        if cand.tp > ctx.gpus_per_node and cand.tp % ctx.gpus_per_node:  # whole nodes, as the scenario allows
            drop("tp_beyond_node", f"tp {cand.tp} on nodes of {ctx.gpus_per_node} GPUs")
            continue
        if not _heads_allow(ctx, cand.tp):
            drop("tp_heads", f"tp {cand.tp} with {ctx.num_heads} heads and {ctx.num_kv_heads} KV heads")
            continue
        try:
            scenario = runner.load(apply_overrides(base, cand.overrides))
        except InputError as exc:
            drop("invalid", exc.message)
            continue
        plan = resolve(scenario)
        problem = memory_problem(plan)
        if problem is not None and problem.field == "placement.rollout" and plan.mode.shares_gpus:
            fixed = _engine_remedy(base, cand, plan)
            if fixed is not None:
                cand, plan = fixed
                problem = memory_problem(plan)
        if problem is not None and problem.field and problem.field.startswith("placement.trainer"):
            fixed = _trainer_remedy(base, cand, plan)
            if fixed is not None:
                cand, problem = fixed, None
        if problem is not None:
            drop("memory", f"{cand.label} tp {cand.tp}: {problem.problem}")
            continue
        feasible.append(cand)
    return feasible, pruned, examples


def _engine_remedy(base: dict, cand: Candidate, plan) -> tuple[Candidate, Any] | None:
    """A colocated candidate whose engine budget does not fit beside the trainer state left on
    its GPUs (vLLM refuses to start), given the largest memory fraction that does, in
    hundredths — what a team sets when it colocates a run its scenario describes on separate
    pools (0.9 there). A fraction the user varies is left as given. The candidate and its plan,
    or None when no fraction leaves the engine its budget."""
    path = "placement.rollout.gpu_memory_utilization"
    if path in cand.overrides:
        return None
    cap = plan.gpu.memory.capacity_bytes
    fits = math.floor((cap - resident_trainer_bytes(plan)) / cap * 100) / 100
    if not 0 < fits < plan.placement.rollout.gpu_memory_utilization:
        return None
    overrides = {**cand.overrides, path: fits}
    try:
        trial = resolve(runner.load(apply_overrides(base, overrides)))
    except InputError:
        return None
    return (replace(cand, overrides=overrides), trial) if rollout_memory(trial).fits else None


def _trainer_remedy(base: dict, cand: Candidate, plan) -> Candidate | None:
    """A trainer that does not fit, made to fit the way a team would try, cheapest first: shard
    its state fully (ZeRO-3), recompute activations, then Megatron tensor parallelism 2, 4, 8
    inside a node or NVLink domain (dividing the heads and the trainer's GPUs). Fields the scenario, its
    framework profile or --vary sets are left as given. The first that fits joins the candidate's overrides (the JSON and
    the best YAML show it); None when none does."""
    def given(path: str) -> bool:
        return path in cand.overrides or path.rpartition(".")[2] in cand.context.trainer_given

    t, arch = plan.placement.trainer, plan.model
    steps: list[dict[str, Any]] = []
    if not given("placement.trainer.zero_stage") and t.zero_stage < 3:
        steps.append({"placement.trainer.zero_stage": 3})
    if not given("placement.trainer.recompute") and not t.recompute:
        steps.append({"placement.trainer.recompute": True})
    if not given("placement.trainer.tp"):
        for tp in (2, 4, 8):
            if (tp > t.tp and tp <= plan.cluster.domain_gpus and arch.num_heads % (tp * t.sp) == 0
                    and plan.trainer_gpus % (tp * t.pp * t.sp) == 0):
                steps.append({"placement.trainer.tp": tp})
    overrides = dict(cand.overrides)
    for step in steps:
        overrides.update(step)
        try:
            trial = resolve(runner.load(apply_overrides(base, overrides)))
        except InputError:
            continue
        if memory_problem(trial) is None:
            return replace(cand, overrides=overrides)
    return None


def _with_steps(data: dict, steps: int | None = None, seed: int | None = None) -> dict:
    """A candidate's job: ``data`` at ``steps`` and ``seed`` (None: the scenario's), stopping
    at steady state (:func:`twin.sim.settle.settling`)."""
    data = settling(data)
    run = dict(data.get("run") or {})
    if steps is not None:
        run["steps"] = steps
    if seed is not None:
        run["seed"] = seed
    return {**data, "run": run}


class _Session:
    """One search's executor, checkpoint and best candidate so far (for a Ctrl-C)."""

    def __init__(self, executor, journal, progress, objective, price, base, owned=True) -> None:
        self.executor, self.journal, self.progress, self.owned = executor, journal, progress, owned
        self.objective, self.price, self.base = objective, price, base
        self.best: tuple | None = None  # (steps, score, index, candidate, report)

    def simulate(self, cands: list[Candidate], steps: int | None, what: str,
                 seeds: list[int] | None = None) -> list[ReportData | InputError]:
        """Each candidate's report at ``steps`` (None: the scenario's) and its seed in ``seeds``
        (None: the scenario's), in order; those in the checkpoint are not simulated again, the
        others are added to it."""
        out: list = [None] * len(cands)
        self._run(cands, steps, what, seeds, out.__setitem__)
        return out

    def screen(self, cands: list[Candidate], steps: int | None, what: str, keep: int) -> "_Rung":
        """One rung: each candidate's score (or its InputError) at ``steps``, and the reports of
        the ``keep`` best only (highest score, then lowest index), so that a rung of any size
        holds a float per candidate and ``keep`` reports, not a report per candidate."""
        rung = _Rung([None] * len(cands), [])

        def take(i: int, result) -> None:
            if isinstance(result, InputError):
                rung.scores[i] = result
                return
            rung.add(i, cands[i].index, _score(result, self.objective, self.price)[0], result, keep)

        self._run(cands, steps, what, None, take)
        return rung

    def _run(self, cands: list[Candidate], steps: int | None, what: str, seeds: list[int] | None,
             take: Callable[[int, Any], None]) -> None:
        """``take(i, report or InputError)`` for each candidate, from the checkpoint or simulated
        (each job built only as a worker takes it)."""
        full = self.base["run"]["steps"] if steps is None else steps
        seeds = seeds or [None] * len(cands)
        weighted = self.objective.startswith("goodput_")  # else the faults section is not simulated
        keys = [json.dumps({"overrides": c.overrides, "steps": full, "seed": seed, "faults": weighted}, sort_keys=True)
                for c, seed in zip(cands, seeds)]
        todo = []
        for i, key in enumerate(keys):
            done = self.journal.get(key) if self.journal else None
            if done is None:
                todo.append(i)
            else:
                self._seen(cands[i], done, full, seeds[i])
                take(i, done)
        faults = {} if weighted else WITHOUT_FAULTS
        jobs = _Jobs(lambda i: _with_steps(apply_overrides(self.base, {**cands[i].overrides, **faults}), steps,
                                           seeds[i]), todo)
        resumed = len(cands) - len(todo)

        def finished(j: int, result) -> None:
            i = todo[j]
            if not isinstance(result, InputError):
                if self.journal is not None:
                    self.journal.add(keys[i], result)
                self._seen(cands[i], result, full, seeds[i])
            take(i, result)

        def tick(done: int, total: int) -> None:
            if self.progress:
                self.progress(done + resumed, total + resumed, what)

        if todo:
            self.executor.map(jobs, tick, finished, store=False)

    def _seen(self, cand: Candidate, report: dict, steps: int, seed: int | None) -> None:
        if seed is not None:  # a noise re-run is not a new candidate
            return
        score = _score(report, self.objective, self.price)[0]
        entry = (steps, score, -cand.index, cand, report)
        if self.best is None or entry[:3] > self.best[:3]:
            self.best = entry

    def best_so_far(self) -> str | None:
        """The best candidate simulated before an interruption, in words."""
        if self.best is None:
            return None
        steps, _, _, cand, report = self.best
        ranked = Ranked(0, cand, report, 0.0, self.objective)
        return (f"{ranked.placement_words}: step {report.step_time_s:.1f} s, "
                f"{report.useful_trajectories_per_hour:,.0f} useful trajectories/h "
                f"(simulated with {steps} steps)")

    def close(self) -> None:
        if self.owned:
            self.executor.close()
        if self.journal is not None:
            self.journal.close()


@dataclass
class _Rung:
    """What a rung of the search keeps: a score (or the InputError) per candidate, in order, and
    a min-heap of the best ``keep`` as (score, -index, position, report)."""

    scores: list
    best: list

    def add(self, position: int, index: int, score: float, report: ReportData, keep: int) -> None:
        """Record a candidate's score; keep its report if it is among the ``keep`` best so far."""
        self.scores[position] = score
        if keep <= 0:
            return
        entry = (score, -index, position, report)
        if len(self.best) < keep:
            heapq.heappush(self.best, entry)
        elif entry[:2] > self.best[0][:2]:
            heapq.heapreplace(self.best, entry)

    def ranked(self, cands: list[Candidate]) -> list[tuple[Candidate, ReportData]]:
        """The kept reports, best first (score descending, then candidate index)."""
        return [(cands[i], rep) for _, _, i, rep in sorted(self.best, key=lambda e: (-e[0], -e[1]))]


def _search(session, feasible, steps, objective, price, top, pruned, examples):
    """Exhaustive up to EXHAUSTIVE_LIMIT; successive halving beyond. Returns the ``top``
    (candidate, report) pairs simulated at full steps, best first, the search's description,
    and simulations run. Every rung holds a score per candidate and ``top`` reports only."""
    rungs: list[tuple[int, int]] = []  # (steps, candidates)
    alive = list(feasible)
    simulations = 0
    evaluated = len(feasible)

    def failures(rung: _Rung) -> None:
        for score in rung.scores:
            if isinstance(score, InputError):
                pruned["failed"] += 1
                examples.setdefault("failed", score.message)

    if len(alive) > EXHAUSTIVE_LIMIT and steps > FIRST_RUNG_STEPS:
        s = FIRST_RUNG_STEPS
        while s < steps:
            rung = session.screen(alive, s, f"screening with {s} steps", keep=0)
            simulations += len(alive)
            rungs.append((s, len(alive)))
            failures(rung)
            scored = sorted((-score, cand.index, cand) for cand, score in zip(alive, rung.scores)
                            if not isinstance(score, InputError))
            keep = max(top, MIN_SURVIVORS, math.ceil(len(scored) / KEEP_FRACTION))
            alive = [c for _, _, c in scored[:keep]]
            s *= 2
    rung = session.screen(alive, None, f"simulating {steps} steps", keep=top)
    simulations += len(alive)
    rungs.append((steps, len(alive)))
    failures(rung)
    strategy = "exhaustive" if len(rungs) == 1 else "successive halving"
    search = {"strategy": strategy, "exhaustive_limit": EXHAUSTIVE_LIMIT,
              "rungs": [{"steps": s, "candidates": n} for s, n in rungs], "evaluated": evaluated}
    return rung.ranked(alive), search, simulations


class _Jobs(Sequence):
    """The scenarios of the candidates at positions ``todo``, each built when it is read: a rung
    of 100,000 candidates never holds 100,000 scenarios at once."""

    def __init__(self, build: Callable[[int], dict], todo: list[int]) -> None:
        self._build, self._todo = build, todo

    def __len__(self) -> int:
        return len(self._todo)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        return self._build(self._todo[j])


def _noise(session, shown, seed, objective) -> dict[int, float | None]:
    """Relative spread (max − min) / mean of the objective's figure over the run's seed and
    NOISE_SEEDS more, per shown candidate (twin.studies.noise)."""
    cands = [c for c, _ in shown]
    runs = [[_metric(rep, objective)] for _, rep in shown]
    if not cands:
        return {}
    seeds = [seed + k for k in range(1, NOISE_SEEDS + 1) for _ in cands]
    results = session.simulate(cands * NOISE_SEEDS, None, "re-simulating the top with other seeds", seeds)
    for i, rep in enumerate(results):
        if not isinstance(rep, InputError):
            runs[i % len(cands)].append(_metric(rep, objective))
    return {c.index: noise.spread(values) for c, values in zip(cands, runs)}
