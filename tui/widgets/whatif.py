"""Tab 5: what-if — edit the parameters people change first, re-run, see the deltas.

Only the fields the user changed become overrides: leaving the GPU counts alone while
switching colocated → disaggregated lets the scenario split the cluster as it would by
default, instead of asking for the whole cluster twice.
"""

from __future__ import annotations

import copy

from dataclasses import dataclass
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.binding import Binding
from textual.markup import escape
from textual.widgets import Input, Label, Select, Static

from tui.figures import compare
from tui.widgets.compare import Fitted, comparison_markup

MODES = ("colocated", "disaggregated", "async")


@dataclass(frozen=True)
class Field:
    path: str      # the scenario field, as for --set
    label: str

    def current(self, scenario: dict[str, Any]) -> Any:
        node: Any = scenario
        for part in self.path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node


FIELDS = (
    Field("placement.rollout.gpus", "rollout GPUs"),
    Field("placement.trainer.gpus", "trainer GPUs"),
    Field("reward.workers", "reward workers"),
    Field("algorithm.staleness", "staleness"),
    Field("algorithm.prompts_per_step", "prompts/step"),
    Field("algorithm.responses_per_prompt", "responses/prompt"),
    Field("workload.response_tokens.max", "max response tok"),
    Field("placement.mode", "mode"),
)
BY_PATH = {f.path: f for f in FIELDS}


class FormError(ValueError):
    def __init__(self, field: Field, message: str) -> None:
        super().__init__(f"{field.label}: {message}")
        self.field = field


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def form_overrides(typed: dict[str, str], scenario: dict[str, Any]) -> dict[str, Any]:
    """The overrides the form asks for: the fields whose text differs from the baseline.

    Raises :class:`FormError` for text that is not a whole number (the scenario's own
    validation judges the numbers themselves, with its allowed ranges).
    """
    out: dict[str, Any] = {}
    for path, raw in typed.items():
        field, raw = BY_PATH[path], raw.strip()
        if raw == "" or raw == _text(field.current(scenario)):
            continue
        if path == "placement.mode":
            out[path] = raw
            continue
        try:
            out[path] = int(raw.replace(",", "").replace("_", ""))
        except ValueError:
            raise FormError(field, f"{raw!r} is not a whole number") from None
    return out


def form_scenario(report: dict[str, Any]) -> dict[str, Any]:
    """The scenario as the form shows it: the GPU counts a user left to the deployment mode
    appear as the run resolved them (the report's ``plan``); editing one sets it."""
    scenario = copy.deepcopy(report["scenario"])
    plan = report.get("plan") or {}
    for role in ("rollout", "trainer"):
        placed = scenario["placement"][role]
        if placed.get("gpus") is None and f"{role}_gpus" in plan:
            placed["gpus"] = plan[f"{role}_gpus"]
    return scenario


