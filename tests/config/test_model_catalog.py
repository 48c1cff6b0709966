"""The model catalog (twin/config/model_catalog.py, twin/config/catalog/*.yaml): every entry an
architecture, hub ids resolved offline with a note of what was assumed, and parameter counts that
agree with each model card's published figures."""

from pathlib import Path

import pytest

from twin.config.load import load_scenario
from twin.config.model import ModelArch
from twin.config.model_catalog import catalog_markdown, entries, lookup, named_after, strip_variants
from twin.config.registry import model_presets, resolve_model
from twin.errors import InputError
from twin.importers.base import HUB_PRESETS

# Published parameter counts, in billions: (hub id, total, active or None, how the card counts
# active parameters, source). Cards count a token's active parameters three ways:
#   all    every weight a token passes through, the embedding row and the output head included
#          (Qwen, DeepSeek, Kimi, Mistral, NVIDIA);
#   no-emb without the input embedding (OpenAI's gpt-oss card);
#   body   without the embedding and the output head (GLM, MiniMax).
# Totals count the language model (Gemma 3 and Qwen3.5 cards add a vision tower: the text-only
# figure where the card gives one); "+mtp" rows count the multi-token-prediction layers too, as
# the card does. Where a card gives the active count only as the name's nominal "A3B", it is not
# tested (None).
CARDS = [
    ("Qwen/Qwen3-0.6B", 0.6, None, "all", "Qwen/Qwen3-0.6B model card: Number of Parameters 0.6B"),
    ("Qwen/Qwen3-1.7B", 1.7, None, "all", "Qwen/Qwen3-1.7B model card: 1.7B"),
    ("Qwen/Qwen3-4B", 4.0, None, "all", "Qwen/Qwen3-4B model card: 4.0B"),
    ("Qwen/Qwen3-8B", 8.2, None, "all", "Qwen/Qwen3-8B model card: 8.2B (6.95B non-embedding)"),
    ("Qwen/Qwen3-14B", 14.8, None, "all", "Qwen/Qwen3-14B model card: 14.8B (13.2B non-embedding)"),
    ("Qwen/Qwen3-32B", 32.8, None, "all", "Qwen/Qwen3-32B model card: 32.8B"),
    ("Qwen/Qwen3-30B-A3B", 30.5, 3.3, "all", "Qwen/Qwen3-30B-A3B model card: 30.5B total, 3.3B activated"),
    ("Qwen/Qwen3-235B-A22B", 235.0, 22.0, "all", "Qwen/Qwen3-235B-A22B model card: 235B total, 22B activated"),
    ("Qwen/Qwen3-4B-Instruct-2507", 4.0, None, "all", "Qwen/Qwen3-4B-Instruct-2507 model card: 4.0B"),
    ("Qwen/Qwen3-30B-A3B-Thinking-2507", 30.5, 3.3, "all", "Qwen3-30B-A3B-Thinking-2507 model card: 30.5B, 3.3B activated"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235.0, 22.0, "all", "Qwen3-235B-A22B-Instruct-2507 model card: 235B, 22B activated"),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 30.5, 3.3, "all", "Qwen3-Coder-30B-A3B-Instruct model card: 30.5B, 3.3B activated"),
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 480.0, 35.0, "all", "Qwen3-Coder-480B-A35B-Instruct model card: 480B, 35B activated"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 80.0, None, "all", "Qwen3-Next-80B-A3B-Instruct model card: 80B in total (3B activated, nominal)"),
    ("Qwen/Qwen3-Coder-Next", 79.674391296, None, "all", "Qwen/Qwen3-Coder-Next on the hub: 79,674,391,296 parameters (safetensors)"),
    ("Qwen/Qwen3.5-9B", 9.0, None, "all", "Qwen/Qwen3.5-9B model card: 9B"),
    ("Qwen/Qwen3.5-27B", 27.0, None, "all", "Qwen/Qwen3.5-27B model card: 27B"),
    ("Qwen/Qwen3.5-35B-A3B", 35.0, None, "all", "Qwen/Qwen3.5-35B-A3B model card: 35B total (3B activated, nominal)"),
    ("Qwen/Qwen3.5-122B-A10B", 122.0, None, "all", "Qwen/Qwen3.5-122B-A10B model card: 122B total (10B activated, nominal)"),
    ("Qwen/Qwen3.5-397B-A17B", 397.0, None, "all", "Qwen3.5 release (16 Feb 2026): 397B total (17B active, nominal)"),
    ("Qwen/Qwen2.5-0.5B", 0.49, None, "all", "Qwen/Qwen2.5-0.5B model card: 0.49B"),
    ("Qwen/Qwen2.5-1.5B-Instruct", 1.54, None, "all", "Qwen/Qwen2.5-1.5B-Instruct model card: 1.54B"),
    ("Qwen/Qwen2.5-3B", 3.09, None, "all", "Qwen/Qwen2.5-3B model card: 3.09B"),
    ("Qwen/Qwen2.5-7B-Instruct", 7.61, None, "all", "Qwen/Qwen2.5-7B-Instruct model card: 7.61B (6.53B non-embedding)"),
    ("Qwen/Qwen2.5-14B", 14.7, None, "all", "Qwen/Qwen2.5-14B model card: 14.7B"),
    ("Qwen/Qwen2.5-32B", 32.5, None, "all", "Qwen/Qwen2.5-32B model card: 32.5B (31.0B non-embedding)"),
    ("Qwen/Qwen2.5-72B-Instruct", 72.7, None, "all", "Qwen/Qwen2.5-72B-Instruct model card: 72.7B"),
    ("Qwen/Qwen2.5-Coder-1.5B", 1.54, None, "all", "Qwen/Qwen2.5-Coder-1.5B model card: 1.54B"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", 7.61, None, "all", "Qwen/Qwen2.5-Coder-7B-Instruct model card: 7.61B"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", 32.5, None, "all", "Qwen/Qwen2.5-Coder-32B-Instruct model card: 32.5B"),
    ("Qwen/QwQ-32B", 32.5, None, "all", "Qwen/QwQ-32B model card: 32.5B"),
    ("meta-llama/Meta-Llama-3-8B", 8.0, None, "all", "meta-llama/Meta-Llama-3-8B model card: 8B"),
    ("meta-llama/Llama-3.1-8B-Instruct", 8.0, None, "all", "meta-llama/Llama-3.1-8B model card: 8B"),
    ("meta-llama/Llama-3.1-70B", 70.0, None, "all", "meta-llama/Llama-3.1-70B model card: 70B"),
    ("meta-llama/Llama-3.1-405B", 405.0, None, "all", "meta-llama/Llama-3.1-405B model card: 405B"),
    ("meta-llama/Llama-3.2-1B", 1.23, None, "all", "meta-llama/Llama-3.2-1B model card: 1.23B"),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21, None, "all", "meta-llama/Llama-3.2-3B model card: 3.21B"),
    ("meta-llama/Llama-3.3-70B-Instruct", 70.0, None, "all", "meta-llama/Llama-3.3-70B-Instruct model card: 70B"),
    ("deepseek-ai/DeepSeek-V3", 671.0, 37.0, "all", "deepseek-ai/DeepSeek-V3 model card: 671B total, 37B activated"),
    ("deepseek-ai/DeepSeek-V3+mtp", 685.0, None, "all", "DeepSeek-V3 model card: 685B on the hub, 671B main model + 14B MTP module"),
    ("deepseek-ai/DeepSeek-R1", 671.0, 37.0, "all", "deepseek-ai/DeepSeek-R1 model card: 671B total, 37B activated"),
    ("deepseek-ai/DeepSeek-V3.2-Exp+mtp", 685.0, None, "all", "deepseek-ai/DeepSeek-V3.2-Exp on the hub: 685B (MTP included)"),
    ("moonshotai/Kimi-K2-Instruct", 1040.0, 32.6, "all", "Kimi K2 technical report (arXiv 2507.20534), architecture table: 1.04T total, 32.6B activated"),
    ("zai-org/GLM-4.5", 355.0, 32.0, "body", "zai-org/GLM-4.5 model card: 355B total, 32B active"),
    ("zai-org/GLM-4.5-Air", 106.0, 12.0, "body", "zai-org/GLM-4.5-Air model card: 106B total, 12B active"),
    ("zai-org/GLM-5", 744.0, 40.0, "body", "zai-org/GLM-5 model card: 744B total, 40B active"),
    ("MiniMaxAI/MiniMax-M2", 230.0, 10.0, "body", "MiniMaxAI/MiniMax-M2 model card: 230B total, 10B active"),
    ("MiniMaxAI/MiniMax-M1-80k", 456.0, 45.9, "body", "MiniMax-M1 model card: 456B total, 45.9B activated per token"),
    ("openai/gpt-oss-20b", 20.91, 3.61, "no-emb", "gpt-oss model card (OpenAI, Aug 2025): 20.91B total, 3.61B active"),
    ("openai/gpt-oss-120b", 116.83, 5.13, "no-emb", "gpt-oss model card (OpenAI, Aug 2025): 116.83B total, 5.13B active"),
    ("mistralai/Mistral-7B-v0.1", 7.3, None, "all", "Mistral 7B announcement (Sep 2023): 7.3B"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, 12.9, "all", "Mixtral of experts (Mistral AI, Dec 2023): 46.7B total, 12.9B per token"),
    ("mistralai/Mixtral-8x22B-v0.1", 141.0, 39.0, "all", "Mixtral 8x22B announcement (Apr 2024): 39B active of 141B"),
    ("google/gemma-2-2b", 2.6146368, None, "all", "Gemma 2 report (arXiv 2408.00118) Table 2: 590,118,912 embedding + 2,024,517,888 other"),
    ("google/gemma-2-9b-it", 9.242164736, None, "all", "Gemma 2 report Table 2: 917,962,752 + 8,324,201,984"),
    ("google/gemma-2-27b", 27.227718144, None, "all", "Gemma 2 report Table 2: 1,180,237,824 + 26,047,480,320"),
    ("google/gemma-3-1b-it", 1.0, None, "all", "Gemma 3 report (arXiv 2503.19786) Table 1: 302M embedding + 698M other"),
    ("google/gemma-3-4b-it", 3.884, None, "all", "Gemma 3 report Table 1: 675M + 3,209M (the 417M vision encoder apart)"),
    ("google/gemma-3-12b-it", 11.771, None, "all", "Gemma 3 report Table 1: 1,012M + 10,759M"),
    ("google/gemma-3-27b-it", 27.016, None, "all", "Gemma 3 report Table 1: 1,416M + 25,600M"),
    ("nvidia/Nemotron-H-8B-Base-8K", 8.0, None, "all", "nvidia/Nemotron-H-8B-Base-8K model card: 8B"),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", 9.0, None, "all", "nvidia/NVIDIA-Nemotron-Nano-9B-v2 model card: 9B"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31.6, 3.6, "all",
     "NVIDIA-Nemotron-3-Nano-30B-A3B model card: 31.6B total, 3.2B active (3.6B with embeddings)"),
    ("moonshotai/Moonlight-16B-A3B", 16.0, None, "all",
     "moonshotai/Moonlight-16B-A3B model card: 16B total (3B activated, nominal)"),
    # Qwen2.5-VL: the language model alone (the twin prices it; the vision tower is named as not
    # priced), against the card of the Qwen2.5 model whose shape it has.
    ("Qwen/Qwen2.5-VL-3B-Instruct", 3.09, None, "all", "its language model is Qwen2.5-3B's shape: Qwen2.5-3B card 3.09B"),
    ("Qwen/Qwen2.5-VL-7B-Instruct", 7.61, None, "all", "its language model is Qwen2.5-7B's: Qwen2.5-7B-Instruct card 7.61B"),
    ("Qwen/Qwen2.5-VL-32B-Instruct", 32.5, None, "all", "its language model is Qwen2.5-32B's: Qwen2.5-32B card 32.5B"),
    ("Qwen/Qwen2.5-VL-72B-Instruct", 72.7, None, "all", "its language model is Qwen2.5-72B's: Qwen2.5-72B-Instruct card 72.7B"),
]

