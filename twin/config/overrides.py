"""Overrides: ``--set dotted.path=value`` parsed, and applied to a scenario's data.

The one way to edit a scenario: the command line's ``--set``, the Python API's keywords, the
verdict's pressures, the planner's candidates and the framework profiles' defaults all become
dotted paths applied here to the input's data, which is then validated anew; the input itself
is never changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import yaml

from twin.config.io import MAX_DEPTH, MAX_VALUES, UnsafeYAML, load_yaml
from twin.config.registry import looks_like_path
from twin.errors import InputError, _show

__all__ = ["apply_overrides", "live_overrides", "parse_overrides", "parse_typed", "split_top_level", "typed_text"]


def parse_overrides(items: Iterable[str]) -> dict[str, object]:
    """``['a.b=3', 'c=true']`` -> ``{'a.b': 3, 'c': True}``; values parse as YAML scalars.

    A relative path typed on the command line means a file where the command runs, not beside
    the scenario: one that exists from here is made absolute. A path given twice keeps its
    last value, applied in the place of the last one.
    """
    return {key: value for key, value, _ in parse_typed(items)}


def parse_typed(items: Iterable[str]) -> list[tuple[str, object, str]]:
    """(path, value, the override as typed) per override, in the order they apply."""
    out: dict[str, tuple[str, object, str]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise InputError("an override must look like dotted.path=value", field="--set", value=item,
                             allowed="e.g. --set placement.rollout.gpus=64")
        try:
            value = load_yaml(raw) if raw.strip() else ""
        except UnsafeYAML as exc:
            raise InputError(f"the value cannot be loaded: {exc.problem}", field=key.strip(),
                             value=raw, allowed=f"YAML nested at most {MAX_DEPTH} levels, without duplicate keys, "
                             f"holding at most {MAX_VALUES:,} values with its aliases expanded") from None
        except yaml.YAMLError:
            value = raw
        if isinstance(value, str) and looks_like_path(value) and Path(value).expanduser().exists():
            value = str(Path(value).expanduser().resolve())
        key = key.strip()
        out.pop(key, None)
        out[key] = (key, value, _one_line(item.strip()))
    return list(out.values())


def typed_text(key: str, value: object) -> str:
    """An override given as data, written the way it would be typed after --set."""
    if isinstance(value, str):
        return _one_line(f"{key}={value}")
    try:
        return _one_line(f"{key}={json.dumps(value)}")
    except (TypeError, ValueError):  # not JSON, or an int beyond Python's digit limit
        return _one_line(f"{key}={_show(value, 100)}")


def _one_line(text: str, limit: int = 100) -> str:
    """Text fit for an error's one line: control characters escaped, long text cut."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def live_overrides(typed: list[tuple[str, str]]) -> dict[str, str]:
    """Path -> override as typed, leaving out overrides that a later one replaced whole
    (``a.b=1`` then ``a={...}``): their values are gone from the scenario."""
    out: dict[str, str] = {}
    for key, text in typed:
        for earlier in [k for k in out if k == key or k.startswith(key + ".")]:
            del out[earlier]
        out[key] = text
    return out


def split_top_level(text: str, at: Callable[[str], bool] = lambda rest: True) -> list[str]:
    """Split ``text`` at the commas outside brackets and quotes, where ``at(rest)`` holds for the
    text after the comma: ``"1,{a: 1, b: 2}"`` → ``["1", "{a: 1, b: 2}"]``. Empty parts dropped."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0 and at(text[i + 1:]):
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def apply_overrides(data: dict, overrides: Mapping[str, object]) -> dict:
    """A copy of ``data`` with each dotted path set; intermediate mappings are created.

    Unknown paths are not rejected here: validation rejects them with the allowed fields.
    """
    data = copy.deepcopy(data)
    for path, value in overrides.items():
        node = data
        parts = path.split(".")
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if isinstance(child, str) and part == "model":  # --set model.dtype=fp8 on a preset name
                child = {"preset": child}
            if child is None:
                child = {}
            if not isinstance(child, dict):
                raise InputError("cannot set a field inside a value that is not a mapping",
                                 field=".".join(parts[: i + 1]), value=child,
                                 allowed=f"override {'.'.join(parts[: i + 1])} itself")
            node[part] = child
            node = child
        node[parts[-1]] = value
    return data
