"""Write the report JSON and the Chrome trace of a run to user-chosen paths."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from twin.errors import InputError

DEFAULT_REPORT = "./twin-report.json"
DEFAULT_TRACE = "./twin-trace.json"


def write_atomic(path: Path, text: str, what: str) -> None:
    """Via a temporary file, so a failure never leaves half a file (as ``twin run`` does)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write the {what}: {exc.strerror}", value=str(path)) from None


def export(report, report_path: str, trace_path: str) -> list[str]:
    """Write what has a path (an empty path skips that file); the paths written, in order.

    Both texts are built before anything is written, so an error leaves neither half done.
    """
    jobs = []
    if report_path.strip():
        jobs.append((Path(report_path.strip()).expanduser(), report.to_json(), "report"))
    if trace_path.strip():
        jobs.append((Path(trace_path.strip()).expanduser(), json.dumps(report.chrome_trace()), "trace"))
    for path, text, what in jobs:
        if path.is_dir():
            raise InputError(f"the {what} path is a folder", value=str(path), allowed="a file path")
    for path, text, what in jobs:
        write_atomic(path, text, what)
    return [str(p) for p, _, _ in jobs]
