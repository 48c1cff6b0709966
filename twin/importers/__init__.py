"""Importers: a framework's own config files and launch scripts → a twin scenario.

``IMPORTERS`` maps each framework's name to its :class:`Importer`; :func:`import_files` runs
one and :func:`validated` checks the result as ``twin check`` would, naming the framework
knob (and its file) behind any field that does not validate. docs/frameworks.md lists what
each importer reads and how each knob maps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from twin import runner
from twin.config.overrides import apply_overrides, parse_overrides
from twin.errors import InputError, choices
from twin.importers import areal, nemo_rl, openrlhf, prime_rl, shell, slime, trl, verl
from twin.importers.base import Imported, Importer

IMPORTERS: dict[str, Importer] = {m.IMPORTER.name: m.IMPORTER
                                  for m in (verl, nemo_rl, openrlhf, areal, trl, slime, prime_rl)}
NAMES = ("verl", "nemo-rl", "openrlhf", "areal", "trl", "slime", "prime-rl")  # as typed on the command line


def importer(name: str) -> Importer:
    key = name.strip().lower().replace("-", "_")
    if key not in IMPORTERS:
        raise InputError("unknown framework", field="--from", value=name, allowed=choices(NAMES, name))
    return IMPORTERS[key]


def _model_overridden(overrides: Sequence[str] | dict) -> bool:
    keys = overrides.keys() if isinstance(overrides, dict) else [o.partition("=")[0].strip() for o in overrides]
    return any(k == "model" for k in keys)


def import_files(framework: str, files: Sequence[str | Path],
                 overrides: Sequence[str] | dict = (), env: dict[str, str] | None = None) -> Imported:
    """Read ``files`` as ``framework``'s inputs into a scenario (not yet validated); a launch
    script's ``${VAR:-default}`` reads ``env`` (the calling environment when None)."""
    imp = importer(framework)
    paths = [Path(f).expanduser() for f in files]
    if not paths:
        raise InputError("no input files", field=imp.name, allowed=imp.reads)
    for path in paths:
        if not path.is_file():
            raise InputError(_not_a_file(path), file=path, allowed=imp.reads)
    token = shell.ENVIRONMENT.set(dict(os.environ) if env is None else dict(env))
    try:
        result = imp.run(paths, _model_overridden(overrides))
    except InputError as exc:
        raise _wrong_importer(exc, imp, paths) from None
    finally:
        shell.ENVIRONMENT.reset(token)
    names = ", ".join(p.name for p in paths)
    text = f"Imported from {imp.title} ({names}) by `twin import {imp.name.replace('_', '-')}`, " \
           f"assuming {imp.title} {imp.version}."
    if result.notes:
        text += " Assumed: " + "; ".join(result.notes) + "."
    scenario = {"name": _name(paths[0]), "description": text, **result.scenario}
    result.scenario = scenario
    return result


# What each framework's files say of themselves, for "this looks like X's config".
SIGNS = {"verl": r"actor_rollout_ref|verl\.trainer", "nemo_rl": r"^policy:|run_grpo|nemo_rl",
         "openrlhf": r"openrlhf\.cli|--pretrain\b", "areal": r"allocation_mode|areal\.|^gconfig:",
         "trl": r"num_generations|\bGRPOConfig\b|trl vllm-serve|use_vllm",
         "slime": r"--actor-num-nodes|--rollout-num-gpus|slime|--rollout-batch-size",
         "prime_rl": r"^\[orchestrator|^\[deployment|max_off_policy_steps|prime_rl"}


# Errors that mean "these files are not this framework's", not "this value is wrong".
WRONG_SIGNS = ("the inputs name no model", "the script runs no", "the inputs give no", "the config gives no",
               "prime-rl configs are TOML", "malformed", "the file must hold a mapping")


