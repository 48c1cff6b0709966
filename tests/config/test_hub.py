"""A hub id's config.json from the Hugging Face cache or a download (twin/config/hub.py): the
cache read without any package, the download mocked (tests never touch the network), and
HF_HUB_OFFLINE honoured."""

import json
import sys

import pytest

from twin.config import hub
from twin.config.model import ModelArch
from twin.config.model_catalog import lookup
from twin.config.registry import resolve_model
from twin.errors import InputError

CONFIG = {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
          "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000}


def _cache(root, repo_id, rev="abc123", config=CONFIG):
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(rev)
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return snap / "config.json"


def test_a_cached_config_is_read_without_huggingface_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    path = _cache(tmp_path, "tiny-org/Tiny-Model")
    fields = resolve_model("tiny-org/Tiny-Model", "model")
    assert fields["name"] == "Tiny-Model" and str(path) in fields["assumed"]
    assert ModelArch(**fields).num_layers == 4


def test_hf_home_locates_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    path = _cache(tmp_path / "hub", "tiny-org/Tiny-Model")
    assert hub.cached_config("tiny-org/Tiny-Model") == path


def test_the_catalog_comes_before_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    _cache(tmp_path, "Qwen/Qwen3-8B")  # a different config under a catalog id: the catalog wins
    assert ModelArch(**resolve_model("Qwen/Qwen3-8B", "model")).total_params == lookup("Qwen/Qwen3-8B").entry.arch.total_params


def test_a_download_is_read_when_online(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    calls = []

    def fake_download(repo_id, filename):
        calls.append((repo_id, filename))
        return str(_cache(tmp_path / "fetched", repo_id))

    pytest.importorskip("huggingface_hub")
    monkeypatch.setattr("huggingface_hub.hf_hub_download", fake_download)
    fields = resolve_model("tiny-org/Tiny-Model", "model")
    assert calls == [("tiny-org/Tiny-Model", "config.json")]
    assert ModelArch(**fields).hidden_size == 256


def test_hf_hub_offline_stops_the_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("huggingface_hub")
    monkeypatch.setattr("huggingface_hub.hf_hub_download",
                        lambda **_: pytest.fail("downloaded while HF_HUB_OFFLINE was set"))
    assert hub.download_config("tiny-org/Tiny-Model") == (None, "HF_HUB_OFFLINE is set")
    with pytest.raises(InputError, match="HF_HUB_OFFLINE is set"):
        resolve_model("tiny-org/Tiny-Model", "model")


def test_without_the_package_an_unknown_id_says_what_to_pass(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(InputError) as err:
        resolve_model("tiny-org/Tiny-Model", "model")
    assert 'pip install ".[hub]"' in err.value.message and "\n" not in err.value.message


def test_a_hub_error_is_one_line_and_a_named_fine_tune_still_resolves(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    pytest.importorskip("huggingface_hub")

    def refuse(**_):
        raise OSError("401 Client Error\nrepository is gated")

    monkeypatch.setattr("huggingface_hub.hf_hub_download", refuse)
    with pytest.raises(InputError) as err:
        resolve_model("tiny-org/Tiny-Model", "model")
    assert "401 Client Error" in err.value.message and "gated" not in err.value.message
    fields = resolve_model("OpenRLHF/Llama-3-8b-sft-mixture", "model")  # the base it names, offline
    assert "meta-llama/Meta-Llama-3-8B" in fields["assumed"]


@pytest.mark.parametrize("value, off", [("1", True), ("true", True), ("0", False), ("", False), ("off", False)])
def test_offline_values(monkeypatch, value, off):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub.offline() is off


def test_hub_ids_and_local_paths_are_told_apart():
    assert hub.looks_like_hub_id("Qwen/Qwen3-8B")
    for ref in ("./Qwen3-8B", "/data/Qwen/Qwen3-8B", "~/m/x", "models/config.json", "a/b/c"):
        assert not hub.looks_like_hub_id(ref)
