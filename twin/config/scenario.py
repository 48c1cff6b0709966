"""The scenario: one RL training run on one cluster, as validated, typed input.

Read with :func:`twin.config.load.load_scenario`. Every field has a docstring-like
``description`` and, where a serious default exists, that default (vLLM's, verl's, or the
published workload of ../shared/validation/PUBLISHED.md E, as noted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import Field, PrivateAttr, ValidationInfo, field_serializer, field_validator, model_validator

from twin.config.distributions import Component, Distribution, Fixed, Mixture
from twin.config import limits
from twin.config.hardware import DeviceProfile, HostProfile, LinkProfile, Strict
from twin.config.model import ModelArch
from twin.config.registry import resolve_model, resolve_profile
from twin.errors import InputError

Count = Annotated[int, Field(ge=1)]


def _base_dir(info: ValidationInfo) -> Path | None:
    return (info.context or {}).get("base_dir")


def _profile(kinds: tuple[str, ...], field: str):
    """A before-validator that turns a profile name or path into the loaded profile."""

    def load(value, info: ValidationInfo):
        if isinstance(value, str):
            return resolve_profile(value, kinds, field, _base_dir(info))
        return value

    return field_validator(field.rsplit(".", 1)[-1], mode="before")(load)


def _model(field: str):
    def load(value, info: ValidationInfo):
        return resolve_model(value, field, _base_dir(info))

    return field_validator(field.rsplit(".", 1)[-1], mode="before")(load)


def _fill(model: Strict, values: dict) -> None:
    """Set derived defaults on a frozen model while it is still being validated."""
    for name, value in values.items():
        object.__setattr__(model, name, value)


# --------------------------------------------------------------------------- cluster
class Cluster(Strict):
    """Nodes of identical GPUs, an intra-node fabric and an inter-node network."""

    nodes: Count = 1
    gpus_per_node: int = Field(default=8, ge=1, le=72)
    gpu: DeviceProfile = Field(default="h100-sxm", validate_default=True,
                               description="GPU profile name or path.")
    host: HostProfile = Field(default="dgx-h100-host", validate_default=True,
                              description="Host (CPU side) profile name or path.")
    intra_node_link: LinkProfile = Field(default="nvlink4", validate_default=True)
    inter_node_link: LinkProfile = Field(default="ib-ndr400", validate_default=True)
    nics_per_node: Count = Field(default=8, description="Inter-node NICs (rails) per node.")
    host_cpu_cores: int | None = Field(
        default=None, ge=1, description="CPU cores per node; defaults to the host profile's."
    )
    compute_scale: float = Field(
        default=1.0, gt=0, le=1,
        description=(
            "Multiplies the GPU profile's compute efficiencies (GEMM and attention curves): the share "
            "of the profile's kernel rates your framework reaches end to end (launch gaps, unfused "
            "ops, synchronisation). 1: the kernels' rates. Fit it on one phase of one of your runs "
            "(`twin validate` case files can), then predict the others."
        ),
    )

    _gpu = _profile(("gpu", "cpu"), "cluster.gpu")
    _host = _profile(("host",), "cluster.host")
    _intra = _profile(("link",), "cluster.intra_node_link")
    _inter = _profile(("link",), "cluster.inter_node_link")

    _unscaled_gpu: DeviceProfile | None = PrivateAttr(default=None)

    @field_validator("compute_scale")
    @classmethod
    def _a_stack(cls, scale: float) -> float:
        limits.check_compute_scale(scale)
        return scale

    @model_validator(mode="after")
    def _sizes(self) -> Cluster:
        limits.check_cluster(self)
        return self

    @model_validator(mode="after")
    def _scale_compute(self) -> Cluster:
        if self.compute_scale != 1.0:
            self._unscaled_gpu = self.gpu
            _fill(self, {"gpu": self.gpu.with_compute_scaled(self.compute_scale)})
        return self

    @field_serializer("gpu")
    def _dump_unscaled_gpu(self, gpu: DeviceProfile) -> DeviceProfile:
        """A dump holds the profile as given and ``compute_scale`` beside it, so that reloading
        it (the verdict's re-simulations do) scales once, not twice."""
        return self._unscaled_gpu or gpu

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def cpu_cores(self) -> int:
        return self.host_cpu_cores or self.host.cpu_cores


# --------------------------------------------------------------------------- placement
class RolloutPlacement(Strict):
    """Inference engines (vLLM/SGLang-like) that generate the trajectories."""

    gpus: int | None = Field(default=None, ge=1,
                             description="GPUs for rollout; colocated: all GPUs; otherwise half.")
    tp: Count = Field(default=1, description="Tensor-parallel size of one engine.")
    engine: Literal["continuous", "static"] = Field(
        default="continuous",
        description="continuous: vLLM/SGLang continuous batching; static: plain HF generate.",
    )
    max_num_seqs: Count = Field(default=256, description="Running sequences per engine (vLLM default 256).")
    max_num_batched_tokens: Count = Field(
        default=8192, description="Tokens per engine iteration, chunked prefill budget (vLLM 8192)."
    )
    gpu_memory_utilization: float = Field(
        default=0.9, gt=0, le=1,
        description="Fraction of GPU memory the engine may take for weights + KV cache (vLLM 0.9).",
    )
    block_size: Count = Field(default=16, description="KV-cache block size in tokens (vLLM 16).")
    router: Literal["round_robin", "least_loaded"] = "least_loaded"
    scheduling: Literal["overlapped", "synchronous"] = Field(
        default="overlapped",
        description="overlapped: the host schedules the next step while the GPU runs this one (vLLM async "
        "scheduling, its default from 0.14; vLLM 0.6 multi-step; SGLang's overlap scheduler): each step "
        "pays the GPU profile's overhead.per_iteration_s. synchronous: the GPU waits for the host every "
        "step (vLLM V1 up to 0.13, the engine of 2025's RL frameworks): overhead.synchronous_step_s.",
    )

    @model_validator(mode="after")
    def _sizes(self) -> RolloutPlacement:
        limits.check_rollout(self)
        return self

    @model_validator(mode="after")
    def _budget_holds_a_decode_batch(self) -> RolloutPlacement:
        if self.max_num_batched_tokens < self.max_num_seqs:  # vLLM refuses this too
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be at least "
                             f"max_num_seqs ({self.max_num_seqs})")
        return self


