"""Results as pandas DataFrames (``to_frame()`` on a report and on each study's result).

pandas is optional: it is imported only here, when a frame is asked for, and its absence is an
:class:`~twin.errors.InputError` that says how to install it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twin.errors import InputError

PANDAS_FIX = "pip install pandas"


def frame(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None):
    """``rows`` (plain dicts, one per row) as a DataFrame; nested dicts flattened as ``a.b`` columns."""
    try:
        import pandas as pd
    except ImportError:
        raise InputError("to_frame() needs pandas, which is not installed", field="to_frame",
                         allowed=PANDAS_FIX) from None
    flat = [_flatten(r) for r in rows]
    df = pd.DataFrame(flat)
    if columns is not None:
        df = df[[c for c in columns if c in df.columns] + [c for c in df.columns if c not in columns]]
    return df


def _flatten(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
