"""The trust caveats: the validation record is what the twin's own golden reports give (not
typed in), and every report names the validation sources nearest to its scenario with the
twin's error there."""

from __future__ import annotations

import json

import pytest

from twin.analysis.trust import RECORD, nearest, traits
from twin.validation.record import GOLDEN, build, text


@pytest.fixture(scope="module")
def record():
    return json.loads(RECORD.read_text())


def test_the_record_is_derived_from_the_golden_reports(record):
    assert RECORD.read_text() == text(build()), (
        "twin/validation/record.json is not what the goldens give: run python -m twin.validation.record")


def test_each_error_is_the_golden_prediction_against_the_published_figure(record):
    for case in record["cases"]:
        for f in case["figures"]:
            assert f["error"] == pytest.approx(f["predicted"] / f["expected"] - 1, rel=1e-3, abs=1e-4)


def _scenario(**kw) -> dict:
    base = {"model": {"name": kw.get("model", "qwen3-30b-a3b"), "moe": {"num_experts": 128} if kw.get("moe") else None},
            "framework": kw.get("framework"), "placement": {"mode": kw.get("mode", "async")},
            "cluster": {"gpu": kw.get("gpu", "h100-sxm (datasheet)")}}
    return base


def test_a_moe_nemo_rl_async_run_is_told_about_f_moe(record):
    found = nearest(_scenario(moe=True, framework="nemo-rl-megatron"), record["cases"])
    assert found and found[0]["source"] == "F" and "MoE" in found[0]["shares"]
    f = found[0]
    assert f["text"].startswith("resembles validation F") and "the twin was" in f["text"]
    # the error quoted is the record's: the range over the matched cases' figures
    errors = [x["error"] for c in record["cases"] if c["source"] == "F" and c["case"] in f["cases"]
              for x in c["figures"] if not x["fitted"]]
    assert (f["error_min"], f["error_max"]) == (min(errors), max(errors))


@pytest.mark.parametrize("moe", [True, False])
def test_the_nearest_source_shares_moe_ness_where_one_does(record, moe):
    found = nearest(_scenario(moe=moe, model="mystery-9b", framework=None, gpu="mi300x"), record["cases"])
    assert ("MoE" if moe else "dense") in found[0]["shares"]
    assert len(found) <= 2


def test_every_golden_report_carries_its_caveats():
    for path in sorted(GOLDEN.glob("scenario-*.json")):
        data = json.loads(path.read_text())
        assert data["trust"], path.name
        assert data["trust"] == nearest(data["scenario"]), path.name
        assert traits(data["scenario"])["mode"] == data["scenario"]["placement"]["mode"]


def test_the_record_does_not_read_the_goldens_own_trust_sections(tmp_path):
    """make.py rewrites the goldens' trust sections from the record after writing it: the
    record must not change with them, or one regeneration would never settle."""
    for path in GOLDEN.glob("case-*.json"):
        data = json.loads(path.read_text())
        data["trust"] = [{"text": "anything"}]
        (tmp_path / path.name).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert build(tmp_path) == build()
