"""Progress lines: a share of the work at a time in a log, and never silent for long."""

from __future__ import annotations

import io

from twin.cli import progress


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_per_quarter_and_one_per_heartbeat_between(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()  # not a terminal
    with progress.count_printer("twin plan", stream=out) as tick:
        for done in range(1, 1001):  # 1,000 candidates, 0.5 s each: 500 s in all
            clock.now += 0.5
            tick(done, 1000, "simulating 3 steps")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("twin plan: simulating 3 steps: 2 of 1000, 1 s elapsed")
    assert lines[-1].startswith("twin plan: simulating 3 steps: 1000 of 1000, 500 s elapsed")
    elapsed = [float(line.split(", ")[1].split(" s elapsed")[0]) for line in lines]
    assert max(b - a for a, b in zip(elapsed, elapsed[1:])) <= progress.HEARTBEAT_S
    assert len(lines) < 30  # a heartbeat, not a line per candidate


def test_a_short_batch_says_nothing(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()
    with progress.count_printer("twin plan", stream=out) as tick:
        for done in range(1, 11):
            clock.now += 0.05
            tick(done, 10)
    assert out.getvalue() == ""
