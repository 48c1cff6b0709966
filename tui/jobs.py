"""What the TUI asks the simulator for, and how a run is cancelled.

Kept free of Textual so the rules (what a request is, what makes a run stop) read and test
on their own; the app runs :func:`run_request` in a thread worker.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin import runner
from twin.config.registry import builtin_scenarios, builtin_scenarios_dir
from twin.config.scenario import Scenario
from twin.errors import InputError
from twin.runner import Progress, Report
from twin.studies.planner import plan_budget
from twin.studies.verdict import Verdict, judge


class Cancelled(Exception):
    """Raised from the progress callback: the simulator unwinds at the end of a step."""


@dataclass(frozen=True)
class RunRequest:
    """One simulation: a scenario reference (built-in name or YAML path) plus overrides."""

    ref: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        name = Path(self.ref).stem if self.ref.endswith((".yaml", ".yml")) else self.ref
        if not self.overrides:
            return name
        return name + " with " + ", ".join(f"{k}={v}" for k, v in self.overrides.items())

    def with_overrides(self, extra: dict[str, Any]) -> "RunRequest":
        return RunRequest(self.ref, {**self.overrides, **extra})


def load(request: RunRequest) -> Scenario:
    """The validated scenario; raises :class:`twin.errors.InputError` naming the bad field."""
    return runner.load(request.ref, request.overrides)


def run_request(request: RunRequest, progress: Progress | None = None) -> Report:
    """The runner's pipeline, as ``twin run`` runs it (memory checked first): a report."""
    return runner.run(request.ref, request.overrides, progress=progress)


def cancellable(progress: Progress, cancel: threading.Event) -> Progress:
    """A progress callback that raises :class:`Cancelled` once ``cancel`` is set.

    The simulator calls progress after every step, so a cancel takes effect within a step
    and the worker thread ends instead of running on unseen.
    """

    def wrapped(done: int, total: int, simulated_s: float) -> None:
        if cancel.is_set():
            raise Cancelled()
        progress(done, total, simulated_s)

    return wrapped


def scenario_files(extra: list[str], directory: Path | None = None) -> list[str]:
    """Scenario files to offer beside the built-ins: the ones named on the command line and
    the YAML files of ``./scenarios`` (the README's layout), never the built-ins twice."""
    builtins = builtin_dir()
    found = list(extra)
    folder = (directory or Path.cwd()) / "scenarios"
    if folder.is_dir() and folder.resolve() != builtins:
        found += [str(p) for p in sorted(folder.glob("*.y*ml"))]
    seen: set[str] = set()
    return [f for f in found if not (f in seen or seen.add(f))]


def builtin_dir() -> Path:
    return builtin_scenarios_dir().resolve()


def all_scenarios(files: list[str]) -> list[str]:
    return builtin_scenarios() + [f for f in files if f not in builtin_scenarios()]


def run_sensitivity(request: RunRequest, base: Report) -> Verdict:
    """The verdict for a run already on screen, re-simulating one pressure at a time."""
    return judge(base)


def short_message(exc: InputError) -> str:
    """An input error without its file: inside the TUI the file is the one on screen, and
    the field, value and what is allowed are what the user needs beside the form."""
    return InputError(exc.problem, field=exc.field, value=exc.value, allowed=exc.allowed).message


# ----------------------------------------------------------------------------- planning
PLAN_TOP = 10  # candidates ranked in the Plan tab (the planner re-simulates these with other seeds)


@dataclass(frozen=True)
class PlanRun:
    """What the Plan tab shows: the ranked plan at the budget, and the scaling curve — the best
    plan's useful trajectories/h at each budget of :func:`curve_budgets` (None: nothing fits)."""

    request: RunRequest
    gpus: int
    max_staleness: int
    result: Any                       # twin.studies.planner.PlanResult at ``gpus``
    curve: list[tuple[int, float | None]]


def curve_budgets(gpus: int) -> list[int]:
    """The budgets of the scaling curve: half, the budget itself, and twice it."""
    return sorted({max(1, gpus // 2), gpus, 2 * gpus})


def run_plan(request: RunRequest, gpus: int, max_staleness: int,
             progress: Any = None, workers: int | None = None, top: int = PLAN_TOP,
             objective: str = "useful_trajectories_per_hour") -> PlanRun:
    """``twin.studies.planner.plan_budget`` at ``gpus`` (its top ``top``) and, for the curve, at the
    other budgets of :func:`curve_budgets` (their best only). ``progress(budget, done, total,
    what)`` follows each; raising from it (:class:`Cancelled`) stops the planning. Raises
    :class:`InputError` when nothing fits ``gpus`` itself; a curve budget nothing fits is a gap.
    ``objective``: what the candidates are ranked by (the planner's; the Plan tab offers
    useful trajectories/h and time to target)."""
    def plan(budget: int, keep: int):
        tick = (lambda done, total, what: progress(budget, done, total, what)) if progress else None
        return plan_budget(request.ref, request.overrides, gpus=budget, max_staleness=max_staleness,
                           top=keep, workers=workers, progress=tick, objective=objective)

    result = plan(gpus, top)  # first: a budget nothing fits fails before the curve is spent on
    best = {gpus: result.best.report.useful_trajectories_per_hour}
    for budget in curve_budgets(gpus):
        if budget in best:
            continue
        try:
            best[budget] = plan(budget, 1).best.report.useful_trajectories_per_hour
        except InputError:
            best[budget] = None
    return PlanRun(request, gpus, max_staleness, result, sorted(best.items()))
