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


SMALL = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 128, "vocab_size": 100}


def _json_error(tmp_path, cfg, spec=None) -> InputError:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(InputError) as err:
        load_scenario({"model": {"hf_config": str(path), **(spec or {})}})
    return err.value


def test_config_json_missing_key_names_the_json_file_and_its_own_key(tmp_path):
    cfg = {k: v for k, v in SMALL.items() if k != "num_attention_heads"}
    err = _json_error(tmp_path, cfg)
    assert err.file == str(tmp_path / "config.json")
    assert err.field == "num_attention_heads" and "missing" in err.problem
    assert "num_heads" not in err.message.replace("num_attention_heads", "")


def test_config_json_lists_every_missing_and_bad_key_in_one_line(tmp_path):
    cfg = {k: v for k, v in SMALL.items() if k not in ("hidden_size", "vocab_size")}
    err = _json_error(tmp_path, cfg)
    assert err.field == "hidden_size, vocab_size" and "required keys missing" in err.message
    err = _json_error(tmp_path, dict(SMALL, vocab_size=None, num_hidden_layers=-1, intermediate_size="big"))
    assert err.file == str(tmp_path / "config.json") and "\n" not in err.message
    for key in ("vocab_size", "num_hidden_layers", "intermediate_size", "-1", "'big'"):
        assert key in err.message
    assert "3 problems" in err.message and "num_layers" not in err.message


def test_config_json_cross_key_checks_use_its_words(tmp_path):
    err = _json_error(tmp_path, dict(SMALL, num_key_value_heads=3))
    assert err.message.endswith("num_attention_heads must be a multiple of num_key_value_heads")
    err = _json_error(tmp_path, dict(SMALL, num_experts=8, num_experts_per_tok=16, moe_intermediate_size=32))
    assert "num_experts_per_tok cannot exceed num_experts" in err.message
    err = _json_error(tmp_path, dict(SMALL, n_routed_experts=8, moe_intermediate_size=32))
    assert err.field == "num_experts_per_tok"
    err = _json_error(tmp_path, dict(SMALL, kv_lora_rank=64, qk_rope_head_dim=16, v_head_dim=16))
    assert err.field == "qk_nope_head_dim"


def test_config_json_through_an_override_still_names_the_json(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in SMALL.items() if k != "vocab_size"}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as err:
        load_scenario("grpo-8b-disaggregated", ["model=./config.json"])
    assert err.value.file == str(tmp_path / "config.json") and err.value.field == "vocab_size"


def test_scenario_fields_beside_a_config_json_are_the_scenarios_problem(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL))
    with pytest.raises(InputError) as err:
        load_scenario({"model": {"hf_config": str(path), "dtype": "fp9"}})
    assert err.value.file is None and err.value.field == "model.dtype"
    # A key the JSON lacks may be given beside it.
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in SMALL.items() if k != "vocab_size"}))
    assert load_scenario({"model": {"hf_config": str(path), "vocab_size": 100}}).model.vocab_size == 100


def test_config_json_max_position_embeddings_and_rope_scaling():
    assert "max_position_embeddings" not in from_hf_config(SMALL)
    assert from_hf_config(dict(SMALL, max_position_embeddings=40960))["max_position_embeddings"] == 40960
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert from_hf_config(dict(SMALL, max_position_embeddings=40960, rope_scaling=yarn))[
        "max_position_embeddings"] == 131072  # Qwen3 with YaRN enabled, as vLLM derives it
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert from_hf_config(dict(SMALL, max_position_embeddings=131072, rope_scaling=llama3))[
        "max_position_embeddings"] == 131072
    linear = {"type": "linear", "factor": 2.0}
    assert from_hf_config(dict(SMALL, max_position_embeddings=4096, rope_scaling=linear))[
        "max_position_embeddings"] == 8192


def test_presets_declare_positions_only_where_known():
    presets = model_presets()
    assert presets["qwen3-4b"]["max_position_embeddings"] == 40960
    assert presets["llama-3.1-8b"]["max_position_embeddings"] == 131072
    assert presets["deepseek-v3"]["max_position_embeddings"] == 163840
    assert "max_position_embeddings" not in presets["qwen2.5-7b"]


def test_positions_stay_out_of_dumps_and_survive_revalidation():
    s = load_scenario({"model": "qwen3-4b"})
    assert s.model.max_position_embeddings == 40960
    assert "max_position_embeddings" not in s.model_dump()["model"]  # reports stay as they were
    assert ModelArch(**resolve_model(s.model, "model")).max_position_embeddings == 40960


def test_a_config_json_is_named_by_its_own_words_not_its_folder(tmp_path):
    from twin.runner import plan

    cfg = {"model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 8, "intermediate_size": 4096, "vocab_size": 1000}
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    p = plan({"model": str(folder / "config.json")})
    assert p.model.name.startswith("qwen2-") and p.model.name.endswith("b")  # model_type and size
    (folder / "config.json").write_text(json.dumps({**cfg, "_name_or_path": "Qwen/Qwen2.5-32B"}))
    assert plan({"model": str(folder / "config.json")}).model.name == "Qwen2.5-32B"
    (folder / "my-model.json").write_text(json.dumps(cfg))
    assert plan({"model": str(folder / "my-model.json")}).model.name == "my-model"


# Frontier MoE presets against their published counts (billions). The cards round to the last
# digit they give, so a preset passes within 2% of the figure plus half a unit of that digit.
# Active counts follow each publisher's convention: DeepSeek, Qwen and Moonshot count the
# embedding and output matrices (DeepSeek-V3 without them is 35.7B, 3.5% under its 37B);
# GLM-4.5's 32B matches the count without them (32.08B; with them 33.6B, 5% over).
FRONTIER = {  # name: (total, its unit, active, its unit, active counts embeddings)
    "deepseek-v3": (671, 1, 37, 1, True),  # DeepSeek-V3 card / report (MTP module excluded)
    "qwen3-235b-a22b": (235, 1, 22, 1, True),  # Qwen3-235B-A22B card
    "qwen3-30b-a3b": (30.5, 0.1, 3.3, 0.1, True),  # Qwen3-30B-A3B card
    "kimi-k2": (1040, 10, 32, 1, True),  # Kimi K2 report (arXiv 2507.20534): 1.04T; card: 32B active
    "glm-4.5": (355, 1, 32, 1, False),  # GLM-4.5 card: 355B total, 32B active
}


@pytest.mark.parametrize("name", sorted(FRONTIER))
def test_frontier_moe_presets_match_published_counts(name):
    arch = ModelArch(**resolve_model(name, "model"))
    total, total_unit, active, active_unit, with_embeddings = FRONTIER[name]
    ours_active = arch.active_params - (0 if with_embeddings else arch.embedding_params)
    assert abs(arch.total_params / 1e9 - total) <= 0.02 * total + total_unit / 2
    assert abs(ours_active / 1e9 - active) <= 0.02 * active + active_unit / 2
