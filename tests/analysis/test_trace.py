import json

import pytest

from twin.analysis.trace import chrome_trace
from twin.sim.timeline import Timeline


def test_chrome_trace_has_named_tracks_and_microsecond_spans():
    tl = Timeline()
    tl.resource("rollout/engine-0")
    tl.resource("trainer/pool")
    tl.add("rollout/engine-0", "generate", 0.0, 1.5, step=0)
    tl.add("trainer/pool", "update_actor", 1.5, 2.0, step=0)
    trace = chrome_trace(tl.freeze())
    json.dumps(trace)  # serialisable as is
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"rollout", "trainer", "rollout/engine-0", "trainer/pool"} <= names
    gen = next(e for e in events if e["ph"] == "X" and e["name"] == "generate")
    assert gen["ts"] == 0.0 and gen["dur"] == 1_500_000.0
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and max(e["args"]["units"] for e in counters) == 1.0


def test_trace_shows_each_engine_s_preemptions_and_each_rollout_batch(preempting_report):
    """Issue 26 item 18: preemptions per engine (instant events at a step's end, with the
    tokens recomputed, and a running counter) and a span per rollout batch."""
    report = preempting_report
    events = report.chrome_trace()["traceEvents"]
    json.dumps(events)
    preempted = [e for e in events if e["ph"] == "i" and e["name"] == "preempted"]
    assert preempted and {e["args"]["step"] for e in preempted} <= {0, 1}
    assert sum(e["args"]["preemptions"] for e in preempted) == report.data.counters["preemptions"]
    # as counted at each step's end: the run's total settles what the prefix cache kept after
    assert sum(e["args"]["tokens_recomputed"] for e in preempted) == pytest.approx(
        report.data.counters["wasted_tokens"], rel=1e-3)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all(threads[(e["pid"], e["tid"])].startswith("rollout/engine-") for e in preempted)
    batches = [e for e in events if e["ph"] == "X" and e["name"].startswith("batch for step")]
    assert len(batches) >= 2 and all(e["dur"] > 0 for e in batches)
    steps = report.result.steps
    first = min(batches, key=lambda e: e["ts"])
    assert first["ts"] == 0.0 and first["ts"] + first["dur"] <= steps[0].end * 1e6 + 1
