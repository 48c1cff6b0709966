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
    return Report(raw["data"], None, SimResult(plan=None, spans=spans, steps=[], gpus=raw["data"]["gpus"]))


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


async def settle(pilot, timeout: float = 30.0) -> None:
    """Wait for the simulation worker and for its result to reach the screen."""
    deadline = time.monotonic() + timeout
    while pilot.app.job is not None:
        assert time.monotonic() < deadline, "the simulation did not finish"
        await pilot.pause(0.05)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def app_test(fn):
    """Run an ``async def`` test with asyncio, without needing an async pytest plugin."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        asyncio.run(fn(*args, **kwargs))

    return run
