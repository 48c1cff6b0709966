"""FLOPs and bytes of transformer work: prefill, one decode iteration, training, logprob passes.

Pure functions of a :class:`~twin.config.model.ModelArch` and token counts. Conventions:
a matmul of (m×k)·(k×n) costs 2·m·k·n FLOP; attention costs
``arch.attention_flops_per_token_pair`` per (query, key) pair; a causal sequence of length
s has s·(s+1)/2 pairs. Norms, rotary embeddings and softmax are left out (a few percent).
"""

from __future__ import annotations

import numpy as np

from twin.config.model import ModelArch

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
