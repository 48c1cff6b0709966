"""``twin fit LOG --scenario S --profile OUT.yaml``: the user's own stack, fitted on the user's own run.

A run already measures what a framework profile holds: how much of the GPU's kernel rates its
trainer reaches, what its inference engine's host spends per step, how fast its weight sync is.
Each property is fitted on the phase that isolates it, in this order (each later fit sees the
earlier values):

1. **the trainer's share of kernel rates** (``cluster.compute_scale``) on ``update_actor`` (else
   the scoring pass, else — TRL logs only a step time — the whole step);
2. **the engine's host cost per step** (``placement.rollout.step_overhead_s``) on ``generation``;
3. **the weight sync's software rate** on the logged sync time: the sender's gather/convert rate
   for a gathered broadcast or a checkpoint from an FSDP/DeepSpeed trainer, the per-collective
   round for a Megatron sender's broadcast, the receiver's staging rate for the other methods.

Each fit bisects its field (in log space, within physical bounds) until the simulated phase of the
fitted window — the log's last window of steps, the run's steady state, its lengths fitted too —
equals the logged mean. A property whose phase the log does not hold is left as the scenario has
it, and said so. The profile is written with every value's provenance (the log, the steps, the
scenario, the logged figure it matched), over the settings of the scenario's own profile, and then
checked as ``twin validate --cross`` checks a built-in one: the run's other windows, held apart
from the fit, are simulated with their own lengths and the fitted values, and each logged timing
is compared with its prediction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin import runner
from twin.config.frameworks import framework_profile
from twin.config.overrides import apply_overrides
from twin.cost.weight_sync import sender_engine, sync_method
from twin.validation.validate import metric as report_metric

# (name, field, metrics that isolate it in order of preference, bounds)
TRAINER = ("the trainer's share of the GPU's kernel rates", "cluster.compute_scale",
           ("update_actor", "old_logprob", "old_logprob+reference", "step_time_s"), (0.01, 1.0))
ENGINE = ("the engine's host cost per step", "placement.rollout.step_overhead_s", ("generation",), (1e-5, 0.5))
SYNC_METRIC = "counters.weight_sync_s"
BISECTIONS = 16  # the field to ~4e-5 of its log range: well below the logs' own noise


@dataclass
class Fitted:
    """One property fitted on one logged phase."""

    name: str
    field: str
    value: float | None
    metric: str | None
    target: float | None
    predicted: float | None = None
    bracketed: bool = True
    note: str = ""


@dataclass
class Held:
    """A held-apart window: each logged timing against the fitted profile's prediction."""

    steps: tuple[int, int]
    errors: dict[str, tuple[float, float]] = field(default_factory=dict)  # metric -> (logged, predicted)


def _simulate(data: dict) -> dict:
    return runner.run(data).to_dict()