VISION_LANGUAGE = ["Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-32B-Instruct",
                   "Qwen/Qwen2.5-VL-72B-Instruct"]


def _arch(hub_id: str) -> ModelArch:
    return ModelArch(**resolve_model(hub_id, "model"))


def _active(arch: ModelArch, how: str) -> float:
    if how == "no-emb":
        return arch.active_params - arch.vocab_size * arch.hidden_size
    if how == "body":
        return arch.active_params - arch.embedding_params
    return arch.active_params


def test_the_table_spans_at_least_40_hub_ids_across_the_families():
    ids = {row[0].removesuffix("+mtp") for row in CARDS}
    assert len(ids) >= 40
    families = {next(e.family for e in entries() if i in e.hub_ids) for i in ids}
    assert len(families) == len({e.family for e in entries()})  # every family has a row


@pytest.mark.parametrize("hub, total, active, how, source", CARDS, ids=[r[0] for r in CARDS])
def test_parameters_agree_with_the_model_card(hub, total, active, how, source):
    arch = _arch(hub.removesuffix("+mtp"))
    counted = arch.total_params + (arch.mtp_params if hub.endswith("+mtp") else 0)
    assert counted / 1e9 == pytest.approx(total, rel=0.02), source
    if active is not None:
        assert _active(arch, how) / 1e9 == pytest.approx(active, rel=0.02), source


