"""config.json keys of hybrid, windowed and sparse models read into ModelArch
(twin/config/hf_hybrid.py), and the parameter counting of each kind of layer held to
transformers' own modules, instantiated on the meta device."""

import pytest

from twin.config.model import ModelArch, from_hf_config
from twin.config.model_catalog import lookup


def arch(cfg: dict) -> ModelArch:
    return ModelArch(**from_hf_config(cfg))


BASE = {"num_hidden_layers": 8, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2,
        "head_dim": 64, "intermediate_size": 1024, "vocab_size": 1000}


def test_qwen3_next_every_fourth_layer_full_and_the_rest_gated_deltanet():
    a = lookup("Qwen/Qwen3-Next-80B-A3B-Instruct").entry.arch
    assert (a.linear_attention.layers, a.attention_layer_count, a.full_attention_layers) == (36, 12, 12)
    la = a.linear_attention
    assert (la.mixer, la.num_heads, la.key_heads, la.key_head_dim, la.conv_kernel) == ("gated_deltanet", 32, 16, 128, 4)
    assert a.attention_gate and a.moe.shared_experts == 1 and a.moe.shared_expert_intermediate_size is None
    # KV cache only in the 12 full-attention layers: K and V of 2 heads of 256, bf16
    assert a.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2


def test_a_multimodal_wrapper_is_read_by_its_text_config():
    text = dict(BASE, model_type="qwen3_5_text", full_attention_interval=4, linear_num_key_heads=4,
                linear_num_value_heads=8, linear_key_head_dim=32, linear_value_head_dim=32,
                linear_conv_kernel_dim=4, mamba_ssm_dtype="float32", mtp_num_hidden_layers=1)
    a = arch({"model_type": "qwen3_5", "tie_word_embeddings": True, "text_config": text, "vision_config": {"depth": 2}})
    assert a.tie_embeddings and a.linear_attention.layers == 6 and a.attention_gate
    assert a.linear_attention.state_dtype == "fp32" and a.mtp_layers == 1
    assert a.recurrent_state_bytes == 6 * (8 * 32 * 32 * 4 + 3 * (2 * 4 * 32 + 8 * 32) * 2)


def test_an_explicit_gate_switch_is_obeyed():
    text = dict(BASE, model_type="qwen3_5_text", full_attention_interval=4, linear_num_value_heads=8,
                linear_key_head_dim=32, linear_value_head_dim=32, attn_output_gate=False)
    assert not arch(text).attention_gate


def test_gpt_oss_alternates_windowed_and_full_layers():
    a = lookup("openai/gpt-oss-20b").entry.arch
    assert (a.sliding_window.window, a.sliding_window.layers, a.full_attention_layers) == (128, 12, 12)
    assert a.kv_bytes_per_token == 12 * 2 * 8 * 64 * 2


@pytest.mark.parametrize("cfg, windowed", [
    (dict(BASE, model_type="gemma2", sliding_window=4096), 4),                             # local first, alternating
    (dict(BASE, model_type="gemma3_text", sliding_window=1024, sliding_window_pattern=6), 7),  # 1 global in 6
    (dict(BASE, model_type="mistral", sliding_window=4096), 8),                            # every layer
    (dict(BASE, model_type="qwen2", sliding_window=4096, use_sliding_window=False), 0),    # switched off
    (dict(BASE, model_type="mistral", sliding_window=None), 0),
])
def test_sliding_window_dialects(cfg, windowed):
    a = arch(cfg)
    assert (a.sliding_window.layers if a.sliding_window else 0) == windowed


def test_nemotron_h_layers_are_one_kind_each():
    a = lookup("nvidia/Nemotron-H-8B-Base-8K").entry.arch
    assert (a.num_layers, a.linear_attention.layers, a.attention_layer_count, a.ffn_layer_count) == (52, 24, 4, 24)
    assert a.linear_attention.mixer == "mamba2" and not a.gated_ffn and a.linear_attention.state_dtype == "fp32"
    nano = lookup("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").entry.arch
    assert (nano.moe_layers, nano.dense_layers, nano.moe.shared_expert_intermediate_size) == (23, 0, 3712)


def test_minimax_lightning_and_kimi_linear_layer_lists():
    m1 = lookup("MiniMaxAI/MiniMax-M1-80k").entry.arch
    assert (m1.linear_attention.mixer, m1.linear_attention.layers, m1.full_attention_layers) == ("lightning", 70, 10)
    assert m1.linear_attention.conv_channels == 0 and m1.linear_attention.chunk_size == 256
    kimi = lookup("moonshotai/Kimi-Linear-48B-A3B-Instruct").entry.arch
    assert (kimi.linear_attention.mixer, kimi.linear_attention.layers, kimi.full_attention_layers) == ("kda", 21, 6)
    assert kimi.mla and kimi.moe.dense_layers == 1 and kimi.moe.experts_per_token == 8


