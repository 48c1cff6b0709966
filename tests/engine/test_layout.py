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
    assert kc.params.tolist() == [costs.max_num_seqs, 32, 4, 25] and total_blocks(costs) == 25


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
