"""What each resource did, as spans (resource, activity, start, end, step), stored columnar.

Actors append spans as they happen; analysis and exports read the frozen arrays. Names are
interned so a million spans cost a few arrays of numbers, not a million tuples of strings.
Resources are named ``role/unit`` (``rollout/engine-3``, ``trainer/pool``, ``reward/sandbox``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class Timeline:
    def __init__(self) -> None:
        self._resources: dict[str, int] = {}
        self._activities: dict[str, int] = {}
        self._capacity: dict[str, float] = {}
        self._cols: dict[str, list] = {k: [] for k in ("resource", "activity", "start", "end", "step")}
        self._chunks: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = []

    def resource(self, name: str, units: float = 1.0) -> int:
        """Register (once) a resource of ``units`` parallel units (GPUs, workers)."""
        if name not in self._resources:
            self._resources[name] = len(self._resources)
            self._capacity[name] = float(units)
        return self._resources[name]

    def _activity(self, name: str) -> int:
        return self._activities.setdefault(name, len(self._activities))

    def add(self, resource: str, activity: str, start: float, end: float, step: int = -1) -> None:
        if end <= start:
            return
        c = self._cols
        c["resource"].append(self._resources[resource])
        c["activity"].append(self._activity(activity))
        c["start"].append(start)
        c["end"].append(end)
        c["step"].append(step)

    def add_many(self, resource: str, activity: str, start: np.ndarray, end: np.ndarray,
                 step: np.ndarray | int = -1) -> None:
        """Many spans of one resource and activity at once (e.g. an engine's busy intervals)."""
        keep = end > start
        if not keep.any():
            return
        steps = np.broadcast_to(np.asarray(step, dtype=np.int64), start.shape)[keep]
        self._chunks.append((self._resources[resource], self._activity(activity),
                             start[keep].astype(np.float64), end[keep].astype(np.float64), steps))

    def freeze(self) -> "Spans":
        c = self._cols
        parts = [(np.array(c["resource"], np.int64), np.array(c["activity"], np.int64),
                  np.array(c["start"], np.float64), np.array(c["end"], np.float64),
                  np.array(c["step"], np.int64))]
        for rid, aid, start, end, steps in self._chunks:
            parts.append((np.full(len(start), rid), np.full(len(start), aid), start, end, steps))
        cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
        order = np.lexsort((cols[1], cols[0], cols[2]))  # by start, then resource, activity
        return Spans(
            resources=list(self._resources),
            capacity=[self._capacity[r] for r in self._resources],
            activities=list(self._activities),
            resource=cols[0][order], activity=cols[1][order], start=cols[2][order],
            end=cols[3][order], step=cols[4][order],
        )


@dataclass(frozen=True)
class Spans:
    resources: list[str]
    capacity: list[float]
    activities: list[str]
    resource: np.ndarray
    activity: np.ndarray
    start: np.ndarray
    end: np.ndarray
    step: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    def busy_seconds(self) -> dict[str, float]:
        """Busy unit-seconds per resource (overlapping spans of a multi-unit pool add up)."""
        sums = np.bincount(self.resource, weights=self.duration, minlength=len(self.resources))
        return {name: float(sums[i]) for i, name in enumerate(self.resources)}
