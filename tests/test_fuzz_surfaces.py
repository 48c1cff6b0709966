"""Every surface but the scenario's and the importers', fuzzed with a fresh seed each run:
``twin fit`` per log format, plan/scale/sweep arguments and resume files, validate case files,
calibrate paths (rows made up, not measured) and Python API calls. Each case runs in a process
of its own (forked, in an empty folder of its own) and must end in exit 0 (or 1, a validation
miss) or exit 2 with exactly one ``twin: error:`` line; never a traceback, a hang (the time limit
only detects one: it is minutes, not a bound on speed) or a blown memory limit; and it may touch
no file but the outputs it was asked for. ``tools/fuzz_surfaces.py`` runs thousands."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import fuzz_surfaces  # noqa: E402
from fuzzsurfaces import case  # noqa: E402

HANG_S = 600.0
EXAMPLES = {"fit": 12, "plan": 6, "validate": 6, "calibrate": 4, "api": 10}


def _check(surface: str, seed: int, tmp: Path, context: dict) -> None:
    generated = case(random.Random(seed), surface)
    outcome = fuzz_surfaces.run_case(generated, tmp, timeout_s=HANG_S, memory_gb=4.0, context=context)
    assert outcome.verdict in ("exit2", "ok"), outcome.detail
    assert outcome.touched == [], outcome.detail


def _surface_test(surface: str):
    @settings(max_examples=EXAMPLES[surface], deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(seed=st.integers(0, 2**32 - 1))
    def test(seed, tmp_path_factory):
        if surface == "calibrate":
            pytest.importorskip("torch")
        context = fuzz_surfaces.prepare_parent([surface])  # imported here once, not in every forked case
        _check(surface, seed, tmp_path_factory.mktemp(surface), context)

    test.__name__ = f"test_{surface}_answers_in_one_line_and_touches_only_its_outputs"
    return test


test_fit_answers_in_one_line_and_touches_only_its_outputs = _surface_test("fit")
test_plan_answers_in_one_line_and_touches_only_its_outputs = _surface_test("plan")
test_validate_answers_in_one_line_and_touches_only_its_outputs = _surface_test("validate")
test_calibrate_answers_in_one_line_and_touches_only_its_outputs = _surface_test("calibrate")
test_api_answers_in_one_line_and_touches_only_its_outputs = _surface_test("api")


def test_touched_sees_a_changed_file_a_new_file_and_a_leftover_temporary():
    before = {"a.csv": ("file", 3, "x"), "out.json": ("file", 1, "y")}
    after = {"a.csv": ("file", 2, "z"), "out.json": ("file", 2, "w"), "new.txt": ("file", 1, "n"),
             ".out.json.1a2b.tmp": ("file", 0, "t")}
    assert fuzz_surfaces.touched(before, after, {"out.json"}) == [".out.json.1a2b.tmp", "a.csv", "new.txt"]
    assert fuzz_surfaces.touched(before, {**before, "p.link.yaml": ("file", 1, "l")}, set(), ("p.*.yaml",)) == []
