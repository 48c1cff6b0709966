"""Tab 4: replay — scrub through the run step by step.

Top: utilisation over the whole run per role, with the selected step marked under it.
Below: what every resource (engines, trainer, reward pool, links) did during that step, one
row each, shaded by how busy it was and coloured by the activity that kept it busiest.
"""

from __future__ import annotations

import numpy as np
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from tui.timeline import bucket_edges, busy_fraction, dominant_activity, roles
from tui.widgets.loop import NO_RUN

SPARK = " ▁▂▃▄▅▆▇█"
SHADE = "░▒▓█"
LABEL = 10          # width of the role labels of the chart
NAME = 18           # width of the resource names of the step timeline
# Theme colours, so the activities stay distinct in light and dark themes alike.
PALETTE = ("$primary", "$warning", "$success", "$error", "$secondary", "$accent")


def spark(fractions: np.ndarray) -> str:
    levels = np.where(fractions > 0, np.ceil(fractions * 8), 0).astype(int)
    return "".join(SPARK[min(8, lv)] for lv in levels)


def shade(fraction: float) -> str:
    return SHADE[min(3, int(fraction * 4))] if fraction > 0 else "·"


class UtilisationChart(Widget):
    """Busy fraction per role over simulated time; the selected step is marked below."""

    DEFAULT_CSS = "UtilisationChart { height: auto; }"
    step = reactive(0)

    def __init__(self, report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report
        self._roles = roles(report.result.spans)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self._roles) + 2

    def render(self) -> Content:
        spans, steps = self.report.result.spans, self.report.steps
        t0, t1 = steps[0].start_s, steps[-1].end_s
        n = max(8, self.size.width - LABEL - 6)
        edges = bucket_edges(t0, t1, n)
        lines = []
        for role, ids in self._roles.items():
            frac = busy_fraction(spans, ids, edges)
            mean = self.report.utilization.get(role, float(frac.mean()))
            lines.append(f"{escape(role):{LABEL}s}[$accent]{spark(frac)}[/] {mean * 100:3.0f}%")
        s = steps[self.step]
        lo, hi = np.searchsorted(edges, s.start_s, side="right") - 1, np.searchsorted(edges, s.end_s)
        lo, hi = max(0, int(lo)), max(int(lo) + 1, min(n, int(hi)))
        lines.append(f"{'step ' + str(s.step + 1):{LABEL}s}{' ' * lo}[b $warning]{'▔' * (hi - lo)}[/]")
        right = f"{t1:,.0f} s"
        lines.append(f"[$text-muted]{'':{LABEL}s}{'0 s':<{n - len(right)}s}{right}[/]")
        return Content.from_markup("\n".join(lines))


class StepTimeline(Widget):
    """One row per resource over the selected step's wall time."""

    DEFAULT_CSS = "StepTimeline { height: auto; }"
    step = reactive(0)

    def __init__(self, report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(self.report.result.spans.resources) + 2

    def render(self) -> Content:
        spans = self.report.result.spans
        s = self.report.steps[self.step]
        n = max(8, self.size.width - NAME)
        edges = bucket_edges(s.start_s, s.end_s, n)
        colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(spans.activities)}
        seen: dict[str, None] = {}
        lines = []
        for rid, name in enumerate(spans.resources):
            frac = busy_fraction(spans, [rid], edges)
            top = dominant_activity(spans, rid, edges)
            cells = []
            for f, activity in zip(frac, top):
                if activity is None or f <= 0:
                    cells.append("[$text-muted]·[/]")
                else:
                    seen[activity] = None
                    cells.append(f"[{colour[activity]}]{shade(f)}[/]")
            lines.append(f"{escape(name[:NAME - 1]):{NAME}s}" + "".join(cells))
        right = f"{s.end_s:,.1f} s"
        left = f"{s.start_s:,.1f} s"
        lines.append(f"[$text-muted]{'':{NAME}s}{left:<{n - len(right)}s}{right}[/]")
        legend = "   ".join(f"[{colour[a]}]█[/] {escape(a)}" for a in seen) or "[$text-muted]all idle[/]"
        lines.append(f"{'':{NAME}s}{legend}")
        return Content.from_markup("\n".join(lines))


class ReplayView(VerticalScroll):
    """Focusable: the arrow keys move through the steps while this tab is shown."""

    DEFAULT_CSS = """
    ReplayView { padding: 0 1; }
    ReplayView #replay-title { margin-top: 1; }
    """
    BINDINGS = [
        Binding("left,h,[", "step(-1)", "Prev step"),
        Binding("right,l,]", "step(1)", "Next step"),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = None
        self.step = 0

    def compose(self) -> ComposeResult:
        yield Static(NO_RUN, id="replay-header")

    async def show(self, report) -> None:
        """Replace the charts with those of ``report`` (a ``twin.api.Report``) or clear them."""
        self.report, self.step = report, 0
        await self.query("UtilisationChart, StepTimeline, #replay-title").remove()
        if report is None or not report.steps:
            self._header()
            return
        await self.mount(UtilisationChart(report), Static(id="replay-title"), StepTimeline(report))
        self._header()

    def on_resize(self) -> None:
        if self.report is not None:  # the phases line holds as many phases as the width does
            self._header()

    def _header(self) -> None:
        header = self.query_one("#replay-header", Static)
        if self.report is None:
            header.update(NO_RUN)
            return
        steps = self.report.steps
        s = steps[self.step]
        phases = ""  # the longest phases first, as many as one line holds
        for k, v in sorted(s.phases.items(), key=lambda kv: -kv[1]):
            item = f"{k} {v:,.1f} s"
            if len(phases) + len(item) + 3 > max(40, self.size.width - 2):
                phases += " · …"
                break
            phases = f"{phases} · {item}" if phases else item
        header.update(
            f"[b]Step {s.step + 1}/{len(steps)}[/]  {s.end_s - s.start_s:,.1f} s, "
            f"{s.trajectories:,} trajectories, staleness ≤ {s.max_staleness}  "
            f"[$text-muted]←/→ step[/]\n[$text-muted]{escape(phases)}[/]")
        spans = self.report.result.spans
        note = " (first spans only: the run kept a capped detail)" if spans.truncated else ""
        self.query_one("#replay-title", Static).update(
            f"[b]What each resource did in step {s.step + 1}[/]{note}")
        for widget in self.query("UtilisationChart, StepTimeline"):
            widget.step = self.step

    def action_step(self, delta: int) -> None:
        self._go(self.step + delta)

    def action_first(self) -> None:
        self._go(0)

    def action_last(self) -> None:
        self._go(len(self.report.steps) - 1 if self.report else 0)

    def _go(self, step: int) -> None:
        if self.report is None:
            return
        self.step = max(0, min(len(self.report.steps) - 1, step))
        self._header()
