"""Report dict → the figures the screens show (plain data and strings, no Textual).

Every screen reads the JSON report of ``twin.simulate`` (``Report.to_dict()``), so what the TUI
shows is what ``twin run --json`` writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twin.analysis.render import verdict_line
from twin.analysis.report import LinkRow
from twin.sim.links import LINKS

LINK_TITLE = {name: link.title for name, link in LINKS.items()}


def pct(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x * 100:.{digits}f}%"


@dataclass(frozen=True)
class LinkFigure:
    link: str
    utilization: float | None
    critical_path_share: float
    binds: bool
    saturated: bool
    binding: bool  # the link with the largest share of the critical path


def link_figures(data: dict[str, Any]) -> list[LinkFigure]:
    """Every link of the loop (evaluation last) with its load and critical-path share.

    Links the scenario does not have (tools without multi-turn, switch when not colocated)
    are left out rather than shown as zeros that read like measurements.
    """
    rows = {r["link"]: r for r in data["bottleneck"]}
    top = data["bottleneck"][0]["link"] if data["bottleneck"] else None
    sc = data["scenario"]
    present = {
        "rollout": True,
        "tools": sc["workload"].get("multi_turn") is not None or "tools" in rows,
        "reward": True,
        "optimization": True,
        "switch": sc["placement"]["mode"] == "colocated" or "switch" in rows,
        "weight_sync": True,
        "evaluation": sc["evaluation"]["every_steps"] > 0 or "evaluation" in rows,
    }
    out = []
    for link in LINKS:
        if not present[link]:
            continue
        row = rows.get(link)
        util = row["load"] if row else data["utilization"].get(LINKS[link].role or "")
        out.append(LinkFigure(
            link=link, utilization=util,
            critical_path_share=row["critical_path_share"] if row else 0.0,
            binds=bool(row and row["binds"]), saturated=bool(row and row["saturated"]),
            binding=link == top,
        ))
    return out


def diagnosis(data: dict[str, Any]) -> str:
    """The verdict's one-liner when the report has one, else ``twin run``'s line."""
    verdict = data.get("verdict")
    if isinstance(verdict, dict) and isinstance(verdict.get("diagnosis"), str):
        return verdict["diagnosis"]
    return verdict_line([LinkRow.model_validate(row) for row in data["bottleneck"]],
                        whatif_hint="press g in the Verdict tab to measure what more of it buys")


def marginal_gains(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Ranked rows ``{pressure, description, useful_trajectories_per_hour, gain}`` when the
    report carries the verdict's sensitivity, else None (the verdict module may not exist)."""
    verdict = data.get("verdict")
    candidates = [verdict] if isinstance(verdict, list) else (
        list(verdict.values()) if isinstance(verdict, dict) else [])
    for value in candidates:
        if isinstance(value, list) and value and all(isinstance(r, dict) and "pressure" in r for r in value):
            return value
    return None


def gain_text(gain: float | None) -> str:
    """A marginal gain as a relative change (the verdict reports 0.25 for +25%)."""
    return "—" if gain is None else f"{gain * 100:+.0f}%"


def scenario_summary(sc: dict[str, Any]) -> list[tuple[str, str]]:
    """The parameters people look at first, from a resolved scenario dict."""
    c, p, a, w, r = sc["cluster"], sc["placement"], sc["algorithm"], sc["workload"], sc["reward"]
    gpu = str(c["gpu"]).split(" ")[0]
    rows = [
        ("model", str(sc["model"]["name"])),
        ("cluster", f"{c['nodes']} × {c['gpus_per_node']} {gpu} = {c['nodes'] * c['gpus_per_node']} GPUs"),
        ("mode", p["mode"]),
        ("rollout", f"{_pool_gpus(p['rollout'].get('gpus'), c)}, tp {p['rollout']['tp']}, "
                    f"{p['rollout']['engine']} batching"),
        ("trainer", f"{_pool_gpus(p['trainer'].get('gpus'), c)}, ZeRO-{p['trainer']['zero_stage']}"),
        ("algorithm", f"{a['name']}: {a['prompts_per_step']} prompts × {a['responses_per_prompt']} responses"),
        ("staleness", str(a["staleness"]) + (", partial rollout" if a.get("partial_rollout") else "")),
        ("response tok", distribution_text(w["response_tokens"])),
        ("reward", r["kind"] + (f", {r['workers']} workers" if "workers" in r else "")),
    ]
    if w.get("multi_turn"):
        mt = w["multi_turn"]
        rows.append(("tool calls", f"{distribution_text(mt['tool_calls'], kind=False)} per trajectory, "
                                   f"{distribution_text(mt['tool_latency_s'], kind=False)} s each"))
    rows.append(("run", f"{sc['run']['steps']} steps, seed {sc['run']['seed']}"))
    return rows


