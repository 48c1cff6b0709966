"""twin fit: log readers, the clipped-lognormal recovery, the CLI and what it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from twin.cli import main
from twin.config.load import load_scenario
from twin.errors import InputError
from twin.importers.logs import fit_lengths, fit_log, read_logs, windows
from twin.importers.logs.lognormal import clip_mass, clipped_mean, fit
from twin.importers.logs.readers import RESPONSE, Step

FIX = Path(__file__).parent / "fixtures"
TINY = FIX / "tiny.yaml"
LOGS = {"verl": "verl_console.log", "verl-jsonl": "verl_metrics.jsonl", "jsonl": "metrics.jsonl",
        "wandb-csv": "wandb_export.csv", "trl": "trl/trainer_state.json"}
DETECTED = {"verl": "verl", "verl-jsonl": "verl", "jsonl": "jsonl", "wandb-csv": "wandb-csv", "trl": "trl"}


# --------------------------------------------------------------------------- readers
@pytest.mark.parametrize("name", list(LOGS))
def test_every_format_reads_the_same_run(name):
    log = read_logs([FIX / LOGS[name]])
    assert log.formats[0].startswith(DETECTED[name] + " (detected from")
    assert [s.step for s in log.steps] == list(range(1, 13))  # verl's step-0 validation line skipped
    first = log.steps[0]
    mean = first.role(RESPONSE, "mean")[1]
    assert mean == pytest.approx(1616.844)
    assert first.role(RESPONSE, "max")[1] == 4096
    assert first.role(RESPONSE, "clip_ratio")[1] == pytest.approx(0.06641)


@pytest.mark.parametrize("name", list(LOGS))
def test_format_given_explicitly(name):
    fmt = DETECTED[name]
    log = read_logs([FIX / LOGS[name]], fmt)
    assert log.formats == [f"{fmt} (--format)"] and len(log.steps) == 12


def test_all_formats_fit_the_same_distribution():
    fits = {n: fit_log(read_logs([FIX / f]))["windows"][-1]["response"]["distribution"] for n, f in LOGS.items()}
    assert len({json.dumps(d, sort_keys=True) for d in fits.values()}) == 1


def test_timings_map_to_twin_metrics():
    t = fit_log(read_logs([FIX / LOGS["verl"]]))["windows"][-1]["timings"]
    assert {k: v["metric"] for k, v in t.items()} == {
        "timing_s/step": "step_time_s", "timing_s/gen": "generation", "timing_s/update_actor": "update_actor",
        "timing_s/old_log_prob": "old_logprob", "timing_s/ref": "reference"}
    trl = fit_log(read_logs([FIX / LOGS["trl"]]))["windows"][-1]["timings"]
    assert list(trl) == ["step_time"] and trl["step_time"]["metric"] == "step_time_s"


def test_windows_default_to_four_and_at_least_one_step():
    steps = [Step(i, "") for i in range(10)]
    assert [len(w) for w in windows(steps, None)] == [2, 3, 2, 3]
    assert [len(w) for w in windows(steps[:2], None)] == [1, 1]
    assert [len(w) for w in windows(steps, 4)] == [4, 4, 2]


def test_resumed_run_keeps_the_last_record_of_a_step(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"step": 1, "response_length/mean": 100, "response_length/max": 500}\n'
                 '{"step": 2, "response_length/mean": 200, "response_length/max": 500}\n')
    b.write_text('{"step": 2, "response_length/mean": 300, "response_length/max": 500}\n')
    log = read_logs([a, b])
    assert [s.values["response_length/mean"] for s in log.steps] == [100, 300]


# --------------------------------------------------------------------------- recovery
def test_closed_forms_match_monte_carlo():
    rng = np.random.default_rng(0)
    mu, s, cap = math.log(1500), 0.8, 4096
    x = np.minimum(rng.lognormal(mu, s, 1_000_000), cap)
    assert clipped_mean(mu, s, cap) == pytest.approx(x.mean(), rel=3e-3)
    assert clip_mass(mu, s, cap) == pytest.approx((x >= cap).mean(), abs=2e-3)


def _summaries(median, sigma, cap, n, steps, seed, clip=True):
    rng = np.random.default_rng(seed)
    x = np.minimum(np.round(rng.lognormal(math.log(median), sigma, (steps, n))), cap)
    recs = [Step(i, "", {"response_length/mean": r.mean(), "response_length/max": r.max(),
                         "response_length/min": r.min(),
                         **({"response_length/clip_ratio": (r >= cap).mean()} if clip else {})})
            for i, r in enumerate(x)]
    return recs, x


# (median, sigma, cap): clip ratios from 0 to 0.4, so both ways of finding sigma are tried.
KNOWN = [(800, 0.5, 4096), (1500, 0.8, 4096), (6000, 0.7, 8192), (500, 1.0, 2048), (2000, 0.3, 2400),
         (3000, 1.2, 4096), (300, 0.4, 8192), (4000, 0.9, 16384)]


@pytest.mark.parametrize("median,sigma,cap", KNOWN)
@pytest.mark.parametrize("seed", [1, 2])
def test_recovers_known_clipped_lognormals(median, sigma, cap, seed):
    """16 steps of 1,024 responses each: the mean within 2%, the median within 10% (measured:
    within 1.4% and 2.3% over 20 seeds, docs/fit.md)."""
    recs, x = _summaries(median, sigma, cap, 1024, 16, seed)
    true_mean = clipped_mean(math.log(median), sigma, cap)
    out = fit_lengths(recs, RESPONSE, cap_hint=cap, batch=1024, what="response")
    assert out["fitted"]["mean"] == pytest.approx(x.mean(), rel=1e-6)  # matched by construction
    assert out["fitted"]["mean"] == pytest.approx(true_mean, rel=0.02)
    assert out["fitted"]["median"] == pytest.approx(median, rel=0.10)
    assert out["fitted"]["max"] == cap


@pytest.mark.parametrize("median,sigma,cap", [(1500, 0.8, 4096), (3000, 1.2, 4096), (2000, 0.3, 2400)])
def test_clipped_without_clip_ratio_uses_the_min(median, sigma, cap):
    """Every step's max at the cap and no clip ratio logged: the max is no draw, the min tells
    (measured: median within 4.0%)."""
    recs, _ = _summaries(median, sigma, cap, 1024, 16, 5, clip=False)
    out = fit_lengths(recs, RESPONSE, cap_hint=cap, batch=1024, what="response")
    assert "the min against the mean" in out["from"]["p50"]
    assert out["fitted"]["mean"] == pytest.approx(clipped_mean(math.log(median), sigma, cap), rel=0.02)
    assert out["fitted"]["median"] == pytest.approx(median, rel=0.10)


def test_without_clip_ratio_sigma_comes_from_the_spread_and_says_so():
    recs, _ = _summaries(1000, 0.5, 16384, 512, 8, 3, clip=False)
    out = fit_lengths(recs, RESPONSE, cap_hint=None, batch=None, what="response")
    assert "min/max spread of 1024" in out["from"]["p50"] and "assumed 1024" in out["from"]["p50"]
    assert out["fitted"]["median"] == pytest.approx(1000, rel=0.15)


def test_without_spread_the_default_sigma_is_named():
    f = fit(1000.0, 8192.0, None)
    assert "default" in f.sigma_from and f.mean == pytest.approx(1000, rel=1e-6)


def test_impossible_targets_are_noted_not_raised():
    f = fit(100.0, 4096.0, 0.5)  # mean below clip ratio x cap: no lognormal matches both
    assert f.note and f.sigma > 5


# --------------------------------------------------------------------------- CLI
def _run(capsys, *argv):
    code = main(["fit", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_prints_windows_overall_and_sources(capsys):
    code, out, _ = _run(capsys, FIX / LOGS["verl"])
    assert code == 0
    assert "read as verl (detected from" in out
    for row in ("window 1", "window 4", "overall", "from (last window)", "response_length/mean (matched)",
                "prompt length", "timing_s/gen"):
        assert row in out


def test_cli_json(capsys, tmp_path):
    path = tmp_path / "fit.json"
    assert _run(capsys, FIX / LOGS["trl"], "--json", path)[0] == 0
    data = json.loads(path.read_text())
    assert len(data["windows"]) == 4 and data["overall"]["n_steps"] == 12
    w = data["windows"][-1]["response"]
    assert set(w["fitted"]) >= {"mean", "p50", "p90", "max"} and w["from"]["mean"].startswith("completions/mean_length")
    code, out, _ = _run(capsys, FIX / LOGS["trl"], "--json", "-")
    assert json.loads(out) == data


def test_out_with_scenario_loads_and_passes_check(capsys, tmp_path):
    fitted = tmp_path / "fitted.yaml"
    code, out, _ = _run(capsys, FIX / LOGS["verl"], "--scenario", TINY, "--out", fitted)
    assert code == 0 and "LAST window" not in out and "last window (steps 10-12)" in out
    assert "workload.schedule (4 windows)" in out and "run.steps=12" in out
    text = fitted.read_text()
    assert "LAST window" in text
    scenario = load_scenario(fitted)
    data = yaml.safe_load(text)
    assert data["workload"]["response_tokens"]["kind"] == "lognormal"
    assert data["workload"]["response_tokens"]["max"] == 4096
    assert scenario.workload.prompt_tokens.kind == "lognormal"
    assert scenario.algorithm.prompts_per_step == 32  # the rest of the scenario kept
    assert main(["check", str(fitted)]) == 0


def test_out_writes_every_window_as_the_schedule(capsys, tmp_path):
    fitted = tmp_path / "fitted.yaml"
    assert _run(capsys, FIX / LOGS["verl"], "--scenario", TINY, "--out", fitted, "--json", tmp_path / "f.json")[0] == 0
    result = json.loads((tmp_path / "f.json").read_text())
    w = load_scenario(fitted).workload
    assert [x.from_step for x in w.schedule.windows] == [1, 4, 7, 10]
    for win, fit_win in zip(w.schedule.windows, result["windows"]):
        assert win.response_tokens.median == pytest.approx(fit_win["response"]["fitted"]["p50"], rel=1e-3)
        assert win.prompt_tokens is not None
    # The lengths each step draws are its window's; the last window is also the top-level steady state.
    assert w.at_step(5)[1] == w.schedule.windows[1].response_tokens
    assert w.at_step(12)[1].median == w.response_tokens.median
    # The case's base is the last window's steady state, without the schedule.
    case = tmp_path / "case.yaml"
    assert _run(capsys, FIX / LOGS["verl"], "--scenario", TINY, "--case", case)[0] == 0
    base = yaml.safe_load(case.read_text())["base"]["workload"]
    assert "schedule" not in base and base["response_tokens"] == yaml.safe_load(fitted.read_text())[
        "workload"]["schedule"]["windows"][-1]["response_tokens"]


def test_scenario_written_by_import_fits_text_fields_are_not_paths(capsys, tmp_path):
    """Issue 26 item 3: an imported scenario's long description (with slashes) is text, not a path;
    only path fields (here a histogram given relative to the scenario) are resolved."""
    (tmp_path / "lengths.csv").write_text("500,1\n1500,1\n")
    data = yaml.safe_load(TINY.read_text())
    data["description"] = "x" * 300 + " from verl/trainer/config/ppo_trainer.yaml " + "y" * 300
    data["workload"]["prompt_tokens"] = {"kind": "empirical", "path": "lengths.csv"}
    scenario = tmp_path / "imported.yaml"
    scenario.write_text(yaml.safe_dump(data))
    fitted = tmp_path / "fitted.yaml"
    code, _, err = _run(capsys, FIX / LOGS["wandb-csv"], "--scenario", scenario, "--out", fitted)
    assert code == 0, err
    out = yaml.safe_load(fitted.read_text())
    assert out["description"] == data["description"]
    assert out["workload"]["prompt_tokens"]["path"] == str((tmp_path / "lengths.csv").resolve())


def test_out_without_scenario_is_a_workload_fragment(capsys, tmp_path):
    frag = tmp_path / "frag.yaml"
    assert _run(capsys, FIX / LOGS["wandb-csv"], "--out", frag)[0] == 0
    data = yaml.safe_load(frag.read_text())
    assert list(data) == ["workload"] and list(data["workload"]) == ["response_tokens", "schedule"]  # no prompts here
    assert all("prompt_tokens" not in w for w in data["workload"]["schedule"]["windows"])
    load_scenario(TINY, {"workload": data["workload"]})


def test_case_file_validates(capsys, tmp_path):
    from twin.validation.validate import load_source, validate_source

    case = tmp_path / "case.yaml"
    code, _, _ = _run(capsys, FIX / LOGS["verl-jsonl"], "--scenario", TINY, "--case", case)
    assert code == 0
    source = load_source(case)
    assert source.tolerance == 0.2
    assert source.cases[0].expected == pytest.approx({"step_time_s": 72.8677, "generation": 52.7677,
                                                       "update_actor": 11.5, "old_logprob": 3.2, "reference": 3.0},
                                                      rel=1e-3)
    assert source.base["workload"]["response_tokens"]["kind"] == "lognormal"
    result = validate_source(case)  # the tiny base: two steps, a few seconds
    assert [f.metric for f in result.figures] == list(source.cases[0].expected)
    assert all(f.predicted > 0 for f in result.figures)


def test_case_from_trl_maps_step_time(capsys, tmp_path):
    from twin.validation.validate import load_source

    case = tmp_path / "case.yaml"
    assert _run(capsys, FIX / LOGS["trl"], "--scenario", TINY, "--case", case)[0] == 0
    assert list(load_source(case).cases[0].expected) == ["step_time_s"]


# --------------------------------------------------------------------------- errors
def _error(capsys, tmp_path, *argv) -> str:
    out = tmp_path / "never.yaml"
    code, _, err = _run(capsys, *argv, "--out", out)
    assert code == 2 and not out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("twin: error: ")
    return lines[0]


def test_unknown_format(capsys, tmp_path):
    line = _error(capsys, tmp_path, FIX / LOGS["verl"], "--format", "verk")
    assert "--format" in line and "did you mean 'verl'" in line


def test_undetectable_format(capsys, tmp_path):
    log = tmp_path / "notes.txt"
    log.write_text("hello\nworld\n")
    line = _error(capsys, tmp_path, log)
    assert "notes.txt" in line and "--format verl|trl|trl-console|wandb-csv|jsonl" in line


def test_non_numeric_value_names_file_line_and_key(capsys, tmp_path):
    log = tmp_path / "run.log"
    log.write_text("starting\nstep:1 - response_length/mean:900 - response_length/max:4096\n"
                   "step:2 - response_length/mean:12x - response_length/max:4096\n")
    line = _error(capsys, tmp_path, log)
    assert "run.log: line 3: response_length/mean" in line and "'12x'" in line and "a number" in line


def test_non_numeric_in_json_and_csv(capsys, tmp_path):
    j = tmp_path / "m.jsonl"
    j.write_text('{"step": 1, "response_length/mean": "lots", "response_length/max": 10}\n')
    assert "m.jsonl: line 1: response_length/mean" in _error(capsys, tmp_path, j)
    c = tmp_path / "w.csv"
    c.write_text("Step,run - response_length/mean,run - response_length/max\n1,100,200\n2,abc,200\n")
    assert "w.csv: line 3: response_length/mean" in _error(capsys, tmp_path, c)
    t = tmp_path / "trainer_state.json"
    t.write_text(json.dumps({"log_history": [{"step": 1, "completions/mean_length": None,
                                              "completions/max_length": 9}]}))
    line = _error(capsys, tmp_path, t)  # null is no value: the mean is missing
    assert "log_history[0]" in line and "completions/mean_length" in line


def test_missing_keys(capsys, tmp_path):
    some = tmp_path / "some.log"
    some.write_text("step:1 - response_length/max:4096 - timing_s/gen:3\n")
    line = _error(capsys, tmp_path, some)
    assert "some.log: line 1" in line and "response_length/mean" in line
    none = tmp_path / "none.jsonl"
    none.write_text('{"step": 1, "loss": 0.3}\n')
    line = _error(capsys, tmp_path, none)
    assert "none.jsonl" in line and "response_length/mean" in line and "completions/mean_length" in line
    nostep = tmp_path / "nostep.jsonl"
    nostep.write_text('{"response_length/mean": 10, "response_length/max": 20}\n')
    assert "nostep.jsonl: line 1" in _error(capsys, tmp_path, nostep)


def test_case_needs_scenario_and_timings(capsys, tmp_path):
    assert "--case needs --scenario" in _error(capsys, tmp_path, FIX / LOGS["verl"], "--case", tmp_path / "c.yaml")
    log = tmp_path / "m.jsonl"
    log.write_text('{"step": 1, "response_length/mean": 100, "response_length/max": 200}\n')
    line = _error(capsys, tmp_path, log, "--scenario", TINY, "--case", tmp_path / "c.yaml")
    assert "no timing" in line and "timing_s/gen" in line
    assert not (tmp_path / "c.yaml").exists()


def test_missing_log_and_bad_window(capsys, tmp_path):
    assert "log file not found" in _error(capsys, tmp_path, tmp_path / "nope.log")
    assert "--window" in _error(capsys, tmp_path, FIX / LOGS["verl"], "--window", "0")


@pytest.mark.parametrize("lines, words", [
    (["step:1 - response_length/mean:0 - response_length/max:0"], "every response length mean is 0"),
    (["step:1 - response_length/mean:100 - response_length/max:0 - response_length/clip_ratio:0.1"],
     "shorter than their mean"),
    (["step:1 - response_length/mean:1e300 - response_length/max:1e301"], "beyond any model's context"),
    (["step:1 - response_length/mean:100 - response_length/max:2000 - response_length/clip_ratio:2"], "a ratio"),
    (['{"step": 1, "x": ' + "[" * 50_000 + "]" * 50_000 + "}"], "nested deeper than"),
])
def test_a_log_the_fit_cannot_use_is_one_error_line(tmp_path, capsys, lines, words):
    log = tmp_path / ("run.jsonl" if lines[0].startswith("{") else "run.log")
    log.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("twin: error:") and words in err[0]


def test_a_clip_ratio_of_1e_300_is_no_clipping():
    assert fit(100.0, 2000.0, 1e-300, max_=2000.0).sigma > 0


REAL = FIX / "trl-real"


def test_case_says_when_the_scenario_does_not_describe_the_logged_run(capsys, tmp_path):
    """Issue 26 item 10: a CPU run of a tiny model (16 trajectories a step) against an H100 1.5B
    scenario of 8,192: the batch differs, said on stderr and in the case's assumptions."""
    case = tmp_path / "case.yaml"
    code, _, err = _run(capsys, REAL / "trainer_state.json", "--scenario", "grpo-1.5b-async", "--case", case)
    assert code == 0
    assert "does not describe the logged run: batch: the log's steps hold 928 tokens" in err
    assert "8,192 trajectories (512 prompts × 16)" in err
    assert "THE SCENARIO DOES NOT DESCRIBE THE LOGGED RUN: batch" in yaml.safe_load(case.read_text())["assumptions"]


