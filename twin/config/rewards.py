"""Reward kinds: each one's input fields and its behaviour, declared once.

Every kind is a pool of servers with a service time per sample (the simulation serves them
with the many-server queue kernel): a rule function on the hosts' CPU cores, a pool of code
sandboxes, a reward model or an LLM judge on its own GPUs. A kind says how many servers it has,
what one sample costs, the analytic lower bound of a step's reward work, and what "×2 reward
capacity" means for it. Adding a kind is one class here, listed in :data:`REWARD_KINDS`.

Methods take the resolved :class:`twin.config.plan.Plan` (GPU counts, the scaled device profile).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Union

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from twin.config import limits
from twin.config.distributions import Distribution, Fixed
from twin.config.hardware import Strict
from twin.config.model import ModelArch
from twin.config.registry import resolve_model
from twin.cost import transformer
from twin.cost.roofline import compute_time

if TYPE_CHECKING:
    from twin.config.plan import Plan

Count = Annotated[int, Field(ge=1)]
# (service seconds per attempt [n, tries], failed per attempt [n, tries], timeout seconds)
Service = tuple[np.ndarray, np.ndarray, float]


def _no_failures(service: np.ndarray) -> Service:
    return service[:, None], np.zeros((len(service), 1), bool), np.inf


class RuleReward(Strict):
    """A rule/verifier function run on the host; cost per sample on one CPU core."""

    kind: Literal["rule"]
    cpu_seconds: Distribution = Field(
        default=Fixed(kind="fixed", value=0.0),
        description="CPU seconds per sample (default: negligible; measure yours).",
    )

    needs_gpus: ClassVar[bool] = False
    attempts_per_sample: ClassVar[int] = 1

    @model_validator(mode="after")
    def _sizes(self) -> RuleReward:
        limits.check_seconds("reward.cpu_seconds", self.cpu_seconds)
        return self

    def servers(self, plan: Plan) -> int:
        return plan.cluster.cpu_cores * plan.cluster.nodes

    def service(self, plan: Plan, rng: np.random.Generator, context: np.ndarray) -> Service:
        return _no_failures(self.cpu_seconds.sample(rng, len(context)))

    def bound(self, plan: Plan, sequences: np.ndarray) -> float:
        return len(sequences) * self.cpu_seconds.clipped_mean() / self.servers(plan)

    def doubled(self, plan: Plan) -> dict:
        return {"cluster.host_cpu_cores": 2 * plan.cluster.cpu_cores}


class SandboxReward(Strict):
    """Code execution in a pool of CPU sandboxes (a many-server queue)."""

    kind: Literal["sandbox"]
    workers: Count = Field(description="Concurrent sandboxes.")
    latency_s: Distribution = Field(description="Execution time of one sample, seconds.")
    timeout_s: float = Field(default=30.0, gt=0)
    failure_rate: float = Field(default=0.0, ge=0, lt=1, description="Fraction that fail and retry.")
    max_retries: int = Field(default=1, ge=0)

    needs_gpus: ClassVar[bool] = False

    @model_validator(mode="after")
    def _sizes(self) -> SandboxReward:
        limits.check_sandbox(self)
        return self

    @property
    def attempts_per_sample(self) -> int:
        return 1 + self.max_retries

    def servers(self, plan: Plan) -> int:
        return self.workers

    def service(self, plan: Plan, rng: np.random.Generator, context: np.ndarray) -> Service:
        n, tries = len(context), 1 + self.max_retries
        service = self.latency_s.sample(rng, n * tries).reshape(n, tries)
        failed = rng.random((n, tries)) < self.failure_rate
        return service, failed, self.timeout_s

    def bound(self, plan: Plan, sequences: np.ndarray) -> float:
        per_sample = min(self.latency_s.clipped_mean(), self.timeout_s)
        return len(sequences) * per_sample / self.workers / (1 - self.failure_rate)

    def doubled(self, plan: Plan) -> dict:
        return {"reward.workers": 2 * self.workers}


class _GpuReward(Strict):
    """A model on ``placement.reward_model_gpus``, one engine per ``tp`` GPUs."""

    model: ModelArch
    tp: Count = 1

    needs_gpus: ClassVar[bool] = True
    attempts_per_sample: ClassVar[int] = 1

    @field_validator("model", mode="before")
    @classmethod
    def _load_model(cls, value, info: ValidationInfo):
        return resolve_model(value, "reward.model", (info.context or {}).get("base_dir"))

    def servers(self, plan: Plan) -> int:
        return max(1, plan.reward_model_gpus // self.tp)

    def _verdict_tokens(self, rng: np.random.Generator, n: int) -> np.ndarray | float:
        """Tokens each sample's verdict decodes (a reward model scores without decoding)."""
        return 0.0

    def _mean_verdict_tokens(self) -> float:
        return 0.0

    def service(self, plan: Plan, rng: np.random.Generator, context: np.ndarray) -> Service:
        # One forward pass scores a sample; a judge also decodes its verdict, one forward per
        # output token, batched over its engine.
        arch = self.model
        flops = np.array([transformer.logprob_flops(arch, [c]) for c in context])
        flops = flops + 2.0 * transformer.body_params(arch) * self._verdict_tokens(rng, len(context))
        per_call = transformer.gemm_flops_per_call(arch, 8192) / self.tp
        return _no_failures(np.array([compute_time(f / self.tp, plan.gpu, arch.dtype, per_call) for f in flops]))

    def bound(self, plan: Plan, sequences: np.ndarray) -> float:
        arch = self.model
        flops = transformer.logprob_flops(arch, sequences)
        flops += 2.0 * transformer.body_params(arch) * self._mean_verdict_tokens() * len(sequences)
        return compute_time(flops / plan.reward_model_gpus, plan.gpu, arch.dtype,
                            transformer.gemm_flops_per_call(arch, 8192))

    def doubled(self, plan: Plan) -> dict:
        return {"placement.reward_model_gpus": 2 * plan.reward_model_gpus}


class ModelReward(_GpuReward):
    """A reward model (one forward pass per sample) on placement.reward_model_gpus."""

    kind: Literal["reward_model"]


class JudgeReward(_GpuReward):
    """An LLM judge that generates a verdict per sample on placement.reward_model_gpus."""

    kind: Literal["judge"]
    output_tokens: Distribution = Field(default=Fixed(kind="fixed", value=256))

    @model_validator(mode="after")
    def _sizes(self) -> JudgeReward:
        limits.check_tokens("reward.output_tokens", self.output_tokens)
        return self

    def _verdict_tokens(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.output_tokens.sample(rng, n)

    def _mean_verdict_tokens(self) -> float:
        return self.output_tokens.clipped_mean()


REWARD_KINDS = (RuleReward, SandboxReward, ModelReward, JudgeReward)
Reward = Annotated[Union[REWARD_KINDS], Field(discriminator="kind")]
