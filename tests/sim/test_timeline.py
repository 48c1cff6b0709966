import numpy as np
import pytest

from twin.sim.timeline import Timeline


def test_busy_time_stays_exact_when_spans_are_capped():
    tl = Timeline(detail_limit=10)
    tl.resource("rollout/engine-0")
    tl.resource("reward/sandbox", units=4)
    starts = np.arange(100, dtype=float)
    tl.add_many("rollout/engine-0", "generate", starts, starts + 0.5)
    tl.add("reward/sandbox", "reward", 0.0, 3.0)
    spans = tl.freeze()
    assert len(spans) == 10 and spans.truncated
    assert spans.busy_seconds() == {"rollout/engine-0": pytest.approx(50.0), "reward/sandbox": 3.0}


def test_spans_are_sorted_and_zero_length_ones_skipped():
    tl = Timeline()
    tl.resource("trainer/pool")
    tl.add("trainer/pool", "update_actor", 5.0, 6.0, step=1)
    tl.add("trainer/pool", "old_logprob", 1.0, 2.0, step=1)
    tl.add("trainer/pool", "nothing", 3.0, 3.0)
    spans = tl.freeze()
    assert list(spans.start) == [1.0, 5.0] and not spans.truncated
    assert [spans.activities[a] for a in spans.activity] == ["old_logprob", "update_actor"]
