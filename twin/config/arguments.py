"""The arguments of the public functions, checked at the boundary.

Every public function of the Python API (:func:`twin.simulate`, :func:`twin.whatif`,
:func:`twin.plan_budget`, :func:`twin.scale`, :func:`twin.sweep`, :func:`twin.load_scenario`)
checks what it is handed with these helpers before any work, so a wrong type or a value out of
range is a :class:`~twin.errors.InputError` naming the argument, never a ``TypeError``,
``ValueError`` or ``OverflowError`` from deep inside; and a string is never iterated as if it
were a list of its letters. The command line hands the same functions what argparse parsed,
so the same checks name its options (``--gpus``, ``--workers``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from twin.config.scenario import Scenario
from twin.errors import InputError


def integer(value: Any, field: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int within ``low..high`` (either bound may be None); a bool, a float or
    text is refused, as is a huge integer (its message does not print it in full)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("not an integer", field=field, value=value, allowed=_range(low, high, "an integer"))
    if (low is not None and value < low) or (high is not None and value > high):
        raise InputError("out of range", field=field, value=value, allowed=_range(low, high, "an integer"))
    return value


def number(value: Any, field: str, low: float | None = None, high: float | None = None, *,
           positive: bool = False) -> float:
    """``value`` as a finite float within ``low..high`` (``positive``: above 0)."""
    allowed = _range(low, high, "a positive number" if positive else "a finite number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError("not a number", field=field, value=value, allowed=allowed)
    try:
        out = float(value)
    except OverflowError:  # an int beyond a float's range
        raise InputError("out of range", field=field, value=value, allowed=allowed) from None
    if not math.isfinite(out) or (positive and out <= 0) or (low is not None and out < low) \
            or (high is not None and out > high):
        raise InputError("out of range", field=field, value=value, allowed=allowed)
    return out


def flag(value: Any, field: str) -> bool:
    """``value`` as True or False (no truthy stand-ins: ``"no"`` is not False)."""
    if not isinstance(value, bool):
        raise InputError("not True or False", field=field, value=value, allowed="True or False")
    return value


def optional_path(value: Any, field: str) -> str | None:
    """A file path (text or :class:`os.PathLike`) as text, or None when not given."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        text = os.fsdecode(text) if isinstance(text, bytes) else text
        if text == "" or "\x00" in text:
            raise InputError("not a file path", field=field, value=text, allowed="a non-empty file path")
        return text
    raise InputError("not a file path", field=field, value=value, allowed="a file path (str or pathlib.Path), or None")


def optional_name(value: Any, field: str, allowed: str) -> str | None:
    """A name given as text, or None."""
    if value is None or isinstance(value, str):
        return value
    raise InputError("not a name", field=field, value=value, allowed=allowed)


def items(value: Any, field: str, kinds: tuple[type, ...], allowed: str) -> list | None:
    """A list of ``kinds`` (None: not given). One string is one item, never its letters; a
    mapping, a number or an item of another kind is refused."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        value = [value]
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise InputError("not a list", field=field, value=value, allowed=allowed)
    out = list(value)
    for item in out:
        if not isinstance(item, kinds) or isinstance(item, bytes):
            raise InputError("not an item of this list", field=field, value=item, allowed=allowed)
    return out


def overrides(value: Any, field: str = "overrides") -> dict | list[str] | None:
    """Overrides: a mapping of dotted paths to values, or ``"path=value"`` strings (one string
    is one override), or None."""
    allowed = "a mapping of dotted paths to values, or a list of 'path=value' strings"
    if value is None or isinstance(value, Mapping):
        if value is not None:
            for key in value:
                if not isinstance(key, str):
                    raise InputError("not a dotted path", field=field, value=key, allowed=allowed)
        return None if value is None else dict(value)
    return items(value, field, (str,), allowed)


def source(value: Any, field: str = "scenario") -> Any:
    """A scenario reference: None, a built-in name or YAML path, a mapping, or a Scenario."""
    if value is None or isinstance(value, (str, Path, Mapping, Scenario)):
        return value
    if isinstance(value, os.PathLike):
        return Path(os.fspath(value))
    raise InputError("not a scenario", field=field, value=value,
                     allowed="a built-in name, a YAML path, a mapping of scenario fields, a Scenario, or None")


def keyword_overrides(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Python keywords as overrides: ``run__steps=3`` is ``{"run.steps": 3}``."""
    return {k.replace("__", "."): v for k, v in kwargs.items()}


def _range(low, high, kind: str) -> str:
    if low is not None and high is not None:
        return f"{kind} {low:,}..{high:,}" if isinstance(low, int) else f"{kind} in [{low}, {high}]"
    if low is not None:
        return f"{kind} >= {low:,}" if isinstance(low, int) else f"{kind} >= {low}"
    if high is not None:
        return f"{kind} <= {high:,}" if isinstance(high, int) else f"{kind} <= {high}"
    return kind
