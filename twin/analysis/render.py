"""Plain-text rendering of a run report for people (``twin run``)."""

from __future__ import annotations

from typing import Any

from twin.analysis.faults import describe as describe_faults
from twin.analysis.learning import describe as describe_learning
from twin.analysis.learning import effect_text
from twin.analysis.pricing import cost_line
from twin.analysis.report import LinkRow, ReportData
from twin.analysis.run import change_text, tie_text

BAR = 30


def _bar(fraction: float) -> str:
    n = max(0, min(BAR, round(fraction * BAR)))
    return "█" * n + "·" * (BAR - n)


WHATIF_HINT = "twin whatif says what more of it buys"


def verdict_line(bottleneck: list[LinkRow], whatif_hint: str = WHATIF_HINT) -> str:
    """The binding link in one sentence, for a report without a verdict; ``whatif_hint`` says
    where to measure what more of it buys (the CLI's command; the TUI's key)."""
    if not bottleneck:
        return "No link held the trainer up."
    top = bottleneck[0]
    load_text = f"at {top.load * 100:.0f}% load" if top.load is not None else "no resource of its own"
    state = ("binds and is saturated: more of it buys experience" if top.saturated
             else f"binds but is not saturated: it waits more than it works ({whatif_hint})")
    return f"{top.link} {state} — {top.critical_path_share * 100:.0f}% of the critical path, {load_text}."


def render_run(report: ReportData, verdict: dict[str, Any] | None = None) -> str:
    """``twin run``'s text: the step, where it goes, each link's share and load, what each
    pressure buys (``verdict``: the report's verdict section), and what the figures assumed."""
    sc = report.scenario
    c, p, a = sc["cluster"], sc["placement"], sc["algorithm"]
    th = report.throughput
    lines = [
        f"Scenario {sc['name']}: {p['mode']}, {c['nodes']}×{c['gpus_per_node']} {c['gpu'].split(' ')[0]}, "
        f"{sc['model']['name']}, {a['prompts_per_step']}×{a['responses_per_prompt']} trajectories per step, "
        f"{len(report.steps)} steps ({report.simulated_s / 3600:.2f} h simulated)",
        "",
        f"Step time {report.step_time_s:.1f} s   {th.tokens_per_s:,.0f} tokens/s "
        f"({th.tokens_per_s_per_gpu:,.0f} per GPU)   {th.trajectories_per_hour:,.0f} trajectories/h",
    ]
    lines += run_lines(report)
    lines += [cost_line(report.cost)] if report.cost else []
    goodput = describe_faults(report.faults or {})
    lines += ["", goodput] if goodput else []
    to_target = describe_learning(report.learning)
    lines += [to_target] if to_target else []
    lines += [
        "",
        "Where a step goes (mean seconds per step)",
    ]
    step = report.step_time_s or 1.0
    for phase, sec in sorted(report.breakdown.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {phase:14s} {sec:10.2f}  {_bar(sec / step)}")
    lines += ["", f"  {'link':14s} {'critical path':>13s} {'load':>12s}"]
    for i, row in enumerate(report.bottleneck):
        load = f"{row.load * 100:11.0f}%" if row.load is not None else f"{'—':>12s}"
        flag = ("  binds, saturated" if row.saturated else "  binds") if row.binds else ""
        flag += "  ← the binding link" if i == 0 and row.binds else ""
        lines.append(f"  {row.link:14s} {row.critical_path_share * 100:12.0f}% {load}{flag}")
    lines.append("  (binds: on the critical path for 5% of the step or more; saturated: binds at 85% load or")
    lines.append("   more; load: the share of its capacity a link used while it held its GPUs)")
    spread = report.rollout_engine_utilization
    if spread:
        lines.append(f"  (rollout engines: {spread['min'] * 100:.0f}–{spread['max'] * 100:.0f}% busy, "
                     f"mean {spread['mean'] * 100:.0f}%)")
    counters = report.counters
    if counters.get("preemptions"):
        lines += preemption_lines(report)
    for reason, count in report.dropped.items():
        lines.append(f"  dropped {count:,} trajectories: {reason}")
    if verdict:
        bands = [r["noise"] for r in verdict["marginal_gains"] if r.get("noise") is not None]
        least = min(bands) if bands else None  # the baseline's own spread: every row's band at least
        lines += ["", "What one more unit of each pressure buys (useful experience per hour"
                  + (f"; noise across seeds {least * 100:.1f}%)" if least is not None else ")")]
        for row in verdict["marginal_gains"]:
            if "error" in row:
                lines.append(f"  {row['description']:62s} not possible here: {row['error']}")
                continue
            lines.append(f"  {row['description']:62s} {gain_text(row, 12)}  "
                         f"step {row['step_time_s']:.1f} s{noise_note(row, least)}"
                         f"{pressure_note(row, verdict['marginal_gains'])}{effect_text(row)}")
        lines += ["", "Verdict: " + verdict["diagnosis"]]
    else:
        lines += ["", "Verdict: " + verdict_line(report.bottleneck)]
    if report.trust:
        lines += ["", "How far to trust this (the twin against published runs like this one):"]
        lines += [f"  {t['text']}" for t in report.trust]
    if report.assumptions:
        lines += ["", "Assumed (what moves these figures most; change any with --set):"]
        for a in report.assumptions:
            lines.append(f"  {a['field']} = {a['value']}: {a['note']}")
    return "\n".join(lines)


def preemption_lines(report: ReportData) -> list[str]:
    """What the KV cache's preemptions cost in seconds of the step, and why fewer sequences is
    not the cure it looks: vLLM recomputes a preempted sequence's tokens in prefill, cheap per
    token, while fewer sequences a batch slow every decode iteration."""
    counters = report.counters
    recompute = counters.get("recompute_s_per_engine_step", 0.0)
    generation = (report.breakdown or {}).get("generation")
    seqs = report.scenario["placement"]["rollout"].get("max_num_seqs")
    share = f" ({recompute / generation:.1%} of the {generation:,.0f} s generation)" if generation else ""
    return [f"  KV cache full: {counters['preemptions']:,.0f} preemptions, {counters['wasted_tokens']:,.0f} tokens "
            f"recomputed: {recompute:,.2f} s of each engine's step{share}",
            f"    (recomputed in prefill, many tokens an iteration; fewer sequences (max_num_seqs, {seqs} here) "
            "preempt less but decode fewer tokens an iteration, which can cost more: "
            "twin whatif --pressure placement.rollout.max_num_seqs=N prices both)"]


def run_lines(report: ReportData) -> list[str]:
    """The whole run: its total time against run.steps × the first step, per schedule window,
    where the binding link changes, and the time to --until's targets (none for one step)."""
    run = report.run
    lines: list[str] = []
    if run and run["steps"] > 1:
        lines += ["", f"Whole run: {run['steps']} steps in {_hours(run['total_s'])} "
                  f"({run['steps']} × the first step: {_hours(run['steps_times_first_s'])}); "
                  f"step {run['first_step_s']:.1f} s first, {run['last_step_s']:.1f} s last"]
        if run.get("settled"):
            st = run["settled"]
            lines.append(f"  stopped at steady state after {st['simulated_steps']} of {st['of_steps']} steps "
                         f"(run.steady_tolerance {st['tolerance']:g}); all {st['of_steps']} at the steady "
                         f"step time: ~{_hours(st['estimated_total_s'])}")
        if report.scenario["workload"].get("schedule"):
            lines.append(f"  {'steps':>11s} {'step s':>8s} {'mean response':>14s}  binding link")
            for w in run["windows"]:
                lines.append(f"  {w['from_step']:>5d}-{w['to_step']:<5d} {w['step_s']:8.1f} "
                             f"{w['mean_response_tokens']:14,.0f}  {w['binding_link']}")
        for change in run["binding_changes"]:
            lines.append("  " + change_text(change))
        for tie in run.get("binding_ties", []):
            lines.append("  " + tie_text(tie))
    for t in report.time_to or []:
        target = f"{t['target']:,.0f} {t['what']}"
        if t["training_step"] is None:
            lines.append(f"  {target}: never (the last step trained on none)")
            continue
        lines.append(f"  {target} after {_hours(t['time_s'])} (step {t['training_step']:,}"
                     + (", extrapolated at the last step's rate)" if t["extrapolated"] else ")"))
    return lines


def render_estimate(name: str, est: dict[str, Any]) -> str:
    """``twin run --sample-steps``: the whole run's time from a few simulated steps per segment."""
    lines = [f"Scenario {name}: {est['steps']} steps estimated in {_hours(est['total_s'])} from "
             f"{est['simulated_steps']} simulated steps ({est['sample_steps']} per segment after a pipeline-filling one, "
             "lengths of each segment's middle step; docs/fit.md states the error)",
             f"  {'steps':>11s} {'step s':>8s} {'mean response':>14s}  binding link"]
    for seg in est["segments"]:
        lines.append(f"  {seg['from_step']:>5d}-{seg['to_step']:<5d} {seg['step_s']:8.1f} "
                     f"{seg['mean_response_tokens']:14,.0f}  {seg['binding_link']}")
    for change in est["binding_changes"]:
        lines.append("  " + change_text(change))
    return "\n".join(lines)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds:,.0f} s"


