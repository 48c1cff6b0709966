"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest
from engine_workloads import scenario_costs, synthetic_costs

from twin.cost.engine import EngineCosts


@pytest.fixture(scope="session")
def real_costs() -> EngineCosts:
    return scenario_costs()


@pytest.fixture
def small_costs() -> EngineCosts:
    return synthetic_costs()
