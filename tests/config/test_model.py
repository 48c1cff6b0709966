import json

import pytest

from twin.config.load import load_scenario
from twin.config.model import ModelArch, from_hf_config
from twin.config.registry import model_presets, resolve_model
from twin.errors import InputError

# Published parameter counts (model cards): total, active, in billions; tolerance 1.5%.
PUBLISHED = {
    "qwen2.5-7b": (7.61, 7.61),
    "llama-3.1-8b": (8.03, 8.03),
    "qwen3-4b": (4.02, 4.02),
    "qwen3-32b": (32.8, 32.8),
    "llama-3.1-70b": (70.6, 70.6),
    "qwen3-30b-a3b": (30.5, 3.3),
    "qwen3-235b-a22b": (235.0, 22.0),
    "deepseek-v3": (671.0, 37.0),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_parameter_counts_match_model_cards(name):
    arch = ModelArch(**resolve_model(name, "model"))
    total, active = PUBLISHED[name]
    assert arch.total_params / 1e9 == pytest.approx(total, rel=0.015)
    assert arch.active_params / 1e9 == pytest.approx(active, rel=0.03)


def test_gqa_kv_cache_bytes():
    # Llama-3.1-8B: 32 layers × 2 (K,V) × 8 KV heads × 128 dims × 2 bytes = 128 KiB per token.
    arch = ModelArch(**resolve_model("llama-3.1-8b", "model"))
    assert arch.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2


def test_mla_kv_cache_is_the_latent():
    # DeepSeek-V3 caches kv_lora_rank + rope dims per layer: 61 × (512 + 64) × 2 bytes.
    arch = ModelArch(**resolve_model("deepseek-v3", "model"))
    assert arch.kv_bytes_per_token == 61 * 576 * 2


def test_hf_config_json_matches_preset(tmp_path):
    cfg = {
        "architectures": ["Qwen3MoeForCausalLM"], "num_hidden_layers": 48, "hidden_size": 2048,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
        "num_experts_per_tok": 8, "vocab_size": 151936, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    from_file = load_scenario({"model": str(path)}).model
    preset = ModelArch(**resolve_model("qwen3-30b-a3b", "model"))
    assert from_file.total_params == preset.total_params
    assert from_file.active_params == preset.active_params
    assert from_file.source == str(path)


def test_hf_config_deepseek_fields():
    fields = from_hf_config({
        "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
        "num_key_value_heads": 128, "intermediate_size": 18432, "vocab_size": 129280,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "kv_lora_rank": 512,
        "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    })
    assert ModelArch(**fields).total_params == ModelArch(**resolve_model("deepseek-v3", "model")).total_params


def test_inline_architecture_and_preset_override():
    s = load_scenario({"model": {"preset": "qwen3-4b", "dtype": "fp8"}})
    assert s.model.dtype == "fp8" and s.model.bytes_per_param == 1
    inline = load_scenario({"model": {"num_layers": 2, "hidden_size": 64, "num_heads": 4,
                                      "num_kv_heads": 2, "intermediate_size": 128, "vocab_size": 100}})
    assert inline.model.total_params > 0


def test_unknown_preset_suggests_a_close_name():
    with pytest.raises(InputError) as err:
        load_scenario({"model": "qwen2.5-7"})
    assert err.value.field == "model"
    assert "did you mean 'qwen2.5-7b'" in err.value.message


def test_every_preset_is_a_valid_architecture():
    for name in model_presets():
        assert ModelArch(**resolve_model(name, "model")).total_params > 0
