"""The twin's error on each validation case, recorded for the reports' trust caveats.

``python -m twin.validation.record`` writes ``twin/validation/record.json`` from the golden
reports (``tests/golden/case-*.json``: the twin's report of every case of every built-in
validation file, at the fitted values of ``tests/golden/fitted.json``) and the published
figures of the case files (``scenarios/validation/*.yaml``): each case's scenario traits (model
family, MoE or dense, framework profile, mode, GPU) and each figure's predicted, expected and
error. Nothing in it is typed by hand: the golden reports are the twin's own output
(``tests/golden/make.py``, which also rewrites this record), and tests/validation/test_record.py
fails when the record is not what the goldens give. ``--check`` exits 1 where it differs.

:mod:`twin.analysis.trust` reads the record (package data) to name, on every report, the
validation sources nearest to the scenario and the twin's error there.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from twin.analysis.trust import RECORD, traits
from twin.validation.validate import builtin_cases_dir, load_source, metric

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"


def _slug(name: str) -> str:  # as tests/golden/make.py names a case's golden file
    return re.sub(r"[^A-Za-z0-9.]+", "-", name).strip("-")


def _case_entry(tag: str, path: Path, source, case, report: dict[str, Any]) -> dict[str, Any]:
    figures = []
    for name, expected in case.expected.items():
        predicted = metric(report, name)
        fitted = bool(source.fit and source.fit.case == case.name and source.fit.metric == name)
        figures.append({"metric": name, "predicted": float(f"{predicted:.6g}"), "expected": expected,
                        "error": float(f"{predicted / expected - 1:.4g}"), "fitted": fitted})
    return {"source": tag, "file": path.name, "case": case.name, "tolerance": source.tolerance,
            **traits(report["scenario"]), "figures": figures}


def build(golden: Path = GOLDEN) -> dict[str, Any]:
    """The record, from the golden case reports in ``golden`` and the built-in case files."""
    cases, digest = [], hashlib.sha256()
    for path in sorted(builtin_cases_dir().glob("*.yaml")):
        source = load_source(path)
        tag = path.stem.split("-")[0]
        for case in source.cases:
            file = golden / f"case-{path.stem}-{_slug(case.name)}.json"
            if not file.exists():
                continue  # a case added since the goldens were made: make.py writes it
            report = json.loads(file.read_text())
            # the digest leaves out the report's own trust section: it is read from this record
            figures = {k: v for k, v in report.items() if k != "trust"}
            digest.update(file.name.encode() + b"\0" + json.dumps(figures, sort_keys=True).encode())
            cases.append(_case_entry(tag, path, source, case, report))
    return {"provenance": {
        "derived_from": "tests/golden/case-*.json (the twin's report of every built-in validation case, "
                        "fitted values from tests/golden/fitted.json) and the published figures of "
                        "scenarios/validation/*.yaml",
        "by": "python -m twin.validation.record (tests/golden/make.py runs it after the goldens)",
        "goldens_sha256": digest.hexdigest(),
        "goldens_sha256_of": "each case golden's name and its JSON (sorted keys, trust left out)"}, "cases": cases}


def text(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    fresh = text(build())
    if "--check" in argv:
        same = RECORD.exists() and RECORD.read_text() == fresh
        print(f"{'same' if same else 'DIFFERS'}  {RECORD.name}")
        return 0 if same else 1
    RECORD.write_text(fresh)
    print(f"wrote {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
