"""Microbenchmark suites. Each ``plan`` returns the measurements it would take, as
:class:`Spec` objects: a resumable key, what is measured, and a function that measures it.

Tensors are allocated inside ``measure`` so that a plan costs nothing until it runs and a
resumed run skips the allocation of what it already has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    """One planned measurement. ``measure`` returns (seconds per call, samples)."""

    key: str
    suite: str
    op: str
    dtype: str
    size: float  # FLOP or bytes per call; the rate is size / seconds
    params: str
    measure: Callable[[], tuple[float, int]]


def params(**kw) -> str:
    return " ".join(f"{k}={v}" for k, v in kw.items())


def parse_params(text: str) -> dict[str, float]:
    out = {}
    for item in text.split():
        k, _, v = item.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            pass
    return out
