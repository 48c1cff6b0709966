"""Ctrl-C pressed twice (0.05-0.3 s apart, drawn afresh each run) at several points of a plan and
a sweep on the local pool: exit 130 every time, no traceback, no worker left behind. The
timeout is hang detection only; ``tools/double_ctrl_c.py`` measures how fast it exits."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "double_ctrl_c", Path(__file__).resolve().parents[2] / "tools" / "double_ctrl_c.py")
double_ctrl_c = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(double_ctrl_c)


@pytest.mark.parametrize("point", double_ctrl_c.POINTS)
@pytest.mark.parametrize("command", sorted(double_ctrl_c.COMMANDS))
def test_two_ctrl_cs_end_the_study_with_130(command, point, tmp_path):
    gap = random.uniform(0.05, 0.3)
    code, _, err = double_ctrl_c.press_twice(double_ctrl_c.COMMANDS[command], point, gap, tmp_path)
    assert code == 130, f"gap {gap:.2f}s: exit {code}\n{err}"
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written in the folder it ran in
