"""Run `twin import` (and `twin check` on what imports) over every example run script and
config of the upstream repositories, extracted (never committed) under one folder:

    python tools/import_survey.py /tmp/upstream [--repo NAME] [--failures N] [--json OUT]

The folder holds one subfolder per repository named ``owner+name`` (as the fetch tool names
its mirrors: ``volcengine+verl``, ``NVIDIA-NeMo+RL``, ...). For each repository, :data:`RULES`
says which files are runs and which importer reads them. Each file is imported in this process
with an alarm of :data:`TIMEOUT_S` and an empty environment (the scripts' own defaults);
the line per repository gives files, imported, passing check, and the reasons for the rest,
most frequent first (docs/frameworks.md records them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from twin.errors import InputError  # noqa: E402
from twin.importers import import_files, validated  # noqa: E402

TIMEOUT_S = 20


@dataclass(frozen=True)
class Rule:
    framework: str
    globs: tuple[str, ...]
    must: str = ""          # a regex the file's text must match to count as a run
    usage: bool = False     # runs are the `accelerate launch ...` lines in the file's docstring


RULES: dict[str, Rule] = {
    "volcengine+verl": Rule("verl", ("**/*.sh",), r"-m\s+(verl|recipe)\.|main_ppo"),
    "verl-project+verl-recipe": Rule("verl", ("**/*.sh",), r"-m\s+(verl|recipe)\.|main_ppo"),
    "NVIDIA-NeMo+RL": Rule("nemo-rl", ("examples/configs/**/*grpo*.yaml",)),
    "OpenRLHF+OpenRLHF": Rule("openrlhf", ("**/*.sh",), r"train_ppo_ray|train_grpo_ray"),
    "inclusionAI+AReaL": Rule("areal", ("examples/**/*.yaml",), r"(?m)^actor:"),
    "huggingface+trl": Rule("trl", ("examples/scripts/*grpo*.py", "examples/scripts/gspo*.py",
                                    "examples/scripts/rloo*.py"), r"accelerate launch|python ", usage=True),
    "huggingface+open-r1": Rule("trl", ("recipes/**/grpo/*.yaml",)),
    "THUDM+slime": Rule("slime", ("**/*.sh",), r"train(_async)?\.py|--actor-num-nodes"),
    "PrimeIntellect-ai+prime-rl": Rule("prime-rl", ("**/*.toml",), r"(?m)^\[(trainer|orchestrator)"),
}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout


def runs(root: Path, rule: Rule, scratch: Path) -> list[Path]:
    """The repository's run files; for usage-style rules, each usage command written to scratch."""
    found: list[Path] = []
    for pattern in rule.globs:
        for path in sorted(root.glob(pattern)):
            if not path.is_file() or "pyproject" in path.name:
                continue
            text = path.read_text(errors="replace")
            if rule.must and not re.search(rule.must, text):
                continue
            if rule.usage:
                found.extend(_usage_scripts(path, text, path.parent / "_usage"))
            else:
                found.append(path)
    return sorted(set(found))


def _usage_scripts(path: Path, text: str, scratch: Path) -> list[Path]:
    """The launch commands a TRL example's docstring shows (`accelerate launch ... script.py
    --flag ...`, continued lines joined), each as a script of its own beside the example (in
    the extracted copy, so that the accelerate configs it names are in its tree)."""
    out = []
    doc = text.split('"""')[1] if text.count('"""') >= 2 else ""
    doc = re.sub(r"\\\n", " ", doc)
    for i, line in enumerate(re.findall(r"(?m)^\s*((?:accelerate launch|python|trl vllm-serve|CUDA_VISIBLE_DEVICES=\S+ "
                                         r"(?:accelerate|python|trl)).*)$", doc)):
        dest = scratch / f"{path.stem}_{i}.sh"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(line.strip() + "\n")
        out.append(dest)
    return out


def reason(exc: BaseException) -> str:
    """A failure's class: the error's problem (numbers and names taken out)."""
    if isinstance(exc, InputError):
        text = exc.problem
        if exc.field and "depends on" not in text and "model" in str(exc.field):
            text += " (model)"
    elif isinstance(exc, _Timeout):
        text = f"HANG (over {TIMEOUT_S} s)"
    else:
        text = f"TRACEBACK {type(exc).__name__}"
    text = re.sub(r"depends on \S+", "depends on a variable", text)
    return re.sub(r"\d+", "N", text)[:110]


def survey(repo_dir: Path, rule: Rule, scratch: Path, env: dict[str, str]) -> dict:
    """One repository's runs, imported from its root (where its README says to launch them)."""
    files = runs(repo_dir, rule, scratch / repo_dir.name)
    os.chdir(repo_dir)
    imported = checked = 0
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for path in files:
        stage = "import"
        signal.alarm(TIMEOUT_S)
        try:
            result = import_files(rule.framework, [path], env=env)
            imported += 1
            stage = "check"
            validated(result)
            checked += 1
        except (InputError, _Timeout, Exception) as exc:  # noqa: BLE001 - every failure is counted
            why = f"{stage}: {reason(exc)}"
            reasons[why] += 1
            examples.setdefault(why, f"{path.relative_to(repo_dir) if path.is_relative_to(repo_dir) else path.name}: "
                                f"{str(exc)[:200]}")
        finally:
            signal.alarm(0)
    return {"repo": repo_dir.name, "framework": rule.framework, "files": len(files), "imported": imported,
            "checked": checked, "reasons": reasons.most_common(), "examples": examples}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument("--repo", action="append", help="only these repositories (owner+name)")
    p.add_argument("--failures", type=int, default=6, help="reasons shown per repository")
    p.add_argument("--examples", action="store_true", help="show one file per reason")
    p.add_argument("--json", type=Path, help="write the survey as JSON")
    args = p.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    os.environ["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded; a model must be a preset or in the catalog
    args.root = args.root.resolve()
    scratch = Path("/tmp/import_survey_usage")
    out = []
    for name, rule in RULES.items():
        if args.repo and name not in args.repo:
            continue
        repo_dir = args.root / name
        if not repo_dir.is_dir():
            continue
        row = survey(repo_dir, rule, scratch, env={})
        out.append(row)
        print(f"{name:28s} {rule.framework:9s} files {row['files']:4d}  import {row['imported']:4d}  "
              f"check {row['checked']:4d}", flush=True)
        for why, count in row["reasons"][:args.failures]:
            print(f"    {count:4d}  {why}" + (f"\n          e.g. {row['examples'][why]}" if args.examples else ""))
    total = {k: sum(r[k] for r in out) for k in ("files", "imported", "checked")}
    print(f"{'TOTAL':38s} files {total['files']:4d}  import {total['imported']:4d}  check {total['checked']:4d}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
