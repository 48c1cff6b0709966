"""Spans → Chrome-trace JSON (opens in Perfetto or chrome://tracing).

One process per role (rollout, trainer, reward, link, …), one thread per unit (an engine,
the trainer pool, a sandbox pool); "X" events in microseconds, plus a counter track of each
role's busy units over time. Given the simulation's extras (:func:`rollout_events`): on each
engine's thread an instant event at every step's end in which it preempted sequences (how many,
tokens recomputed) and a counter of its running preemptions; and a "rollout batches" process
with a span per batch of groups, from its submission to its last group's reward, so a step's
long tail shows as the batch outlasting the engines' busy time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twin.sim.timeline import Spans


def chrome_trace(spans: Spans, max_events: int = 500_000, engine_steps: list[dict] | None = None,
                 batches: list[dict] | None = None) -> dict[str, Any]:
    roles = sorted({r.split("/", 1)[0] for r in spans.resources})
    pid = {role: i + 1 for i, role in enumerate(roles)}
    events: list[dict[str, Any]] = []
    for role, p in pid.items():
        events.append({"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": role}})
    for rid, name in enumerate(spans.resources):
        role = name.split("/", 1)[0]
        events.append({"ph": "M", "name": "thread_name", "pid": pid[role], "tid": rid + 1,
                       "args": {"name": name}})
    n = min(len(spans), max_events)  # a trace a viewer can open; the report keeps the totals
    for i in range(n):
        rid = int(spans.resource[i])
        name = spans.resources[rid]
        events.append({
            "ph": "X", "name": spans.activities[int(spans.activity[i])],
            "pid": pid[name.split("/", 1)[0]], "tid": rid + 1,
            "ts": round(float(spans.start[i]) * 1e6, 3),
            "dur": round(float(spans.end[i] - spans.start[i]) * 1e6, 3),
            "args": {"step": int(spans.step[i])},
        })
    events.extend(_busy_counters(spans, pid))
    events.extend(rollout_events(spans, pid, engine_steps or [], batches or []))
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def rollout_events(spans: Spans, pid: dict[str, int], engine_steps: list[dict],
                   batches: list[dict]) -> list[dict[str, Any]]:
    """Per-engine preemptions at each step's end (instant events and a running counter) and a
    span per rollout batch, on a process of its own."""
    out: list[dict[str, Any]] = []
    tid = {name: rid + 1 for rid, name in enumerate(spans.resources)}
    before: list[float] = []
    wasted_before: list[float] = []
    for snap in engine_steps:
        ts = round(float(snap["time"]) * 1e6, 3)
        for e, (count, wasted) in enumerate(zip(snap["preemptions"], snap["wasted_tokens"])):
            name = f"rollout/engine-{e}"
            new = count - (before[e] if e < len(before) else 0.0)
            if new > 0 and name in tid:
                recomputed = wasted - (wasted_before[e] if e < len(wasted_before) else 0.0)
                out.append({"ph": "i", "s": "t", "name": "preempted", "pid": pid["rollout"], "tid": tid[name],
                            "ts": ts, "args": {"step": snap["step"], "preemptions": new,
                                               "tokens_recomputed": recomputed}})
                out.append({"ph": "C", "name": f"engine-{e} preemptions", "pid": pid["rollout"], "tid": 0,
                            "ts": ts, "args": {"preemptions": count}})
        before, wasted_before = list(snap["preemptions"]), list(snap["wasted_tokens"])
    if batches:
        p = max(pid.values(), default=0) + 1
        out.append({"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": "rollout batches"}})
        out.append({"ph": "M", "name": "thread_name", "pid": p, "tid": 1, "args": {"name": "batches"}})
        for b in batches:
            out.append({"ph": "X", "name": f"batch for step {b['step']}", "pid": p, "tid": 1,
                        "ts": round(float(b["start"]) * 1e6, 3), "dur": round(float(b["end"] - b["start"]) * 1e6, 3),
                        "args": {"step": b["step"], "groups": b["groups"]}})
    return out


def _busy_counters(spans: Spans, pid: dict[str, int]) -> list[dict[str, Any]]:
    """Busy units per role as a step function ("C" counter events)."""
    out = []
    role_of = np.array([pid[r.split("/", 1)[0]] for r in spans.resources], dtype=np.int64)
    if len(spans) == 0:
        return out
    span_pid = role_of[spans.resource]
    for role, p in pid.items():
        mask = span_pid == p
        if not mask.any():
            continue
        times = np.concatenate([spans.start[mask], spans.end[mask]])
        delta = np.concatenate([np.ones(mask.sum()), -np.ones(mask.sum())])
        order = np.lexsort((delta, times))
        level = np.cumsum(delta[order])
        t_sorted = times[order]
        last = np.r_[t_sorted[1:] != t_sorted[:-1], True]  # one point per distinct time
        for t, v in zip(t_sorted[last][:20_000], level[last][:20_000]):
            out.append({"ph": "C", "name": f"{role} busy", "pid": p, "tid": 0,
                        "ts": round(float(t) * 1e6, 3), "args": {"units": float(v)}})
    return out
