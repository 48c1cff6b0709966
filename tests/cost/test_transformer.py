import pytest

from twin.config.model import ModelArch
from twin.config.registry import resolve_model
from twin.cost import transformer


def arch(name: str) -> ModelArch:
    return ModelArch(**resolve_model(name, "model"))


def test_dense_forward_is_two_flops_per_parameter_per_token():
    a = arch("llama-3.1-8b")
    # No attention pairs, logits for every token: 2 × (all matmul params incl. head) per token.
    flops = transformer.forward_flops(a, tokens=1000, attention_pairs=0, logit_tokens=1000)
    matmul_params = a.total_params - a.vocab_size * a.hidden_size  # input embedding is a lookup
    assert flops == pytest.approx(2 * matmul_params * 1000)


def test_moe_forward_uses_active_parameters_only():
    a = arch("qwen3-30b-a3b")
    per_token = transformer.forward_flops(a, 1, 0, 0) / 1
    # Qwen3-30B-A3B activates ~3.3 B parameters, of which ~0.31 B embeddings (lookup + head).
    assert per_token == pytest.approx(2 * (a.active_params - 2 * a.vocab_size * a.hidden_size))
    assert per_token < 0.15 * 2 * a.total_params


def test_attention_flops_of_a_causal_sequence():
    a = arch("llama-3.1-8b")
    s = 4096
    # QK^T and PV: 2 matmuls × 2 FLOP × heads × head_dim per pair, s(s+1)/2 pairs, per layer.
    expected = 4 * a.num_layers * a.num_heads * a.d_head * s * (s + 1) / 2
    assert transformer.forward_flops(a, s, transformer.causal_pairs([s]), 0) - transformer.forward_flops(a, s, 0, 0) == pytest.approx(expected)


def test_training_is_three_forwards_or_four_with_recompute():
    a = arch("qwen2.5-7b")
    seqs = [1000, 3000]
    fwd = transformer.logprob_flops(a, seqs)
    assert transformer.training_flops(a, seqs, recompute=False) == pytest.approx(3 * fwd)
    assert transformer.training_flops(a, seqs, recompute=True) == pytest.approx(4 * fwd)


def test_decode_reads_all_dense_weights_but_few_experts():
    dense = arch("qwen2.5-7b")
    one = transformer.weight_bytes_read(dense, 1)
    assert one == pytest.approx(dense.weight_bytes - (dense.vocab_size - 1) * dense.hidden_size * 2, rel=1e-6)
    moe = arch("qwen3-30b-a3b")
    # One token touches 8 of 128 experts per layer; a big batch touches nearly all of them.
    assert transformer.weight_bytes_read(moe, 1) < 0.2 * moe.weight_bytes
    assert transformer.weight_bytes_read(moe, 4096) == pytest.approx(moe.weight_bytes, rel=0.02)
    assert transformer.experts_touched(moe, 1) == pytest.approx(8)
