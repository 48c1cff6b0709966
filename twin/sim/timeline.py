"""What each resource did, as spans (resource, activity, start, end, step), stored columnar.

Actors append spans as they happen; analysis and exports read the frozen arrays. Names are
interned so a million spans cost a few arrays of numbers, not a million tuples of strings.
Resources are named ``role/unit`` (``rollout/engine-3``, ``trainer/pool``, ``reward/sandbox``).

Busy time per resource is always exact; the spans themselves are kept up to
``detail_limit`` (enough for a trace a viewer can open), so a 1,000-step run of a thousand
GPUs stays within a bounded memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


DETAIL_LIMIT = 1_000_000


class Timeline:
    def __init__(self, detail_limit: int = DETAIL_LIMIT) -> None:
        self.detail_limit = detail_limit
        self._kept = 0
        self._busy: list[float] = []
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
            self._busy.append(0.0)
        return self._resources[name]

    def _activity(self, name: str) -> int:
        return self._activities.setdefault(name, len(self._activities))

    def add(self, resource: str, activity: str, start: float, end: float, step: int = -1) -> None:
        if end <= start:
            return
        rid = self._resources[resource]
        self._busy[rid] += end - start
        if self._kept >= self.detail_limit:
            return
        self._kept += 1
        c = self._cols
        c["resource"].append(rid)
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
        rid = self._resources[resource]
        self._busy[rid] += float((end[keep] - start[keep]).sum())
        room = self.detail_limit - self._kept
        if room <= 0:
            return
        steps = np.broadcast_to(np.asarray(step, dtype=np.int64), start.shape)[keep][:room]
        start, end = start[keep][:room], end[keep][:room]
        self._kept += len(start)
        self._chunks.append((rid, self._activity(activity), start.astype(np.float64),
                             end.astype(np.float64), steps))

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
            busy=list(self._busy),
            truncated=sum(self._busy) > 0 and self._kept >= self.detail_limit,
            activities=list(self._activities),
            resource=cols[0][order], activity=cols[1][order], start=cols[2][order],
            end=cols[3][order], step=cols[4][order],
        )


@dataclass(frozen=True)
class Spans:
    resources: list[str]
    capacity: list[float]
    busy: list[float]          # exact busy unit-seconds per resource, spans kept or not
    truncated: bool            # True when only the first ``detail_limit`` spans were kept
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
        return dict(zip(self.resources, self.busy))
