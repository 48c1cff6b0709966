"""Fixtures of the TUI tests (helpers live in tui_helpers.py)."""

from __future__ import annotations

import pytest

from tui_helpers import SCENARIO, SMALL


@pytest.fixture
def small_app():
    """An app on the disaggregated built-in, runs kept small."""
    from tui.app import TwinApp

    return TwinApp(SCENARIO, dict(SMALL))