class TrainerPlacement(Strict):
    """The learner: FSDP/ZeRO data parallel, optionally with tensor and pipeline parallel."""

    gpus: int | None = Field(default=None, ge=1,
                             description="GPUs for training; colocated: all GPUs; otherwise half.")
    tp: Count = 1
    pp: Count = 1
    sp: Count = Field(
        default=1, description="Ulysses sequence parallelism (verl ulysses_sequence_parallel_size): each "
        "sequence's tokens split over sp GPUs, attention heads exchanged by all-to-all; data parallel "
        "groups = GPUs / (tp × pp × sp), sharded state spread over all GPUs / (tp × pp).")
    zero_stage: Literal[0, 1, 2, 3] = Field(
        default=3, description="0: DDP; 1: shard optimizer; 2: + grads; 3: + params (FSDP)."
    )
    recompute: bool = Field(default=True, description="Activation checkpointing (verl's default).")
    offload_optimizer: bool = Field(
        default=False, description="Colocated: optimizer state waits on the host while the engine "
        "generates (verl optimizer_offload; NeMo-RL offloads before refit).")
    offload_params: bool = Field(
        default=False, description="Colocated: weights and grads wait on the host while the engine "
        "generates (verl param_offload).")
    micro_batch_tokens: Count = Field(
        default=16384, description="Tokens per GPU per micro-batch (verl ppo_max_token_len_per_gpu)."
    )
    kernels: Literal["eager", "fused"] = Field(
        default="eager",
        description="eager: HF model code, one kernel per norm/rotary/activation (verl FSDP, "
        "OpenRLHF, TRL); fused: Megatron-core/TransformerEngine fused kernels (NeMo-RL Megatron).",
    )

    @model_validator(mode="after")
    def _sizes(self) -> TrainerPlacement:
        limits.check_trainer(self)
        return self


class Placement(Strict):
    mode: Literal["colocated", "disaggregated", "async"] = "colocated"
    rollout: RolloutPlacement = Field(default_factory=RolloutPlacement)
    trainer: TrainerPlacement = Field(default_factory=TrainerPlacement)
    reward_model_gpus: int = Field(default=0, ge=0, description="GPUs for a reward model or judge.")


