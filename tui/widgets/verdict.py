"""Tab 3: the bottleneck verdict — links ranked by critical-path share, and, where the
verdict module provides them, the marginal gain of raising each pressure alone."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import DataTable, Static

from tui.figures import LINK_TITLE, diagnosis, gain_text, marginal_gains, pct
from tui.widgets.loop import NO_RUN
from twin.analysis.render import pressure_note


def link_state(row: dict[str, Any]) -> str:
    if row["saturated"]:
        return "saturated: more of it buys experience"
    if row["binds"]:
        return "binds, not saturated: waits"
    return "—"


class VerdictView(VerticalScroll):
    DEFAULT_CSS = """
    VerdictView { padding: 0 1; }
    VerdictView DataTable { height: auto; max-height: 10; margin-bottom: 1; }
    VerdictView #verdict-gains-title { margin-top: 0; }
    """

    def compose(self) -> ComposeResult:
        yield Static(NO_RUN, id="verdict-diagnosis")
        yield DataTable(id="verdict-links", cursor_type="row", zebra_stripes=True)
        yield Static("", id="verdict-gains-title")
        yield DataTable(id="verdict-gains", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#verdict-links", DataTable).add_columns(
            "link", "critical path", "load", "state")
        self.query_one("#verdict-gains", DataTable).add_columns(
            "pressure", "gain", "useful traj/h", "what changes")  # the figures first: 80 columns
        self.query_one("#verdict-links").display = False
        self.query_one("#verdict-gains").display = False

    def show(self, data: dict[str, Any] | None) -> None:
        links = self.query_one("#verdict-links", DataTable)
        table = self.query_one("#verdict-gains", DataTable)
        title = self.query_one("#verdict-gains-title", Static)
        links.clear()
        table.clear()
        if data is None:
            self.query_one("#verdict-diagnosis", Static).update(NO_RUN)
            links.display = table.display = False
            title.update("")
            return
        self.query_one("#verdict-diagnosis", Static).update(
            f"[b]Diagnosis:[/] {escape(diagnosis(data))}")
        for i, row in enumerate(data["bottleneck"]):
            name = LINK_TITLE.get(row["link"], row["link"])
            links.add_row("► " + name if i == 0 else "  " + name, pct(row["critical_path_share"]),
                          pct(row["load"]), link_state(row))
        links.display = True
        rows = marginal_gains(data)
        if rows:
            title.update("[b]Marginal gains[/]: useful experience per hour with one pressure raised")
            for r in rows:
                u = r.get("useful_trajectories_per_hour")
                # A pressure whose re-simulation failed says why instead of a gain.
                gain = "within noise" if r.get("within_noise") else gain_text(r.get("gain"))
                table.add_row(str(r["pressure"]), gain,
                              f"{u:,.0f}" if isinstance(u, (int, float)) else "—",
                              str(r.get("error") or r.get("description", "") + pressure_note(r)))
            table.display = True
        else:
            table.display = False
            title.update("[b]Marginal gains[/]: press [b]g[/] to measure them (re-simulates the "
                         "scenario once per pressure)")
