"""The capacity-planning TUI: ``twin tui [SCENARIO]`` (needs the ``tui`` extra, installed
from a clone: rltwin is not on a package index).

This package's top level imports nothing heavy, so ``twin`` can check for Textual first
(:func:`require_textual`) and print one clear line instead of a traceback.
"""

from __future__ import annotations

import importlib.util

# rltwin is not on a package index: the extra installs from a clone of its repository.
INSTALL_HINT = 'pip install ".[tui]"'


def require_textual() -> None:
    """Raise :class:`twin.errors.InputError` (exit code 2 in ``twin``) when Textual is missing."""
    if importlib.util.find_spec("textual") is None:
        from twin.errors import InputError

        raise InputError("the TUI needs the textual package; from a clone of rltwin, install it "
                         f"with: {INSTALL_HINT}")