def _pool_gpus(gpus: int | None, cluster: dict[str, Any]) -> str:
    """A pool's GPUs; None where rollout and trainer share the cluster's (colocated)."""
    if gpus is None:
        return f"{cluster['nodes'] * cluster['gpus_per_node']} GPUs, shared"
    return f"{gpus} GPUs"


def distribution_text(d: dict[str, Any], kind: bool = True) -> str:
    """'median 700, max 4,096 (lognormal)': the centre and the cap people tune first."""
    parts = [f"{key} {_num(d[key])}" for key in ("value", "median", "mean") if key in d][:1]
    if not parts and "low" in d:
        parts = [f"{_num(d['low'])}–{_num(d['high'])}"]
    if not parts and d.get("values"):
        parts = [f"{_num(min(d['values']))}–{_num(max(d['values']))}"]
    if d.get("max"):
        parts.append(f"max {_num(d['max'])}")
    text = ", ".join(parts)
    return text if not kind or d.get("kind") == "fixed" else f"{text} ({d.get('kind')})".strip()


def _num(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.3g}"


# --- side-by-side comparison (what-if and compare) -------------------------------------

@dataclass(frozen=True)
class Metric:
    label: str
    value: Callable[[dict[str, Any]], Any]
    fmt: Callable[[Any], str]
    # "higher" or "lower" for the objective (useful experience per hour, step time), the
    # only changes judged ✓ / ✗; None for figures that inform (tokens/s, GPUs, how busy a
    # pool is): a busier trainer is not better in itself.
    better: str | None = None
    points: bool = False  # a fraction: its change is shown in percentage points


def _util(role: str) -> Callable[[dict[str, Any]], float | None]:
    return lambda d: d["utilization"].get(role)


def _binding_share(d: dict[str, Any]) -> float | None:
    return d["bottleneck"][0]["critical_path_share"] if d["bottleneck"] else None


METRICS = (
    Metric("step time", lambda d: d["step_time_s"], lambda v: f"{v:,.1f} s", "lower"),
    Metric("tokens/s", lambda d: d["throughput"]["tokens_per_s"], lambda v: f"{v:,.0f}"),
    Metric("tokens/s/GPU", lambda d: d["throughput"]["tokens_per_s_per_gpu"], lambda v: f"{v:,.0f}"),
    Metric("traj/h", lambda d: d["throughput"]["trajectories_per_hour"], lambda v: f"{v:,.0f}"),
    Metric("useful traj/h", lambda d: d["throughput"].get("useful_trajectories_per_hour"),
           lambda v: f"{v:,.0f}", "higher"),
    Metric("GPUs", lambda d: sum(d["gpus"].values()), lambda v: f"{v}"),
    Metric("binding link", lambda d: d["bottleneck"][0]["link"] if d["bottleneck"] else None,
           lambda v: LINK_TITLE.get(v, str(v))),
    Metric("binding share", _binding_share, pct, points=True),
    Metric("rollout busy", _util("rollout"), pct, points=True),
    Metric("trainer busy", _util("trainer"), pct, points=True),
)

# A relative change of the objective smaller than this is within the simulator's noise (a
# different seed moves a step time by about as much): marked ≈, neither better nor worse.
NOISE = 0.01


@dataclass(frozen=True)
class ComparedRow:
    label: str
    left: str
    right: str
    delta: str
    verdict: str  # "better", "worse", "same" (within noise) or "" (not judged): the screens mark by it


def points_text(a: float, b: float) -> str:
    """The change of a fraction in percentage points, between the percentages as shown:
    0.51 → 0.56 is '+5 pts'; '' when both show the same."""
    d = int(pct(b).rstrip("%")) - int(pct(a).rstrip("%"))
    return "" if d == 0 else f"{d:+d} pt" if abs(d) == 1 else f"{d:+d} pts"


def compare(left: dict[str, Any], right: dict[str, Any]) -> list[ComparedRow]:
    """Each headline metric of two reports with the change from left to right: relative
    (%), or in points for fractions. Only the objective is judged, and a change under
    :data:`NOISE` is marked as the same."""
    rows = []
    for m in METRICS:
        a, b = m.value(left), m.value(right)
        fa = m.fmt(a) if a is not None else "—"
        fb = m.fmt(b) if b is not None else "—"
        delta, verdict = "", ""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b:
                if m.points:
                    delta = points_text(a, b)
                else:
                    delta = f"{(b - a) / a * 100:+.1f}%" if a else "new"
                if m.better and a:
                    if abs(b - a) / abs(a) < NOISE:
                        verdict = "same"
                    else:
                        verdict = "better" if (b > a) == (m.better == "higher") else "worse"
        elif a != b:
            delta = "changed"
        rows.append(ComparedRow(m.label, fa, fb, delta, verdict))
    return rows
