"""rltwin: a simulation-based digital twin of LLM reinforcement-learning training systems.

    >>> import twin
    >>> report = twin.simulate("grpo-7b-colocated", run__steps=3)
    >>> report.binding_link, report.step_time_s

The simulator's import path never imports torch: only ``calibrate`` needs it. The
simulation (Numba, SimPy) loads on first use, so ``import twin`` stays fast.
"""

from twin.api import Report, simulate, whatif
from twin.config.load import load_scenario
from twin.config.scenario import Scenario
from twin.errors import InputError
from twin.studies.planner import plan_budget
from twin.studies.scaling import scale
from twin.studies.sweeps import sweep

__all__ = ["InputError", "Report", "Scenario", "load_scenario", "plan_budget", "scale", "simulate", "sweep", "whatif"]
__version__ = "0.1.0"
