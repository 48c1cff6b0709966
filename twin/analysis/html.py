"""Reports as one self-contained HTML page: charts beside the verdict and the assumptions.

``twin run/plan/scale/sweep --html PATH`` and the notebook views (``_repr_html_``) call
:func:`run_html`, :func:`plan_html`, :func:`scale_html`, :func:`sweep_html`. The charts are
drawn by matplotlib (the ``html`` extra) as inline SVG: the page holds every byte it shows —
no script, no font, no stylesheet fetched — so it opens offline, mails as one file, and a
browser has nothing to run (hence nothing to fail on the console). matplotlib rather than
Vega-Lite (altair) or plotly: those draw in the browser from ~1-4 MB of JavaScript that the
page would have to inline; static SVG is a few tens of kB, prints, and diffs. The figures are
drawn from the typed results (:class:`~twin.analysis.report.ReportData`, the studies'
results), never from the text.

The SVG is deterministic (fixed id salt, no date): the same report gives the same page.
"""

from __future__ import annotations

import html
import importlib.util
import io
from collections.abc import Iterable, Sequence
from typing import Any

from twin.errors import InputError

HTML_FIX = 'pip install ".[html]" from a clone of rltwin'

_CSS = """
.twin-report{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:0 auto;color:#1d2330}
.twin-report h1{font-size:1.4em;margin:.6em 0 .2em}.twin-report h2{font-size:1.1em;margin:1.4em 0 .4em;
border-bottom:1px solid #dde;padding-bottom:.2em}.twin-report .lead{color:#445;margin:.2em 0 1em}
.twin-report pre{background:#f6f7f9;padding:.8em;white-space:pre-wrap;font-size:12px;line-height:1.35}
.twin-report .verdict{background:#eef5ff;border-left:4px solid #3b6fd8;padding:.6em .9em;margin:1em 0}
.twin-report .caveat{background:#fff6e6;border-left:4px solid #d89b3b;padding:.6em .9em;margin:1em 0}
.twin-report table{border-collapse:collapse;font-size:13px}.twin-report td,.twin-report th{padding:2px 8px;
border-bottom:1px solid #eee;text-align:left}.twin-report svg{max-width:100%;height:auto}
"""

# One colour per link of the loop, the same in every chart of a page.
_PALETTE = ("#3b6fd8", "#e07b39", "#3aa17e", "#c84b64", "#8a63c7", "#9a7b4f", "#d36fb4", "#6b7280",
            "#b4a41f", "#1fa7b4")


def available() -> bool:
    """Whether matplotlib (the ``html`` extra) is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def require_matplotlib(option: str = "--html"):
    """matplotlib.pyplot on the headless backend, or the InputError naming the extra to install."""
    if not available():
        raise InputError(f"the HTML report draws its charts with matplotlib, which is not installed; "
                         f"install it with: {HTML_FIX}", field=option)
    import matplotlib

    matplotlib.use("Agg", force=True)  # no display: draw to memory only
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "rltwin", "svg.fonttype": "path", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _svg(fig) -> str:
    """A figure as an inline ``<svg>`` element (no XML prologue, no date: deterministic)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _colors(names: Iterable[str]) -> dict[str, str]:
    return {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(dict.fromkeys(names))}


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def fragment(title: str, lead: str, sections: Sequence[tuple[str, str]]) -> str:
    """The report as a ``<div>`` with its own style: a notebook cell shows it inline."""
    body = "".join(f"<h2>{html.escape(h)}</h2>{content}" for h, content in sections if content)
    return (f'<div class="twin-report"><style>{_CSS}</style><h1>{html.escape(title)}</h1>'
            f'<p class="lead">{html.escape(lead)}</p>{body}</div>')


def page(title: str, lead: str, sections: Sequence[tuple[str, str]]) -> str:
    """A whole HTML document around :func:`fragment`: what ``--html PATH`` writes."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title></head><body>"
            f"{fragment(title, lead, sections)}</body></html>\n")


def _assumed(data) -> str:
    """What a report's figures assumed (twin.analysis.assumptions), as the text prints it."""
    rows = data.assumptions if data is not None else []
    return _pre("\n".join(f"{a['field']} = {a['value']}: {a['note']}" for a in rows)) if rows else ""


def _caveats(trust: list[dict[str, Any]] | None) -> str:
    """The validation sources nearest to the scenario, and the twin's error there (item: trust)."""
    if not trust:
        return ""
    items = "".join(f"<li>{html.escape(t['text'])}</li>" for t in trust)
    return f'<div class="caveat"><b>How far to trust this</b><ul>{items}</ul></div>'


