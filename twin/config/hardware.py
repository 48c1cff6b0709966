"""Hardware profiles: GPUs, hosts and links as data, each figure with where it came from.

A profile is a small YAML file (``hardware_profiles/*.yaml``). Datasheet profiles carry
the vendor's peak figures and efficiencies measured elsewhere (their ``source`` says
where); ``twin calibrate`` writes the same format from microbenchmarks on the real device.
"""

from __future__ import annotations

import bisect
import math
from functools import lru_cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


class Strict(BaseModel):
    """Base for every input model: unknown fields are errors, values are immutable, numbers
    are finite (no NaN or infinity: no field means "unbounded" by inf; those that may be
    unbounded say so with None) and true/false is never a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, data: Any) -> Any:
        """pydantic's lax mode reads true as 1 (``gpus_per_node: true`` would be one GPU), and
        its strict mode would also refuse "2e9" (a string to YAML 1.1) and 8.0. So a boolean
        given for a number (alone, or in a list, tuple or dict) is swapped for a value that no
        number validator accepts and that shows as the boolean did: the field's own type error
        names it (``cluster.gpus_per_node: Input should be a valid integer (got true)``)."""
        if isinstance(data, dict) and any(_holds_bool(v, 2) for v in data.values()):
            data = {k: _not_a_number(v, 2) if k in cls.model_fields and _numbers_only(cls, k) else v
                    for k, v in data.items()}
        return data


class _Boolean:
    """A boolean where a number belongs: no validator of numbers accepts it."""

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "true" if self.value else "false"


def _holds_bool(value: Any, depth: int) -> bool:
    if isinstance(value, bool):
        return True
    if depth and isinstance(value, (list, tuple)):
        return any(_holds_bool(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return any(_holds_bool(v, depth - 1) for v in value.values())
    return False


def _not_a_number(value: Any, depth: int) -> Any:
    if isinstance(value, bool):
        return _Boolean(value)
    if depth and isinstance(value, (list, tuple)):
        return type(value)(_not_a_number(v, depth - 1) for v in value)
    if depth and isinstance(value, dict):
        return {k: _not_a_number(v, depth - 1) for k, v in value.items()}
    return value


@lru_cache(maxsize=None)
def _numbers_only(model: type[BaseModel], name: str) -> bool:
    """Whether field ``name`` holds numbers (possibly optional or in lists, tuples, dicts) and
    no booleans."""
    leaves = _leaf_types(model.model_fields[name].annotation)
    return bool not in leaves and bool(leaves & {int, float})


def _leaf_types(annotation: Any) -> set:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return {type(a) for a in args}
    if origin is Annotated:
        return _leaf_types(args[0])
    if args:
        return set().union(*(_leaf_types(a) for a in args if a is not Ellipsis))
    return {annotation}


class Provenance(Strict):
    """Where a profile's figures came from."""

    source: Literal["datasheet", "calibrated", "published", "assumed"]
    reference: str = Field(description="Document, benchmark or command the figures come from.")
    date: str | None = None
    device: str | None = None
    driver: str | None = None
    torch: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    host: str | None = None
    not_measured: list[str] | None = Field(
        default=None,
        description=("Calibrated profiles: what the calibration left out of the full sweep (a quick sweep, or "
                     "suites left out with --only), and where the profile's figures come from instead."),
    )


