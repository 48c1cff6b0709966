"""``twin fit``: response (and prompt) length distributions recovered from a run's own logs.

:mod:`twin.importers.logs.readers` reads verl, TRL, W&B-CSV and JSONL logs into per-step records;
:mod:`twin.importers.logs.lognormal` recovers a clipped lognormal from one window's summaries;
:func:`fit_log` cuts the log into windows and fits each; :mod:`twin.cli.fit` writes the
report, the fitted scenario and the validation case. See docs/fit.md.
"""

from __future__ import annotations

import math

from twin.errors import InputError
from twin.importers.logs.lognormal import DEFAULT_BATCH, Fitted, fit
from twin.importers.logs.readers import PROMPT, RESPONSE, TIMINGS, Log, Step, read_logs

__all__ = ["fit_log", "windows", "read_logs", "Log", "Step"]


def windows(steps: list[Step], size: int | None) -> list[list[Step]]:
    """Consecutive windows of ``size`` steps (the last may be shorter); by default the log in
    4 windows as equal as can be (fewer when it has fewer than 4 steps)."""
    if size is not None:
        if size < 1:
            raise InputError("a window must hold at least 1 step", field="--window", value=size)
        return [steps[i:i + size] for i in range(0, len(steps), size)]
    k = min(4, len(steps))
    bounds = [i * len(steps) // k for i in range(k + 1)]
    return [steps[bounds[i]:bounds[i + 1]] for i in range(k)]


def _gather(steps: list[Step], table: dict, role: str) -> tuple[str | None, list[float]]:
    key, values = None, []
    for s in steps:
        got = s.role(table, role)
        if got is not None:
            key = key or got[0]
            values.append(got[1])
    return key, values


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fit_lengths(steps: list[Step], table: dict, *, cap_hint: float | None, batch: int | None,
                what: str, log_max: float | None = None) -> dict | None:
    """One window's lengths (``table``: RESPONSE or PROMPT) as a fitted clipped lognormal, with
    what was observed and which key every figure came from; None when the mean is not logged."""
    mean_key, means = _gather(steps, table, "mean")
    if not means:
        return None
    max_key, maxes = _gather(steps, table, "max")
    min_key, mins = _gather(steps, table, "min")
    clip_key, clips = _gather(steps, table, "clip_ratio")
    mean = sum(means) / len(means)
    clip = sum(clips) / len(clips) if clips else None
    observed_max = max(maxes) if maxes else None
    span = f"steps {steps[0].step}..{steps[-1].step}"
    if mean <= 0:
        raise InputError(f"every {what} length mean is 0 in {span}: nothing to fit", field=mean_key, value=mean,
                         allowed=f"a log of steps that generated {what}s (mean length > 0)")
    if observed_max is not None and observed_max < mean:
        raise InputError(f"the longest {what} logged in {span} is shorter than their mean", field=max_key,
                         value=observed_max, allowed=f"a max >= the mean ({mean:g}): {max_key} and {mean_key} "
                         "of the same responses")
    if clip and observed_max is not None:
        cap, cap_from = observed_max, f"{max_key} (responses clipped: the longest is the cap)"
        if cap_hint is not None and abs(cap_hint - observed_max) > 0.5:
            cap_from += f"; the scenario's max {cap_hint:g} is not used"
    elif cap_hint is not None and (observed_max is None or cap_hint >= observed_max):
        cap, cap_from = cap_hint, "the scenario's max length" + (f" (the log's longest: {observed_max:g})"
                                                                   if observed_max is not None else "")
    elif observed_max is not None:
        cap = max(observed_max, log_max or 0.0)
        cap_from = f"{max_key} (the longest in the whole log; " + (
            "no scenario gives the max length)" if what == "response" else "no clip ratio says a prompt was cut)")
    else:
        cap, cap_from = None, "none"
    n = batch or DEFAULT_BATCH
    f: Fitted = fit(mean, cap, clip, max_=_geomean(maxes) if maxes else None,
                    min_=_geomean([max(m, 1.0) for m in mins]) if mins else None, batch=n)
    if "spread" in f.sigma_from or "max against" in f.sigma_from:
        f.sigma_from += "" if batch else f" (assumed {n}: give --scenario for its batch)"
    sources = {"mean": f"{mean_key} (matched)",
               "p50": f"the fitted lognormal, sigma from {f.sigma_from}",
               "p90": f"the fitted lognormal, sigma from {f.sigma_from}",
               "max": cap_from}
    if clip_key:
        sources["clip_ratio"] = clip_key
    out = {
        "observed": {"mean": mean, "max": observed_max, "min": min(mins) if mins else None, "clip_ratio": clip},
        "fitted": {"mean": f.mean, "p50": f.quantile(0.5), "p90": f.quantile(0.9), "max": cap,
                   "median": f.median, "sigma": f.sigma, "clip_ratio": f.clip_ratio},
        "distribution": f.distribution(),
        "from": sources,
    }
    if f.note:
        out["note"] = f.note
    if cap is None and what == "response":
        raise InputError("no max response length: the log holds no response-length max", field="response_length/max",
                         allowed="a log with " + " or ".join(RESPONSE["max"]) + ", or --scenario giving the max")
    return out


def timings(steps: list[Step]) -> dict[str, dict]:
    """Each timing the log holds that the twin predicts: its mean over ``steps``."""
    out = {}
    for key, metric in TIMINGS.items():
        values = [s.values[key] for s in steps if key in s.values]
        if values:
            out[key] = {"metric": metric, "mean": sum(values) / len(values), "steps": len(values)}
    return out


def fit_log(log: Log, window: int | None = None, *, response_cap: float | None = None,
            batch: int | None = None, prompts: int | None = None) -> dict:
    """Every window and the whole log fitted: the data ``twin fit --json`` writes."""
    longest = {what: max(_gather(log.steps, table, "max")[1], default=None)
               for what, table in (("response", RESPONSE), ("prompt", PROMPT))}

    def one(steps: list[Step]) -> dict:
        return {"steps": [steps[0].step, steps[-1].step], "n_steps": len(steps),
                "response": fit_lengths(steps, RESPONSE, cap_hint=response_cap, batch=batch, what="response",
                                        log_max=longest["response"]),
                "prompt": fit_lengths(steps, PROMPT, cap_hint=None, batch=prompts, what="prompt",
                                      log_max=longest["prompt"]),
                "timings": timings(steps)}

    return {"files": log.files, "formats": log.formats, "window": window,
            "windows": [one(w) for w in windows(log.steps, window) if w],
            "overall": one(log.steps)}
