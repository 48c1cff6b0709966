"""Microbenchmark suites. Each ``plan`` returns the measurements it would take, as
:class:`Spec` objects: a resumable key, what is measured, and a function that measures it.

Tensors are allocated inside ``measure`` so that a plan costs nothing until it runs and a
resumed run skips the allocation of what it already has.

A quick plan (``--quick``) lists first what its suite's profile fields need to be fitted at all
(each axis of a grid at its two ends and its middle, :func:`coarse_to_fine`), then ``optional``
refinements, coarse to fine, which the runner measures while the suite's time budget lasts
(``calibrate.timing.Budget``). A full plan has no optional measurement.
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
    optional: bool = False  # a refinement, measured while the suite's time budget lasts (quick plans)


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


def coarse_to_fine(values):
    """``values`` reordered so that each prefix spans them as evenly as it can: the two ends, the
    middle, then the middles of the gaps left, level by level ([1, 8, 32, 128, 1024] ->
    [1, 1024, 32, 8, 128]). The first three are the fewest points that show a curve's ends and
    its bend; later ones refine it."""
    values = list(values)
    if len(values) <= 2:
        return values
    order, gaps = [0, len(values) - 1], [(0, len(values) - 1)]
    while gaps:
        next_gaps = []
        for lo, hi in gaps:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                order.append(mid)
                next_gaps += [(lo, mid), (mid, hi)]
        gaps = next_gaps
    return [values[i] for i in order]


def rank(values) -> dict:
    """Each value's position in :func:`coarse_to_fine` order (0 and 1: the ends, 2: the middle)."""
    return {v: i for i, v in enumerate(coarse_to_fine(values))}
