"""twin scale: the scaling curve keeps its invariants (ascending sizes, efficiency 1 at the
smallest, pools that add up), finds where the binding link changes, and refuses bad input."""

from __future__ import annotations

import json

import pytest

import twin
from twin import runner
from twin.analysis.report import LinkRow, ReportData, Throughput
from twin.cli import main
from twin.studies.scaling import ScalePoint, ScaleResult, parse_gpus, scaled_overrides

SMALL = {"run.steps": 3, "algorithm.prompts_per_step": 32}


@pytest.fixture(scope="module")
def curve():
    return twin.scale("grpo-8b-disaggregated", SMALL, gpus="64,16,32", workers=2)


def test_points_ascend_and_the_smallest_has_efficiency_one(curve):
    gpus = [p.gpus for p in curve.points]
    assert gpus == [16, 32, 64]
    assert curve.points[0].scaling_efficiency == 1.0
    first = curve.points[0]
    for p in curve.points:
        d = p.to_dict()
        assert d["error"] is None and d["rollout_gpus"] + d["trainer_gpus"] == p.gpus
        # the scenario's 16:16 split, scaled: half each
        assert d["rollout_gpus"] == d["trainer_gpus"]
        expected = (p.useful_trajectories_per_hour / p.gpus) / (first.useful_trajectories_per_hour / first.gpus)
        assert p.scaling_efficiency == pytest.approx(expected, rel=1e-3)


def test_json_has_the_contract_fields_and_is_repeatable(curve):
    data = json.loads(curve.to_json())
    assert [set(p) >= {"gpus", "useful_trajectories_per_hour", "scaling_efficiency", "binding_link"}
            for p in data["points"]] == [True] * 3
    assert data["threshold"] == 0.7 and "binding_changes" in data and "stops_paying_at" in data
    again = twin.scale("grpo-8b-disaggregated", SMALL, gpus=[16, 32, 64], workers=1)
    assert again.to_json() == curve.to_json()


def test_a_point_reproduces_twin_run_with_its_overrides(curve):
    p = curve.points[1]
    report = runner.run("grpo-8b-disaggregated", {**SMALL, **p.overrides})
    assert report.useful_trajectories_per_hour == p.useful_trajectories_per_hour


