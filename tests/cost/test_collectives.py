import pytest

from twin.runner import plan as plan_of
from twin.cost.collectives import Topology, bus_factor


def topo(**cluster) -> Topology:
    return Topology(plan_of({"model": "qwen3-4b", "cluster": cluster}).cluster)


def test_bus_bandwidth_factors_as_nccl_tests():
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_factor("reduce_scatter", 4) == pytest.approx(3 / 4)
    assert bus_factor("broadcast", 16) == 1.0
    assert bus_factor("all_reduce", 1) == 0.0


def test_intra_node_collective_runs_at_nvlink_bus_bandwidth():
    t = topo(nodes=1, gpus_per_node=8)
    link = t.cluster.intra_node_link
    busbw = link.bandwidth_bytes_per_s * link.efficiency.best
    assert t.bus_bandwidth(list(range(8))) == pytest.approx(busbw)
    size = 1e9
    expected = 2 * 7 / 8 * size / busbw
    assert t.collective_time("all_reduce", size, list(range(8))) == pytest.approx(expected, rel=0.01)


def test_cross_node_group_is_bounded_by_the_slowest_link():
    full = topo(nodes=2, gpus_per_node=8, nics_per_node=8)
    starved = topo(nodes=2, gpus_per_node=8, nics_per_node=1)
    group = list(range(16))
    nic = full.cluster.inter_node_link
    nic_bw = nic.bandwidth_bytes_per_s * nic.efficiency.best
    assert starved.bus_bandwidth(group) == pytest.approx(nic_bw)
    assert full.bus_bandwidth(group) > starved.bus_bandwidth(group)
    assert full.bus_bandwidth(group) <= full.bus_bandwidth(list(range(8)))


def test_time_is_latency_bound_for_small_messages():
    t = topo(nodes=1)
    small = t.collective_time("all_reduce", 1024, list(range(8)))
    assert small > 14 * t.cluster.intra_node_link.latency_s
    assert t.collective_time("all_reduce", 1e9, [0]) == 0.0


def test_a_large_cluster_prices_pools_as_its_first_nodes_do():
    """The graph holds two nodes whatever the cluster's size; pools and pairs of GPUs anywhere
    in a 16,384-node cluster cost what the same shapes cost in a small one."""
    small = topo(nodes=3, gpus_per_node=8, nics_per_node=4)
    large = topo(nodes=16384, gpus_per_node=8, nics_per_node=4)
    assert len(large.graph) == len(topo(nodes=2, gpus_per_node=8, nics_per_node=4).graph)
    for first, count in [(0, 8), (3, 5), (4, 9), (0, 24), (5, 17)]:
        for op in ("all_reduce", "all_gather", "broadcast"):
            expected = small.collective_cost(op, list(range(first, first + count)))
            assert large.collective_cost(op, large.gpus(first, count)) == expected
            shifted = large.gpus(8 * 9000 + first, count)
            assert large.collective_cost(op, shifted) == small.collective_cost(op, small.gpus(first, count))
    big = large.collective_cost("all_gather", large.gpus(0, 131072))[1] / bus_factor("all_gather", 131072)
    assert big == pytest.approx(small.collective_cost("all_gather", small.gpus(0, 24))[1]
                                / bus_factor("all_gather", 24))
    assert large.path_latency(3, 8 * 16000 + 5) == small.path_latency(3, 13)
    far = large.collective_cost("broadcast", [0, *range(8 * 16383, 8 * 16384)])
    assert far == small.collective_cost("broadcast", [0, *range(16, 24)])
