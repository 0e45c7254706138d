"""Scenario configuration: every parameter of the simulated world in one frozen record.

Symbols follow durable-recourse-rl (App. B, App. D); the README's parameter table
says where each default comes from.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import tomllib
from dataclasses import dataclass, field, fields
from typing import Any

from abm.validation import ConfigError

PAPER_DIFFICULTY = (0.84, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10)

DECISION_MODELS = ("logistic", "mlp")


@dataclass(frozen=True)
class ScenarioConfig:
    """All parameters of one scenario (world + population dynamics + seeds).

    Attributes mirror the paper's symbols: ``k`` places per tick, ``m`` entrants per
    tick, ``validity`` is T, ``beta`` the global difficulty, ``difficulty`` the
    per-feature d (length ``n_features``), ``rho``/``chi``/``omega`` the dropout
    coefficients (eq. 6) and ``nu`` the reapplication decay (eq. 9).
    """

    name: str = "custom"
    # world (App. B.1)
    n_features: int = 10
    mean_range: tuple[float, float] = (0.3, 0.7)
    std_range: tuple[float, float] = (0.05, 0.2)
    weight_range: tuple[float, float] = (0.1, 1.0)
    label_noise: float = 0.05
    n_train: int = 10_000
    decision_model: str = "logistic"
    immutable: tuple[int, ...] = ()
    # population (App. D)
    n_initial: int = 20
    k: int = 9
    m: int = 10
    ticks: int = 100
    validity: int = 1
    beta: float = 0.05
    difficulty: tuple[float, ...] = PAPER_DIFFICULTY
    # behaviour (App. B.2-B.4); not reported by the paper
    rho: float = 1.0
    chi: float = 0.0
    omega: float = 0.0
    nu: float = 10.0
    # candidates' own risk aversion, drawn U(lo, hi) at entry (lo == hi: one fixed value);
    # read by risk-aware policies (SafeAR), ignored by the others
    risk_aversion: tuple[float, float] = (0.0, 0.0)
    # seeds: the world (feature distributions, labels, decision model) is fixed by
    # world_seed so that episodes with different ``seed`` share one decision model
    seed: int = 0
    world_seed: int = 0
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # TOML and the CLI hand over lists; store tuples so the record stays hashable
        for name in (
            "mean_range",
            "std_range",
            "weight_range",
            "difficulty",
            "immutable",
            "risk_aversion",
        ):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        _validate(self)

    # -- construction helpers -------------------------------------------------------
    def replace(self, **changes: Any) -> ScenarioConfig:
        """A copy with ``changes`` applied (validated); unknown names are errors."""
        _check_keys(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: ScenarioConfig | None = None) -> ScenarioConfig:
        """Build from a mapping; keys must be field names (a misspelling is an error)."""
        _check_keys(data)
        if base is None:
            return cls(**data)
        return dataclasses.replace(base, **data)


FIELD_NAMES = tuple(f.name for f in fields(ScenarioConfig))


def _check_keys(data: dict[str, Any]) -> None:
    unknown = sorted(set(data) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(
            f"unknown scenario field(s): {', '.join(unknown)}; allowed: {', '.join(FIELD_NAMES)}"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


def _bound(value: float) -> str:
    return "inf" if value == math.inf else f"{value:g}"


def require_int(name: str, value: Any, low: int, high: float = math.inf) -> int:
    """``value`` as an int, or a :class:`ConfigError` naming ``name`` and [low, high]."""
    if not _is_int(value) or not low <= value <= high:
        upper = "inf" if high == math.inf else str(int(high))
        raise ConfigError(f"{name} must be an integer in [{low}, {upper}], got {value!r}")
    return int(value)


def require_number(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float, or a :class:`ConfigError` naming ``name`` and its interval."""
    ok = _is_number(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (
            value < high if high_open else value <= high
        )
    if not ok:
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        raise ConfigError(
            f"{name} must be a number in {lb}{_bound(low)}, {_bound(high)}{hb}, got {value!r}"
        )
    return float(value)


def _require_range(name: str, value: Any, low: float, high: float) -> None:
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(_is_number(v) for v in value)
        or not low <= value[0] <= value[1] <= high
    ):
        raise ConfigError(
            f"{name} must be a pair [lo, hi] with {low} <= lo <= hi <= {high}, got {value!r}"
        )


def _validate(c: ScenarioConfig) -> None:
    require_int("n_features", c.n_features, 1, 10_000)
    _require_range("mean_range", c.mean_range, 0.0, 1.0)
    _require_range("std_range", c.std_range, 0.0, 10.0)
    if c.std_range[1] <= 0:
        raise ConfigError(f"std_range must allow a positive std, got {c.std_range!r}")
    _require_range("weight_range", c.weight_range, 0.0, math.inf)
    if c.weight_range[1] <= 0:
        raise ConfigError(f"weight_range must allow a positive weight, got {c.weight_range!r}")
    require_number("label_noise", c.label_noise, 0.0, math.inf)
    require_int("n_train", c.n_train, 10)
    if c.decision_model not in DECISION_MODELS:
        raise ConfigError(
            f"decision_model must be one of {', '.join(DECISION_MODELS)}, got {c.decision_model!r}"
        )
    if not isinstance(c.immutable, tuple) or not all(_is_int(i) for i in c.immutable):
        raise ConfigError(f"immutable must be a list of feature indices, got {c.immutable!r}")
    for i in c.immutable:
        if not 0 <= i < c.n_features:
            raise ConfigError(
                f"immutable entries must be feature indices in [0, {c.n_features - 1}], got {i}"
            )
    if len(set(c.immutable)) == c.n_features:
        raise ConfigError("immutable must leave at least one feature mutable")
    require_int("n_initial", c.n_initial, 0)
    require_int("k", c.k, 1)
    require_int("m", c.m, 0)
    if c.n_initial + c.m == 0:
        raise ConfigError("n_initial and m cannot both be 0 (nobody would ever apply)")
    require_int("ticks", c.ticks, 1, 1_000_000)
    require_int("validity", c.validity, 1, 10_000)
    # beta = inf is the limiting case "every change succeeds"
    require_number("beta", c.beta, 0.0, math.inf, low_open=True)
    if not isinstance(c.difficulty, tuple) or len(c.difficulty) != c.n_features:
        raise ConfigError(
            f"difficulty must list one value per feature (n_features={c.n_features}), "
            f"got {len(c.difficulty) if isinstance(c.difficulty, tuple) else c.difficulty!r}"
        )
    for i, d in enumerate(c.difficulty):
        require_number(f"difficulty[{i}]", d, 0.0, 1.0, low_open=True)
    for name in ("rho", "chi", "omega", "nu"):
        require_number(name, getattr(c, name), 0.0, math.inf, high_open=True)
    _require_range("risk_aversion", c.risk_aversion, 0.0, 100.0)
    require_int("seed", c.seed, 0, 2**63 - 1)
    require_int("world_seed", c.world_seed, 0, 2**63 - 1)
    if not isinstance(c.name, str) or not c.name:
        raise ConfigError("name must be a non-empty string")


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; VALUE is read as a TOML value (numbers, lists, booleans, inf)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value.strip()
    return out
