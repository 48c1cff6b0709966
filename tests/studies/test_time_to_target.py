"""twin plan --objective time_to_target ranks by steps to the target × seconds per step: on a
scenario whose staleness raises throughput but costs more steps it ranks differently from
useful trajectories per hour."""

from __future__ import annotations

import json

import pytest

from twin.cli import main

# Gradient noise far above the batch (N_noise 100,000 against 512 rollouts a step) and drift of
# 3x the noise per step of lag: staleness buys throughput and costs many more steps.
NOISY = ["--set", "run.steps=3", "--set", "algorithm.prompts_per_step=32", "--set", "learning.noise_scale=100000",
         "--set", "learning.staleness_drift=3", "--top", "4", "--workers", "2"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ttt")
    out = {}
    for objective in ("useful_trajectories_per_hour", "time_to_target"):
        path = folder / f"{objective}.json"
        assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", *NOISY, "--objective", objective,
                     "--json", str(path)]) == 0
        out[objective] = json.loads(path.read_text())
    return out


def test_time_to_target_ranks_differently_from_throughput(both):
    by_rate, by_time = both["useful_trajectories_per_hour"], both["time_to_target"]
    fast, soon = by_rate["candidates"][0], by_time["candidates"][0]
    # throughput's best is stale; the time to target's best is on-policy, with fewer trajectories/h
    assert fast["staleness"] >= 1 and soon["staleness"] == 0
    assert fast["useful_trajectories_per_hour"] > soon["useful_trajectories_per_hour"]
    assert soon["time_to_target_s"] < fast["time_to_target_s"]
    assert fast["steps_to_target"] > soon["steps_to_target"]
    times = [c["time_to_target_s"] for c in by_time["candidates"]]
    assert times == sorted(times)
    for c in by_rate["candidates"] + by_time["candidates"]:  # every candidate's JSON carries it
        assert c["time_to_target_s"] == pytest.approx(c["steps_to_target"] * c["step_time_s"], rel=1e-3)


def test_target_needs_its_objective_and_lies_within_the_fitted_levels(capsys):
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", "--target", "0.5"]) == 2
    assert "--objective time_to_target" in capsys.readouterr().err
    levels = '[{reward: 0.3, s_min: 50, noise_scale: 1000}, {reward: 0.4, s_min: 90, noise_scale: 1500}]'
    assert main(["plan", "grpo-8b-disaggregated", "--gpus", "16", "--objective", "time_to_target",
                 "--target", "0.5", "--set", f"learning.levels={levels}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("twin: error:") and "learning.target" in err and "0.3..0.4" in err
    assert "Traceback" not in err


def test_scale_batch_prices_the_time_to_target_with_and_without_retuning(tmp_path, capsys):
    out = tmp_path / "scale.json"
    assert main(["scale", "grpo-8b-disaggregated", "--gpus", "16,32,64", "--scale-batch", "--set", "run.steps=3",
                 "--set", "algorithm.prompts_per_step=32", "--workers", "2", "--json", str(out)]) == 0
    points = {p["gpus"]: p for p in json.loads(out.read_text())["points"]}
    assert [points[g]["rollouts_per_step"] for g in (16, 32, 64)] == [256, 512, 1024]
    own = points[32]  # the scenario's own size and batch: its learning rate was tuned there
    assert own["time_to_target_retuned_s"] == pytest.approx(own["time_to_target_not_retuned_s"])
    for g in (16, 64):  # any other batch: holding the learning rate costs steps
        assert points[g]["time_to_target_not_retuned_s"] > points[g]["time_to_target_retuned_s"]
    assert points[64]["steps_to_target"] < own["steps_to_target"] < points[16]["steps_to_target"]
