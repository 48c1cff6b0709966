"""Collectives on the cluster's topology graph, timed as nccl-tests defines bus bandwidth.

The topology is a networkx graph: every GPU hangs off its node's NVSwitch (intra-node
link) and off a NIC (GPUs share NICs when a node has fewer NICs than GPUs); NICs meet
in the network fabric. A collective over a group of GPUs runs as NCCL's rings do:

* inside a node, each rank sends over its own intra-node port;
* across nodes, NCCL runs one ring per rail and each ring's node crossing carries
  1/rails of the data, so a rank's inter-node rate is its node's egress capacity: a
  max-flow from the group's GPUs on that node to the fabric.

Bus bandwidth is therefore min(intra port, slowest node egress) × efficiency, and a
collective moving S bytes takes ``steps·latency + factor·S / busbw`` with nccl-tests'
factors: all-reduce 2(n−1)/n, all-gather, reduce-scatter and all-to-all (n−1)/n, broadcast 1.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import networkx as nx

from twin.config.scenario import Cluster

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "p2p"]

# NCCL's fixed cost of launching one collective (base latency of its tuning model,
# src/graph/tuning.cc: ~6.6 us for Ring/Simple on NVLink-class hardware).
NCCL_BASE_LATENCY_S = 6.6e-6


def bus_factor(op: Collective, n: int) -> float:
    """nccl-tests' bus-bandwidth factor: busbw = algbw × factor."""
    if n <= 1:
        return 0.0
    return {
        "all_reduce": 2.0 * (n - 1) / n,
        "all_gather": (n - 1) / n,
        "reduce_scatter": (n - 1) / n,
        "broadcast": 1.0,
        "all_to_all": (n - 1) / n,
        "p2p": 1.0,
    }[op]


def ring_steps(op: Collective, n: int) -> int:
    if n <= 1:
        return 0
    return {"all_reduce": 2 * (n - 1), "all_gather": n - 1, "reduce_scatter": n - 1,
            "broadcast": n - 1, "all_to_all": n - 1, "p2p": 1}[op]


_TOPOLOGIES: dict[int, "Topology"] = {}


@dataclass(frozen=True)
class Topology:
    """The cluster as a graph; GPUs are numbered node-major (node i holds i·g .. i·g+g−1)."""

    cluster: Cluster

    @cached_property
    def graph(self) -> nx.Graph:
        c = self.cluster
        intra, inter = c.intra_node_link, c.inter_node_link
        intra_bw = intra.bandwidth_bytes_per_s * intra.efficiency.best
        nic_bw = inter.bandwidth_bytes_per_s * inter.efficiency.best
        g = nx.Graph()
        for node in range(c.nodes):
            switch = ("switch", node)
            for local in range(c.gpus_per_node):
                gpu = node * c.gpus_per_node + local
                g.add_edge(gpu, switch, capacity=intra_bw, latency=intra.latency_s)
                nic = ("nic", node, local * c.nics_per_node // c.gpus_per_node)
                # A GPU reaches its NIC over PCIe at no less than the NIC's own rate.
                g.add_edge(gpu, nic, capacity=nic_bw, latency=0.0)
            for k in range(min(c.nics_per_node, c.gpus_per_node)):
                g.add_edge(("nic", node, k), "fabric", capacity=nic_bw, latency=inter.latency_s)
        return g

    def node_of(self, gpu: int) -> int:
        return gpu // self.cluster.gpus_per_node

    def path_bandwidth(self, a: int, b: int) -> float:
        """Bandwidth of the slowest link on the shortest path between two GPUs."""
        path = nx.shortest_path(self.graph, a, b)
        return min(self.graph.edges[u, v]["capacity"] for u, v in zip(path, path[1:]))

    def path_latency(self, a: int, b: int) -> float:
        path = nx.shortest_path(self.graph, a, b)
        return sum(self.graph.edges[u, v]["latency"] for u, v in zip(path, path[1:]))

    def node_egress(self, gpus: list[int]) -> float:
        """Bytes/s the given GPUs of one node can push into the fabric together: a max-flow
        on that node's part of the graph. Nodes are wired alike, so it is computed once per
        set of local GPU indices."""
        g = self.cluster.gpus_per_node
        node = self.node_of(gpus[0])
        local = tuple(sorted(gpu - node * g for gpu in gpus))
        cache = self.__dict__.setdefault("_egress", {})
        if local not in cache:
            members = [*range(g), ("switch", 0), "fabric"]
            members += [("nic", 0, k) for k in range(min(self.cluster.nics_per_node, g))]
            sub = nx.Graph(self.graph.subgraph(members))
            for gpu in local:
                sub.add_edge("source", gpu, capacity=float("inf"))
            cache[local] = nx.maximum_flow_value(sub, "source", "fabric")
        return cache[local]

    def bus_bandwidth(self, gpus: list[int]) -> float:
        """Ring bus bandwidth of a group: the slower of intra-node ports and node egress."""
        by_node: dict[int, list[int]] = defaultdict(list)
        for gpu in gpus:
            by_node[self.node_of(gpu)].append(gpu)
        rates = []
        shared = next((m for m in by_node.values() if len(m) > 1), None)
        if shared:  # every intra-node port is alike: one path tells
            rates.append(self.path_bandwidth(shared[0], shared[1]))
        if len(by_node) > 1:
            rates.extend(self.node_egress(m) for m in by_node.values())
        return min(rates) if rates else float("inf")

    def hop_latency(self, gpus: list[int]) -> float:
        nodes = {self.node_of(g) for g in gpus}
        a = gpus[0]
        if len(nodes) > 1:
            b = next(g for g in gpus if self.node_of(g) != self.node_of(a))
        elif len(gpus) > 1:
            b = gpus[1]
        else:
            return 0.0
        return self.path_latency(a, b)

    def collective_cost(self, op: Collective, gpus: list[int]) -> tuple[float, float]:
        """(fixed seconds, seconds per byte) of one collective among ``gpus``: its time for a
        per-rank buffer of S bytes (nccl-tests' 'size') is fixed + per_byte·S."""
        n = len(gpus)
        if n <= 1:
            return 0.0, 0.0
        fixed = NCCL_BASE_LATENCY_S + ring_steps(op, n) * self.hop_latency(gpus)
        return fixed, bus_factor(op, n) / self.bus_bandwidth(gpus)

    def collective_time(self, op: Collective, nbytes: float, gpus: list[int]) -> float:
        """Seconds for one collective moving ``nbytes`` per rank among ``gpus``."""
        if nbytes <= 0:
            return 0.0
        fixed, per_byte = self.collective_cost(op, gpus)
        return fixed + per_byte * nbytes

    @staticmethod
    def of(cluster: Cluster) -> "Topology":
        """The topology of ``cluster``, built once per cluster object."""
        hit = _TOPOLOGIES.get(id(cluster))
        if hit is None or hit.cluster is not cluster:
            hit = _TOPOLOGIES[id(cluster)] = Topology(cluster)
            while len(_TOPOLOGIES) > 64:
                _TOPOLOGIES.pop(next(iter(_TOPOLOGIES)))
        return hit

    def gpus(self, first: int, count: int) -> list[int]:
        """``count`` consecutive GPUs starting at ``first`` (pools are laid out node-major)."""
        return list(range(first, first + count))
