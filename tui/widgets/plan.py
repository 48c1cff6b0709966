"""Tab 7: plan — the best use of a GPU budget (``twin plan``), and how the best scales.

A budget and a staleness bound, a run (enter or r), the planner's ranked candidates, and the
scaling curve: the best plan's useful trajectories/h at half, the same and twice the budget,
beside the linear extension of the smallest. enter on a candidate opens it in the Loop tab.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.widgets import Button, DataTable, Input, Label, Static

from twin.config.modes import MODES

COLUMNS = ("#", "mode", "rollout", "trainer", "tp", "stale", "step (s)", "useful/h", "to target (h)", "binding link",
           "noise")
# What the planner ranks by (the button beside Plan toggles it): useful trajectories/h, or the
# hours to the scenario's learning target (docs/time-to-target.md).
OBJECTIVES = {"useful_trajectories_per_hour": "by useful/h", "time_to_target": "by time to target"}
HINT = ("[$text-muted]GPUs and staleness bound, then enter: the planner's best deployments and "
        "its scaling curve (simulates many candidates: seconds to minutes)[/]")


class PlanFormError(ValueError):
    """A field that is not a whole number in its range; the message names the field."""


def parse_form(gpus: str, staleness: str) -> tuple[int, int]:
    """(GPUs, max staleness) from the form's text; the planner judges the rest (a budget no
    candidate fits, a bound above its maximum)."""
    out = []
    for label, text, low in (("GPUs", gpus, 1), ("max staleness", staleness, 0)):
        text = text.strip()
        if not text.isdigit() or int(text) < low:
            raise PlanFormError(f"{label}: {text!r} is not a whole number of {low} or more")
        out.append(int(text))
    return out[0], out[1]


def candidate_row(d: dict[str, Any]) -> tuple[str, ...]:
    """A ranked candidate (``Ranked.to_dict()``) as the table's cells."""
    load = d["binding_load"]
    link = f"{d['binding_link']} ({load * 100:.0f}%)" if load is not None else str(d["binding_link"])
    mode = d["mode"] + ("+partial" if d["partial_rollout"] else "")
    shared = MODES[d["mode"]].shares_gpus
    return (str(d["rank"]), mode, str(d["rollout_gpus"]), "shared" if shared else str(d["trainer_gpus"]),
            str(d["engine_tp"]), str(d["staleness"]), f"{d['step_time_s']:,.1f}",
            f"{d['useful_trajectories_per_hour']:,.0f}",
            f"{d['time_to_target_s'] / 3600:,.1f}" if d.get("time_to_target_s") is not None else "—", link,
            f"{d['noise'] * 100:.1f}%" if d["noise"] is not None else "—")


def curve_text(curve: list[tuple[int, float | None]]) -> str:
    """The curve's points in words, with each one's scaling efficiency against the smallest
    budget that fits (useful per GPU relative to it)."""
    known = [(g, u) for g, u in curve if u]
    parts = []
    for g, u in curve:
        if not u:
            parts.append(f"{g} GPUs: nothing fits")
            continue
        g0, u0 = known[0]
        parts.append(f"{g} GPUs: {u:,.0f}/h" + (f" ({u / u0 * g0 / g * 100:.0f}% efficient)" if g != g0 else ""))
    return " · ".join(parts)


