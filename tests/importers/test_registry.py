import json
from pathlib import Path

import pytest

from twin.cli import main
from twin.importers import IMPORTERS, import_files
from twin.importers.base import HUB_PRESETS


def test_registry_has_the_seven_importers():
    assert sorted(IMPORTERS) == ["areal", "nemo_rl", "openrlhf", "prime_rl", "slime", "trl", "verl"]
    for imp in IMPORTERS.values():
        assert imp.version and imp.reads and callable(imp.run)


@pytest.mark.parametrize("hub, preset", [("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
                                          ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
                                          ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
                                          ("qwen/qwen3-30b-a3b", "qwen3-30b-a3b")])
def test_hub_ids_resolve_to_presets(hub, preset, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model_name_or_path: {hub}\n")
    assert import_files("trl", [cfg]).scenario["model"] == preset


@pytest.mark.parametrize("hub", ["Qwen/Qwen3-8B", "Qwen/Qwen3.5-35B-A3B", "OpenRLHF/Llama-3-8b-sft-mixture"])
def test_hub_ids_the_catalog_resolves_pass_through(hub, tmp_path):
    """A hub id without a preset but known to the model catalog (or named after a base it holds)
    reaches the scenario as it is; resolving it there notes what was assumed."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model_name_or_path: {hub}\nmax_completion_length: 512\n")
    result = import_files("trl", [cfg])
    assert result.scenario["model"] == hub
    from twin.config.load import load_scenario

    assert load_scenario(result.scenario).model.name == hub.rsplit("/", 1)[-1]


def test_every_hub_preset_exists():
    from twin.config.registry import model_presets

    assert set(HUB_PRESETS.values()) <= set(model_presets())


def test_local_model_folder_is_used_as_its_config_json(tmp_path, capsys):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "hidden_size": 1536, "intermediate_size": 8960,
        "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2, "vocab_size": 151936,
        "max_position_embeddings": 32768, "torch_dtype": "bfloat16", "tie_word_embeddings": True}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model_name_or_path: {folder}\nmax_completion_length: 512\n")
    result = import_files("trl", [cfg])
    assert result.scenario["model"] == str((folder / "config.json").resolve())
    assert main(["import", "trl", str(cfg)]) == 0


def test_unknown_framework_and_missing_file(tmp_path, capsys):
    assert main(["import", "ray", "x.yaml"]) == 2  # argparse's refusal, as one line (issue 33)
    assert capsys.readouterr().err.startswith("twin: error:")
    assert main(["import", "verl", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"twin: error: {tmp_path / 'nope.yaml'}: file not found")


def test_out_writes_the_scenario_with_a_header(fx, tmp_path, capsys):
    out = tmp_path / "s.yaml"
    assert main(["import", "verl", str(fx / "verl/run_array.sh"), "--set", "run.steps=2", "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    text = out.read_text()
    assert text.startswith("# Imported by `twin import verl` from: ")
    assert "# Framework assumed: verl 0.8" in text and "steps: 2" in text
    assert main(["check", str(out)]) == 0


def test_out_to_a_folder_is_refused_before_reading(fx, tmp_path, capsys):
    assert main(["import", "verl", str(fx / "verl/run_array.sh"), "--out", str(tmp_path)]) == 2
    assert "--out" in capsys.readouterr().err


def test_set_error_blames_the_override(fx, capsys):
    assert main(["import", "verl", str(fx / "verl/run_array.sh"), "--set", "algorithm.ppo_epochs=0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("twin: error: --set algorithm.ppo_epochs=0: algorithm.ppo_epochs")


def test_run_from_imports_and_runs(fx, capsys):
    code = main(["run", "--from", "trl", str(fx / "trl/grpo_hf.json"), "--set", "run.steps=2",
                 "--set", "algorithm.prompts_per_step=4", "--no-verdict", "--json", "-"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["step_time_s"] > 0


def test_run_from_needs_files(capsys):
    assert main(["run", "--from", "verl"]) == 2
    assert "--from" in capsys.readouterr().err


def test_importers_keep_torch_out():
    import subprocess
    import sys

    code = ("import sys, twin.importers as f; f.IMPORTERS['verl']; import twin.cli; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert out == "False"
