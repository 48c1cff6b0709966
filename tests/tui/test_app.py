"""The TUI driven by keys, as a user would, with assertions on what it shows."""

from __future__ import annotations

import json
import re
import threading

import pytest

pytest.importorskip("textual")

from tui_helpers import (  # noqa: E402
    SCENARIO,
    SMALL,
    app_test,
    focused,
    press_and_settle,
    replay_recorded,
    settle,
    show_tab,
    shown,
    table_rows,
    until,
)

import twin  # noqa: E402
from tui.app import TwinApp  # noqa: E402
from tui.figures import LINK_TITLE  # noqa: E402
from tui.screens import ExportScreen, HelpScreen  # noqa: E402
from tui.widgets.loop import NO_RUN  # noqa: E402

SIZE = (80, 24)


@app_test
async def test_enter_runs_the_scenario_and_the_loop_highlights_the_binding_link(small_app):
    expected = twin.simulate(SCENARIO, **SMALL).binding_link
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        assert small_app.active_tab == "loop", small_app.query_one("RunStatus").text
        loop = shown(small_app, "#loop-text")
        binding_lines = [line for line in loop.splitlines() if "◄ binds" in line]
        assert len(binding_lines) == 1
        assert LINK_TITLE[expected] in binding_lines[0]
        assert "Diagnosis: " + LINK_TITLE[expected] in loop.replace("\n", " ")
        assert "✓" in small_app.query_one("RunStatus").text


@app_test
async def test_verdict_tab_ranks_the_links(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "3")
        data = small_app.baseline.to_dict()
        rows = table_rows(small_app, "#verdict-links")
        assert [r[0].strip("► ").strip() for r in rows] == [LINK_TITLE[b["link"]] for b in data["bottleneck"]]
        assert rows[0][0].startswith("►")
        shares = [float(r[1].rstrip("%")) for r in rows]
        assert shares == sorted(shares, reverse=True)
        assert shown(small_app, "#verdict-diagnosis").startswith("Diagnosis:")


@app_test
async def test_replay_scrubs_step_by_step_with_the_arrow_keys(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "4")
        header = lambda: shown(small_app, "#replay-header")  # noqa: E731
        assert header().startswith("Step 1/2")
        await pilot.press("right")
        await until(pilot, lambda: header().startswith("Step 2/2"), "step 2")
        await pilot.press("right")  # past the last step: stays
        assert header().startswith("Step 2/2")
        await pilot.press("left")  # handled after the right above, keys keep their order
        await until(pilot, lambda: header().startswith("Step 1/2"), "step 1")
        chart = shown(small_app, "UtilisationChart")
        assert chart.splitlines()[0].startswith("rollout")
        timeline = shown(small_app, "StepTimeline")
        resources = small_app.baseline.result.spans.resources
        assert all(any(line.startswith(r) for line in timeline.splitlines()) for r in resources)


@app_test
async def test_whatif_edit_reruns_and_shows_the_new_figures_beside_the_baseline(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "5")
        assert small_app.focused.id == "whatif-placement-rollout-gpus"
        assert small_app.focused.value == "16"
        await press_and_settle(pilot, "8", "enter")  # the field's text is selected on focus: 8 replaces 16
        assert small_app.whatif.to_dict()["scenario"]["placement"]["rollout"]["gpus"] == 8
        result = shown(small_app, "#whatif-result")
        step_line = next(line for line in result.splitlines() if line.startswith("step time"))
        base, new = small_app.baseline.to_dict()["step_time_s"], small_app.whatif.to_dict()["step_time_s"]
        assert f"{base:,.1f} s" in step_line and f"{new:,.1f} s" in step_line
        assert f"{(new - base) / base * 100:+.1f}%" in step_line
        gpus_line = next(line for line in result.splitlines() if line.startswith("GPUs"))
        assert gpus_line.split()[1:3] == ["32", "24"]
        # How busy a pool is informs, it is not judged; its change is in points.
        for line in result.splitlines():
            if line.startswith(("rollout busy", "trainer busy", "binding share")):
                assert "✓" not in line and "✗" not in line
                assert not re.search(r"[+-][0-9.]+%", line), line  # no relative change
                assert line.rstrip().endswith(("pt", "pts", "%")), line
        assert "rollout GPUs 16→8" in shown(small_app, "#whatif-message")


