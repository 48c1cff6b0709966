"""Two-tier scale-up topologies: an NVLink domain larger than a node (GB200/GB300 NVL72: 72 GPUs
on 18 trays of 4) and a switchless mesh inside a node (AMD xGMI)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.cost.collectives import Topology, bus_factor
from twin.runner import plan as plan_of

NVL72 = dict(gpus_per_node=4, nvlink_domain_gpus=72, gpu="gb200", host="grace-tray-host",
             intra_node_link="nvlink5", inter_node_link="ib-ndr400", nics_per_node=4)


def topo(**cluster) -> Topology:
    return Topology(plan_of({"model": "qwen3-4b", "cluster": cluster}).cluster)


def rate(link) -> float:
    return link.bandwidth_bytes_per_s * link.efficiency.best


def test_64_gpus_inside_one_nvl72_domain_run_at_nvlink_rate():
    rack = topo(nodes=18, **NVL72)
    nvlink = rate(rack.cluster.intra_node_link)
    assert rack.bus_bandwidth(rack.gpus(0, 64)) == pytest.approx(nvlink)
    assert rack.bus_bandwidth(list(range(0, 64, 3))) == pytest.approx(nvlink)  # any 22 of the rack
    # the same 64 GPUs on trays of 4 joined only by their NICs: a tray's four NDR NICs bind
    trays = topo(**{**NVL72, "nvlink_domain_gpus": None, "nodes": 18})
    nic = rate(trays.cluster.inter_node_link)
    assert trays.bus_bandwidth(trays.gpus(0, 64)) == pytest.approx(4 * nic)
    size = 2**30
    assert (trays.collective_time("all_reduce", size, trays.gpus(0, 64))
            > 3 * rack.collective_time("all_reduce", size, rack.gpus(0, 64)))


def test_two_racks_cross_the_network_at_each_racks_egress():
    """144 GPUs over two NVL72 racks: a ring crosses between the racks once each way, spread
    over every rail of a rack (each tray's own NICs). With a NIC per GPU that egress (72 × 47
    GB/s) exceeds a GPU's NVLink port, so the ring stays NVLink-bound, as CoreWeave's two-rack
    all-reduce (810 GB/s busbw) shows; with one HDR NIC per tray the rack's 18 NICs bind."""
    two = topo(nodes=36, **NVL72)
    nvlink, nic = rate(two.cluster.intra_node_link), rate(two.cluster.inter_node_link)
    assert two.domain_egress(list(range(72))) == pytest.approx(72 * nic)
    assert 72 * nic > nvlink
    assert two.bus_bandwidth(two.gpus(0, 144)) == pytest.approx(nvlink)
    thin = topo(**{**NVL72, "nodes": 36, "nics_per_node": 1, "inter_node_link": "ib-hdr200"})
    hdr = rate(thin.cluster.inter_node_link)
    assert thin.bus_bandwidth(thin.gpus(0, 144)) == pytest.approx(18 * hdr)
    assert 18 * hdr < nvlink
    # one tray from each rack: that tray's four NICs are all the group has
    assert two.bus_bandwidth([*range(4), *range(72, 76)]) == pytest.approx(4 * nic)
    # cross-rack all-to-all: every rank's off-rack shares go through its own NIC
    a2a = two.all_to_all_time(2**30, two.gpus(0, 144))
    assert a2a == pytest.approx(2**30 / 2 / nic, rel=0.01)


def test_point_to_point_inside_a_rack_is_nvlink_and_between_racks_a_nic():
    two = topo(nodes=36, **NVL72)
    nvlink, nic = rate(two.cluster.intra_node_link), rate(two.cluster.inter_node_link)
    assert two.path_bandwidth(0, 71) == pytest.approx(nvlink)  # first and last tray of one rack
    assert two.path_bandwidth(3, 72) == pytest.approx(nic)  # across racks
    assert two.path_latency(3, 72) > two.path_latency(0, 71)


