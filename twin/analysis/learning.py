"""Time to target: the steps a run needs to reach its reward, times the seconds a step takes.

The steps come from the scenario's ``learning`` section (:class:`twin.config.learning.Learning`)
and the noise-scale law of McCandlish et al. 2018 (arXiv:1812.06162, eq. 2.11):

    S(N) = S_min · (1 + N_noise / N)

with N the rollouts per step (prompts × responses: the GRPO extension, openreview uK4kMpNx0W,
finds the total rollout count the relevant batch) and N_noise inflated by the lag of the trained
rollouts (the same extension models off-policy reuse as drift-inflated noise):

    N_noise,eff = N_noise · (1 + staleness_drift × lag + partial_rollout_drift × [partial rollout])

The law assumes the step size is the best one for each batch. **Without retuning** (the step
size ε held at the one tuned at N₀), McCandlish et al.'s eq. 2.6 — the loss improvement of one
step, ΔL(ε) = ε|G|² − ½ε²(GᵀHG)(1 + B_noise/B) — evaluated at ε = ε_opt(N₀) = ε_max/(1 + r₀)
gives a progress per step of (1 + 2r₀ − r)/(1 + r₀)² of the noiseless step's (r = N_noise/N,
r₀ = N_noise/N₀), so

    S_fixed(N) = S_min · (1 + r₀)² / (1 + 2r₀ − r)

which is S(N₀) at N = N₀, falls short of S(N) for every other N (a larger batch buys fewer of
its steps), and has no finite value where 1 + 2r₀ ≤ r (a step size too large for the noisier
small batch). The seconds per step are the simulation's steady step time.
"""

from __future__ import annotations

import math
from typing import Any

RULE_RETUNED = "S = S_min·(1 + N_noise/N) (McCandlish et al. 2018 eq. 2.11; learning rate retuned per batch)"
RULE_FIXED = ("S = S_min·(1 + r0)²/(1 + 2·r0 − r), r = N_noise/N, r0 = N_noise/N0 (McCandlish et al. 2018 "
              "eq. 2.6 with the step size held at the one tuned at N0 rollouts per step)")


def effective_noise(noise_scale: float, lag: float = 0.0, partial_rollout: bool = False,
                    staleness_drift: float = 0.0, partial_rollout_drift: float = 0.0) -> float:
    """N_noise inflated by off-policy drift: ``lag`` steps of staleness, partial rollout on or off."""
    return noise_scale * (1.0 + staleness_drift * max(lag, 0.0) + (partial_rollout_drift if partial_rollout else 0.0))


def steps_retuned(n: float, s_min: float, noise: float) -> float:
    """S(N) = S_min · (1 + N_noise/N): the steps to the target with the best step size at each batch."""
    return s_min * (1.0 + noise / n)


def steps_fixed_lr(n: float, s_min: float, noise: float, tuned_at: float) -> float:
    """The steps to the target with the step size tuned at ``tuned_at`` rollouts per step and kept
    (module docstring); ``math.inf`` where that step size diverges at ``n``."""
    r, r0 = noise / n, noise / tuned_at
    progress = 1.0 + 2.0 * r0 - r
    return s_min * (1.0 + r0) ** 2 / progress if progress > 0 else math.inf


def steps_to_target(n: float, s_min: float, noise: float, *, retune: bool = True,
                    tuned_at: float | None = None) -> float:
    """Steps to the target at ``n`` rollouts per step: retuned, or with the step size tuned at ``tuned_at``."""
    if n <= 0 or s_min <= 0 or noise <= 0:
        raise ValueError("rollouts per step, S_min and N_noise must be positive")
    if retune or tuned_at is None:
        return steps_retuned(n, s_min, noise)
    return steps_fixed_lr(n, s_min, noise, tuned_at)


def time_to_target_s(steps: float, seconds_per_step: float) -> float:
    """steps × simulated seconds per step."""
    return steps * seconds_per_step


def mean_lag(step_lags: list[int]) -> float:
    """The mean over steps of the oldest trained group's lag, the first step left out where there
    are more (it fills the pipeline): an upper bound of the rollouts' mean lag."""
    lags = step_lags[1:] if len(step_lags) > 1 else step_lags
    return sum(lags) / len(lags) if lags else 0.0


