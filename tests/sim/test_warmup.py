"""The first run's kernel compilation: found from the cache, said with an estimate, in parts."""

from __future__ import annotations

import io

import pytest

from twin import runner
from twin.jit import is_cached
from twin.sim import warmup


@pytest.fixture(scope="module")
def plan():
    return runner.prepare("grpo-8b-disaggregated", ["run.steps=1", "algorithm.prompts_per_step=4"])


def test_nothing_is_missing_once_the_parts_ran(plan):
    for part in warmup.PARTS.values():
        part(plan)
    assert warmup.missing(plan) == []
    out = io.StringIO()
    warmup.prepare(plan, out)
    assert out.getvalue() == ""  # silent when every kernel is cached


def test_a_missing_part_is_said_with_an_estimate_and_progress(plan, monkeypatch):
    monkeypatch.setattr(warmup, "missing", lambda plan: ["small", "interrupt"])
    out = io.StringIO()
    warmup.prepare(plan, out, processes=1)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("twin: compiling the simulator's kernels") and " idle core" in lines[0]
    assert [line.split(":")[1] for line in lines[1:]] == [" compiling kernels"] * 2
    assert "2 of 2 parts" in lines[-1]


def test_parts_compile_in_forked_processes(plan, monkeypatch):
    monkeypatch.setattr(warmup, "missing", lambda plan: ["interrupt", "small"])
    out = io.StringIO()
    warmup.prepare(plan, out, processes=2)
    assert "2 of 2 parts" in out.getvalue().splitlines()[-1]


def test_the_estimate_grows_with_load_and_never_beats_the_largest_part():
    parts = list(warmup.PART_SECONDS)
    for processes in (1, 2):
        idle = warmup.estimate_s(parts, processes, cores=2, load=0.0)
        assert warmup.estimate_s(parts, processes, cores=2, load=6.0) > idle
        assert idle >= max(warmup.PART_SECONDS.values())
    assert warmup.estimate_s(parts, 3, cores=64, load=0.0) >= max(warmup.PART_SECONDS.values())


def test_a_plain_function_needs_no_compiling():
    assert is_cached(lambda: None)
