"""Snapshots of the main screens at 80×24, on recorded runs (fixtures/record.py), so a
refined cost model does not change them. Update after a deliberate change of the screens:
``pytest tests/tui/test_snapshots.py --snapshot-update``, then look at the SVGs."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")
pytest.importorskip("pytest_textual_snapshot")

from tui.app import TwinApp  # noqa: E402
from tui_helpers import SCENARIO, SMALL, replay_recorded, settle  # noqa: E402


def recorded_app() -> TwinApp:
    return TwinApp(SCENARIO, dict(SMALL), simulate=replay_recorded, theme="textual-dark")


def after(*keys: str):
    """Run the recorded scenario (enter), then press ``keys``, letting each run settle."""

    async def drive(pilot) -> None:
        await pilot.press("enter")
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return drive


def test_loop_view(snap_compare):
    assert snap_compare(recorded_app(), run_before=after())


def test_verdict_table(snap_compare):
    assert snap_compare(recorded_app(), run_before=after("3"))


def test_replay_second_step(snap_compare):
    assert snap_compare(recorded_app(), run_before=after("4", "right"))


def test_whatif_beside_baseline(snap_compare):
    assert snap_compare(recorded_app(), run_before=after("5", "8", "enter"))
