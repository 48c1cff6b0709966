"""Write the report JSON and the Chrome trace of a run to user-chosen paths."""

from __future__ import annotations

import json
from pathlib import Path

from twin.errors import InputError
from twin.output import Outputs

DEFAULT_REPORT = "./twin-report.json"
DEFAULT_TRACE = "./twin-trace.json"


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
    outputs = Outputs()  # every path checked before anything is written; then all or none
    for path, text, what in jobs:
        try:  # unlike `twin run --json`, the form makes the folders typed into it
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot make the {what} folder: {exc.strerror}", value=str(path.parent)) from None
        outputs.add(what, path)
    outputs.commit({what: text for _, text, what in jobs})
    return [str(p) for p, _, _ in jobs]
