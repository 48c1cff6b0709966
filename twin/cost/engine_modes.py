"""How an engine's run mode changes its iteration table: eager execution and speculative decoding.

Both are transforms of an :class:`EngineCosts` table (``twin.cost.engine``), so the rollout
kernels run them unchanged.

**Eager execution** (``placement.rollout.enforce_eager``, vLLM ``enforce_eager=True``: no CUDA
graphs). With graphs a decode step is one graph launch; eagerly, the host dispatches every
kernel through PyTorch, and the GPU cannot run ahead of it: an iteration takes at least the
host's dispatch time, ``t = max(device, overhead + kernels · EAGER_OP_S)`` (the engine's
``host_floor_s``, as HF generate's). Kernels per iteration, counted from vLLM's model code: per
layer the fused add+RMSNorm twice, QKV, rotary, the KV-cache write, attention, the output
projection, gate+up, SiLU·mul and down (10), two all-reduces with tp > 1, four more in a MoE
layer (router, top-k, align and the sum replace nothing: the block's six kernels for the
dense FFN's three, ``moe_engine``), plus ``EAGER_FIXED_OPS`` per step (embedding, final norm,
head, sampler). ``EAGER_OP_S``, 36 us: vLLM PR #1440 (Oct 2023) measured Llama-2-7B at batch 1
decoding 100 tokens in 1.20 s eagerly and 1.05 s with CUDA graphs; an eager step of 12.0 ms
that the host sets is (32 · 10 + 10) kernels · 36 us. One measurement, of vLLM 0.2's Python
model code: a property of the stack, stated as such.

**Speculative decoding** (``placement.rollout.speculative``: ``mtp``, ``eagle``,
``draft_model``; vLLM V1's chain drafting). Each step a drafter proposes ``k =
num_speculative_tokens`` tokens per sequence in k passes, and the target verifies the k + 1
positions in one forward; with a per-token acceptance rate α the expected tokens a sequence
gains per step are τ = (1 − α^(k+1)) / (1 − α) (Leviathan et al. 2023, eq. 1), or the measured
``speculative_accepted_per_step``. A step of n sequences costs the target's iteration at
n·(k + 1) tokens (its weights read once, its GEMMs on (k + 1)× the rows, logits at every
verified position, attention of k + 1 queries over each sequence's KV read once) plus k draft
passes at n tokens; per token it is divided by τ. At small batch the verify step costs about
one decode step (weight-bound) and τ tokens come out of it; at large batch it is compute-bound
and costs ~(k + 1) steps, so the gain shrinks and turns to a loss — the effect the twin must
show. The drafter: ``mtp`` and ``eagle`` one layer of the target's width (its average layer's
weights, an fc of 2h × h, the target's vocabulary head and one layer's KV read); ``draft_model``
a whole model (``speculative_draft_model``) at the same tp. Iterations with prefill are priced
as verify steps too (the table is per token count, not per kind of token): prefill chunks are
overpriced by up to (k + 1)/τ, a small share of an RL rollout. The drafter's weights and KV
are not counted in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from twin.config.hardware import DTYPE_BYTES
from twin.config.plan import Plan, resolve
from twin.cost import transformer
from twin.cost.memory import kv_bytes_per_token
from twin.cost.roofline import memory_rate

if TYPE_CHECKING:  # the table this module transforms; engine.py builds it and calls in here
    from twin.cost.engine import EngineCosts

# kernels of one dense layer's decode step in vLLM's eager model code (see the module docstring)
EAGER_OPS_PER_LAYER = 10
EAGER_OPS_PER_MOE_LAYER = 4  # the fused-MoE block's six kernels for the dense FFN's three, + router
EAGER_FIXED_OPS = 10
EAGER_OP_S = 36e-6  # vLLM PR #1440: Llama-2-7B batch 1, 12.0 ms eager / (32 x 10 + 10) kernels

# DeepSeek-V3 technical report (arXiv 2412.19437, sec. 5.4.3): "the acceptance rate of the second
# token prediction ranges between 85% and 90%" for its MTP module
MTP_ACCEPTANCE = 0.85


def eager_kernels(plan: Plan) -> int:
    """Kernels an eager engine launches per iteration (one host dispatch each)."""
    arch, r = plan.model, plan.placement.rollout
    per_layer = EAGER_OPS_PER_LAYER + (2 if r.tp > 1 else 0)
    moe = arch.moe_layers * EAGER_OPS_PER_MOE_LAYER if arch.moe else 0
    return arch.num_layers * per_layer + moe + EAGER_FIXED_OPS


def eager(costs: EngineCosts, plan: Plan) -> EngineCosts:
    """The table of an engine without CUDA graphs: no iteration shorter than its host dispatch."""
    host = costs.overhead_s + eager_kernels(plan) * EAGER_OP_S
    return replace(costs, host_floor_s=max(costs.host_floor_s, host))


def accepted_per_step(plan: Plan) -> float:
    """τ: tokens a sequence gains per verify step (accepted drafts + the target's own token)."""
    r = plan.placement.rollout
    if r.speculative_accepted_per_step is not None:
        return float(r.speculative_accepted_per_step)
    alpha = r.speculative_acceptance if r.speculative_acceptance is not None else MTP_ACCEPTANCE
    k = r.num_speculative_tokens
    return float((1.0 - alpha ** (k + 1)) / (1.0 - alpha)) if alpha < 1.0 else float(k + 1)


def _head_draft(plan: Plan, n: np.ndarray) -> tuple[np.ndarray, float]:
    """One pass of an MTP/EAGLE head at ``n`` tokens per GPU: (seconds by n, seconds per
    context token of its one layer's KV read)."""
    arch, gpu, r = plan.model, plan.gpu, plan.placement.rollout
    tp = r.tp
    layer = transformer.body_params(arch) / arch.num_layers  # the target's average active layer
    params = layer + 2 * arch.hidden_size ** 2 + transformer.head_params(arch)
    nbytes = params * DTYPE_BYTES[plan.rollout_dtype] / tp
    rows = np.maximum(n, 1.0)
    eff = gpu.compute.gemm_eff_array(2.0 * layer * rows / transformer.GEMMS_PER_LAYER / tp, rows)
    compute = 2.0 * params * n / tp / (gpu.compute.peak(plan.rollout_dtype) * np.maximum(eff, 1e-9))
    stream = nbytes / memory_rate(gpu, nbytes)
    kernels = (EAGER_OPS_PER_LAYER + 4) * gpu.overhead.per_kernel_s  # a layer, fc, head, sampler
    per_token_kv = kv_bytes_per_token(plan) / arch.num_layers / tp / memory_rate(gpu, nbytes)
    return np.where(n > 0, kernels + np.maximum(compute, stream), 0.0), per_token_kv


def _model_draft(plan: Plan, n: np.ndarray, table: Callable[[Plan], EngineCosts]) -> tuple[np.ndarray, float]:
    """One decode pass of a draft model at ``n`` sequences: its own engine table (``table``, the
    engine's tabulation) at the same tp."""
    r = plan.placement.rollout
    s = plan.scenario
    rollout = s.placement.rollout.model_copy(update={"speculative": "none"})  # the drafter does not draft
    placement = s.placement.model_copy(update={"rollout": rollout})
    d = table(resolve(s.model_copy(update={"model": r.speculative_draft_model, "placement": placement})))
    idx = np.minimum(n.astype(np.int64), len(d.linear_s) - 1)
    t = d.overhead_s + d.comm_s[idx] + np.maximum(d.linear_s[idx], d.weights_s[idx])
    return np.where(n > 0, t, 0.0), d.kv_s_per_token


def speculative(costs: EngineCosts, plan: Plan, table: Callable[[Plan], EngineCosts]) -> EngineCosts:
    """The table of an engine that drafts ``k`` tokens and verifies them each step, per
    generated token (the module docstring). ``costs`` must be tabulated with logits at every
    position up to (k + 1) × max_num_seqs; ``table`` tabulates a draft model's own engine."""
    r = plan.placement.rollout
    k = r.num_speculative_tokens
    tau = accepted_per_step(plan)
    last = len(costs.linear_s) - 1
    n = np.arange(last + 1, dtype=np.float64)
    verify = np.minimum(n.astype(np.int64) * (k + 1), last)
    draft, draft_kv = _model_draft(plan, n, table) if r.speculative == "draft_model" else _head_draft(plan, n)
    ew = costs.elementwise_s
    return replace(
        costs,
        overhead_s=costs.overhead_s / tau,
        linear_s=costs.linear_s[verify] / tau,
        weights_s=costs.weights_s[verify] / tau,
        comm_s=(costs.comm_s[verify] + k * draft) / tau,
        attn_s_per_pair=costs.attn_s_per_pair * (k + 1) / tau,
        kv_s_per_token=(costs.kv_s_per_token + k * draft_kv) / tau,
        host_floor_s=costs.host_floor_s / tau,
        elementwise_s=None if ew is None else ew[verify] / tau,
    )
