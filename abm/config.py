"""Scenario configuration: every parameter of the simulated world in one frozen record.

Symbols follow durable-recourse-rl (App. B, App. D); docs/model.md's parameter table
says where each default comes from. :class:`ScenarioConfig` is a frozen pydantic model:
each field declares its bounds, bad input raises :class:`~abm.validation.ConfigError`
with one line naming the field, the value and the allowed range.
"""

from __future__ import annotations

import math
import numbers
import tomllib
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    create_model,
    model_validator,
)

from abm.data import DataSource
from abm.validation import (
    ConfigError,
    config_error,
    not_allowed,
    number_text,
    problem,
    require_int,
    require_number,
)

__all__ = [
    "BUDGET_HORIZON",
    "DECISION_MODELS",
    "EXTENSION_DEFAULTS",
    "FIELD_NAMES",
    "PAPER_DIFFICULTY",
    "ConfigError",
    "ScenarioConfig",
    "parse_overrides",
    "require_int",
    "require_number",
]

PAPER_DIFFICULTY = (0.84, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10)

DecisionModelName = Literal["logistic", "mlp", "dp", "ei"]
DECISION_MODELS: tuple[str, ...] = get_args(DecisionModelName)

_SEED_MAX = 2**63 - 1
# places per tick: as many as the largest population a tick can start with (n_initial, m)
K_MAX = 10_000_000
M_MAX = 10_000_000
# the ticks an episode budget lasts unless a scenario says otherwise: the default episode,
# the length of every preset with a budget
BUDGET_HORIZON = 100


def _integral(value: Any) -> Any:
    # numpy integers are integers too (a sweep may hand them over); bools are not
    if type(value) is int:  # the common case, without the slow ABC check below
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


# Strict leaves: no bool as a number, no "3" as 3, no 2.5 truncated to 2. Floats take ints
# (1 -> 1.0, exact) so a field has one type whatever the TOML file wrote.
Int = Annotated[int, BeforeValidator(_integral), Strict()]
Float = Annotated[float, Strict()]


def _range(low: float, high: float, positive_high: bool = False, note: str = "") -> Any:
    """A [lo, hi] pair with low <= lo <= hi <= high (and hi > 0 if ``positive_high``);
    ``note`` says why the bounds are what they are."""
    allowed = f"a pair [lo, hi] with {number_text(low)} <= lo <= hi <= {number_text(high)}"
    allowed += " and hi > 0" if positive_high else ""
    allowed += f" ({note})" if note else ""

    def check(value: tuple[float, float]) -> tuple[float, float]:
        lo, hi = value
        # comparisons with NaN are False, so NaN fails here too
        if not (low <= lo <= hi <= high) or (positive_high and not hi > 0):
            raise not_allowed(allowed)
        return value

    return Annotated[
        tuple[Float, Float], AfterValidator(check), Field(json_schema_extra={"allowed": allowed})
    ]


MeanRange = _range(0.0, 1.0)
StdRange = _range(0.0, 10.0, positive_high=True)
# w* is normalised to sum 1, so only lo/hi matters: a finite bound keeps U(lo, hi) and
# its sum finite (hi = inf gave NaN weights)
WEIGHT_MAX = 1e6
WeightRange = _range(0.0, WEIGHT_MAX, positive_high=True, note="weights are normalised to sum 1")
RiskRange = _range(0.0, 100.0)
_DIFFICULTY_TEXT = "one number in (0, 1] per feature (n_features of them)"
_IMMUTABLE_TEXT = "distinct feature indices in [0, n_features - 1], leaving one feature mutable"
_DATA_TEXT = "a [data] table with path and features (see docs/own-data.md)"
_NONCAUSAL_TEXT = "distinct feature indices in [0, n_features - 1], leaving one causal"
_DRIFT_TEXT = "empty, or n_features numbers in [-1, 1]"
_SHARE_TEXT = "1 to 16 numbers >= 0 summing to 1"
_SHIFT_TEXT = "empty, or one row of n_features numbers in [-1, 1] per group"
_GRAPH_TEXT = "edges (i, j, w) of an acyclic graph over the features (docs/world.md)"
_SHARE_TOL = 1e-9
SHIFT_POINTS = 2000  # abm.metrics_ext.SHIFT_MAX_POINTS
_SHIFT_POINTS_TEXT = "0 (off) or an integer in [2, 1000000]"
SHIFT_PERMUTATIONS = 200  # permutations per shift's p-value (AlgorithmicRecourseDynamics.jl)
_SHIFT_PERMUTATIONS_TEXT = "0 (off) or an integer in [1, 100000]"
# capacity schedules (abm.capacity): factors on k and m
FACTOR_MAX = 1000.0
_STEPS_TEXT = (
    f"pairs [from_tick, factor], ticks >= 0 strictly increasing, factors in [0, {FACTOR_MAX:g}]"
)
_SEASON_TEXT = (
    "empty, or [amplitude, period, phase] with amplitude in [0, 1], period > 0, phase finite"
)
_SHOCKS_TEXT = (
    f"empty, or [probability, factor, duration] with probability in [0, 1], factor in "
    f"[0, {FACTOR_MAX:g}], duration an integer in [1, 1000000]"
)