def looks_like(paths: Sequence[Path]) -> str | None:
    """The framework whose signs the files carry most (their first 64 KiB), or None."""
    import re

    text = ""
    for path in paths:
        try:
            with open(path, "rb") as handle:
                text += handle.read(65536).decode(errors="replace")
        except OSError:
            continue
    scores = {name: len(re.findall(sign, text, re.M)) for name, sign in SIGNS.items()}
    best = max(scores, key=scores.get)
    return best if scores[best] else None


def _wrong_importer(exc: InputError, imp: Importer, paths: Sequence[Path]) -> InputError:
    """``exc``, saying which framework the files look like when that is not the one asked for."""
    other = looks_like(paths)
    if other is None or other == imp.name or not exc.problem.startswith(WRONG_SIGNS):
        return exc
    title = IMPORTERS[other].title
    return InputError(f"{exc.problem} (the input looks like a {title} config: try `twin import "
                      f"{other.replace('_', '-')}`)", file=exc.file, field=exc.field, value=exc.value,
                      allowed=exc.allowed)


def _not_a_file(path: Path) -> str:
    """What stands at ``path`` instead of a regular file (never opened)."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return "file not found"
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return f"not a regular file: {what}"
    return "not a regular file"


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """``--env K=V`` arguments over the calling environment (what a script's ``${K:-default}`` reads)."""
    env = dict(os.environ)
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip().isidentifier():
            raise InputError("--env takes NAME=VALUE", field="--env", value=pair,
                             allowed="a shell variable name, '=', its value (e.g. --env NNODES=4)")
        env[key.strip()] = value
    return env


def _name(path: Path) -> str:
    stem = path.stem.replace("_", "-")
    return stem or "imported"


def validated(result: Imported, overrides: Sequence[str] | dict = ()):
    """The imported scenario loaded and resolved (a :class:`twin.config.plan.Plan`), with ``--set``
    overrides applied; a field that does not validate is named by the knob it came from."""
    try:
        return runner.plan(result.scenario, overrides)
    except InputError as exc:
        raise _blame(exc, result) from None


def _blame(exc: InputError, result: Imported) -> InputError:
    if exc.file is not None or not exc.field:
        return exc
    field = exc.field
    while field:
        if field in result.provenance:
            file, keys = result.provenance[field]
            return InputError(exc.problem, file=file or None, field=f"{keys} (scenario {exc.field})",
                              value=exc.value, allowed=exc.allowed)
        field = field.rpartition(".")[0]
    files = ", ".join(result.files)
    return InputError(exc.problem, file=f"scenario imported from {files}", field=exc.field,
                      value=exc.value, allowed=exc.allowed)


def scenario_yaml(result: Imported, overrides: Sequence[str] | dict = ()) -> str:
    """The scenario as YAML, ``--set`` overrides applied, under a header naming the inputs,
    the framework version assumed and the knobs not used."""
    data = result.scenario
    if overrides:
        data = apply_overrides(data, overrides if isinstance(overrides, dict) else parse_overrides(overrides))
    imp = importer(result.framework)
    header = [f"# Imported by `twin import {imp.name.replace('_', '-')}` from: {', '.join(result.files)}",
              f"# Framework assumed: {imp.title} {imp.version}"]
    if result.unused:
        header.append(f"# Not used by the twin: {', '.join(result.unused)}")
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True)
    return "\n".join(header) + "\n" + body


def warn(result: Imported) -> None:
    if result.warning:
        print(f"twin: warning: {result.warning}", file=sys.stderr)


def scenario_from(args: Sequence[str], overrides: Sequence[str]):
    """``twin run --from FRAMEWORK FILE...``: the imported scenario, validated with the
    overrides applied (a :class:`~twin.config.scenario.Scenario`); warns of unused knobs."""
    if len(args) < 2:
        raise InputError("--from needs a framework and at least one file", field="--from",
                         value=" ".join(args), allowed="--from FRAMEWORK FILE... with FRAMEWORK one of "
                         + ", ".join(NAMES))
    result = import_files(args[0], args[1:], overrides)
    warn(result)
    return validated(result, overrides).scenario
