"""A fitted scikit-learn model from a skops file (``[data.model]``), loaded without pickle.

:class:`ModelSpec` is the TOML table (``path``, ``trusted``, ``sha256``); :func:`load_model`
opens the file: it must be a skops zip (``skops.io.dump``) saved with the installed
scikit-learn, and every type skops does not trust by default must be listed in
``trusted``. Nothing here calls :mod:`pickle`.

Advice lives on the world's features (each column scaled to [0, 1]); the model reads the
table's raw columns. :class:`RawColumns` undoes the scaling (and decodes ordered codes to
the file's values), and :class:`FileModel` wraps the model as the world's estimator:
``predict_proba`` on world rows, ``fit`` refitting the wrapped model on raw columns (so
``sklearn.base.clone`` of it refits a clone of the user's model), and
:meth:`FileModel.world_linear`, the model's logistic score as w . u + b in the world's
features when its preprocessing is a scaling the world can express.

pandas, scikit-learn and skops are imported on first use, not with this module.
"""

from __future__ import annotations

import hashlib
import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from abm.onehot import OneHot
from abm.validation import not_allowed, show

__all__ = ["FileModel", "ModelRefused", "ModelSpec", "RawColumns", "load_model"]

Text = Annotated[str, Strict()]

_PATH_TEXT = "a file saved with skops.io.dump (relative to the scenario file, or absolute)"
_TRUSTED_TEXT = "a list of type names (module.Type) that skops.io.get_untrusted_types reports"


class ModelRefused(Exception):
    """A model file that cannot serve: ``field`` (under ``data.``), ``value``, ``allowed``."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        super().__init__(field, value, allowed)
        self.field, self.value, self.allowed = field, value, allowed


class ModelSpec(BaseModel):
    """``[data.model]``: ``path`` to a skops file, ``trusted`` types beyond skops' defaults,
    and ``sha256`` (filled in from the file, or checked against it when given)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Text = Field(min_length=1, json_schema_extra={"allowed": _PATH_TEXT})
    trusted: tuple[Text, ...] = Field((), json_schema_extra={"allowed": _TRUSTED_TEXT})
    sha256: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for key in data:
            if key not in cls.model_fields:
                allowed = "a known field: " + ", ".join(cls.model_fields)
                raise not_allowed(allowed, field=str(key), value=data[key])
        if "path" in data and not (isinstance(data["path"], str) and data["path"]):
            raise not_allowed(_PATH_TEXT, field="path", value=data["path"])
        trusted = data.get("trusted", ())
        if not (
            isinstance(trusted, list | tuple)
            and all(isinstance(t, str) and "." in t.strip(".") for t in trusted)
        ):
            raise not_allowed(_TRUSTED_TEXT, field="trusted", value=trusted)
        sha = data.get("sha256")
        if sha is not None and not (
            isinstance(sha, str) and len(sha) == 64 and set(sha) <= set("0123456789abcdef")
        ):
            allowed = "64 lowercase hex digits (the model file's SHA-256)"
            raise not_allowed(allowed, field="sha256", value=sha)
        return {**data, "trusted": tuple(sorted(set(trusted)))}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "trusted": list(self.trusted)}
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        return out


# -- loading ------------------------------------------------------------------------------
def _saved_versions(node: Any, found: set[str]) -> None:
    """The ``_sklearn_version`` values scikit-learn's ``__getstate__`` wrote into the
    schema (one per estimator; read as JSON, nothing constructed)."""
    if isinstance(node, dict):
        entry = node.get("_sklearn_version")
        if isinstance(entry, dict) and isinstance(entry.get("content"), str):
            try:
                version = json.loads(entry["content"])
            except ValueError:
                version = entry["content"]
            found.add(str(version))
        for value in node.values():
            _saved_versions(value, found)
    elif isinstance(node, list):
        for value in node:
            _saved_versions(value, found)