def solve(data: dict, path: str, metric: str, target: float, bounds: tuple[float, float]) -> tuple[float, float, bool]:
    """(value of ``path``, the metric there, whether the bounds bracket ``target``): bisection in
    log space, the metric taken monotone in the field."""
    lo, hi = math.log(bounds[0]), math.log(bounds[1])

    def value(x: float) -> float:
        return report_metric(_simulate(apply_overrides(data, {path: math.exp(x)})), metric)

    f_lo, f_hi = value(lo), value(hi)
    increasing = f_hi > f_lo
    if not min(f_lo, f_hi) <= target <= max(f_lo, f_hi):
        at_lo = abs(f_lo - target) <= abs(f_hi - target)
        return math.exp(lo if at_lo else hi), f_lo if at_lo else f_hi, False
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if (value(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    x = math.exp((lo + hi) / 2)
    return x, value((lo + hi) / 2), True


def sync_field(data: dict) -> tuple[str, tuple[float, float]]:
    """The weight sync's software property the method spends most on, and its bounds."""

    plan = runner.plan(data)
    method = sync_method(plan)
    if method in ("nccl_broadcast", "checkpoint"):
        if sender_engine(plan) == "megatron":
            return "weight_sync.collective_overhead_s", (1e-7, 0.1)
        return "weight_sync.gather_convert_bytes_per_s", (1e8, 1e12)
    return "weight_sync.staging_bytes_per_s", (1e8, 1e12)


def _round(x: float) -> float:
    return float(f"{x:.4g}")


def fit_profile(steady: dict, timings: dict[str, dict]) -> list[Fitted]:
    """Every property the logged ``timings`` (metric keys as ``twin fit`` reads them, each with its
    window mean) can fit, in order, on the scenario data ``steady`` (the fitted window's lengths)."""
    logged = {t["metric"]: t["mean"] for t in timings.values() if t["mean"] > 0}
    data, out = steady, []
    for name, path, metrics, bounds in (TRAINER, ENGINE):
        metric = next((m for m in metrics if m in logged), None)
        if metric is None:
            out.append(Fitted(name, path, None, None, None, note="not logged: left as the scenario has it"))
            continue
        value, predicted, ok = solve(data, path, metric, logged[metric], bounds)
        value = _round(value)
        data = apply_overrides(data, {path: value})
        note = "" if ok else f"no value within {bounds[0]:g}..{bounds[1]:g} matches: the nearer bound"
        if metric == "step_time_s":
            note = ("only the step time is logged: the whole step is read as the trainer's share"
                    + (f"; {note}" if note else ""))
        out.append(Fitted(name, path, value, metric, logged[metric], predicted, ok, note))
    path, bounds = sync_field(data)
    if SYNC_METRIC in logged:
        value, predicted, ok = solve(data, path, SYNC_METRIC, logged[SYNC_METRIC], bounds)
        value = _round(value)
        out.append(Fitted("the weight sync's software rate", path, value, SYNC_METRIC, logged[SYNC_METRIC],
                          predicted, ok, "" if ok else f"no value within {bounds[0]:g}..{bounds[1]:g} matches"))
    else:
        out.append(Fitted("the weight sync's software rate", path, None, None, None,
                          note="no sync timing logged: left as the scenario has it"))
    return out


def fitted_overrides(fits: list[Fitted]) -> dict[str, float]:
    return {f.field: f.value for f in fits if f.value is not None}


def held_apart(windows: list[tuple[tuple[int, int], dict, dict]], overrides: dict[str, float]) -> list[Held]:
    """Each held-apart window (its steps, its scenario data with its own lengths, its timings)
    simulated with the fitted values, every logged timing against the prediction."""
    out = []
    for steps, data, timings in windows:
        report = _simulate(apply_overrides(data, overrides))
        held = Held(steps)
        for t in timings.values():
            if t["mean"] > 0 and t["metric"] not in held.errors:
                held.errors[t["metric"]] = (t["mean"], report_metric(report, t["metric"]))
        out.append(held)
    return out


def profile_document(name: str, scenario_ref: str, base_framework: str | None, logs: list[str],
                     span: str, fits: list[Fitted]) -> dict[str, Any]:
    """The framework profile as YAML data: the scenario's own profile's settings (with their
    sources) under the values fitted here (with theirs)."""

    settings: dict[str, dict] = {}
    framework = "custom"
    if base_framework:
        base = framework_profile(base_framework)
        framework = base.framework
        for path, s in base.settings.items():
            settings[path] = {"value": s.value, "source": f"from the {base.name} profile: {s.source}"}
    where = ", ".join(Path(f).name for f in logs)
    for f in fits:
        if f.value is None:
            continue
        settings[f.field] = {
            "value": f.value,
            "source": (f"{f.name}, fitted by `twin fit --profile` on {f.metric} of {where} ({span}: mean "
                       f"{f.target:.4g} s; the twin {f.predicted:.4g} s there), scenario {scenario_ref}"
                       + (f"; {f.note}" if f.note else "")),
        }
    return {
        "name": name,
        "framework": framework,
        "version": f"fitted on {where} ({span})",
        "description": (f"The stack of the run logged in {where}, fitted by twin fit with scenario {scenario_ref}: "
                        "each property on the phase that isolates it (docs/fit.md, 'Your stack as a profile')."),
        "settings": settings,
    }


def render(fits: list[Fitted], held: list[Held], span: str) -> str:
    lines = [f"profile fitted on {span} (each property on the phase that isolates it):"]
    for f in fits:
        if f.value is None:
            lines.append(f"  {f.field:40s} -           ({f.name}: {f.note})")
            continue
        lines.append(f"  {f.field:40s} {f.value:<11.4g} on {f.metric}: logged {f.target:.4g} s, twin "
                     f"{f.predicted:.4g} s" + (f"  ({f.note})" if f.note else ""))
    if not held:
        lines.append("held-apart windows: none (the log has one window; give more steps or --window)")
        return "\n".join(lines)
    lines.append("held-apart windows, predicted with the fitted profile (each with its own lengths):")
    errs = []
    for h in held:
        parts = []
        for metric, (logged, predicted) in h.errors.items():
            e = predicted / logged - 1
            errs.append(abs(e))
            parts.append(f"{metric} {logged:.4g} -> {predicted:.4g} s ({e * 100:+.1f}%)")
        lines.append(f"  steps {h.steps[0]}-{h.steps[1]}: " + ("; ".join(parts) or "no timing logged"))
    if errs:
        lines.append(f"  mean |error| {sum(errs) / len(errs) * 100:.1f}% over {len(errs)} figures, "
                     f"worst {max(errs) * 100:.1f}%")
    return "\n".join(lines)
