"""twin fit --learning: N_noise and S_min recovered from synthetic reward logs drawn from a known
noise-scale law (tests/importers/logs/synthetic_learning.py), and bad input refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from twin.cli import main
from twin.config.learning import Learning
from twin.errors import InputError
from twin.importers.logs.learning import fit_runs, read_reward_run

sys.path.insert(0, str(Path(__file__).parent))
from synthetic_learning import (
    SHAPES,
    rewards,
    steps_for,
    write_trl,
    write_trl_console,
    write_verl,
    write_wandb,
)

WRITERS = {"verl": write_verl, "trl": write_trl, "wandb": write_wandb, "trl-console": write_trl_console}
NAMES = {"verl": "run{n}.log", "trl": "run{n}/trainer_state.json", "wandb": "run{n}.csv",
         "trl-console": "run{n}-console.log"}


def _two_runs(folder: Path, shape: str, sigma: float, noise: float, fmt: str = "verl", sizes=(512, 8192)):
    runs = []
    for seed, n in enumerate(sizes):
        path = folder / f"{shape}-{sigma}-{noise}-" / NAMES[fmt].format(n=n)
        path.parent.mkdir(parents=True, exist_ok=True)
        WRITERS[fmt](path, rewards([n] * steps_for(n, noise), noise, shape, sigma=sigma, seed=seed))
        runs.append(f"{path}:{n}")
    return runs


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("sigma", [0.0, 0.01, 0.02])
@pytest.mark.parametrize("noise", [1024, 4096])
def test_two_runs_recover_the_noise_scale_within_10_percent(tmp_path, shape, sigma, noise):
    runs = [read_reward_run(a) for a in _two_runs(tmp_path, shape, sigma, noise)]
    fit = fit_runs(runs)
    assert fit["noise_scale"] == pytest.approx(noise, rel=0.10)
    # S_min of each level is the infinite-batch steps the law's curve needs to reach it
    T, top = 100.0, fit["levels"][-1]
    inverse = {"exponential": lambda r: -T * __import__("math").log(1 - (r - 0.1) / 0.7),
               "hyperbolic": lambda r: T * (r - 0.1) / (0.8 - r),
               "sigmoid": lambda r: T - T / 4 * __import__("math").log(0.7 / (r - 0.1) - 1)}[shape]
    assert top["s_min"] == pytest.approx(inverse(top["reward"]), rel=0.10)


@pytest.mark.parametrize("fmt", ["trl", "wandb", "trl-console"])
def test_trl_and_wandb_logs_fit_alike(tmp_path, fmt):
    runs = [read_reward_run(a) for a in _two_runs(tmp_path, "exponential", 0.01, 2048, fmt)]
    assert fit_runs(runs)["noise_scale"] == pytest.approx(2048, rel=0.10)


def test_a_log_that_says_its_batch_needs_no_colon(tmp_path):
    noise = 2048
    a = write_verl(tmp_path / "a.log", rewards([512] * steps_for(512, noise), noise, "hyperbolic"), [512] * steps_for(512, noise))
    b = _two_runs(tmp_path, "hyperbolic", 0.0, noise, sizes=(8192,))[0]
    runs = [read_reward_run(str(a)), read_reward_run(b)]
    assert runs[0].rollouts_from.startswith("the log") and fit_runs(runs)["noise_scale"] == pytest.approx(noise, rel=0.1)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_one_run_with_a_batch_change_is_enough_without_noise(tmp_path, shape):
    # A single curve has nothing to align with: its slopes across the change carry N_noise.
    # Measured weaker than two runs (docs/time-to-target.md): within 10% without noise.
    noise = 2048
    schedule = [512] * (steps_for(512, noise) // 3) + [8192] * steps_for(8192, noise)
    log = write_verl(tmp_path / "switch.log", rewards(schedule, noise, shape), schedule)
    fit = fit_runs([read_reward_run(str(log))])
    assert fit["noise_scale"] == pytest.approx(noise, rel=0.10) and "changed at step" in fit["method"]


def test_the_cli_writes_a_learning_section_a_scenario_reads(tmp_path, capsys):
    runs = _two_runs(tmp_path, "exponential", 0.02, 4096)
    out, js = tmp_path / "learning.yaml", tmp_path / "fit.json"
    assert main(["fit", *runs, "--out", str(out), "--json", str(js)]) == 0
    assert "N_noise (learning.noise_scale)" in capsys.readouterr().out
    section = yaml.safe_load(out.read_text())["learning"]
    learning = Learning.model_validate(section)
    assert learning.noise_scale == json.loads(js.read_text())["learning"]["noise_scale"]
    assert learning.noise_scale == pytest.approx(4096, rel=0.1) and not learning.assumed
    s_min, _ = learning.at_target((learning.levels[0].reward + learning.levels[1].reward) / 2)
    assert learning.levels[0].s_min < s_min < learning.levels[1].s_min


def test_one_batch_size_cannot_tell_the_noise_scale(tmp_path):
    runs = [read_reward_run(a) for a in _two_runs(tmp_path, "exponential", 0.0, 2048, sizes=(512,))]
    with pytest.raises(InputError, match="one batch size"):
        fit_runs(runs * 2)


def test_bad_input_is_one_line(tmp_path, capsys):
    log = write_verl(tmp_path / "a.log", rewards([512] * 50, 2048, "exponential"))
    assert main(["fit", "--learning", str(log), str(log)]) == 2  # no N anywhere
    err = capsys.readouterr().err
    assert err.startswith("twin: error:") and "a.log" in err and "rollouts" in err and "Traceback" not in err
    assert main(["fit", str(tmp_path / "missing.log") + ":512", str(log) + ":8192"]) == 2
    assert "not found" in capsys.readouterr().err