def test_deepseek_sparse_attention_and_mtp_keys():
    a = lookup("deepseek-ai/DeepSeek-V3.2").entry.arch
    s = a.sparse_attention
    assert (s.index_heads, s.index_head_dim, s.top_k, a.mtp_layers) == (64, 128, 2048, 1)
    # every token keeps its latent and its index key; the indexer scores every pair
    assert a.kv_bytes_per_token == 61 * (512 + 64 + 128) * 2
    assert a.attention_flops_per_token_pair == 61 * 2 * 64 * 128
    (window,) = a.windowed_attention
    assert (window.layers, window.span, window.kept) == (61, 2048, True)


def test_plain_transformers_read_as_before():
    a = arch(dict(BASE, model_type="llama"))
    assert a.model_dump() == ModelArch(**{k: v for k, v in from_hf_config(dict(BASE)).items()}).model_dump()
    for field in ("linear_attention", "sliding_window", "sparse_attention", "mtp_layers", "attention_gate"):
        assert field not in a.model_dump()


# ---- parameter counting against transformers' modules ------------------------------------------
SMALL = {
    "qwen3_next": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                       intermediate_size=512, moe_intermediate_size=64, shared_expert_intermediate_size=96,
                       num_experts=8, num_experts_per_tok=2, linear_num_key_heads=2, linear_num_value_heads=4,
                       linear_key_head_dim=32, linear_value_head_dim=48, vocab_size=1000),
    "qwen3_5_text": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                         intermediate_size=512, linear_num_key_heads=2, linear_num_value_heads=4,
                         linear_key_head_dim=32, linear_value_head_dim=32, vocab_size=1000),
    "nemotron_h": dict(hybrid_override_pattern="M-M*-ME", hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                       head_dim=64, intermediate_size=512, mamba_num_heads=8, mamba_head_dim=32, ssm_state_size=16,
                       n_groups=2, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
                       moe_shared_expert_intermediate_size=128, vocab_size=1000),
    "kimi_linear": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=4,
                        intermediate_size=512, moe_intermediate_size=64, num_experts=8, num_experts_per_token=2,
                        first_k_dense_replace=1, kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16,
                        v_head_dim=32, linear_attn_config={"num_heads": 4, "head_dim": 32, "short_conv_kernel_size": 4,
                                                           "full_attn_layers": [4], "kda_layers": [1, 2, 3]},
                        vocab_size=1000),
    "minimax": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                    intermediate_size=128, num_local_experts=4, num_experts_per_tok=2, vocab_size=1000),
    "gpt_oss": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                    intermediate_size=128, num_local_experts=4, num_experts_per_tok=2, sliding_window=16, vocab_size=1000),
    "deepseek_v32": dict(num_hidden_layers=3, hidden_size=256, num_attention_heads=4, num_key_value_heads=4,
                         intermediate_size=512, moe_intermediate_size=64, n_routed_experts=8, num_experts_per_tok=2,
                         n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=96, kv_lora_rank=64,
                         qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, index_n_heads=4, index_head_dim=32,
                         index_topk=16, vocab_size=1000),
    "gemma3_text": dict(num_hidden_layers=6, hidden_size=256, num_attention_heads=4, num_key_value_heads=1, head_dim=64,
                        intermediate_size=512, sliding_window=16, vocab_size=1000),
}


@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_parameters_are_counted_as_transformers_builds_them(model_type):
    """Norms, biases and attention sinks are left out of the twin's count: within 1.5% on these
    tiny models (their share shrinks with width), exact in the bulk."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokens = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}  # within the tiny vocabulary
    config = transformers.AutoConfig.for_model(model_type, **tokens, **SMALL[model_type])
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    skip = ("norm", "bias", "sinks", "e_score_correction", "A_log", "dt_bias", "D")
    counted = sum(p.numel() for n, p in model.named_parameters()
                  if not any(n.rsplit(".", 1)[-1] == s or n.endswith(s) for s in skip)
                  and "layernorm" not in n and "norm.weight" not in n)
    total = sum(p.numel() for p in model.parameters())
    ours = arch(config.to_dict()).total_params
    assert ours == pytest.approx(total, rel=0.015)
    assert ours == pytest.approx(counted, rel=0.002)
