"""Stragglers: the per-seed draw, and their effect where the loop's structure puts it."""

import numpy as np
import pytest

from twin import runner
from twin.config.load import load_scenario
from twin.config.plan import resolve
from twin.sim.stragglers import draw, unit_factors

ONE_SLOW = {"faults.stragglers.spread": 0, "faults.stragglers.outlier_slowdown": 1.2}
POOLS = {"placement.rollout.gpus": 4, "placement.trainer.gpus": 4}


def _plan(base, **overrides):
    return resolve(load_scenario(base, overrides))


def test_the_draw_is_deterministic_per_seed_and_within_the_spread(base):
    a, b = unit_factors(_plan(base)), unit_factors(_plan(base))
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 1.0 and a.max() <= 1.08 and len(a) == 8
    other = unit_factors(_plan(base, **{"run.seed": 1}))
    assert not np.array_equal(a, other)
    assert not draw(_plan(base, **{"faults.stragglers.spread": 0})).any


def test_an_engine_runs_at_its_slowest_gpu_and_the_trainer_at_its_slowest_rank(base):
    plan = _plan(base, **ONE_SLOW, **POOLS, **{"placement.mode": "disaggregated", "placement.rollout.tp": 2,
                                                "faults.stragglers.slow": [3]})
    slow = draw(plan)
    np.testing.assert_array_equal(slow.engines, [1.0, 1.2])  # GPUs 2-3 are the second engine
    assert slow.trainer == 1.0                              # the trainer holds GPUs 4-7
    trainer_slow = draw(_plan(base, **ONE_SLOW, **POOLS, **{"placement.mode": "disaggregated",
                                                             "faults.stragglers.slow": [5]}))
    assert trainer_slow.trainer == 1.2 and trainer_slow.engines.max() == 1.0


def test_a_slow_node_slows_its_gpus_and_its_cpu_reward_workers(base):
    plan = _plan(base, **ONE_SLOW, **{"faults.stragglers.unit": "node", "faults.stragglers.slow": [0]})
    slow = draw(plan)
    assert (slow.gpus == 1.2).all() and (slow.reward_servers == 1.2).all()
    per_gpu = draw(_plan(base, **ONE_SLOW, **{"faults.stragglers.slow": [0]}))
    assert (per_gpu.reward_servers == 1.0).all()  # a slow GPU leaves the host's cores alone


def _ratio(report, phase=None):
    s = report.data.faults["stragglers"]
    if phase is None:
        return s["step_time_s"] / report.step_time_s
    return s["breakdown"][phase] / report.breakdown[phase]


@pytest.fixture
def small(base):
    base["placement"] = {"rollout": {"gpu_memory_utilization": 0.8}}
    base["run"] = {"steps": 6}
    return base


def test_one_slow_gpu_slows_a_synchronous_update_by_its_factor(small):
    report = runner.run(small, {**ONE_SLOW, "faults.stragglers.slow": [5]})
    assert _ratio(report, "update_actor") == pytest.approx(1.2, rel=1e-4)
    assert _ratio(report, "old_logprob") == pytest.approx(1.2, rel=1e-4)
    assert 1.0 < _ratio(report) < 1.2  # the step: its update and its slowest engine's tail


def test_async_absorbs_more_of_a_slow_trainer_gpu_than_a_synchronous_run(small):
    # the same 4 + 4 pools, one trainer GPU 20% slow
    sync = runner.run(small, {**ONE_SLOW, **POOLS, "placement.mode": "disaggregated", "faults.stragglers.slow": [5]})
    pipelined = runner.run(small, {**ONE_SLOW, **POOLS, "placement.mode": "async", "algorithm.staleness": 1,
                                   "faults.stragglers.slow": [5]})
    assert _ratio(sync, "update_actor") == pytest.approx(1.2, rel=1e-4)
    assert _ratio(pipelined, "update_actor") == pytest.approx(1.2, rel=1e-4)
    assert _ratio(pipelined) < _ratio(sync) < 1.2


def test_the_slowest_engine_paces_a_batchwise_rollout(small):
    report = runner.run(small, {**ONE_SLOW, **POOLS, "placement.mode": "disaggregated", "faults.stragglers.slow": [0]})
    assert _ratio(report, "generation") > 1.0
    assert _ratio(report, "update_actor") == 1.0  # the trainer's GPUs are all at the profile's rate


def test_a_slow_reward_worker_paces_its_group(small):
    # a reward model on the last GPU; when it runs 3x slow every group waits longer for its scores
    small["reward"] = {"kind": "reward_model", "model": "qwen2.5-1.5b"}
    overrides = {**ONE_SLOW, "placement.reward_model_gpus": 1, "placement.mode": "disaggregated",
                 "placement.rollout.gpus": 4, "placement.trainer.gpus": 3, "faults.stragglers.outlier_slowdown": 3.0}
    healthy = runner.run(small, {**overrides, "faults.stragglers.slow": []})
    assert healthy.data.faults["stragglers"]["step_time_s"] == healthy.step_time_s  # nothing drawn slow
    slowed = runner.run(small, {**overrides, "faults.stragglers.slow": [7]})
    assert slowed.data.faults["stragglers"]["step_time_s"] > slowed.step_time_s
