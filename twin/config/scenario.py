"""The scenario: one RL training run on one cluster, as validated, typed input.

Read with :func:`twin.config.load.load_scenario`. Every field has a docstring-like
``description`` and, where a serious default exists, that default (vLLM's, verl's, or the
published math-reasoning workload of docs/validation.md, as noted).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from twin.config import limits
from twin.config.distributions import Component, Distribution, Fixed, Mixture
from twin.config.engines import ENGINE_KINDS, EngineName
from twin.config.faults import Faults
from twin.config.learning import Learning
from twin.config.frameworks import is_path
from twin.config.hardware import DeviceProfile, Dtype, HostProfile, LinkProfile, Strict
from twin.config.model import ModelArch
from twin.config.modes import MODES, mode
from twin.config.registry import resolve_model, resolve_profile
from twin.config.rewards import Reward, RuleReward
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

    nodes: Count = Field(default=1, description="Nodes, each of gpus_per_node GPUs.")
    gpus_per_node: int = Field(default=8, ge=1, le=72, description="GPUs per node (an engine's tp stays inside one, "
                               "or inside its NVLink domain).")
    gpu: DeviceProfile = Field(default="h100-sxm", validate_default=True,
                               description="GPU profile name or path.")
    host: HostProfile = Field(default="dgx-h100-host", validate_default=True,
                              description="Host (CPU side) profile name or path.")
    intra_node_link: LinkProfile = Field(default="nvlink4", validate_default=True,
                                         description="Link profile between the GPUs of a node (of an NVLink "
                                         "domain, when nvlink_domain_gpus spans nodes).")
    inter_node_link: LinkProfile = Field(default="ib-ndr400", validate_default=True,
                                         description="Link profile between nodes (per NIC rail).")
    nics_per_node: Count = Field(default=8, description="Inter-node NICs (rails) per node.")
    nvlink_domain_gpus: int | None = Field(
        default=None, ge=1, le=limits.MAX_DOMAIN_GPUS,
        description=(
            "GPUs one NVLink switch domain joins, when it spans several nodes (GB200/GB300 NVL72: 72 GPUs "
            "on 18 compute trays of 4, so gpus_per_node: 4 and nvlink_domain_gpus: 72): a multiple of "
            "gpus_per_node. Inside a domain every GPU reaches every other over intra_node_link, across "
            "nodes too; between domains traffic goes through the nodes' NICs (inter_node_link). "
            "Absent: a domain is one node."
        ),
    )
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
    def _whole_nodes_per_domain(self) -> Cluster:
        d, g = self.nvlink_domain_gpus, self.gpus_per_node
        if d is None:
            return self
        if d % g:
            raise InputError("an NVLink domain is made of whole nodes (compute trays)",
                             field="cluster.nvlink_domain_gpus", value=d,
                             allowed=f"a multiple of cluster.gpus_per_node ({g}), e.g. {g * max(1, d // g)}")
        if d > g and self.intra_node_link.is_mesh:
            raise InputError(f"{self.intra_node_link.name} is a mesh of direct links inside a node, with no "
                             "switch to join nodes", field="cluster.nvlink_domain_gpus", value=d,
                             allowed=f"{g} (one node) with this intra_node_link, or a switched link (nvlink5)")
        return self

    @property
    def domain_gpus(self) -> int:
        """GPUs of one NVLink domain: cluster.nvlink_domain_gpus, else one node."""
        return self.nvlink_domain_gpus or self.gpus_per_node

    def engine_tp_fits(self, tp: int) -> bool:
        """Whether an engine of ``tp`` consecutive GPUs keeps its all-reduces on one domain's
        links or spans whole nodes (a domain laid out in engines of tp, or tp within a node)."""
        g, d = self.gpus_per_node, self.domain_gpus
        return tp <= g or tp % g == 0 or (tp <= d and d % tp == 0)

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
    tp: Count = Field(default=1, description="Tensor-parallel size of one engine: within a node, a divisor of "
                      "cluster.nvlink_domain_gpus (its all-reduces stay on NVLink across trays), or whole nodes (a "
                      "multiple of cluster.gpus_per_node), whose all-reduces then cross the inter-node link.")
    pp: Count = Field(default=1, description="Pipeline stages of one engine (vLLM pipeline_parallel_size): an "
                      "engine is tp × pp GPUs, each stage 1/pp of the layers, pp micro-batches in flight.")
    expert_parallel: bool = Field(
        default=False, description="MoE models: the experts of each MoE layer are spread over the engine's tp "
        "GPUs (vLLM --enable-expert-parallel, SGLang --ep-size = tp) instead of each being tensor-split. With "
        "tensor-parallel attention every GPU sees every token and the same all-reduce sums the experts' "
        "outputs (the cost of tp); with dp_attention each MoE layer dispatches and combines by all-to-all.")
    dp_attention: bool = Field(
        default=False, description="With expert_parallel: attention runs data-parallel over the engine's tp "
        "GPUs (SGLang --enable-dp-attention, vLLM data-parallel attention with expert parallelism), each GPU "
        "holding whole attention weights and its own sequences' KV cache: no attention all-reduce, and an MLA "
        "latent is no longer replicated tp times ('wide EP').")
    engine: EngineName = Field(
        default="continuous",
        description="; ".join(f"{k.name}: {k.description}" for k in ENGINE_KINDS.values()) + ".",
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
    dtype: Dtype | None = Field(
        default=None,
        description="Precision of the engines' weights and GEMMs (vLLM quantization=fp8: fp8). fp8 halves "
        "the weight bytes a step reads and runs GEMMs at the GPU profile's fp8 peak; weight sync then "
        "quantises (weight_sync.quantise_on). Default: the model's dtype.")
    kv_dtype: Dtype | None = Field(
        default=None,
        description="Precision of the KV cache (vLLM kv_cache_dtype). Default: the model's dtype, "
        "whatever the weights' (vLLM's auto).")
    router: Literal["round_robin", "least_loaded"] = Field(
        default="least_loaded", description="How new requests pick an engine.")
    enforce_eager: bool = Field(
        default=False, description="vLLM enforce_eager: no CUDA graphs, every kernel dispatched by the host, "
        "so no iteration is shorter than the host's dispatch of its kernels (docs/cost-models.md).")
    speculative: Literal["none", "mtp", "eagle", "draft_model"] = Field(
        default="none", description="Speculative decoding (vLLM speculative_config, chain drafting): mtp (the "
        "model's multi-token-prediction head) or eagle (an EAGLE head), each one layer of the model's width, or "
        "draft_model (speculative_draft_model): num_speculative_tokens drafted per step, verified in one forward.")
    num_speculative_tokens: Count = Field(
        default=3, description="Draft tokens per step (vLLM num_speculative_tokens), verified together.")
    speculative_acceptance: float | None = Field(
        default=None, gt=0, lt=1, description="Probability that a draft token is accepted (each independently): "
        "tokens per step (1 - a^(k+1)) / (1 - a). Default for mtp 0.85 (DeepSeek-V3 report); eagle and "
        "draft_model need this or speculative_accepted_per_step (it depends on the drafter and the policy).")
    speculative_accepted_per_step: float | None = Field(
        default=None, ge=1, description="Measured mean tokens a sequence gains per verify step, accepted drafts "
        "+ 1 (vLLM's spec-decode metrics: mean acceptance length); overrides speculative_acceptance.")
    speculative_draft_model: ModelArch | None = Field(
        default=None, description="The draft model of speculative: draft_model (a preset name, inline "
        "architecture or config.json path), run at the engine's tp.")
    prefix_caching: bool = Field(
        default=True, description="KV prefix caching (vLLM V1 enable_prefix_caching, its default and verl's; "
        "SGLang's radix cache): a GRPO group's responses go to one engine and prefill their shared prompt "
        "once, and a preempted sequence resumes from the blocks of it still cached (freed blocks are "
        "evicted least recently freed first, a sequence's tail first). false: every prefill from scratch.")
    scheduling: Literal["overlapped", "synchronous"] = Field(
        default="overlapped",
        description="overlapped: the host schedules the next step while the GPU runs this one (vLLM async "
        "scheduling, its default from 0.14; vLLM 0.6 multi-step; SGLang's overlap scheduler): each step "
        "pays the GPU profile's overhead.per_iteration_s. synchronous: the GPU waits for the host every "
        "step (vLLM V1 up to 0.13, the engine of 2025's RL frameworks): overhead.synchronous_step_s.",
    )
    step_overhead_s: float | None = Field(
        default=None, ge=0, le=1,
        description="The host's cost of one engine step on your stack (scheduling, input preparation, output "
        "processing), replacing the GPU profile's per_iteration_s or synchronous_step_s that `scheduling` "
        "picks; `twin fit --profile` fits it on your run's generation time.")

    @model_validator(mode="after")
    def _sizes(self) -> RolloutPlacement:
        limits.check_rollout(self)
        return self

    @field_validator("speculative_draft_model", mode="before")
    @classmethod
    def _draft_model(cls, value, info: ValidationInfo):
        return None if value is None else resolve_model(value, "placement.rollout.speculative_draft_model",
                                                         _base_dir(info))

    @model_validator(mode="after")
    def _speculative_inputs(self) -> RolloutPlacement:
        if self.speculative in ("eagle", "draft_model") and self.speculative_acceptance is None \
                and self.speculative_accepted_per_step is None:
            raise ValueError(f"speculative: {self.speculative} needs speculative_acceptance or "
                             "speculative_accepted_per_step (it depends on the drafter and the policy)")
        if self.speculative == "draft_model" and self.speculative_draft_model is None:
            raise ValueError("speculative: draft_model needs speculative_draft_model (a model preset or config)")
        return self

    @model_validator(mode="after")
    def _dp_attention_needs_ep(self) -> RolloutPlacement:
        if self.dp_attention and not self.expert_parallel:
            raise ValueError("dp_attention runs with expert_parallel: set expert_parallel: true")
        return self

    @property
    def engine_gpus(self) -> int:
        """GPUs of one engine: tp × pp."""
        return self.tp * self.pp

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
    tp: Count = Field(default=1, description="Megatron tensor parallelism of the trainer.")
    pp: Count = Field(default=1, description="Pipeline stages of the trainer (1F1B).")
    sp: Count = Field(
        default=1, description="Ulysses sequence parallelism (verl ulysses_sequence_parallel_size): each "
        "sequence's tokens split over sp GPUs, attention heads exchanged by all-to-all; data parallel "
        "groups = GPUs / (tp × pp × sp), sharded state spread over all GPUs / (tp × pp).")
    cp: Count = Field(
        default=1, description="Context parallelism (Megatron ring attention): each sequence's tokens split over "
        "cp GPUs, keys and values passed round the ring in every attention layer; data parallel groups = "
        "GPUs / (tp × pp × cp). micro_batch_tokens stays per GPU.")
    ep: Count = Field(
        default=1, description="Megatron expert parallelism (MoE models): each MoE layer's routed experts split "
        "over ep GPUs, tokens dispatched and combined by all-to-all. Megatron's MoE parallel folding: the ep "
        "GPUs are drawn from one pipeline stage's tp × cp × dp GPUs (ep divides GPUs / pp), experts are not "
        "tensor-split (expert_tensor_parallel_size 1) and their state is sharded over the "
        "GPUs / (pp × ep) expert-data-parallel ranks.")
    expert_load_imbalance: float = Field(
        default=1.2, ge=1.0, le=8.0,
        description="Busiest EP rank's routed tokens over the mean, in every MoE layer: the rank that sets the "
        "pace. 1.2: the batch-level maximal violation of about 0.2 that Wang et al. 2024 (arXiv 2408.15664, "
        "auxiliary-loss-free balancing, the router of DeepSeek-V3) plot during training.")
    zero_stage: Literal[0, 1, 2, 3] = Field(
        default=3, description="0: DDP; 1: shard optimizer; 2: + grads; 3: + params (FSDP)."
    )
    recompute: bool = Field(default=True, description="Activation checkpointing (verl's default).")
    dtype: Dtype | None = Field(
        default=None,
        description="Precision of the trainer's GEMMs (fp8: TransformerEngine fp8 recipes, at the GPU "
        "profile's fp8 peak). Weights, gradients and optimizer state keep theirs. Default: the model's "
        "dtype.")
    offload_optimizer: bool = Field(
        default=False, description="Colocated: optimizer state waits on the host while the engine "
        "generates (verl optimizer_offload; NeMo-RL offloads before refit).")
    offload_params: bool = Field(
        default=False, description="Colocated: weights and grads wait on the host while the engine "
        "generates (verl param_offload).")
    micro_batch_tokens: Count = Field(
        default=16384, description="Tokens per GPU per micro-batch of the update (verl ppo_max_token_len_per_gpu)."
    )
    logprob_micro_batch_tokens: Count | None = Field(
        default=None, description="Tokens per GPU per micro-batch of a scoring pass (old log-probs, reference, "
        "values; verl log_prob_max_token_len_per_gpu). None: micro_batch_tokens.")
    logprob_kernel: Literal["fp32", "inplace", "fused"] = Field(
        default="fp32",
        description="How the learner turns the head's output into log-probs (twin/cost/logits.py): fp32, the "
        "logits upcast to fp32 and a log-softmax whose gradient is a second fp32 tensor (HF loss code); "
        "inplace, 16-bit logits and a cross-entropy kernel that writes their gradient into the same buffer "
        "(verl's flash-attn cross_entropy_loss); fused, chunked linear + cross-entropy with no logits "
        "tensor (verl use_fused_kernels, Liger).")
    shard_size: Count | None = Field(
        default=None, description="GPUs one copy of the sharded state spans (hybrid sharding, verl "
        "fsdp_config.fsdp_size): ZeRO shards within groups of this many consecutive GPUs and the groups "
        "hold replicas whose gradients are all-reduced. None: one group of all trainer GPUs / (tp × pp).")
    remove_padding: bool = Field(
        default=True, description="Compute only real tokens (verl use_remove_padding, packed sequences); "
        "false: every sequence is computed at the padded length max prompt + max response.")
    kernels: Literal["eager", "fused"] = Field(
        default="eager",
        description="eager: HF model code, one kernel per norm/rotary/activation (verl FSDP, "
        "OpenRLHF, TRL); fused: Megatron-core/TransformerEngine fused kernels (NeMo-RL Megatron).",
    )
    controller_positions_per_s: float | None = Field(
        default=None, gt=0,
        description="Single-controller data path (verl's driver and Ray): every learner pass ships the "
        "batch between the controller and the workers padded to the longest position a sequence may "
        "reach (max prompt + max response), at this many positions per second — a cost no GPU count "
        "shortens. None: not priced (SPMD trainers, or a stack whose rate is unknown).")

    @model_validator(mode="after")
    def _sizes(self) -> TrainerPlacement:
        limits.check_trainer(self)
        return self


class Placement(Strict):
    mode: Literal[tuple(MODES)] = Field(
        default="colocated", description="; ".join(f"{m.name}: {m.description}" for m in MODES.values()))
    rollout: RolloutPlacement = Field(default_factory=RolloutPlacement)
    trainer: TrainerPlacement = Field(default_factory=TrainerPlacement)
    reward_model_gpus: int = Field(default=0, ge=0, description="GPUs for a reward model or judge.")


# --------------------------------------------------------------------------- algorithm
class DynamicSampling(Strict):
    """DAPO: drop groups whose rewards have no variance, generate more until the batch is full."""

    enabled: bool = Field(default=False, description="Filter zero-variance groups and generate more.")
    zero_variance_fraction: float = Field(
        default=0.0, ge=0, lt=1,
        description="Fraction of groups that are all-correct or all-wrong (filtered out).",
    )
    max_rounds: Count = Field(default=8, description="Give up over-generating after this many rounds.")


def max_lag(staleness: float) -> int:
    """The versions a group may lag the step that trains it, for a staleness bound: its ceiling.
    A fractional staleness (verl's staleness_threshold 0.5) starts part of the next step's
    groups under the current weights, so those groups lag one version when trained; the bound
    on what is trained, the producer's drop rule and the useful-experience count all read it
    here."""
    return math.ceil(staleness)


class Algorithm(Strict):
    name: Literal["grpo", "ppo", "dapo"] = Field(default="grpo", description="The RL algorithm; sets the defaults of reference, critic and dynamic sampling.")
    prompts_per_step: Count = Field(default=512, description="Prompts per optimizer step (the batch, before responses_per_prompt).")
    responses_per_prompt: Count = Field(default=16, description="Group size (GRPO/DAPO); 1 for PPO.")
    ppo_epochs: Count = Field(default=1, description="Passes over each step's experience.")
    minibatches: Count = Field(default=1, description="Optimizer steps per epoch.")
    old_logprob: bool = Field(default=True, description="Recompute old log-probs with the trainer.")
    reference: bool | None = Field(
        default=None, description="Reference-policy pass for the KL term; default off for DAPO."
    )
    critic: bool | None = Field(default=None, description="Value model; default on for PPO only.")
    staleness: int | float = Field(
        default=0, ge=0,
        description="How far rollout may run ahead of training, in steps' worth of prompts: at most "
                    "(version + 1 + staleness) × prompts_per_step groups are started before weights newer "
                    "than version arrive, and a group lagging more than ceil(staleness) versions is dropped. "
                    "An integer is AReaL's max_head_offpolicyness / NeMo-RL's max_trajectory_age_steps; a "
                    "fraction is verl's fully-async staleness_threshold (0.5: half a step's batch ahead).")
    updates_per_sync: Count = Field(
        default=1,
        description="Trainer updates between two weight syncs (verl fully-async trigger_parameter_sync_step): "
                    "the step's prompts are trained in this many equal chunks, each as soon as its groups are "
                    "ready (streaming), each with its share of the minibatches; weights sync after the last. "
                    "Separate pools only.")
    partial_rollout: bool = Field(
        default=False, description="Weight updates interrupt generation, which then continues."
    )
    dynamic_sampling: DynamicSampling = Field(default_factory=DynamicSampling)

    @property
    def max_lag(self) -> int:
        """Versions a trained group may lag the step that trains on it (:func:`max_lag`)."""
        return max_lag(self.staleness)

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


class ScheduleWindow(Strict):
    """Lengths from one training step on, until the next window's ``from_step``."""

    from_step: int = Field(ge=0, description="First training step the window applies to, counted from 1 as "
                           "verl and TRL log them (0 is read as 1: from the start). Steps ascend.")
    response_tokens: Distribution = Field(description="Tokens generated per turn in this window; bounded by "
                                          "workload.response_tokens' max (the engine's max response length).")
    prompt_tokens: Distribution | None = Field(default=None, description="Prompt length in this window "
                                               "(default: workload.prompt_tokens, which bounds it).")


class Growth(Strict):
    """A stated drift: response lengths multiplied by ``(1 + per_step)`` each training step."""

    per_step: float = Field(gt=-1, le=1, description="Relative change of every response length per step: a "
                            "length drawn at step s is × (1 + per_step)^(s − from_step of the window in force), "
                            "then capped at the max response length (0.005: +0.5% a step).")


class Schedule(Strict):
    """Response (and prompt) lengths as a function of the training step: piecewise by step windows
    (``twin fit`` writes them from a run's logs) and/or a stated growth. A trajectory's lengths
    are drawn from the step its policy version would train, ``version + 1``, at admission: with
    staleness, a group admitted under version v draws step v+1's lengths even if a later step
    trains on it."""

    windows: list[ScheduleWindow] = Field(default_factory=list, description="Step windows, ascending "
                                          "from_step, the first from step 0 or 1; none: workload.response_tokens "
                                          "from the start.")
    growth: Growth | None = Field(default=None, description="Growth of response lengths per step within each "
                                  "window (from step 1 without windows); none by default.")


class Workload(Strict):
    prompt_tokens: Distribution = Field(
        default=Fixed(kind="fixed", value=141), description="Prompt length (tokens)."
    )
    response_tokens: Distribution = Field(
        default=MATH_RESPONSES,
        description="Tokens generated per turn; its max is the engine's max response length.",
    )
    multi_turn: MultiTurn | None = Field(default=None, description="Tool calls between turns (agentic RL); none by default.")
    schedule: Schedule | None = Field(default=None, description="Lengths that change over the run (by step "
                                      "window or a stated growth); none: the same lengths every step.")
    lengths: Literal["given", "assumed"] | None = Field(
        default=None, description="Whether the response lengths are the user's (given) or the twin's default "
        "shape (assumed: an importer found none in the config, or the scenario names none). Default: assumed "
        "when response_tokens is not set. Reports say so, with the step's sensitivity to them (twin fit LOG "
        "fits them from a run's logs).")

    @field_validator("response_tokens")
    @classmethod
    def _bounded(cls, d):
        if not np.isfinite(d.upper_bound()):
            raise ValueError("an unbounded response length needs a 'max' (the max response length)")
        return d

    @model_validator(mode="after")
    def _lengths_known(self) -> Workload:
        if self.lengths is None:
            _fill(self, {"lengths": "given" if "response_tokens" in self.model_fields_set else "assumed"})
        return self

    @model_validator(mode="after")
    def _sizes(self) -> Workload:
        limits.check_tokens("workload.prompt_tokens", self.prompt_tokens)
        limits.check_tokens("workload.response_tokens", self.response_tokens)
        if self.schedule is not None:
            limits.check_schedule(self)
        return self

    def at_step(self, step: int):
        """(prompt, response) length distributions in force at training step ``step`` (from 1)."""
        s = self.schedule
        if s is None:
            return self.prompt_tokens, self.response_tokens
        start, prompt, response = 1, self.prompt_tokens, self.response_tokens
        for w in s.windows:
            if w.from_step > step:
                break
            start, response = max(w.from_step, 1), w.response_tokens
            prompt = w.prompt_tokens or self.prompt_tokens
        if s.growth is not None and step > start:
            factor = (1.0 + s.growth.per_step) ** (step - start)
            cap = min(response.max if response.max is not None else np.inf, float(self.max_response_tokens))
            # Scale multiplies a draw before the clip: the median and mean grow, capped at the max.
            response = response.model_copy(update={"scale": min(response.scale * factor, 1e6), "max": cap})
        return prompt, response

    @property
    def max_response_tokens(self) -> int:
        """The engine's max response length: response_tokens' bound (its ``max`` when a schedule
        grows the lengths toward it)."""
        r = self.response_tokens
        if self.schedule is not None and self.schedule.growth is not None and r.max is not None:
            return int(r.max)
        return int(r.upper_bound())


# --------------------------------------------------------------------------- weight sync
class WeightSync(Strict):
    """How new weights reach the rollout engines after an optimizer step (twin/cost/weight_sync.py;
    docs/cost-models.md, weight sync)."""

    method: Literal["auto", "reshard", "nccl_broadcast", "nccl_reshard", "checkpoint", "checkpoint_engine",
                    "nixl", "p2p"] = Field(
        default="auto",
        description="auto: reshard when colocated, nccl_broadcast otherwise; nccl_reshard is "
        "NeMo-RL's shard-to-shard refit between separate pools; checkpoint_engine: buckets broadcast "
        "to every rollout node's host memory, each GPU copies its part in (H2D), stages pipelined; "
        "nixl: each rollout GPU pulls its shard from the trainer GPUs by RDMA (NIXL/UCX), double-"
        "buffered so the wire overlaps loading; p2p: one RDMA transfer per tensor shard from the trainer GPU "
        "holding it to the rollout GPU keeping it (Mooncake transfer engine), nothing packed.",
    )
    sender: Literal["auto", "fsdp", "megatron", "deepspeed"] = Field(
        default="auto",
        description="The trainer stack that gathers whole tensors from its shards before sending, one tensor "
        "at a time: fsdp (full_tensor: an all-gather over the shard group), megatron (all-gathers over tp and, "
        "for routed experts, ep, and a broadcast from the pipeline stage holding the tensor), deepspeed "
        "(GatheredParameters: an all-gather over every ZeRO-3 rank). auto: megatron for a trainer with tp, pp "
        "or ep > 1 or ZeRO below 3, else fsdp.")
    senders: Literal["auto", "one", "per_stage", "per_rank"] = Field(
        default="auto",
        description="Who sends: one, whole tensors gathered (every collective of the sender) and sent by one "
        "rank (verl); per_stage, gathered within each pipeline stage, the stages sending their own layers at "
        "once (slime, NeMo-RL's Megatron refit); per_rank, every trainer GPU sends its own shards, nothing "
        "gathered (NeMo-RL's checkpoint engine, NIXL, Mooncake). auto: per_rank for checkpoint_engine, nixl, "
        "p2p and nccl_reshard, one otherwise.")
    collective_overhead_s: float | None = Field(
        default=None, ge=0, le=1,
        description="Software cost of one collective the sync issues (a per-tensor gather, a bucket's or a "
        "tensor's broadcast: the Python call, its launch and the wait), beside the topology's launch and hop "
        "latency (default fitted on verl's fully-async per-tensor sync, H20).")
    bucket_bytes: float = Field(
        default=512 * 2**20, ge=0,
        description="Bucket size for gathering and sending (verl 512 MiB): each bucket costs one call "
        "(call_overhead_s) and the pipelined methods fill and drain one bucket. 0: no bucketing, one "
        "call per tensor (naive per-parameter loops).")
    call_overhead_s: float | None = Field(
        default=None, ge=0, le=10,
        description="Software cost of one sync call (an RPC to the engines, a load_weights call and a "
        "collective launch): paid per bucket, or per tensor when bucket_bytes is 0 (default fitted on "
        "SkyRL #161).")
    tensor_overhead_s: float | None = Field(
        default=None, ge=0, le=1,
        description="Receiver-side cost of loading one tensor (name mapping, slicing, copy launch), per "
        "rollout GPU and tensor it loads (default fitted on NeMo-RL's DeepSeek-V3 NIXL refit).")
    expert_transfer: Literal["local", "full"] = Field(
        default="local",
        description="checkpoint_engine, nixl: local sends each rollout GPU only its slice of the routed "
        "experts (NeMo-RL shard_expert_weights); full sends every GPU all experts and its loader keeps "
        "its slice.")
    delta: bool = Field(
        default=False,
        description="Send only the weights changed since the last sync, with their indices (delta / "
        "sparse sync): the sender compares against a baseline, the receiver applies in place.")
    delta_density: float = Field(
        default=0.03, gt=0, le=1,
        description="delta: fraction of the weights that changed (slime's ~3%; HF's delta-sync blog "
        "~1% of bf16 weights).")
    quantise_on: Literal["sender", "receiver"] = Field(
        default="sender",
        description="When placement.rollout.dtype differs from the model's: sender quantises before "
        "sending (rollout-dtype bytes on the wire); receiver quantises while loading (NeMo-RL's FP8 "
        "vLLM load path; model-dtype bytes on the wire).")
    gather_convert_bytes_per_s: float | None = Field(
        default=None, gt=0,
        description="Sender-side gather/convert/bucketing throughput of an FSDP or DeepSpeed sender (default "
        "fitted on verl's 72B); a Megatron sender converts on the GPU at its element-wise bandwidth.",
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
    prompts: int = Field(default=0, ge=0, description="Prompts per evaluation; 0 disables it.")
    samples_per_prompt: Count = Field(default=1, description="Responses per evaluation prompt.")

    @model_validator(mode="after")
    def _sizes(self) -> Evaluation:
        limits.check_evaluation(self)
        return self


class Run(Strict):
    steps: Count = Field(default=10, description="Optimizer steps to simulate (the first is left out of rates).")
    seed: int = Field(default=0, ge=0, description="Seed of every random draw: same seed, same report.")
    steady_tolerance: float | None = Field(
        default=None, gt=0, le=0.5,
        description="Stop before `steps` once the step time has settled: the standard error of the mean "
                    "step time (the first step left out) within this share of it, no trend between the "
                    "halves, after at least 4 steady steps (twin/sim/settle.py). The report's `run` says "
                    "where it stopped. Ignored with a `workload.schedule` (lengths that drift never settle). "
                    "Unset: every step is simulated. The planner and the verdict's re-simulations use 0.01.")

    @model_validator(mode="after")
    def _sizes(self) -> Run:
        limits.check_run(self)
        return self


# --------------------------------------------------------------------------- scenario
class Scenario(Strict):
    name: str = Field(default="scenario", description="Shown in reports.")
    description: str = Field(default="", description="Free text, shown by twin check.")
    framework: str | None = Field(
        default=None,
        description="Framework profile (framework_profiles/, `twin list`): the software stack's settings — "
                    "kernel-rate share, engine scheduling, weight-sync rates — each with its source, filled "
                    "into the fields this scenario leaves out. A name or a path to a profile file.")
    model: ModelArch = Field(description="Preset name, inline architecture, or config.json path.")
    cluster: Cluster = Field(default_factory=Cluster)
    placement: Placement = Field(default_factory=Placement)
    algorithm: Algorithm = Field(default_factory=Algorithm)
    workload: Workload = Field(default_factory=Workload)
    reward: Reward = Field(default_factory=lambda: RuleReward(kind="rule"))
    weight_sync: WeightSync = Field(default_factory=WeightSync)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    run: Run = Field(default_factory=Run)
    faults: Faults = Field(default_factory=Faults, description="Interruptions, restarts, checkpoints, "
                           "stragglers and spare nodes at scale: the report's goodput (docs/goodput.md).")
    learning: Learning = Field(default_factory=Learning, description="Steps to a target reward against rollouts "
                               "per step (the noise-scale law): the report's time to target (docs/time-to-target.md).")

    _m = _model("model")

    @field_validator("framework", mode="before")
    @classmethod
    def _framework_path(cls, value, info: ValidationInfo):
        """A profile named by a path is kept absolute, so the scenario (dumped, written as the
        planner's best) still finds it from anywhere."""
        if isinstance(value, str) and is_path(value):
            path = Path(value).expanduser()
            if not path.is_absolute() and _base_dir(info) is not None:
                path = _base_dir(info) / path
            return str(path.resolve())
        return value

    @model_validator(mode="after")
    def _sizes(self) -> Scenario:
        limits.check_scenario(self)
        return self

    @model_validator(mode="after")
    def _check_placement(self) -> Scenario:
        """The pools must fit the cluster and split into whole engines and trainer ranks."""
        placement_pools(self)
        p = self.placement
        c = self.cluster
        if not c.engine_tp_fits(p.rollout.tp):
            g, d = c.gpus_per_node, c.domain_gpus
            domain = f", a divisor of cluster.nvlink_domain_gpus ({d})" if d > g else ""
            raise InputError("an engine's tensor parallelism stays inside one node or NVLink domain, or spans "
                             "whole nodes", field="placement.rollout.tp", value=p.rollout.tp,
                             allowed=f"1..{g}{domain}, or a multiple of cluster.gpus_per_node ({g})")
        check_moe_layout(self)
        self.faults.check(self.cluster)
        if p.trainer.sp > 1 and self.model.num_heads % (p.trainer.tp * p.trainer.sp):
            raise InputError("Ulysses sequence parallelism splits attention heads: tp × sp must divide them",
                             field="placement.trainer.sp", value=p.trainer.sp,
                             allowed=f"tp × sp dividing the model's {self.model.num_heads} heads")
        if not mode(p.mode).allows_staleness and self.algorithm.staleness > 0:
            raise InputError(f"a {p.mode} synchronous run has no staleness",
                             field="algorithm.staleness", value=self.algorithm.staleness,
                             allowed=f"0 with mode {p.mode}; use mode async for bounded staleness")
        a = self.algorithm
        if a.updates_per_sync > 1 and mode(p.mode).shares_gpus:
            raise InputError("training in chunks while rollout continues needs separate pools",
                             field="algorithm.updates_per_sync", value=a.updates_per_sync,
                             allowed=f"1 with mode {p.mode}; mode disaggregated or async for streaming updates")
        if self.reward.needs_gpus and p.reward_model_gpus == 0:
            raise InputError(f"a {self.reward.kind} reward needs GPUs",
                             field="placement.reward_model_gpus", value=0,
                             allowed=f">= reward.tp ({self.reward.tp})")
        method = self.weight_sync.method
        if mode(p.mode).shares_gpus and method in ("nccl_broadcast", "nccl_reshard", "checkpoint_engine", "nixl",
                                                   "p2p"):
            raise InputError(f"weight sync method {method} moves weights from the trainer's GPUs to separate "
                             f"rollout GPUs; mode {p.mode} runs both on the same GPUs", field="weight_sync.method",
                             value=method, allowed=f"auto, reshard or checkpoint with mode {p.mode}")
        return self

    @model_validator(mode="after")
    def _fits_context(self) -> Scenario:
        """The longest trajectory must fit the model's positions (when the model declares them).

        Only lengths the workload is sure to reach count: a distribution without an upper bound
        counts its lower bound, so the check never refuses a run that could be possible.
        """
        limit = self.model.max_position_embeddings
        if limit is None:
            return self
        w = self.workload
        prompt, response = _surely_up_to(w.prompt_tokens), w.max_response_tokens
        single = prompt + response
        mt = w.multi_turn
        calls = float(np.rint(_surely_up_to(mt.tool_calls))) if mt else 0.0  # counts are drawn rounded
        reply = _surely_up_to(mt.tool_reply_tokens) if mt else 0.0
        context = single + calls * (response + reply)
        if context <= limit:
            return self
        r = w.response_tokens
        allowed = (f"at most {limit:,} tokens in all; shorten the responses (or prompts"
                   + (", tool calls or replies" if mt else "") + "), or set model.max_position_embeddings "
                   "if the model runs with RoPE scaling (YaRN)")
        whose = f"{self.model.name}'s {limit:,} positions (model.max_position_embeddings)"
        prompts = f"prompt {'up to' if np.isfinite(w.prompt_tokens.upper_bound()) else 'at least'} {prompt:,.0f}"
        at_max = r.max is not None and r.max == response
        response_field = "workload.response_tokens" + (".max" if at_max else "")
        if single > limit:
            raise InputError(f"a trajectory reaches {single:,.0f} tokens ({prompts} + "
                             f"response up to {response:,}), more than {whose}",
                             field=response_field, value=response, allowed=allowed)
        # Named by its largest term: the responses of every turn, or the tool calls and replies.
        by_responses = (calls + 1) * response >= calls * reply
        raise InputError(f"a multi-turn trajectory reaches {context:,.0f} tokens ({prompts} + "
                         f"{calls + 1:g} turns of up to {response:,} + {calls:g} tool replies of up to {reply:,.0f}), "
                         f"more than {whose}", field=response_field if by_responses else "workload.multi_turn",
                         allowed=allowed)


def placement_pools(scenario: Scenario) -> tuple[int, int]:
    """GPUs of the (rollout, trainer) pools that the scenario's placement asks for: what the
    user gave, the rest derived by its mode. Raises :class:`InputError` when they do not fit."""
    total, p = scenario.cluster.total_gpus, scenario.placement
    rm = p.reward_model_gpus
    if rm >= total:
        raise InputError("reward-model GPUs leave none for rollout and training",
                         field="placement.reward_model_gpus", value=rm, allowed=f"0..{total - 1}")
    rollout, trainer = mode(p.mode).pools(total - rm, p.rollout.gpus, p.trainer.gpus,
                                          held=f" (cluster has {total}, reward model takes {rm})")
    if rollout % p.rollout.tp:
        raise InputError("rollout GPUs must split into whole engines of tp GPUs",
                         field="placement.rollout.gpus", value=rollout,
                         allowed=f"a multiple of placement.rollout.tp={p.rollout.tp}")
    if rollout % p.rollout.engine_gpus:
        raise InputError("rollout GPUs must split into whole engines of tp × pp GPUs",
                         field="placement.rollout.gpus", value=rollout,
                         allowed=f"a multiple of placement.rollout.tp × pp = {p.rollout.engine_gpus}")
    split = p.trainer.tp * p.trainer.pp * p.trainer.sp * p.trainer.cp
    if trainer % split:
        raise InputError("trainer GPUs must be a multiple of tp × pp × sp × cp",
                         field="placement.trainer.gpus", value=trainer, allowed=f"a multiple of {split}")
    shards, size = trainer // (p.trainer.tp * p.trainer.pp), p.trainer.shard_size
    if size is not None and size < shards and shards % size:
        raise InputError("hybrid sharding splits the trainer into whole groups of shard_size GPUs",
                         field="placement.trainer.shard_size", value=size,
                         allowed=f"a divisor of trainer GPUs / (tp × pp) = {shards}, or at least {shards}")
    return rollout, trainer


def check_moe_layout(scenario: Scenario) -> None:
    """Expert and context parallelism as Megatron (trainer) and vLLM/SGLang (engines) accept them.

    Trainer: ep needs a MoE model whose routed experts it divides, and must divide one pipeline
    stage's GPUs (MoE parallel folding regroups a stage's tp × cp × dp GPUs into ep × expert-dp;
    Megatron before folding required ep to divide dp × cp, which NeMo-RL's Qwen3-235B layout
    [TP2, CP2, EP16, PP8] on 128 GPUs breaks). cp and Ulysses sp are alternatives: one of them.
    Engines: expert parallelism spreads the experts over the engine's tp GPUs, which must divide them.
    """
    p, arch = scenario.placement, scenario.model
    t, r = p.trainer, p.rollout
    if t.ep > 1:
        if arch.moe is None:
            raise InputError("expert parallelism needs a mixture-of-experts model", field="placement.trainer.ep",
                             value=t.ep, allowed=f"1 for {arch.name} (no experts)")
        if arch.moe.num_experts % t.ep:
            raise InputError("ep must divide the routed experts", field="placement.trainer.ep", value=t.ep,
                             allowed=f"a divisor of {arch.name}'s {arch.moe.num_experts} experts")
        _, trainer = placement_pools(scenario)
        stage = trainer // t.pp
        if stage % t.ep:
            raise InputError("ep must divide the GPUs of one pipeline stage (trainer GPUs / pp: Megatron's MoE "
                             "parallel folding draws the ep ranks from them)", field="placement.trainer.ep",
                             value=t.ep, allowed=f"a divisor of {trainer} / {t.pp} = {stage}")
    if t.cp > 1 and t.sp > 1:
        raise InputError("context parallelism (ring) and Ulysses sequence parallelism split the same tokens: "
                         "use one", field="placement.trainer.cp", value=t.cp, allowed="1 when sp > 1")
    if r.expert_parallel:
        if arch.moe is None:
            raise InputError("expert parallelism needs a mixture-of-experts model",
                             field="placement.rollout.expert_parallel", value=True, allowed="false")
        if arch.moe.num_experts % r.tp:
            raise InputError("an expert-parallel engine spreads the experts over its tp GPUs: tp must divide them",
                             field="placement.rollout.tp", value=r.tp,
                             allowed=f"a divisor of {arch.name}'s {arch.moe.num_experts} experts")


def _surely_up_to(dist: Distribution) -> float:
    """The most a distribution's samples may reach for sure: its upper bound, or its lower bound
    when it has none (an unbounded tail proves nothing)."""
    bound = dist.upper_bound()
    return bound if np.isfinite(bound) else dist.lower_bound()


def resolved_dict(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data; hardware profiles appear by name with their source."""
    data = scenario.model_dump(mode="json")
    if data["workload"].get("schedule") is None:
        data["workload"].pop("schedule", None)  # stationary lengths: the report reads as before schedules
    cluster = data["cluster"]
    if cluster.get("nvlink_domain_gpus") is None:
        cluster.pop("nvlink_domain_gpus", None)  # one node per domain: the report reads as before domains
    for key in ("gpu", "host", "intra_node_link", "inter_node_link"):
        prof = getattr(scenario.cluster, key)
        cluster[key] = f"{prof.name} ({prof.provenance.source})"
    return data
