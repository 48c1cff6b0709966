"""Snapshots of the main screens at 80×24, on recorded runs (fixtures/record.py), so a
refined cost model does not change them. Update after a deliberate change of the screens:
``pytest tests/tui/test_snapshots.py --snapshot-update``, then look at the SVGs."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")
pytest.importorskip("pytest_textual_snapshot")

from tui.app import TwinApp  # noqa: E402
from tui_helpers import (SCENARIO, SMALL, press_and_settle, replay_recorded, show_tab, shown,  # noqa: E402
                         tab_ready, until)


def recorded_app() -> TwinApp:
    return TwinApp(SCENARIO, dict(SMALL), simulate=replay_recorded, theme="textual-dark")


async def baseline(pilot) -> None:
    """Run the recorded scenario (enter) and wait for the loop tab it opens to take the keys."""
    from textual.widgets import Input

    # A blinking cursor is shown or not depending on when the screenshot falls (on a loaded
    # machine, often over 0.5 s after the last key): keep it shown.
    for box in pilot.app.query(Input):
        box.cursor_blink = False
    await press_and_settle(pilot, "enter")
    await tab_ready(pilot, "loop")


async def verdict(pilot) -> None:
    await baseline(pilot)
    await show_tab(pilot, "3")


async def replay_second_step(pilot) -> None:
    await baseline(pilot)
    await show_tab(pilot, "4")
    await pilot.press("right")
    await until(pilot, lambda: shown(pilot.app, "#replay-header").startswith("Step 2/2"), "step 2")


async def whatif_rollout_8(pilot) -> None:
    await baseline(pilot)
    await show_tab(pilot, "5")  # its rollout GPUs field takes the keys, its text selected
    await press_and_settle(pilot, "8", "enter")


def test_loop_view(snap_compare):
    assert snap_compare(recorded_app(), run_before=baseline)


def test_verdict_table(snap_compare):
    assert snap_compare(recorded_app(), run_before=verdict)


def test_replay_second_step(snap_compare):
    assert snap_compare(recorded_app(), run_before=replay_second_step)


def test_whatif_beside_baseline(snap_compare):
    assert snap_compare(recorded_app(), run_before=whatif_rollout_8)
