"""The raw CSV: round trip, resume after an interruption, torn rows, wrong device."""

import pytest

from calibrate.errors import CalibrationError
from calibrate.runner import measure
from calibrate.store import Row, Store
from calibrate.suites import Spec


def _row(key: str, device: str = "dev") -> Row:
    return Row(key=key, suite="memory", op="copy", dtype="u8", size=2e6, seconds=1e-4, rate=2e10,
               busbw=0.0, params="buffer_bytes=1000000", reps=5, device=device)


def _specs(n: int, calls: list, fail_at: int | None = None) -> list[Spec]:
    def make(i):
        def run():
            if fail_at is not None and i == fail_at:
                raise KeyboardInterrupt  # Ctrl-C in the middle of a measurement
            calls.append(i)
            return 1e-3 * (i + 1), 5
        return Spec(key=f"fake/{i}", suite="memory", op="copy", dtype="u8", size=1e6, params=f"i={i}",
                    measure=run)
    return [make(i) for i in range(n)]


def test_rows_round_trip_exactly(tmp_path):
    path = tmp_path / "m.csv"
    store = Store(path, "dev")
    row = _row("a")
    store.append(row)
    assert Store(path, "dev").rows == {"a": row}


def test_interrupted_run_keeps_rows_and_rerun_resumes(tmp_path):
    path = tmp_path / "m.csv"
    calls: list = []
    with pytest.raises(KeyboardInterrupt):
        measure(_specs(6, calls, fail_at=3), Store(path, "dev"), progress=lambda m: None)
    assert calls == [0, 1, 2]
    kept = Store(path, "dev")
    assert sorted(kept.rows) == ["fake/0", "fake/1", "fake/2"]
    calls.clear()
    done = measure(_specs(6, calls), kept, progress=lambda m: None)
    assert done == 3 and calls == [3, 4, 5]
    assert len(Store(path, "dev").rows) == 6
    assert Store(path, "dev").rows["fake/4"].seconds == pytest.approx(5e-3)


def test_a_torn_last_row_is_dropped_and_measured_again(tmp_path):
    path = tmp_path / "m.csv"
    store = Store(path, "dev")
    store.append(_row("a"))
    store.append(_row("b"))
    text = path.read_text()
    path.write_text(text[:-20])  # a crash in the middle of writing row b
    again = Store(path, "dev")
    assert list(again.rows) == ["a"]
    again.append(_row("c"))
    assert sorted(Store(path, "dev").rows) == ["a", "c"]


def test_another_devices_csv_is_refused(tmp_path):
    path = tmp_path / "m.csv"
    Store(path, "dev").append(_row("a"))
    with pytest.raises(CalibrationError, match="another --out"):
        Store(path, "other")
