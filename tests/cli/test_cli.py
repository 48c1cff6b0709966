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


def test_run_names_the_binding_link_and_writes_json_and_trace(tmp_path, capsys):
    report, trace = tmp_path / "r.json", tmp_path / "t.json"
    code = main(["run", "grpo-8b-disaggregated", "--set", "run.steps=2", "--json", str(report),
                 "--trace", str(trace)])
    assert code == 0
    out = capsys.readouterr().out
    assert "Verdict:" in out and "critical path" in out
    data = json.loads(report.read_text())
    for key in ("step_time_s", "breakdown", "utilization", "throughput", "bottleneck", "memory", "scenario"):
        assert key in data
    assert data["bottleneck"][0]["link"] in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["name"] == "generate" for e in events)


def test_run_without_arguments_uses_the_builtin_scenario(capsys):
    assert main(["run", "--set", "run.steps=1", "--set", "algorithm.prompts_per_step=32"]) == 0
    assert "grpo-7b-colocated" in capsys.readouterr().out


def test_run_json_to_stdout_is_byte_identical(capsys):
    main(["run", "ppo-8b-colocated", "--set", "run.steps=2", "--json", "-"])
    first = capsys.readouterr().out
    main(["run", "ppo-8b-colocated", "--set", "run.steps=2", "--json", "-"])
    assert capsys.readouterr().out == first


def test_run_bad_input_writes_nothing(tmp_path, capsys):
    report = tmp_path / "r.json"
    assert main(["run", "--set", "run.steps=0", "--json", str(report)]) == 2
    assert "run.steps" in capsys.readouterr().err and not report.exists()


