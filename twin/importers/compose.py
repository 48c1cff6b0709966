"""Config files that build on others: Hydra's ``defaults:`` list (verl, AReaL) and NeMo-RL's
``defaults:`` inheritance."""

from __future__ import annotations

import copy
from pathlib import Path

from twin.config.io import read_mapping
from twin.errors import InputError
from twin.importers.base import deep_merge, named_file

MAX_LEVELS = 16
MAX_ENTRIES = 1024   # defaults entries followed in one composition (real configs: tens)


class _Composition:
    """One composition's reads: each file parsed once (a file named by many entries is not
    re-read), the entries followed counted against MAX_ENTRIES."""

    def __init__(self) -> None:
        self.files: dict[Path, tuple[dict, object]] = {}
        self.entries = 0

    def read(self, path: Path, level: int) -> tuple[dict, object]:
        """A config file's keys and its ``defaults`` entry (None without one), refusing to nest
        deeper than MAX_LEVELS (a cycle of defaults) or to follow more than MAX_ENTRIES."""
        if level > MAX_LEVELS:
            raise InputError("defaults nest too deep (a cycle?)", file=path, field="defaults",
                             allowed=f"at most {MAX_LEVELS} levels")
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise InputError("defaults name too many configs", file=path, field="defaults",
                             allowed=f"at most {MAX_ENTRIES} entries in one composition")
        key = path.resolve()
        if key not in self.files:
            data = read_mapping(path)
            self.files[key] = (data, data.pop("defaults", None))
        data, defaults = self.files[key]
        return copy.deepcopy(data), defaults


def hydra(path: Path, builtin: tuple[str, ...] = (), skipped: list[str] | None = None) -> dict:
    """A Hydra config with its defaults list composed, the common case: each entry a config
    beside it (``name``, ``group/name``) or a group choice (``group: name``,
    ``group@pkg.path: name``) read from ``group/name.yaml`` and placed at its package, merged in
    order, the file's own keys where ``_self_`` stands (last when it is not listed).

    Entries are config names inside the search path (the file's folder), never paths: one that
    is absolute or climbs out with ``..`` is refused. An entry naming one of ``builtin`` (the
    framework's own configs, not beside the file) is left out and added to ``skipped``: the
    importer's defaults are that framework's own."""
    return _hydra(path, builtin, skipped, _Composition(), 0)


def _entry(entry: object, path: Path) -> tuple[str, str | None, str | None] | None:
    """(name, group, package) of one defaults entry; None for a group set to null."""
    if isinstance(entry, str):
        return entry.removeprefix("optional ").strip(), None, None
    if isinstance(entry, dict) and len(entry) == 1:
        (key, name), = entry.items()
        key = str(key).removeprefix("override ").removeprefix("optional ").strip()
        if name is None:
            return None
        group, _, package = key.partition("@")
        return str(name), group, package or group.replace("/", ".")
    raise InputError("a defaults entry the importer cannot read", file=path, field="defaults",
                     value=entry, allowed="name, group/name, group: name or group@package: name")


def _hydra(path: Path, builtin: tuple[str, ...], skipped: list[str] | None, run: _Composition, level: int) -> dict:
    data, defaults = run.read(path, level)
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
        parsed = _entry(entry, path)
        if parsed is None:
            continue
        name, group, package = parsed
        rel = Path(group or ".") / f"{name.removesuffix('.yaml')}.yaml"
        if rel.is_absolute() or ".." in rel.parts or name.startswith("~") or (group or "").startswith("~"):
            raise InputError("a Hydra defaults entry names a config group inside the config's folder, not a path "
                             "(the importer reads nothing outside it)", file=path, field="defaults", value=entry,
                             allowed="name, group/name, group: name")
        target = path.parent / rel
        if not target.is_file():
            if name.removesuffix(".yaml").rsplit("/", 1)[-1] in builtin or (group and group.split("/")[0] in builtin):
                if skipped is not None:
                    skipped.append(str(rel))
                continue
            raise InputError("a defaults entry names a file that is not there", file=path, field="defaults",
                             value=entry, allowed=f"a config at {target} (put the configs it composes "
                             "beside it)")
        sub = _hydra(target, builtin, skipped, run, level + 1)
        if package and package not in ("_here_", "_global_"):
            for part in reversed(package.split(".")):
                sub = {part: sub}
        merged = deep_merge(merged, sub)
    if not placed_self:
        merged = deep_merge(merged, data)
    return merged


def inherit(path: Path) -> dict:
    """NeMo-RL: ``defaults: base.yaml`` (or a list of them), paths relative to the file,
    each read with its own defaults, then this file's keys merged over them. A path leading
    outside the config's tree (:func:`twin.importers.base.tree_root`) is refused."""
    return _inherit(path, _Composition(), 0)


def _inherit(path: Path, run: _Composition, level: int) -> dict:
    data, defaults = run.read(path, level)
    if defaults is None:
        return data
    names = defaults if isinstance(defaults, list) else [defaults]
    merged: dict = {}
    for name in names:
        if not isinstance(name, str):
            raise InputError("defaults must name a YAML file", file=path, field="defaults", value=name,
                             allowed="a path relative to this file, or a list of them")
        target = named_file(name, path, "defaults", "defaults")
        if target is None:
            raise InputError("defaults names a file that is not there", file=path, field="defaults",
                             value=name, allowed=f"an existing file ({path.parent / name})")
        merged = deep_merge(merged, _inherit(target, run, level + 1))
    return deep_merge(merged, data)
