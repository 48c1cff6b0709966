"""The TUI's arithmetic and rules on their own: busy fractions, form → overrides, deltas,
the missing-Textual message, export."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytest.importorskip("textual")

from tui_helpers import recorded  # noqa: E402

from tui import require_textual  # noqa: E402
from tui.app import main  # noqa: E402
from tui.export import export  # noqa: E402
from tui.figures import compare, link_figures  # noqa: E402
from tui.timeline import busy_fraction, dominant_activity  # noqa: E402
from tui.widgets.whatif import FormError, form_overrides, scenario_overrides  # noqa: E402
from twin.errors import InputError  # noqa: E402
from twin.sim.timeline import Timeline  # noqa: E402


def spans_of(*items, units: float = 1.0):
    tl = Timeline()
    for resource, activity, start, end in items:
        tl.resource(resource, units)
        tl.add(resource, activity, start, end)
    return tl.freeze()


def test_busy_fraction_counts_overlap_per_bucket_and_unit():
    spans = spans_of(("pool/a", "x", 0.0, 10.0), ("pool/a", "x", 5.0, 10.0), units=2.0)
    frac = busy_fraction(spans, [0], np.array([0.0, 5.0, 10.0, 20.0]))
    assert frac.tolist() == [0.5, 1.0, 0.0]


def test_busy_fraction_of_a_span_inside_one_bucket_and_across_many():
    spans = spans_of(("r/a", "x", 1.0, 2.0), ("r/a", "x", 3.0, 7.0))
    frac = busy_fraction(spans, [0], np.linspace(0.0, 8.0, 5))  # buckets of 2 s
    assert np.allclose(frac, [0.5, 0.5, 1.0, 0.5])


def test_busy_fraction_matches_brute_force_on_random_spans():
    rng = np.random.default_rng(3)
    starts = rng.uniform(0, 100, 200)
    ends = starts + rng.exponential(5, 200)
    spans = spans_of(*(("r/a", "x", s, e) for s, e in zip(starts, ends)), units=8.0)
    edges = np.linspace(0, 120, 25)
    expected = [sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in zip(starts, ends)) / (8.0 * (hi - lo))
                for lo, hi in zip(edges[:-1], edges[1:])]
    assert np.allclose(busy_fraction(spans, [0], edges), np.clip(expected, 0, 1))


def test_dominant_activity_is_the_one_busiest_in_each_bucket():
    spans = spans_of(("t/pool", "forward", 0.0, 3.0), ("t/pool", "optimizer", 3.0, 4.0))
    assert dominant_activity(spans, 0, np.array([0.0, 2.0, 4.0, 6.0])) == ["forward", "forward", None]


SCENARIO = {"placement": {"mode": "colocated", "rollout": {"gpus": 32}, "trainer": {"gpus": 32}},
            "reward": {"kind": "rule"}, "algorithm": {"staleness": 0, "prompts_per_step": 512,
                                                      "responses_per_prompt": 16},
            "workload": {"response_tokens": {"kind": "mixture", "max": 32768.0, "components": []}}}


def typed(**changes):
    base = {"placement.rollout.gpus": "32", "placement.trainer.gpus": "32", "reward.workers": "",
            "algorithm.staleness": "0", "algorithm.prompts_per_step": "512",
            "algorithm.responses_per_prompt": "16", "workload.response_tokens.max": "32768",
            "placement.mode": "colocated"}
    return {**base, **changes}


def test_only_changed_fields_become_overrides():
    assert form_overrides(typed(), SCENARIO) == {}
    assert form_overrides(typed(**{"placement.mode": "async", "algorithm.staleness": " 2 "}), SCENARIO) == {
        "placement.mode": "async", "algorithm.staleness": 2}


def test_a_number_that_is_not_whole_names_its_field():
    with pytest.raises(FormError, match="prompts/step: '1.5' is not a whole number"):
        form_overrides(typed(**{"algorithm.prompts_per_step": "1.5"}), SCENARIO)


def test_a_response_cap_carries_its_whole_distribution():
    changes = form_overrides(typed(**{"workload.response_tokens.max": "8,192"}), SCENARIO)
    assert scenario_overrides(changes, SCENARIO) == {
        "workload.response_tokens": {"kind": "mixture", "max": 8192, "components": []}}


def test_compare_marks_direction_by_what_is_better():
    base, other = recorded("baseline").to_dict(), recorded("whatif-rollout-8").to_dict()
    rows = {r.label: r for r in compare(base, other)}
    slower = other["step_time_s"] > base["step_time_s"]
    assert rows["step time"].verdict == ("worse" if slower else "better")
    assert rows["useful traj/h"].verdict == ("worse" if slower else "better")
    assert rows["GPUs"].delta == "-25.0%" and rows["GPUs"].verdict == ""
    same = compare(base, base)
    assert all(r.delta == "" and r.verdict == "" for r in same)


def report(step_s=10.0, useful=100.0, rollout=0.5, trainer=0.5, share=0.5, gpus=32):
    """The figures :func:`compare` reads, nothing else."""
    return {"step_time_s": step_s, "gpus": {"rollout": gpus // 2, "trainer": gpus - gpus // 2},
            "throughput": {"tokens_per_s": 1000.0 / step_s, "tokens_per_s_per_gpu": 1000.0 / step_s / gpus,
                           "trajectories_per_hour": useful, "useful_trajectories_per_hour": useful},
            "bottleneck": [{"link": "rollout", "critical_path_share": share}],
            "utilization": {"rollout": rollout, "trainer": trainer}}


def test_only_the_objective_is_judged_and_fractions_change_in_points():
    rows = {r.label: r for r in compare(report(), report(step_s=9.0, useful=110.0, rollout=0.56,
                                                                trainer=0.4, share=0.51))}
    assert (rows["step time"].delta, rows["step time"].verdict) == ("-10.0%", "better")
    assert (rows["useful traj/h"].delta, rows["useful traj/h"].verdict) == ("+10.0%", "better")
    # A busier or idler pool is information, not good or bad; its change is in points.
    assert (rows["rollout busy"].delta, rows["rollout busy"].verdict) == ("+6 pts", "")
    assert (rows["trainer busy"].delta, rows["trainer busy"].verdict) == ("-10 pts", "")
    assert (rows["binding share"].delta, rows["binding share"].verdict) == ("+1 pt", "")
    assert rows["tokens/s"].verdict == rows["traj/h"].verdict == ""


def test_a_change_within_noise_is_marked_the_same():
    rows = {r.label: r for r in compare(report(), report(step_s=10.01, useful=99.9, rollout=0.502))}
    assert (rows["step time"].delta, rows["step time"].verdict) == ("+0.1%", "same")
    assert (rows["useful traj/h"].delta, rows["useful traj/h"].verdict) == ("-0.1%", "same")
    assert rows["rollout busy"].delta == ""  # 50% and 50% as shown: no change to show
    slower = {r.label: r for r in compare(report(), report(step_s=10.2))}["step time"]
    assert (slower.delta, slower.verdict) == ("+2.0%", "worse")


def test_comparison_columns_take_the_width_they_are_given():
    from tui.widgets.compare import comparison_markup, parameters_markup

    base = recorded("baseline").to_dict()
    rows = compare(base, base)
    wide = comparison_markup(rows, "baseline", "what-if", width=120)
    assert "…" not in wide and max(map(len, wide.splitlines())) < 60
    narrow = comparison_markup(rows, "a long name for A", "a long name for B", width=40)
    assert "a long nam…" in narrow
    params = parameters_markup(base["scenario"], base["scenario"], width=116)
    assert "16 GPUs, tp 1, continuous batching" in params and "…" not in params
    cut = parameters_markup(base["scenario"], base["scenario"], width=76)
    assert "…" in cut and all(len(line) <= 76 for line in cut.replace("[b]", "").replace(
        "[/]", "").replace("[$text-muted]", "").splitlines())


def test_loop_links_follow_the_loop_and_mark_one_binding_link():
    data = recorded("baseline").to_dict()
    figures = link_figures(data)
    assert [f.link for f in figures] == ["rollout", "reward", "optimization", "weight_sync"]
    assert [f.link for f in figures if f.binding] == [data["bottleneck"][0]["link"]]


@pytest.mark.parametrize("missing, package", [("textual", "textual"), ("textual_plotext", "textual-plotext")])
def test_without_textual_the_tui_says_how_to_install_it(monkeypatch, capsys, missing, package):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == missing else real(name, *a))
    with pytest.raises(InputError, match=rf'needs the {package} package; from a clone of rltwin.*pip install "\.\[tui\]"'):
        require_textual()
    assert main(["grpo-8b-disaggregated"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install ".[tui]"' in err


def test_a_bad_scenario_fails_before_the_screen_opens(capsys):
    assert main(["no-such-scenario"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("twin: error: ") and "unknown built-in scenario" in err and err.count("\n") == 1


def test_export_builds_both_files_before_writing_either(tmp_path):
    report = recorded("baseline")
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="trace path is a folder"):
        export(report, str(tmp_path / "r.json"), str(tmp_path / "folder"))
    assert not (tmp_path / "r.json").exists()
    assert export(report, str(tmp_path / "r.json"), "") == [str(tmp_path / "r.json")]
    assert json.loads((tmp_path / "r.json").read_text()) == report.to_dict()


def test_a_colocated_preview_says_its_gpus_are_shared_not_none():
    """Issue 26 item 19: the preview showed `None GPUs` for colocated scenarios."""
    from tui.figures import scenario_summary
    from twin.config.load import load_scenario

    rows = dict(scenario_summary(load_scenario("grpo-7b-colocated").model_dump(mode="json")))
    assert "None" not in rows["rollout"] and "None" not in rows["trainer"]
    assert rows["rollout"].startswith("32 GPUs, shared") and rows["trainer"].startswith("32 GPUs, shared")
    alone = dict(scenario_summary(load_scenario("grpo-8b-disaggregated").model_dump(mode="json")))
    assert alone["rollout"].split(",")[0].endswith(" GPUs") and "shared" not in alone["rollout"]


def test_the_loop_s_diagnosis_names_the_key_not_a_cli_command():
    from tui.figures import diagnosis

    data = {"bottleneck": [{"link": "rollout", "critical_path_share": 0.6, "load": 0.3, "binds": True,
                            "saturated": False}]}
    line = diagnosis(data)
    assert "twin whatif" not in line and "press g in the Verdict tab" in line