@pytest.mark.parametrize("typed, message", [
    ("abc", "rollout GPUs: 'abc' is not a whole number"),
    ("100", "placement.rollout.gpus"),  # the scenario's own validation: more GPUs than the cluster
])
@app_test
async def test_bad_whatif_input_gets_an_inline_message_not_a_crash(small_app, typed, message):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "5")
        await pilot.press(*typed, "enter")
        await until(pilot, lambda: shown(small_app, "#whatif-message").startswith("✗"), "the message")
        text = shown(small_app, "#whatif-message")
        assert message in text
        assert small_app.jobs_finished == 1  # the baseline only
        assert small_app.job is None and small_app.whatif is None
        assert small_app.is_running


@app_test
async def test_mode_and_response_cap_apply_to_a_scenario_with_defaults():
    """colocated → disaggregated must not ask for all GPUs twice (only changed fields apply),
    and a cap on the default response lengths keeps their distribution."""
    app = TwinApp("grpo-7b-colocated", dict(SMALL))
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "5")
        app.query_one("#whatif-workload-response_tokens-max").focus()
        await focused(pilot, "#whatif-workload-response_tokens-max")
        await pilot.press(*"8192", "escape")
        await until(pilot, lambda: app.query_one("#whatif-workload-response_tokens-max").value == "8192",
                    "the typed cap")
        await pilot.click("#whatif-mode")
        await until(pilot, lambda: app.query_one("#whatif-mode").expanded, "the mode list to open")
        await pilot.press("down", "enter")  # the option after colocated: disaggregated
        await until(pilot, lambda: str(app.query_one("#whatif-mode").value) == "disaggregated", "the mode")
        await press_and_settle(pilot, "r")
        placement = app.whatif.to_dict()["plan"]
        assert placement["mode"] == "disaggregated"
        assert placement["rollout_gpus"] + placement["trainer_gpus"] <= 32
        responses = app.whatif.to_dict()["scenario"]["workload"]["response_tokens"]
        assert responses["max"] == 8192
        assert responses["kind"] == app.baseline.to_dict()["scenario"]["workload"]["response_tokens"]["kind"]
        assert "mode colocated→disaggregated" in shown(app, "#whatif-message")


@app_test
async def test_esc_cancels_a_run_and_the_interface_stays_usable():
    steps_run = []
    release = threading.Event()

    def slow(request, progress):
        for step in range(1, 1001):
            release.wait(0.01)
            steps_run.append(step)
            progress(step, 1000, step * 10.0)  # raises once esc was pressed
        raise AssertionError("the run was not cancelled")

    app = TwinApp(SCENARIO, dict(SMALL), simulate=slow)
    async with app.run_test(size=SIZE) as pilot:
        since = app.jobs_finished
        await pilot.press("enter")
        await until(pilot, lambda: steps_run, "the run to start")
        assert "Simulating" in app.query_one("RunStatus").text
        await pilot.press("escape")
        await settle(pilot, since)
        assert "Cancelled" in app.query_one("RunStatus").text
        assert len(steps_run) < 1000
        assert app.baseline is None
        await show_tab(pilot, "2")
        assert shown(app, "#loop-text") == NO_RUN.replace("[b]", "").replace("[/]", "")


@app_test
async def test_a_failing_simulation_is_reported_not_raised():
    def broken(request, progress):
        raise RuntimeError("kernel exploded")

    app = TwinApp(SCENARIO, dict(SMALL), simulate=broken)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        assert "RuntimeError: kernel exploded" in app.query_one("RunStatus").text
        assert app.is_running


