"""rltwin: a simulation-based digital twin of LLM reinforcement-learning training systems.

The simulator's import path never imports torch: only ``calibrate`` needs it.
"""

from twin.config.load import load_scenario
from twin.config.scenario import Scenario
from twin.errors import InputError

__all__ = ["InputError", "Scenario", "load_scenario"]
__version__ = "0.1.0"