def test_every_entry_is_an_architecture_with_a_source():
    names, ids = set(), set()
    for e in entries():
        arch = e.arch
        assert arch.total_params > 0 and e.checked and e.url.startswith("https://")
        assert e.name not in names and not ids & set(h.lower() for h in e.hub_ids)
        names.add(e.name)
        ids |= {h.lower() for h in e.hub_ids}
        assert e.hub_id in arch.source and e.checked in arch.source


@pytest.mark.parametrize("hub, preset", sorted(HUB_PRESETS.items()))
def test_presets_and_the_catalog_agree(hub, preset):
    """The presets keep resolving as they did (golden reports pin them); the catalog entry of the
    same hub id prices the same model."""
    from_preset = ModelArch(**resolve_model(preset, "model"))
    from_catalog = _arch(hub)
    assert from_catalog.total_params == from_preset.total_params
    assert from_catalog.active_params == from_preset.active_params
    assert from_catalog.kv_bytes_per_token == from_preset.kv_bytes_per_token
    assert from_catalog.attention_flops_per_token_pair == from_preset.attention_flops_per_token_pair


def test_a_preset_name_still_resolves_to_the_preset():
    for name, fields in model_presets().items():
        assert resolve_model(name, "model") == {"name": name, **fields}


@pytest.mark.parametrize("ref, hub_id", [
    ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
    ("Qwen/Qwen3-8B-Base", "Qwen/Qwen3-8B"),
    ("qwen3-8b", "Qwen/Qwen3-8B"),
    ("Qwen3-8B", "Qwen/Qwen3-8B"),
    ("Qwen/Qwen2.5-Math-7B-Instruct", "Qwen/Qwen2.5-Math-7B"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-Coder-7B"),
    ("Qwen/Qwen3-30B-A3B-Thinking-2507", "Qwen/Qwen3-30B-A3B-Instruct-2507"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
    ("deepseek-ai/DeepSeek-V3.2-Exp", "deepseek-ai/DeepSeek-V3.2"),
])
def test_exact_ids_and_their_listed_variants_resolve_without_a_note(ref, hub_id):
    found = lookup(ref)
    assert found.entry.hub_id == hub_id and found.note(ref) is None


@pytest.mark.parametrize("ref, hub_id, how", [
    ("Qwen/Qwen3-8B-FP8", "Qwen/Qwen3-8B", "variant"),
    ("Qwen/Qwen2.5-72B-Instruct-AWQ", "Qwen/Qwen2.5-72B", "variant"),
    ("google/gemma-3-27b-it-qat", "google/gemma-3-27b-it", "fine-tune"),
    ("someone/Qwen3-8B", "Qwen/Qwen3-8B", "name"),
    ("OpenRLHF/Llama-3-8b-sft-mixture", "meta-llama/Meta-Llama-3-8B", "fine-tune"),
    ("agentica-org/DeepScaleR-1.5B-Preview", None, None),
    ("my-lab/qwen2.5-7b-grpo-step-200", "Qwen/Qwen2.5-7B", "fine-tune"),
    ("my-lab/Qwen2.5-Math-7B-DAPO", "Qwen/Qwen2.5-Math-7B", "fine-tune"),
    ("my-lab/qwen2.5-72b-sft", "Qwen/Qwen2.5-72B", "variant"),
])
def test_variants_and_fine_tunes_resolve_with_a_note(ref, hub_id, how):
    found = lookup(ref)
    if hub_id is None:  # named after nothing the catalog holds
        assert found is None
        return
    assert (found.entry.hub_id, found.how) == (hub_id, how)
    note = found.note(ref)
    assert ref in note and hub_id in note and "\n" not in note


def test_a_name_is_found_only_at_word_boundaries():
    assert named_after("qwen2.5-72b-instruct")[1].hub_id == "Qwen/Qwen2.5-72B"  # not 2.5-7b
    assert named_after("xqwen3-8b") is None
    assert strip_variants("Qwen3-30B-A3B-Instruct-2507-FP8") == "qwen3-30b-a3b"


def test_a_fine_tune_in_a_scenario_warns_what_was_assumed(base):
    from twin.config.warnings import warnings
    from twin.config.plan import resolve

    base["model"] = "OpenRLHF/Llama-3-8b-sft-mixture"
    plan = resolve(load_scenario(base))
    assert plan.model.name == "Llama-3-8b-sft-mixture"
    assert plan.model.total_params == _arch("meta-llama/Meta-Llama-3-8B").total_params
    assert warnings(plan)[0].startswith("model: OpenRLHF/Llama-3-8b-sft-mixture: assumed the architecture of "
                                        "meta-llama/Meta-Llama-3-8B")
    exact = dict(base, model="Qwen/Qwen3-8B")
    assert not any(w.startswith("model:") for w in warnings(resolve(load_scenario(exact))))


@pytest.mark.parametrize("hub", VISION_LANGUAGE)
def test_a_vision_language_model_is_priced_as_its_language_model_and_says_the_tower_is_not(hub):
    vl = _arch(hub)
    text_only = _arch(hub.replace("-VL", "").removesuffix("-Instruct"))  # the Qwen2.5 model of its shape
    assert vl.total_params == text_only.total_params and vl.kv_bytes_per_token == text_only.kv_bytes_per_token
    assert "vision tower (32 layers of width 1280)" in vl.unpriced and "under-predicted" in vl.unpriced
    assert text_only.unpriced is None and "unpriced" not in vl.model_dump()  # reports keep their keys


def test_twin_check_and_import_warn_of_an_unpriced_vision_tower(base, tmp_path, capsys):
    from twin.cli.entry import main
    from twin.config.plan import resolve
    from twin.config.warnings import warnings

    base["model"] = "Qwen/Qwen2.5-VL-7B-Instruct"
    said = [w for w in warnings(resolve(load_scenario(base))) if w.startswith("model:")]
    assert said == [f"model: {_arch('Qwen/Qwen2.5-VL-7B-Instruct').unpriced}."]
    script = tmp_path / "run_vl.sh"
    script.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\\n"
                      "    actor_rollout_ref.model.path=Qwen/Qwen2.5-VL-3B-Instruct \\\n"
                      "    trainer.n_gpus_per_node=8 trainer.nnodes=1\n")
    assert main(["import", "verl", str(script)]) == 0
    err = capsys.readouterr().err
    assert "twin: warning: model: Qwen2.5-VL-3B-Instruct is multimodal and only its language model is priced" in err


def test_a_local_folder_that_is_not_there_is_named_by_its_last_component(tmp_path):
    missing = tmp_path / "checkpoints" / "deepseek-llm-7b-chat"
    fields = resolve_model(str(missing), "model")
    assert fields["name"] == "deepseek-llm-7b-chat"
    assert ModelArch(**fields).total_params == _arch("deepseek-ai/deepseek-llm-7b-base").total_params
    assert str(missing) in fields["assumed"] and "deepseek-ai/deepseek-llm-7b-base" in fields["assumed"]
    via_json = resolve_model(str(tmp_path / "Qwen2.5-Math-7B" / "config.json"), "model")
    assert via_json["name"] == "Qwen2.5-Math-7B" and "Qwen/Qwen2.5-Math-7B" in via_json["assumed"]


def test_an_existing_model_folder_is_read_as_its_config_json(tmp_path):
    import json

    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(lookup("Qwen/Qwen3-4B").entry.config))
    arch = ModelArch(**resolve_model(str(folder), "model"))
    assert arch.total_params == _arch("Qwen/Qwen3-4B").total_params and arch.assumed is None


def test_an_unknown_hub_id_offline_is_one_line_saying_what_to_pass():
    with pytest.raises(InputError) as err:
        load_scenario({"model": "someorg/Mystery-9B"})
    text = err.value.message
    assert "\n" not in text and "someorg/Mystery-9B" in text and "HF_HUB_OFFLINE" in text
    assert "--set model=path/to/config.json" in text


def test_the_models_doc_lists_the_catalog_as_it_is():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    start = doc.index("<!-- catalog:begin -->\n") + len("<!-- catalog:begin -->\n")
    end = doc.index("<!-- catalog:end -->")
    assert doc[start:end] == catalog_markdown(), (
        "docs/models.md is out of date: python -m twin.config.model_catalog --write-doc")