def test_case_from_the_run_s_own_scenario_says_nothing(capsys, tmp_path):
    case = tmp_path / "case.yaml"
    code, _, err = _run(capsys, REAL / "trainer_state.json", "--scenario", REAL / "scenario.yaml", "--case", case)
    assert code == 0 and "does not describe" not in err
    assert "DOES NOT DESCRIBE" not in yaml.safe_load(case.read_text())["assumptions"]


@pytest.mark.parametrize("changes, said", [
    ({"cluster": {"nodes": 1, "gpus_per_node": 8, "gpu": "h100-sxm"}}, "far smaller or its devices far slower"),
    ({"model": "llama-3.1-70b", "cluster": {"nodes": 1, "gpus_per_node": 1, "gpu": "h100-sxm"}},
     "the run's model is smaller or its devices faster"),
])
def test_case_says_when_model_or_device_differ(capsys, tmp_path, changes, said):
    """Same batch and lengths as the log; only the model or the device changed."""
    data = yaml.safe_load((REAL / "scenario.yaml").read_text())
    data.update(changes)
    data["placement"] = {"mode": "colocated"}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data))
    code, _, err = _run(capsys, REAL / "trainer_state.json", "--scenario", scenario, "--case", tmp_path / "c.yaml")
    assert code == 0 and "model size or device" in err and said in err
    assert "batch:" not in err


