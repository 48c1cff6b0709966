"""A bounded fuzz of the command line, in process: mutated built-in scenarios and overrides end in
exit 0 with a sane report, or exit 2 with one line — never an exception (``tools/fuzz.py`` runs
a thousand such cases through the real command, with time and memory limits)."""

from __future__ import annotations

import importlib.util
import json
import math
import random
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin.cli import main

_spec = importlib.util.spec_from_file_location(
    "fuzzcases", Path(__file__).resolve().parents[1] / "tools" / "fuzzcases.py")
fuzzcases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzzcases)


def _sane(report: dict) -> None:
    assert report["step_time_s"] > 0
    for value in report["utilization"].values():
        assert 0.0 <= value <= 1.0 + 1e-9
    for row in report["bottleneck"]:
        assert 0.0 <= row["critical_path_share"] <= 1.0 + 1e-9
    assert all(math.isfinite(v) for v in report["throughput"].values())
    ends = [s["end_s"] for s in report["steps"]]
    assert ends == sorted(ends)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_generated_input_ends_in_a_report_or_one_line(seed, tmp_path_factory, capsys):
    text, args = fuzzcases.case(random.Random(seed))
    if text is not None:
        path = tmp_path_factory.mktemp("case") / "scenario.yaml"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        args = [args[0], str(path), *args[1:]]
    json_out = args[0] == "run"
    code = main(args + (["--json", "-"] if json_out else []))
    out, err = capsys.readouterr()
    if code == 2:
        lines = err.strip().splitlines()
        errors = [line for line in lines if line.startswith("twin: error:")]
        assert len(errors) == 1 and lines[-1] == errors[0], err
    else:
        assert code == 0, err
        assert "twin: error:" not in err
        if json_out:
            _sane(json.loads(out))
