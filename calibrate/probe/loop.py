"""One probe configuration, run for a few steps with each phase timed.

A step: sample prompts (``prompts`` × ``group`` rows) and target response lengths, generate
(static or continuous batching, or transformers' own ``generate`` as TRL runs it: engine
``hf_generate``, calibrate.probe.hf), score in the reward pool, old-logprob and reference passes,
one GRPO update. Phases run one after another (colocated, synchronous), the engine sharing
the learner's weights, so there is no weight sync to time. The first ``warmup_steps`` steps
are run but not reported (allocator and thread-pool warm-up).

On a GPU (``device='cuda'``) the model, the KV cache and generation live on the device; the
device is synchronised before each phase's timer is read (``torch.cuda.synchronize``), so a
phase's time is wall time from its first launch to its last kernel's end, host work (Python
dispatch, the reward pool) included, and CUDA events record the device-side span of each
phase beside it (``StepRecord.device_s``).
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
    engine: str = "static"  # or "continuous", or "hf_generate" (transformers' generate, calibrate.probe.hf)
    slots: int = 8  # continuous batching: rows the engine runs at once
    reward_workers: int = 4
    reward_latency_s: float = 0.02
    steps: int = 2
    warmup_steps: int = 1
    seed: int = 0
    micro_rows: int = 0  # learner micro-batch in rows; 0: all rows at once

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
    device_s: dict[str, float] = field(default_factory=dict)  # CUDA-event span per phase (GPU only)

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


def run_probe(cfg: ProbeConfig, progress=None, device: str = "cpu") -> ProbeResult:
    """Run ``cfg`` on ``device`` and time its phases (wall clock after synchronising the device)."""
    import torch

    from calibrate.env import keep_freed_memory
    from calibrate.probe.engine import generate_continuous, generate_static
    from calibrate.probe.learner import Learner, group_advantages, pack
    from calibrate.probe.model import Decoder
    from calibrate.probe.reward import RewardPool

    keep_freed_memory()  # host memory reused as a caching allocator reuses it (see its docstring)
    if cfg.engine not in ("static", "continuous", "hf_generate"):
        raise ValueError(f"engine must be static, continuous or hf_generate, not {cfg.engine!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch sees no GPU")
    torch.manual_seed(cfg.seed)
    model = Decoder(cfg.model, seed=cfg.seed).to(device=device, dtype=cfg.model.torch_dtype)
    learner = Learner(model, micro_rows=cfg.micro_rows)
    if cfg.engine == "hf_generate":  # TRL without vLLM: HF generate on a model of the same shape
        from calibrate.probe.hf import generate_hf, hf_model

        hf = hf_model(cfg.model, cfg.seed).to(device)
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    timer = _Timer(device)
    result = ProbeResult(cfg)
    with RewardPool(cfg.reward_workers, cfg.reward_latency_s) as reward:
        for step in range(cfg.warmup_steps + cfg.steps):
            prompts_np, targets = draw_step(cfg, step)
            prompts = torch.from_numpy(prompts_np).to(device)
            timer.start()
            if cfg.engine == "hf_generate":
                out = generate_hf(hf, prompts, targets)
            elif cfg.engine == "static":
                out = generate_static(model, prompts, targets, gen)
            else:
                out = generate_continuous(model, prompts, targets, cfg.slots, gen)
            timer.lap("generation")
            rewards = reward(out.responses)
            timer.lap("reward")
            tokens, mask = pack(prompts, out.responses)
            old = learner.old_logprobs(tokens)
            timer.lap("old_logprob")
            ref = learner.ref_logprobs(tokens)
            timer.lap("reference")
            loss = learner.update(tokens, mask, group_advantages(rewards, cfg.group), old, ref)
            timer.lap("update_actor")
            times, device_s = timer.read()
            if step >= cfg.warmup_steps:
                result.steps.append(StepRecord(times, targets, loss, device_s))
            if progress:
                progress(f"{cfg.name}: step {step + 1}/{cfg.warmup_steps + cfg.steps} "
                         f"{sum(times.values()):.2f} s" + (" (warm-up)" if step < cfg.warmup_steps else ""))
    return result


class _Timer:
    """Phase laps: wall time after synchronising the device; CUDA events beside it on a GPU."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch = torch
        self.cuda = device.startswith("cuda")

    def _sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def _event(self):
        ev = self.torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def start(self) -> None:
        from calibrate.timing import cpu_clock

        self._sync()
        self.times: dict[str, float] = {}
        self.events = [("start", self._event())] if self.cuda else []
        # calibrate.timing.cpu_clock: this thread's CPU time where asked for, but the reward
        # phase waits on its pool's workers (latency), which only wall time sees
        self.clock = time.perf_counter if self.cuda else cpu_clock()
        self.t, self.wall = self.clock(), time.perf_counter()

    def lap(self, phase: str) -> None:
        if self.cuda:
            self.events.append((phase, self._event()))
        self._sync()
        now, wall = self.clock(), time.perf_counter()
        self.times[phase] = wall - self.wall if phase == "reward" else now - self.t
        self.t, self.wall = now, wall

    def read(self) -> tuple[dict[str, float], dict[str, float]]:
        device_s = {}
        for (_, a), (phase, b) in zip(self.events, self.events[1:]):
            device_s[phase] = a.elapsed_time(b) / 1e3
        return self.times, device_s
