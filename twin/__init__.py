"""rltwin: a simulation-based digital twin of LLM reinforcement-learning training systems.

    >>> import twin
    >>> report = twin.simulate("grpo-7b-colocated", run__steps=3)
    >>> report.binding_link, report.step_time_s

The simulator's import path never imports torch: only ``calibrate`` needs it. The
simulation (Numba, SimPy) loads on first use, so ``import twin`` stays fast.
"""

from twin.config.load import load_scenario
from twin.config.scenario import Scenario
from twin.errors import InputError

__all__ = ["InputError", "Report", "Scenario", "load_scenario", "plan_budget", "scale", "simulate", "sweep", "whatif"]
__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("simulate", "whatif", "Report"):
        from twin import api

        return getattr(api, name)
    if name == "plan_budget":
        from twin.studies.planner import plan_budget

        return plan_budget
    if name == "scale":
        from twin.studies.scaling import scale

        return scale
    if name == "sweep":
        from twin.studies.sweeps import sweep

        return sweep
    raise AttributeError(f"module 'twin' has no attribute {name!r}")