def gain_text(row: dict, width: int = 0) -> str:
    """A sensitivity row's gain as printed: ``+12.3%``, or ``within noise`` when its band
    (``noise``, from other seeds) holds it."""
    text = "within noise" if row.get("within_noise") else f"{row['gain'] * 100:+.1f}%"
    return f"{text:>{width}s}"


def noise_note(row: dict, usual: float | None = None) -> str:
    """The band a verdict row's gain was read within, as ``  (noise 1.2%)``, where it is wider
    than the ``usual`` one (the baseline's, said once above the rows); empty otherwise."""
    noise = row.get("noise")
    if noise is None or (usual is not None and f"{noise * 100:.1f}" == f"{usual * 100:.1f}"):
        return ""  # the same band as printed: no need to say it again
    return f"  (noise {noise * 100:.1f}%)"


def pressure_note(row: dict, rows: list[dict] | None = None) -> str:
    """What a sensitivity row changed in hardware (GPUs added, or the same GPUs re-placed), and,
    given the other ``rows``, when it came out exactly as an earlier row did: two levers with one
    effect here (on colocated GPUs, +1 staleness and partial rollout both re-place the GPUs as
    async pools; with nothing in flight when weights arrive, partial rollout interrupts nothing)."""
    note = f"  ({row['added_gpus']:+d} GPUs)" if row.get("added_gpus") else ""
    if row.get("not_in_framework"):  # a lever the scenario's stack lacks (its framework profile says so)
        note += f"  ({row['not_in_framework']})"
    if "placement" in row:
        note += f"  ({row['placement']['rollout_gpus']} rollout + {row['placement']['trainer_gpus']} trainer GPUs)"
    for earlier in rows or []:
        if earlier is row:
            break
        if "error" not in earlier and (earlier["step_time_s"], earlier["useful_trajectories_per_hour"]) == (
                row["step_time_s"], row["useful_trajectories_per_hour"]):
            note += f"  (the same result as {earlier['short']}: one effect here)"
            break
    return note