def test_trl_console_output_reads_as_trainer_state_json():
    """Issue 26 item 11: TRL's printed dicts (not JSON, no step) read, numbered in order, the
    same figures as the trainer_state.json of the same run."""
    console = read_logs([REAL / "console.txt"])
    state = read_logs([REAL / "trainer_state.json"])
    assert console.formats[0].startswith("trl-console (detected from")
    assert [s.step for s in console.steps] == [s.step for s in state.steps] == list(range(1, 13))
    assert [s.values for s in console.steps] == [s.values for s in state.steps]


def test_trl_console_numpy_values_and_bad_dicts(tmp_path):
    log = tmp_path / "out.txt"
    log.write_text("{'completions/mean_length': np.float64(12.5), 'step_time': 0.2}\n"
                   "{'completions/mean_length': 14.0, 'step_time': np.float32(0.3)}\n")
    steps = read_logs([log]).steps
    assert [s.values["completions/mean_length"] for s in steps] == [12.5, 14.0]
    log.write_text("{'completions/mean_length': __import__('os').getcwd()}\n")
    with pytest.raises(InputError, match="not a printed Python dict"):
        read_logs([log])


def test_printed_dicts_given_as_jsonl_say_what_to_use(capsys, tmp_path):
    log = tmp_path / "out.jsonl"
    log.write_text("{'completions/mean_length': 22.875, 'step_time': 0.18}\n")
    line = _error(capsys, tmp_path, log, "--format", "jsonl")
    assert "a printed Python dict, not JSON" in line and "--format trl-console" in line
    assert "trainer_state.json" in line


@pytest.mark.parametrize("extra", [[], ["--learning"]])
def test_fit_never_writes_over_a_log_it_reads(tmp_path, capsys, extra):
    """`twin fit run.jsonl --json run.jsonl` once replaced the user's log by the fit (found by the
    surfaces fuzz): an output naming an input is one error, and the log stays as it was."""
    log = tmp_path / "run.jsonl"
    log.write_bytes((Path(__file__).parent / "fixtures" / "verl_metrics.jsonl").read_bytes())
    before = log.read_bytes()
    args = [str(log) + (":512" if extra else "")] + ([str(log) + ":1024"] if extra else [])
    assert main(["fit", *args, *extra, "--json", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would overwrite" in err[0] and log.read_bytes() == before
