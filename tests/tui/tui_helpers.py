"""Helpers for the TUI tests: small real runs, fixed recorded runs, what a widget shows.

Nothing here imports Textual at the top: every test module first calls
``pytest.importorskip("textual")``, so this folder skips cleanly without the ``tui`` extra.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).parent / "fixtures"
# Small enough that the whole folder runs in seconds: 2 steps of 16 prompts.
SMALL = {"run.steps": 2, "algorithm.prompts_per_step": 16}
SCENARIO = "grpo-8b-disaggregated"


def recorded(name: str):
    """A stored run (see fixtures/record.py) as a ``twin.api.Report``."""
    from twin.analysis.report import ReportData
    from twin.runner import Report
    from twin.sim.result import SimResult
    from twin.sim.timeline import Spans

    raw = json.loads((FIXTURES / f"{name}.json").read_text())
    s = raw["spans"]
    spans = Spans(resources=s["resources"], capacity=s["capacity"], busy=s["busy"],
                  truncated=s["truncated"], activities=s["activities"],
                  resource=np.array(s["resource"], np.int64), activity=np.array(s["activity"], np.int64),
                  start=np.array(s["start"]), end=np.array(s["end"]), step=np.array(s["step"], np.int64))
    # The TUI reads the report and the spans only; the scenario object is not needed.
    return Report(ReportData.model_validate(raw["data"]), None,
                  SimResult(plan=None, spans=spans, steps=[], gpus=raw["data"]["gpus"]))


def replay_recorded(request, progress=None):
    """A stand-in for ``tui.jobs.run_request`` that answers with the recorded runs."""
    if progress:
        progress(1, 2, 30.0)
        progress(2, 2, 60.0)
    changed = request.overrides.get("placement.rollout.gpus")
    return recorded("whatif-rollout-8" if changed == 8 else "baseline")


def shown(app, selector: str) -> str:
    """The plain text a widget shows (a Static or a custom widget's render())."""
    return app.query_one(selector).render().plain


def table_rows(app, selector: str) -> list[list[str]]:
    table = app.query_one(selector)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


# Waits end on what the screen shows, never on how long a step took: on a loaded machine the
# app can be seconds behind the keys. The deadline only turns a hang into a failure.
DEADLINE = 120.0


async def until(pilot, condition, what: str, timeout: float = DEADLINE) -> None:
    """Let the app run until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        await pilot.pause(0.05)


async def settle(pilot, since: int, jobs: int = 1, timeout: float = DEADLINE) -> None:
    """Wait until ``jobs`` simulations have ended on screen since ``since``, the app's
    ``jobs_finished`` read before the action that starts them.

    Waiting for ``app.job`` to be None instead would return at once when the key that starts
    the job has not been handled yet: before the job starts, the app looks idle too.
    """
    await until(pilot, lambda: pilot.app.jobs_finished >= since + jobs,
                f"{jobs} simulation(s) to finish", timeout)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def press_and_settle(pilot, *keys: str, jobs: int = 1, timeout: float = DEADLINE) -> None:
    """Press ``keys``, which start ``jobs`` simulations, and wait for their results on screen."""
    since = pilot.app.jobs_finished
    await pilot.press(*keys)
    await settle(pilot, since, jobs, timeout)


async def tab_ready(pilot, tab: str) -> None:
    """Wait until ``tab`` is shown and its main widget has the keys (the app hands it focus
    after a refresh, so keys pressed before then go elsewhere)."""
    from tui.app import TAB_FOCUS

    app = pilot.app
    target = app.query_one(TAB_FOCUS[tab])
    await until(pilot, lambda: app.active_tab == tab and (app.focused is target or not target.focusable),
                f"the {tab} tab to take the keys")


async def show_tab(pilot, key: str) -> None:
    """Press a tab's number key and wait for that tab to take the keys."""
    from tui.app import TABS

    await pilot.press(key)
    await tab_ready(pilot, TABS[int(key) - 1])


async def focused(pilot, selector: str) -> None:
    """Wait until the widget ``selector`` names (on the current screen) has the keys.
    Keys typed before then go to the widget focused before."""
    def has_keys() -> bool:
        found = list(pilot.app.screen.query(selector))  # none yet while a screen is being pushed
        return len(found) == 1 and pilot.app.focused is found[0]

    await until(pilot, has_keys, f"{selector} to take the keys")


def app_test(fn):
    """Run an ``async def`` test with asyncio, without needing an async pytest plugin."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    return run