def load_model(path: Path, shown: str, trusted: tuple[str, ...], digest: str) -> Any:
    """The estimator in the skops file ``path`` (``shown``: the path as the user wrote it)
    whose bytes have SHA-256 ``digest``.

    The bytes are read once, so what is checked is what is loaded. Refused
    (:class:`ModelRefused`) in this order: other bytes than ``digest``, a file that is not
    a skops zip, one saved with another scikit-learn version, untrusted types not in
    ``trusted``, an object that skops cannot build, one without ``predict_proba``, not
    fitted, or not a binary classifier.
    """
    import sklearn
    from sklearn.exceptions import InconsistentVersionWarning, NotFittedError
    from sklearn.utils.validation import check_is_fitted

    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:
        allowed = "the model file's current sha256 (the file changed while it was read)"
        raise ModelRefused("model.sha256", digest, allowed)
    not_skops = f"a file saved with skops.io.dump ({path.name} is not a skops zip file)"
    # a pickle (or anything else) is never handed to a loader: only a zip with a schema
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ModelRefused("model.path", shown, not_skops)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            schema = json.loads(zf.read("schema.json"))
    except (KeyError, ValueError, zipfile.BadZipFile, OSError):
        raise ModelRefused("model.path", shown, not_skops) from None
    saved: set[str] = set()
    _saved_versions(schema, saved)
    here = sklearn.__version__
    other = sorted(saved - {here})
    if other:
        allowed = (
            f"a model saved with the installed scikit-learn {here} (the file was saved with "
            f"{', '.join(other)}): refit and save it with {here}, or install {other[0]}"
        )
        raise ModelRefused("model.path", shown, allowed)
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(data=data)
    except Exception as exc:  # skops raises many types for a malformed schema
        why = " ".join(str(exc).split())[:120]
        raise ModelRefused("model.path", shown, f"{not_skops[:-1]}: {why})") from None
    missing = [t for t in untrusted if t not in trusted]
    if missing:
        allowed = (
            f"a list naming every untrusted type in {path.name}: {', '.join(missing)} "
            "(add them to data.model.trusted only if you trust where the file came from)"
        )
        raise ModelRefused("model.trusted", list(trusted), allowed)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InconsistentVersionWarning)
            model = sio.loads(data, trusted=list(untrusted))
    except Exception as exc:
        why = " ".join(str(exc).split())[:120]
        allowed = f"a model skops can load with scikit-learn {here} ({type(exc).__name__}: {why})"
        raise ModelRefused("model.path", shown, allowed) from None
    for w in caught:  # a version the schema scan missed (scikit-learn checks it again)
        if isinstance(w.message, InconsistentVersionWarning):
            was = w.message.original_sklearn_version
            allowed = (
                f"a model saved with the installed scikit-learn {here} (the file was saved "
                f"with {was}): refit and save it with {here}, or install {was}"
            )
            raise ModelRefused("model.path", shown, allowed)
    if not hasattr(model, "predict_proba"):
        allowed = f"a classifier with predict_proba ({type(model).__name__} has none)"
        raise ModelRefused("model.path", shown, allowed)
    try:
        check_is_fitted(model)
    except (NotFittedError, TypeError):
        allowed = f"a fitted estimator ({type(model).__name__} is not fitted)"
        raise ModelRefused("model.path", shown, allowed) from None
    classes = getattr(model, "classes_", None)
    if classes is None or len(classes) != 2:
        listed = "none" if classes is None else ", ".join(map(str, classes))
        allowed = f"a binary classifier (classes_: {listed})"
        raise ModelRefused("model.path", shown, allowed)
    return model


def positive_index(classes: Any, good: Any) -> int | None:
    """The position of ``good`` in ``classes`` (equal, or equal as text as the label
    column is matched), or None."""
    for i, c in enumerate(classes):
        value = c.item() if isinstance(c, np.generic) else c
        if value == good or str(value) == str(good):
            return i
    return None


