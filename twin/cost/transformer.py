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
    activation recomputation. Windowed, top-k and linear-attention layers add their own
    forward FLOP (:func:`sequence_mixer_flops`)."""
    s = np.asarray(seq_lengths, dtype=np.float64)
    fwd = forward_flops(arch, s.sum(), causal_pairs(s), s.sum()) + sequence_mixer_flops(arch, s)
    return fwd * (4.0 if recompute else 3.0)


def windowed_pairs(lengths, span: int) -> float:
    """(query, key) pairs of causal sequences whose queries reach back at most ``span`` tokens:
    s(s+1)/2 up to the span, then ``span`` per further token."""
    s = np.asarray(lengths, dtype=np.float64)
    w = float(span)
    capped = np.where(s <= w, s * (s + 1) / 2, w * (w + 1) / 2 + (s - w) * w)
    return float(capped.sum())


def sequence_mixer_flops(arch: ModelArch, lengths) -> float:
    """Forward FLOP of whole sequences in the mixers that the full-attention pairs do not carry:
    windowed and top-k attention over their capped pairs, linear recurrences per token."""
    if not arch.windowed_attention and not arch.linear_attention:
        return 0.0
    s = np.asarray(lengths, dtype=np.float64)
    flops = arch.linear_flops_per_token * float(s.sum())
    for w in arch.windowed_attention:
        flops += w.layers * w.flops_per_pair * windowed_pairs(s, w.span)
    return flops


def logprob_flops(arch: ModelArch, seq_lengths) -> float:
    """A scoring forward pass (old-logprob, reference, reward model): logits everywhere."""
    s = np.asarray(seq_lengths, dtype=np.float64)
    return forward_flops(arch, s.sum(), causal_pairs(s), s.sum()) + sequence_mixer_flops(arch, s)


def experts_touched(arch: ModelArch, tokens: float) -> float:
    """Expected distinct routed experts a batch of ``tokens`` touches in one MoE layer,
    under uniform routing: E·(1 − (1 − k/E)^tokens)."""
    if not arch.moe:
        return 0.0
    e, k = arch.moe.num_experts, arch.moe.experts_per_token
    return e * (1.0 - (1.0 - k / e) ** tokens)


def weight_bytes_read(arch: ModelArch, tokens):
    """Weight bytes one forward over ``tokens`` tokens must read from memory (a float, or an
    array for an array of token counts: the engine tabulates every count at once).

    Dense weights are read once per iteration whatever the batch; a MoE layer reads only
    the experts its tokens route to. The input embedding reads one row per token.
    """
    n = np.asarray(tokens, dtype=np.float64)
    b = arch.bytes_per_param
    dense = arch.mixer_params + arch.dense_layers * arch.dense_ffn_params
    read = dense + head_params(arch) + n * arch.hidden_size
    if arch.moe:
        if arch.moe.shared_expert_intermediate_size is None:
            per_layer = (experts_touched(arch, n) + arch.moe.shared_experts) * arch.expert_params
        else:
            per_layer = experts_touched(arch, n) * arch.expert_params + arch.shared_expert_params
        read = read + arch.moe_layers * (per_layer + arch.moe.num_experts * arch.hidden_size)
    out = np.where(n > 0, read * b, 0.0)
    return float(out) if out.ndim == 0 else out


def context_attention_layers(arch: ModelArch) -> int:
    """Layers over which ``arch.attention_flops_per_token_pair`` is spent: the full-attention
    layers (sparse attention: every attention layer's indexer); at least 1, so that a model
    without any divides safely (its per-pair FLOP are then zero)."""
    layers = arch.attention_layer_count if arch.sparse_attention else arch.full_attention_layers
    return max(layers, 1)


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
    if arch.moe.shared_expert_intermediate_size is not None:
        moe = (arch.moe.experts_per_token * arch.moe.expert_intermediate_size
               + arch.moe.shared_experts * arch.moe.shared_expert_intermediate_size)
    return (arch.dense_layers * arch.intermediate_size + arch.moe_layers * moe) / arch.num_layers


def _qkv_dims(arch: ModelArch) -> tuple[float, float]:
    """Per-token widths of the rotated query and key/value activations (MLA: the latent)."""
    if arch.mla:
        m = arch.mla
        return arch.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.kv_lora_rank + m.qk_rope_head_dim
    return arch.num_heads * arch.d_head, arch.num_kv_heads * arch.d_head


# Eager (HF-style PyTorch modules) element-wise traffic, per token: (elements read + written,
# kernels), counted by dispatching the probe's decoder (calibrate.probe.model, written as HF's
# Llama modules are) under a TorchDispatchMode, forward and autograd backward, in fp32
# (tests/calibrate/test_elementwise_count.py holds these to that count). RMSNorm is not one
# kernel but six: x², mean, + eps, rsqrt, x·rsqrt, ·weight (the two tiny ones on one value
# per token); its autograd backward moves 24h in 14 kernels. HF's bf16 RMSNorm also upcasts to
# fp32 and back, two more kernels not counted here.
EAGER_NORM_FORWARD = (7.0, 6.0)    # × h
EAGER_NORM_BACKWARD = (24.0, 14.0)  # × h


def layer_elementwise_classes(arch: ModelArch, kernels: Kernels = "eager") -> dict[str, tuple[float, float]]:
    """Element-wise work of one layer's forward per token by kernel class: {class: (elements
    read + written, kernels)}, with h = hidden, q = heads·d_head, k = kv_heads·d_head, f = FFN
    width per token. Classes: ``binary`` (contiguous, memory-bound), ``unary`` (transcendental:
    SiLU), ``rotary`` (short-row, strided kernels around attention).

    ``eager`` (HF-style PyTorch modules, as verl/OpenRLHF/TRL trainers and the probe run them)::

        binary  2 RMSNorms (7h, 6 kernels each), 2 residual adds (3h each),
                SiLU(gate)·up (3f)                                     20h + 3f   15 kernels
        unary   SiLU(gate)                                             2f          1 kernel
        rotary  rotate_half on q and k (4 muls of halves, add, sub, cat: 9q, 9k),
                attention output back to token-major (2q)              11q + 9k   15 kernels

    ``fused`` (vLLM/SGLang, TransformerEngine, Liger kernels)::

        binary  2 fused residual-add + RMSNorm (read 2h, write 2h)     8h          2 kernels
        unary   silu_and_mul (read 2f, write f)                        3f          1 kernel
        rotary  rotary on q and k in place                             2q + 2k     1 kernel

    The weights of the norms and the rotary tables are small and not counted.
    """
    h = float(arch.hidden_size)
    q, k = _qkv_dims(arch)
    f = ffn_width(arch)
    if kernels == "eager":
        norm_e, norm_k = EAGER_NORM_FORWARD
        return {"binary": (2 * norm_e * h + 6 * h + 3 * f, 2 * norm_k + 3.0), "unary": (2 * f, 1.0),
                "rotary": (11 * q + 9 * k, 15.0)}
    if kernels == "fused":
        return {"binary": (8 * h, 2.0), "unary": (3 * f, 1.0), "rotary": (2 * q + 2 * k, 1.0)}
    raise ValueError(f"kernels must be 'eager' or 'fused', not {kernels!r}")


def layer_elementwise_backward_classes(arch: ModelArch, kernels: Kernels = "eager") -> dict[str, tuple[float, float]]:
    """Element-wise work of one layer's backward per token, by class (as
    :func:`layer_elementwise_classes`).

    ``eager`` (counted, see ``EAGER_NORM_*``)::

        binary  2 RMSNorm backwards (24h, 14 kernels each), the residual stream's two
                gradient sums (3h each), SiLU(gate)·up's two products (3f each), the
                gate/up gradients joined (4f)                          54h + 10f  33 kernels
        unary   SiLU backward (read 2f, write f)                       3f          1 kernel
        rotary  rotate_half's gradients (products, neg, adds, slice backward) and the
                q/k/v gradients joined head-major                      18q + 22k  22 kernels

    ``fused``: twice the forward's traffic in twice its kernels (each op's gradient reads its
    saved inputs and the incoming gradient and writes one gradient per input); not counted.
    """
    if kernels == "fused":
        return {c: (2 * e, 2 * o) for c, (e, o) in layer_elementwise_classes(arch, kernels).items()}
    if kernels != "eager":
        raise ValueError(f"kernels must be 'eager' or 'fused', not {kernels!r}")
    h = float(arch.hidden_size)
    q, k = _qkv_dims(arch)
    f = ffn_width(arch)
    norm_e, norm_k = EAGER_NORM_BACKWARD
    return {"binary": (2 * norm_e * h + 6 * h + 10 * f, 2 * norm_k + 5.0), "unary": (3 * f, 1.0),
            "rotary": (18 * q + 22 * k, 22.0)}


def layer_elementwise(arch: ModelArch, kernels: Kernels = "eager") -> tuple[float, float]:
    """Element-wise work of one layer's forward per token, all classes together: (elements
    read + written, kernels). Eager: 20h + 11q + 9k + 5f in 31 kernels; fused: 8h + 2q + 2k + 3f
    in 4 (:func:`layer_elementwise_classes`)."""
    by_class = layer_elementwise_classes(arch, kernels)
    return float(sum(e for e, _ in by_class.values())), float(sum(o for _, o in by_class.values()))


# Classes of element-wise kernels, priced each at its own calibrated curve where a profile has
# one (``Memory.elementwise_classes``): a CPU runs a transcendental function or a short-row,
# strided kernel far below the rate of a contiguous binary op.
ELEMENTWISE_CLASSES = ("binary", "unary", "rotary", "softmax", "sample")


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
    (``logit_rows``; all tokens when scoring or training): the final RMSNorm (eager 7h in 6
    kernels, fused 2h in 1) and vocabulary-wide passes in fp32 (V = vocabulary):

    * ``generate`` (an engine iteration): the new tokens' K and V written to the cache
      (read + write 2k; 1 kernel fused, 2 eager) per layer; per sequence a softmax (2V) and
      the sampler's pass over the probabilities (2V): 4V, 2 kernels;
    * ``score`` (old-logprob, reference): log-softmax, 2V, 1 kernel (the gather is negligible);
    * ``train``: the forward as ``score``, the backward (:func:`layer_elementwise_backward_classes`
      per layer; the embedding's gradient 2h and the final norm's, eager 24h in 14 kernels,
      fused twice its forward), one more forward of the layers with activation recomputation; over the
      vocabulary log-softmax forward 2V, its backward 3V and the gather's backward (zero-fill
      and scatter) 1V: 6V, 3 kernels.
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
    :func:`layer_elementwise_classes`. Empty when ``tokens`` ≤ 0. ``tokens`` may be a NumPy
    array of positive counts: the bytes are then arrays, element by element the same figures."""
    many = isinstance(tokens, np.ndarray)
    if not many and tokens <= 0:
        return {}
    num = (lambda x: x) if many else float
    b = arch.bytes_per_param
    h, L, V = float(arch.hidden_size), arch.num_layers, float(arch.vocab_size)
    forward = layer_elementwise_classes(arch, kernels)
    if kind == "generate":
        _, k = _qkv_dims(arch)
        e, o = forward["binary"]
        forward["binary"] = (e + 4 * k, o + (1 if kernels == "fused" else 2))
    rows = tokens if logit_rows is None else logit_rows
    norm_fwd, norm_bwd = (EAGER_NORM_FORWARD, EAGER_NORM_BACKWARD) if kernels == "eager" else ((2.0, 1.0), (4.0, 2.0))
    # per pass: (elements per token by class through the layers, and the fixed binary work:
    # the embedding (per token) and the final norm (per logit row))
    passes = [(forward, (2 * h * tokens + norm_fwd[0] * h * rows, 1.0 + norm_fwd[1]))]
    if kind == "train":
        passes.append((layer_elementwise_backward_classes(arch, kernels),
                       (2 * h * tokens + norm_bwd[0] * h * rows, 1.0 + norm_bwd[1])))
        if recompute:  # the layers' forward once more (checkpointing wraps the decoder layers)
            passes.append((forward, (0.0, 0.0)))
    out: dict[str, tuple[float, float]] = {}
    for layer, (fixed_elems, fixed_ops) in passes:
        for cls, (elems, ops) in layer.items():
            nbytes, kops = tokens * L * elems, L * ops
            if cls == "binary":
                nbytes, kops = nbytes + fixed_elems, kops + fixed_ops
            total_b, total_k = out.get(cls, (0.0, 0.0))
            out[cls] = (total_b + num(nbytes * b), total_k + float(kops))
    vocab_elems, vocab_ops = {"generate": (2 * V, 1.0), "score": (2 * V, 1.0), "train": (6 * V, 3.0)}[kind]
    out["softmax"] = (num(rows * vocab_elems * VOCAB_BYTES), vocab_ops)
    if kind == "generate":  # the sampler's pass over the probabilities
        out["sample"] = (num(rows * 2 * V * VOCAB_BYTES), 1.0)
    return out
