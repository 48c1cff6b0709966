"""The Python API for what-if scripts.

>>> import twin
>>> base = twin.simulate("grpo-7b-colocated", **{"run.steps": 3})
>>> more = twin.simulate("grpo-7b-colocated", run__steps=3, cluster__nodes=8)
>>> more.step_time_s / base.step_time_s

Overrides are scenario fields as dotted paths (``"placement.rollout.gpus"``) or, as Python
keywords, with double underscores (``placement__rollout__gpus``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twin.analysis.report import build_report
from twin.analysis.trace import chrome_trace
from twin.config.load import load_scenario
from twin.config.scenario import Scenario
from twin.sim.loop import Progress, simulate as _simulate
from twin.sim.result import SimResult


@dataclass(frozen=True)
class Report:
    """The result of one simulation: the JSON report's figures as attributes."""

    data: dict[str, Any]
    result: SimResult = field(repr=False, compare=False)

    @property
    def step_time_s(self) -> float:
        return self.data["step_time_s"]

    @property
    def breakdown(self) -> dict[str, float]:
        return self.data["breakdown"]

    @property
    def utilization(self) -> dict[str, float]:
        return self.data["utilization"]

    @property
    def throughput(self) -> dict[str, float]:
        return self.data["throughput"]

    @property
    def bottleneck(self) -> list[dict[str, Any]]:
        return self.data["bottleneck"]

    @property
    def binding_link(self) -> str | None:
        """The link with the largest share of the critical path."""
        return self.bottleneck[0]["link"] if self.bottleneck else None

    @property
    def memory(self) -> dict[str, Any]:
        return self.data["memory"]

    @property
    def scenario(self) -> Scenario:
        return self.result.scenario

    def to_json(self) -> str:
        """The report as canonical JSON (sorted keys): byte-identical for a scenario + seed."""
        return json.dumps(self.data, indent=2, sort_keys=True) + "\n"

    def chrome_trace(self) -> dict[str, Any]:
        return chrome_trace(self.result.spans)


def _overrides(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k.replace("__", "."): v for k, v in kwargs.items()}


def _load(scenario, overrides: dict[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):  # re-validate from data, so overrides apply anywhere
        scenario = scenario.model_dump(mode="json")
    return load_scenario(scenario, _overrides(overrides))


def simulate(scenario: str | Path | dict | Scenario | None = None, *, progress: Progress | None = None,
             verdict: bool = False, workers: int | None = None, **overrides: Any) -> Report:
    """Simulate a scenario (a built-in name, a YAML path, a mapping, or a Scenario).

    ``verdict=True`` also re-simulates one pressure at a time (in ``workers`` processes) and
    adds the ranked marginal gains and the diagnosis under ``report.data["verdict"]``.
    Raises :class:`twin.InputError` on bad input.
    """
    s = _load(scenario, overrides)
    result = _simulate(s, progress)
    data = build_report(result)
    if verdict:
        from twin.verdict import verdict as judge

        data["verdict"] = judge(s, data, workers=workers)
    return Report(data, result)


def whatif(scenario: str | Path | dict | Scenario | None = None, pressures: list[str] | None = None,
           *, workers: int | None = None, **overrides: Any) -> list[dict[str, Any]]:
    """The sensitivity table: each pressure's step time, useful experience per hour and gain
    over the baseline. ``pressures`` are built-in names (``twin.verdict.PRESSURES``) or
    scenario overrides ``"path=value"``; default: all built-in ones."""
    from twin.verdict import sensitivity

    s = _load(scenario, overrides)
    base = build_report(_simulate(s))
    return sensitivity(s, base, pressures, workers)