# -- raw columns --------------------------------------------------------------------------
class RawColumns:
    """World rows u (n, z) in [0, 1] -> the table's raw columns: x = lo + span * u, for
    a column of ordered codes the file's value of the nearest code, and for a one-hot
    column the category of its largest indicator.

    ``names`` (c,) the table's columns, ``lo`` and ``span`` (c,); ``decode[j]`` is None
    for a numeric column, else the array of the file's values, one per code or category;
    ``where[j]`` the world feature of column j, or a tuple of them for a one-hot column
    (default: column j is feature j).
    """

    def __init__(self, names, lo, span, decode, where=None) -> None:
        self.names = tuple(names)
        self.lo = np.asarray(lo, dtype=float)
        self.span = np.asarray(span, dtype=float)
        self.decode = tuple(decode)
        self.where = tuple(range(len(self.names)) if where is None else where)

    @property
    def z(self) -> int:
        """The world's feature count."""
        return 1 + max(max(a) if isinstance(a, tuple) else a for a in self.where)

    def name_of(self, positions: tuple) -> str:
        """The table column whose one-hot indicators are ``positions``."""
        return self.names[self.where.index(tuple(positions))]

    def rows(self, U: np.ndarray) -> np.ndarray:
        """A copy of U (n, z) with each one-hot column's indicators set to one-hot of its
        largest (:meth:`abm.onehot.OneHot.encode`)."""
        out = np.array(U, dtype=float)
        groups = OneHot.build(tuple(at for at in self.where if isinstance(at, tuple)))
        return out if groups is None else groups.encode(out)

    @property
    def numeric(self) -> bool:
        """Every column is numeric (none decoded from codes)."""
        return all(d is None for d in self.decode)

    def frame(self, X: np.ndarray):
        """The raw columns of rows X (n, z) as a DataFrame, in the table's order."""
        import pandas as pd

        X = np.asarray(X, dtype=float)
        cols: dict[str, Any] = {}
        for j, name in enumerate(self.names):
            at = self.where[j]
            if isinstance(at, tuple):  # one-hot: the active category
                cols[name] = self.decode[j][X[:, list(at)].argmax(axis=1)]
                continue
            raw = X[:, at] * self.span[j] + self.lo[j]
            values = self.decode[j]
            if values is None:
                cols[name] = raw
            else:  # advice may leave a code between two values: the nearest one is read
                codes = np.clip(np.rint(raw), 0, len(values) - 1).astype(np.intp)
                cols[name] = values[codes]
        return pd.DataFrame(cols, columns=list(self.names))


# -- the world's estimator ----------------------------------------------------------------
#: scalers whose transform is x -> a * x + c per column (MinMaxScaler only with clip off)
_SCALERS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler")


def _steps(model: Any) -> list[Any]:
    """The estimators a model applies in order (a Pipeline's steps, passthrough left out)."""
    steps = getattr(model, "steps", None)
    if steps is None:
        return [model]
    return [est for _, est in steps if est is not None and est != "passthrough"]


def _describe(model: Any) -> str:
    steps = _steps(model)
    if len(steps) == 1 and not hasattr(model, "steps"):
        return type(model).__name__
    return f"{type(model).__name__}({', '.join(type(s).__name__ for s in steps)})"


def _affine(step: Any) -> tuple[np.ndarray, np.ndarray] | str:
    """(a, c) with step.transform(x) = a * x + c per column, or why it is not so."""
    from sklearn import preprocessing as pre

    name = type(step).__name__
    if isinstance(step, pre.StandardScaler):
        scale = np.ones(step.n_features_in_) if step.scale_ is None else step.scale_
        mean = np.zeros(step.n_features_in_) if step.mean_ is None else step.mean_
        return 1.0 / scale, -mean / scale
    if isinstance(step, pre.MinMaxScaler):
        if step.clip:
            return f"{name} with clip=True is not affine"
        return step.scale_, step.min_
    if isinstance(step, pre.MaxAbsScaler):
        return 1.0 / step.scale_, np.zeros(step.n_features_in_)
    return f"its step {name} is not one of {', '.join(_SCALERS)}"


