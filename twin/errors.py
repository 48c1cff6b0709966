"""The one error type a user ever sees.

Every problem with user input (a scenario, a profile, an override, a model config)
becomes an :class:`InputError` that names the file, the field path, the bad value and
what is allowed. The command line prints it as one line and exits with code 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

class _Missing:
    """No value given. Pickled by name, so an error that crosses a process pool (the verdict's
    re-simulations) still knows it had none, and its message stays the same run to run."""

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING = _Missing()


class InputError(Exception):
    """Bad input, described well enough that the user can fix it without a traceback."""

    def __init__(
        self,
        problem: str,
        *,
        file: str | Path | None = None,
        field: str | None = None,
        value: object = _MISSING,
        allowed: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = str(file) if file is not None else None
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        text = f"{where}: {self.problem}" if where else self.problem
        if self.value is not _MISSING:
            text += f" (got {_show(self.value)})"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        return text

    def located(self, file: str | Path | None = None, prefix: str | None = None) -> "InputError":
        """The same error with a file and/or a parent field path filled in."""
        field = ".".join(p for p in (prefix, self.field) if p) or None
        return InputError(
            self.problem,
            file=self.file or (str(file) if file is not None else None),
            field=field,
            value=self.value,
            allowed=self.allowed,
        )


def _show(value: object, width: int = 80) -> str:
    """``repr(value)`` cut to ``width`` characters, built only as far as that: a huge or
    deeply nested value (an expanded YAML alias bomb) costs no more than a short one."""
    text = _repr_prefix(value, width + 1)
    return text if len(text) <= width else text[: width - 3] + "..."


_BRACKETS = {list: "[]", tuple: "()", set: "{}", frozenset: "{}", dict: "{}"}


def _repr_prefix(value: object, n: int) -> str:
    """``repr(value)`` when it is shorter than ``n`` characters, else a string of at least
    ``n`` characters that ``repr(value)`` starts with. Recursion stops at ``n`` characters,
    since every level of nesting adds one."""
    kind = type(value)
    if kind in _BRACKETS and (value or kind in (list, tuple, dict)):
        if kind is frozenset:
            return "frozenset(" + _repr_prefix(set(value), n - 10) + ")"
        out = _BRACKETS[kind][0]
        items = value.items() if kind is dict else value
        for i, item in enumerate(items):
            if len(out) >= n:
                return out
            if i:
                out += ", "
            if kind is dict:
                out += _repr_prefix(item[0], n - len(out))
                out += ": " + _repr_prefix(item[1], n - len(out) - 2)
            else:
                out += _repr_prefix(item, n - len(out))
        if kind is tuple and len(value) == 1:
            out += ","
        return out + _BRACKETS[kind][1]
    if isinstance(value, str) and len(value) > n:
        return repr(value[:n])
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * n:
        return f"an integer of {len(str(value)) if value.bit_length() < 14000 else 'over 4000'} digits"
    try:
        return repr(value)
    except ValueError:  # e.g. an int beyond Python's digit limit
        return f"<{type(value).__name__}>"


def choices(names: Iterable[str], given: str | None = None) -> str:
    """'a, b, c' with a close-match suggestion for ``given`` when there is one."""
    names = sorted(names)
    text = ", ".join(names)
    if given is not None:
        close = difflib.get_close_matches(str(given).lower(), names, n=1, cutoff=0.5)
        if close:
            text += f" (did you mean {close[0]!r}?)"
    return text
