"""The Plan tab (tui/widgets/plan.py, the app's "plan" job): a real, tiny plan driven by keys."""

from __future__ import annotations

from functools import partial

import pytest

pytest.importorskip("textual")
pytest.importorskip("textual_plotext")

from tui_helpers import SMALL, app_test, focused, press_and_settle, shown, tab_ready, table_rows, until  # noqa: E402

from tui.app import TwinApp  # noqa: E402
from tui.jobs import curve_budgets, run_plan  # noqa: E402
from tui.widgets.plan import PlanFormError, curve_text, parse_form  # noqa: E402

# A 1.5B model on 2 GPUs: a handful of candidates, 2 small steps each, the top 3 re-seeded.
PLANNED = "grpo-1.5b-async"
TOP = 3
SIZE = (100, 40)


def tiny_app() -> TwinApp:
    return TwinApp(PLANNED, dict(SMALL), planner=partial(run_plan, workers=1, top=TOP))


def test_form_and_curve_words():
    assert parse_form(" 64 ", "2") == (64, 2)
    for gpus, stale, field in (("", "1", "GPUs"), ("8x", "1", "GPUs"), ("0", "1", "GPUs"), ("8", "-1", "staleness")):
        with pytest.raises(PlanFormError, match=field):
            parse_form(gpus, stale)
    assert curve_budgets(64) == [32, 64, 128] and curve_budgets(1) == [1, 2]
    text = curve_text([(1, None), (2, 100.0), (4, 150.0)])
    assert text == "1 GPUs: nothing fits · 2 GPUs: 100/h · 4 GPUs: 150/h (75% efficient)"


@app_test
async def test_plan_tab_ranks_candidates_plots_the_curve_and_opens_a_row_in_the_loop():
    import twin

    app = tiny_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await tab_ready(pilot, "plan")
        await press_and_settle(pilot, "2", "enter")
        run = app.plan
        assert run is not None, app.query_one("RunStatus").text
        expected = twin.plan_budget(PLANNED, SMALL, gpus=2, max_staleness=1, top=TOP, workers=1)
        assert run.result.to_json() == expected.to_json()  # the planner's own answer, unchanged
        rows = table_rows(app, "#plan-table")
        ranked = [r.to_dict() for r in expected.ranked]
        assert [r[0] for r in rows] == [str(d["rank"]) for d in ranked]
        assert [r[7] for r in rows] == [f"{d['useful_trajectories_per_hour']:,.0f}" for d in ranked]
        assert [g for g, _ in run.curve] == [1, 2, 4]
        assert dict(run.curve)[2] == ranked[0]["useful_trajectories_per_hour"]
        assert all(u for _, u in run.curve)
        assert "GPUs" in shown(app, "#plan-curve") and app.query_one("#plan-curve").display
        assert "4 GPUs" in shown(app, "#plan-curve-text")

        await focused(pilot, "#plan-table")  # enter on a row opens that candidate
        await press_and_settle(pilot, "down", "enter")
        assert app.active_tab == "loop"
        opened = app.baseline.to_dict()
        second = ranked[1]
        assert opened["scenario"]["placement"]["mode"] == second["mode"]
        assert opened["step_time_s"] == pytest.approx(second["step_time_s"])
        assert opened["throughput"]["useful_trajectories_per_hour"] == pytest.approx(
            second["useful_trajectories_per_hour"])


@app_test
async def test_bad_budgets_are_explained_under_the_form():
    app = tiny_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        await tab_ready(pilot, "plan")
        await pilot.press("x", "enter")  # not a number: said at once, nothing runs
        await until(pilot, lambda: shown(app, "#plan-message").startswith("✗"), "the message")
        assert "GPUs: 'x'" in shown(app, "#plan-message") and app.jobs_finished == 0
        app.query_one("#plan-gpus").value = "2"
        app.query_one("#plan-staleness").value = "99"  # beyond the planner's bound: its own message
        await press_and_settle(pilot, "enter")
        text = shown(app, "#plan-message")
        assert text.startswith("✗") and "max-staleness" in text, text
        assert app.plan is None and app.is_running


@app_test
async def test_esc_cancels_a_plan_between_simulations():
    import time

    def endless(request, gpus, max_staleness, progress=None):
        """A planner that never ends by itself: only the cancel, raised from progress, stops it."""
        done = 0
        while True:
            done += 1
            progress(gpus, done, 10 ** 9, "simulating 2 steps")
            time.sleep(0.01)  # the worker thread's pace, not a wait of the test

    app = TwinApp(PLANNED, dict(SMALL), planner=endless)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await tab_ready(pilot, "plan")
        since = app.jobs_finished
        await pilot.press("2", "enter")
        await until(pilot, lambda: "simulating 2 steps" in app.query_one("RunStatus").text, "the plan's progress")
        await pilot.press("escape")
        await until(pilot, lambda: app.jobs_finished > since, "the cancel")
        assert shown(app, "#plan-message") == "cancelled" and app.plan is None
        assert app.query_one("RunStatus").text.startswith("Cancelled")


@app_test
async def test_the_plan_tab_ranks_by_time_to_target_when_asked():
    app = tiny_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await tab_ready(pilot, "plan")
        await pilot.press("2")
        await pilot.click("#plan-objective")
        assert str(app.query_one("#plan-objective").label) == "by time to target"
        since = app.jobs_finished
        await pilot.click("#plan-run")
        await until(pilot, lambda: app.jobs_finished > since, "the plan")
        run = app.plan
        assert run is not None and run.result.objective == "time_to_target"
        hours = [float(r[8].replace(",", "")) for r in table_rows(app, "#plan-table")]
        assert hours == sorted(hours) and len(hours) == len(run.result.ranked)