def scenario_overrides(changes: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    """Form changes → scenario overrides. A distribution's cap is sent with the whole
    resolved distribution: a scenario that relies on the default response lengths has no
    ``workload.response_tokens`` of its own for a lone ``max`` to land in."""
    out = dict(changes)
    if "workload.response_tokens.max" in out:
        out["workload.response_tokens"] = {**scenario["workload"]["response_tokens"],
                                           "max": out.pop("workload.response_tokens.max")}
    return out


class ModeSelect(Select, inherit_bindings=False):
    """The mode's list: enter runs the form, as in every field of it (the hint says so);
    space or an arrow opens the list."""

    BINDINGS = [
        Binding("down,space,up", "show_overlay", "Show menu", show=False),
        Binding("enter", "run_form", "Run", show=False),
    ]

    def action_run_form(self) -> None:
        form = next((a for a in self.ancestors if isinstance(a, WhatIfForm)), None)
        if form is not None:
            form.submit()


class WhatIfForm(Vertical):
    """The form (left), the baseline beside the what-if result (right), a message below."""

    DEFAULT_CSS = """
    WhatIfForm #whatif-panes { height: auto; max-height: 13; }
    WhatIfForm #whatif-left { width: 33; height: auto; }
    WhatIfForm .whatif-row { height: 1; }
    WhatIfForm .whatif-row Label { width: 17; }
    WhatIfForm .whatif-row Input, WhatIfForm .whatif-row Select { width: 16; }
    WhatIfForm #whatif-hint { margin-top: 1; }
    WhatIfForm #whatif-message { margin-top: 1; padding: 0 1; }
    WhatIfForm #whatif-right { width: 1fr; height: auto; max-height: 13; padding: 0 1; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.scenario: dict[str, Any] | None = None
        self.changes: dict[str, Any] = {}  # the form fields behind the last what-if run

    def compose(self) -> ComposeResult:
        with Horizontal(id="whatif-panes"):
            with Vertical(id="whatif-left"):
                for f in FIELDS:
                    with Horizontal(classes="whatif-row"):
                        yield Label(f.label)
                        if f.path == "placement.mode":
                            yield ModeSelect([(m, m) for m in MODES], allow_blank=False, compact=True,
                                             id="whatif-mode")
                        else:
                            yield Input(compact=True, id=_id(f), select_on_focus=True)
                yield Static("[$text-muted]tab: next field · enter: run\nspace: open the mode list\n"
                             "esc: leave the form (keys 1–6)[/]",
                             id="whatif-hint")
            with VerticalScroll(id="whatif-right"):
                yield Fitted("Run a scenario first; its values fill this form.", id="whatif-result")
        yield Static("", id="whatif-message")

    def fill(self, scenario: dict[str, Any]) -> None:
        """Fill the form from the baseline's resolved scenario and clear the last result."""
        self.scenario = scenario
        for f in FIELDS:
            value = f.current(scenario)
            if f.path == "placement.mode":
                self.query_one("#whatif-mode", Select).value = value
                continue
            box = self.query_one("#" + _id(f), Input)
            box.value = _text(value)
            # A rule or model reward has no worker pool: say so rather than accept a number.
            box.disabled = f.path == "reward.workers" and value is None
            box.placeholder = f"n/a: {scenario['reward']['kind']}" if box.disabled else ""
        self.say("")
        self.query_one("#whatif-result", Static).update(
            "Edit a value and press enter: the new result appears beside the baseline.")

    def typed(self) -> dict[str, str]:
        out = {f.path: self.query_one("#" + _id(f), Input).value for f in FIELDS if f.path != "placement.mode"}
        out["placement.mode"] = str(self.query_one("#whatif-mode", Select).value)
        return out

    def say(self, markup: str) -> None:
        self.query_one("#whatif-message", Static).update(markup)

    def error(self, message: str) -> None:
        self.say(f"[b $error]✗[/] [$error]{escape(message)}[/]")

    def submit(self) -> None:
        if self.scenario is None:
            self.error("run a scenario first (tab 1)")
            return
        try:
            overrides = form_overrides(self.typed(), self.scenario)
        except FormError as exc:
            self.error(str(exc))
            return
        if not overrides:
            self.say("[$text-muted]Nothing changed: edit a value first.[/]")
            return
        self.changes = overrides
        self.app.run_whatif(scenario_overrides(overrides, self.scenario))

    def show(self, baseline: dict[str, Any], whatif: dict[str, Any]) -> None:
        changes = ", ".join(f"{BY_PATH[k].label} {_text(BY_PATH[k].current(form_scenario(baseline)))}→{v}"
                            for k, v in self.changes.items())
        self.say(f"[$success]✓[/] {escape(changes)}")
        rows = compare(baseline, whatif)
        self.query_one("#whatif-result", Fitted).fit(
            lambda width: comparison_markup(rows, "baseline", "what-if", width))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.submit()


def _id(field: Field) -> str:
    return "whatif-" + field.path.replace(".", "-")
