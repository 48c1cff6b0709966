"""Every built-in scenario's and validation case's report, and the cheap built-ins' sensitivity
tables, byte for byte as pinned in ``tests/golden`` (``python tests/golden/make.py`` rewrites
them; a changed figure is named in its commit message)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
_spec = importlib.util.spec_from_file_location("golden_make", GOLDEN / "make.py")
make = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make)

OUTPUTS = make.outputs()


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_report_is_as_pinned(name):
    expected = (GOLDEN / f"{name}.json").read_text()
    assert OUTPUTS[name]() == expected, f"{name} changed: rerun tests/golden/make.py and name the change"