class EfficiencyCurve(Strict):
    """Achieved fraction of a peak rate as a function of operation size.

    ``points`` are (size, efficiency) pairs with sizes increasing: FLOP per operation for
    compute, bytes for memory and links. Between points the curve is linear in log(size);
    outside them it is flat. One point means a constant efficiency.
    """

    # An efficiency below 1e-6 would price an operation at a million times its peak time: the
    # simulation's clock would crawl (a measured curve's smallest points are around 1e-3).
    points: list[tuple[Annotated[float, Field(gt=0)], Annotated[float, Field(ge=1e-6, le=1)]]] = Field(
        min_length=1
    )
    source: str

    @field_validator("points")
    @classmethod
    def _sizes_increase(cls, points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        sizes = [s for s, _ in points]
        if any(b <= a for a, b in zip(sizes, sizes[1:])):
            raise ValueError("sizes must be strictly increasing")
        return points

    def at(self, size: float) -> float:
        """Efficiency for an operation of ``size`` (FLOP or bytes)."""
        pts = self.points
        if size <= pts[0][0]:
            return pts[0][1]
        if size >= pts[-1][0]:
            return pts[-1][1]
        i = bisect.bisect_right([s for s, _ in pts], size)
        (s0, e0), (s1, e1) = pts[i - 1], pts[i]
        w = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
        return e0 + w * (e1 - e0)

    def at_each(self, sizes):
        """:meth:`at` of every element of a NumPy array, bit for bit: the same branches and
        arithmetic, the logarithms taken by ``math.log`` as ``at`` takes them (NumPy's own may
        differ in the last bit on some CPUs). For the exact vectorised cost paths."""
        import numpy as np

        x = np.asarray(sizes, dtype=np.float64)
        pts = self.points
        out = np.full(x.shape, pts[-1][1])  # at or above the last size
        inside = x < pts[-1][0]
        out[x <= pts[0][0]] = pts[0][1]  # at or below the first (it wins with one point)
        inside &= x > pts[0][0]
        if inside.any():
            sizes_at = [s for s, _ in pts]
            log_size = np.array([math.log(s) for s in sizes_at])
            eff = np.array([e for _, e in pts])
            xi = x[inside]
            i = np.searchsorted(sizes_at, xi, side="right")  # bisect.bisect_right
            w = (np.array([math.log(v) for v in xi.tolist()]) - log_size[i - 1]) / (log_size[i] - log_size[i - 1])
            out[inside] = eff[i - 1] + w * (eff[i] - eff[i - 1])
        return out

    def at_array(self, sizes):
        """``at`` over an array of sizes (NumPy; same reading: log-linear, flat outside)."""
        import numpy as np

        pts = np.asarray(self.points, dtype=np.float64)
        x = np.log(np.maximum(np.asarray(sizes, dtype=np.float64), 1e-300))
        return np.interp(x, np.log(pts[:, 0]), pts[:, 1])

    @property
    def best(self) -> float:
        return max(e for _, e in self.points)

    def scaled(self, factor: float, why: str) -> EfficiencyCurve:
        """Every efficiency × ``factor`` (capped at 1), the reason appended to the source."""
        # derived, not read: constructed without the input bounds (a scaled point may be < 1e-6)
        return EfficiencyCurve.model_construct(points=[(s, min(1.0, e * factor)) for s, e in self.points],
                                               source=f"{self.source} [× {factor:.4g}: {why}]")


class Compute(Strict):
    peak_flops: dict[Dtype, Annotated[float, Field(ge=1e6)]] = Field(
        description="Dense peak FLOP/s per dtype (no sparsity; at least 1 MFLOP/s)."
    )
    gemm_efficiency: EfficiencyCurve = Field(description="Matmul efficiency by FLOP per GEMM.")
    gemm_efficiency_by_tokens: EfficiencyCurve | None = Field(
        default=None,
        description=(
            "Optional. Matmul efficiency by the GEMM's token rows M (its activation operand is M×K, "
            "its weight K×N). A GEMM with few rows is bound by streaming its weight, not by FLOP: its "
            "arithmetic intensity is 2M FLOP per weight element whatever K and N, so this limit is a "
            "function of M alone. When present, a GEMM's efficiency is "
            "gemm_efficiency(FLOP per GEMM) × gemm_efficiency_by_tokens(M) (calibrate fits the two as "
            "such a product); absent, the FLOP curve alone (datasheet profiles)."
        ),
    )
    attention_efficiency: EfficiencyCurve | None = Field(
        default=None,
        description="Attention kernel efficiency by FLOP per call; defaults to the GEMM curve.",
    )
    attention_efficiency_by_head_dim: EfficiencyCurve | None = Field(
        default=None,
        description=(
            "Optional. Attention efficiency by head width (size = head_dim, not FLOP), relative to the best "
            "width measured: a kernel's rate per FLOP falls with narrower heads (less work per loaded "
            "element). When present, attention efficiency = attention_efficiency(FLOP per call) × this(head_dim) "
            "(calibrate fits the two as such a product); absent, the FLOP curve alone."
        ),
    )
    attention_decode_efficiency: EfficiencyCurve | None = Field(
        default=None,
        description=(
            "Optional. Efficiency of one-query (decode) attention calls by FLOP per call, times "
            "attention_efficiency_by_head_dim when present, their KV cache read cold: in a model each "
            "layer reads its own cache once per iteration, so a decode call runs slower than a prefill "
            "of the same FLOP whose operands were just produced. Absent: attention_efficiency."
        ),
    )
    attention_backward_efficiency: EfficiencyCurve | None = Field(
        default=None,
        description=(
            "Optional. Efficiency of attention's backward by its FLOP per call, counted as twice the "
            "forward's (the gradients of QK^T and PV), times attention_efficiency_by_head_dim when present. "
            "A backward kernel recomputes the probabilities and runs more, smaller matmuls than the forward, "
            "so its rate differs. Absent: the backward takes twice its forward's time (datasheet profiles)."
        ),
    )
    source: str

    def gemm_eff(self, flops_per_call: float, tokens: float | None = None) -> float:
        """Efficiency of a GEMM of ``flops_per_call`` FLOP over ``tokens`` rows (None: rows unknown)."""
        eff = self.gemm_efficiency.at(flops_per_call)
        if tokens is not None and self.gemm_efficiency_by_tokens is not None:
            eff *= self.gemm_efficiency_by_tokens.at(max(float(tokens), 1.0))
        return eff

    def gemm_eff_array(self, flops_per_call, tokens=None):
        """``gemm_eff`` over arrays (NumPy)."""
        import numpy as np

        eff = self.gemm_efficiency.at_array(flops_per_call)
        if tokens is not None and self.gemm_efficiency_by_tokens is not None:
            eff = eff * self.gemm_efficiency_by_tokens.at_array(np.maximum(tokens, 1.0))
        return eff

    def attention_eff(self, flops_per_call: float, head_dim: float | None = None, decode: bool = False) -> float:
        """Efficiency of an attention call of ``flops_per_call`` FLOP over heads ``head_dim`` wide
        (``decode``: one query per sequence over a KV cache)."""
        curve = (decode and self.attention_decode_efficiency) or self.attention_efficiency or self.gemm_efficiency
        eff = curve.at(flops_per_call)
        if head_dim is not None and self.attention_efficiency_by_head_dim is not None:
            eff *= self.attention_efficiency_by_head_dim.at(float(head_dim))
        return eff

    def attention_backward_eff(self, flops_per_call: float, head_dim: float | None = None) -> float | None:
        """Efficiency of an attention backward of ``flops_per_call`` FLOP (None: no curve)."""
        if self.attention_backward_efficiency is None:
            return None
        eff = self.attention_backward_efficiency.at(flops_per_call)
        if head_dim is not None and self.attention_efficiency_by_head_dim is not None:
            eff *= self.attention_efficiency_by_head_dim.at(float(head_dim))
        return eff

    def peak(self, dtype: str) -> float:
        if dtype in self.peak_flops:
            return self.peak_flops[dtype]
        if dtype == "fp8" and "bf16" in self.peak_flops:
            return self.peak_flops["bf16"]  # no fp8 units: runs at bf16 rate
        return self.peak_flops.get("fp16") or self.peak_flops.get("bf16") or max(self.peak_flops.values())


class Memory(Strict):
    capacity_bytes: float = Field(gt=0, description="Device memory, bytes (GB = 1e9).")
    bandwidth_bytes_per_s: float = Field(ge=1e6, description="Peak memory bandwidth, bytes/s (at least 1 MB/s).")
    efficiency: EfficiencyCurve = Field(
        description="Achieved fraction of peak bandwidth by bytes moved per operation."
    )
    elementwise_efficiency: EfficiencyCurve | None = Field(
        default=None,
        description=(
            "Optional. Achieved fraction of peak bandwidth of element-wise kernels (a binary op: two "
            "reads, one write) by bytes moved per call, operands streamed from beyond the last-level "
            "cache as a model's activations are. Defaults to ``efficiency`` (copies)."
        ),
    )
    elementwise_classes: dict[Literal["unary", "rotary", "softmax", "sample"], EfficiencyCurve] | None = Field(
        default=None,
        description=(
            "Optional. Efficiency curves (fraction of peak bandwidth by bytes read + written per kernel) of "
            "element-wise kernel classes that do not run at a binary op's rate: 'unary' (transcendental, "
            "e.g. SiLU: compute-bound on a CPU), 'rotary' (short-row, strided kernels of the eager rotary "
            "embedding and the attention output copy), 'softmax' (log-softmax over a vocabulary), 'sample' "
            "(the sampler's pass over the probabilities: a random draw per element). When "
            "present, each class of ``twin.cost.transformer.elementwise_work_by_class`` is priced at its own "
            "curve (a class without one, and 'binary', at ``elementwise_efficiency``); absent, all element-wise "
            "work is priced as one average kernel at ``elementwise_efficiency``."
        ),
    )
    source: str

    @property
    def elementwise_curve(self) -> EfficiencyCurve:
        return self.elementwise_efficiency or self.efficiency

    def elementwise_class_curve(self, cls: str) -> EfficiencyCurve:
        """The curve of element-wise kernel class ``cls`` (binary and unmeasured classes: the binary curve)."""
        return (self.elementwise_classes or {}).get(cls) or self.elementwise_curve


class Overhead(Strict):
    per_iteration_s: float = Field(
        ge=0, le=1,
        description="Fixed cost of one engine iteration (scheduling, sampling, launch), seconds, with the "
        "host's work overlapped or amortised (placement.rollout.scheduling: overlapped).",
    )
    synchronous_step_s: float = Field(
        default=4.0e-3, ge=0, le=1,
        description="The same for an engine that schedules synchronously (placement.rollout.scheduling: "
        "synchronous): the GPU waits every step while the host schedules, prepares the next inputs and "
        "processes the sampled tokens. Default: vLLM RFC #6854 (Multi-Step Scheduling, Jul 2024) measured "
        "about 4 ms of GPU bubble per decode step (5-13 ms range) on H100-class GPUs.",
    )
    per_kernel_s: float = Field(ge=0, le=1, description="Fixed cost of one kernel launch, seconds.")
    hf_generate_step_s: float | None = Field(
        default=None, ge=0, le=1,
        description="Optional. Host time of one decode step of transformers' model.generate beyond its layers "
        "(generation loop, sampling, stopping criteria, cache bookkeeping), seconds: the intercept of "
        "calibrate's line over tiny-width steps at 1-8 layers. Used by placement.rollout.engine "
        "hf_generate; absent, its host time is priced from counted operations at per_kernel_s.",
    )
    hf_generate_per_layer_s: float | None = Field(
        default=None, ge=0, le=1,
        description="Optional. The same line's slope: host time of one decoder layer in a generate step.",
    )
    source: str


# Meta's Llama 3 report (Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783,
# section 3.3.4, Table 5): 419 unexpected interruptions in a 54-day snapshot of pre-training on
# 16,384 H100 GPUs (7.76 a day). By component, 88 took a whole host out (network switch or cable
# 35, host maintenance 32, NIC 7, SSD 3, power supply 3, chassis 2, IO board 2, CPU 2, system
# memory 2); the report attributes about 78% to confirmed or suspected hardware.
LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS, LLAMA3_HOST_INTERRUPTIONS = 419, 54, 16_384, 88


class Reliability(Strict):
    """How often a GPU's job is interrupted, and what a failure takes with it."""

    failures_per_gpu_hour: float = Field(
        ge=0, le=1, description="Unexpected interruptions per GPU-hour, every cause counted once "
        "(a host's failure is one interruption of all its GPUs).")
    node_share: float = Field(
        ge=0, le=1, description="Share of the interruptions that take a whole node (host, NIC, network, "
        "power) rather than one GPU.")
    hardware_share: float = Field(
        ge=0, le=1, description="Share that needs the failed node replaced before the job restarts on "
        "it; the rest (software) restart on the same nodes.")
    source: str


DEFAULT_RELIABILITY = Reliability(
    failures_per_gpu_hour=LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * 24 * LLAMA3_GPUS),
    node_share=LLAMA3_HOST_INTERRUPTIONS / LLAMA3_INTERRUPTIONS,
    hardware_share=0.78,
    source="Llama 3 report (arXiv 2407.21783, section 3.3.4, Table 5): 419 unexpected interruptions in 54 days "
           "on 16,384 H100s; 88 of them host-level; about 78% hardware. Measured on H100s; for other GPUs "
           "a transfer (assumed).")


