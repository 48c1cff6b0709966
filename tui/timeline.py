"""Spans → busy fractions per time bucket, for the replay charts.

Busy unit-seconds up to time t are F(t) = Σ clip(t − start, 0, end − start) over the spans;
with starts and ends sorted and prefix-summed, F at any t is two binary searches, so a
bucket's busy time F(b₁) − F(b₀) costs O(log n) whatever the number of spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.sim.timeline import Spans


@dataclass(frozen=True)
class _Integral:
    starts: np.ndarray
    start_sums: np.ndarray
    ends: np.ndarray
    end_sums: np.ndarray

    @classmethod
    def of(cls, start: np.ndarray, end: np.ndarray) -> "_Integral":
        s, e = np.sort(start), np.sort(end)
        return cls(s, np.r_[0.0, np.cumsum(s)], e, np.r_[0.0, np.cumsum(e)])

    def __call__(self, t: np.ndarray) -> np.ndarray:
        """Busy unit-seconds before each time in ``t``."""
        ns = np.searchsorted(self.starts, t, side="right")
        ne = np.searchsorted(self.ends, t, side="right")
        return (t * ns - self.start_sums[ns]) - (t * ne - self.end_sums[ne])


def bucket_edges(t0: float, t1: float, buckets: int) -> np.ndarray:
    return np.linspace(t0, t1, buckets + 1)


def busy_fraction(spans: Spans, resources: list[int], edges: np.ndarray) -> np.ndarray:
    """Fraction of the units of ``resources`` (indices into ``spans.resources``) busy in
    each bucket between consecutive ``edges``; 0..1."""
    units = sum(spans.capacity[r] for r in resources)
    width = np.diff(edges)
    if units <= 0 or len(spans) == 0:
        return np.zeros(len(width))
    mask = np.isin(spans.resource, resources)
    busy = np.diff(_Integral.of(spans.start[mask], spans.end[mask])(edges))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(width > 0, busy / (units * width), 0.0)
    # F(t) subtracts large prefix sums: rounding leaves ~1e-12 where nothing ran, which
    # would draw as a sliver of work on an idle resource.
    frac[np.abs(frac) < 1e-9] = 0.0
    return np.clip(frac, 0.0, 1.0)


def roles(spans: Spans) -> dict[str, list[int]]:
    """Resource indices per role (``rollout``, ``trainer``, ``reward``, ``link``…), in
    order of first appearance."""
    out: dict[str, list[int]] = {}
    for i, name in enumerate(spans.resources):
        out.setdefault(name.split("/", 1)[0], []).append(i)
    return out


def dominant_activity(spans: Spans, resource: int, edges: np.ndarray) -> list[str | None]:
    """The activity that kept ``resource`` busiest in each bucket (None where idle)."""
    best = np.zeros(len(edges) - 1)
    names: list[str | None] = [None] * (len(edges) - 1)
    on = spans.resource == resource
    for aid in np.unique(spans.activity[on]):
        mask = on & (spans.activity == aid)
        busy = np.diff(_Integral.of(spans.start[mask], spans.end[mask])(edges))
        busy[np.abs(busy) < 1e-9 * np.diff(edges)] = 0.0  # rounding, as in busy_fraction
        for i in np.nonzero(busy > best)[0]:
            best[i], names[i] = busy[i], spans.activities[int(aid)]
    return names
