"""The one error type a user ever sees.

Every problem with user input (a scenario, a profile, an override, a model config)
becomes an :class:`InputError` that names the file, the field path, the bad value and
what is allowed. The command line prints it as one line and exits with code 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

_MISSING = object()


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


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def choices(names: Iterable[str], given: str | None = None) -> str:
    """'a, b, c' with a close-match suggestion for ``given`` when there is one."""
    names = sorted(names)
    text = ", ".join(names)
    if given is not None:
        close = difflib.get_close_matches(str(given).lower(), names, n=1, cutoff=0.5)
        if close:
            text += f" (did you mean {close[0]!r}?)"
    return text
