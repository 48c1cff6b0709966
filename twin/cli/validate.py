"""``twin validate``: the twin against published runs, the error of every figure."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twin.cli.common import Command, emit, outputs_for
from twin.validation.validate import (
    all_ok,
    case_files,
    implied_parameters,
    render,
    render_cross,
    render_implied,
    validate_source,
)


def _parser(sub) -> None:
    validate = sub.add_parser(
        "validate", help="predicted vs published figures (twin validate [DIR|FILE]); --probe: vs a real torch loop here",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run every case file in DIR, or the one case FILE (default: the built-in cases of "
        "published runs, docs/validation.md) and print predicted vs expected with the error of "
        "each figure, the shape checks, and a summary line. Exit code 1 when any figure is outside "
        "its tolerance. `twin validate --probe [...]` instead runs a small real GRPO loop in torch "
        "on this machine and compares it with the twin (see `twin validate --probe --help`).")
    validate.add_argument("directory", nargs="?", type=Path, default=None, metavar="DIR|FILE",
                          help="a folder of case YAML files, or one case file")
    validate.add_argument("--json", dest="json_path", metavar="PATH|-", help="also write the figures as JSON")
    validate.add_argument("--implied", action="store_true",
                          help="also, for each source with a fitted parameter, the value every figure implies "
                          "on its own (how far apart they are says how consistent the model is with the "
                          "source; re-simulates each figure ~16 times)")
    validate.add_argument("--cross", action="store_true",
                          help="also, per framework profile (framework_profiles/): the values it fitted on one "
                          "source and how the other sources that run under it are predicted with them")


def _validate(args) -> int:
    outputs = outputs_for(args)
    files = case_files(args.directory)
    results, implied = [], {}
    for path in files:
        print(f"validating {path.name} ...", file=sys.stderr, flush=True)
        results.append(validate_source(path))
        if args.implied and results[-1].fitted:
            implied[path] = implied_parameters(
                path, lambda what, name=path.name: print(f"  implied: {name} {what}", file=sys.stderr, flush=True))
    text = render(results)
    if implied:
        text += "\n\n" + "\n\n".join(render_implied(r.path, r.fitted, implied[r.path])
                                      for r in results if r.path in implied)
    if args.cross:
        text += "\n\n" + render_cross(results)
    data = [{"source": r.source.source, "file": r.path.name, "fitted": r.fitted,
             "figures": [{"case": f.case, "metric": f.metric, "predicted": f.predicted,
                          "expected": f.expected, "error": f.error, "ok": f.ok, "fitted": f.fitted}
                         for f in r.figures],
             "checks": [{"description": c.description, "ratio": ratio, "ok": ok} for c, ratio, ok in r.checks],
             **({"implied": [vars(i) for i in implied[r.path]]} if r.path in implied else {})}
            for r in results]
    emit(outputs, {"--json": json.dumps(data, indent=2, sort_keys=True) + "\n"}, text)
    return 0 if all_ok(results) else 1


COMMANDS = [Command("validate", _parser, _validate)]
