"""Scenario configuration: every parameter of the simulated world in one frozen record.

Symbols follow durable-recourse-rl (App. B, App. D); docs/model.md's parameter table
says where each default comes from. :class:`ScenarioConfig` is a frozen pydantic model:
each field declares its bounds, bad input raises :class:`~abm.validation.ConfigError`
with one line naming the field, the value and the allowed range.
"""

from __future__ import annotations

import functools
import math
import tomllib
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.fields import FieldInfo

from abm import mechanisms as extensions
from abm.data import DataSource
from abm.fields import K_MAX, M_MAX, Float, Int, synthetic_only
from abm.fields import pair_range as _range
from abm.mechanisms.budget import BUDGET_HORIZON
from abm.validation import (
    ConfigError,
    config_error,
    not_allowed,
    problem,
    require_int,
    require_number,
)

__all__ = [
    "BUDGET_HORIZON",
    "DECISION_MODELS",
    "PAPER_DIFFICULTY",
    "K_MAX",
    "M_MAX",
    "ConfigError",
    "ScenarioConfig",
    "extension_defaults",
    "field_names",
    "parse_overrides",
    "require_int",
    "require_number",
]

PAPER_DIFFICULTY = (0.84, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10)

DecisionModelName = Literal["logistic", "mlp", "dp", "ei"]
DECISION_MODELS: tuple[str, ...] = get_args(DecisionModelName)

_SEED_MAX = 2**63 - 1


MeanRange = _range(0.0, 1.0)
StdRange = _range(0.0, 10.0, positive_high=True)
# w* is normalised to sum 1, so only lo/hi matters: a finite bound keeps U(lo, hi) and
# its sum finite (hi = inf gave NaN weights)
WEIGHT_MAX = 1e6
WeightRange = _range(0.0, WEIGHT_MAX, positive_high=True, note="weights are normalised to sum 1")
RiskRange = _range(0.0, 100.0)
_DIFFICULTY_TEXT = "one number in (0, 1] per feature (n_features of them)"
_IMMUTABLE_TEXT = "distinct feature indices in [0, n_features - 1], leaving one feature mutable"
_ONE_WAY_TEXT = (
    "distinct feature indices in [0, n_features - 1], none immutable or in both increase "
    "and decrease"
)
_ONEHOT_TEXT = (
    "groups of at least 2 feature indices in [0, n_features - 1], each feature in at most "
    "one group and in neither increase nor decrease; a group all immutable or none of it"
)
_SWITCH_TEXT = (
    "one m x m table per onehot group (m its size): 0 on the diagonal, elsewhere a cost "
    "in (0, 1) or inf (the switch is not allowed); empty: 0.5 for every switch"
)
_DATA_TEXT = "a [data] table with path and features (see docs/own-data.md)"


def __getattr__(name: str) -> Any:
    # deprecated since 0.9, removed in 0.10: the extensions registered now decide both
    functions = {"EXTENSION_DEFAULTS": "extension_defaults", "FIELD_NAMES": "field_names"}
    if name in functions:
        import warnings

        warnings.warn(
            f"abm.config.{name} is deprecated: call abm.config.{functions[name]}()",
            DeprecationWarning,
            stacklevel=2,
        )
        return globals()[functions[name]]()
    raise AttributeError(f"module 'abm.config' has no attribute {name!r}")


def _extension_fields() -> dict[str, tuple[type[BaseModel], FieldInfo]]:
    """Field name -> (its extension's settings model, its declaration), in registry order
    (read only: kept per registry, as every config and every to_dict() asks)."""
    return _fields_of(extensions.registered())


@functools.lru_cache(maxsize=8)
def _fields_of(registry: tuple[Any, ...]) -> dict[str, tuple[type[BaseModel], FieldInfo]]:
    return {
        name: (m.Settings, info) for m in registry for name, info in m.Settings.model_fields.items()
    }


