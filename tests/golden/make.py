"""Regenerate the golden reports: ``python tests/golden/make.py [--check]``.

The golden files pin the JSON report (no verdict) of every built-in scenario and of every case
of every built-in validation file, with each file's fitted parameter fixed at the value
recorded in ``fitted.json`` (so that a change to the simulator shows up as a changed figure,
not as a re-fitted parameter hiding it). A change to a golden file is a change to a figure:
name it in the commit message.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FITTED = HERE / "fitted.json"


def cases() -> dict[str, dict]:
    """Golden name -> scenario data (a built-in name or a mapping)."""
    from twin.config.overrides import apply_overrides
    from twin.config.registry import builtin_scenarios
    from twin.validation.validate import builtin_cases_dir, load_source

    out: dict[str, dict | str] = {f"scenario-{name}": name for name in builtin_scenarios()}
    fitted = json.loads(FITTED.read_text()) if FITTED.exists() else {}
    for path in sorted(builtin_cases_dir().glob("*.yaml")):
        source = load_source(path)
        fixed = {}
        if source.fit:
            if path.name not in fitted:
                from twin.validation.validate import fit_parameter

                fitted[path.name] = fit_parameter(source, path)[1]
                FITTED.write_text(json.dumps(fitted, indent=2, sort_keys=True) + "\n")
            fixed = {source.fit.parameter: fitted[path.name]}
        for case in source.cases:
            out[f"case-{path.stem}-{_slug(case.name)}"] = apply_overrides(apply_overrides(source.base, fixed), case.set)
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", name).strip("-")


# The sensitivity tables pinned too: every built-in whose table re-simulates in seconds (the
# agentic one takes over a minute), and the 7B colocated run cut to a few small steps.
WHATIF = {
    "whatif-code-rl-sandbox-7b": ("code-rl-sandbox-7b", {}),
    "whatif-dapo-7b-h20-colocated": ("dapo-7b-h20-colocated", {}),
    "whatif-grpo-1.5b-async": ("grpo-1.5b-async", {}),
    "whatif-grpo-7b-colocated-small": ("grpo-7b-colocated", {"run.steps": 3, "algorithm.prompts_per_step": 64}),
    "whatif-grpo-8b-disaggregated": ("grpo-8b-disaggregated", {}),
    "whatif-moe-30b-a3b-disaggregated": ("moe-30b-a3b-disaggregated", {}),
    "whatif-ppo-8b-colocated": ("ppo-8b-colocated", {}),
}


def report_json(data) -> str:
    import twin

    return twin.simulate(data).to_json()


def whatif_json(scenario: str, overrides: dict) -> str:
    import twin

    rows = twin.whatif(scenario, None, workers=1, **overrides)
    return json.dumps(rows, indent=2, sort_keys=True) + "\n"


def outputs() -> dict[str, callable]:
    """Golden name -> a function that renders its text now."""
    out = {name: (lambda d=data: report_json(d)) for name, data in cases().items()}
    out.update({name: (lambda a=args: whatif_json(*a)) for name, args in WHATIF.items()})
    return out


def refresh_trust() -> bool:
    """The validation record (twin/validation/record.json) rewritten from the goldens just made,
    and, where it changed, each golden report's ``trust`` section with it (a report's trust
    reads the record; the record reads only the goldens' figures, so one pass settles it)."""
    from twin.analysis.trust import RECORD, nearest
    from twin.validation.record import build, text

    record = build(HERE)
    fresh = text(record)
    if RECORD.exists() and RECORD.read_text() == fresh:
        return False
    RECORD.write_text(fresh)
    for target in sorted(HERE.glob("*.json")):
        data = json.loads(target.read_text())
        if isinstance(data, dict) and "trust" in data and "scenario" in data:
            data["trust"] = nearest(data["scenario"], record["cases"])
            target.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RECORD.name} and the goldens' trust sections", flush=True)
    return True


def main(argv: list[str]) -> int:
    check = "--check" in argv
    bad = 0
    for name, render in outputs().items():
        target = HERE / f"{name}.json"
        text = render()
        if check:
            same = target.exists() and target.read_text() == text
            bad += not same
            print(f"{'same' if same else 'DIFFERS'}  {name}", flush=True)
        else:
            target.write_text(text)
            print(f"wrote {target.name}", flush=True)
    if not check:
        refresh_trust()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