@app_test
async def test_compare_runs_two_scenarios_side_by_side(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "6")
        a, b = small_app.query_one("#compare-a").value, small_app.query_one("#compare-b").value
        assert a == SCENARIO and b != SCENARIO
        await press_and_settle(pilot, "r")
        table = shown(small_app, "#compare-table")
        ra, rb = (twin.simulate(ref, **SMALL) for ref in (a, b))
        step_line = next(line for line in table.splitlines() if line.startswith("step time"))
        assert f"{ra.step_time_s:,.1f} s" in step_line and f"{rb.step_time_s:,.1f} s" in step_line
        assert "model" in table and ra.to_dict()["scenario"]["model"]["name"] in table


@app_test
async def test_export_writes_the_report_and_the_trace_where_typed(small_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short relative paths: each typed key costs a refresh
    report_path, trace_path = tmp_path / "r.json", tmp_path / "out" / "t.json"
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await pilot.press("x")
        await focused(pilot, "#export-report")
        assert isinstance(small_app.screen, ExportScreen)
        await pilot.press(*"r.json", "tab")
        await focused(pilot, "#export-trace")  # keys typed before the tab is handled stay above
        await pilot.press(*"out/t.json", "enter")
        await until(pilot, lambda: not isinstance(small_app.screen, ExportScreen), "the export to close")
        assert report_path.read_text() == small_app.baseline.to_json()
        events = json.loads(trace_path.read_text())["traceEvents"]
        assert any(e["ph"] == "X" for e in events)


@app_test
async def test_export_to_a_folder_is_refused_inline(small_app, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await pilot.press("x")
        await focused(pilot, "#export-report")
        await pilot.press(*"dir", "enter")
        refusal = lambda: shown(small_app.screen, "#export-message")  # noqa: E731
        await until(pilot, lambda: "the report path is a folder" in refusal(), "the refusal")
        assert isinstance(small_app.screen, ExportScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(small_app.screen, ExportScreen), "the export to close")


@app_test
async def test_help_opens_on_question_mark_and_closes_on_escape(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(small_app.screen, HelpScreen), "the help")
        assert "Reading the verdict" in shown(small_app.screen, "#help-text")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(small_app.screen, HelpScreen), "the help to close")


@app_test
async def test_verdict_shows_marginal_gains_when_the_report_has_them(small_app):
    from tui_helpers import recorded

    class Judged:  # a verdict as the report sees one (twin.runner.Judgement)
        def gain_by_link(self):
            return {}

        def to_dict(self):
            return {
                "diagnosis": "rollout waits on its longest responses: async buys more than GPUs",
                "sensitivity": [
                    {"pressure": "staleness+1", "description": "one more step off-policy",
                     "useful_trajectories_per_hour": 50_000.0, "gain": 0.4},
                    {"pressure": "rollout_gpus×2", "description": "twice the engines",
                     "useful_trajectories_per_hour": 40_000.0, "gain": 0.1},
                ],
            }

    def with_verdict(request, progress):
        return recorded("baseline").with_verdict(Judged())

    app = TwinApp(SCENARIO, dict(SMALL), simulate=with_verdict)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        assert "async buys more than GPUs" in shown(app, "#loop-text").replace("\n", " ")
        await show_tab(pilot, "3")
        rows = table_rows(app, "#verdict-gains")
        assert rows == [["staleness+1", "+40%", "50,000", "one more step off-policy"],
                        ["rollout_gpus×2", "+10%", "40,000", "twice the engines"]]


@app_test
async def test_open_a_scenario_file_from_the_picker(tmp_path, monkeypatch):
    from twin.config.registry import builtin_scenarios_dir

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mine.yaml"
    path.write_text((builtin_scenarios_dir() / f"{SCENARIO}.yaml").read_text().replace(
        f"name: {SCENARIO}", "name: my-own-run"))
    app = TwinApp(None, dict(SMALL))
    async with app.run_test(size=SIZE) as pilot:
        await focused(pilot, "#picker-list")  # the list takes focus once mounted
        await pilot.press("o")
        await focused(pilot, "#picker-open")
        await pilot.press(*"mine.yaml", "enter")
        await until(pilot, lambda: "my-own-run" in shown(app, "#picker-params"), "the file's scenario")
        await focused(pilot, "#picker-list")  # back on the list, where enter runs the highlighted
        await press_and_settle(pilot, "enter")
        assert app.baseline.to_dict()["scenario"]["name"] == "my-own-run"


@app_test
async def test_g_measures_the_marginal_gains_and_the_verdict_joins_the_report(small_app):
    pytest.importorskip("twin.studies.verdict")
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await press_and_settle(pilot, "g")
        assert small_app.active_tab == "verdict"
        verdict = small_app.baseline.to_dict()["verdict"]
        rows = table_rows(small_app, "#verdict-gains")
        assert [r[0] for r in rows] == [g["pressure"] for g in verdict["marginal_gains"]]
        assert shown(small_app, "#verdict-diagnosis") == "Diagnosis: " + verdict["diagnosis"]
        assert verdict["diagnosis"] in shown(small_app, "#loop-text").replace("\n", " ")


def _write_scenario(folder, file: str, name: str) -> None:
    from twin.config.registry import builtin_scenarios_dir

    (folder / file).write_text((builtin_scenarios_dir() / f"{SCENARIO}.yaml").read_text().replace(
        f"name: {SCENARIO}", f"name: {name}"))


async def _open(pilot, file: str) -> None:
    """o, the path, enter: the file joins the picker's list, highlighted."""
    await pilot.press("o")
    await focused(pilot, "#picker-open")
    await pilot.press(*file, "enter")
    await focused(pilot, "#picker-list")


@app_test
async def test_files_opened_later_join_compares_lists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write_scenario(tmp_path, "mine.yaml", "my-own-run")
    _write_scenario(tmp_path, "other.yaml", "my-other-run")
    app = TwinApp(None, dict(SMALL), simulate=replay_recorded)
    async with app.run_test(size=SIZE) as pilot:
        await focused(pilot, "#picker-list")
        await _open(pilot, "mine.yaml")
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "6")  # A: the file just run
        assert app.query_one("#compare-a").value == "mine.yaml"
        await press_and_settle(pilot, "r")
        assert "step time" in shown(app, "#compare-table")
        await show_tab(pilot, "1")  # Compare was visited: its lists exist already
        await _open(pilot, "other.yaml")
        await show_tab(pilot, "6")
        assert "step time" in shown(app, "#compare-table")  # the new option keeps the table
        assert app.query_one("#compare-a").value == "mine.yaml"
        # Choose the newest option (the last) as B with the keys, and compare.
        await pilot.press("tab")
        await focused(pilot, "#compare-b")
        await pilot.press("enter")
        await until(pilot, lambda: app.query_one("#compare-b").expanded, "the list of B to open")
        await pilot.press("end", "enter")
        await until(pilot, lambda: app.query_one("#compare-b").value == "other.yaml", "other.yaml as B")
        await press_and_settle(pilot, "r")
        assert "A mine with run.steps=2" in shown(app, "#compare-message")
        assert "B other with run.steps=2" in shown(app, "#compare-message")