def _block(step: Any, forms: list[tuple]) -> list[tuple] | str:
    """The forms of ``step``'s output columns from its input columns' ``forms``, or why
    the step is not linear in the world's features. A form is ("lin", p (z,), q): the
    column is p . u + q on world rows u; or ("cat", positions, values, z): a one-hot
    column's category. Scalers map lin to lin; a OneHotEncoder maps cat to one lin per
    category it keeps (the world's indicator of that category)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    if step is None or (isinstance(step, str) and step == "passthrough"):
        return list(forms)
    if isinstance(step, str) and step == "drop":
        return []
    if hasattr(step, "steps"):  # a Pipeline inside a ColumnTransformer
        for inner in _steps(step):
            forms = _block(inner, forms)
            if isinstance(forms, str):
                return forms
        return forms
    if isinstance(step, ColumnTransformer):
        out: list[tuple] = []
        names = list(getattr(step, "feature_names_in_", []))
        for _, trans, cols in step.transformers_:
            picked = []
            for c in np.atleast_1d(cols).tolist():
                if isinstance(c, bool):
                    return "its ColumnTransformer selects columns by a mask"
                picked.append(names.index(c) if isinstance(c, str) else int(c))
            got = _block(trans, [forms[i] for i in picked])
            if isinstance(got, str):
                return got
            out.extend(got)
        return out
    if isinstance(step, OneHotEncoder):
        out = []
        for i, form in enumerate(forms):
            if form[0] != "cat":
                return "its OneHotEncoder encodes a numeric column"
            _, positions, values, z = form
            at = {str(v): positions[k] for k, v in enumerate(values)}
            drop = None if step.drop_idx_ is None else step.drop_idx_[i]
            for k, category in enumerate(step.categories_[i]):
                if drop is not None and k == drop:
                    continue
                p = np.zeros(z)
                if str(category) in at:  # a category the world lacks stays 0
                    p[at[str(category)]] = 1.0
                out.append(("lin", p, 0.0))
        return out
    if any(f[0] == "cat" for f in forms):
        return f"its step {type(step).__name__} reads a one-hot column as it is"
    got = _affine(step)
    if isinstance(got, str):
        return got
    a, c = got
    return [("lin", a[i] * p, a[i] * q + c[i]) for i, (_, p, q) in enumerate(forms)]


def _world_map(pre: list[Any], columns: RawColumns) -> tuple[np.ndarray, np.ndarray] | str:
    """(P (z, k), q (k,)): the classifier's inputs as u @ P + q on world rows u after the
    steps ``pre``, or why they are not linear in the world's features."""
    z = columns.z
    forms: list[tuple] = []
    for j, at in enumerate(columns.where):
        if isinstance(at, tuple):
            forms.append(("cat", at, columns.decode[j], z))
        elif columns.decode[j] is not None:
            return f"it reads {columns.names[j]} as category values"
        else:
            p = np.zeros(z)
            p[at] = columns.span[j]
            forms.append(("lin", p, float(columns.lo[j])))
    for step in pre:
        got = _block(step, forms)
        if isinstance(got, str):
            return got
        forms = got
    cats = [f for f in forms if f[0] == "cat"]
    if cats:
        return f"it reads one-hot column(s) {', '.join(columns.name_of(f[1]) for f in cats)} as category values"
    if not forms:
        return "its steps drop every column"
    return np.column_stack([f[1] for f in forms]), np.array([f[2] for f in forms])


def linear_form(
    model: Any, columns: RawColumns, pos: int
) -> tuple[tuple[np.ndarray, float] | None, str]:
    """((w (z,), b), "") with the model's logit of the positive class = w . u + b on world
    rows u, or (None, why not): the model must be optional scalers (or a ColumnTransformer
    of scalers, passthrough and OneHotEncoders of the one-hot columns) then a classifier
    with ``coef_`` on its inputs, with probabilities sigmoid(decision)."""
    *pre, last = _steps(model)
    got = _world_map(pre, columns)
    if isinstance(got, str):
        return None, got
    P, q = got
    coef = getattr(last, "coef_", None)
    intercept = getattr(last, "intercept_", None)
    k = P.shape[1]
    if coef is None or intercept is None or np.shape(coef) != (1, k):
        return None, f"its last step {type(last).__name__} has no coef_ of shape (1, {k})"
    coef = np.asarray(coef[0], dtype=float)
    w = P @ coef
    b = float(np.asarray(intercept, dtype=float).reshape(-1)[0] + coef @ q)
    if pos == 0:  # decision_function > 0 means classes_[1]
        w, b = -w, -b
    from sklearn.linear_model import LogisticRegression

    if not isinstance(last, LogisticRegression):
        # another linear classifier: its probabilities must be the logistic link, checked
        # on fixed probe rows (a local generator: no global random state)
        probe = columns.rows(np.random.default_rng(0).random((64, columns.z)))
        p = model.predict_proba(columns.frame(probe))[:, pos]
        if not np.allclose(1.0 / (1.0 + np.exp(-(probe @ w + b))), p, rtol=0, atol=1e-9):
            return None, f"{type(last).__name__}'s probabilities are not sigmoid(decision)"
    return (w, b), ""


