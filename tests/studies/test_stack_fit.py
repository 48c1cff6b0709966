"""`twin fit --profile`: the user's stack fitted on the user's run, each property on its phase.

The test bed is a log the twin writes itself (tools/make_twin_log.py) with known properties: the
fit must recover them, and predict the windows it held apart. Then the real TRL log, which times
only whole steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from twin import runner
from twin.cli import main
from twin.config.frameworks import FrameworkProfile

HERE = Path(__file__).parents[1] / "importers" / "logs"
TINY = HERE / "fixtures" / "tiny.yaml"
REAL = HERE / "fixtures" / "trl-real"
TRUE = {"cluster.compute_scale": 0.6, "placement.rollout.step_overhead_s": 0.004,
        "weight_sync.staging_bytes_per_s": 5e9}


@pytest.fixture(scope="module")
def twin_log(tmp_path_factory) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
    from make_twin_log import make

    path = tmp_path_factory.mktemp("log") / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make(str(TINY), TRUE)))
    return path


def _fit(capsys, *argv) -> tuple[int, str, str]:
    code = main(["fit", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_twin_made_log_gives_back_the_properties_that_made_it(twin_log, tmp_path, capsys):
    prof = tmp_path / "mine.yaml"
    code, out, _ = _fit(capsys, twin_log, "--scenario", TINY, "--profile", prof)
    assert code == 0
    doc = yaml.safe_load(prof.read_text())
    FrameworkProfile.model_validate(doc)
    got = {k: v["value"] for k, v in doc["settings"].items()}
    assert set(got) == set(TRUE)
    # the lengths are themselves fitted from the logged summaries (~2% noise): the rates follow them
    assert got["cluster.compute_scale"] == pytest.approx(0.6, rel=0.08)
    assert got["placement.rollout.step_overhead_s"] == pytest.approx(0.004, rel=0.10)
    assert got["weight_sync.staging_bytes_per_s"] == pytest.approx(5e9, rel=0.05)
    for setting in doc["settings"].values():  # every value says what it was fitted on
        assert "run.jsonl" in setting["source"] and "steps 10-12" in setting["source"]
    # the three held-apart windows, predicted with their own lengths
    held = [line for line in out.splitlines() if line.strip().startswith("steps ")]
    assert len(held) == 3
    mean_error = float(out.split("mean |error| ")[1].split("%")[0])
    assert mean_error < 10


def test_the_fitted_profile_runs_as_the_scenarios_framework(twin_log, tmp_path, capsys):
    prof = tmp_path / "mine.yaml"
    assert _fit(capsys, twin_log, "--scenario", TINY, "--profile", prof)[0] == 0
    scenario = yaml.safe_load(TINY.read_text())
    scenario["framework"] = str(prof)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    report = runner.run(path).to_dict()
    assert report["scenario"]["cluster"]["compute_scale"] == yaml.safe_load(prof.read_text())["settings"][
        "cluster.compute_scale"]["value"]


def test_trls_step_time_alone_fits_the_trainer_share_and_says_so(tmp_path, capsys):
    prof = tmp_path / "trl.yaml"
    code, out, _ = _fit(capsys, REAL / "trainer_state.json", "--scenario", REAL / "scenario.yaml", "--profile", prof)
    assert code == 0
    assert "only the step time is logged" in out
    doc = yaml.safe_load(prof.read_text())
    assert set(doc["settings"]) >= {"cluster.compute_scale"}
    assert "step_time_s" in doc["settings"]["cluster.compute_scale"]["source"]
    assert "placement.rollout.step_overhead_s" not in doc["settings"]  # generation is not logged by TRL
    assert "held-apart windows" in out and "mean |error|" in out


def test_a_profile_needs_a_scenario_and_a_timing(tmp_path, capsys):
    code, _, err = _fit(capsys, REAL / "trainer_state.json", "--profile", tmp_path / "p.yaml")
    assert code == 2 and err.strip().startswith("twin: error:") and "--profile" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "p.yaml").exists()
    log = tmp_path / "lengths-only.jsonl"
    log.write_text("".join(json.dumps({"step": s, "response_length/mean": 500.0 + s, "response_length/max": 2000.0})
                           + "\n" for s in range(1, 5)))
    code, _, err = _fit(capsys, log, "--scenario", TINY, "--profile", tmp_path / "p.yaml")
    assert code == 2 and "no timing" in err and not (tmp_path / "p.yaml").exists()
