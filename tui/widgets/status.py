"""The run status line under the tabs: what is simulating, how far, how to cancel."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.markup import escape
from textual.widgets import ProgressBar, Static


class RunStatus(Horizontal):
    """One line: a message and, while a simulation runs, a progress bar of its steps."""

    DEFAULT_CSS = """
    RunStatus { height: 1; padding: 0 1; background: $panel; }
    RunStatus #status-text { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    RunStatus ProgressBar { width: 30; display: none; }
    RunStatus.-running ProgressBar { display: block; }
    RunStatus .bar--bar { width: 20; }
    """

    def compose(self) -> ComposeResult:
        yield Static("Pick a scenario and press enter to simulate it.", id="status-text")
        # No ETA: it depends on the machine and would make snapshots differ run to run.
        yield ProgressBar(show_eta=False, id="status-bar")

    @property
    def text(self) -> str:
        return self.query_one("#status-text", Static).render().plain

    def _say(self, markup: str) -> None:
        self.query_one("#status-text", Static).update(markup)

    def started(self, label: str, total: int | None) -> None:
        self.add_class("-running")
        self.query_one(ProgressBar).update(total=total, progress=0)
        self._say(f"Simulating {escape(label)} [$text-muted](esc cancels)[/]")

    def progressed(self, label: str, done: int, total: int, simulated_s: float) -> None:
        self.query_one(ProgressBar).update(total=total, progress=done)
        self._say(f"Simulating {escape(label)}: step {done}/{total}, "
                  f"{simulated_s / 3600:.2f} h simulated [$text-muted](esc cancels)[/]")

    def counted(self, label: str, what: str, done: int, total: int) -> None:
        """A batch of simulations (the planner's): ``done`` of ``total``."""
        self.query_one(ProgressBar).update(total=total, progress=done)
        self._say(f"{escape(label)}: {escape(what)} {done}/{total} [$text-muted](esc cancels)[/]")

    def cancelling(self) -> None:
        self._say("Cancelling: the simulation stops at the end of its current step…")

    def finished(self, markup: str) -> None:
        self.remove_class("-running")
        self._say(markup)

    def failed(self, message: str) -> None:
        self.remove_class("-running")
        self._say(f"[b $error]Error:[/] {escape(message)}")
