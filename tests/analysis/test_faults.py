"""The report's faults section: interruptions, checkpoints, restarts, spares, engine failures,
stragglers, and goodput — one test (at least) per cause."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin import runner
from twin.analysis.faults import daly_efficiency, failures_bind, no_spare_probability
from twin.studies.scaling import scaled_overrides

BUILTIN = "deepseek-v3-grpo-256xh100"  # colocated: every GPU's failure restarts the job
NO_STRAGGLERS = {"faults.stragglers.spread": 0}


def _at(gpus: int, **overrides) -> dict:
    report = runner.run(BUILTIN, {**scaled_overrides(runner.load(BUILTIN), gpus), "run.steps": 3, **overrides})
    return report.data.faults


@pytest.fixture
def small(base) -> dict:
    base["placement"] = {"rollout": {"gpu_memory_utilization": 0.8}}
    base["run"] = {"steps": 4}
    return base


@pytest.fixture(scope="module")
def at_16k() -> dict:
    return _at(16_384)


@pytest.fixture(scope="module")
def at_256() -> dict:
    return _at(256)


def test_16k_gpus_report_the_llama3_rate_a_lower_goodput_and_youngs_interval(at_16k, at_256):
    f = at_16k
    assert f["interruptions_per_day"] == pytest.approx(7.76, rel=0.10)
    assert f["mtbf_s"] == pytest.approx(86_400 / f["interruptions_per_day"], rel=1e-4)
    assert f["goodput"] < at_256["goodput"]
    young = math.sqrt(2 * f["checkpoint_write_s"] * f["mtbf_s"])
    assert f["checkpoint_interval_s"] == pytest.approx(young, rel=1e-4)
    assert f["checkpoint_interval_optimal_s"] == pytest.approx(young, rel=1e-4)
    assert failures_bind(f) and not failures_bind(at_256)


def test_the_causes_account_for_all_the_lost_time(at_16k, at_256):
    for f in (at_16k, at_256):
        assert sum(f["lost"].values()) == pytest.approx(1 - f["goodput"], abs=1e-5)
        assert all(v >= 0 for v in f["lost"].values())
        assert f["useful_trajectories_per_hour"] < f["useful_trajectories_per_hour"] / f["goodput"]


def test_no_failures_no_interruption_loss(small):
    f = runner.run(small, {"faults.failures_per_gpu_hour": 0, **NO_STRAGGLERS}).data.faults
    assert f["goodput"] == 1.0 and f["mtbf_s"] is None and f["checkpoint_interval_s"] is None
    assert f["interruptions_per_day"] == 0 and set(f["lost"].values()) == {0.0}


def test_interruptions_cost_lost_work_and_restarts_that_grow_with_the_rate(small):
    def at(rate):
        return runner.run(small, {"faults.failures_per_gpu_hour": rate, **NO_STRAGGLERS}).data.faults
    low, high = at(1e-4), at(1e-2)
    assert high["goodput"] < low["goodput"] < 1
    for cause in ("lost_work", "restarts", "node_waits"):
        assert high["lost"][cause] > low["lost"][cause] > 0
    assert high["restart_s"] == pytest.approx(low["restart_s"])  # a restart's steps do not depend on the rate
    assert high["restart"]["node_wait_s"] == pytest.approx(0.78 * 600)  # no spare: every hardware failure waits


def test_a_checkpoint_interval_set_by_hand_costs_more_than_youngs(at_16k):
    every_step = _at(16_384, **{"faults.checkpoint.every_steps": 1})
    assert every_step["lost"]["checkpoints"] > at_16k["lost"]["checkpoints"]
    assert every_step["goodput"] < at_16k["goodput"]


def test_async_checkpointing_blocks_less_and_checkpoints_more_often(at_16k):
    background = _at(16_384, **{"faults.checkpoint.asynchronous": True})
    assert background["checkpoint_blocking_s"] < at_16k["checkpoint_blocking_s"]
    assert background["checkpoint_interval_s"] < at_16k["checkpoint_interval_s"]
    assert background["checkpoint_interval_s"] >= background["checkpoint_write_s"]  # one write at a time
    assert background["goodput"] > at_16k["goodput"]


def test_spare_nodes_take_the_wait_for_a_replacement_away(at_16k):
    spares = _at(16_384, **{"faults.spare_nodes": 2})
    assert spares["restart"]["node_wait_s"] < at_16k["restart"]["node_wait_s"] / 10
    assert spares["lost"]["node_waits"] < at_16k["lost"]["node_waits"]
    assert spares["goodput"] > at_16k["goodput"] and spares["spare_gpus"] == 16


def test_engine_failures_cost_a_streaming_run_its_lost_work_and_restart_the_job_without_engine_restarts():
    name = "grpo-8b-disaggregated"
    scaled = {**scaled_overrides(runner.load(name), 16_384), "run.steps": 3, **NO_STRAGGLERS}
    alone = runner.run(name, scaled).data.faults
    assert alone["engine_failures_per_day"] > 0 and alone["lost"]["engine_failures"] > 0
    assert alone["job_restarts_per_day"] == pytest.approx(alone["interruptions_per_day"] / 2, rel=1e-4)
    whole_job = runner.run(name, {**scaled, "faults.engine_restart": False}).data.faults
    assert whole_job["engine_failures_per_day"] == 0 and whole_job["lost"]["engine_failures"] == 0
    assert whole_job["job_restarts_per_day"] == pytest.approx(whole_job["interruptions_per_day"], rel=1e-4)
    assert whole_job["goodput"] < alone["goodput"]


def test_stragglers_take_the_difference_of_the_two_simulations(small):
    report = runner.run(small, {"faults.failures_per_gpu_hour": 0})
    f = report.data.faults
    pace = report.step_time_s / f["stragglers"]["step_time_s"]
    assert f["stragglers"]["slowest"] <= 1.08 and f["stragglers"]["trainer_pace"] > 1.0
    assert f["goodput"] == pytest.approx(pace, rel=1e-5)
    assert f["lost"]["stragglers"] == pytest.approx(1 - pace, abs=1e-5)


def test_faults_off(small):
    report = runner.run(small, {"faults.enabled": False})
    f = report.data.faults
    assert f == {"enabled": False, "goodput": 1.0,
                 "useful_trajectories_per_hour": report.useful_trajectories_per_hour,
                 "tokens_per_s": report.throughput.tokens_per_s}


def test_same_seed_same_section(small):
    assert runner.run(small).to_json() == runner.run(small).to_json()


# ----------------------------------------------------------------------------- the closed forms
def _simulated_efficiency(tau, blocking, restart, mtbf, segments, seed):
    """Work over wall time of ``segments`` checkpoint intervals under exponential failures:
    a segment of work + checkpoint must run uninterrupted; a failure costs what ran of it and a
    restart (which a failure can interrupt too)."""
    rng = np.random.default_rng(seed)
    wall = 0.0
    for _ in range(segments):
        while True:
            gap = rng.exponential(mtbf)
            if gap >= tau + blocking:
                wall += tau + blocking
                break
            wall += gap
            while True:  # the restart itself
                gap = rng.exponential(mtbf)
                if gap >= restart:
                    wall += restart
                    break
                wall += gap
    return segments * tau / wall


@settings(max_examples=8, deadline=None)
@given(tau=st.floats(100, 5_000), blocking=st.floats(0, 300), restart=st.floats(0, 1_500),
       mtbf=st.floats(2_000, 50_000), seed=st.integers(0, 2**32 - 1))
def test_dalys_expectation_matches_a_simulated_failure_process(tau, blocking, restart, mtbf, seed):
    simulated = _simulated_efficiency(tau, blocking, restart, mtbf, 20_000, seed)
    assert daly_efficiency(tau, blocking, restart, mtbf) == pytest.approx(simulated, rel=0.03)


@settings(max_examples=30, deadline=None)
@given(blocking=st.floats(0.1, 300), restart=st.floats(0, 1_500), mtbf=st.floats(5_000, 1e6))
def test_youngs_interval_is_near_the_best(blocking, restart, mtbf):
    young = math.sqrt(2 * blocking * mtbf)
    best = daly_efficiency(young, blocking, restart, mtbf)
    for other in (young / 2, young * 2):
        assert best >= daly_efficiency(other, blocking, restart, mtbf) - 1e-3


def test_no_spare_probability_is_the_poisson_tail():
    assert no_spare_probability(0, 0.3) == 1.0
    m = 0.7
    assert no_spare_probability(1, m) == pytest.approx(1 - math.exp(-m))
    assert no_spare_probability(2, m) == pytest.approx(1 - math.exp(-m) * (1 + m))
    assert no_spare_probability(5, m) < no_spare_probability(2, m)
