"""FLOPs and bytes of transformer work: prefill, one decode iteration, training, logprob passes.

Pure functions of a :class:`~twin.config.model.ModelArch` and token counts. Conventions:
a matmul of (m×k)·(k×n) costs 2·m·k·n FLOP; attention costs
``arch.attention_flops_per_token_pair`` per (query, key) pair; a causal sequence of length
s has s·(s+1)/2 pairs. Norms, rotary embeddings, activations, residual adds and the
softmax over the vocabulary do no matmul FLOP worth counting but move memory: they are
counted as element-wise *traffic* (bytes read + written, and kernels) by
:func:`elementwise_work`, priced by ``roofline.elementwise_time``.
"""

from __future__ import annotations

import numpy as np

from typing import Literal

from twin.config.model import ModelArch

Kernels = Literal["eager", "fused"]

GEMMS_PER_LAYER = 4  # QKV (fused), attention output, gate+up (fused), down


def body_params(arch: ModelArch) -> float:
    """Active parameters that are matmul weights for every token (no embedding, no head)."""
    return arch.active_params - arch.embedding_params


def head_params(arch: ModelArch) -> float:
    return arch.vocab_size * arch.hidden_size


def causal_pairs(lengths) -> float:
    """Attention (query, key) pairs of causal sequences of the given lengths."""
    s = np.asarray(lengths, dtype=np.float64)
    return float((s * (s + 1) / 2).sum())


def forward_flops(arch: ModelArch, tokens: float, attention_pairs: float, logit_tokens: float) -> float:
    """One forward pass over ``tokens`` new tokens.

    ``attention_pairs`` counts (query, key) pairs; ``logit_tokens`` the positions whose
    output logits are computed (1 per sequence when sampling, all when scoring).
    """
    return (
        2.0 * body_params(arch) * tokens
        + arch.attention_flops_per_token_pair * attention_pairs
        + 2.0 * head_params(arch) * logit_tokens
    )


def training_flops(arch: ModelArch, seq_lengths, recompute: bool) -> float:
    """Forward + backward (2× forward) over whole sequences, plus one more forward with
    activation recomputation."""
    s = np.asarray(seq_lengths, dtype=np.float64)
    fwd = forward_flops(arch, s.sum(), causal_pairs(s), s.sum())
    return fwd * (4.0 if recompute else 3.0)


def logprob_flops(arch: ModelArch, seq_lengths) -> float:
    """A scoring forward pass (old-logprob, reference, reward model): logits everywhere."""
    s = np.asarray(seq_lengths, dtype=np.float64)
    return forward_flops(arch, s.sum(), causal_pairs(s), s.sum())


def experts_touched(arch: ModelArch, tokens: float) -> float:
    """Expected distinct routed experts a batch of ``tokens`` touches in one MoE layer,
    under uniform routing: E·(1 − (1 − k/E)^tokens)."""
    if not arch.moe:
        return 0.0
    e, k = arch.moe.num_experts, arch.moe.experts_per_token
    return e * (1.0 - (1.0 - k / e) ** tokens)


def weight_bytes_read(arch: ModelArch, tokens: float) -> float:
    """Weight bytes one forward over ``tokens`` tokens must read from memory.

    Dense weights are read once per iteration whatever the batch; a MoE layer reads only
    the experts its tokens route to. The input embedding reads one row per token.
    """
    if tokens <= 0:
        return 0.0
    b = arch.bytes_per_param
    dense = arch.num_layers * arch.attention_params + arch.dense_layers * arch.dense_ffn_params
    read = dense + head_params(arch) + tokens * arch.hidden_size
    if arch.moe:
        per_layer = (experts_touched(arch, tokens) + arch.moe.shared_experts) * arch.expert_params
        read += arch.moe_layers * (per_layer + arch.moe.num_experts * arch.hidden_size)
    return read * b


def attention_head_dim(arch: ModelArch) -> float:
    """Width of one attention head's dot products (MLA: the query-key head, nope + rope)."""
    if arch.mla:
        return float(arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim)
    return float(arch.d_head)


def gemm_flops_per_call(arch: ModelArch, tokens: float) -> float:
    """Typical FLOP of one GEMM in a forward over ``tokens`` tokens (sets its efficiency)."""
    return 2.0 * body_params(arch) * max(tokens, 1.0) / (GEMMS_PER_LAYER * arch.num_layers)


