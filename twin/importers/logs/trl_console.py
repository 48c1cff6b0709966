"""TRL's console output: the ``{'loss': 0.01, 'completions/mean_length': 123.4, ...}`` lines that
transformers' ``ProgressCallback.on_log`` writes (``str(logs)``, a Python dict, not JSON), among
progress bars and warnings.

A printed dict carries no step (``Trainer.log`` adds ``step`` only to the ``log_history`` it saves
in ``trainer_state.json``), so the records are numbered in the order they were printed: one per
``logging_steps``. Each line is read with :func:`ast.literal_eval` (literals only: nothing is
run), bounded to ``MAX_DICT_CHARS``; numpy scalars printed as ``np.float64(1.5)`` are unwrapped
first.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from twin.errors import InputError

MAX_DICT_CHARS = 65_536  # a logged dict of a few hundred metrics is ~10 KB
_DICT = re.compile(r"\{'[^{}]*\}")  # a flat dict with quoted keys: what str(logs) prints
_NUMPY = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint)\d*\(([^()]*)\)")


def looks_like(line: str) -> bool:
    """A line holding a printed dict of TRL's completion metrics."""
    return "'completions/mean_length'" in line and _DICT.search(line) is not None


def parse(line: str, path: Path, number: int) -> dict | None:
    """The dict printed on ``line`` (None when there is none)."""
    m = _DICT.search(line)
    if not m:
        return None
    text = m.group(0)
    if len(text) > MAX_DICT_CHARS:
        raise InputError(f"a printed dict of {len(text):,} characters", file=path, field=f"line {number}",
                         allowed=f"at most {MAX_DICT_CHARS:,} (or TRL's trainer_state.json)")
    try:
        value = ast.literal_eval(_NUMPY.sub(r"\1", text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError("not a printed Python dict", file=path, field=f"line {number}", value=text[:60],
                         allowed="TRL's console lines {'key': value, ...}, or its trainer_state.json") from None
    return value if isinstance(value, dict) else None
