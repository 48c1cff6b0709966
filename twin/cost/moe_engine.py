"""What the routed experts of a MoE model cost an inference engine's iteration.

vLLM and SGLang run a MoE layer's routed experts as one *fused-MoE* block (vLLM
``fused_moe/fused_moe.py``, SGLang ``fused_moe_triton``; the same Triton kernel family)::

    topk_softmax             router logits -> top-k experts and weights       1 kernel
    moe_align_block_size     sort the (token, expert) pairs by expert, pad     1 kernel
    fused_moe (w13)          grouped GEMM: gate and up of every touched expert 1 kernel
    silu_and_mul             the activation                                     1 kernel
    fused_moe (w2)           grouped GEMM: down                                 1 kernel
    moe_sum                  the top-k outputs weighted and summed per token   1 kernel

plus the router's own GEMM (hidden x experts) before it. In decode the grouped GEMMs read every
*touched* expert's weights once (E·(1 − (1 − k/E)^tokens) of E experts, uniform routing) over
a few rows each, so the block is weight-streaming, not compute, and its kernels' fixed costs
do not shrink with the batch or with tensor parallelism.

Priced (per MoE layer, per GPU, for ``tokens`` tokens reaching it)::

    t = FUSED_MOE_KERNELS · per_kernel_s + max(touched bytes / (bandwidth · stream_efficiency(slice)),
                                               expert FLOP / (peak · grouped-GEMM efficiency))

Source: vLLM's ``benchmarks/kernels/benchmark_moe.py`` on an H100 SXM (vLLM PR #24700, Sept
2025, "Benchmarks on H100"), which times ``fused_topk`` + ``fused_experts`` (the six kernels
above, without the router GEMM) under CUDA graphs, per batch size:

* Mixtral-8x7B bf16, tp 2 (8 experts, top-2; a GPU's slice of an expert 176 MB): 144 us at
  batch 1 (2 experts) ... 487 us at batch 32 (all 8). A line through batch 1 and 32 has an
  intercept of 29.6 us and a slope of 0.919 of the 3.35 TB/s datasheet bandwidth; it predicts
  batch 2/4/8/16 within 2.5%.
* Qwen3-30B-A3B fp8, tp 1 (128 experts, top-8; an expert 4.72 MB): 44.5 us at batch 1 (8
  experts) ... 263 us at batch 64 (126). The same line: intercept 29.7 us, slope 0.763 of the
  bandwidth; it predicts batch 8/16/32/128 within 4% (past 128 rows per expert the fp8 kernel
  turns compute-bound, 355 us at 256 where the line says 266).

Both intercepts are six kernels at the hardware profiles' ``per_kernel_s`` (5 us, the smallest
GEMM of the XLA sm_90 table): the fixed cost is priced from the profile, not from this fit.
The stream efficiency falls with the slice of an expert a GPU streams (many small weight
matrices stream worse than a few large ones); between the two measured slices it is
interpolated in log(bytes), outside them held at the nearer point. The router GEMM is a
seventh kernel at the same floor (vLLM PR #35121 times DeepSeek-V3's at 14.6-22 us on its
own; the floor is the conservative figure).
"""

from __future__ import annotations

import math

import numpy as np

from twin.config.hardware import DTYPE_BYTES
from twin.cost import transformer
from twin.config.plan import Plan

# topk_softmax, moe_align_block_size, the two grouped GEMMs, moe_sum, and the router's GEMM.
# silu_and_mul, the block's sixth kernel, is the layer's ``unary`` element-wise kernel, already
# priced by ``transformer.elementwise_work_by_class`` (so six measured + router - silu = 6).
FUSED_MOE_KERNELS = 6

# (bytes of one expert's slice on a GPU, achieved fraction of the datasheet HBM bandwidth),
# vLLM benchmark_moe on H100 SXM (PR #24700): Qwen3-30B-A3B fp8 tp1, Mixtral-8x7B bf16 tp2.
STREAM_POINTS = ((4.72e6, 0.763), (1.762e8, 0.919))


def stream_efficiency(slice_bytes: float) -> float:
    """Fraction of the datasheet bandwidth the fused-MoE grouped GEMMs stream expert weights at,
    for a GPU's slice of one expert of ``slice_bytes`` (see the module docstring)."""
    (b0, e0), (b1, e1) = STREAM_POINTS
    if slice_bytes <= b0:
        return e0
    if slice_bytes >= b1:
        return e1
    f = (math.log(slice_bytes) - math.log(b0)) / (math.log(b1) - math.log(b0))
    return e0 + f * (e1 - e0)


def routed_active_params(plan: Plan) -> float:
    """Routed-expert parameters one token passes through (top-k of every MoE layer)."""
    arch = plan.model
    return arch.moe_layers * arch.moe.experts_per_token * arch.expert_params if arch.moe else 0.0


def routed_bytes_read(plan: Plan, tokens) -> np.ndarray:
    """Routed-expert weight bytes one forward over ``tokens`` tokens reads, all MoE layers, the
    whole engine (``transformer.weight_bytes_read`` counts these among its bytes)."""
    arch = plan.model
    n = np.asarray(tokens, dtype=np.float64)
    if not arch.moe:
        return np.zeros_like(n)
    per_layer = transformer.experts_touched(arch, n) * arch.expert_params * arch.bytes_per_param
    return np.where(n > 0, arch.moe_layers * per_layer, 0.0)


def fused_moe_s(plan: Plan, tokens: np.ndarray, whole_experts: bool) -> np.ndarray:
    """Seconds per GPU of every MoE layer's routed experts for ``tokens`` tokens (an array)
    reaching each layer, on an engine of ``placement.rollout.tp`` GPUs.

    ``whole_experts``: each GPU holds E/tp whole experts (expert parallelism) rather than a 1/tp
    slice of every expert; either way a GPU streams 1/tp of the touched experts' bytes on
    average, but whole experts stream as larger matrices. Expert GEMMs at the profile's GEMM
    curves for the grouped GEMM's FLOP and one expert's rows (tokens · k / E).
    """
    arch, gpu, r = plan.model, plan.gpu, plan.placement.rollout
    n = np.asarray(tokens, dtype=np.float64)
    if not arch.moe:
        return np.zeros_like(n)
    m, tp, h = arch.moe, r.tp, arch.hidden_size
    scale = DTYPE_BYTES[plan.rollout_dtype] / arch.bytes_per_param
    expert_bytes = arch.expert_params * arch.bytes_per_param * scale
    slice_bytes = expert_bytes if whole_experts else expert_bytes / tp
    per_layer_bytes = transformer.experts_touched(arch, n) * expert_bytes / tp
    stream = per_layer_bytes / (gpu.memory.bandwidth_bytes_per_s * stream_efficiency(slice_bytes))
    rows = np.maximum(n * m.experts_per_token / m.num_experts, 1.0)
    per_call = 2.0 * np.maximum(n, 1.0) * m.experts_per_token * h * m.expert_intermediate_size / tp
    eff = gpu.compute.gemm_eff_array(per_call, rows)
    flops = 2.0 * m.experts_per_token * arch.expert_params * n / tp
    compute = flops / (gpu.compute.peak(plan.rollout_dtype) * np.maximum(eff, 1e-9))
    fixed = FUSED_MOE_KERNELS * gpu.overhead.per_kernel_s
    return np.where(n > 0, arch.moe_layers * (fixed + np.maximum(stream, compute)), 0.0)
