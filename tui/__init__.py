"""The capacity-planning TUI: ``twin tui [SCENARIO]`` (needs the ``tui`` extra, installed
from a clone: rltwin is not on a package index).

This package's top level imports nothing heavy, so ``twin`` can check for Textual first
(:func:`require_textual`) and print one clear line instead of a traceback.
"""

from __future__ import annotations

import importlib.util

from twin.errors import InputError

# rltwin is not on a package index: the extra installs from a clone of its repository.
INSTALL_HINT = 'pip install ".[tui]"'


def require_textual() -> None:
    """Raise :class:`twin.errors.InputError` (exit code 2 in ``twin``) when Textual, or
    textual-plotext (the Plan tab's curve), is missing."""
    for module, package in (("textual", "textual"), ("textual_plotext", "textual-plotext")):
        if importlib.util.find_spec(module) is None:
            raise InputError(f"the TUI needs the {package} package; from a clone of rltwin, install it "
                             f"with: {INSTALL_HINT}")
