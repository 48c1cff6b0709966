"""Reading YAML/JSON input and turning validation failures into one clear InputError."""

from __future__ import annotations

import gc
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode

from twin.errors import InputError, _show, choices

# What an input file may hold. A scenario, a profile or a config.json is a few kilobytes
# nested a handful of levels, with a few hundred values; these limits are far above that and
# far below what would exhaust the stack (deep nesting) or memory (an alias bomb, "billion
# laughs": nine aliases to nine aliases ... expand to 9^9 values).
# (PyYAML's pure-Python loader reads some 20,000 values a second: the limits also bound the time.)
MAX_FILE_BYTES = 2**20
MAX_DEPTH = 64
MAX_VALUES = 100_000  # after expanding aliases


class UnsafeYAML(yaml.MarkedYAMLError):
    """YAML that parses but must not be loaded: too deep, too large once aliases are
    expanded, an alias cycle, a duplicate mapping key or an integer too long to convert."""


class SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with limits: nesting depth, values after alias expansion (counted
    as the document is composed, an alias as the size of what it refers to, so a bomb stops
    before anything is expanded), no alias cycles, no duplicate keys in a mapping."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values = 0                  # values so far, aliases expanded
        self._sizes: dict[int, int] = {}  # id(node) -> values it expands to

    def _count(self, values: int, mark) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise UnsafeYAML(None, None, f"holds more than {MAX_VALUES:,} values (aliases expanded)", mark)

    def compose_node(self, parent, index):
        mark = self.peek_event().start_mark
        if self.check_event(AliasEvent):
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:
                raise UnsafeYAML(None, None, "an alias refers to a node that contains it (a cycle)", mark)
            self._count(self._sizes[id(node)], mark)
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise UnsafeYAML(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
        self._count(1, mark)
        before = self._values
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._sizes[id(node)] = 1 + self._values - before
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise UnsafeYAML("while constructing a mapping", node.start_mark,
                                     f"duplicate key {key!r} (first on line {seen[key].line + 1})",
                                     key_node.start_mark)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # Python refuses to convert more than 4300 decimal digits
            raise UnsafeYAML(None, None, f"an integer of {len(node.value)} digits is too long to read",
                             node.start_mark) from None


SafeLoader.add_constructor("tag:yaml.org,2002:int", SafeLoader.construct_yaml_int)


def load_yaml(text: str) -> Any:
    """Parse YAML text with :class:`SafeLoader` (raises ``yaml.YAMLError``)."""
    # The collector would re-scan every node already built as the document grows (time growing
    # faster than the input); a bounded document (MAX_VALUES) makes no cycles worth collecting.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a SafeLoader subclass
    finally:
        if enabled:
            gc.enable()


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _json_depth(data: Any) -> int:
    """Nesting depth of parsed JSON, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def load_json(text: str) -> Any:
    """Parse JSON text: duplicate keys and nesting deeper than :data:`MAX_DEPTH` are errors
    (raises ``ValueError``, ``json.JSONDecodeError`` among them)."""
    try:
        data = json.loads(text, object_pairs_hook=_json_object)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    if _json_depth(data) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return data


def missing_file(path: Path, what: str = "file") -> str:
    """Why ``path`` is not a file that can be read, in words: not found, a folder, or something
    else (a pipe, a device, a socket, which are never read as input)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{what} not found"
    except OSError as exc:
        return f"cannot read the {what}: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return f"is a folder, not a {what}"
    return f"is not a regular {what} (a pipe, device or socket)"


def read_mapping(path: Path) -> dict:
    """Parse a YAML (or JSON) file that must hold a mapping."""
    if not path.is_file():
        raise InputError(missing_file(path), file=path)
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"file of {size / 2**20:.0f} MiB is too large to be an input", file=path,
                             allowed=f"at most {MAX_FILE_BYTES // 2**20} MiB")
        text = path.read_text()
        data = load_json(text) if kind == "JSON" else load_yaml(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=path) from None
    except (yaml.YAMLError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed {kind}{where}: {problem}", file=path) from None
    if not isinstance(data, dict):
        raise InputError("the file must hold a mapping of fields", file=path, value=type(data).__name__)
    return data


def dotted(loc: tuple) -> str:
    """('placement', 'rollout', 'gpus') -> 'placement.rollout.gpus'; list indices in brackets."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _walk(model: type[BaseModel], loc: tuple) -> tuple[tuple, Any]:
    """Follow ``loc`` through nested models: (loc without union tags, model reached or None).

    Pydantic puts a tagged union's tag into error locations ('reward.sandbox.workers');
    people write 'reward.workers', so tags are dropped.
    """
    current: Any = model
    clean: list = []
    for part in loc:
        if isinstance(part, int) or current is None:
            clean.append(part)
            continue
        fields = getattr(current, "model_fields", None) or {}
        if part in fields:
            clean.append(part)
            current = _model_in(fields[part].annotation)
            continue
        member = next((m for m in _models_in(current) if _tag(m) == part), None)
        if member is not None:
            current = member  # a union tag: not part of the path people write
        else:
            clean.append(part)
            current = None
    return tuple(clean), current


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str] | None:
    """Field names allowed at ``loc`` (the parent of an unknown key)."""
    _, current = _walk(model, loc)
    fields = getattr(current, "model_fields", None)
    return sorted(fields) if fields else None


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list = []
    for arg in getattr(annotation, "__args__", ()) or ():  # Union, Optional, Annotated, list
        out += _models_in(arg)
    return out


def _model_in(annotation: Any) -> Any:
    models = _models_in(annotation)
    if len(models) == 1:
        return models[0]
    return annotation if models else None


def _tag(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    args = getattr(field.annotation, "__args__", None) if field else None
    return args[0] if args else None


def input_error(err: ValidationError, file: Path | str | None, model: type[BaseModel]) -> InputError:
    """The first validation error, phrased for a person; counts the rest."""
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    shown = dotted(_walk(model, loc)[0])
    more = f" ({len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} after this one)" if len(errors) > 1 else ""
    kind = first["type"]
    if kind == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        return InputError(
            "unknown field" + more,
            file=file,
            field=shown,
            allowed=choices(allowed, str(loc[-1])) if allowed else None,
        )
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        _, union = _walk(model, loc)
        tags = sorted(filter(None, (_tag(m) for m in _models_in(union))))
        invalid = kind == "union_tag_invalid"
        return InputError(
            ("unknown kind" if invalid else "missing 'kind'") + more,
            file=file,
            field=shown + (".kind" if invalid else ""),
            value=first.get("ctx", {}).get("tag") if invalid else first.get("input"),
            allowed=", ".join(tags) or None,
        )
    message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = first.get("input")
    if kind == "missing":
        return InputError("required field is missing" + more, file=file, field=shown)
    if isinstance(value, dict) and len(_show(value, 81)) > 80:  # bounded: never the whole of a huge value
        return InputError(message + more, file=file, field=shown)
    return InputError(message + more, file=file, field=shown or None, value=value)


def blame_override(err: InputError, overrides: Mapping[str, str], scenario_file: Path | str | None) -> InputError:
    """``err`` naming the ``--set`` override its field came from instead of the scenario file.

    ``overrides`` maps each live override path to the override as typed (``path=value``). An
    override owns its path and everything below it (``--set reward={kind: sandbox}`` owns
    ``reward.workers``); the longest owning path wins. An error already naming another file
    (a profile, a histogram, a config.json) keeps it: that file is where the fix goes.
    """
    if not err.field or not overrides:
        return err
    if err.file is not None and (scenario_file is None or err.file != str(scenario_file)):
        return err
    owners = [k for k in overrides if err.field == k or err.field.startswith((k + ".", k + "["))]
    if not owners:
        return err
    typed = overrides[max(owners, key=len)]
    return InputError(err.problem, file=f"--set {typed}", field=err.field, value=err.value, allowed=err.allowed)
