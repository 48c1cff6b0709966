"""Stopping at steady state: the rule on step times, and the loop that applies it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.runner import plan as plan_of
from twin.sim.loop import simulate
from twin.sim.settle import MIN_STEADY_STEPS, RESIMULATION_TOLERANCE, settled, settling


def test_too_few_steady_steps_never_settle():
    # the first step is left out: MIN_STEADY_STEPS equal steps after it are needed
    assert not settled([50.0] + [10.0] * (MIN_STEADY_STEPS - 1), 0.01)
    assert settled([50.0] + [10.0] * MIN_STEADY_STEPS, 0.01)


def test_scatter_beyond_the_tolerance_does_not_settle():
    times = [10.0, 9.0, 11.0, 9.0, 11.0]  # mean 10, standard error 0.58: 5.8%
    assert not settled(times, 0.05) and settled(times, 0.06)


def test_a_trend_does_not_settle_however_small_its_scatter():
    # a pipeline still filling: steadily faster steps, each within 0.6% of a straight line
    times = [30.0] + [20.0 - 0.5 * k for k in range(8)]
    mean = sum(times[1:]) / 8
    sem = math.sqrt(sum((t - mean) ** 2 for t in times[1:]) / 7 / 8)
    assert sem / mean < 0.03  # the standard error alone would let it stop at 3%
    assert not settled(times, 0.03)


@given(st.lists(st.floats(0.1, 1e4), min_size=2, max_size=30), st.floats(1e-4, 0.5))
def test_equal_steady_steps_settle_and_scaling_time_changes_nothing(times, tolerance):
    assert settled([times[0]] + [times[1]] * max(MIN_STEADY_STEPS, len(times) - 1), tolerance)
    assert settled(times, tolerance) == settled([3.7 * t for t in times], tolerance)


def test_settling_keeps_a_tolerance_the_scenario_sets():
    assert settling({"run": {"steps": 8}})["run"] == {"steps": 8, "steady_tolerance": RESIMULATION_TOLERANCE}
    assert settling({"run": {"steady_tolerance": 0.2}})["run"]["steady_tolerance"] == 0.2
    data = {"model": "m"}
    assert settling(data) == {"model": "m", "run": {"steady_tolerance": RESIMULATION_TOLERANCE}} and data == {"model": "m"}


def _scenario(**run) -> dict:
    return {
        "model": "qwen2.5-1.5b",
        "cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"},
        "placement": {"mode": "colocated"},
        "algorithm": {"prompts_per_step": 64, "responses_per_prompt": 8},
        "workload": {"prompt_tokens": {"kind": "fixed", "value": 200},
                     "response_tokens": {"kind": "lognormal", "median": 400, "sigma": 0.3, "max": 4096}},
        "run": {"steps": 30, "seed": 3, **run},
    }


def test_the_loop_stops_once_settled_and_says_so():
    full = simulate(plan_of(_scenario()))
    early = simulate(plan_of(_scenario(steady_tolerance=0.02)))
    n = len(early.steps)
    assert len(full.steps) == 30 and not full.settled
    assert MIN_STEADY_STEPS + 1 <= n < 30 and early.settled
    # the same steps up to where it stopped (the same seed draws the same batches) ...
    assert [s.end for s in early.steps] == [s.end for s in full.steps[:n]]
    # ... and the first step at which the rule holds on the full run's step times
    times = [b.end - a.end for a, b in zip([type("S", (), {"end": 0.0})()] + full.steps, full.steps)]
    assert n == next(k for k in range(1, 31) if settled(times[:k], 0.02))


def test_a_drifting_workload_is_simulated_to_the_end():
    data = _scenario(steady_tolerance=0.05)
    data["workload"]["schedule"] = {"windows": [
        {"from_step": 1, "response_tokens": {"kind": "lognormal", "median": 400, "sigma": 0.5, "max": 4096}},
        {"from_step": 15, "response_tokens": {"kind": "lognormal", "median": 900, "sigma": 0.5, "max": 4096}}]}
    result = simulate(plan_of(data))
    assert len(result.steps) == 30 and not result.settled


def test_the_report_estimates_the_whole_run_when_it_stopped_early():
    from twin.runner import run

    report = run(_scenario(steady_tolerance=0.02))
    settled_ = report.run["settled"]
    steps = report.to_dict()["steps"]
    assert settled_["simulated_steps"] == len(steps) < settled_["of_steps"] == 30
    steady = [s["step_s"] for s in steps[1:]]
    expected = steps[-1]["end_s"] + (30 - len(steps)) * sum(steady) / len(steady)
    assert settled_["estimated_total_s"] == pytest.approx(expected, rel=1e-4)
    assert "settled" not in run(_scenario()).run


def test_the_text_report_says_where_it_stopped():
    from twin.analysis.render import run_lines
    from twin.runner import run

    text = "\n".join(run_lines(run(_scenario(steady_tolerance=0.02)).data))
    assert "stopped at steady state after" in text and "of 30 steps (run.steady_tolerance 0.02)" in text