def test_run_report_carries_the_verdict(capsys):
    assert main(["run", "grpo-8b-disaggregated", "--set", "run.steps=3", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    v = data["verdict"]
    assert v["diagnosis"] and len(v["marginal_gains"]) >= 5
    assert all("marginal_gain" in row for row in data["bottleneck"])


def test_whatif_ranks_pressures_and_rejects_unknown_ones(capsys):
    assert main(["whatif", "code-rl-sandbox-7b", "--set", "run.steps=3", "--pressure", "reward_x2",
                 "--pressure", "rollout_gpus_x2", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["pressures"]
    assert [r["pressure"] for r in rows][0] == "reward_x2" and rows[0]["gain"] > 0.3
    assert main(["whatif", "--pressure", "more_gpus"]) == 2
    assert "unknown pressure" in capsys.readouterr().err


def test_whatif_says_when_a_pressure_is_already_pulled(capsys):
    # the built-in scenario's engine already overlaps its scheduling: asked alone, nothing can be
    # simulated, which is an input error; beside another pressure, a line says so
    assert main(["whatif", "--set", "run.steps=2", "--pressure", "async_scheduling"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "async_scheduling: already so in this scenario" in err
    assert main(["whatif", "--set", "run.steps=2", "--set", "algorithm.prompts_per_step=16",
                 "--pressure", "async_scheduling", "--pressure", "reward_x2"]) == 0
    out = capsys.readouterr().out
    assert "engine schedules asynchronously" in out and "already so in this scenario" in out


BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9 if i else ["x"] * 9) + "]\n"
               for i in range(9))


@pytest.mark.parametrize("overrides", [
    ["cluster.gpus_per_node=true"],
    ["algorithm.minibatches=1000000000000"],
    ["cluster.nodes=125000000000"],
    ["algorithm.responses_per_prompt=10000000"],
    ["cluster.host_cpu_cores=1000000000000"],
    ["evaluation.prompts=1000000000", "evaluation.every_steps=1"],
    ["algorithm.prompts_per_step=1000000000"],
    ["cluster.compute_scale=1e-300"],
    ["weight_sync.method=checkpoint", "weight_sync.storage_bytes_per_s=1e-300"],
    ["reward={kind: rule, cpu_seconds: {kind: fixed, value: .inf}}"],
    ["reward={kind: sandbox, workers: 8, latency_s: {kind: fixed, value: 1}, max_retries: 1000000}"],
    ["workload.response_tokens={kind: mixture, max: 100, components: [{weight: 1, mean: .nan, sd: 1}]}"],
    ["placement.rollout.block_size=1000000000"],
    ["description=" + "[" * 10_000],
])
def test_inputs_that_crashed_or_hung_are_one_line_errors(overrides, capsys):
    for command in ("check", "run"):
        args = [command, *(a for o in overrides for a in ("--set", o))]
        assert main(args + (["--no-verdict"] if command == "run" else [])) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("twin: error: ")


def test_a_yaml_bomb_file_is_one_line_and_quick(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text("model: qwen2.5-7b\n" + BOMB)
    proc = subprocess.run([sys.executable, "-m", "twin", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert str(path) in proc.stderr and "line 7" in proc.stderr


def test_check_answers_on_a_hundred_thousand_gpus(capsys):
    # check prices the step without simulating it: ~1 s here (over a minute at 1e6 nodes, once)
    assert main(["check", "--set", "cluster.nodes=16384", "--set", "algorithm.minibatches=1024", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["estimate"]["step_s"] > 0


def test_a_row_with_the_same_result_as_an_earlier_one_says_so():
    from twin.analysis.render import pressure_note

    a = {"short": "staleness +1", "step_time_s": 10.0, "useful_trajectories_per_hour": 5.0}
    b = {"short": "partial rollout", "step_time_s": 10.0, "useful_trajectories_per_hour": 5.0}
    c = {"short": "faster links", "step_time_s": 11.0, "useful_trajectories_per_hour": 4.0}
    rows = [a, b, c]
    assert "the same result as staleness +1" in pressure_note(b, rows)
    assert "same result" not in pressure_note(a, rows) and "same result" not in pressure_note(c, rows)


def test_whatif_prints_a_gain_inside_its_noise_band_as_within_noise(capsys):
    args = ["whatif", "grpo-8b-disaggregated", "--set", "run.steps=3", "--set", "algorithm.prompts_per_step=16",
            "--pressure", "reward_x2", "--pressure", "partial_rollout"]
    assert main(args + ["--json", "-"]) == 0
    rows = {r["pressure"]: r for r in json.loads(capsys.readouterr().out)["pressures"]}
    assert rows["reward_x2"]["gain"] == 0.0 and rows["reward_x2"]["within_noise"] is True  # no reward to speed up
    assert rows["partial_rollout"]["within_noise"] is False and rows["partial_rollout"]["gain"] > 0.1
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    reward = next(line for line in lines if line.strip().startswith("×2 reward workers"))
    partial = next(line for line in lines if line.strip().startswith("partial rollout"))
    assert "within noise" in reward and f"{rows['reward_x2']['noise'] * 100:.1f}%" in reward
    assert "within noise" not in partial and f"{rows['partial_rollout']['gain'] * 100:+.1f}%" in partial
    assert main(args + ["--no-noise", "--json", "-"]) == 0
    assert all("noise" not in r for r in json.loads(capsys.readouterr().out)["pressures"])


@pytest.mark.parametrize("command", ["run", "whatif"])
@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers: out of range"),
    (["--ray-address", "127.0.0.1:1"], "--ray-address only applies to --executor ray"),
])
def test_the_verdicts_executor_options_are_checked_before_simulating(command, args, message, capsys):
    assert main([command, "grpo-8b-disaggregated", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and "simulating" not in captured.err


def test_the_verdict_on_one_worker_is_the_verdict_on_the_pool(capsys):
    args = ["whatif", "grpo-8b-disaggregated", "--set", "run.steps=4", "--pressure", "rollout_gpus_x2",
            "--pressure", "staleness_plus1", "--json", "-"]
    assert main([*args, "--workers", "1"]) == 0
    one = capsys.readouterr().out
    assert main([*args, "--workers", "2"]) == 0
    assert capsys.readouterr().out == one


@pytest.mark.slow  # starts a local Ray (~10 s on 2 cores)
def test_the_verdict_on_ray_is_the_verdict_on_the_pool(capsys):
    pytest.importorskip("ray")
    args = ["run", "grpo-8b-disaggregated", "--json", "-"]
    assert main(args) == 0
    local = capsys.readouterr().out
    assert main([*args, "--executor", "ray", "--workers", "2"]) == 0
    assert capsys.readouterr().out == local