def _fake(gpus: int, useful: float, link: str) -> ScalePoint:
    """A point with just the figures the curve reads (a report built without validating the rest)."""
    report = ReportData.model_construct(
        throughput=Throughput.model_construct(useful_trajectories_per_hour=useful, tokens_per_s=1.0), step_time_s=1.0,
        plan={"mode": "disaggregated", "rollout_gpus": gpus // 2, "trainer_gpus": gpus // 2, "rollout_tp": 1},
        scenario={"algorithm": {"staleness": 0, "partial_rollout": False}},
        bottleneck=[LinkRow(link=link, critical_path_share=0.5, load=0.5, binds=True, saturated=False)])
    return ScalePoint(gpus, {}, report)


def test_binding_changes_and_where_gpus_stop_paying_on_a_constructed_series():
    from twin.studies.scaling import _efficiencies

    points = _efficiencies([_fake(16, 1600, "rollout"), _fake(32, 3000, "rollout"),
                            ScalePoint(48, {}, None, "does not fit"),
                            _fake(64, 5000, "weight_sync"), _fake(128, 6000, "optimization")])
    result = ScaleResult("x", False, 0.7, points)
    assert [p.scaling_efficiency for p in points] == [1.0, 0.9375, None, 0.7812, 0.4688]
    assert result.binding_changes == [
        {"gpus": 64, "from_gpus": 32, "from": "rollout", "to": "weight_sync"},  # the failed 48 is skipped
        {"gpus": 128, "from_gpus": 64, "from": "weight_sync", "to": "optimization"}]
    assert result.stops_paying_at == 128
    text = result.render()
    assert "changes between 32 and 64 GPUs: rollout -> weight_sync" in text
    assert "stops paying at 128 GPUs" in text and "cannot run: does not fit" in text
    assert ScaleResult("x", False, 0.4, points).stops_paying_at is None


def test_a_fractional_staleness_renders():
    """verl's fully-async staleness_threshold (0.5) is a fraction: the table prints it as such."""
    from twin.studies.scaling import _efficiencies

    point = _fake(16, 1600, "rollout")
    point.report.scenario["algorithm"]["staleness"] = 0.5
    text = ScaleResult("x", False, 0.7, _efficiencies([point])).render()
    assert "  0.5 " in text


def test_proportional_scaling_keeps_the_share_in_whole_nodes():
    s = runner.load("grpo-8b-disaggregated", {"placement.rollout.gpus": 24, "placement.trainer.gpus": 8})
    assert scaled_overrides(s, 64) == {"cluster.nodes": 8, "placement.rollout.gpus": 48, "placement.trainer.gpus": 16}
    # 3/4 of 12 GPUs is 9: whole engines of tp 2 within one node's worth → 10 (ties toward rollout)
    s2 = runner.load("grpo-8b-disaggregated", {"placement.rollout.gpus": 24, "placement.trainer.gpus": 8,
                                               "placement.rollout.tp": 2})
    assert scaled_overrides(s2, 12) == {"cluster.nodes": 2, "placement.rollout.gpus": 10, "placement.trainer.gpus": 2}
    colocated = runner.load("grpo-7b-colocated")
    assert scaled_overrides(colocated, 20) == {"cluster.nodes": 3, "placement.rollout.gpus": 20,
                                               "placement.trainer.gpus": 20}


def test_a_size_that_cannot_split_is_a_point_with_its_reason():
    result = twin.scale("grpo-8b-disaggregated", SMALL, gpus=[1, 16], workers=1)
    assert result.points[0].report is None and "do not split" in result.points[0].error
    assert result.points[1].scaling_efficiency == 1.0  # the smallest size that runs is the reference


def test_parse_gpus_sorts_and_dedups():
    assert parse_gpus("64, 16,32,16") == [16, 32, 64]


@pytest.mark.parametrize("args, message", [
    (["--gpus", "16,abc"], "--gpus: not a GPU count"),
    (["--gpus", "0,16"], "--gpus: out of range"),
    (["--gpus", "16", "--threshold", "1.5"], "--threshold: out of range"),
    (["--gpus", "16", "--ray-address", "localhost:6379"], "--ray-address only applies to --executor ray"),
    (["--gpus", "16", "--replan", "--set", "placement.rollout.tp=2"], "the planner sets placement.rollout.tp itself"),
    (["--gpus", "16", "--set", "algorithm.nope=1"], "unknown field"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    assert main(["scale", "grpo-8b-disaggregated", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("twin: error: ") and message in err[0]


def test_replan_takes_the_planners_best_at_each_size():
    result = twin.scale("grpo-8b-disaggregated", SMALL, gpus=[8, 16], replan=True, max_staleness=0, workers=2)
    best16 = twin.plan_budget("grpo-8b-disaggregated", SMALL, gpus=16, max_staleness=0, top=1, workers=2).best
    assert result.points[1].overrides == best16.candidate.overrides
    assert result.points[1].useful_trajectories_per_hour == best16.report.useful_trajectories_per_hour
    assert result.replan and result.points[0].scaling_efficiency == 1.0


def test_weak_scaling_grows_the_batch_with_the_gpus():
    from twin.studies.scaling import batch_override

    s = runner.load("grpo-8b-disaggregated")  # 128 prompts on 16 + 16 GPUs
    assert batch_override(s, 64) == {"algorithm.prompts_per_step": 256}
    assert batch_override(s, 8) == {"algorithm.prompts_per_step": 32}
    result = twin.scale("grpo-8b-disaggregated", {"run.steps": 3, "algorithm.prompts_per_step": 16}, gpus=[16, 32],
                        scale_batch=True, workers=1)
    assert [p.overrides["algorithm.prompts_per_step"] for p in result.points] == [8, 16]
    assert result.to_dict()["scale_batch"] is True