class PlanView(VerticalScroll):
    """The form, the ranked table and the curve. Posts :class:`Submitted` to plan and
    :class:`Open` when a candidate is chosen; the app runs the planner and the scenario."""

    DEFAULT_CSS = """
    PlanView { padding: 0 1; }
    PlanView #plan-form { height: 1; margin-bottom: 1; }
    PlanView #plan-form Label { padding: 0 1 0 0; }
    PlanView #plan-form Input { width: 8; margin-right: 2; }
    PlanView #plan-run { min-width: 8; height: 1; border: none; }
    PlanView #plan-objective { min-width: 20; height: 1; border: none; margin-left: 2; }
    PlanView DataTable { height: auto; max-height: 12; margin-bottom: 1; }
    PlanView PlotextPlot { height: 14; }
    """

    class Submitted(Message):
        def __init__(self, gpus: int, max_staleness: int, objective: str = "useful_trajectories_per_hour") -> None:
            super().__init__()
            self.gpus, self.max_staleness, self.objective = gpus, max_staleness, objective

    class Open(Message):
        """A ranked candidate chosen: its overrides, to open in the Loop tab."""

        def __init__(self, overrides: dict[str, Any], label: str) -> None:
            super().__init__()
            self.overrides, self.label = overrides, label

    def __init__(self) -> None:
        super().__init__()
        self._overrides: list[dict[str, Any]] = []
        self._labels: list[str] = []
        self.objective = "useful_trajectories_per_hour"

    def compose(self) -> ComposeResult:
        from textual_plotext import PlotextPlot

        with Horizontal(id="plan-form"):
            yield Label("GPUs")
            yield Input("", compact=True, id="plan-gpus")
            yield Label("max staleness")
            yield Input("1", compact=True, id="plan-staleness")
            yield Button("Plan", id="plan-run", compact=True)
            yield Button(OBJECTIVES[self.objective], id="plan-objective", compact=True)
        yield Static(HINT, id="plan-message")
        yield DataTable(id="plan-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="plan-curve-text")
        yield PlotextPlot(id="plan-curve")

    def on_mount(self) -> None:
        self.query_one("#plan-table", DataTable).add_columns(*COLUMNS)
        self.query_one("#plan-table").display = False
        self.query_one("#plan-curve").display = False

    def fill(self, gpus: int) -> None:
        """The budget field, from the run on screen (its GPUs), unless the user typed one."""
        field = self.query_one("#plan-gpus", Input)
        if not field.value.strip():
            field.value = str(gpus)

    def say(self, markup: str) -> None:
        self.query_one("#plan-message", Static).update(markup)

    def error(self, message: str) -> None:
        self.say(f"[$error]✗ {escape(message)}[/]")

    def submit(self) -> None:
        """Read the form: post :class:`Submitted`, or say what is wrong under it."""
        try:
            gpus, staleness = parse_form(self.query_one("#plan-gpus", Input).value,
                                         self.query_one("#plan-staleness", Input).value)
        except PlanFormError as exc:
            self.error(str(exc))
            return
        self.post_message(self.Submitted(gpus, staleness, self.objective))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()

    @on(Button.Pressed, "#plan-run")
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.submit()

    @on(Button.Pressed, "#plan-objective")
    def _toggle_objective(self, event: Button.Pressed) -> None:
        """Rank by useful trajectories/h or by the hours to the learning target."""
        event.stop()
        names = list(OBJECTIVES)
        self.objective = names[(names.index(self.objective) + 1) % len(names)]
        event.button.label = OBJECTIVES[self.objective]

    @on(DataTable.RowSelected, "#plan-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        event.stop()
        i = event.cursor_row
        if 0 <= i < len(self._overrides):
            self.post_message(self.Open(dict(self._overrides[i]), self._labels[i]))

    def show(self, run: Any) -> None:
        """A :class:`tui.jobs.PlanRun`: the ranked table, the curve, a line on the search."""
        result = run.result
        table = self.query_one("#plan-table", DataTable)
        table.clear()
        self._overrides, self._labels = [], []
        for ranked in result.ranked:
            d = ranked.to_dict()
            table.add_row(*candidate_row(d))
            self._overrides.append(dict(ranked.candidate.overrides))
            self._labels.append(f"plan #{d['rank']}: {ranked.placement_words}")
        table.display = True
        self.say(f"[b]{escape(result.scenario_name)}[/] on {result.budget_gpus} GPUs: "
                 f"{result.candidates_total} candidates, {result.pruned} pruned, {result.evaluated} "
                 f"simulated ({result.search['strategy']}) [$text-muted]· enter on a row opens it in 2 Loop[/]")
        self.query_one("#plan-curve-text", Static).update(
            "[b]Scaling[/] (best plan per budget): " + escape(curve_text(run.curve)))
        self._plot(run.curve)

    def _plot(self, curve: list[tuple[int, float | None]]) -> None:
        plot = self.query_one("#plan-curve")
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        known = [(g, u) for g, u in curve if u]
        xs, ys = [g for g, _ in known], [u for _, u in known]
        if known:
            g0, u0 = known[0]
            plt.plot(xs, [u0 * g / g0 for g in xs], label="linear", marker="dot")
            plt.plot(xs, ys, label="best plan", marker="braille")
            plt.xticks(xs, [str(g) for g in xs])
            plt.yticks(ys, [f"{u / 1000:,.0f}k" if u >= 10_000 else f"{u:,.0f}" for u in ys])
        plt.title("useful trajectories/h vs GPUs")
        plt.xlabel("GPUs")
        plot.display = bool(known)
        plot.refresh()