# the fields of the world extensions with their "off" defaults: to_dict() leaves them out
# while at the default, so configs (and run ids hashed from them) are as before they existed
EXTENSION_DEFAULTS: dict[str, Any] = {
    "noncausal_features": (),
    "noncausal_strength": 0.5,
    "outcome_delay": None,
    "outcome_delay_dist": "fixed",
    "outcome_threshold": 0.5,
    "outcome_noise": None,
    "retrain_every": 0,
    "retrain_data": "outcomes",
    "retrain_drift": (),
    "retrain_advised_share": 1.0,
    "shift_points": SHIFT_POINTS,
    "shift_length_scale": None,
    "shift_permutations": SHIFT_PERMUTATIONS,
    "group_share": (1.0,),
    "group_shift": (),
    "causal_graph": (),
    "budget": None,
    "budget_scope": "episode",
    "budget_horizon": BUDGET_HORIZON,
    "k_steps": (),
    "m_steps": (),
    "k_season": (),
    "m_season": (),
    "k_shocks": (),
    "m_shocks": (),
}


class ScenarioConfig(BaseModel):
    """All parameters of one scenario (world + population dynamics + seeds).

    Attributes mirror the paper's symbols: ``k`` places per tick, ``m`` entrants per
    tick, ``validity`` is T, ``beta`` the global difficulty, ``difficulty`` the
    per-feature d (length ``n_features``), ``rho``/``chi``/``omega`` the dropout
    coefficients (eq. 6) and ``nu`` the reapplication decay (eq. 9). Equality and the
    hash ignore ``description`` (a label; it does not change results).

    ``data`` (:class:`abm.data.DataSource`) replaces the synthetic world by a table of
    one's own; ``n_features`` and ``immutable`` then follow its ``features`` and
    ``immutable`` columns, and ``mean_range``/``std_range`` are not used.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[str, Strict()] = Field("custom", min_length=1)
    # world (App. B.1)
    n_features: Int = Field(10, ge=1, le=10_000)
    mean_range: MeanRange = (0.3, 0.7)
    std_range: StdRange = (0.05, 0.2)
    weight_range: WeightRange = (0.1, 1.0)
    label_noise: Float = Field(0.05, ge=0.0, allow_inf_nan=False)
    n_train: Int = Field(10_000, ge=10, le=10_000_000)
    decision_model: DecisionModelName = "logistic"
    immutable: tuple[Int, ...] = Field((), json_schema_extra={"allowed": _IMMUTABLE_TEXT})
    # population (App. D)
    # bounded so that a typo fails as a field, not as an out-of-memory error
    n_initial: Int = Field(20, ge=0, le=10_000_000)
    k: Int = Field(9, ge=1, le=K_MAX)
    m: Int = Field(10, ge=0, le=M_MAX)
    ticks: Int = Field(100, ge=1, le=1_000_000)
    validity: Int = Field(1, ge=1, le=10_000)
    # beta = inf is the limiting case "every change succeeds"
    beta: Float = Field(0.05, gt=0.0)
    difficulty: tuple[Float, ...] = Field(
        PAPER_DIFFICULTY, json_schema_extra={"allowed": _DIFFICULTY_TEXT}
    )
    # behaviour (App. B.2-B.4); not reported by the paper
    rho: Float = Field(1.0, ge=0.0, allow_inf_nan=False)
    chi: Float = Field(0.0, ge=0.0, allow_inf_nan=False)
    omega: Float = Field(0.0, ge=0.0, allow_inf_nan=False)
    nu: Float = Field(10.0, ge=0.0, allow_inf_nan=False)
    # candidates' own risk aversion, drawn U(lo, hi) at entry (lo == hi: one fixed value);
    # read by risk-aware policies (SafeAR), ignored by the others
    risk_aversion: RiskRange = (0.0, 0.0)
    # seeds: the world (feature distributions, labels, decision model) is fixed by
    # world_seed so that episodes with different ``seed`` share one decision model
    seed: Int = Field(0, ge=0, le=_SEED_MAX)
    world_seed: Int = Field(0, ge=0, le=_SEED_MAX)
    description: Annotated[str, Strict()] = ""
    # a population of one's own (abm.data); None: the synthetic world of App. B.1
    data: DataSource | None = Field(None, json_schema_extra={"allowed": _DATA_TEXT})
    # -- world extensions (specs/world-extensions.md), each off by default ----------------
    # §1 true outcome h* with non-causal proxies; outcomes revealed after a delay
    noncausal_features: tuple[Int, ...] = Field((), json_schema_extra={"allowed": _NONCAUSAL_TEXT})
    noncausal_strength: Float = Field(0.5, ge=0.0, le=0.99)
    outcome_delay: (
        Annotated[int, BeforeValidator(_integral), Strict(), Field(ge=1, le=10_000)] | None
    ) = Field(None, json_schema_extra={"allowed": "none or an integer in [1, 10000]"})
    outcome_delay_dist: Literal["fixed", "geometric"] = "fixed"
    outcome_threshold: Float = Field(0.5, ge=0.0, le=1.0)
    outcome_noise: Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)] | None = Field(
        None, json_schema_extra={"allowed": "none (label_noise) or a finite number >= 0"}
    )
    # §2 retraining on a schedule
    retrain_every: Int = Field(0, ge=0, le=1_000_000)
    retrain_data: Literal["outcomes", "shifted", "both", "advised"] = "outcomes"
    retrain_drift: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _DRIFT_TEXT})
    # retrain_data = advised (Altmeyer et al.'s data entry): the share of the candidates
    # advised since the last refit whose counterfactuals join the data, labelled positive
    retrain_advised_share: Float = Field(1.0, gt=0.0, le=1.0)
    # the domain and model shifts at each refit (MMD², subsampled to this many rows; 0: off)
    shift_points: Int = Field(
        SHIFT_POINTS, ge=0, le=1_000_000, json_schema_extra={"allowed": _SHIFT_POINTS_TEXT}
    )
    # the shifts' Gaussian kernel: a fixed length-scale l (gamma = 1 / (2 l^2), the paper's
    # 0.5), or None for the median heuristic
    shift_length_scale: Float | None = Field(None, gt=0.0, le=1e6, allow_inf_nan=False)
    # the permutations behind each shift's p-value (stream shift_perm; 0: no p-values)
    shift_permutations: Int = Field(
        SHIFT_PERMUTATIONS,
        ge=0,
        le=100_000,
        json_schema_extra={"allowed": _SHIFT_PERMUTATIONS_TEXT},
    )
    # §3 groups
    group_share: tuple[Float, ...] = Field((1.0,), json_schema_extra={"allowed": _SHARE_TEXT})
    group_shift: tuple[tuple[Float, ...], ...] = Field(
        (), json_schema_extra={"allowed": _SHIFT_TEXT}
    )
    # §4 causal graph: edges (i, j, w_ij)
    causal_graph: tuple[tuple[Int, Int, Float], ...] = Field(
        (), json_schema_extra={"allowed": _GRAPH_TEXT}
    )
    # §5 intervention budget
    budget: Annotated[float, Strict(), Field(ge=0.0)] | None = Field(
        None, json_schema_extra={"allowed": "none (unlimited) or a number >= 0"}
    )
    budget_scope: Literal["tick", "episode"] = "episode"
    # the ticks an episode budget is paced over: the standard episode, whatever this run's
    # ticks, so a shorter run spends per tick what a full one does (policies.budget)
    budget_horizon: Int = Field(BUDGET_HORIZON, ge=1, le=1_000_000)
    # §6 capacity that changes: schedules multiplying k and m (abm.capacity)
    k_steps: tuple[tuple[Int, Float], ...] = Field((), json_schema_extra={"allowed": _STEPS_TEXT})
    m_steps: tuple[tuple[Int, Float], ...] = Field((), json_schema_extra={"allowed": _STEPS_TEXT})
    k_season: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SEASON_TEXT})
    m_season: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SEASON_TEXT})
    k_shocks: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SHOCKS_TEXT})
    m_shocks: tuple[Float, ...] = Field((), json_schema_extra={"allowed": _SHOCKS_TEXT})

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise config_error(exc, model=type(self)) from None

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioConfig:
        """Checks across fields (the per-field bounds are in the declarations)."""
        if self.data is not None:
            # the table decides: frozen fields set once, while validating
            self.__dict__["n_features"] = self.data.n_features
            self.__dict__["immutable"] = self.data.immutable_indices
        z = self.n_features
        if len(self.difficulty) != z or not all(0.0 < d <= 1.0 for d in self.difficulty):
            raise not_allowed(
                f"one number in (0, 1] per feature (n_features = {z} of them)",
                field="difficulty",
                value=self.difficulty,
            )
        fixed = self.immutable
        if (
            any(not 0 <= i < z for i in fixed)
            or len(set(fixed)) != len(fixed)
            or len(set(fixed)) == z
        ):
            raise not_allowed(
                f"distinct feature indices in [0, {z - 1}], leaving one feature mutable",
                field="immutable",
                value=self.immutable,
            )
        if self.n_initial + self.m == 0:
            raise not_allowed("at least 1 (somebody must apply)", field="n_initial + m", value=0)
        self._check_mechanisms(z)
        return self

    def _check_mechanisms(self, z: int) -> None:
        """Cross-field rules of the world extensions (specs/world-extensions.md §0-§5)."""
        proxies = self.noncausal_features
        if (
            any(not 0 <= i < z for i in proxies)
            or len(set(proxies)) != len(proxies)
            or len(set(proxies)) >= z
        ):
            raise not_allowed(
                f"distinct feature indices in [0, {z - 1}], leaving one feature causal",
                field="noncausal_features",
                value=proxies,
            )
        if self.retrain_drift and (
            len(self.retrain_drift) != z or not all(-1.0 <= v <= 1.0 for v in self.retrain_drift)
        ):
            raise not_allowed(
                f"empty, or n_features = {z} numbers in [-1, 1]",
                field="retrain_drift",
                value=self.retrain_drift,
            )
        share = self.group_share
        if (
            not 1 <= len(share) <= 16
            or not all(v >= 0.0 for v in share)
            or abs(math.fsum(share) - 1.0) > _SHARE_TOL
        ):
            raise not_allowed(_SHARE_TEXT, field="group_share", value=share)
        g = len(share)
        if self.group_shift and (
            len(self.group_shift) != g
            or any(len(row) != z for row in self.group_shift)
            or not all(-1.0 <= v <= 1.0 for row in self.group_shift for v in row)
        ):
            raise not_allowed(
                f"empty, or shape ({g}, {z}) (groups x features) with entries in [-1, 1]",
                field="group_shift",
                value=self.group_shift,
            )
        if self.causal_graph:
            # networkx is loaded only for a scenario that has a graph
            from abm.causal import CausalGraph

            try:
                CausalGraph.from_edges(self.causal_graph, z, self.immutable, proxies)
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        if self.decision_model in ("dp", "ei") and self.retrain_every:
            raise not_allowed(
                "logistic or mlp when retrain_every > 0 (the fairness-regularised models "
                "need groups for every training row)",
                field="decision_model",
                value=self.decision_model,
            )
        if (
            self.retrain_every
            and self.retrain_data in ("outcomes", "both")
            and self.outcome_delay is None
        ):
            raise not_allowed(
                "an outcome_delay (outcomes to retrain on), or retrain_data = shifted "
                "with a retrain_drift",
                field="retrain_data",
                value=self.retrain_data,
            )
        if self.data is not None:
            synthetic = {
                "noncausal_features": bool(proxies),
                "outcome_delay": self.outcome_delay is not None,
                "retrain_every": bool(self.retrain_every),
                "group_share": g > 1,
                "causal_graph": bool(self.causal_graph),
                "decision_model": self.decision_model in ("dp", "ei"),
            }
            for name, used in synthetic.items():
                if used:
                    raise not_allowed(
                        "its default with a [data] table (it needs the synthetic world and its rule h*)",
                        field=name,
                        value=getattr(self, name),
                    )
        self._check_companions()
        self._check_capacity()

    def _check_capacity(self) -> None:
        """The capacity schedules' shapes and ranges (abm.capacity)."""
        for name in ("k", "m"):
            steps = getattr(self, f"{name}_steps")
            starts = [s for s, _ in steps]
            if (
                any(s < 0 for s in starts)
                or any(b <= a for a, b in zip(starts, starts[1:], strict=False))
                or not all(0.0 <= f <= FACTOR_MAX for _, f in steps)
            ):
                raise not_allowed(_STEPS_TEXT, field=f"{name}_steps", value=steps)
            season = getattr(self, f"{name}_season")
            if season and (
                len(season) != 3
                or not 0.0 <= season[0] <= 1.0
                or not 0.0 < season[1] < math.inf
                or not math.isfinite(season[2])
            ):
                raise not_allowed(_SEASON_TEXT, field=f"{name}_season", value=season)
            shocks = getattr(self, f"{name}_shocks")
            if shocks and (
                len(shocks) != 3
                or not 0.0 <= shocks[0] <= 1.0
                or not 0.0 <= shocks[1] <= FACTOR_MAX
                or not (1.0 <= shocks[2] <= 1_000_000 and float(shocks[2]).is_integer())
            ):
                raise not_allowed(_SHOCKS_TEXT, field=f"{name}_shocks", value=shocks)

    def _check_companions(self) -> None:
        """Settings that mean nothing without another one: refused, naming both fields."""
        if self.decision_model in ("dp", "ei") and len(self.group_share) < 2:
            raise not_allowed(
                "logistic or mlp with one group (dp and ei penalise differences between "
                "groups: give group_share two or more groups)",
                field="decision_model",
                value=self.decision_model,
            )
        if self.retrain_data == "shifted" and not self.retrain_drift:
            raise not_allowed(
                "outcomes or both while retrain_drift is empty (shifted data moves by "
                "retrain_drift: set it)",
                field="retrain_data",
                value=self.retrain_data,
            )
        if self.retrain_drift and self.retrain_data == "outcomes":
            raise not_allowed(
                "empty while retrain_data = outcomes (the drift moves shifted data only: "
                "set retrain_data = shifted or both)",
                field="retrain_drift",
                value=self.retrain_drift,
            )
        if self.retrain_data == "advised" and not self.retrain_every:
            raise not_allowed(
                "outcomes, shifted or both while retrain_every = 0 (advised rows enter the "
                "data of refits, and there are none: set retrain_every)",
                field="retrain_data",
                value=self.retrain_data,
            )
        if self.retrain_advised_share != 1.0 and self.retrain_data != "advised":
            raise not_allowed(
                f"1.0 while retrain_data = {self.retrain_data} (the share picks the advised "
                "rows that enter a refit's data: set retrain_data = advised)",
                field="retrain_advised_share",
                value=self.retrain_advised_share,
            )
        if self.shift_length_scale is not None and not (self.retrain_every and self.shift_points):
            raise not_allowed(
                "none while retrain_every = 0 or shift_points = 0 (the kernel is that of the "
                "shifts measured at refits: set retrain_every and shift_points)",
                field="shift_length_scale",
                value=self.shift_length_scale,
            )
        if self.shift_points == 1:
            raise not_allowed(
                _SHIFT_POINTS_TEXT + " (an MMD needs two rows a sample)",
                field="shift_points",
                value=self.shift_points,
            )
        if self.retrain_drift and not self.retrain_every:
            raise not_allowed(
                "empty while retrain_every = 0 (the drift moves the data of refits, and "
                "there are none: set retrain_every, or clear retrain_drift and set "
                "retrain_data = outcomes)",
                field="retrain_drift",
                value=self.retrain_drift,
            )
        if self.outcome_delay_dist == "geometric" and self.outcome_delay is None:
            raise not_allowed(
                "fixed while outcome_delay is none (geometric delays have mean "
                "outcome_delay: set it)",
                field="outcome_delay_dist",
                value=self.outcome_delay_dist,
            )

    @property
    def n_groups(self) -> int:
        return len(self.group_share)

    @property
    def mechanisms(self) -> frozenset[str]:
        """The world extensions switched on, as the names of their mechanisms
        (abm/mechanisms/): a subset of {"outcomes", "retraining", "groups", "causal",
        "budget"}."""
        on = set()
        if self.noncausal_features or self.outcome_delay is not None:
            on.add("outcomes")
        if self.retrain_every:
            on.add("retraining")
        if len(self.group_share) > 1:
            on.add("groups")
        if self.causal_graph:
            on.add("causal")
        if self.budget is not None:
            on.add("budget")
        return frozenset(on)

    @property
    def capacity_on(self) -> bool:
        """Whether a schedule changes k or m over time (abm.capacity); not one of
        :attr:`mechanisms`: it changes the tick's sizes, not its stages."""
        return any(getattr(self, f"{n}_{s}") for n in "km" for s in ("steps", "season", "shocks"))

    # a dataclass-like record: frozen attributes, equality and hash without the label
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ScenarioConfig is frozen; use .replace({name}=...)")

    def _key(self) -> tuple[Any, ...]:
        return tuple(v for k, v in self.__dict__.items() if k != "description")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScenarioConfig):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # -- construction helpers -------------------------------------------------------
    @classmethod
    def check_field(cls, name: str, value: Any) -> None:
        """Validate one field's ``value`` against its declaration alone (type and bounds;
        not the checks across fields), raising the one-line :class:`ConfigError`."""
        if name not in cls.model_fields:
            raise ConfigError(problem(name, value, "a field of ScenarioConfig"))
        one = create_model(
            cls.__name__, **{name: (cls.model_fields[name].annotation, cls.model_fields[name])}
        )
        try:
            one(**{name: value})
        except ValidationError as exc:
            raise config_error(exc, model=cls) from None

    def replace(self, **changes: Any) -> ScenarioConfig:
        """A copy with ``changes`` applied (validated); unknown names are errors."""
        return type(self)(**{**self.__dict__, **changes})

    def to_dict(self) -> dict[str, Any]:
        """Plain data (tuples as lists), field by field in declaration order.

        ``data`` and the world extensions' fields appear only when set, so configs without
        them (and the run ids hashed from them) are as before they existed.
        """
        out = {
            k: _plain(v)
            for k, v in self.__dict__.items()
            if k not in EXTENSION_DEFAULTS or v != EXTENSION_DEFAULTS[k]
        }
        data = out.pop("data")
        if data is not None:
            out["data"] = data.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: ScenarioConfig | None = None) -> ScenarioConfig:
        """Build from a mapping; keys must be field names (a misspelling is an error)."""
        return cls(**data) if base is None else base.replace(**data)


def _plain(value: Any) -> Any:
    """Tuples (nested ones too) as lists."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


# the scalar and list fields a study may set or sweep, in to_dict's order; ``data`` (a
# table, set in a scenario file) is not one of them
FIELD_NAMES: tuple[str, ...] = tuple(f for f in ScenarioConfig.model_fields if f != "data")


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; VALUE is read as a TOML value (numbers, lists, booleans, inf).

    A VALUE that is not TOML stays text (``decision_model=mlp``); the config then
    rejects it, naming the field, if the field wants a number.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(problem("--set", item, "KEY=VALUE, e.g. beta=0.01"))
        if "\n" in item or "\r" in item:  # TOML would read a second line as another key
            raise ConfigError(problem("--set", item, "one KEY=VALUE on one line (repeat --set)"))
        try:
            out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value.strip()
    return out
