"""Named scenario presets, scenario files (TOML) and the lookup that takes either."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

from abm.config import ScenarioConfig
from abm.validation import ConfigError, problem

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
        allowed = f"a preset ({', '.join(PRESETS)}) or a path to a .toml file"
        raise ConfigError(problem("scenario", name, allowed, verb="is not a preset")) from None


def available_scenarios() -> dict[str, str]:
    """Preset name -> description."""
    return {name: cfg.description for name, cfg in PRESETS.items()}


def scenario_from_toml(path: str | Path) -> ScenarioConfig:
    """Load a scenario file: field = value lines, optionally under a ``[scenario]`` table.

    An optional ``base = "preset-name"`` key starts from a preset; the file's name is the
    scenario's name unless it sets ``name``.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            problem("scenario", str(path), "an existing .toml file", verb="does not exist")
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"scenario file {path} is not valid TOML: {exc}") from None
    data = dict(data.get("scenario", data))
    base_name = data.pop("base", None)
    if base_name is not None and not isinstance(base_name, str):
        raise ConfigError(problem("base", base_name, f"a preset name ({', '.join(PRESETS)})"))
    base = None if base_name is None else get_scenario(base_name)
    data.setdefault("name", path.stem)
    return ScenarioConfig.from_dict(data, base=base)


def resolve_scenario(scenario: ScenarioConfig | str | Path) -> ScenarioConfig:
    """A config from a config, a preset name or a path to a TOML file."""
    if isinstance(scenario, ScenarioConfig):
        return scenario
    text = str(scenario)
    if text.endswith(".toml") or Path(text).is_file():
        return scenario_from_toml(text)
    return get_scenario(text)
