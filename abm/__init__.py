"""recourse-abm: agent-based simulation of algorithmic recourse in competitive top-k settings."""

from abm.config import ConfigError, ScenarioConfig
from abm.model import RecourseModel
from abm.scenarios import available_scenarios, get_scenario

__version__ = "0.1.0"

__all__ = ["ConfigError", "RecourseModel", "ScenarioConfig", "available_scenarios", "get_scenario"]
