import json
import subprocess
import sys

import pytest

from twin.cli import main
from twin.config.registry import builtin_scenarios


@pytest.mark.parametrize("name", builtin_scenarios())
def test_check_runs_on_every_builtin_scenario(name, capsys):
    assert main(["check", name]) == 0
    out = capsys.readouterr().out
    assert "Memory per GPU" in out and "Tier-1 estimate" in out


def test_check_json_is_deterministic(capsys):
    main(["check", "grpo-8b-disaggregated", "--json", "-"])
    first = capsys.readouterr().out
    main(["check", "grpo-8b-disaggregated", "--json", "-"])
    assert capsys.readouterr().out == first
    report = json.loads(first)
    assert report["memory"]["rollout"]["fits"] and report["estimate"]["step_s"] > 0


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    out_file = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "twin", "check", "--set", "placement.rollout.gpu=4", "--json", str(out_file)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "placement.rollout.gpu" in lines[0] and "did you mean 'gpus'" in lines[0]
    assert not out_file.exists()


def test_model_that_does_not_fit_exits_2_and_names_the_field(tmp_path, capsys):
    out_file = tmp_path / "r.json"
    code = main(["check", "--set", "model=llama-3.1-70b", "--set", "cluster.nodes=1", "--json", str(out_file)])
    assert code == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "placement.rollout" in err
    assert not out_file.exists()


def test_list_names_scenarios_models_and_profiles(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "grpo-7b-colocated" in out and "deepseek-v3" in out and "h200" in out
