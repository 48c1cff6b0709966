"""Tab 1: pick a built-in scenario or a YAML file, see its key parameters, run it."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.markup import escape
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from twin.config.scenario import resolved_dict
from twin.config.load import scenario_path
from twin.errors import InputError
from tui.figures import scenario_summary
from tui.jobs import RunRequest, load


class ScenarioPicker(Horizontal):
    """A list of scenarios (built-ins, then files) beside the parameters of the highlighted one.

    ``overrides`` (from ``--set`` on the command line) apply to whichever scenario is run, as
    they would with ``twin run``.
    """

    DEFAULT_CSS = """
    ScenarioPicker #picker-left { width: 30; }
    ScenarioPicker OptionList { height: 1fr; }
    ScenarioPicker #picker-open { margin-top: 1; }
    ScenarioPicker #picker-details { width: 1fr; padding: 0 1; }
    """

    BINDINGS = [("o", "open_file", "Open file")]

    class Opened(Message):
        """A scenario file opened with ``o`` joined the list: the other tabs offer it too."""

        def __init__(self, ref: str) -> None:
            super().__init__()
            self.ref = ref

    def __init__(self, refs: list[str], overrides: dict, selected: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.refs = list(refs)
        self.overrides = overrides
        self.selected = selected

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-left"):
            yield OptionList(*(Option(self._title(r), id=r) for r in self.refs), id="picker-list")
            yield Input(placeholder="open a YAML file: path, enter", compact=True, id="picker-open")
        with VerticalScroll(id="picker-details"):
            yield Static(id="picker-params")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        index = self.refs.index(self.selected) if self.selected in self.refs else 0
        options.highlighted = index
        self._show(self.refs[index])

    def action_open_file(self) -> None:
        self.query_one("#picker-open", Input).focus()

    @staticmethod
    def _title(ref: str) -> str:
        return escape(Path(ref).name if ref.endswith((".yaml", ".yml")) else ref)

    @property
    def highlighted(self) -> str:
        options = self.query_one(OptionList)
        return self.refs[options.highlighted or 0]

    def request(self) -> RunRequest:
        return RunRequest(self.highlighted, dict(self.overrides))

    def _show(self, ref: str) -> None:
        params = self.query_one("#picker-params", Static)
        try:
            scenario = load(RunRequest(ref, dict(self.overrides)))
        except InputError as exc:
            params.update(f"[b]{escape(ref)}[/]\n\n[$error]{escape(exc.message)}[/]")
            return
        data = resolved_dict(scenario)
        lines = [f"[b]{escape(data['name'])}[/]"]
        if data.get("description"):
            lines.append(f"[$text-muted]{escape(' '.join(data['description'].split()))}[/]")
        lines.append("")
        lines += [f"[b]{label:12s}[/] {escape(value)}" for label, value in scenario_summary(data)]
        if self.overrides:
            lines += ["", "[$text-muted]with --set " + escape(", ".join(
                f"{k}={v}" for k, v in self.overrides.items())) + "[/]"]
        lines += ["", "[$text-muted]enter: simulate · o: open a file[/]"]
        params.update("\n".join(lines))

    @on(OptionList.OptionHighlighted)
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show(self.refs[event.option_index])

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.app.run_baseline(self.request())

    @on(Input.Submitted, "#picker-open")
    def _open(self, event: Input.Submitted) -> None:
        event.stop()
        path = event.value.strip()
        if not path:
            return
        try:
            scenario_path(path)
        except InputError as exc:
            self.query_one("#picker-params", Static).update(f"[$error]{escape(exc.message)}[/]")
            return
        if path not in self.refs:
            self.refs.append(path)
            self.query_one(OptionList).add_option(Option(self._title(path), id=path))
            self.post_message(self.Opened(path))
        options = self.query_one(OptionList)
        options.highlighted = self.refs.index(path)
        options.focus()
        event.input.value = ""