# --------------------------------------------------------------------------- algorithm
class DynamicSampling(Strict):
    """DAPO: drop groups whose rewards have no variance, generate more until the batch is full."""

    enabled: bool = False
    zero_variance_fraction: float = Field(
        default=0.0, ge=0, lt=1,
        description="Fraction of groups that are all-correct or all-wrong (filtered out).",
    )
    max_rounds: Count = Field(default=8, description="Give up over-generating after this many rounds.")


class Algorithm(Strict):
    name: Literal["grpo", "ppo", "dapo"] = "grpo"
    prompts_per_step: Count = 512
    responses_per_prompt: Count = Field(default=16, description="Group size (GRPO/DAPO); 1 for PPO.")
    ppo_epochs: Count = 1
    minibatches: Count = Field(default=1, description="Optimizer steps per epoch.")
    old_logprob: bool = Field(default=True, description="Recompute old log-probs with the trainer.")
    reference: bool | None = Field(
        default=None, description="Reference-policy pass for the KL term; default off for DAPO."
    )
    critic: bool | None = Field(default=None, description="Value model; default on for PPO only.")
    staleness: int = Field(default=0, ge=0, description="Max policy versions a sample may lag.")
    partial_rollout: bool = Field(
        default=False, description="Weight updates interrupt generation, which then continues."
    )
    dynamic_sampling: DynamicSampling = Field(default_factory=DynamicSampling)

    @model_validator(mode="after")
    def _sizes(self) -> Algorithm:
        limits.check_algorithm(self)
        return self

    @model_validator(mode="after")
    def _algorithm_defaults(self) -> Algorithm:
        updates: dict = {}
        if self.reference is None:
            updates["reference"] = self.name != "dapo"
        if self.critic is None:
            updates["critic"] = self.name == "ppo"
        if self.name == "dapo" and "dynamic_sampling" not in self.model_fields_set:
            updates["dynamic_sampling"] = DynamicSampling(enabled=True)
        _fill(self, updates)
        return self

    @property
    def trajectories_per_step(self) -> int:
        return self.prompts_per_step * self.responses_per_prompt


# --------------------------------------------------------------------------- workload
# The math-reasoning workload of PUBLISHED.md E (Intern-S1 via PolyTrace): a 4-component
# Gaussian mixture of response lengths, prompts of about 141 tokens.
MATH_RESPONSES = Mixture(
    kind="mixture",
    min=1,
    max=32768,
    components=[
        Component(weight=0.36, mean=4959, sd=1500),
        Component(weight=0.37, mean=9175, sd=1500),
        Component(weight=0.07, mean=12720, sd=1500),
        Component(weight=0.19, mean=17655, sd=3000),
    ],
)


class MultiTurn(Strict):
    """Agentic trajectories: generation alternates with tool calls."""

    tool_calls: Distribution = Field(description="Tool calls per trajectory.")
    tool_latency_s: Distribution = Field(description="Latency of one tool call, seconds.")
    tool_reply_tokens: Distribution = Field(description="Tokens a tool reply adds to the context.")

    @model_validator(mode="after")
    def _sizes(self) -> MultiTurn:
        limits.check_tool_calls(self.tool_calls)
        limits.check_seconds("workload.multi_turn.tool_latency_s", self.tool_latency_s)
        limits.check_tokens("workload.multi_turn.tool_reply_tokens", self.tool_reply_tokens)
        return self


class Workload(Strict):
    prompt_tokens: Distribution = Field(
        default=Fixed(kind="fixed", value=141), description="Prompt length (tokens)."
    )
    response_tokens: Distribution = Field(
        default=MATH_RESPONSES,
        description="Tokens generated per turn; its max is the engine's max response length.",
    )
    multi_turn: MultiTurn | None = None

    @field_validator("response_tokens")
    @classmethod
    def _bounded(cls, d):
        if not np.isfinite(d.upper_bound()):
            raise ValueError("an unbounded response length needs a 'max' (the max response length)")
        return d

    @model_validator(mode="after")
    def _sizes(self) -> Workload:
        limits.check_tokens("workload.prompt_tokens", self.prompt_tokens)
        limits.check_tokens("workload.response_tokens", self.response_tokens)
        return self

    @property
    def max_response_tokens(self) -> int:
        return int(self.response_tokens.upper_bound())


