"""The twin's all-reduce against published nccl-tests bus bandwidths: ``python tools/allreduce_check.py``.

Reads ``hardware_profiles/sources/allreduce-busbw.yaml`` (each case: a cluster as its source
describes it, a group size, a buffer size and the measured busbw), prices one all-reduce of that
buffer over the first ``gpus`` GPUs with :class:`twin.cost.collectives.Topology`, and prints the
bus bandwidth that time implies (nccl-tests' definition: size / time × 2(n−1)/n) against the
measured one. Nothing is fitted. ``tests/cost/test_collectives_published.py`` holds the errors.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

CASES = Path(__file__).resolve().parents[1] / "hardware_profiles" / "sources" / "allreduce-busbw.yaml"


@dataclass(frozen=True)
class Row:
    name: str
    source: str
    measured: float  # GB/s
    predicted: float  # GB/s
    known_miss: str | None

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


def predicted_busbw(cluster: dict, gpus: int, size: float) -> float:
    """GB/s of nccl-tests' bus bandwidth the twin's all-reduce of ``size`` bytes over ``gpus`` implies."""
    from twin.config.scenario import Cluster
    from twin.cost.collectives import Topology, bus_factor

    topo = Topology(Cluster.model_validate(cluster))
    seconds = topo.collective_time("all_reduce", size, topo.gpus(0, gpus))
    return size / seconds * bus_factor("all_reduce", gpus) / 1e9


def rows(path: Path = CASES) -> list[Row]:
    cases = yaml.safe_load(path.read_text())["cases"]
    return [Row(c["name"], c["source"], c["busbw"], predicted_busbw(c["cluster"], c["gpus"], c["size"]),
                c.get("known_miss")) for c in cases]


def table(found: list[Row]) -> str:
    lines = [f"{'case':<62} {'measured':>9} {'twin':>7} {'error':>7}"]
    for r in found:
        note = "  known miss" if r.known_miss else ""
        lines.append(f"{r.name:<62} {r.measured:>9.1f} {r.predicted:>7.1f} {r.error:>+7.1%}{note}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rows()))
    sys.exit(0)