# ----------------------------------------------------------------------------- twin run
def _breakdown_chart(plt, breakdown: dict[str, float], step_s: float) -> str:
    items = sorted(breakdown.items(), key=lambda kv: kv[1])
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(items) + 0.9))
    colors = _colors(k for k, _ in sorted(breakdown.items()))
    ax.barh([k for k, _ in items], [v for _, v in items], color=[colors[k] for k, _ in items])
    for i, (_, v) in enumerate(items):
        ax.text(v, i, f" {v:,.1f} s ({v / (step_s or 1) * 100:.0f}%)", va="center", fontsize=8)
    ax.set_xlabel("mean seconds per step (phases may overlap in async modes)")
    ax.set_title(f"Where a step goes: step time {step_s:,.1f} s", loc="left")
    ax.margins(x=0.25)
    return _svg(fig)


def _links_chart(plt, rows) -> str:
    """Critical-path share against load for each link: a binding link at low load waits more than it works."""
    import numpy as np

    names = [r.link for r in rows]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(7, 2.8))
    ax.bar(x - 0.2, [r.critical_path_share * 100 for r in rows], 0.4, label="critical-path share", color="#3b6fd8")
    ax.bar(x + 0.2, [(r.load or 0) * 100 for r in rows], 0.4, label="load", color="#e07b39")
    for i, r in enumerate(rows):
        if r.load is None:
            ax.text(i + 0.2, 1, "no resource", rotation=90, fontsize=7, ha="center", va="bottom")
    ax.axhline(5, color="#888", lw=0.8, ls=":")
    ax.text(len(names) - 0.5, 5, " binds ≥ 5%", fontsize=7, va="bottom", ha="right", color="#666")
    ax.axhline(85, color="#c84b64", lw=0.8, ls="--")
    ax.text(len(names) - 0.5, 85, " saturated ≥ 85% load", fontsize=7, va="bottom", ha="right", color="#c84b64")
    ax.set_xticks(x, names)
    ax.set_ylim(0, 105)
    ax.set_ylabel("%")
    ax.legend(loc="upper right", fontsize=8, frameon=False, bbox_to_anchor=(1, 0.78))
    ax.set_title("Each link: its share of the critical path against its load", loc="left")
    return _svg(fig)


def engine_spans(result) -> dict[str, list[tuple[float, float, int]]]:
    """Each rollout engine's generation spans, ``(start, end, step)``, from a simulation's spans."""
    spans = result.spans
    if len(spans) == 0 or "generate" not in spans.activities:
        return {}
    gen = spans.activities.index("generate")
    out: dict[str, list[tuple[float, float, int]]] = {}
    for rid, name in enumerate(spans.resources):
        if not name.startswith("rollout/engine-"):
            continue
        mask = (spans.resource == rid) & (spans.activity == gen)
        out[name.split("/", 1)[1]] = [(float(s), float(e), int(k)) for s, e, k in
                                      zip(spans.start[mask], spans.end[mask], spans.step[mask])]
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].rsplit("-", 1)[1]))) if out else {}