# --------------------------------------------------------------------------- reward
class RuleReward(Strict):
    """A rule/verifier function run on the host; cost per sample on one CPU core."""

    kind: Literal["rule"]
    cpu_seconds: Distribution = Field(
        default=Fixed(kind="fixed", value=0.0),
        description="CPU seconds per sample (default: negligible; measure yours).",
    )

    @model_validator(mode="after")
    def _sizes(self) -> RuleReward:
        limits.check_reward(self)
        return self


class SandboxReward(Strict):
    """Code execution in a pool of CPU sandboxes (a many-server queue)."""

    kind: Literal["sandbox"]
    workers: Count = Field(description="Concurrent sandboxes.")
    latency_s: Distribution = Field(description="Execution time of one sample, seconds.")
    timeout_s: float = Field(default=30.0, gt=0)
    failure_rate: float = Field(default=0.0, ge=0, lt=1, description="Fraction that fail and retry.")
    max_retries: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _sizes(self) -> SandboxReward:
        limits.check_reward(self)
        return self


class ModelReward(Strict):
    """A reward model (one forward pass per sample) on placement.reward_model_gpus."""

    kind: Literal["reward_model"]
    model: ModelArch
    tp: Count = 1

    _m = _model("reward.model")


class JudgeReward(Strict):
    """An LLM judge that generates a verdict per sample on placement.reward_model_gpus."""

    kind: Literal["judge"]
    model: ModelArch
    tp: Count = 1
    output_tokens: Distribution = Field(default=Fixed(kind="fixed", value=256))

    @model_validator(mode="after")
    def _sizes(self) -> JudgeReward:
        limits.check_tokens("reward.output_tokens", self.output_tokens)
        return self

    _m = _model("reward.model")


Reward = Annotated[Union[RuleReward, SandboxReward, ModelReward, JudgeReward], Field(discriminator="kind")]


# --------------------------------------------------------------------------- weight sync
class WeightSync(Strict):
    """How new weights reach the rollout engines after an optimizer step."""

    method: Literal["auto", "reshard", "nccl_broadcast", "nccl_reshard", "checkpoint"] = Field(
        default="auto",
        description="auto: reshard when colocated, nccl_broadcast otherwise; nccl_reshard is "
        "NeMo-RL's shard-to-shard refit between separate pools.",
    )
    bucket_bytes: float = Field(default=512 * 2**20, gt=0,
                                description="Bucket size for gathering and sending (verl 512 MiB).")
    gather_convert_bytes_per_s: float | None = Field(
        default=None, gt=0,
        description="Sender-side gather/convert/bucketing throughput (default fitted on verl's 72B).",
    )
    staging_bytes_per_s: float | None = Field(
        default=None, gt=0,
        description="Receiver-side staging into the engine, per GPU (default fitted on NeMo-RL's refit).",
    )
    storage_bytes_per_s: float = Field(
        default=2e9, gt=0, description="checkpoint method: shared-storage write+read bandwidth."
    )

    @field_validator("gather_convert_bytes_per_s", "staging_bytes_per_s", "storage_bytes_per_s")
    @classmethod
    def _a_rate(cls, rate: float | None, info: ValidationInfo) -> float | None:
        limits.check_rate(f"weight_sync.{info.field_name}", rate)
        return rate


class Evaluation(Strict):
    every_steps: int = Field(default=0, ge=0, description="0 disables periodic evaluation.")
    prompts: int = Field(default=0, ge=0)
    samples_per_prompt: Count = 1

    @model_validator(mode="after")
    def _sizes(self) -> Evaluation:
        limits.check_evaluation(self)
        return self


class Run(Strict):
    steps: Count = 10
    seed: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _sizes(self) -> Run:
        limits.check_run(self)
        return self


