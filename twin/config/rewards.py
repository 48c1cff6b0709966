"""Reward kinds: each one's input fields, declared once.

Every kind is a pool of servers with a service time per sample (the simulation serves them
with the many-server queue kernel): a rule function on the hosts' CPU cores, a pool of code
sandboxes, a reward model or an LLM judge on its own GPUs. A kind here says what the user
writes, whether it needs GPUs, how many attempts a sample may take, and what "×2 reward
capacity" means for it; what it costs (servers, service times, a step's lower bound) is
priced in :mod:`twin.cost.reward`. Adding a kind is one class here, listed in
:data:`REWARD_KINDS`, and its pricing there.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from twin.config import limits
from twin.config.distributions import Distribution, Fixed
from twin.config.hardware import Strict
from twin.config.model import ModelArch
from twin.config.registry import resolve_model

Count = Annotated[int, Field(ge=1)]


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

    def doubled(self, scenario) -> dict:
        """The overrides that double its capacity (``scenario``: a Scenario or its Plan)."""
        return {"cluster.host_cpu_cores": 2 * scenario.cluster.cpu_cores}


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

    def doubled(self, scenario) -> dict:
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

    def doubled(self, scenario) -> dict:
        return {"placement.reward_model_gpus": 2 * scenario.placement.reward_model_gpus}


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


REWARD_KINDS = (RuleReward, SandboxReward, ModelReward, JudgeReward)
Reward = Annotated[Union[REWARD_KINDS], Field(discriminator="kind")]
