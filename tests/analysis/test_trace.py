import json

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
