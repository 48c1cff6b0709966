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
    if tokens <= 0:
        return 0.0, 0.0
    b = arch.bytes_per_param
    h, L, V = float(arch.hidden_size), arch.num_layers, float(arch.vocab_size)
    per_layer, layer_ops = layer_elementwise(arch, kernels)
    if kind == "generate":
        _, k = _qkv_dims(arch)
        per_layer += 4 * k
        layer_ops += 1 if kernels == "fused" else 2
    rows = tokens if logit_rows is None else logit_rows
    body_bytes = (tokens * (2 * h + L * per_layer) + rows * 2 * h) * b  # embedding, layers, final norm
    body_ops = 2.0 + L * layer_ops
    if kind == "train":  # forward, backward (2× forward), recomputed forward
        passes = 3.0 + (1.0 if recompute else 0.0)
        body_bytes, body_ops = body_bytes * passes, body_ops * passes
    vocab_elems, vocab_ops = {"generate": (4 * V, 2.0), "score": (2 * V, 1.0), "train": (6 * V, 3.0)}[kind]
    return float(body_bytes + rows * vocab_elems * VOCAB_BYTES), float(body_ops + vocab_ops)