def extension_defaults() -> dict[str, Any]:
    """The world extensions' fields with their "off" defaults: to_dict() leaves them out
    while at the default, so configs (and run ids hashed from them) are as before they
    existed."""
    return {name: info.default for name, (_, info) in _extension_fields().items()}


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

    # the world extensions' fields are not declared here: each extension's settings model
    # declares them (abm.mechanisms), __init__ validates them with it, and they are kept
    # as pydantic's extras (flat keys: config.budget, config.k_steps, ...)
    model_config = ConfigDict(frozen=True, extra="allow")

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
    # one-way actionability: features advice may only raise (education, age) or only lower
    # (debt); the others move either way
    increase: tuple[Int, ...] = Field((), json_schema_extra={"allowed": _ONE_WAY_TEXT})
    decrease: tuple[Int, ...] = Field((), json_schema_extra={"allowed": _ONE_WAY_TEXT})
    # unordered categories: each group of indicator features holds exactly one 1 (abm.onehot)
    onehot: tuple[tuple[Int, ...], ...] = Field((), json_schema_extra={"allowed": _ONEHOT_TEXT})
    switch_cost: tuple[tuple[tuple[Float, ...], ...], ...] = Field(
        (), json_schema_extra={"allowed": _SWITCH_TEXT}
    )
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

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**_with_extensions(data))
        except ValidationError as exc:
            raise config_error(exc, model=type(self)) from None

    @model_validator(mode="after")
    def _consistent(self) -> ScenarioConfig:
        """Checks across fields (the per-field bounds are in the declarations)."""
        if self.data is not None:
            # the table decides: frozen fields set once, while validating
            self.__dict__["n_features"] = self.data.n_features
            self.__dict__["immutable"] = self.data.immutable_indices
            self.__dict__["increase"] = self.data.indices("increase")
            self.__dict__["decrease"] = self.data.indices("decrease")
            self.__dict__["onehot"] = self.data.onehot_indices
            self.__dict__["switch_cost"] = self.data.switch_costs
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
        for name in ("increase", "decrease"):
            one_way = getattr(self, name)
            other = self.decrease if name == "increase" else self.increase
            if (
                any(not 0 <= i < z for i in one_way)
                or len(set(one_way)) != len(one_way)
                or set(one_way) & (set(fixed) | set(other))
            ):
                allowed = (
                    f"distinct feature indices in [0, {z - 1}], none immutable "
                    f"(immutable = {list(fixed)}) or in both increase and decrease"
                )
                raise not_allowed(allowed, field=name, value=one_way)
        self._check_onehot()
        if self.n_initial + self.m == 0:
            raise not_allowed("at least 1 (somebody must apply)", field="n_initial + m", value=0)
        synthetic_only(self, {"decision_model": self.decision_model in ("dp", "ei")})
        for ext in extensions.registered():  # its own checks across fields
            ext.check(self)
        return self

    def _check_onehot(self) -> None:
        """One-hot groups: disjoint, in range, not one-way, wholly immutable or not at all;
        ``switch_cost`` one m x m table per group."""
        z, seen = self.n_features, set()
        one_way = set(self.increase) | set(self.decrease)
        for g, members in enumerate(self.onehot):
            fixed = {i in self.immutable for i in members}
            if (
                len(members) < 2
                or any(not 0 <= i < z for i in members)
                or len(set(members)) != len(members)
                or set(members) & (seen | one_way)
                or len(fixed) != 1
            ):
                allowed = _ONEHOT_TEXT.replace("n_features - 1", str(z - 1))
                raise not_allowed(allowed, field=f"onehot[{g}]", value=members)
            seen |= set(members)
        if not self.switch_cost:
            return
        if len(self.switch_cost) != len(self.onehot):
            raise not_allowed(_SWITCH_TEXT, field="switch_cost", value=self.switch_cost)
        for g, (members, table) in enumerate(zip(self.onehot, self.switch_cost, strict=True)):
            m = len(members)
            ok = len(table) == m and all(len(row) == m for row in table)
            for a, row in enumerate(table if ok else ()):
                for b, c in enumerate(row):
                    ok &= c == 0 if a == b else (0 < c < 1 or c == math.inf)
            if not ok:
                allowed = f"a {m} x {m} table: 0 on the diagonal, elsewhere in (0, 1) or inf"
                raise not_allowed(allowed, field=f"switch_cost[{g}]", value=table)

    @property
    def n_groups(self) -> int:
        return len(self.group_share)

    @property
    def mechanisms(self) -> frozenset[str]:
        """The world extensions switched on, by name (abm.mechanisms: "outcomes",
        "retraining", "groups", "causal", "budget", "capacity" and any registered)."""
        return extensions.switched_on(self)

    @property
    def capacity_on(self) -> bool:
        """Whether a schedule changes k or m over time (the extension ``capacity``)."""
        return "capacity" in self.mechanisms

    # a dataclass-like record: frozen attributes, equality and hash without the label
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ScenarioConfig is frozen; use .replace({name}=...)")

    def _values(self) -> dict[str, Any]:
        """Every field's value: the scenario's, then the extensions' (registry order)."""
        return {**self.__dict__, **(self.__pydantic_extra__ or {})}

    def _key(self) -> tuple[Any, ...]:
        return tuple(v for k, v in self._values().items() if k != "description")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScenarioConfig):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # -- construction helpers -------------------------------------------------------
    @classmethod
    def fields(cls) -> dict[str, FieldInfo]:
        """Every field's declaration: the scenario's, then each registered extension's."""
        own = dict(cls.model_fields)
        return {**own, **{n: info for n, (_, info) in _extension_fields().items()}}

    @classmethod
    def check_field(cls, name: str, value: Any) -> None:
        """Validate one field's ``value`` against its declaration alone (type and bounds;
        not the checks across fields), raising the one-line :class:`ConfigError`."""
        owner = cls if name in cls.model_fields else _extension_fields().get(name, (None,))[0]
        if owner is None:
            raise ConfigError(problem(name, value, "a field of ScenarioConfig"))
        info = owner.model_fields[name]
        one = create_model(cls.__name__, **{name: (info.annotation, info)})
        try:
            one(**{name: value})
        except ValidationError as exc:
            raise config_error(exc, model=owner) from None

    def replace(self, **changes: Any) -> ScenarioConfig:
        """A copy with ``changes`` applied (validated); unknown names are errors."""
        values = {**self._values(), **changes}
        if changes and changes.keys() <= _ALONE:  # a study's episodes: only the seed moves
            out = self.model_copy(update={k: _one_field(k)(v) for k, v in changes.items()})
            # every field given, as a full build of ``values`` has it
            object.__setattr__(out, "__pydantic_fields_set__", set(values))
            return out
        return type(self)(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (tuples as lists), field by field in declaration order.

        ``data``, ``increase``, ``decrease`` and the world extensions' fields appear only
        when set, so configs without them (and the run ids hashed from them) are as before they existed.
        """
        off = omitted_defaults()
        out = {k: _plain(v) for k, v in self._values().items() if k not in off or v != off[k]}
        data = out.pop("data")
        if data is not None:
            out["data"] = data.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: ScenarioConfig | None = None) -> ScenarioConfig:
        """Build from a mapping; keys must be field names (a misspelling is an error)."""
        return cls(**data) if base is None else base.replace(**data)


#: core fields added after run ids were first published: left out of to_dict() at their
#: default, like the extensions' fields, so earlier configs keep their run ids
_NEW_CORE_DEFAULTS: dict[str, Any] = {
    "increase": (),
    "decrease": (),
    "onehot": (),
    "switch_cost": (),
}


def omitted_defaults() -> dict[str, Any]:
    """Fields that to_dict() leaves out while at these defaults: the extensions' and
    :data:`_NEW_CORE_DEFAULTS`."""
    return {**extension_defaults(), **_NEW_CORE_DEFAULTS}


def _plain(value: Any) -> Any:
    """Tuples (nested ones too) as lists."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def _with_extensions(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every extension's fields validated by its settings model (defaults
    filled in, registry order), after the scenario's own; an unknown name is an error."""
    own = ScenarioConfig.model_fields
    core = {k: v for k, v in data.items() if k in own}
    rest = {k: v for k, v in data.items() if k not in own}
    out = dict(core)
    for ext in extensions.registered():
        names = ext.Settings.model_fields
        given = {k: rest.pop(k) for k in list(rest) if k in names}
        try:
            settings = ext.Settings(**given)
        except ValidationError as exc:
            raise config_error(exc, model=ext.Settings) from None
        out.update(settings.__dict__)
    if rest:
        name, value = next(iter(rest.items()))
        listed = ", ".join(ScenarioConfig.fields())
        raise ConfigError(problem(name, value, listed, verb="is not a known field"))
    return out


#: fields that no check across fields and no extension reads: replace() validates them
#: alone and copies the rest as validated already (building a whole config with its
#: extensions costs about 1 ms, which a study of short episodes pays once an episode)
_ALONE = frozenset({"seed"})


@functools.cache
def _one_field(name: str):
    """value -> the validated value of core field ``name`` (its declaration alone), or
    the one-line :class:`ConfigError`."""
    info = ScenarioConfig.model_fields[name]
    one = create_model(ScenarioConfig.__name__, **{name: (info.annotation, info)})

    def check(value: Any) -> Any:
        try:
            return getattr(one(**{name: value}), name)
        except ValidationError as exc:
            raise config_error(exc, model=ScenarioConfig) from None

    return check


def field_names() -> tuple[str, ...]:
    """The scalar and list fields a study may set or sweep, in to_dict's order; ``data``
    (a table, set in a scenario file) is not one of them."""
    return tuple(f for f in ScenarioConfig.fields() if f != "data")


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
