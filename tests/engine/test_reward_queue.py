import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.engine.reward_queue import new_pool, sandbox_queue_kernel, sandbox_queue_reference


def _jobs(seed, n, tries, fail_rate):
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, 50, n))
    service = rng.lognormal(0, 1, (n, tries))
    failed = rng.random((n, tries)) < fail_rate
    return arrival, service, failed


@pytest.mark.parity
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), workers=st.integers(1, 40),
       tries=st.integers(1, 3), fail=st.floats(0, 0.6), timeout=st.floats(0.1, 20), calls=st.integers(1, 3))
def test_kernel_matches_reference(seed, n, workers, tries, fail, timeout, calls):
    arrival, service, failed = _jobs(seed, n, tries, fail)
    slow = 1.0 + 0.5 * (np.random.default_rng(seed).random(workers) < 0.3)  # some workers straggle
    k_state, r_state = new_pool(workers, slow), new_pool(workers, slow)
    for part in np.array_split(np.arange(n), calls):  # state carries over between calls
        if len(part) == 0:
            continue
        a = (arrival[part], service[part], failed[part])
        k = sandbox_queue_kernel(*a, *k_state, timeout)
        r = sandbox_queue_reference(*a, *r_state, timeout)
        for x, y in zip(k, r):
            np.testing.assert_allclose(x, y, rtol=1e-12)


def test_one_worker_serves_in_sequence():
    arrival = np.array([0.0, 0.0, 0.0])
    service = np.array([[1.0], [2.0], [3.0]])
    start, end, worker, attempts, ok, busy = sandbox_queue_kernel(
        arrival, service, np.zeros((3, 1), bool), *new_pool(1), np.inf)
    assert list(end) == [1.0, 3.0, 6.0] and busy[0] == 6.0 and ok.all()


def test_enough_workers_means_no_waiting():
    arrival, service, failed = _jobs(1, 100, 1, 0.0)
    start, end, *_ = sandbox_queue_kernel(arrival, service, failed, *new_pool(100), np.inf)
    np.testing.assert_allclose(start, arrival)
    np.testing.assert_allclose(end, arrival + service[:, 0])


def test_timeouts_and_retries():
    arrival = np.array([0.0])
    service = np.array([[50.0, 2.0]])  # first attempt times out at 10 s, the retry succeeds
    start, end, worker, attempts, ok, busy = sandbox_queue_kernel(
        arrival, service, np.zeros((1, 2), bool), *new_pool(2), 10.0)
    assert end[0] == pytest.approx(12.0) and attempts[0] == 2 and ok[0]
    failed = np.array([[True, True]])
    *_, ok, _ = sandbox_queue_kernel(arrival, np.array([[1.0, 1.0]]), failed, *new_pool(1), 10.0)
    assert not ok[0]


def test_a_slow_worker_takes_its_factor_longer_and_can_time_out():
    # two workers, the second 1.5x slow: jobs alternate between them, its jobs take 1.5x
    arrival = np.array([0.0, 0.0, 10.0, 10.0])
    service = np.array([[2.0], [2.0], [4.0], [4.0]])
    start, end, worker, attempts, ok, busy = sandbox_queue_kernel(
        arrival, service, np.zeros((4, 1), bool), *new_pool(2, np.array([1.0, 1.5])), np.inf)
    took = dict(zip(zip(worker.tolist(), service[:, 0].tolist()), (end - start).tolist()))
    assert took == {(0, 2.0): 2.0, (1, 2.0): 3.0, (0, 4.0): 4.0, (1, 4.0): 6.0}
    # a sample that fits the timeout at full speed may not on a slow worker
    *_, ok, _ = sandbox_queue_kernel(np.array([0.0]), np.array([[8.0]]), np.zeros((1, 1), bool),
                                     *new_pool(1, np.array([1.5])), 10.0)
    assert not ok[0]
