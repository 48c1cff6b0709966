"""Raw measurements as a CSV that grows one row at a time, so nothing measured is lost.

Each row is flushed and synced as soon as it is measured: a crash or Ctrl-C keeps every
finished row, and a rerun with the same output skips the keys already present (resume).
A file whose first line is not this header is never changed (:mod:`calibrate.outputs`
refuses it before measuring); in one that is, a torn last line (a crash mid-write) is cut off
when the file is reopened.
"""

from __future__ import annotations

import csv
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from calibrate.errors import CalibrationError


@dataclass(frozen=True)
class Row:
    """One measurement. ``size`` is FLOP per call (compute) or bytes per call (memory, links);
    ``rate`` is FLOP/s or bytes/s (a collective's algorithm bandwidth); ``busbw`` is the
    nccl-tests bus bandwidth of a collective, 0 otherwise."""

    key: str
    suite: str
    op: str
    dtype: str
    size: float
    seconds: float
    rate: float
    busbw: float
    params: str
    reps: int
    device: str

    @classmethod
    def from_csv(cls, rec: dict[str, str]) -> "Row":
        conv = {f.name: f.type for f in fields(cls)}
        out = {}
        for name, typ in conv.items():
            raw = rec[name]
            out[name] = float(raw) if typ == "float" else int(raw) if typ == "int" else raw
        return cls(**out)


COLUMNS = [f.name for f in fields(Row)]


class Store:
    """Append-only CSV of :class:`Row`, keyed for resume."""

    def __init__(self, path: Path, device: str) -> None:
        self.path = Path(path)
        self.device = device
        self.rows: dict[str, Row] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CalibrationError(f"{self.path} cannot be read as a calibration CSV ({exc}); it is left "
                                   "as it is: choose another --out") from None
        header = ",".join(COLUMNS)
        if data and text.split("\n", 1)[0].rstrip("\r") != header:
            raise CalibrationError(f"{self.path} is not a calibration CSV (its first line is not {header!r}); "
                                   "it is left as it is: choose another --out")
        if data and not data.endswith(b"\n"):  # a crash tore the last row of our own file: drop it
            if b"\n" not in data:
                raise CalibrationError(f"{self.path} holds a header without a line end; choose another --out")
            os.truncate(self.path, data.rfind(b"\n") + 1)
        with self.path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames and reader.fieldnames != COLUMNS:
                raise CalibrationError(f"{self.path} is not a calibration CSV (columns {reader.fieldnames}); "
                                       "choose another --out or pass --fresh")
            for rec in reader:
                try:
                    row = Row.from_csv(rec)
                except (KeyError, ValueError, TypeError):
                    continue  # an unreadable row is simply measured again
                if row.device != self.device:
                    raise CalibrationError(f"{self.path} holds measurements of {row.device!r}, not "
                                           f"{self.device!r}; choose another --out or pass --fresh")
                self.rows[row.key] = row

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def append(self, row: Row) -> None:
        new = not self.path.exists() or self.path.stat().st_size == 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=COLUMNS)
            if new:
                writer.writeheader()
            writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in asdict(row).items()})
            fh.flush()
            os.fsync(fh.fileno())
        self.rows[row.key] = row

    def select(self, suite: str, op: str | None = None, dtype: str | None = None) -> list[Row]:
        return [r for r in self.rows.values()
                if r.suite == suite and (op is None or r.op == op) and (dtype is None or r.dtype == dtype)]
