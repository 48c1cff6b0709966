"""Collectives on the cluster's topology graph, timed as nccl-tests defines bus bandwidth.

The topology is a networkx graph: every GPU hangs off its NVLink domain's switch (the
intra-node link; a domain is one node unless ``cluster.nvlink_domain_gpus`` joins several, as
GB200 NVL72 joins 18 trays of 4 GPUs) or, on a mesh link (AMD xGMI), off a direct link to each
GPU of its node; and off a NIC of its node (GPUs share NICs when a node has fewer NICs than
GPUs); NICs meet in the network fabric. Every domain is wired alike, so the graph holds two
domains (one on a one-domain cluster) and stands for all of them: a path between two GPUs is
the path between the same domain positions in one domain or in two, whatever the domains'
numbers, and a pool laid out node-major spans at most three shapes of domain (a partial first,
full ones, a partial last). The cost of a query is thus independent of the cluster's size.

A collective over a group of GPUs runs as NCCL's rings do:

* inside a domain, each rank sends over its own port (behind a switch, its whole port, whichever
  node of the domain its peers sit on; on a mesh, one direct link per peer in the group);
* across domains, NCCL runs one ring per rail and each ring's domain crossing carries
  1/rails of the data, so a rank's cross-domain rate is its domain's egress capacity: the sum,
  over the domain's nodes, of a max-flow from the group's GPUs on that node to the fabric (a
  GPU reaches another GPU's NIC of its own node over NVLink, PXN; not a NIC of another tray).

Bus bandwidth is therefore min(port, slowest domain egress) × efficiency, and a collective
moving S bytes takes ``steps·latency + factor·S / busbw`` with nccl-tests' factors: all-reduce
2(n−1)/n, all-gather, reduce-scatter and all-to-all (n−1)/n, broadcast 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
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


_TOPOLOGIES: dict[str, "Topology"] = {}  # by the cluster's value: re-simulations share their max-flows


@dataclass(frozen=True)
class Topology:
    """The cluster as a graph; GPUs are numbered node-major (node i holds i·g .. i·g+g−1)."""

    cluster: Cluster

    @cached_property
    def domain(self) -> int:
        """GPUs per NVLink domain (a node unless cluster.nvlink_domain_gpus spans several)."""
        return self.cluster.domain_gpus

    @cached_property
    def graph(self) -> nx.Graph:
        """The first two domains of the cluster (one if it has one): all domains are wired alike.
        With one node per domain these are its first two nodes."""
        c = self.cluster
        g, d = c.gpus_per_node, self.domain
        intra, inter = c.intra_node_link, c.inter_node_link
        intra_bw = intra.bandwidth_bytes_per_s * intra.efficiency.best
        nic_bw = inter.bandwidth_bytes_per_s * inter.efficiency.best
        nodes_per_domain = d // g
        domains = 1 if c.nodes <= nodes_per_domain else 2
        graph = nx.Graph()
        for domain in range(domains):
            switch = ("switch", domain)
            # a lone (partial) domain holds the cluster's nodes; two domains are drawn whole
            for node in range(domain * nodes_per_domain, domain * nodes_per_domain + min(c.nodes, nodes_per_domain)):
                for local in range(g):
                    gpu = node * g + local
                    if intra.is_mesh:  # a direct link to every GPU of the node
                        for peer in range(node * g, gpu):
                            graph.add_edge(peer, gpu, capacity=intra.port_rate(2), latency=intra.latency_s)
                    else:
                        graph.add_edge(gpu, switch, capacity=intra_bw, latency=intra.latency_s)
                    nic = ("nic", node, local * c.nics_per_node // g)
                    # A GPU reaches its NIC over PCIe at no less than the NIC's own rate.
                    graph.add_edge(gpu, nic, capacity=nic_bw, latency=0.0)
                for k in range(min(c.nics_per_node, g)):
                    graph.add_edge(("nic", node, k), "fabric", capacity=nic_bw, latency=inter.latency_s)
        return graph

    def node_of(self, gpu: int) -> int:
        return gpu // self.cluster.gpus_per_node

    def domain_of(self, gpu: int) -> int:
        return gpu // self.domain

    def _path(self, a: int, b: int) -> list:
        """The shortest path between GPUs ``a`` and ``b``, on the graph's one or two domains."""
        d = self.domain
        other = 0 if self.domain_of(a) == self.domain_of(b) else d
        return nx.shortest_path(self.graph, a % d, b % d + other)

    def path_bandwidth(self, a: int, b: int) -> float:
        """Bandwidth of the slowest link on the shortest path between two GPUs."""
        path = self._path(a, b)
        return min(self.graph.edges[u, v]["capacity"] for u, v in zip(path, path[1:]))

    def path_latency(self, a: int, b: int) -> float:
        path = self._path(a, b)
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
            members = [*range(g), "fabric"] + ([] if self.cluster.intra_node_link.is_mesh else [("switch", 0)])
            members += [("nic", 0, k) for k in range(min(self.cluster.nics_per_node, g))]
            sub = nx.Graph(self.graph.subgraph(members))
            for gpu in local:
                sub.add_edge("source", gpu, capacity=float("inf"))
            cache[local] = nx.maximum_flow_value(sub, "source", "fabric")
        return cache[local]

    def domain_egress(self, gpus: list[int]) -> float:
        """Bytes/s the given GPUs of one domain can push into the fabric together: each node's
        own NICs (its :meth:`node_egress`), summed over the domain's nodes."""
        return sum(self.node_egress(m) for m in self._grouped(gpus, self.cluster.gpus_per_node))

    def _grouped(self, gpus: Sequence[int], size: int) -> list[list[int]]:
        """The group's GPUs by block of ``size`` consecutive GPUs (a node or a domain), in order of
        first appearance. A range (a pool laid out node-major) yields its first block, one full
        block standing for all full ones, and its last block: every quantity taken over the
        blocks is a min, a max or a first, which these three decide."""
        if isinstance(gpus, range) and gpus.step == 1 and len(gpus) > 0:
            first, last = gpus[0], gpus[-1]
            n0, n1 = first // size, last // size
            if n0 == n1:
                return [list(gpus)]
            out = [list(range(first, (n0 + 1) * size))]
            if n1 > n0 + 1:
                out.append(list(range((n0 + 1) * size, (n0 + 2) * size)))
            return out + [list(range(n1 * size, last + 1))]
        by_block: dict[int, list[int]] = defaultdict(list)
        for gpu in gpus:
            by_block[gpu // size].append(gpu)
        return list(by_block.values())

    def _by_node(self, gpus: Sequence[int]) -> list[list[int]]:
        """The group's GPUs node by node (see :meth:`_grouped`)."""
        return self._grouped(gpus, self.cluster.gpus_per_node)

    def _by_domain(self, gpus: Sequence[int]) -> list[list[int]]:
        """The group's GPUs NVLink domain by domain (see :meth:`_grouped`)."""
        return self._grouped(gpus, self.domain)

    def _port(self, members: list[int]) -> float:
        """A rank's rate to the other ``members`` of its domain: behind a switch one path
        tells (every port is alike); on a mesh, one direct link per peer on its node."""
        link = self.cluster.intra_node_link
        if link.is_mesh:
            return min(link.port_rate(len(m)) for m in self._by_node(members) if len(m) > 1)
        return self.path_bandwidth(members[0], members[1])

    def bus_bandwidth(self, gpus: Sequence[int]) -> float:
        """Ring bus bandwidth of a group: the slower of the domain ports and domain egress."""
        by_domain = self._by_domain(gpus)
        rates = []
        shared = next((m for m in by_domain if len(m) > 1), None)
        if shared:  # behind a switch every port is alike; on a mesh the thinnest node's share binds
            mesh = self.cluster.intra_node_link.is_mesh
            rates.append(min(self._port(m) for m in by_domain if len(m) > 1) if mesh else self._port(shared))
        if len(by_domain) > 1:
            rates.extend(self.domain_egress(m) for m in by_domain)
        return min(rates) if rates else float("inf")

    def hop_latency(self, gpus: Sequence[int]) -> float:
        by_domain = self._by_domain(gpus)
        a = gpus[0]
        if len(by_domain) > 1:
            b = next(g for m in by_domain for g in m if self.domain_of(g) != self.domain_of(a))
        elif len(gpus) > 1:
            b = gpus[1]
        else:
            return 0.0
        return self.path_latency(a, b)

    def collective_cost(self, op: Collective, gpus: Sequence[int]) -> tuple[float, float]:
        """(fixed seconds, seconds per byte) of one collective among ``gpus``: its time for a
        per-rank buffer of S bytes (nccl-tests' 'size') is fixed + per_byte·S."""
        n = len(gpus)
        if n <= 1:
            return 0.0, 0.0
        key = (op, gpus.start, n) if isinstance(gpus, range) and gpus.step == 1 else None
        cache = self.__dict__.setdefault("_costs", {})
        if key in cache:
            return cache[key]
        fixed = NCCL_BASE_LATENCY_S + ring_steps(op, n) * self.hop_latency(gpus)
        cost = fixed, bus_factor(op, n) / self.bus_bandwidth(gpus)
        if key is not None:
            cache[key] = cost
        return cost

    def collective_time(self, op: Collective, nbytes: float, gpus: Sequence[int]) -> float:
        """Seconds for one collective moving ``nbytes`` per rank among ``gpus``."""
        if nbytes <= 0:
            return 0.0
        fixed, per_byte = self.collective_cost(op, gpus)
        return fixed + per_byte * nbytes

    def all_to_all_time(self, nbytes: float, gpus: Sequence[int]) -> float:
        """Seconds for an all-to-all in which every rank of ``gpus`` sends ``nbytes`` in all,
        an equal share to each rank (itself included: MoE dispatch and combine).

        Unlike the ring collectives, an all-to-all has no ring whose domain crossing NCCL can
        spread over every rail: each rank sends its shares for other domains through its own
        NIC (its share of its node's egress), its shares within its NVLink domain through its
        port, both at once. It lasts as long as the slower of the two, plus one launch and the longest hop
        (the sends go out concurrently).
        """
        n = len(gpus)
        if n <= 1 or nbytes <= 0:
            return 0.0
        share = nbytes / n
        slowest = 0.0
        for members in self._by_domain(list(gpus)):
            local = share * (len(members) - 1)
            remote = share * (n - len(members))
            t_local = local / self._port(members) if len(members) > 1 else 0.0
            t_remote = 0.0
            if remote > 0:  # each rank through its own node's NICs
                t_remote = max(remote / (self.node_egress(m) / len(m)) for m in self._by_node(members))
            slowest = max(slowest, t_local, t_remote)
        return NCCL_BASE_LATENCY_S + self.hop_latency(list(gpus)) + slowest

    def p2p_time(self, nbytes: float, a: int, b: int) -> float:
        """Seconds to send ``nbytes`` from GPU ``a`` to GPU ``b`` (a pipeline or ring hop)."""
        if nbytes <= 0 or a == b:
            return 0.0
        return NCCL_BASE_LATENCY_S + self.path_latency(a, b) + nbytes / self.path_bandwidth(a, b)

    @staticmethod
    def of(cluster: Cluster) -> "Topology":
        """The topology of ``cluster``, built once per cluster value: the many scenarios of a
        study (a verdict's pressures, a plan's candidates) mostly share their cluster, and every
        figure of a topology is a function of the cluster's fields alone."""
        key = cluster.model_dump_json()
        hit = _TOPOLOGIES.get(key)
        if hit is None:
            hit = _TOPOLOGIES[key] = Topology(cluster)
            while len(_TOPOLOGIES) > 64:
                _TOPOLOGIES.pop(next(iter(_TOPOLOGIES)))
        return hit

    def gpus(self, first: int, count: int) -> range:
        """``count`` consecutive GPUs starting at ``first`` (pools are laid out node-major)."""
        return range(first, first + count)