# ---- element-wise traffic -------------------------------------------------------------------
# Bytes of the vocabulary-wide softmax / log-softmax and their gradients: computed in fp32 by
# every framework we model (logits are upcast before the softmax), whatever the model's dtype.
VOCAB_BYTES = 4.0


def ffn_width(arch: ModelArch) -> float:
    """FFN width one token passes through, averaged over layers (MoE: top-k + shared experts)."""
    if not arch.moe:
        return float(arch.intermediate_size)
    moe = (arch.moe.experts_per_token + arch.moe.shared_experts) * arch.moe.expert_intermediate_size
    return (arch.dense_layers * arch.intermediate_size + arch.moe_layers * moe) / arch.num_layers


def _qkv_dims(arch: ModelArch) -> tuple[float, float]:
    """Per-token widths of the rotated query and key/value activations (MLA: the latent)."""
    if arch.mla:
        m = arch.mla
        return arch.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.kv_lora_rank + m.qk_rope_head_dim
    return arch.num_heads * arch.d_head, arch.num_kv_heads * arch.d_head


def layer_elementwise(arch: ModelArch, kernels: Kernels = "eager") -> tuple[float, float]:
    """Element-wise work of one layer's forward per token: (elements read + written, kernels).

    Each kernel is counted as reading each input once and writing each output once, with
    h = hidden, q = heads·d_head, k = kv_heads·d_head, f = FFN width per token:

    ``eager`` (HF-style PyTorch modules, as verl/OpenRLHF/TRL trainers and the probe run them)::

        2 RMSNorms              read h, write h            each   4h   2 kernels
        rotary on q (rotate_half: 4 muls of halves, add, sub, cat)  9q   7 kernels
        rotary on k                                                 9k   7 kernels
        attention output to token-major (transpose + reshape copy)  2q   1 kernel
        2 residual adds         read 2h, write h           each   6h   2 kernels
        SiLU(gate)              read f, write f                   2f   1 kernel
        SiLU(gate) · up         read 2f, write f                  3f   1 kernel
        total                   10h + 11q + 9k + 5f                    21 kernels

    ``fused`` (vLLM/SGLang, TransformerEngine, Liger kernels)::

        2 fused residual-add + RMSNorm  read 2h, write 2h  each   8h   2 kernels
        rotary on q and k in place                           2q + 2k   1 kernel
        silu_and_mul            read 2f, write f                  3f   1 kernel
        total                   8h + 2q + 2k + 3f                       4 kernels

    The weights of the norms and the rotary tables are small and not counted.
    """
    h = float(arch.hidden_size)
    q, k = _qkv_dims(arch)
    f = ffn_width(arch)
    if kernels == "eager":
        return 10 * h + 11 * q + 9 * k + 5 * f, 21.0
    if kernels == "fused":
        return 8 * h + 2 * q + 2 * k + 3 * f, 4.0
    raise ValueError(f"kernels must be 'eager' or 'fused', not {kernels!r}")


# Classes of element-wise kernels, priced each at its own calibrated curve where a profile has
# one (``Memory.elementwise_classes``): a CPU runs a transcendental function or a short-row,
# strided kernel far below the rate of a contiguous binary op.
ELEMENTWISE_CLASSES = ("binary", "unary", "rotary", "softmax", "sample")


def layer_elementwise_classes(arch: ModelArch, kernels: Kernels = "eager") -> dict[str, tuple[float, float]]:
    """:func:`layer_elementwise` split by kernel class: {class: (elements per token, kernels)}.

    ``binary`` (contiguous, memory-bound: norms, residual adds, SiLU(gate)·up), ``unary``
    (transcendental: SiLU), ``rotary`` (short-row, strided kernels around attention: rotate_half's
    multiplies of half-width slices, add, sub, cat, and the attention output's copy back to
    token-major). ``eager``: binary 10h + 3f in 5 kernels, unary 2f in 1, rotary 11q + 9k in 15;
    ``fused``: binary 8h in 2 (add+RMSNorm), unary 3f in 1 (silu_and_mul), rotary 2q + 2k in 1.
    The totals are :func:`layer_elementwise`'s.
    """
    h = float(arch.hidden_size)
    q, k = _qkv_dims(arch)
    f = ffn_width(arch)
    if kernels == "eager":
        return {"binary": (10 * h + 3 * f, 5.0), "unary": (2 * f, 1.0), "rotary": (11 * q + 9 * k, 15.0)}
    if kernels == "fused":
        return {"binary": (8 * h, 2.0), "unary": (3 * f, 1.0), "rotary": (2 * q + 2 * k, 1.0)}
    raise ValueError(f"kernels must be 'eager' or 'fused', not {kernels!r}")