def _timeline_chart(plt, engines: dict[str, list[tuple[float, float, int]]], max_engines: int = 48) -> str:
    shown = list(engines.items())[:max_engines]
    fig, ax = plt.subplots(figsize=(7, 0.12 * len(shown) + 1.2))
    steps = sorted({k for _, spans in shown for *_, k in spans})
    colors = {k: ("#3b6fd8", "#7fa3e8")[i % 2] for i, k in enumerate(steps)}
    for i, (_, spans) in enumerate(shown):
        ax.broken_barh([(s, e - s) for s, e, _ in spans], (i - 0.4, 0.8),
                       facecolors=[colors[k] for *_, k in spans], linewidth=0)
    ax.set_yticks(range(0, len(shown), max(1, len(shown) // 8)))
    ax.set_yticklabels([shown[i][0] for i in range(0, len(shown), max(1, len(shown) // 8))])
    ax.invert_yaxis()
    ax.set_xlabel("simulated seconds (alternate shades: successive steps)")
    more = f" (first {max_engines} of {len(engines)})" if len(engines) > max_engines else ""
    ax.set_title(f"Rollout engines generating{more}", loc="left")
    return _svg(fig)


def _rounds(spans: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """An engine's spans keyed by the step they generated for; where the simulation does not
    tie generation to one step (async modes: ``step`` -1), by the engine's n-th busy interval."""
    if all(k >= 0 for *_, k in spans):
        return spans
    return [(s, e, i) for i, (s, e, _) in enumerate(sorted(spans))]


def _tail_chart(plt, engines: dict[str, list[tuple[float, float, int]]]) -> str:
    """When each engine finished its round of generation, after the first engine started: the long tail."""
    import numpy as np

    by_step: dict[int, dict[str, float]] = {}
    starts: dict[int, float] = {}
    keyed_by_step = all(k >= 0 for spans in engines.values() for *_, k in spans)
    for name, spans in engines.items():
        for s, e, k in _rounds(spans):
            by_step.setdefault(k, {})[name] = max(by_step.get(k, {}).get(name, s), e)
            starts[k] = min(starts.get(k, s), s)
    if not by_step:
        return ""
    fig, ax = plt.subplots(figsize=(7, 2.8))
    for k in sorted(by_step):
        finish = np.sort(np.array(list(by_step[k].values())) - starts[k])
        ax.plot(np.arange(1, len(finish) + 1) / len(finish) * 100, finish, lw=1, alpha=0.8,
                label=f"step {k}" if keyed_by_step else f"busy interval {k + 1}")
    ax.set_xlabel("engines finished (%)")
    ax.set_ylabel("seconds after generation began")
    ax.set_title("The long tail: when each engine finished its round of generation", loc="left")
    if len(by_step) <= 8:
        ax.legend(fontsize=7, frameon=False)
    return _svg(fig)


def _gains_chart(plt, rows: list[dict[str, Any]]) -> str:
    ok = [r for r in rows if "error" not in r][::-1]
    if not ok:
        return ""
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(ok) + 0.9))
    gains = [r["gain"] * 100 for r in ok]
    ax.barh([r["short"] if "short" in r else r["pressure"] for r in ok], gains,
            color=["#9aa3b2" if r.get("within_noise") else ("#3aa17e" if g > 0 else "#c84b64")
                   for r, g in zip(ok, gains)])
    ax.axvline(0, color="#444", lw=0.8)
    ax.set_xlabel("change in useful trajectories per hour (%) — grey: within noise")
    ax.set_title("What one more unit of each pressure buys", loc="left")
    return _svg(fig)


def run_html(data, verdict: dict[str, Any] | None = None, text: str = "", result=None,
             *, whole: bool = True) -> str:
    """``twin run``'s page: breakdown, links, engines and their tail, the verdict's gains, and
    ``text`` (the CLI's report) with the verdict and the assumptions. ``data``: a ReportData;
    ``result``: the simulation (for the engine timeline; None: no timeline)."""
    plt = require_matplotlib()
    sc = data.scenario
    lead = (f"{sc['placement']['mode']}, {sc['cluster']['nodes']}×{sc['cluster']['gpus_per_node']} "
            f"{sc['cluster']['gpu'].split(' ')[0]}, {sc['model']['name']}: step {data.step_time_s:,.1f} s, "
            f"{data.throughput.useful_trajectories_per_hour:,.0f} useful trajectories/h")
    engines = engine_spans(result) if result is not None else {}
    diagnosis = verdict["diagnosis"] if verdict else None
    sections = [
        ("Verdict", (f'<div class="verdict">{html.escape(diagnosis)}</div>' if diagnosis else "")
         + _caveats(getattr(data, "trust", None))),
        ("Step breakdown", _breakdown_chart(plt, data.breakdown, data.step_time_s)),
        ("Links: critical path and load", _links_chart(plt, data.bottleneck) if data.bottleneck else ""),
        ("Rollout engines", (_timeline_chart(plt, engines) + _tail_chart(plt, engines)) if engines else ""),
        ("Marginal gains", _gains_chart(plt, verdict["marginal_gains"]) if verdict else ""),
        ("The report (as twin run prints it, with the assumptions)", _pre(text) if text else ""),
    ]
    maker = page if whole else fragment
    return maker(f"twin run: {sc['name']}", lead, sections)


# ----------------------------------------------------------------------------- studies
def _scale_chart(plt, result) -> str:
    pts = [p for p in result.points if p.report is not None]
    if not pts:
        return ""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    colors = _colors(p.binding_link for p in pts)
    x = [p.gpus for p in pts]
    ax.plot(x, [p.useful_trajectories_per_hour for p in pts], color="#444", lw=1, zorder=1)
    for link, c in colors.items():
        sel = [p for p in pts if p.binding_link == link]
        ax.scatter([p.gpus for p in sel], [p.useful_trajectories_per_hour for p in sel], color=c, zorder=2,
                   s=36, label=f"binding: {link}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(n) for n in x])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("useful trajectories / h")
    ax2 = ax.twinx()
    ax2.plot(x, [p.scaling_efficiency for p in pts], color="#8a63c7", ls="--", lw=1, label="scaling efficiency")
    ax2.axhline(result.threshold, color="#c84b64", lw=0.8, ls=":")
    ax2.text(x[0], result.threshold, f" threshold {result.threshold:g}", color="#c84b64", fontsize=7, va="bottom")
    ax2.set_ylim(0, max(1.1, max(p.scaling_efficiency or 0 for p in pts) * 1.1))
    ax2.set_ylabel("scaling efficiency")
    ax2.spines["right"].set_visible(True)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, frameon=False, loc="upper left")
    ax.set_title("The scaling curve: the binding link at each size", loc="left")
    return _svg(fig)


def scale_html(result, *, whole: bool = True) -> str:
    """``twin scale``'s page: the curve with the binding link per size and the efficiency threshold."""
    plt = require_matplotlib()
    stop = result.stops_paying_at
    lead = (f"an added GPU stops paying at {stop} GPUs (efficiency below {result.threshold:g})" if stop
            else f"scaling efficiency stays at or above {result.threshold:g} at every size")
    trust = next((p.report.trust for p in result.points if p.report is not None and getattr(p.report, "trust", None)),
                 None)
    first = next((p.report for p in result.points if p.report is not None), None)
    sections = [("Scaling curve", _scale_chart(plt, result) + _caveats(trust)),
                ("The table (as twin scale prints it)", _pre(result.render())),
                ("Assumed (at the smallest size that ran; change any with --set)", _assumed(first))]
    return (page if whole else fragment)(f"twin scale: {result.scenario_name}", lead, sections)


def _ranking_chart(plt, result) -> str:
    rows = result.ranked[::-1]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.0))
    colors = _colors(r.binding.link if r.binding else "none" for r in result.ranked)
    values = [r.cost if result.objective == "cost" else abs(r.score) for r in rows]
    ax.barh([f"#{r.rank} {r.placement_words}" for r in rows], values,
            color=[colors[r.binding.link if r.binding else "none"] for r in rows])
    for link, c in colors.items():
        ax.bar([0], [0], color=c, label=f"binding: {link}")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_xlabel(result._by())
    ax.set_title(f"The plan's ranking on {result.budget_gpus} GPUs", loc="left")
    return _svg(fig)


def plan_html(result, *, whole: bool = True) -> str:
    """``twin plan``'s page: the ranking, coloured by each candidate's binding link."""
    plt = require_matplotlib()
    best = result.best
    lead = f"best: {best.placement_words} — {best.report.useful_trajectories_per_hour:,.0f} useful trajectories/h"
    sections = [("Ranking", _ranking_chart(plt, result) + _caveats(getattr(best.report, "trust", None))),
                ("The table (as twin plan prints it)", _pre(result.render())),
                ("Assumed (by the best; change any with --set)", _assumed(best.report))]
    return (page if whole else fragment)(f"twin plan: {result.scenario_name}", lead, sections)


def _sweep_chart(plt, result) -> str:
    ok = [r for r in result.rows if r["error"] is None]
    if not ok:
        return ""
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(ok) + 1.0))
    colors = _colors(r["binding_link"] for r in ok)
    labels = [", ".join(f"{'.'.join(p.split('.')[-2:])}={r[p]}" for p in result.grid) for r in ok][::-1]
    ax.barh(labels, [r["useful_trajectories_per_hour"] for r in ok][::-1],
            color=[colors[r["binding_link"]] for r in ok][::-1])
    for link, c in colors.items():
        ax.bar([0], [0], color=c, label=f"binding: {link}")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_xlabel("useful trajectories / h")
    ax.set_title("Each combination of the grid", loc="left")
    return _svg(fig)


def sweep_html(result, *, whole: bool = True) -> str:
    """``twin sweep``'s page: every combination's useful experience, coloured by its binding link."""
    plt = require_matplotlib()
    best = result.best
    lead = ("most useful/h: " + ", ".join(f"{p}={best[p]}" for p in result.grid)) if best else "no combination ran"
    sections = [("Grid", _sweep_chart(plt, result)), ("The table (as twin sweep prints it)", _pre(result.render()))]
    return (page if whole else fragment)(f"twin sweep: {result.scenario_name}", lead, sections)


class Views:
    """What a result shows in a notebook: its page inline where matplotlib is installed, else its
    text (``render()``). A result class mixes this in and defines ``render`` and ``to_html``."""

    def render(self) -> str:  # pragma: no cover - each result defines its own
        raise NotImplementedError

    def to_html(self, *, whole: bool = True) -> str:  # pragma: no cover
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return self.to_html(whole=False) if available() else _pre(self.render())
