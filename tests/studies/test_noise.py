import pytest
from hypothesis import given
from hypothesis import strategies as st

from twin.studies.noise import EXTRA_SEEDS, band, reseeded, spread, within

positive = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False)


def test_reseeded_counts_up_from_the_run_seed_and_leaves_the_data_alone():
    data = {"name": "x", "run": {"steps": 3, "seed": 7}}
    again = reseeded(data)
    assert [d["run"]["seed"] for d in again] == [8, 9][:EXTRA_SEEDS]
    assert all(d["run"]["steps"] == 3 and d["name"] == "x" for d in again)
    assert data == {"name": "x", "run": {"steps": 3, "seed": 7}}
    assert [d["run"]["seed"] for d in reseeded({"name": "x"}, 3)] == [1, 2, 3]  # the schema's default 0


@given(st.lists(positive, min_size=2, max_size=8), st.floats(min_value=1e-3, max_value=1e3))
def test_spread_is_relative_and_not_negative(values, scale):
    s = spread(values)
    assert s is not None and s >= 0
    assert spread([v * scale for v in values]) == pytest.approx(s, rel=1e-2, abs=1e-9)


def test_spread_of_equal_values_is_zero_and_undefined_without_two_values_or_a_mean():
    assert spread([5.0, 5.0, 5.0]) == 0.0
    assert spread([90.0, 100.0, 110.0]) == pytest.approx(0.2)
    assert spread([5.0]) is None and spread([]) is None
    assert spread([0.0, 0.0]) is None


def test_a_difference_is_within_the_largest_band_only():
    assert band([0.01, None, 0.03]) == 0.03 and band([None]) is None
    assert within(0.02, 0.03) and within(-0.02, 0.03)
    assert not within(0.03, 0.03) and not within(0.5, 0.03)
    assert not within(0.0, None)  # no band known: a difference is read as it is
