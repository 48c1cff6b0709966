"""One probe configuration, run for a few steps with each phase timed.

A step: sample prompts (``prompts`` × ``group`` rows) and target response lengths, generate
(static or continuous batching), score in the reward pool, old-logprob and reference passes,
one GRPO update. Phases run one after another (colocated, synchronous), the engine sharing
the learner's weights, so there is no weight sync to time. The first ``warmup_steps`` steps
are run but not reported (allocator and thread-pool warm-up).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from calibrate.probe.model import DecoderConfig

PHASES = ("generation", "reward", "old_logprob", "reference", "update_actor")


@dataclass(frozen=True)
class ProbeConfig:
    """A probe run: model, batch, lengths, engine, reward pool."""

    name: str
    model: DecoderConfig
    prompts: int = 4
    group: int = 4
    prompt_len: int = 32
    response_min: int = 16
    response_max: int = 64
    engine: str = "static"  # or "continuous"
    slots: int = 8  # continuous batching: rows the engine runs at once
    reward_workers: int = 4
    reward_latency_s: float = 0.02
    steps: int = 2
    warmup_steps: int = 1
    seed: int = 0

    @property
    def rows(self) -> int:
        return self.prompts * self.group

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class StepRecord:
    """One measured step: seconds per phase and the response lengths it drew."""

    phases: dict[str, float]
    targets: list[int]
    loss: float

    @property
    def step_s(self) -> float:
        return sum(self.phases.values())


@dataclass
class ProbeResult:
    config: ProbeConfig
    steps: list[StepRecord] = field(default_factory=list)

    def median(self, phase: str) -> float:
        if phase == "step":
            return statistics.median(s.step_s for s in self.steps)
        return statistics.median(s.phases[phase] for s in self.steps)


def draw_step(cfg: ProbeConfig, step: int) -> tuple[np.ndarray, list[int]]:
    """Prompts (rows × prompt_len, each prompt repeated ``group`` times) and target lengths."""
    rng = np.random.default_rng([cfg.seed, step])
    prompts = rng.integers(0, cfg.model.vocab, size=(cfg.prompts, cfg.prompt_len))
    targets = rng.integers(cfg.response_min, cfg.response_max + 1, size=cfg.rows)
    return np.repeat(prompts, cfg.group, axis=0), [int(t) for t in targets]


def run_probe(cfg: ProbeConfig, progress=None) -> ProbeResult:
    """Run ``cfg`` and time its phases (wall clock; the CPU has no asynchronous queue)."""
    import torch

    from calibrate.probe.engine import generate_continuous, generate_static
    from calibrate.probe.learner import Learner, group_advantages, pack
    from calibrate.probe.model import Decoder
    from calibrate.probe.reward import RewardPool

    if cfg.engine not in ("static", "continuous"):
        raise ValueError(f"engine must be static or continuous, not {cfg.engine!r}")
    torch.manual_seed(cfg.seed)
    model = Decoder(cfg.model, seed=cfg.seed)
    learner = Learner(model)
    gen = torch.Generator().manual_seed(cfg.seed)
    result = ProbeResult(cfg)
    with RewardPool(cfg.reward_workers, cfg.reward_latency_s) as reward:
        for step in range(cfg.warmup_steps + cfg.steps):
            prompts_np, targets = draw_step(cfg, step)
            prompts = torch.from_numpy(prompts_np)
            times: dict[str, float] = {}
            t = time.perf_counter()
            if cfg.engine == "static":
                out = generate_static(model, prompts, targets, gen)
            else:
                out = generate_continuous(model, prompts, targets, cfg.slots, gen)
            times["generation"], t = _lap(t)
            rewards = reward(out.responses)
            times["reward"], t = _lap(t)
            tokens, mask = pack(prompts, out.responses)
            old = learner.old_logprobs(tokens)
            times["old_logprob"], t = _lap(t)
            ref = learner.ref_logprobs(tokens)
            times["reference"], t = _lap(t)
            loss = learner.update(tokens, mask, group_advantages(rewards, cfg.group), old, ref)
            times["update_actor"], t = _lap(t)
            if step >= cfg.warmup_steps:
                result.steps.append(StepRecord(times, targets, loss))
            if progress:
                progress(f"{cfg.name}: step {step + 1}/{cfg.warmup_steps + cfg.steps} "
                         f"{sum(times.values()):.2f} s" + (" (warm-up)" if step < cfg.warmup_steps else ""))
    return result


def _lap(t0: float) -> tuple[float, float]:
    now = time.perf_counter()
    return now - t0, now
