"""The ``learning`` section of a scenario: how many steps the run needs to reach its target.

The twin simulates the seconds a step takes; this section says how many steps reach a reward,
as a function of the rollouts each step trains on (N = prompts_per_step × responses_per_prompt),
so that a batch, a split or a step of staleness can be ranked by the wall-clock time to the
target and not only by trajectories per hour (:mod:`twin.analysis.learning`, docs/time-to-target.md).

The law is the gradient-noise-scale model of McCandlish et al. 2018 ("An Empirical Model of
Large-Batch Training", arXiv:1812.06162): S(N) = S_min · (1 + N_noise / N). Its GRPO form
("Critical Batch Size for LLM Policy Optimization", HiLD at ICML 2026, openreview uK4kMpNx0W)
takes N as the total rollout count and models off-policy reuse as drift-inflated noise: here
N_noise · (1 + staleness_drift × lag + partial_rollout_drift). The defaults are NOT fitted to
any run: they are assumed (``source`` says so) until ``twin fit --learning`` replaces them with
the team's own.
"""

from __future__ import annotations

from itertools import pairwise

from pydantic import Field, model_validator

from twin.config.hardware import Strict
from twin.errors import InputError

ASSUMED = ("assumed: not fitted to any run. The law's form is McCandlish et al. 2018 (arXiv:1812.06162) "
           "as extended to GRPO (openreview uK4kMpNx0W); its figures are round numbers of the order those "
           "works discuss, so a time to target read from them ranks levers, it does not forecast a run. "
           "Fit your own: twin fit --learning RUN1:N1 RUN2:N2")
MAX_ROLLOUTS = 10**9
MAX_STEPS = 10**8


class Level(Strict):
    """One reward level of a fit: the steps an infinite batch needs to reach it, and its noise scale."""

    reward: float = Field(description="The reward (or accuracy) level.")
    s_min: float = Field(gt=0, le=MAX_STEPS, description="Steps to reach it with an infinite batch (S_min).")
    noise_scale: float = Field(gt=0, le=MAX_ROLLOUTS, description="N_noise at this level (rollouts per step).")


class Learning(Strict):
    """Sample efficiency: steps to a target reward against rollouts per step (docs/time-to-target.md)."""

    s_min: float = Field(
        default=200.0, gt=0, le=MAX_STEPS,
        description="S_min: the optimizer steps an infinitely large batch needs to reach the target "
        "(McCandlish et al. 2018, eq. 2.11). Default assumed (see source).")
    noise_scale: float = Field(
        default=4096.0, gt=0, le=MAX_ROLLOUTS,
        description="N_noise: the rollouts per step at which the law's two terms are equal (the critical "
        "batch: half the steps are lost to gradient noise there). GRPO's relevant batch is the total rollout "
        "count prompts × responses (openreview uK4kMpNx0W). Default assumed (see source).")
    target: float | None = Field(
        default=None,
        description="The reward (or accuracy) the run must reach; with levels, S_min and N_noise are "
        "interpolated there (twin plan --target R sets it). None: the level S_min was given for.")
    levels: list[Level] = Field(
        default_factory=list,
        description="S_min and N_noise per reward level, as twin fit --learning writes them (ascending reward).")
    retune_lr: bool = Field(
        default=True,
        description="Whether the learning rate is retuned for each batch size. True: the law as published (its "
        "S(N) assumes the best step size at each batch). False: the step size stays the one tuned at "
        "lr_tuned_at_rollouts, and a larger batch buys fewer of its steps (McCandlish et al. 2018 eq. 2.6 with "
        "the step size held: docs/time-to-target.md).")
    lr_tuned_at_rollouts: int | None = Field(
        default=None, ge=1, le=MAX_ROLLOUTS,
        description="The rollouts per step the learning rate was tuned at (without retuning). None: the "
        "scenario's own prompts_per_step × responses_per_prompt.")
    staleness_drift: float = Field(
        default=0.2, ge=0, le=100,
        description="Off-policy reuse as drift-inflated noise (openreview uK4kMpNx0W): N_noise grows by this "
        "share per step of lag of the trained rollouts (the simulation's mean oldest lag per step). Assumed.")
    partial_rollout_drift: float = Field(
        default=0.1, ge=0, le=100,
        description="Further N_noise growth when partial rollout is on (a trajectory spans policy versions). Assumed.")
    source: str = Field(default=ASSUMED, description="Where the figures come from (a fit, a paper, or assumed).")

    @model_validator(mode="after")
    def _levels_ascending(self) -> Learning:
        rewards = [lv.reward for lv in self.levels]
        if any(b <= a for a, b in pairwise(rewards)):
            raise InputError("learning.levels must be in ascending reward, each once", field="learning.levels",
                             value=rewards, allowed="levels as twin fit --learning writes them")
        self.at_target()  # a target outside the fitted levels is refused when the scenario is read
        return self

    @property
    def assumed(self) -> bool:
        """True while the figures are the built-in defaults, not a fit."""
        return self.source == ASSUMED

    def at_target(self, target: float | None = None) -> tuple[float, float]:
        """(S_min, N_noise) at ``target`` (default: the section's own): interpolated between the
        fitted levels, else the section's own figures where no target is asked of them."""
        target = self.target if target is None else target
        if target is None or not self.levels:
            if target is not None and self.target is not None and target != self.target:
                raise InputError("a target other than the one learning.s_min was given for needs learning.levels",
                                 field="learning.target", value=target,
                                 allowed=f"{self.target:g}, or levels from twin fit --learning")
            return self.s_min, self.noise_scale
        lv = self.levels
        if not lv[0].reward <= target <= lv[-1].reward:
            raise InputError("the target is outside the fitted levels", field="learning.target", value=target,
                             allowed=f"{lv[0].reward:g}..{lv[-1].reward:g} (the rewards the fitted runs reached)")
        for a, b in pairwise(lv) if len(lv) > 1 else [(lv[0], lv[0])]:
            if a.reward <= target <= b.reward:
                w = 0.0 if b.reward == a.reward else (target - a.reward) / (b.reward - a.reward)
                return a.s_min + w * (b.s_min - a.s_min), a.noise_scale + w * (b.noise_scale - a.noise_scale)
        return lv[-1].s_min, lv[-1].noise_scale
