"""twin run --sample-steps: a long run's time from a few simulated steps per segment, against
a full simulation of every step (the error the docs state)."""

from __future__ import annotations

import pytest

from twin import runner
from twin.studies.extrapolate import extrapolate_run, frozen, segments

COLOCATED = {
    "name": "drift-colocated", "model": "qwen2.5-1.5b",
    "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"}, "placement": {"mode": "colocated"},
    "algorithm": {"name": "grpo", "prompts_per_step": 32, "responses_per_prompt": 8},
    "workload": {"response_tokens": {"kind": "lognormal", "median": 1000, "sigma": 0.5, "max": 8192},
                 "schedule": {"growth": {"per_step": 0.005}}},
    "run": {"steps": 400, "seed": 0},
}


def test_segments_follow_windows_and_tenths():
    plan = runner.prepare(COLOCATED)
    assert segments(plan) == [(a, a + 39) for a in range(1, 400, 40)]
    windows = {"windows": [{"from_step": 1, "response_tokens": {"kind": "fixed", "value": 500}},
                           {"from_step": 300, "response_tokens": {"kind": "fixed", "value": 900}}]}
    plan = runner.prepare(COLOCATED, {"workload.schedule": windows})
    assert segments(plan) == [(1, 299), (300, 400)]
    data = frozen(plan, 350, 3)
    assert data["workload"]["response_tokens"]["value"] == 900 and "schedule" not in data["workload"]
    assert data["run"]["steps"] == 3


@pytest.mark.slow  # an accuracy run of a whole case (~20 s): .ci/run runs it
def test_colocated_total_within_5_percent_of_every_step_simulated():
    plan = runner.prepare(COLOCATED)
    full = runner.simulate(plan).run
    est = extrapolate_run(plan, 2)
    assert est["simulated_steps"] == 30  # 10 segments × (1 + 2) instead of 400
    assert est["total_s"] == pytest.approx(full["total_s"], rel=0.05)  # measured: -2.8%
    assert est["total_s"] > 1.5 * full["steps_times_first_s"]


def test_async_error_is_larger_and_bounded(drift_async):
    """With staleness a short simulation does not reach the pipeline's steady state of a run whose
    lengths grow: measured -16% at 4 steps per segment; the binding change is found a segment
    or more late."""
    plan = runner.prepare(drift_async)
    full = runner.simulate(plan).run
    est = extrapolate_run(plan, 4)
    assert est["total_s"] == pytest.approx(full["total_s"], rel=0.25)
    assert [(c["previous"], c["link"]) for c in est["binding_changes"]] == [("optimization", "rollout")]


def test_cli_sample_steps(capsys, tmp_path):
    import json
    from pathlib import Path

    from twin.cli import main

    tiny = Path(__file__).parents[1] / "importers" / "logs" / "fixtures" / "tiny.yaml"
    out = tmp_path / "e.json"
    assert main(["run", str(tiny), "--sample-steps", "1", "--json", str(out)]) == 0
    assert "2 steps estimated in" in capsys.readouterr().out
    est = json.loads(out.read_text())["run_estimate"]
    assert est["segments"][0]["from_step"] == 1 and est["total_s"] > 0
    assert main(["run", str(tiny), "--sample-steps", "0"]) == 2
    assert "--sample-steps" in capsys.readouterr().err
