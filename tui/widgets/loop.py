"""Tab 2: the RL loop drawn as its links, each with critical-path share and load.

The binding link (largest share of the critical path) is drawn reversed, so it stands out in
any theme without relying on one colour; the diagnosis line says what that means.
"""

from __future__ import annotations

from typing import Any

from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Static

from tui.figures import LINK_TITLE, LinkFigure, diagnosis, link_figures, pct

BAR = 12
NO_RUN = "No run yet: pick a scenario in [b]1 Scenarios[/] and press enter."

# What flows out of each link to the next one (drawn on the arrow below it).
FLOWS_OUT = {
    "rollout": "trajectories",
    "tools": "trajectories with tool replies",
    "reward": "scored groups",
    "optimization": "new weights",
    "switch": "trainer → engines",
}


def bar(fraction: float | None, style: str) -> str:
    if fraction is None:
        return f"[$text-muted]{'·' * BAR}[/]"
    n = max(0, min(BAR, round(fraction * BAR)))
    return f"[{style}]{'█' * n}[/][$text-muted]{'░' * (BAR - n)}[/]"


def link_line(prefix: str, f: LinkFigure) -> str:
    name = f"{LINK_TITLE[f.link]:13s}"
    name = f"[b reverse]{name}[/]" if f.binding else name
    style = "$error" if f.saturated else ("$warning" if f.binding else "$accent")
    flag = ""
    if f.binding:
        flag = "  [b]◄ binds, saturated[/]" if f.saturated else "  [b]◄ binds[/]"
    elif f.binds:
        flag = "  binds, saturated" if f.saturated else "  binds"
    return (f"{prefix}{name} {bar(f.critical_path_share, style)} {pct(f.critical_path_share):>4s}  "
            f"{bar(f.utilization, style)} {pct(f.utilization):>4s}{flag}")


def loop_markup(data: dict[str, Any]) -> str:
    sc, th = data["scenario"], data["throughput"]
    gpus = sum(data["gpus"].values())
    figures = link_figures(data)
    in_loop = [f for f in figures if f.link != "evaluation"]
    beside = [f for f in figures if f.link == "evaluation"]
    a = sc["algorithm"]
    lines = [
        f"[b]{escape(sc['name'])}[/] · {sc['placement']['mode']} · {gpus} GPUs",
        f"step {data['step_time_s']:,.1f} s · {th['tokens_per_s']:,.0f} tokens/s · "
        f"{th['trajectories_per_hour']:,.0f} trajectories/h",
        f"[$text-muted]{'':18s}{'critical path':<19s}{'load'}[/]",
        f"  prompts        {a['prompts_per_step']} × {a['responses_per_prompt']} responses per step",
        "  ┌─▼",
    ]
    for i, f in enumerate(in_loop):
        last = i == len(in_loop) - 1
        lines.append(link_line("  └─" if last else "  │ ", f))
        if not last:
            flow = FLOWS_OUT.get(f.link, "")
            lines.append(f"  │   ▼ [$text-muted]{flow}[/]" if flow else "  │   ▼")
    lines.append("    [$text-muted](back to rollout: the engines generate with the new weights)[/]")
    if beside:
        lines.append(link_line("    ", beside[0]) + "  [$text-muted]beside the loop[/]")
    lines += ["", f"[b]Diagnosis:[/] {escape(diagnosis(data))}"]
    return "\n".join(lines)


class LoopView(VerticalScroll):
    DEFAULT_CSS = """
    LoopView { padding: 0 1; }
    """

    def compose(self):
        yield Static(NO_RUN, id="loop-text")

    def show(self, data: dict[str, Any] | None) -> None:
        self.query_one("#loop-text", Static).update(loop_markup(data) if data else NO_RUN)