# --------------------------------------------------------------------------- scenario
class Scenario(Strict):
    name: str = "scenario"
    description: str = ""
    model: ModelArch = Field(description="Preset name, inline architecture, or config.json path.")
    cluster: Cluster = Field(default_factory=Cluster)
    placement: Placement = Field(default_factory=Placement)
    algorithm: Algorithm = Field(default_factory=Algorithm)
    workload: Workload = Field(default_factory=Workload)
    reward: Reward = Field(default_factory=lambda: RuleReward(kind="rule"))
    weight_sync: WeightSync = Field(default_factory=WeightSync)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    run: Run = Field(default_factory=Run)

    _m = _model("model")

    @model_validator(mode="after")
    def _sizes(self) -> Scenario:
        limits.check_scenario(self)
        return self

    @model_validator(mode="after")
    def _place(self) -> Scenario:
        """Fill GPU counts by mode and check that the pools fit the cluster."""
        total, p = self.cluster.total_gpus, self.placement
        rm = p.reward_model_gpus
        if rm >= total:
            raise InputError("reward-model GPUs leave none for rollout and training",
                             field="placement.reward_model_gpus", value=rm, allowed=f"0..{total - 1}")
        free = total - rm
        if p.mode == "colocated":
            rollout = p.rollout.gpus or free
            trainer = p.trainer.gpus or free
            if rollout > free or trainer > free:
                field = "rollout" if rollout > free else "trainer"
                raise InputError("colocated pools share the cluster's GPUs and cannot exceed them",
                                 field=f"placement.{field}.gpus",
                                 value=rollout if field == "rollout" else trainer,
                                 allowed=f"1..{free} (cluster has {total}, reward model takes {rm})")
        else:
            rollout = p.rollout.gpus or (free - p.trainer.gpus if p.trainer.gpus else free // 2)
            trainer = p.trainer.gpus or free - rollout
            if rollout < 1 or trainer < 1 or rollout + trainer > free:
                raise InputError(f"{p.mode} pools need their own GPUs",
                                 field="placement.rollout.gpus", value=rollout,
                                 allowed=f"rollout + trainer <= {free} (trainer asks {trainer})")
        if rollout % p.rollout.tp:
            raise InputError("rollout GPUs must split into whole engines of tp GPUs",
                             field="placement.rollout.gpus", value=rollout,
                             allowed=f"a multiple of placement.rollout.tp={p.rollout.tp}")
        if p.rollout.tp > self.cluster.gpus_per_node:
            raise InputError("an engine's tensor parallelism must stay inside one node",
                             field="placement.rollout.tp", value=p.rollout.tp,
                             allowed=f"1..{self.cluster.gpus_per_node}")
        split = p.trainer.tp * p.trainer.pp * p.trainer.sp
        if trainer % split:
            raise InputError("trainer GPUs must be a multiple of tp × pp × sp",
                             field="placement.trainer.gpus", value=trainer, allowed=f"a multiple of {split}")
        if p.trainer.sp > 1 and self.model.num_heads % (p.trainer.tp * p.trainer.sp):
            raise InputError("Ulysses sequence parallelism splits attention heads: tp × sp must divide them",
                             field="placement.trainer.sp", value=p.trainer.sp,
                             allowed=f"tp × sp dividing the model's {self.model.num_heads} heads")
        if p.mode == "colocated" and self.algorithm.staleness > 0:
            raise InputError("a colocated synchronous run has no staleness",
                             field="algorithm.staleness", value=self.algorithm.staleness,
                             allowed="0 with mode colocated; use mode async for bounded staleness")
        if self.reward.kind in ("reward_model", "judge") and rm == 0:
            raise InputError(f"a {self.reward.kind} reward needs GPUs",
                             field="placement.reward_model_gpus", value=0,
                             allowed=f">= reward.tp ({self.reward.tp})")
        _fill(p.rollout, {"gpus": rollout})
        _fill(p.trainer, {"gpus": trainer})
        return self

    @property
    def rollout_engines(self) -> int:
        return self.placement.rollout.gpus // self.placement.rollout.tp

    @property
    def trainer_dp(self) -> int:
        """Data-parallel groups: each takes whole sequences (sp GPUs share each of them)."""
        t = self.placement.trainer
        return t.gpus // (t.tp * t.pp * t.sp)

    @property
    def trainer_shards(self) -> int:
        """GPUs that ZeRO/FSDP shards one tp × pp slice of the model over (data and sequence
        parallel ranks alike)."""
        t = self.placement.trainer
        return t.gpus // (t.tp * t.pp)


def resolved_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data; hardware profiles appear by name with their source."""
    data = scenario.model_dump(mode="json")
    cluster = data["cluster"]
    for key in ("gpu", "host", "intra_node_link", "inter_node_link"):
        prof = getattr(scenario.cluster, key)
        cluster[key] = f"{prof.name} ({prof.provenance.source})"
    return data
