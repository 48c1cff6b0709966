"""The one pipeline every front end runs: load → resolve → check → simulate → report.

The command line, the Python API, the TUI and every study (:mod:`twin.studies`: the verdict,
the planner, …, through :mod:`twin.studies.executors`) call these functions. A scenario's input
is never changed: overrides apply to the input, which is then resolved again
(:mod:`twin.config.plan`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, Union

from twin.analysis.frames import frame
from twin.analysis.html import available, run_html
from twin.analysis.pricing import costs
from twin.analysis.render import render_run
from twin.analysis.report import LinkRow, ReportData, RoleMemory, StepRow, Throughput, build_report, rounded
from twin.analysis.run import step_figures, time_to_all
from twin.analysis.trace import chrome_trace
from twin.config.load import DEFAULT_SCENARIO, load_scenario, scenario_path
from twin.config.plan import Plan, resolve
from twin.config.scenario import Scenario
from twin.cost.memory import memory_problem
from twin.errors import InputError
from twin.sim.result import SimResult
from twin.sim.stragglers import draw as draw_slowdowns

Progress = Callable[[int, int, float], None]  # (steps done, steps, simulated seconds)
Source = Union[str, Path, Mapping, Scenario, None]  # a built-in name, a YAML path, data, or a Scenario


def load(source: Source = None, overrides: Mapping[str, object] | Sequence[str] | None = None) -> Scenario:
    """The validated scenario, with ``overrides`` (dotted paths, or ``path=value`` strings)
    applied to its input. A :class:`Scenario` is re-validated from its data so that an
    override may reach any field. Raises :class:`InputError` naming the bad field."""
    if isinstance(source, Scenario):
        source = source.model_dump(mode="json")
    return load_scenario(source, overrides)


def plan(source: Source = None, overrides: Mapping[str, object] | Sequence[str] | None = None) -> Plan:
    """The scenario loaded and resolved, whether or not it fits in memory (``twin check``
    describes one that does not; :func:`prepare` refuses it)."""
    return resolve(load(source, overrides))


def source_file(source: Source) -> str | None:
    """The file a scenario reference names, for error messages (None for data)."""
    if isinstance(source, (Mapping, Scenario)):
        return None
    return str(scenario_path(source if source is not None else DEFAULT_SCENARIO))


def prepare(source: Source = None, overrides: Mapping[str, object] | Sequence[str] | None = None) -> Plan:
    """Load, resolve, and check that every role fits in GPU memory: a plan ready to simulate.
    Raises :class:`InputError` (naming the scenario file) when it is not."""
    resolved = plan(source, overrides)
    problem = memory_problem(resolved, source_file(source))
    if problem is not None:
        raise problem
    return resolved


class Judgement(Protocol):
    """What a report needs of a verdict (:class:`twin.studies.verdict.Verdict`, a study above
    the runner): each link's marginal gain, and its own section of the JSON."""

    def gain_by_link(self) -> dict[str, float | None]: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Report:
    """The result of one simulation: its typed figures (``data``, a
    :class:`~twin.analysis.report.ReportData`) as attributes, the plan it ran, the simulation's
    spans and steps (``result``), and the verdict when one was asked for. Nothing is changed
    after it is made: the JSON merges the verdict in (:meth:`to_dict`)."""

    data: ReportData
    plan: Plan = field(repr=False, compare=False)
    result: SimResult | None = field(default=None, repr=False, compare=False)
    verdict: Judgement | None = field(default=None, compare=False)

    @property
    def step_time_s(self) -> float:
        return self.data.step_time_s

    @property
    def breakdown(self) -> dict[str, float]:
        return self.data.breakdown

    @property
    def utilization(self) -> dict[str, float]:
        """Each resource's busy share over the run."""
        return self.data.utilization

    @property
    def throughput(self) -> Throughput:
        return self.data.throughput

    @property
    def useful_trajectories_per_hour(self) -> float:
        return self.data.throughput.useful_trajectories_per_hour

    @property
    def bottleneck(self) -> list[LinkRow]:
        """The links ranked by their share of the critical path, with their load."""
        return self.data.bottleneck

    @property
    def binding_link(self) -> str | None:
        """The link with the largest share of the critical path."""
        return self.data.binding_link

    @property
    def memory(self) -> dict[str, RoleMemory]:
        return self.data.memory

    @property
    def gpus(self) -> dict[str, int]:
        return self.data.gpus

    @property
    def steps(self) -> list[StepRow]:
        return self.data.steps

    @property
    def scenario(self) -> Scenario:
        return self.plan.scenario

    @property
    def run(self) -> dict[str, Any]:
        """The whole run: total time, per-window figures, where the binding link changes
        (:mod:`twin.analysis.run`)."""
        return self.data.run

    def with_verdict(self, verdict: Judgement) -> Report:
        return replace(self, verdict=verdict)

    def with_time_to(self, until: Sequence[tuple[str, float]]) -> Report:
        """This report with ``time_to``: for each (``"trajectories"`` or ``"tokens"``, N), the
        time until the run has trained on N trajectories or generated N tokens."""
        rows = time_to_all(step_figures(self.result), list(until))
        return replace(self, data=self.data.model_copy(update={"time_to": rounded(rows)}))

    def with_price(self, gpu_hour_price: float) -> Report:
        """This report with ``cost``: its GPU time at ``gpu_hour_price`` per GPU-hour (per step,
        per 1,000 useful trajectories, per run; :mod:`twin.analysis.pricing`)."""
        return replace(self, data=self.data.model_copy(update={"cost": costs(self.data, gpu_hour_price)}))

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data; with a verdict, each bottleneck row's ``marginal_gain``
        and the ``verdict`` section."""
        data = self.data.to_dict()
        if self.verdict is not None:
            gains = self.verdict.gain_by_link()
            for row in data["bottleneck"]:
                row["marginal_gain"] = gains.get(row["link"])
            data["verdict"] = self.verdict.to_dict()
        return data

    def to_json(self) -> str:
        """The report as canonical JSON (sorted keys): byte-identical for a scenario + seed."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def chrome_trace(self) -> dict[str, Any]:
        r = self.result
        return chrome_trace(r.spans, engine_steps=r.engine_steps, batches=r.batches)

    # ------------------------------------------------------------ views: text, page, notebook, frame
    def render(self) -> str:
        """The report as ``twin run`` prints it."""
        return render_run(self.data, self.to_dict().get("verdict"))

    def to_html(self, *, whole: bool = True) -> str:
        """The report as one self-contained HTML page with charts (``twin run --html``; needs
        matplotlib, the ``html`` extra); ``whole=False``: a ``<div>`` to embed."""
        return run_html(self.data, self.to_dict().get("verdict"), self.render(), self.result, whole=whole)

    def _repr_html_(self) -> str:
        """A notebook shows the report's charts inline (without matplotlib: its text)."""
        return self.to_html(whole=False) if available() else f"<pre>{html.escape(self.render())}</pre>"

    def to_frame(self):
        """One row per simulated step (its times, trajectories, tokens, binding link, and each
        phase as ``phases.<name>``): a pandas DataFrame (needs pandas)."""
        return frame([s.model_dump() for s in self.data.steps])

    def __repr__(self) -> str:
        return (f"Report({self.data.scenario.get('name')}: step {self.step_time_s:,.1f} s, "
                f"{self.useful_trajectories_per_hour:,.0f} useful trajectories/h, binding link "
                f"{self.binding_link}{', with verdict' if self.verdict is not None else ''})")


def simulate(plan: Plan, progress: Progress | None = None) -> Report:
    """Simulate a plan's ``run.steps`` optimizer steps: its report (no verdict)."""
    from twin.sim.loop import simulate as simulate_loop

    result = simulate_loop(plan, progress)
    slow = draw_slowdowns(plan) if plan.scenario.faults.enabled else None  # the faults section's stragglers
    straggled = simulate_loop(plan, None, slow) if slow is not None and slow.any else None
    return Report(build_report(result, straggled, slow), plan, result)


def run(source: Source = None, overrides: Mapping[str, object] | Sequence[str] | None = None, *,
        progress: Progress | None = None) -> Report:
    """The whole pipeline: prepare and simulate (the verdict, a study, sits above:
    :func:`twin.studies.verdict.judge`, or ``twin.simulate(..., verdict=True)``)."""
    return simulate(prepare(source, overrides), progress)


def report_data(data: dict) -> ReportData | InputError:
    """One scenario given as data → its report's figures, or the input error it raises (what a
    worker of :mod:`twin.studies.executors` runs; picklable, so it works in any process)."""
    try:
        return simulate(prepare(data)).data
    except InputError as exc:
        return exc