class DeviceProfile(Strict):
    """An accelerator (or a CPU used as one, for calibration and the probe loop)."""

    kind: Literal["gpu", "cpu"]
    name: str
    description: str = ""
    provenance: Provenance
    compute: Compute
    memory: Memory
    overhead: Overhead
    host_link: str | None = Field(
        default=None, description="Link profile for host<->device copies (offload)."
    )
    reliability: Reliability | None = Field(
        default=None, description="Optional. Interruptions per GPU-hour and what they take (docs/goodput.md); "
        "absent: the Llama 3 report's H100 figures (DEFAULT_RELIABILITY).")

    @property
    def failure_model(self) -> Reliability:
        """The profile's reliability, or the Llama 3 H100 figures where it has none."""
        return self.reliability or DEFAULT_RELIABILITY

    def with_compute_scaled(self, factor: float) -> DeviceProfile:
        """This profile with its absolute compute curves (GEMM, attention forward, decode and
        backward) × ``factor``; the relative curves (by token rows, by head width) and memory
        unchanged. The name says so, so reports show which profile priced a run."""
        why = "cluster.compute_scale"
        c = self.compute
        scaled = {k: getattr(c, k).scaled(factor, why) for k in (
            "gemm_efficiency", "attention_efficiency", "attention_decode_efficiency",
            "attention_backward_efficiency") if getattr(c, k) is not None}
        return self.model_copy(update={"name": f"{self.name} × {factor:.3g} compute",
                                       "compute": c.model_copy(update=scaled)})


