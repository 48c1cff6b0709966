"""Modal screens: the help (?) and the export form (x)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from twin.errors import InputError
from tui.export import DEFAULT_REPORT, DEFAULT_TRACE, export

HELP = """\
[b]rltwin[/]: which link of the RL loop binds, and what a change would buy.

[b]Keys[/]
  1…7      tabs: Scenarios, Loop, Verdict, Replay, What-if, Compare, Plan
           (in a text field or the what-if form: esc first)
  enter r  run the highlighted scenario (1), the what-if (5), A and B (6),
           the plan (7); enter on a plan's row opens it in the Loop tab
  p        plan: the best use of a GPU budget, and its scaling curve
  esc      cancel the simulation in progress; leave a field or the form
  ← → h l  replay: previous / next step (home, end: first, last)
  g        verdict: measure the marginal gain of each pressure
  x        export the report JSON and the Chrome trace (Perfetto)
  t        light / dark theme     ?  this help     q  quit

[b]Reading the verdict[/]
  critical path  share of the step the trainer spent waiting on the link
  binds          on the critical path for 5% of the step or more;
                 [b reverse]reversed[/]: the binding link, the largest share
  load           share of its capacity a link used while it held its GPUs
  busy           share of the run a resource worked (Replay, Compare)
  saturated      binds at 85% load or more: more of it buys experience.
                 Binds but not saturated: it waits more than it works
                 (a long tail, a queue); the marginal gain says what
                 more of it would buy.
  marginal gain  change in useful trajectories/h with one pressure raised;
                 "within noise" when other seeds move it as much

[b]Replay[/]   top: busy fraction per role over the run; ▔ marks the step.
         Below: each resource during the step, ░▒▓█ by how busy,
         coloured by the activity that kept it busiest.
[b]What-if[/]  only the fields you change are applied; a bad value is
         explained under the form. Δ: ✓ / ✗ judge step time and useful
         traj/h only (≈: under 1%); shares and busy change in points.
         A scenario run before in this session is not re-simulated.
                                               esc or ? closes this help."""


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll { width: 78; max-height: 22; height: auto;
                                border: round $accent; padding: 0 1; background: $surface; }
    """
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP, id="help-text")


class ExportScreen(ModalScreen[list[str] | None]):
    """Two paths (report, trace); enter writes both; an empty path skips that file."""

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen Vertical { width: 70; height: auto; border: round $accent; padding: 0 1;
                            background: $surface; }
    ExportScreen Input { margin-bottom: 1; }
    """
    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, report, label: str) -> None:
        super().__init__()
        self.report, self.label = report, label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]Export[/] {escape(self.label)}")
            yield Label("Report JSON (as twin run --json):")
            yield Input(DEFAULT_REPORT, compact=True, id="export-report")
            yield Label("Chrome trace (open in Perfetto):")
            yield Input(DEFAULT_TRACE, compact=True, id="export-trace")
            yield Static("[$text-muted]enter: write · esc: cancel · empty path: skip[/]", id="export-message")

    @on(Input.Submitted)
    def _write(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            written = export(self.report, self.query_one("#export-report", Input).value,
                             self.query_one("#export-trace", Input).value)
        except InputError as exc:
            self.query_one("#export-message", Static).update(f"[$error]{escape(exc.message)}[/]")
            return
        self.dismiss(written)
