"""recourse-abm: agent-based simulation of algorithmic recourse in competitive top-k settings.

The public names load on first use, so ``import abm.interfaces`` (what a policy needs)
does not pull in Mesa, scikit-learn or the model.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.8.2"

_PUBLIC = {
    "ConfigError": "abm.validation",
    "ScenarioConfig": "abm.config",
    "RecourseModel": "abm.model",
    "available_scenarios": "abm.scenarios",
    "get_scenario": "abm.scenarios",
    "make_policy": "abm.registry",
    "REGISTRY": "abm.registry",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'abm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
