"""Goodput in the studies: the scaling curve's columns and the size where failures bind, the
verdict's fault levers, the planner's goodput-weighted objectives."""

from __future__ import annotations

import pytest

import twin
from twin import runner
from twin.analysis.report import ReportData
from twin.studies import verdict
from twin.studies.goodput import failures_bind_at, goodput_gain, interruption_kept, point_figures
from twin.studies.planner import _metric, _score
from twin.studies.scaling import scaled_overrides

BUILTIN = "deepseek-v3-grpo-256xh100"


@pytest.fixture(scope="module")
def big():
    """The built-in on 16,384 GPUs, with its report: failures bind there."""
    return runner.run(BUILTIN, {**scaled_overrides(runner.load(BUILTIN), 16_384), "run.steps": 3})


def test_a_scaling_point_carries_its_goodput_and_the_curve_names_where_failures_bind(big):
    figures = point_figures(big.data)
    assert figures["goodput"] == big.data.faults["goodput"] < 1
    assert figures["goodput_useful_trajectories_per_hour"] == big.data.faults["useful_trajectories_per_hour"]
    assert figures["failures_bind"] is True
    assert point_figures(None) == {"goodput": None, "goodput_useful_trajectories_per_hour": None,
                                   "failures_bind": None}
    points = [{"gpus": 256, "failures_bind": False}, {"gpus": 1024, "failures_bind": None},
              {"gpus": 4096, "failures_bind": True}, {"gpus": 16384, "failures_bind": True}]
    assert failures_bind_at(points) == 4096 and failures_bind_at(points[:2]) is None


def test_twin_scale_prints_goodput_per_size():
    curve = twin.scale("grpo-8b-disaggregated", {"run.steps": 3, "algorithm.prompts_per_step": 32},
                       gpus="16,32", workers=1)
    data = curve.to_dict()
    assert all(0 < p["goodput"] <= 1 for p in data["points"]) and "failures_bind_at" in data
    text = curve.render()
    assert "goodput" in text and "× goodput" in text and "failures stay under 5%" in text


def test_the_fault_levers_gain_goodput_weighted_experience(big):
    rows = {r.pressure.name: r for r in verdict.sensitivity(
        big, ["spare_nodes", "async_checkpointing", "checkpoint_interval", "faults.restart.detect_s=600"],
        workers=1, noise=False)}
    assert "checkpoint_interval" not in rows  # the interval is already Young's optimum
    spares, background = rows["spare_nodes"], rows["async_checkpointing"]
    assert spares.gain > 0 and spares.added_gpus == 8 and spares.noise is None
    assert background.gain > 0
    assert rows["faults.restart.detect_s=600"].gain < 0  # a custom lever on faults alone reads the same way
    base_goodput = big.data.faults["useful_trajectories_per_hour"]
    assert spares.useful_trajectories_per_hour > base_goodput


def test_a_hand_set_interval_is_a_lever_toward_youngs(big):
    plan = runner.plan(BUILTIN, {"faults.checkpoint.every_steps": 40})
    assert verdict.PRESSURES["checkpoint_interval"].overrides(plan, big) == {"faults.checkpoint.every_steps": None}
    off = runner.plan(BUILTIN, {"faults.enabled": False})
    assert all(verdict.PRESSURES[p].overrides(off, big) is None
               for p in ("checkpoint_interval", "async_checkpointing", "spare_nodes"))


def test_goodput_gain_is_the_ratio_of_what_interruptions_leave():
    base = ReportData.model_construct(faults={"goodput": 0.8, "lost": {
        "checkpoints": 0.05, "lost_work": 0.05, "restarts": 0.0, "node_waits": 0.1, "stragglers": 0.05}})
    better = ReportData.model_construct(faults={"goodput": 0.9, "lost": {
        "checkpoints": 0.05, "lost_work": 0.05, "restarts": 0.0, "node_waits": 0.0, "stragglers": 0.05}})
    assert interruption_kept(base.faults) == pytest.approx(0.8)
    assert goodput_gain(base, better) == pytest.approx(0.9 / 0.8 - 1)
    # a lever on stragglers reads the whole goodput
    assert goodput_gain(base, better, {"faults.stragglers.spread": 0}) == pytest.approx(0.9 / 0.8 - 1)


def test_the_planner_ranks_by_goodput_weighted_objectives(big):
    report = big.data
    for name in ("useful_trajectories_per_hour", "tokens_per_s"):
        assert _metric(report, f"goodput_{name}") == report.faults[name]
        assert _score(report, f"goodput_{name}", None) == (report.faults[name], None)
    assert _metric(report, "goodput_useful_trajectories_per_hour") < _metric(report, "useful_trajectories_per_hour")


def test_a_point_simulated_without_faults_has_no_goodput_not_a_perfect_one():
    """--replan's points come from the planner's runs, which skip the faults section: their
    goodput is unknown ('-' in the table), not 1.0."""
    off = ReportData.model_construct(faults={"enabled": False, "goodput": 1.0})
    assert point_figures(off) == {"goodput": None, "goodput_useful_trajectories_per_hour": None,
                                  "failures_bind": None}