def learning_report(learning, rollouts: int, seconds_per_step: float, lag: float,
                    partial_rollout: bool) -> dict[str, Any]:
    """The report's ``learning`` section: steps and seconds to the target, with and without retuning.

    ``learning``: the scenario's :class:`~twin.config.learning.Learning`; ``rollouts``: its N;
    ``seconds_per_step``: the steady step time; ``lag``: :func:`mean_lag` of the simulated steps."""
    s_min, noise = learning.at_target()
    eff = effective_noise(noise, lag, partial_rollout, learning.staleness_drift, learning.partial_rollout_drift)
    tuned_at = learning.lr_tuned_at_rollouts or rollouts
    retuned = steps_retuned(rollouts, s_min, eff)
    fixed = steps_fixed_lr(rollouts, s_min, eff, tuned_at)
    steps = retuned if learning.retune_lr else fixed

    def seconds(s: float) -> float | None:
        return time_to_target_s(s, seconds_per_step) if math.isfinite(s) else None

    return {
        "target": learning.target, "s_min": s_min, "noise_scale": noise, "noise_scale_effective": eff,
        "rollouts_per_step": rollouts, "lag": lag, "partial_rollout": partial_rollout,
        "retune_lr": learning.retune_lr, "lr_tuned_at_rollouts": tuned_at,
        "steps_to_target": steps if math.isfinite(steps) else None,
        "steps_to_target_retuned": retuned,
        "steps_to_target_not_retuned": fixed if math.isfinite(fixed) else None,
        "seconds_per_step": seconds_per_step,
        "time_to_target_s": seconds(steps),
        "time_to_target_retuned_s": seconds(retuned),
        "time_to_target_not_retuned_s": seconds(fixed),
        "noise_share": eff / (rollouts + eff),  # of the steps: those lost to gradient noise
        "rule": RULE_RETUNED if learning.retune_lr else RULE_FIXED,
        "assumed": learning.assumed, "source": learning.source,
    }


def describe(section: dict[str, Any] | None) -> str:
    """One line for the report's text: steps, seconds per step and the time to the target."""
    if not section or section.get("time_to_target_s") is None:
        return ""
    t = section["time_to_target_s"]
    target = f"reward {section['target']:g}" if section.get("target") is not None else "the target"
    text = (f"Time to {target}: {section['steps_to_target']:,.0f} steps × {section['seconds_per_step']:,.1f} s = "
            f"{t / 3600:,.2f} h (N = {section['rollouts_per_step']:,} rollouts/step, N_noise "
            f"{section['noise_scale_effective']:,.0f}{', lr retuned' if section['retune_lr'] else ', lr not retuned'})")
    return text + ("  [ASSUMED learning figures: twin fit --learning; docs/time-to-target.md]"
                   if section.get("assumed") else "")


POINT_KEYS = ("rollouts_per_step", "steps_to_target", "time_to_target_s", "time_to_target_retuned_s",
              "time_to_target_not_retuned_s")


def point_figures(report) -> dict[str, Any]:
    """A study row's time-to-target figures from a report (None: it could not run)."""
    section = (report.learning if report is not None else None) or {}
    return {k: section.get(k) for k in POINT_KEYS}


def hours(seconds: float | None, width: int = 9) -> str:
    """Seconds as hours for a table cell; '-' where there is none (a step size that diverges)."""
    return f"{seconds / 3600:{width},.1f}" if seconds is not None else f"{'-':>{width}s}"


def effect(base: dict[str, Any] | None, changed: dict[str, Any] | None) -> dict[str, float] | None:
    """A lever's effect on the time to target: relative change of the steps to it, of the seconds
    per step, and of their product (None where either side has no finite time to target)."""
    if not base or not changed or base.get("time_to_target_s") is None or changed.get("time_to_target_s") is None:
        return None

    def rel(key: str) -> float:
        return float(f"{changed[key] / base[key] - 1.0:.6g}") if base[key] else 0.0

    return {"steps_to_target": rel("steps_to_target"), "seconds_per_step": rel("seconds_per_step"),
            "time_to_target": rel("time_to_target_s")}


def effect_text(row: dict[str, Any]) -> str:
    """A verdict row's time-to-target note, the steps and seconds per step behind it only when
    the steps move (``  (time to target -40%: +9% steps, -45% s/step)``); nothing when neither
    moves by half a percent."""
    e = row.get("time_to_target")
    if not e or e["time_to_target"] is None:
        return ""
    net, steps = e["time_to_target"], e["steps_to_target"]
    if abs(steps) < 0.005:
        return f"  (time to target {net * 100:+.0f}%)" if abs(net) >= 0.005 else ""
    return f"  (time to target {net * 100:+.0f}%: {steps * 100:+.0f}% steps, {e['seconds_per_step'] * 100:+.0f}% s/step)"
