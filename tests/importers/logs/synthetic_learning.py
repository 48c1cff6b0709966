"""Synthetic reward logs drawn from a known noise-scale law, for ``twin fit --learning``'s tests.

A run at N rollouts per step moves 1/(1 + N_noise/N) of an infinite batch's step each step
(McCandlish et al. 2018); its reward is a curve of those infinite-batch steps τ, of one of three
shapes (saturating exponential, sigmoid, hyperbolic), plus Gaussian noise of ``sigma``.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

SHAPES = {
    "exponential": lambda tau, T: 0.1 + 0.7 * (1 - math.exp(-tau / T)),
    "sigmoid": lambda tau, T: 0.1 + 0.7 / (1 + math.exp(-(tau - T) / (T / 4))),
    "hyperbolic": lambda tau, T: 0.1 + 0.7 * tau / (tau + T),
}


def rewards(schedule: list[int], noise_scale: float, shape: str, T: float = 100.0, sigma: float = 0.0,
            seed: int = 0) -> list[float]:
    """Reward after each step of ``schedule`` (N of each step)."""
    rng = random.Random(seed)
    tau, out = 0.0, []
    for n in schedule:
        tau += 1.0 / (1.0 + noise_scale / n)
        out.append(SHAPES[shape](tau, T) + rng.gauss(0.0, sigma))
    return out


def steps_for(n: int, noise_scale: float, T: float = 100.0, reach: float = 3.0) -> int:
    """Steps a run at ``n`` needs to cover ``reach`` × T infinite-batch steps."""
    return math.ceil(reach * T * (1 + noise_scale / n))


def write_verl(path: Path, values: list[float], batches: list[int] | None = None) -> Path:
    """verl console lines (``step:K - critic/score/mean:R``), with ``rollouts_per_step`` if given."""
    lines = []
    for k, r in enumerate(values, start=1):
        extra = f" - rollouts_per_step:{batches[k - 1]}" if batches else ""
        lines.append(f"(TaskRunner pid=1) step:{k} - critic/score/mean:{r:.5f}{extra} - response_length/mean:500\n")
    path.write_text("".join(lines))
    return path


def write_trl(path: Path, values: list[float]) -> Path:
    """TRL's trainer_state.json with ``reward`` per step."""
    path.write_text(json.dumps({"log_history": [{"step": k, "reward": r} for k, r in enumerate(values, start=1)]}))
    return path


def write_wandb(path: Path, values: list[float]) -> Path:
    """A W&B CSV export with ``run - train/reward``."""
    path.write_text("Step,run - train/reward\n" + "".join(f"{k},{r}\n" for k, r in enumerate(values, start=1)))
    return path


def write_trl_console(path: Path, values: list[float]) -> Path:
    """TRL's console output: one printed Python dict per logged step, no step number."""
    path.write_text("".join(f"{{'loss': 0.01, 'reward': {r}, 'completions/mean_length': 300.0}}\n" for r in values))
    return path
