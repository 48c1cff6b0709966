"""The files ``twin calibrate`` writes, checked before it measures anything.

Calibrating takes minutes to hours, so every reason its output could not be written is found
first: ``--out`` must name a ``.yaml`` file (not a folder, device or pipe) in a folder that
exists or can be made and can be written. Beside it the command keeps its raw measurements
(``<stem>.csv``) and one profile per measured link (``<stem>.<link>.yaml``). It never writes
or deletes a file it did not create or was not told to: an existing CSV beside ``--out`` is
resumed only when it is a calibration CSV (its header is this tool's), and ``--fresh``
deletes only such a file; an existing link profile is replaced only when calibrate wrote it
(its provenance says ``source: calibrated``). Anything else is one error line, before any
measurement. The profiles are written all at once (:func:`twin.output.write_atomic`: a hidden
temporary renamed into place, removed on any failure or signal).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from calibrate.errors import CalibrationError
from calibrate.store import COLUMNS
from twin.errors import InputError
from twin.output import write_atomic

SUFFIXES = (".yaml", ".yml")
HEADER = ",".join(COLUMNS)
_SNIFF_BYTES = 1 << 16   # enough for the header and a provenance block


@dataclass(frozen=True)
class CalibrationOutputs:
    """Where one calibration writes: the device profile, its raw CSV, its link profiles."""

    profile: Path
    csv: Path

    def link_profile(self, name: str) -> Path:
        return self.profile.with_name(f"{self.profile.stem}.{name}.yaml")


def prepare(out: Path, *, fresh: bool) -> CalibrationOutputs:
    """Check ``out`` and what lies beside it; make its folder; with ``fresh`` delete the
    previous run's CSV (only a calibration CSV). Raises :class:`CalibrationError`."""
    if out.suffix not in SUFFIXES or out.name.startswith("."):
        raise CalibrationError(f"--out must name a .yaml file, not {str(out)!r}")
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CalibrationError(f"--out: cannot make the folder {str(folder)!r}: {exc.strerror or exc}") from None
    _writable_file(out, "--out")
    outputs = CalibrationOutputs(out, out.with_suffix(".csv"))
    if _exists(outputs.csv):
        _writable_file(outputs.csv, "the raw measurements beside --out")
        if not is_calibration_csv(outputs.csv):
            raise CalibrationError(f"{outputs.csv} exists and is not a calibration CSV (its first line is not "
                                   f"{HEADER!r}); it is left as it is: choose another --out")
    for path in folder.glob(f"{_glob_escape(out.stem)}.*.yaml"):  # link profiles of an earlier run
        if path != out and path.stem.count(".") == out.stem.count(".") + 1 and not is_calibration_profile(path):
            raise CalibrationError(f"{path} exists and was not written by calibrate (no 'source: calibrated' "
                                   "provenance); a link profile would replace it: choose another --out")
    if fresh and _exists(outputs.csv):  # last: a run refused above deletes nothing
        outputs.csv.unlink()
    return outputs


def write_profile(path: Path, text: str) -> None:
    """Write one profile all at once (see the module docstring)."""
    try:
        write_atomic("--out", path, text)
    except InputError as exc:
        raise CalibrationError(exc.message) from None


def is_calibration_csv(path: Path) -> bool:
    """Whether ``path`` is a regular file whose first line is this tool's CSV header."""
    head = _head(path)
    if head is None:
        return False
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    return line == HEADER.encode()


def is_calibration_profile(path: Path) -> bool:
    """Whether ``path`` is a profile calibrate wrote (its provenance: ``source: calibrated``)."""
    head = _head(path)
    if head is None:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return "provenance:" in text and any(line.strip() == "source: calibrated" for line in text.splitlines())


def _head(path: Path) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES)
    except OSError:
        return None


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _writable_file(path: Path, what: str) -> None:
    """A path a new file can be written to: nothing there, or a regular file in a folder we can write."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise CalibrationError(f"{what}: cannot use {str(path)!r}: {exc.strerror or exc}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, pipe or socket)"
        raise CalibrationError(f"{what}: {str(path)!r} is {kind}; give a .yaml file path")
    folder = Path(os.path.realpath(path)).parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CalibrationError(f"{what}: cannot create files in the folder {str(folder)!r}")


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
