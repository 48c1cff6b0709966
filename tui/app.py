"""The TUI application: tabs, keys, and the one simulation worker behind them.

``twin tui [SCENARIO] [--set path=value]…`` calls :func:`main`. Simulations run in a thread
worker, one at a time; each reports progress per step and stops at the next step once
cancelled (esc), so the interface never waits on the simulator.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message
from textual.widgets import Footer, Header, Input, TabbedContent, TabPane, TextArea

from tui import require_textual
from tui.figures import LINK_TITLE
from tui.jobs import (
    Cancelled,
    RunRequest,
    all_scenarios,
    builtin_dir,
    cancellable,
    load,
    run_plan,
    run_request,
    run_sensitivity,
    scenario_files,
    short_message,
)
from tui.screens import ExportScreen, HelpScreen
from tui.widgets.compare import CompareView
from tui.widgets.loop import LoopView
from tui.widgets.picker import ScenarioPicker
from tui.widgets.plan import PlanView
from tui.widgets.replay import ReplayView
from tui.widgets.status import RunStatus
from tui.widgets.verdict import VerdictView
from tui.widgets.whatif import WhatIfForm, form_scenario
from twin.config.load import scenario_path
from twin.config.overrides import parse_overrides
from twin.errors import InputError

TABS = ("picker", "loop", "verdict", "replay", "whatif", "compare", "plan")
TAB_TITLES = ("1 Scenarios", "2 Loop", "3 Verdict", "4 Replay", "5 What-if", "6 Compare", "7 Plan")
# The widget that takes the keys when a tab is shown.
TAB_FOCUS = {"picker": "#picker-list", "loop": "LoopView", "verdict": "#verdict-links",
             "replay": "ReplayView", "whatif": "#whatif-placement-rollout-gpus", "compare": "#compare-a",
             "plan": "#plan-gpus"}
# Results kept per resolved scenario, so that one already simulated in this session (the
# baseline as Compare's A, a what-if tried again) is shown at once instead of re-simulated.
CACHE_SIZE = 16


@dataclass
class Job:
    """One unit of work for the worker: a kind (what the result is for) and its requests."""

    id: int
    kind: str                      # "baseline", "whatif", "compare", "gains" or "plan"
    requests: list[RunRequest]
    cancel: threading.Event = field(default_factory=threading.Event)
    base: Any = None  # the report (twin.runner.Report) a "gains" job judges
    budget: tuple[int, int] | None = None  # a "plan" job's (GPUs, max staleness)
    objective: str | None = None  # a "plan" job's ranking (None: the planner's default)


class JobProgress(Message):
    def __init__(self, job: Job, label: str, done: int, total: int, simulated_s: float) -> None:
        super().__init__()
        self.job, self.label, self.done, self.total, self.simulated_s = job, label, done, total, simulated_s


class JobCount(Message):
    """Progress of a batch of simulations (the planner's): ``done`` of ``total``, and what."""

    def __init__(self, job: Job, what: str, done: int, total: int) -> None:
        super().__init__()
        self.job, self.what, self.done, self.total = job, what, done, total


class JobEnded(Message):
    """The worker's last word: ``results`` on success, else ``error`` or ``cancelled``."""

    def __init__(self, job: Job, results: list | None = None, error: str | None = None,
                 cancelled: bool = False) -> None:
        super().__init__()
        self.job, self.results, self.error, self.cancelled = job, results, error, cancelled


class TwinApp(App[int]):
    TITLE = "rltwin"
    SUB_TITLE = "which link of the RL loop binds"
    CSS_PATH = "app.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("r", "run", "Run"),
        Binding("escape", "cancel", "Cancel", show=False),
        # Only where the focused widget has no use for enter (a list, a field and a select do).
        Binding("enter", "enter", "Run", show=False),
        Binding("x", "export", "Export"),
        Binding("g", "gains", "Gains", show=False),
        Binding("p", "plan", "Plan"),
        Binding("t", "toggle_theme", "Theme"),
        *(Binding(str(i + 1), f"tab('{tab}')", TAB_TITLES[i], show=False) for i, tab in enumerate(TABS)),
    ]

    def __init__(self, scenario: str | None = None, overrides: dict[str, Any] | None = None,
                 files: list[str] | None = None, theme: str | None = None,
                 simulate: Callable = run_request, sensitivity: Callable = run_sensitivity,
                 planner: Callable = run_plan) -> None:
        super().__init__()
        self.overrides = dict(overrides or {})
        self.refs = all_scenarios(files or [])
        if scenario and scenario not in self.refs:
            self.refs.append(scenario)
        self.selected = scenario
        self.simulate, self.sensitivity, self.planner = simulate, sensitivity, planner
        self.job: Job | None = None
        self._jobs = 0
        # Jobs whose end (result, error or cancellation) has reached the screen; a superseded
        # job's does not count. Tests wait on it: a job that has not started yet looks idle.
        self.jobs_finished = 0
        self.baseline = None                      # the Report shown in Loop, Verdict, Replay
        self.baseline_request: RunRequest | None = None
        self.whatif = None                        # the latest what-if Report
        self.whatif_request: RunRequest | None = None
        self.plan = None                          # the latest tui.jobs.PlanRun
        # Resolved scenario (JSON) → report, the least recently used dropped first; the
        # worker thread reads and fills it, hence the lock.
        self.results: OrderedDict[str, Any] = OrderedDict()
        self._results_lock = threading.Lock()
        if theme:
            self.theme = theme

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="tabs"):
            yield TabPane(TAB_TITLES[0], ScenarioPicker(self.refs, self.overrides, self.selected), id="picker")
            yield TabPane(TAB_TITLES[1], LoopView(), id="loop")
            yield TabPane(TAB_TITLES[2], VerdictView(), id="verdict")
            yield TabPane(TAB_TITLES[3], ReplayView(), id="replay")
            yield TabPane(TAB_TITLES[4], WhatIfForm(), id="whatif")
            yield TabPane(TAB_TITLES[5], CompareView(self.refs, self.overrides), id="compare")
            yield TabPane(TAB_TITLES[6], PlanView(), id="plan")
        yield RunStatus()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#picker-list").focus()

    # --- tabs and keys --------------------------------------------------------------

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Digits are text while a text field has the keys, never a tab switch.
        if action == "tab" and isinstance(self.focused, (Input, TextArea)):
            return False
        return True

    def action_tab(self, tab: str) -> None:
        """A digit key: show its tab, unless the keys are in the what-if form (on its mode,
        its result): digits typed there are meant for the form, and an enter after them
        must not run the picker's scenario. esc leaves the form, then digits switch tabs."""
        if self._in_form():
            self.notify("Digits are for the form here: esc leaves it, then 1–6 switch tabs.",
                        timeout=4)
            return
        self.show_tab(tab)

    def _in_form(self) -> bool:
        """Whether the keys are in the what-if form (a field, the mode, the result beside)."""
        focused = self.focused
        return focused is not None and self.query_one(WhatIfForm) in focused.ancestors

    def show_tab(self, tab: str) -> None:
        # Drop focus first: a focused widget in the pane being hidden would hand focus to its
        # neighbour in that pane, and TabbedContent follows focus back to the old tab.
        self.set_focus(None)
        self.query_one(TabbedContent).active = tab

    def on_scenario_picker_opened(self, message: ScenarioPicker.Opened) -> None:
        if message.ref not in self.refs:
            self.refs.append(message.ref)
        self.query_one(CompareView).set_refs(self.refs)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_tab, event.pane.id)

    def _focus_tab(self, tab: str) -> None:
        """Give the keys to the tab's main widget (arrow keys scrub the replay, etc.), unless
        a widget of the tab already has them (o: open a file, before the first refresh)."""
        if tab != self.active_tab:
            return
        screen = self.default_screen  # the tabs' screen, also under the help or export dialog
        if screen.focused is not None and self.query_one(f"TabPane#{tab}") in screen.focused.ancestors:
            return
        target = self.query_one(TAB_FOCUS[tab])
        if target.focusable:
            # At once, not target.focus() (deferred): a result that switches tabs in between
            # would be undone, TabbedContent following the late focus back to this tab.
            screen.set_focus(target)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_run(self) -> None:
        """Run what the shown tab is about; elsewhere, run the picked scenario again."""
        tab = self.active_tab
        if tab == "whatif":
            self.query_one(WhatIfForm).submit()
        elif tab == "plan":
            self.query_one(PlanView).submit()
        elif tab == "compare":
            pair = self.query_one(CompareView).requests()
            if pair:
                self.start(Job(self._next_id(), "compare", list(pair)))
        elif tab == "picker" or self.baseline_request is None:
            self.run_baseline(self.query_one(ScenarioPicker).request())
        else:
            self.run_baseline(self.baseline_request)

    def action_enter(self) -> None:
        """enter on no widget that takes it (after esc, on the what-if result): the what-if
        tab's run, or Compare's; never the picker's scenario from another tab."""
        if self.screen is self.default_screen and self.active_tab in ("whatif", "compare", "plan"):
            self.action_run()

    def action_cancel(self) -> None:
        """esc: cancel the simulation in progress; with none, leave a text field or the
        what-if form, so that the one-key shortcuts (tabs, r, x…) work again."""
        if self.job is None:
            if isinstance(self.focused, (Input, TextArea)) or self._in_form():
                self.set_focus(None)
            return
        self.job.cancel.set()
        self.query_one(RunStatus).cancelling()

    def action_export(self) -> None:
        report, label = self.baseline, self.baseline_request.label if self.baseline_request else ""
        if self.active_tab == "whatif" and self.whatif is not None:
            report, label = self.whatif, "what-if: " + self.whatif_request.label
        if report is None:
            self.notify("Nothing to export yet: run a scenario first.", severity="warning")
            return

        def written(paths: list[str] | None) -> None:
            if paths:
                self.notify("Wrote " + ", ".join(paths))
                self.query_one(RunStatus).finished("[$success]✓[/] wrote " + escape(", ".join(paths)))

        self.push_screen(ExportScreen(report, label), written)

    def action_plan(self) -> None:
        """p: the Plan tab, its budget field taking the keys."""
        self.show_tab("plan")

    def on_plan_view_submitted(self, message: PlanView.Submitted) -> None:
        """Plan the scenario on screen (the picked one before any run) at the form's budget."""
        request = self.baseline_request or self.query_one(ScenarioPicker).request()
        try:
            load(request)
        except InputError as exc:
            self.query_one(PlanView).error(short_message(exc))
            return
        self.query_one(PlanView).say("[$text-muted]planning…[/]")
        objective = message.objective if message.objective != "useful_trajectories_per_hour" else None
        self.start(Job(self._next_id(), "plan", [request], budget=(message.gpus, message.max_staleness),
                       objective=objective))

    def on_plan_view_open(self, message: PlanView.Open) -> None:
        """A ranked candidate chosen: run it as the baseline, shown in the Loop tab."""
        if self.plan is not None:
            self.run_baseline(self.plan.request.with_overrides(message.overrides))

    def action_gains(self) -> None:
        if self.baseline_request is None:
            self.notify("Run a scenario first.", severity="warning")
        else:
            self.start(Job(self._next_id(), "gains", [self.baseline_request], base=self.baseline))

    # --- starting work ----------------------------------------------------------------

    def _next_id(self) -> int:
        self._jobs += 1
        return self._jobs

    def run_baseline(self, request: RunRequest) -> None:
        self.start(Job(self._next_id(), "baseline", [request]))

    def run_whatif(self, overrides: dict[str, Any]) -> None:
        """Validate at once (errors go under the form), then simulate in the worker."""
        request = self.baseline_request.with_overrides(overrides)
        try:
            load(request)
        except InputError as exc:
            self.query_one(WhatIfForm).error(short_message(exc))
            return
        self.query_one(WhatIfForm).say("[$text-muted]simulating…[/]")
        self.start(Job(self._next_id(), "whatif", [request]))

    def start(self, job: Job) -> None:
        if self.job is not None:  # one simulation at a time: the newest request wins
            self.job.cancel.set()
        self.job = job
        total = None if job.kind in ("gains", "plan") else _steps(job.requests[0])
        self.query_one(RunStatus).started(self._label(job), total)
        self.run_worker(partial(self._work, job), thread=True, group="simulation", exit_on_error=False)

    @staticmethod
    def _label(job: Job) -> str:
        if job.kind == "compare":
            return " and ".join(r.ref for r in job.requests)
        if job.kind == "gains":
            return f"marginal gains of {job.requests[0].ref}"
        if job.kind == "plan":
            return f"a plan for {job.requests[0].ref} on {job.budget[0]} GPUs"
        return job.requests[0].ref + (" (what-if)" if job.kind == "whatif" else "")

    def _work(self, job: Job) -> None:
        """In the worker thread: never touches widgets, only posts messages."""
        results = []
        try:
            for request in job.requests:
                if job.kind == "gains":  # not cancellable mid-way: its result is dropped instead
                    results.append(self.sensitivity(request, job.base))
                    continue
                if job.kind == "plan":  # cancelled between simulations
                    ranking = {"objective": job.objective} if job.objective else {}
                    results.append(self.planner(request, *job.budget, progress=partial(self._count, job), **ranking))
                    continue
                report = partial(self._report_progress, job, request.ref)
                results.append(self._simulate(request, cancellable(report, job.cancel)))
        except Cancelled:
            self.post_message(JobEnded(job, cancelled=True))
        except InputError as exc:
            self.post_message(JobEnded(job, error=short_message(exc)))
        except Exception as exc:  # a simulator bug must not take the interface down with it
            self.post_message(JobEnded(job, error=f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(JobEnded(job, results=results))

    def _simulate(self, request: RunRequest, progress) -> Any:
        """The report of ``request``: from :attr:`results` when the same resolved scenario was
        simulated in this session, else simulated (in the worker thread) and kept."""
        key = json.dumps(load(request).model_dump(mode="json"), sort_keys=True)
        with self._results_lock:
            if key in self.results:
                self.results.move_to_end(key)
                return self.results[key]
        report = self.simulate(request, progress)
        with self._results_lock:
            self.results[key] = report
            while len(self.results) > CACHE_SIZE:
                self.results.popitem(last=False)
        return report

    def _count(self, job: Job, budget: int, done: int, total: int, what: str) -> None:
        if job.cancel.is_set():
            raise Cancelled()
        self.post_message(JobCount(job, f"{budget} GPUs: {what}", done, total))

    def _report_progress(self, job: Job, label: str, done: int, total: int, simulated_s: float) -> None:
        self.post_message(JobProgress(job, label, done, total, simulated_s))

    # --- results --------------------------------------------------------------------

    def on_job_progress(self, message: JobProgress) -> None:
        if message.job is self.job and not message.job.cancel.is_set():
            self.query_one(RunStatus).progressed(message.label, message.done, message.total,
                                                 message.simulated_s)

    def on_job_count(self, message: JobCount) -> None:
        if message.job is self.job and not message.job.cancel.is_set():
            self.query_one(RunStatus).counted(self._label(message.job), message.what, message.done, message.total)

    async def on_job_ended(self, message: JobEnded) -> None:
        job = message.job
        if job is not self.job:
            return  # superseded by a newer request; its successor reports
        try:
            await self._end(job, message)
        finally:
            if self.job is job:  # idle only once the result is on screen
                self.job = None
            self.jobs_finished += 1

    async def _end(self, job: Job, message: JobEnded) -> None:
        status = self.query_one(RunStatus)
        if message.cancelled or job.cancel.is_set():
            status.finished("Cancelled. [$text-muted]r runs again.[/]")
            if job.kind == "whatif":
                self.query_one(WhatIfForm).say("[$text-muted]cancelled[/]")
            elif job.kind == "plan":
                self.query_one(PlanView).say("[$text-muted]cancelled[/]")
            return
        if message.error is not None:
            status.failed(message.error)
            if job.kind == "whatif":
                self.query_one(WhatIfForm).error(message.error)
            elif job.kind == "compare":
                self.query_one(CompareView).message(f"[$error]{escape(message.error)}[/]")
            elif job.kind == "plan":
                self.query_one(PlanView).error(message.error)
            return
        await getattr(self, f"_show_{job.kind}")(job, message.results)

    async def _show_baseline(self, job: Job, results: list) -> None:
        report, request = results[0], job.requests[0]
        self.baseline, self.baseline_request = report, request
        self.whatif = None
        data = report.to_dict()
        self.query_one(LoopView).show(data)
        self.query_one(VerdictView).show(data)
        await self.query_one(ReplayView).show(report)
        self.query_one(WhatIfForm).fill(form_scenario(data))
        self.query_one(CompareView).preselect(request.ref)
        self.query_one(PlanView).fill(sum(data["gpus"].values()))
        top = data["bottleneck"][0]["link"] if data["bottleneck"] else None
        binds = f"{LINK_TITLE.get(top, top)} binds · " if top else ""
        self.query_one(RunStatus).finished(
            f"[$success]✓[/] {escape(request.ref)}: {binds}step {data['step_time_s']:,.1f} s "
            "[$text-muted]· tabs 2–6[/]")
        self.show_tab("loop")

    async def _show_whatif(self, job: Job, results: list) -> None:
        self.whatif, self.whatif_request = results[0], job.requests[0]
        self.query_one(WhatIfForm).show(self.baseline.to_dict(), self.whatif.to_dict())
        step = self.whatif.step_time_s
        self.query_one(RunStatus).finished(f"[$success]✓[/] what-if: step {step:,.1f} s "
                                           f"(baseline {self.baseline.step_time_s:,.1f} s)")

    async def _show_compare(self, job: Job, results: list) -> None:
        a, b = job.requests
        self.query_one(CompareView).show(a.label, results[0].to_dict(), b.label, results[1].to_dict())
        self.query_one(RunStatus).finished(f"[$success]✓[/] compared {escape(a.ref)} and {escape(b.ref)}")

    async def _show_plan(self, job: Job, results: list) -> None:
        self.plan = results[0]
        self.query_one(PlanView).show(self.plan)
        if self.active_tab == "plan":  # enter on a row opens it: the table takes the keys
            self.set_focus(self.query_one("#plan-table"))
        best = self.plan.result.best
        self.query_one(RunStatus).finished(
            f"[$success]✓[/] planned {escape(job.requests[0].ref)} on {job.budget[0]} GPUs: best "
            f"{escape(best.placement_words)} [$text-muted]· enter on a row opens it[/]")

    async def _show_gains(self, job: Job, results: list) -> None:
        """The verdict joins the baseline's report: the loop's diagnosis, the verdict table and
        an export from now on all carry it, as ``twin.simulate(..., verdict=True)`` would."""
        if job.requests[0] != self.baseline_request:
            return
        self.baseline = self.baseline.with_verdict(results[0])
        data = self.baseline.to_dict()
        self.query_one(LoopView).show(data)
        self.query_one(VerdictView).show(data)
        self.query_one(RunStatus).finished("[$success]✓[/] marginal gains measured")
        self.show_tab("verdict")

    def on_unmount(self) -> None:
        if self.job is not None:  # let the worker thread end at its next step
            self.job.cancel.set()


def _steps(request: RunRequest) -> int | None:
    try:
        return load(request).run.steps
    except InputError:
        return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="twin tui", description="Explore a scenario in a terminal UI: run it, see which link "
        "of the RL loop binds, replay it, try what-ifs, compare scenarios, export.")
    parser.add_argument("scenario", nargs="?", default=None,
                        help="a built-in scenario (see `twin list`) or a YAML file to select first")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a field of every scenario run, e.g. --set run.steps=3")
    parser.add_argument("--theme", choices=("dark", "light"), default=None,
                        help="colours for a dark or light terminal (t toggles inside)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        require_textual()
        overrides = parse_overrides(args.overrides)
        files: list[str] = []
        if args.scenario is not None:
            path = scenario_path(args.scenario)  # bad names fail here, before the screen opens
            if not path.resolve().is_relative_to(builtin_dir()):
                files.append(args.scenario)
            load(RunRequest(args.scenario, overrides))
    except InputError as exc:
        print(f"twin: error: {exc.message}", file=sys.stderr)
        return 2
    theme = {"dark": "textual-dark", "light": "textual-light"}.get(args.theme or "")
    app = TwinApp(args.scenario, overrides, scenario_files(files), theme)
    app.run()
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