@app_test
async def test_digits_in_the_whatif_form_never_leave_it_and_enter_runs_the_form(small_app):
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "5")
        baseline = small_app.baseline
        # Focus left the field (a click on the result): "100" and enter stay in the form.
        await pilot.click("#whatif-result")
        await focused(pilot, "#whatif-right")
        await pilot.press("1", "0", "0", "enter")
        message = lambda: shown(small_app, "#whatif-message")  # noqa: E731
        await until(pilot, lambda: "Nothing changed" in message(), "the form's answer to enter")
        assert small_app.active_tab == "whatif"
        assert small_app.jobs_finished == 1 and small_app.baseline is baseline  # nothing ran
        # On the mode select, a digit stays too; enter runs the form, as the hint says (issue 26
        # item 19: it reopened the list); space opens the list.
        small_app.query_one("#whatif-mode").focus()
        await focused(pilot, "#whatif-mode")
        small_app.query_one("WhatIfForm").say("")
        await pilot.press("1", "enter")
        await until(pilot, lambda: "Nothing changed" in message(), "the form's answer to enter on the mode")
        assert not small_app.query_one("#whatif-mode").expanded
        await pilot.press("space")
        await until(pilot, lambda: small_app.query_one("#whatif-mode").expanded, "the mode list to open")
        assert small_app.active_tab == "whatif"
        await pilot.press("escape")
        await until(pilot, lambda: not small_app.query_one("#whatif-mode").expanded, "the list to close")
        # esc leaves the form: then a digit switches tabs.
        await pilot.press("escape")
        await until(pilot, lambda: small_app.focused is None, "the form to be left")
        await show_tab(pilot, "1")
        assert small_app.jobs_finished == 1


