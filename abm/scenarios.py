"""Named scenario presets."""

from __future__ import annotations

import math

from abm.config import ConfigError, ScenarioConfig

_PAPER = ScenarioConfig(
    name="paper",
    validity=1,
    beta=0.05,
    description="durable-recourse-rl App. D setting, T=1, beta=0.05",
)

PRESETS: dict[str, ScenarioConfig] = {
    "paper": _PAPER,
    "paper-T5": _PAPER.replace(
        name="paper-T5", validity=5, description="App. D with a validity horizon T=5"
    ),
    "paper-hard": _PAPER.replace(
        name="paper-hard", beta=0.01, description="App. D with harder changes (beta=0.01)"
    ),
    "paper-T5-hard": _PAPER.replace(
        name="paper-T5-hard", validity=5, beta=0.01, description="App. D with T=5 and beta=0.01"
    ),
    "motivating-example": _PAPER.replace(
        name="motivating-example",
        n_initial=4,
        k=2,
        m=2,
        ticks=3,
        beta=math.inf,
        rho=0.0,
        chi=0.0,
        omega=0.0,
        seed=4,
        description="the threshold trap (paper Fig. 1): 4 applicants, k=2; both rejected reach the threshold, one is still rejected",
    ),
    "large": _PAPER.replace(
        name="large",
        n_initial=100_000,
        m=100_000,
        k=90_000,
        ticks=20,
        description="scale test: N0 = m = 100,000 and k = 90,000 per tick",
    ),
}


def get_scenario(name: str) -> ScenarioConfig:
    """The preset called ``name``."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown scenario {name!r}; presets: {', '.join(PRESETS)} (or a path to a .toml file)"
        ) from None


def available_scenarios() -> dict[str, str]:
    """Preset name -> description."""
    return {name: cfg.description for name, cfg in PRESETS.items()}
