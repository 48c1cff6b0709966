import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.engine.balance import balance, balance_kernel, balance_reference


@pytest.mark.parity
@settings(max_examples=100, deadline=None)
@given(seqs=st.lists(st.integers(1, 30_000), min_size=1, max_size=300), ranks=st.integers(1, 64))
def test_balance_kernel_matches_reference(seqs, ranks):
    desc = np.sort(np.asarray(seqs, dtype=np.float64))[::-1].copy()
    for a, b in zip(balance_kernel(desc, ranks), balance_reference(desc, ranks)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_balance_conserves_tokens_and_never_splits_a_sequence():
    seqs = np.array([28_000, 500, 400, 300, 200, 100], dtype=float)
    tokens, pairs = balance(seqs, 4)
    assert tokens.sum() == seqs.sum()
    assert tokens.max() == 28_000  # the longest sequence alone sets the pace
    assert pairs.sum() == pytest.approx((seqs * (seqs + 1) / 2).sum())


@settings(max_examples=50, deadline=None)
@given(seqs=st.lists(st.integers(1, 30_000), min_size=1, max_size=50), extra=st.integers(0, 500))
def test_fewer_sequences_than_ranks_fill_the_first_ranks_one_each(seqs, extra):
    """What lets a pass balance over as many ranks as sequences: the other ranks stay idle."""
    desc = np.sort(np.asarray(seqs, dtype=np.float64))[::-1].copy()
    many, few = balance_kernel(desc, len(seqs) + extra), balance_kernel(desc, len(seqs))
    for a, b in zip(many, few):
        assert np.array_equal(a[:len(seqs)], b) and not a[len(seqs):].any()
