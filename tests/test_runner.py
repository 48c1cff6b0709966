"""The one pipeline: the input stays the user's, pressures of any shape, a report that is never
changed after it is made."""

from __future__ import annotations

import json

import pytest

import twin
from twin import runner
from twin.cli import main
from twin.errors import InputError

SMALL = {"run.steps": 3, "algorithm.prompts_per_step": 64}


def test_a_pressure_on_cluster_nodes_adds_the_gpus_it_implies(capsys):
    """The issue's report: on 4×8 colocated GPUs, nodes=8 must add 32 GPUs and change the step."""
    args = ["whatif", "grpo-7b-colocated", "--set", "run.steps=3", "--set", "algorithm.prompts_per_step=64",
            "--pressure", "cluster.nodes=8", "--json", "-"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["pressures"]
    assert row["added_gpus"] == 32
    assert row["step_time_s"] < out["baseline"]["step_time_s"]
    assert row["gain"] > 0


def test_the_api_resolves_overrides_on_sizes_again():
    base = twin.simulate("grpo-7b-colocated", **SMALL)
    more = twin.simulate("grpo-7b-colocated", cluster__nodes=8, **SMALL)
    assert base.gpus == {"shared": 32} and more.gpus == {"shared": 64}
    assert more.step_time_s < base.step_time_s
    again = twin.simulate(more.scenario, cluster__nodes=4)  # a Scenario carries no derived counts
    assert again.gpus == {"shared": 32} and again.step_time_s == base.step_time_s


def test_a_multi_field_pressure_on_the_command_line(capsys):
    args = ["whatif", "grpo-8b-disaggregated", "--set", "run.steps=3", "--set", "algorithm.prompts_per_step=32",
            "--pressure", "placement.rollout.gpus=24,placement.trainer.gpus=8", "--json", "-"]
    assert main(args) == 0
    (row,) = json.loads(capsys.readouterr().out)["pressures"]
    assert row["pressure"] == "placement.rollout.gpus=24,placement.trainer.gpus=8"
    assert row["added_gpus"] == 0  # the same 32 GPUs, split differently
    assert row["step_time_s"] > 0


def test_a_dict_pressure_in_the_api_and_removed_gpus_count_negative():
    rows = twin.whatif("grpo-8b-disaggregated", [{"placement.rollout.gpus": 8, "placement.trainer.gpus": 8}],
                       workers=1, **{"run.steps": 3, "algorithm.prompts_per_step": 32})
    (row,) = rows
    assert row["added_gpus"] == -16 and "gain" in row


def test_split_assignments_keeps_commas_inside_values():
    from twin.studies.verdict import split_assignments

    assert split_assignments("a.b=1, c.d={x: 1, y: 2},e=[1,2]") == ["a.b=1", "c.d={x: 1, y: 2}", "e=[1,2]"]
    assert split_assignments("name=a,b") == ["name=a,b"]  # no path= after the comma: one value


def test_a_pressure_that_cannot_apply_alone_is_an_input_error(capsys):
    args = ["whatif", "grpo-7b-colocated", "--set", "run.steps=2", "--set", "algorithm.prompts_per_step=16",
            "--pressure", "placement.rollout.tp=3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("twin: error:") and err.count("\n") == 1 and "placement.rollout.tp=3" in err


def test_malformed_pressures_are_input_errors():
    from twin.studies.verdict import resolve_pressures

    with pytest.raises(InputError):
        resolve_pressures([{}])
    with pytest.raises(InputError):
        resolve_pressures([42])
    with pytest.raises(InputError, match="unknown pressure"):
        resolve_pressures(["more_of_everything"])


def test_the_report_is_not_changed_by_its_verdict():
    report = runner.run("grpo-8b-disaggregated", SMALL)
    before = report.to_json()
    judged = report.with_verdict(twin.studies.verdict.judge(report, ["reward_x2"], workers=1))
    assert report.to_json() == before and "verdict" not in report.to_dict()
    data = judged.to_dict()
    assert data["verdict"]["marginal_gains"][0]["pressure"] == "reward_x2"
    assert all("marginal_gain" in row for row in data["bottleneck"])


def test_the_report_names_its_plan_and_the_input_keeps_what_the_user_wrote():
    report = runner.run("grpo-8b-disaggregated", SMALL).to_dict()
    assert report["plan"]["rollout_gpus"] + report["plan"]["trainer_gpus"] == 32
    assert report["plan"]["rollout_engines"] == report["plan"]["rollout_gpus"] // report["plan"]["rollout_tp"]
    assert report["gpus"] == {"rollout": report["plan"]["rollout_gpus"], "trainer": report["plan"]["trainer_gpus"]}


def test_prepare_names_the_scenario_file_when_memory_does_not_fit():
    with pytest.raises(InputError) as err:
        runner.prepare("grpo-7b-colocated", {"placement.rollout.gpu_memory_utilization": 0.1})
    assert "grpo-7b-colocated.yaml" in err.value.message


def test_a_pressure_with_a_bad_value_alone_exits_2(capsys):
    args = ["whatif", "grpo-7b-colocated", "--set", "run.steps=2", "--set", "algorithm.prompts_per_step=16",
            "--pressure", "placement.rollout.gpus=abc"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("twin: error:") and err.count("\n") == 1 and "placement.rollout.gpus=abc" in err