def test_a_large_cluster_prices_racks_as_its_first_two_do():
    """The graph holds two racks whatever the cluster's size."""
    small = topo(nodes=54, **NVL72)  # three racks
    large = topo(nodes=18 * 500, **NVL72)
    assert len(large.graph) == len(topo(nodes=36, **NVL72).graph)
    for first, count in [(0, 64), (60, 20), (8, 144), (70, 150)]:
        for op in ("all_reduce", "all_gather", "broadcast"):
            shifted = large.gpus(72 * 300 + first, count)
            assert large.collective_cost(op, shifted) == small.collective_cost(op, small.gpus(first, count))
    assert large.path_latency(5, 72 * 400 + 9) == small.path_latency(5, 72 + 9)


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 6), per_node=st.sampled_from([2, 4, 8]), nics=st.sampled_from([1, 2, 4, 8]),
       picks=st.lists(st.integers(0, 47), min_size=1, max_size=12, unique=True))
def test_a_domain_of_one_node_prices_every_collective_as_no_domain_does(nodes, per_node, nics, picks):
    cluster = dict(nodes=nodes, gpus_per_node=per_node, nics_per_node=nics)
    plain, same = topo(**cluster), topo(**cluster, nvlink_domain_gpus=per_node)
    group = sorted(g for g in picks if g < nodes * per_node) or [0]
    for op in ("all_reduce", "all_gather", "broadcast", "p2p"):
        assert same.collective_cost(op, group) == plain.collective_cost(op, group)
    assert same.all_to_all_time(1e8, group) == plain.all_to_all_time(1e8, group)
    assert same.collective_cost("all_gather", same.gpus(0, nodes * per_node)) == plain.collective_cost(
        "all_gather", plain.gpus(0, nodes * per_node))


@settings(max_examples=40, deadline=None)
@given(trays=st.integers(2, 40), picks=st.lists(st.integers(0, 159), min_size=2, max_size=16, unique=True))
def test_a_larger_domain_never_slows_a_collective(trays, picks):
    wide, narrow = topo(nodes=trays, **NVL72), topo(**{**NVL72, "nodes": trays, "nvlink_domain_gpus": None})
    group = sorted(g for g in picks if g < trays * 4)
    if len(group) < 2:
        return
    assert wide.bus_bandwidth(group) >= narrow.bus_bandwidth(group) * (1 - 1e-12)
    assert wide.all_to_all_time(1e9, group) <= narrow.all_to_all_time(1e9, group) * (1 + 1e-12)


def test_xgmi_mesh_gives_a_pair_one_link_and_the_whole_node_all_seven():
    node = topo(nodes=2, gpus_per_node=8, gpu="mi300x", host="epyc-9374f-host", intra_node_link="xgmi-mi300")
    link = node.cluster.intra_node_link
    per_link = link.peer_bandwidth_bytes_per_s * link.efficiency.best  # 48 GB/s: AMD's usable per link
    assert per_link == pytest.approx(48e9)
    assert node.bus_bandwidth([0, 1]) == pytest.approx(per_link)
    assert node.bus_bandwidth(list(range(4))) == pytest.approx(3 * per_link)
    assert node.bus_bandwidth(list(range(8))) == pytest.approx(7 * per_link)
    assert node.path_bandwidth(2, 5) == pytest.approx(per_link)
    # a tp-2 all-reduce is 7x slower per byte than the whole node's (NVSwitch: the same rate)
    two = node.collective_cost("all_reduce", [0, 1])[1] / bus_factor("all_reduce", 2)
    eight = node.collective_cost("all_reduce", list(range(8)))[1] / bus_factor("all_reduce", 8)
    assert two == pytest.approx(7 * eight)
    # an all-to-all inside the node: each rank's shares go out over its seven links at once
    assert node.all_to_all_time(8e9, list(range(8))) == pytest.approx(7e9 / (7 * per_link), rel=0.01)
    # across nodes, a GPU reaches the other NICs of its node over its direct links (PXN)
    assert node.node_egress([0]) == pytest.approx(min(7 * per_link + rate(node.cluster.inter_node_link),
                                                      8 * rate(node.cluster.inter_node_link)))
