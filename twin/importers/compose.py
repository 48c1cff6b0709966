"""Config files that build on others: Hydra's ``defaults:`` list (verl, AReaL) and NeMo-RL's
``defaults:`` inheritance."""

from __future__ import annotations

from pathlib import Path

from twin.config.io import read_mapping
from twin.errors import InputError
from twin.importers.base import deep_merge

MAX_LEVELS = 16


def _read_with_defaults(path: Path, level: int) -> tuple[dict, object]:
    """A config file's keys and its ``defaults`` entry (None without one), refusing to nest
    deeper than MAX_LEVELS (a cycle of defaults)."""
    if level > MAX_LEVELS:
        raise InputError("defaults nest too deep (a cycle?)", file=path, field="defaults",
                         allowed=f"at most {MAX_LEVELS} levels")
    data = read_mapping(path)
    return data, data.pop("defaults", None)


def hydra(path: Path, builtin: tuple[str, ...] = (), skipped: list[str] | None = None,
          _level: int = 0) -> dict:
    """A Hydra config with its defaults list composed, the common case: each entry a config
    beside it (``name``, ``group/name``) or a group choice (``group: name``,
    ``group@pkg.path: name``) read from ``group/name.yaml`` and placed at its package, merged in
    order, the file's own keys where ``_self_`` stands (last when it is not listed).

    An entry naming one of ``builtin`` (the framework's own configs, not beside the file) is
    left out and added to ``skipped``: the importer's defaults are that framework's own."""
    data, defaults = _read_with_defaults(path, _level)
    if defaults is None:
        return data
    if not isinstance(defaults, list):
        raise InputError("a Hydra defaults list must be a list", file=path, field="defaults",
                         value=defaults, allowed="a list of config names or group: name entries")
    merged: dict = {}
    placed_self = False
    for entry in defaults:
        if entry == "_self_":
            merged = deep_merge(merged, data)
            placed_self = True
            continue
        if isinstance(entry, str):
            name = entry.removeprefix("optional ").strip()
            group, package = None, None
        elif isinstance(entry, dict) and len(entry) == 1:
            (key, name), = entry.items()
            key = str(key).removeprefix("override ").removeprefix("optional ").strip()
            if name is None:
                continue
            group, _, package = key.partition("@")
            package = package or group.replace("/", ".")
            name = str(name)
        else:
            raise InputError("a defaults entry the importer cannot read", file=path, field="defaults",
                             value=entry, allowed="name, group/name, group: name or group@package: name")
        rel = Path(group or ".") / f"{name.removesuffix('.yaml')}.yaml"
        target = path.parent / rel
        if not target.is_file():
            if name.removesuffix(".yaml").rsplit("/", 1)[-1] in builtin or (group and group.split("/")[0] in builtin):
                if skipped is not None:
                    skipped.append(str(rel))
                continue
            raise InputError("a defaults entry names a file that is not there", file=path, field="defaults",
                             value=entry, allowed=f"a config at {target} (put the configs it composes "
                             "beside it)")
        sub = hydra(target, builtin, skipped, _level + 1)
        if package and package not in ("_here_", "_global_"):
            for part in reversed(package.split(".")):
                sub = {part: sub}
        merged = deep_merge(merged, sub)
    if not placed_self:
        merged = deep_merge(merged, data)
    return merged


def inherit(path: Path, _level: int = 0) -> dict:
    """NeMo-RL: ``defaults: base.yaml`` (or a list of them), paths relative to the file,
    each read with its own defaults, then this file's keys merged over them."""
    data, defaults = _read_with_defaults(path, _level)
    if defaults is None:
        return data
    names = defaults if isinstance(defaults, list) else [defaults]
    merged: dict = {}
    for name in names:
        if not isinstance(name, str):
            raise InputError("defaults must name a YAML file", file=path, field="defaults", value=name,
                             allowed="a path relative to this file, or a list of them")
        target = path.parent / name
        if not target.is_file():
            raise InputError("defaults names a file that is not there", file=path, field="defaults",
                             value=name, allowed=f"an existing file ({target})")
        merged = deep_merge(merged, inherit(target, _level + 1))
    return deep_merge(merged, data)
