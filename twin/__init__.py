"""rltwin: a simulation-based digital twin of LLM reinforcement-learning training systems.

    >>> import twin
    >>> report = twin.simulate("grpo-7b-colocated", run__steps=3)
    >>> report.binding_link, report.step_time_s

The simulator's import path never imports torch: only ``calibrate`` needs it. The public names
below load on first use (PEP 562), so ``import twin`` — and every ``twin`` command that needs
only part of the package — imports no more than it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twin.api import Report, simulate, whatif
    from twin.config.load import load_scenario
    from twin.config.scenario import Scenario
    from twin.errors import InputError
    from twin.studies.planner import plan_budget
    from twin.studies.scaling import scale
    from twin.studies.sweeps import sweep

_EXPORTS = {
    "InputError": "twin.errors", "Report": "twin.api", "Scenario": "twin.config.scenario",
    "load_scenario": "twin.config.load", "plan_budget": "twin.studies.planner", "scale": "twin.studies.scaling",
    "simulate": "twin.api", "sweep": "twin.studies.sweeps", "whatif": "twin.api",
}
__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'twin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
