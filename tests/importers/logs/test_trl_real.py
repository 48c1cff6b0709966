"""twin fit on a real TRL log (tests/importers/logs/fixtures/trl-real/, made by tools/make_trl_log.py on this
machine): the fitted mean length against the log's, and the twin's step time against TRL's
``step_time`` on the CPU profile calibrated here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from twin import runner
from twin.cli import main
from twin.config.load import load_scenario
from twin.importers.logs import fit_log, read_logs

REAL = Path(__file__).parent / "fixtures" / "trl-real"
STATE = REAL / "trainer_state.json"


def _log_steps() -> list[dict]:
    history = json.loads(STATE.read_text())["log_history"]
    return [e for e in history if "completions/mean_length" in e]


def test_the_fixture_is_a_real_trl_grpo_run():
    run = json.loads((REAL / "run.json").read_text())
    assert run["versions"]["trl"] and run["command"].startswith("python tools/make_trl_log.py")
    steps = _log_steps()
    assert len(steps) == run["steps"] and all(e["step_time"] > 0 for e in steps)
    # Natural lengths: they vary within a step and between steps, and some reach the cap.
    assert len({e["completions/mean_length"] for e in steps}) > len(steps) // 2
    assert any(e["completions/clipped_ratio"] > 0 for e in steps)
    assert min(e["completions/min_length"] for e in steps) < run["max_completion_length"] / 4


def test_fitted_mean_within_10_percent_of_the_log_s():
    log = read_logs([STATE])
    assert log.formats[0].startswith("trl")
    result = fit_log(log, None, response_cap=None, batch=16, prompts=4)
    steps = _log_steps()
    logged = np.mean([e["completions/mean_length"] for e in steps])
    fitted = result["overall"]["response"]["fitted"]["mean"]
    assert abs(fitted / logged - 1) < 0.10
    assert result["overall"]["response"]["fitted"]["max"] == 64  # clipped: the longest is the cap
    # The distributions written (one per window) reproduce each window's logged mean when sampled.
    for w in result["windows"]:
        first, last = w["steps"]
        want = np.mean([e["completions/mean_length"] for e in steps if first <= e["step"] <= last])
        dist = load_scenario(None, {"workload": {"response_tokens": w["response"]["distribution"]}}).workload
        got = np.rint(dist.response_tokens.sample(np.random.default_rng(0), 200_000)).clip(1).mean()
        assert abs(got / want - 1) < 0.10, (w["steps"], got, want)


def test_twin_step_time_against_the_log_s_step_time(tmp_path, capsys):
    """The twin on the calibrated CPU profile against TRL's measured step_time, error printed.

    The machine is shared (other processes ran during the TRL run: its step times spread
    ~×9), so the bound is loose; the figures are in docs/fit.md."""
    fitted = tmp_path / "fitted.yaml"
    assert main(["fit", str(STATE), "--scenario", str(REAL / "scenario.yaml"), "--out", str(fitted)]) == 0
    capsys.readouterr()
    report = runner.run(fitted)
    steps = _log_steps()
    measured = [e["step_time"] for e in steps]
    twin_steps = [s.step_s for s in report.steps]
    twin_mean, log_mean, log_median = np.mean(twin_steps), np.mean(measured), np.median(measured)
    with capsys.disabled():
        print(f"\nTRL real log: step_time mean {log_mean:.3f} s, median {log_median:.3f} s, "
              f"min {min(measured):.3f} s; twin {twin_mean:.3f} s per step: error {twin_mean / log_mean - 1:+.0%} "
              f"against the mean, {twin_mean / log_median - 1:+.0%} against the median, "
              f"{twin_mean / min(measured) - 1:+.0%} against the fastest step")
    assert len(twin_steps) == len(steps)
    assert 0.1 < twin_mean / log_median < 10