class LinkProfile(Strict):
    """A link class: per-GPU (or per-NIC) bandwidth in one direction, latency, efficiency."""

    kind: Literal["link"]
    name: str
    description: str = ""
    provenance: Provenance
    bandwidth_bytes_per_s: float = Field(
        ge=1e6, description="Unidirectional bandwidth per endpoint (per GPU or per NIC), bytes/s (at least 1 MB/s)."
    )
    latency_s: float = Field(ge=0, le=1, description="Per-hop latency of one message, seconds.")
    efficiency: EfficiencyCurve = Field(
        description="Achieved fraction of bandwidth (as nccl-tests bus bandwidth) by message bytes."
    )
    peer_bandwidth_bytes_per_s: float | None = Field(
        default=None, ge=1e6,
        description=(
            "Optional. A mesh without a switch (AMD Infinity Fabric / xGMI): every pair of GPUs of a node "
            "has its own link of this rate per direction, so a GPU reaches k peers at k times it, at most "
            "bandwidth_bytes_per_s (all its links). Absent: a switch (NVSwitch), any one peer at the full rate."
        ),
    )

    @model_validator(mode="after")
    def _peer_within_port(self) -> LinkProfile:
        if self.peer_bandwidth_bytes_per_s is not None and self.peer_bandwidth_bytes_per_s > self.bandwidth_bytes_per_s:
            raise ValueError("peer_bandwidth_bytes_per_s (one link) cannot exceed bandwidth_bytes_per_s (all of them)")
        return self

    @property
    def is_mesh(self) -> bool:
        """GPUs joined pairwise by direct links (no switch)."""
        return self.peer_bandwidth_bytes_per_s is not None

    def port_rate(self, members: int) -> float:
        """Bytes/s one GPU moves to ``members`` − 1 peers of its group at once, at the link's best
        efficiency: its whole port behind a switch; on a mesh, one direct link per peer."""
        rate = self.bandwidth_bytes_per_s
        if self.is_mesh:
            rate = min(rate, max(members - 1, 1) * self.peer_bandwidth_bytes_per_s)
        return rate * self.efficiency.best


