"""Tab 6: two scenarios side by side — headline figures with deltas, then parameters.

:func:`comparison_markup` is shared with the what-if tab (baseline beside the edit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.markup import escape
from textual.widgets import Select, Static

from tui.figures import ComparedRow, compare, scenario_summary
from tui.jobs import RunRequest

MARK = {"better": ("$success", " ✓"), "worse": ("$error", " ✗"), "same": ("$text-muted", " ≈"), "": ("", "")}


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def comparison_markup(rows: list[ComparedRow], left: str, right: str, width: int = 0) -> str:
    """A table: metric, left, right and the change, the objective marked ✓ better, ✗ worse or
    ≈ within noise (the marks read without colour; the colours follow the theme).

    The two value columns are as wide as their longest figure; ``width`` (the columns the
    table has; 0: unknown) narrows them only when the table would not fit."""
    label_w = max(len(r.label) for r in rows)
    delta_w = max(len(r.delta) + len(MARK[r.verdict][1]) for r in rows)
    col = max(len(left), len(right), *(len(r.left) for r in rows), *(len(r.right) for r in rows))
    if width > 0:
        col = max(6, min(col, (width - label_w - 4 - delta_w) // 2))
    lines = [f"[b]{'':{label_w}s} {escape(_cut(left, col)):>{col}s} {escape(_cut(right, col)):>{col}s}  Δ[/]"]
    for r in rows:
        style, mark = MARK[r.verdict]
        delta = f"[{style}]{r.delta}{mark}[/]" if style else r.delta
        lines.append(f"{r.label:{label_w}s} {escape(_cut(r.left, col)):>{col}s} "
                     f"{escape(_cut(r.right, col)):>{col}s}  {delta}")
    return "\n".join(lines)


def _merged(a: list[str], b: list[str]) -> list[str]:
    """The keys of both lists in their order: a key only ``b`` has follows its predecessor
    in ``b`` (the tool calls of a multi-turn scenario stay beside the reward, not last)."""
    out = list(a)
    for i, key in enumerate(b):
        if key not in out:
            out.insert(out.index(b[i - 1]) + 1 if i else 0, key)
    return out


def parameters_markup(left: dict, right: dict, width: int = 0) -> str:
    """Key parameters of two resolved scenarios, rows that differ in bold. Each column is as
    wide as its longest value; ``width`` (0: unknown) cuts them only when both do not fit."""
    a, b = dict(scenario_summary(left)), dict(scenario_summary(right))
    keys = _merged(list(a), list(b))
    key_w = max(len(k) for k in keys)
    va = {k: a.get(k, "—") for k in keys}
    vb = {k: b.get(k, "—") for k in keys}
    wa, wb = max(len(v) for v in va.values()), max(len(v) for v in vb.values())
    room = width - key_w - 2  # the two value columns and the space between them
    if width > 0 and wa + wb > room:
        half = room // 2
        if wa <= half:
            wb = room - wa
        elif wb <= half:
            wa = room - wb
        else:
            wa, wb = half, room - half
        wa, wb = max(8, wa), max(8, wb)
    lines = ["[b]Parameters[/]"]
    for key in keys:
        line = f"{key:{key_w}s} {escape(_cut(va[key], wa)):{wa}s} {escape(_cut(vb[key], wb))}".rstrip()
        lines.append(f"[b]{line}[/]" if va[key] != vb[key] else f"[$text-muted]{line}[/]")
    return "\n".join(lines)


class Fitted(Static):
    """A Static whose markup is made for its width (:meth:`fit`), and made again whenever
    the width changes: a table uses a wide terminal, and still fits a narrow one."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._make: Callable[[int], str] | None = None

    def fit(self, make: Callable[[int], str]) -> None:
        self._make = make
        self._refit()

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        self._make = None
        super().update(content, layout=layout)

    def on_resize(self) -> None:
        self._refit()

    def _refit(self) -> None:
        if self._make is not None:
            # The width is 0 until the widget is first laid out (a tab not shown yet): then
            # the columns take their natural width until the resize that follows.
            Static.update(self, self._make(self.size.width))


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
        self.a_chosen = False  # A picked by hand: it no longer follows the last run

    def compose(self) -> ComposeResult:
        options = [(r, r) for r in self.refs]
        with Horizontal(id="compare-pick"):
            yield Select(options, prompt="scenario A", compact=True, id="compare-a")
            yield Select(options, prompt="scenario B", compact=True, id="compare-b")
        yield Static("Choose scenarios A and B, then press [b]r[/] to simulate both.", id="compare-message")
        yield Fitted("", id="compare-table")

    def set_refs(self, refs: list[str]) -> None:
        """Offer ``refs`` in both lists, keeping what is chosen and the table on screen."""
        options = [(r, r) for r in refs]
        with self.prevent(Select.Changed):  # not a change of A or B: the table stays
            for sel in self.query(Select):
                value = sel.value
                sel.set_options(options)
                if value in refs:
                    sel.value = value
        self.refs = list(refs)

    def preselect(self, a: str, b: str | None = None) -> None:
        """A: the scenario last run, after every run until A is chosen by hand (docs/tui.md);
        B: the next one in the list, unless already chosen."""
        if a not in self.refs:  # a file opened in the picker after start-up
            self.set_refs([*self.refs, a])
        sel_a, sel_b = self.query_one("#compare-a", Select), self.query_one("#compare-b", Select)
        before = (sel_a.value, sel_b.value)
        with self.prevent(Select.Changed):  # not the user's choice: A keeps following the runs
            if sel_a.is_blank() or not self.a_chosen:
                sel_a.value = a
            if sel_b.is_blank():
                others = [r for r in self.refs if r != a]
                sel_b.value = b if b is not None else (others[0] if others else a)
        if (sel_a.value, sel_b.value) != before:
            self._cleared()

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
        rows = compare(left, right)
        self.query_one("#compare-table", Fitted).fit(
            lambda width: comparison_markup(rows, "A", "B", width) + "\n\n"
            + parameters_markup(left["scenario"], right["scenario"], width))

    @on(Select.Changed)
    def _changed(self, event: Select.Changed) -> None:
        if event.select.id == "compare-a":
            self.a_chosen = True
        self._cleared()

    def _cleared(self) -> None:
        self.query_one("#compare-table", Static).update("")
        self.message("Press [b]r[/] to simulate A and B.")
