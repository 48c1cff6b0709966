"""calibrate never writes or deletes a file it did not create or was not told to, and says so
before measuring (calibrate/outputs.py)."""

from __future__ import annotations

import pytest

from calibrate.errors import CalibrationError
from calibrate.outputs import HEADER, prepare

OURS = (HEADER + "\r\nk,overhead,op,float32,1.0,1e-05,100000.0,0.0,p,3,dev\r\n").encode()


@pytest.mark.parametrize("content", [b"my,notes\n1,2\n", b"only one line", bytes(range(256)), b""])
@pytest.mark.parametrize("fresh", [False, True])
def test_a_csv_that_is_not_calibrates_is_refused_and_left_as_it_was(tmp_path, content, fresh):
    (tmp_path / "notes.csv").write_bytes(content)
    with pytest.raises(CalibrationError, match="not a calibration CSV"):
        prepare(tmp_path / "notes.yaml", fresh=fresh)
    assert (tmp_path / "notes.csv").read_bytes() == content


def test_fresh_deletes_only_its_own_csv_and_only_when_every_check_passed(tmp_path):
    (tmp_path / "p.csv").write_bytes(OURS)
    (tmp_path / "p.nvlink.yaml").write_text("x: 1\n")  # not calibrate's
    with pytest.raises(CalibrationError, match="not written by calibrate"):
        prepare(tmp_path / "p.yaml", fresh=True)
    assert (tmp_path / "p.csv").read_bytes() == OURS
    (tmp_path / "p.nvlink.yaml").write_text("provenance:\n  source: calibrated\n")
    assert prepare(tmp_path / "p.yaml", fresh=True).csv == tmp_path / "p.csv"
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("out, words", [("folder.yaml", "is a folder"), ("afile/p.yaml", "cannot make the folder"),
                                        ("p.txt", "must name a .yaml file")])
def test_an_out_that_cannot_be_written_is_refused_before_measuring(tmp_path, out, words):
    (tmp_path / "folder.yaml").mkdir()
    (tmp_path / "afile").write_text("a file, not a folder")
    with pytest.raises(CalibrationError, match=words):
        prepare(tmp_path / out, fresh=False)


def test_a_new_folder_is_made(tmp_path):
    assert prepare(tmp_path / "a" / "b" / "p.yaml", fresh=False).csv == tmp_path / "a" / "b" / "p.csv"