def elementwise_work(
    arch: ModelArch,
    tokens: float,
    kind: Literal["generate", "score", "train"],
    logit_rows: float | None = None,
    kernels: Kernels = "eager",
    recompute: bool = False,
) -> tuple[float, float]:
    """Bytes (read + written) and kernels of the element-wise work of one pass over ``tokens``.

    Per token: the embedding lookup (read h, write h; 1 kernel) and ``L`` layers of
    :func:`layer_elementwise`, at ``arch.dtype`` bytes. Per row whose logits are computed
    (``logit_rows``; all tokens when scoring or training): the final RMSNorm (2h, 1 kernel)
    and vocabulary-wide passes in fp32 (V = vocabulary):

    * ``generate`` (an engine iteration): the new tokens' K and V written to the cache
      (read + write 2k; 1 kernel fused, 2 eager) per layer; per sequence a softmax (2V) and
      the sampler's pass over the probabilities (2V): 4V, 2 kernels;
    * ``score`` (old-logprob, reference): log-softmax, 2V, 1 kernel (the gather is negligible);
    * ``train``: forward as ``score``, the backward moving twice the forward's traffic in
      twice its kernels (each element-wise op's gradient reads its saved inputs and the
      incoming gradient and writes one gradient per input), one more forward with
      activation recomputation; over the vocabulary log-softmax forward 2V, its backward 3V
      and the gather's backward (zero-fill and scatter) 1V: 6V, 3 kernels.
    """
    work = elementwise_work_by_class(arch, tokens, kind, logit_rows, kernels, recompute)
    return float(sum(b for b, _ in work.values())), float(sum(o for _, o in work.values()))


def elementwise_work_by_class(
    arch: ModelArch,
    tokens: float,
    kind: Literal["generate", "score", "train"],
    logit_rows: float | None = None,
    kernels: Kernels = "eager",
    recompute: bool = False,
) -> dict[str, tuple[float, float]]:
    """:func:`elementwise_work` split by kernel class (:data:`ELEMENTWISE_CLASSES`):
    {class: (bytes, kernels)}. The embedding lookup, the final RMSNorm and the KV-cache write
    are ``binary``; the vocabulary passes are ``softmax``, but for the sampler's pass over the
    probabilities (``generate``: 2V per row, 1 kernel), which is ``sample``; the layers split as
    :func:`layer_elementwise_classes`. Empty when ``tokens`` ≤ 0."""
    if tokens <= 0:
        return {}
    b = arch.bytes_per_param
    h, L, V = float(arch.hidden_size), arch.num_layers, float(arch.vocab_size)
    layer = layer_elementwise_classes(arch, kernels)
    if kind == "generate":
        _, k = _qkv_dims(arch)
        e, o = layer["binary"]
        layer["binary"] = (e + 4 * k, o + (1 if kernels == "fused" else 2))
    rows = tokens if logit_rows is None else logit_rows
    passes = (3.0 + (1.0 if recompute else 0.0)) if kind == "train" else 1.0  # forward, backward (2×), recompute
    out: dict[str, tuple[float, float]] = {}
    for cls, (elems, ops) in layer.items():
        nbytes = tokens * L * elems * b
        kops = L * ops
        if cls == "binary":  # embedding lookup (2h per token, 1 kernel), final norm (2h per logit row, 1)
            nbytes += (tokens * 2 * h + rows * 2 * h) * b
            kops += 2.0
        out[cls] = (float(nbytes * passes), float(kops * passes))
    vocab_elems, vocab_ops = {"generate": (2 * V, 1.0), "score": (2 * V, 1.0), "train": (6 * V, 3.0)}[kind]
    out["softmax"] = (float(rows * vocab_elems * VOCAB_BYTES), vocab_ops)
    if kind == "generate":  # the sampler's pass over the probabilities
        out["sample"] = (float(rows * 2 * V * VOCAB_BYTES), 1.0)
    return out
