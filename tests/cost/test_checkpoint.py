"""Checkpoint size, write, blocking and read times."""

import json

import pytest

from twin.config.load import load_scenario
from twin.config.plan import resolve
from twin.cost.checkpoint import STORAGE_PER_GPU, checkpoint_bytes, checkpoint_cost, storage_rates


def _plan(base, *overrides):
    return resolve(load_scenario(base, list(overrides)))


def test_size_is_weights_and_optimizer_state_once_and_the_critic_too(base):
    plan = _plan(base)
    assert checkpoint_bytes(plan) == pytest.approx(plan.model.total_params * 14)
    ppo = _plan(base, "algorithm.name=ppo")
    assert checkpoint_bytes(ppo) == pytest.approx(2 * checkpoint_bytes(plan))


def test_storage_defaults_to_the_llama3_fabric_share_per_gpu(base):
    assert STORAGE_PER_GPU == pytest.approx(2e12 / 16_384)
    plan = _plan(base)
    assert storage_rates(plan) == pytest.approx((8 * STORAGE_PER_GPU, 8 * STORAGE_PER_GPU))
    host = plan.cluster.host.model_dump(mode="json")
    host.update(storage_write_bytes_per_s=5e9, storage_read_bytes_per_s=2e10)
    # JSON is YAML; a Python repr is not (its None reads as the string 'None')
    assert storage_rates(_plan(base, f"cluster.host={json.dumps(host)}")) == (5e9, 2e10)


def test_write_time_falls_with_the_nodes_that_write(base):
    one, four = checkpoint_cost(_plan(base)), checkpoint_cost(_plan(base, "cluster.nodes=4"))
    assert one.bytes == four.bytes
    assert four.write_s == pytest.approx(one.write_s / 4)
    assert one.read_s == pytest.approx(one.write_s)  # read rate defaults to the write rate


def test_asynchronous_checkpoints_block_only_for_the_copy_to_host(base):
    sync = checkpoint_cost(_plan(base))
    background = checkpoint_cost(_plan(base, "faults.checkpoint.asynchronous=true"))
    assert sync.blocking_s == sync.write_s
    assert background.write_s == sync.write_s
    assert background.blocking_s == background.copy_s < sync.write_s / 10