class HostProfile(Strict):
    """The CPU side of a node: cores for sandboxes and tokenizers, memory for offload."""

    kind: Literal["host"]
    name: str
    description: str = ""
    provenance: Provenance
    cpu_cores: int = Field(gt=0, le=2**16)
    memory_bytes: float = Field(gt=0)
    storage_write_bytes_per_s: float | None = Field(
        default=None, ge=1e6,
        description="Optional. Bytes/s one node writes to the shared storage checkpoints go to (docs/goodput.md). "
        "Absent: the Llama 3 storage fabric's share per GPU (2 TB/s sustained for 16,384 GPUs, 122 MB/s) times "
        "the node's GPUs.")
    storage_read_bytes_per_s: float | None = Field(
        default=None, ge=1e6,
        description="Optional. Bytes/s one node reads a checkpoint back at on restart. Absent: the write rate.")


Profile = Annotated[Union[DeviceProfile, LinkProfile, HostProfile], Field(discriminator="kind")]


class ProfileFile(BaseModel):
    """Wrapper that lets pydantic pick the profile class by its ``kind``."""

    profile: Profile


def parse_profile(data: object) -> DeviceProfile | LinkProfile | HostProfile:
    """Validate a profile mapping (raises pydantic.ValidationError with paths under 'profile')."""
    return ProfileFile.model_validate({"profile": data}).profile
