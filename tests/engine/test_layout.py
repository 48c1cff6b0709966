"""Kernel state layout: cost packing and slot growth that keeps every queue in order."""

from __future__ import annotations

import numpy as np
import pytest
from engine_workloads import synthetic_costs

from twin.engine import EnginePool
from twin.engine.layout import NFREE, KernelCosts, PoolArrays, total_blocks


def test_kernel_costs_carry_the_table():
    costs = synthetic_costs(budget=32, block_size=4, kv_tokens=103)
    kc = KernelCosts.of(costs)
    assert kc.tab.shape == (3, 33)
    assert kc.params.tolist() == [costs.max_num_seqs, 32, 4, 25, 0] and total_blocks(costs) == 25


@pytest.mark.parametrize("bad, match", [
    (dict(max_num_seqs=9, budget=8), "max_num_batched_tokens must be >= max_num_seqs"),
    (dict(kv_tokens=3, block_size=4), "holds no block"),
])
def test_unrunnable_costs_are_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        KernelCosts.of(synthetic_costs(**bad))


def test_reserve_keeps_free_slots_and_queues():
    s = PoolArrays.empty(2, 4, 10, cap=2)
    s.eng[:, NFREE] = 1  # one slot taken on each engine
    s.reserve(5)
    assert s.cap == 5 and s.eng[:, NFREE].tolist() == [4, 4]
    assert s.free_slots[0, :4].tolist() == [4, 3, 2, 1]  # slot 0 stays taken; pops lowest first


def test_growing_mid_flight_keeps_fcfs_order(small_costs):
    # Wrap the ring buffer (a preempted head plus new submissions), then force growth.
    pool = EnginePool(small_costs, 1)
    pool.submit(np.arange(12), 5, 3, 0.0)
    pool.advance(small_costs.prefill_time(5) * 1.5)
    pool.submit(np.arange(12, 60), 5, 3, pool.now)
    events = pool.advance()
    assert events.ids.tolist() == list(range(60))  # equal work: finish order is admission order


def test_follow_up_rows_keep_their_indices_when_dead_rows_are_dropped():
    from twin.engine.layout import FU_NEW, FU_REPLY, TurnArrays

    t = TurnArrays.empty(size=4)
    first = t.add(np.array([0.1, 0.2, 0.3]), np.array([1, 2, 3]), np.array([4, 5, 6]), first_live=0)
    assert first == 0
    # rows 0 and 1 are no longer referenced: room is made by dropping them, not by growing
    second = t.add(np.array([0.4, 0.5]), np.array([7, 8]), np.array([9, 10]), first_live=2)
    assert second == 3 and t.base == 2 and t.fu_t.size == 4
    rows = np.arange(2, 5) - t.base
    assert t.fu_t[rows].tolist() == [0.3, 0.4, 0.5]
    assert t.fu_i[FU_REPLY, rows].tolist() == [3, 7, 8] and t.fu_i[FU_NEW, rows].tolist() == [6, 9, 10]
    third = t.add(np.full(5, 1.0), np.zeros(5, np.int64), np.ones(5, np.int64), first_live=2)
    assert third == 5 and t.base == 2 and t.fu_t.size >= 8  # everything live: it grows