@app_test
async def test_a_scenario_already_simulated_is_not_simulated_again():
    simulated = []

    def counting(request, progress=None):
        simulated.append(request)
        return replay_recorded(request, progress)

    app = TwinApp(SCENARIO, dict(SMALL), simulate=counting)
    async with app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "6")
        b = app.query_one("#compare-b").value
        await press_and_settle(pilot, "r")
        assert [r.ref for r in simulated] == [SCENARIO, b]  # A is the baseline just run
        assert "step time" in shown(app, "#compare-table")
        await press_and_settle(pilot, "r")
        assert len(simulated) == 2
        await show_tab(pilot, "5")
        await press_and_settle(pilot, "8", "enter")
        assert len(simulated) == 3 and simulated[-1].overrides["placement.rollout.gpus"] == 8
        await press_and_settle(pilot, "enter")  # the same what-if again
        assert len(simulated) == 3
        assert app.whatif.to_dict()["scenario"]["placement"]["rollout"]["gpus"] == 8


@app_test
async def test_tables_use_the_width_of_the_terminal():
    app = TwinApp(SCENARIO, dict(SMALL), simulate=replay_recorded)
    async with app.run_test(size=(120, 30)) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "4")
        assert "…" not in shown(app, "#replay-header")  # every phase of the step, on one line
        await show_tab(pilot, "6")
        await press_and_settle(pilot, "r")
        table = lambda: shown(app, "#compare-table")  # noqa: E731
        assert "16 GPUs, tp 1, continuous batching" in table() and "…" not in table()
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: "…" in table(), "the parameters to be cut to 80 columns")
        width = app.query_one("#compare-table").size.width
        assert all(len(line) <= width for line in table().splitlines())
        await pilot.resize_terminal(120, 30)
        await until(pilot, lambda: "…" not in table(), "the parameters to use 120 columns again")


@app_test
async def test_compare_s_a_follows_the_last_run_until_chosen_by_hand(small_app):
    """Issue 26 item 19: docs/tui.md says A defaults to the last run; it stayed the first."""
    async with small_app.run_test(size=SIZE) as pilot:
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "6")
        assert small_app.query_one("#compare-a").value == SCENARIO
        await show_tab(pilot, "1")
        await pilot.press("down")
        await press_and_settle(pilot, "enter")
        second = small_app.baseline_request.ref
        assert second != SCENARIO
        await show_tab(pilot, "6")
        assert small_app.query_one("#compare-a").value == second
        # chosen by hand: A stays
        small_app.query_one("#compare-a").value = SCENARIO
        await until(pilot, lambda: small_app.query_one("CompareView").a_chosen, "A chosen by hand")
        await show_tab(pilot, "1")
        await press_and_settle(pilot, "enter")
        await show_tab(pilot, "6")
        assert small_app.query_one("#compare-a").value == SCENARIO


@app_test
async def test_a_status_too_long_for_100_columns_ends_in_an_ellipsis(small_app):
    from textual.geometry import Region

    async with small_app.run_test(size=(100, 30)) as pilot:
        small_app.query_one("RunStatus").finished("✓ " + "the plan and its best candidate " * 6)
        await pilot.pause()
        text = small_app.query_one("#status-text")
        line = text.render_lines(Region(0, 0, text.size.width, 1))[0].text.rstrip()
        assert line.endswith("…") and len(line) <= 98
