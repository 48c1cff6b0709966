"""A whole run, step by step: per-step figures, the run's total time, the time to a number of
trajectories or tokens, and where the binding link changes as the workload drifts.

Training steps here count from 1, as verl and TRL log them and as ``workload.schedule``'s
``from_step`` reads (the report's ``steps[].step`` is the 0-based index of the same step).

The binding link of a step is the link that held the trainer up longest in it (its critical
path, :class:`~twin.sim.result.StepRecord`). Single steps flicker (one long response binds
rollout, the next step's batch is short), so changes are read from the critical-path seconds
averaged over a centred block of a tenth of the run (at least one step): a change is named at
the first step of a stretch at least a block long in which a new link has the largest
averaged share, by more than the two links' noise band (2 standard errors of a block mean), with
the mean response length there ("rollout binds from step ~107 (was optimization), as mean
responses pass 1,100 tokens"). Two links within their band of each other for a block or more
are tied there, and said so, rather than changing places back and forth.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from twin.errors import InputError
from twin.sim.links import title
from twin.sim.result import SimResult

WINDOWS = 10  # a run without schedule windows is summarised in this many equal blocks
MIN_STEPS_FOR_BAND = 10  # fewer steps give no estimate of the per-step noise (nor ties)
MIN_TIE_STEPS = 3  # a tie lasts at least this many steps (and a block): one step is no stretch


def step_figures(result: SimResult) -> list[dict[str, Any]]:
    """Per training step: its time (from the previous step's end), trajectories and tokens
    generated, the mean response length (generated tokens per trajectory, all turns), the
    binding link, and the running totals (end time, trajectories, generated tokens)."""
    out, prev_end, trajs, tokens = [], 0.0, 0, 0.0
    for rec in result.steps:
        per_link: dict[str, float] = defaultdict(float)
        for link, sec in rec.critical:
            per_link[link] += sec
        trajs += rec.trajectories
        tokens += rec.generated_tokens
        out.append({
            "training_step": rec.step + 1,
            "step_s": rec.end - prev_end,
            "trajectories": rec.trajectories,
            "generated_tokens": rec.generated_tokens,
            "mean_response_tokens": rec.generated_tokens / rec.trajectories if rec.trajectories else 0.0,
            "binding_link": max(per_link, key=per_link.get) if per_link else None,
            "end_s": rec.end,
            "trajectories_total": trajs,
            "generated_tokens_total": tokens,
        })
        prev_end = rec.end
    return out


def _links(result: SimResult) -> tuple[list[str], np.ndarray]:
    """Critical-path seconds per (step, link)."""
    names = sorted({link for rec in result.steps for link, _ in rec.critical})
    col = {name: i for i, name in enumerate(names)}
    sec = np.zeros((len(result.steps), len(names)))
    for i, rec in enumerate(result.steps):
        for link, s in rec.critical:
            sec[i, col[link]] += s
    return names, sec


def window_starts(result: SimResult) -> list[int]:
    """First training step of each summary window: the schedule's windows when it has any,
    else ``WINDOWS`` equal blocks of the run."""
    steps = len(result.steps)
    schedule = result.plan.workload.schedule
    if schedule is not None and schedule.windows:
        starts = sorted({max(1, w.from_step) for w in schedule.windows if w.from_step <= steps})
        return starts or [1]
    size = max(1, math.ceil(steps / WINDOWS))
    return list(range(1, steps + 1, size))


def windows(result: SimResult, figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per summary window (:func:`window_starts`): its steps, mean step time, mean response
    length, and the link with the largest share of its critical path, with the shares."""
    names, sec = _links(result)
    starts = window_starts(result)
    out = []
    for k, first in enumerate(starts):
        last = (starts[k + 1] - 1) if k + 1 < len(starts) else len(figures)
        rows = figures[first - 1: last]
        if not rows:
            continue
        total = sec[first - 1: last].sum(axis=0)
        shares = total / total.sum() if total.sum() > 0 else total
        trajs = sum(r["trajectories"] for r in rows)
        out.append({
            "from_step": first, "to_step": last,
            "step_s": sum(r["step_s"] for r in rows) / len(rows),
            "mean_response_tokens": sum(r["generated_tokens"] for r in rows) / trajs if trajs else 0.0,
            "binding_link": names[int(np.argmax(total))] if len(names) and total.sum() > 0 else None,
            "critical_path_share": {n: float(s) for n, s in zip(names, shares) if s > 0},
        })
    return out


def _noise_bands(sec: np.ndarray, block: int) -> np.ndarray:
    """Per pair of links (a, b), the band within which the block mean of a's critical-path
    seconds minus b's is noise: 2 standard errors of a block mean, the per-step spread read from
    successive differences (std(diff)/sqrt 2), so that a slow drift does not widen it."""
    n, k = sec.shape
    bands = np.zeros((k, k))
    if n < MIN_STEPS_FOR_BAND:  # too few steps to tell noise from a change: every lead counts, as before
        return bands
    for a in range(k):
        for b in range(a + 1, k):
            # from the second step: the first fills the pipeline and is no sample of the noise
            spread = float(np.std(np.diff(sec[1:, a] - sec[1:, b]))) / math.sqrt(2)
            bands[a, b] = bands[b, a] = 2 * spread / math.sqrt(block)
    return bands


def _smoothed(sec: np.ndarray, block: int) -> np.ndarray:
    """Centred means over a block of steps, per link."""
    n = len(sec)
    csum = np.vstack([np.zeros(sec.shape[1]), np.cumsum(sec, axis=0)])
    lo = np.maximum(0, np.arange(n) - block // 2)
    hi = np.minimum(n, lo + block)
    return (csum[hi] - csum[lo]) / (hi - lo)[:, None]


def _held(smooth: np.ndarray, bands: np.ndarray, block: int) -> list[tuple[int, int]]:
    """(first step, link) of each stretch a link held the lead: a new link takes it only when it
    leads the held one by more than their noise band for a block of steps in a row."""
    kept: list[tuple[int, int]] = []
    pending: tuple[int, int] | None = None
    for i, row in enumerate(smooth):
        top = int(np.argmax(row))
        held = kept[-1][1] if kept else None
        if held is not None and (top == held or row[top] - row[held] <= bands[top, held]):
            pending = None
            continue
        if pending is None or pending[1] != top:
            pending = (i, top)
        if i - pending[0] + 1 >= block:
            kept.append(pending)
            pending = None
    return kept


def _ties(smooth: np.ndarray, bands: np.ndarray, block: int) -> list[tuple[int, int, tuple[int, int]]]:
    """(first, last step, (a, b)) of each stretch of at least a block in which the two leading
    links are within their noise band of each other."""
    out: list[tuple[int, int, tuple[int, int]]] = []
    current: tuple[int, tuple[int, int]] | None = None
    for i, row in enumerate(list(smooth) + [None]):
        pair = None
        if row is not None and len(row) > 1:
            second, first = (int(x) for x in np.argsort(row)[-2:])
            if row[second] > 0 and row[first] - row[second] <= bands[first, second]:
                pair = tuple(sorted((first, second)))
        if current is not None and pair != current[1]:
            if i - current[0] >= max(block, MIN_TIE_STEPS):
                out.append((current[0], i - 1, current[1]))
            current = None
        if pair is not None and current is None:
            current = (i, pair)
    return out


def binding_changes(result: SimResult, figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where the binding link changes during the run (see the module's docstring): each with
    the training step, the link before and after, and the mean response length there. A change
    is named only when the new link leads by more than the noise band (:func:`_noise_bands`)
    for a block of steps in a row: two links within it are tied (:func:`binding_ties`), not
    changing places."""
    names, sec = _links(result)
    n = len(figures)
    if n == 0 or not names:
        return []
    block = max(1, n // 10)
    kept = _held(_smoothed(sec, block), _noise_bands(sec, block), block)
    return [{"training_step": at + 1, "link": names[after], "previous": names[before],
             "mean_response_tokens": figures[at]["mean_response_tokens"]}
            for (_, before), (at, after) in zip(kept, kept[1:])]


def binding_ties(result: SimResult, figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stretches of at least a tenth of the run in which the two links holding the trainer up
    longest are within their noise band of each other: neither binds alone there."""
    names, sec = _links(result)
    n = len(figures)
    if n < MIN_STEPS_FOR_BAND or len(names) < 2:
        return []
    block = max(1, n // 10)
    out = []
    for first, last, (a, b) in _ties(_smoothed(sec, block), _noise_bands(sec, block), block):
        rows = figures[first:last + 1]
        trajs = sum(r["trajectories"] for r in rows)
        out.append({"links": [names[a], names[b]], "from_step": first + 1, "to_step": last + 1,
                    "mean_response_tokens": sum(r["generated_tokens"] for r in rows) / trajs if trajs else 0.0})
    return out


def tie_text(tie: dict[str, Any]) -> str:
    """"rollout and optimization are tied over steps 12-200 (within their noise band; mean
    responses 1,140 tokens): neither binds alone"."""
    a, b = (title(name) for name in tie["links"])
    return (f"{a} and {b} are tied over steps {tie['from_step']}-{tie['to_step']} (within their noise band; "
            f"mean responses {tie['mean_response_tokens']:,.0f} tokens): neither binds alone")


def time_to(figures: list[dict[str, Any]], *, trajectories: float | None = None,
            tokens: float | None = None) -> dict[str, Any]:
    """Time until the run has trained on ``trajectories`` trajectories (or generated ``tokens``
    tokens): the end of the step that reaches it. Beyond the simulated steps, extrapolated at
    the last step's rate, and said so."""
    key, target = (("trajectories_total", trajectories) if trajectories is not None
                   else ("generated_tokens_total", tokens))
    what = "trajectories" if trajectories is not None else "tokens"
    for row in figures:
        if row[key] >= target:
            return {"what": what, "target": target, "time_s": row["end_s"], "training_step": row["training_step"],
                    "extrapolated": False}
    last = figures[-1]
    per_step = last["trajectories"] if trajectories is not None else last["generated_tokens"]
    if per_step <= 0:
        return {"what": what, "target": target, "time_s": math.inf, "training_step": None, "extrapolated": True}
    more = math.ceil((target - last[key]) / per_step)
    return {"what": what, "target": target, "time_s": last["end_s"] + more * last["step_s"],
            "training_step": last["training_step"] + more, "extrapolated": True}


UNTIL_KINDS = ("trajectories", "tokens")


def parse_until(text: str) -> tuple[str, float]:
    """``trajectories=N`` or ``tokens=N`` (``twin run --until``) → (kind, N)."""
    kind, _, value = text.partition("=")
    try:
        n = float(value.replace("_", "").replace(",", ""))
    except ValueError:
        n = math.nan
    if kind not in UNTIL_KINDS or not (math.isfinite(n) and n > 0):
        raise InputError("--until takes what to count and how many", field="--until", value=text,
                         allowed="trajectories=N or tokens=N (N > 0: trained trajectories, generated tokens)")
    return kind, n


def time_to_all(result_figures: list[dict[str, Any]], until: list[tuple[str, float]]) -> list[dict[str, Any]]:
    """:func:`time_to` for each (kind, N) of ``twin run --until``."""
    return [time_to(result_figures, **{("trajectories" if k == "trajectories" else "tokens"): n}) for k, n in until]


def run_summary(result: SimResult) -> dict[str, Any]:
    """The ``run`` section of the report: total time, per-window figures, binding changes; and
    ``settled`` when the simulation stopped at steady state, with the whole run estimated."""
    figures = step_figures(result)
    if not figures:
        return {"steps": 0, "total_s": 0.0, "windows": [], "binding_changes": []}
    first = figures[0]["step_s"]
    out = {
        "steps": len(figures),
        "total_s": figures[-1]["end_s"],
        "first_step_s": first,
        "last_step_s": figures[-1]["step_s"],
        # What a run with the first step's lengths throughout would take: the drift's effect.
        "steps_times_first_s": first * len(figures),
        "trajectories": figures[-1]["trajectories_total"],
        "generated_tokens": figures[-1]["generated_tokens_total"],
        "windows": windows(result, figures),
        "binding_changes": binding_changes(result, figures),
    }
    ties = binding_ties(result, figures)
    if ties:  # only where there are some: a report without ties reads as before
        out["binding_ties"] = ties
    if result.settled:
        # Stopped at steady state (run.steady_tolerance): the rest of run.steps at the steady mean.
        planned = result.plan.run.steps
        steady = [f["step_s"] for f in figures[1:]]
        out["settled"] = {
            "simulated_steps": len(figures), "of_steps": planned,
            "tolerance": result.plan.run.steady_tolerance,
            "estimated_total_s": figures[-1]["end_s"] + (planned - len(figures)) * sum(steady) / len(steady),
        }
    return out


def change_text(change: dict[str, Any]) -> str:
    """One change in words: "rollout binds from step ~120 (was optimization), as mean
    responses pass 6,012 tokens"."""
    return (f"{change['link']} binds from step ~{change['training_step']} (was {change['previous']}), "
            f"as mean responses pass {change['mean_response_tokens']:,.0f} tokens")
