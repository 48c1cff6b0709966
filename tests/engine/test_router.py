"""Routers: round robin cycles; least loaded fills the emptiest engine, lowest index first."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.engine.router import route


def test_round_robin_continues_where_it_stopped():
    assert route("round_robin", 5, np.zeros(3, np.int64), 2).tolist() == [2, 0, 1, 2, 0]


@settings(max_examples=50, deadline=None)
@given(load=st.lists(st.integers(0, 20), min_size=1, max_size=9), n=st.integers(0, 60))
def test_least_loaded_is_greedy_argmin(load, n):
    load = np.array(load, np.int64)
    counts, expected = load.copy(), []
    for _ in range(n):
        e = int(np.argmin(counts))  # first minimum: lowest index on ties
        expected.append(e)
        counts[e] += 1
    assert route("least_loaded", n, load, 0).tolist() == expected


def test_least_loaded_balances_an_idle_pool():
    engines = route("least_loaded", 1000, np.zeros(7, np.int64), 0)
    counts = np.bincount(engines, minlength=7)
    assert counts.max() - counts.min() <= 1


def test_unknown_router():
    with pytest.raises(ValueError, match="unknown router"):
        route("random", 1, np.zeros(1, np.int64), 0)
