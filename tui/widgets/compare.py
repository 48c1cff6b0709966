"""Tab 6: two scenarios side by side — headline figures with deltas, then parameters.

:func:`comparison_markup` is shared with the what-if tab (baseline beside the edit).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import Select, Static

from tui.figures import ComparedRow, compare, scenario_summary
from tui.jobs import RunRequest

MARK = {"better": ("$success", " ✓"), "worse": ("$error", " ✗"), "": ("", "")}


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def comparison_markup(rows: list[ComparedRow], left: str, right: str, width: int = 12) -> str:
    """A table: metric, left, right and the relative change, marked ✓ better / ✗ worse (the
    marks read without colour; the colours follow the theme)."""
    lines = [f"[b]{'':13s} {escape(_cut(left, width)):>{width}s} {escape(_cut(right, width)):>{width}s}   Δ[/]"]
    for r in rows:
        style, mark = MARK[r.verdict]
        delta = f"[{style}]{r.delta}{mark}[/]" if style else r.delta
        lines.append(f"{r.label:13s} {escape(_cut(r.left, width)):>{width}s} "
                     f"{escape(_cut(r.right, width)):>{width}s}  {delta}")
    return "\n".join(lines)


def parameters_markup(left: dict, right: dict, width: int = 30) -> str:
    """Key parameters of two resolved scenarios, rows that differ in bold."""
    a, b = dict(scenario_summary(left)), dict(scenario_summary(right))
    lines = ["[b]Parameters[/]"]
    for key in dict.fromkeys([*a, *b]):
        va, vb = a.get(key, "—"), b.get(key, "—")
        line = f"{key:10s} {escape(_cut(va, width)):{width}s} {escape(_cut(vb, width))}"
        lines.append(f"[b]{line}[/]" if va != vb else f"[$text-muted]{line}[/]")
    return "\n".join(lines)


class CompareView(VerticalScroll):
    DEFAULT_CSS = """
    CompareView { padding: 0 1; }
    CompareView #compare-pick { height: 1; margin-bottom: 1; }
    CompareView Select { width: 1fr; margin-right: 1; }
    CompareView #compare-message { margin-bottom: 1; }
    """

    def __init__(self, refs: list[str], overrides: dict, **kwargs) -> None:
        super().__init__(**kwargs)
        self.refs, self.overrides = refs, overrides

    def compose(self) -> ComposeResult:
        options = [(r, r) for r in self.refs]
        with Horizontal(id="compare-pick"):
            yield Select(options, prompt="scenario A", compact=True, id="compare-a")
            yield Select(options, prompt="scenario B", compact=True, id="compare-b")
        yield Static("Choose scenarios A and B, then press [b]r[/] to simulate both.", id="compare-message")
        yield Static("", id="compare-table")

    def set_refs(self, refs: list[str]) -> None:
        options = [(r, r) for r in refs]
        for sel in self.query(Select):
            value = sel.value
            sel.set_options(options)
            if value in refs:
                sel.value = value
        self.refs = refs

    def preselect(self, a: str, b: str | None = None) -> None:
        """A: the scenario last run; B: the next one in the list, unless already chosen."""
        if a not in self.refs:  # a file opened in the picker after start-up
            self.set_refs([*self.refs, a])
        sel_a, sel_b = self.query_one("#compare-a", Select), self.query_one("#compare-b", Select)
        if sel_a.is_blank():
            sel_a.value = a
        if sel_b.is_blank():
            others = [r for r in self.refs if r != a]
            sel_b.value = b if b is not None else (others[0] if others else a)

    def requests(self) -> tuple[RunRequest, RunRequest] | None:
        a, b = self.query_one("#compare-a", Select), self.query_one("#compare-b", Select)
        if a.is_blank() or b.is_blank():
            self.message("[$error]Choose both scenarios first.[/]")
            return None
        return RunRequest(str(a.value), dict(self.overrides)), RunRequest(str(b.value), dict(self.overrides))

    def message(self, markup: str) -> None:
        self.query_one("#compare-message", Static).update(markup)

    def show(self, left_label: str, left: dict, right_label: str, right: dict) -> None:
        self.message(f"[b]A[/] {escape(left_label)}  ·  [b]B[/] {escape(right_label)}")
        self.query_one("#compare-table", Static).update(
            comparison_markup(compare(left, right), "A", "B", width=14) + "\n\n"
            + parameters_markup(left["scenario"], right["scenario"]))

    @on(Select.Changed)
    def _changed(self) -> None:
        self.query_one("#compare-table", Static).update("")
        self.message("Press [b]r[/] to simulate A and B.")