class FileModel:
    """A fitted model from a file as the world's estimator (classes 0, 1; 1 = ``good``).

    ``model`` is the user's estimator (its own preprocessing included), ``columns`` the
    :class:`RawColumns` of the table, ``good`` / ``other`` its two class values (``good``:
    the one ``label_good`` names), ``seed`` the ``random_state`` a refit gives the model's
    steps that leave it at None. Its parameters are sklearn-style, so ``clone`` gives a
    copy holding an unfitted clone of the model.
    """

    _PARAMS = ("model", "columns", "good", "other", "seed")

    def __init__(self, model: Any, columns: RawColumns, good: Any, other: Any, seed: int = 0):
        self.model, self.columns, self.good, self.other, self.seed = (
            model,
            columns,
            good,
            other,
            seed,
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._PARAMS}

    def set_params(self, **params: Any) -> FileModel:
        for k, v in params.items():
            if k not in self._PARAMS:
                raise ValueError(f"FileModel has no parameter {k!r}")
            setattr(self, k, v)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(self.model)
        except NotFittedError:
            return False
        return True

    @property
    def classes_(self) -> np.ndarray:
        return np.array([0, 1])

    def _pos(self) -> int:
        pos = positive_index(self.model.classes_, self.good)
        if pos is None:  # a refit on both labels keeps them; guard a hand-made one
            raise ValueError(f"the model's classes_ lack {self.good!r}")
        return pos

    def fit(self, X: np.ndarray, y: np.ndarray) -> FileModel:
        """Refit the wrapped model on the raw columns of world rows X (n, z); y (n,) is 1
        for ``good`` and 0 for ``other``."""
        unset = {
            k: self.seed
            for k, v in self.model.get_params(deep=True).items()
            if (k == "random_state" or k.endswith("__random_state")) and v is None
        }
        if unset:  # a refit must not draw from global random state
            self.model.set_params(**unset)
        labels = np.array([self.other, self.good], dtype=object)[np.asarray(y, dtype=np.intp)]
        classes = np.array([self.other, self.good])
        if classes.dtype.kind in "iufb":  # numeric classes stay numeric, as they were fitted
            labels = labels.astype(classes.dtype)
        self.model.fit(self.columns.frame(X), labels)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, 2): P(other), P(good) of world rows X (n, z), from the raw columns."""
        p = self.model.predict_proba(self.columns.frame(X))[:, self._pos()]
        return np.column_stack([1.0 - p, p])

    def world_linear(self) -> tuple[np.ndarray, float] | None:
        """(w (z,), b): the model's logit in the world's features, or None (see
        :meth:`why_not_linear`)."""
        return linear_form(self.model, self.columns, self._pos())[0]

    def why_not_linear(self) -> str:
        return linear_form(self.model, self.columns, self._pos())[1]

    @property
    def kind_text(self) -> str:
        """The model in one phrase, for refusals (``require_linear``)."""
        why = self.why_not_linear()
        text = f"{_describe(self.model)} from data.model"
        return f"{text}, not linear in the world's features ({why})" if why else text


def describe_columns(expected: Any, features: tuple[str, ...]) -> str:
    """The refusal text for a model whose ``feature_names_in_`` are not ``features``."""
    want = ", ".join(features)
    if expected is None:
        got = "none: it was fitted on an array, not a DataFrame"
    else:
        got = show([str(e) for e in expected])
    return f"a model fitted on the columns of data.features, in order: {want} (it expects {got})"
