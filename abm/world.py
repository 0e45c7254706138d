"""The synthetic world: feature generator, historical dataset and decision model (App. B.1)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from abm.config import ScenarioConfig
from abm.data import build_data_world
from abm.interfaces import linear_logit
from abm.rng import stream


@dataclass(frozen=True)
class FeatureGenerator:
    """Independent normal features, min-max normalised by the training set.

    ``mean``, ``std``, ``lo``, ``hi`` have shape (z,); raw samples are N(mean, std),
    normalised as (x - lo) / (hi - lo) and clipped to [0, 1].
    """

    mean: np.ndarray
    std: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @property
    def n_features(self) -> int:
        return self.mean.shape[0]

    def sample_raw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Raw draws, shape (n, z)."""
        return rng.normal(self.mean, self.std, size=(n, self.n_features))

    def normalise(self, raw: np.ndarray) -> np.ndarray:
        """Map raw draws (n, z) into [0, 1]^z."""
        out = (raw - self.lo) / (self.hi - self.lo)
        return np.clip(out, 0.0, 1.0, out=out)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """New candidates' features, shape (n, z), in [0, 1].

        Same law as ``normalise(sample_raw(...))``, folded into one affine map of standard
        normals so that large arrivals make a single pass over memory.
        """
        scale, offset = self._affine
        out = rng.standard_normal((n, self.n_features))
        out *= scale
        out += offset
        return out.clip(0.0, 1.0, out=out)  # the method: np.clip without its wrapper

    @cached_property
    def _affine(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale, offset), each (z,): normalised sample = scale * N(0, 1) + offset."""
        span = self.hi - self.lo
        return self.std / span, (self.mean - self.lo) / span


class DecisionModel:
    """The decision-maker's score M(x) = P(label 1 | x) of a fitted scikit-learn classifier.

    Linear models (``coef_`` and ``intercept_`` with a logistic link) are scored with one
    matrix-vector product; anything else goes through ``predict_proba``.
    """

    def __init__(self, estimator: Any) -> None:
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"decision model {type(estimator).__name__} has no predict_proba; "
                "use a probabilistic scikit-learn classifier"
            )
        self.estimator = estimator
        classes = list(getattr(estimator, "classes_", [0, 1]))
        if 1 not in classes:
            raise ValueError("decision model must be trained with label 1 meaning 'accept'")
        self._pos = classes.index(1)
        self.weights: np.ndarray | None = None
        self.intercept: float | None = None
        if isinstance(estimator, LogisticRegression) and len(classes) == 2:
            sign = 1.0 if self._pos == 1 else -1.0
            self.weights = sign * np.asarray(estimator.coef_[0], dtype=float)
            self.weights.setflags(write=False)
            self.intercept = float(sign * estimator.intercept_[0])

    @property
    def is_linear(self) -> bool:
        """True when M(x) = sigmoid(w . x + b) with known ``weights`` and ``intercept``."""
        return self.weights is not None

    def logit(self, X: np.ndarray) -> np.ndarray:
        """w . x + b for a linear model, shape (n,)."""
        if self.weights is None:
            raise TypeError("logit is only defined for linear decision models")
        return linear_logit(X, self.weights, self.intercept)

    def score(self, X: np.ndarray) -> np.ndarray:
        """Scores of the rows of X (n, z), shape (n,)."""
        if X.shape[0] == 0:
            return np.empty(0)
        if self.weights is not None:
            return expit(linear_logit(X, self.weights, self.intercept))
        return self.estimator.predict_proba(X)[:, self._pos]


@dataclass(frozen=True)
class World:
    """One drawn world: generator, label weights, training set (n_train, z) and M."""

    generator: FeatureGenerator
    label_weights: np.ndarray
    X_train: np.ndarray
    y_train: np.ndarray
    decision_model: DecisionModel


def make_estimator(kind: str, seed: int) -> Any:
    """An unfitted classifier of the named kind."""
    if kind == "logistic":
        return LogisticRegression(max_iter=1000)
    if kind == "mlp":
        from abm.mlp import MLPClassifier

        return MLPClassifier(random_state=seed)
    raise ValueError(f"decision_model must be one of: logistic, mlp, got {kind!r}")


def build_world(config: ScenarioConfig, estimator: Any | None = None) -> World:
    """Draw the world of ``config.world_seed`` and fit the decision model on it.

    ``estimator`` may be any scikit-learn classifier with ``predict_proba``: an unfitted
    one is cloned and fitted on the historical data, a fitted one is used as it is.
    """
    if config.data is not None:  # a population from the user's own table (abm.data)
        d = build_data_world(config, estimator)
        model = DecisionModel(d.estimator)
        return World(d.generator, d.label_weights, d.X_train, d.y_train, model)
    if estimator is None:
        return _cached_world(_world_key(config))
    return _build_world(_world_key(config), estimator)


def _world_key(c: ScenarioConfig) -> tuple:
    return (
        c.n_features,
        c.mean_range,
        c.std_range,
        c.weight_range,
        c.label_noise,
        c.n_train,
        c.decision_model,
        c.world_seed,
    )


@lru_cache(maxsize=16)
def _cached_world(key: tuple) -> World:
    return _build_world(key, None)


def _build_world(key: tuple, estimator: Any | None) -> World:
    z, mean_range, std_range, weight_range, noise, n_train, kind, world_seed = key
    rng = stream(world_seed, "world")
    mean = rng.uniform(*mean_range, size=z)
    std = rng.uniform(*std_range, size=z)
    raw = rng.normal(mean, std, size=(n_train, z))
    lo, hi = raw.min(axis=0), raw.max(axis=0)
    hi = np.where(hi > lo, hi, lo + 1.0)  # a constant feature would divide by zero
    gen = FeatureGenerator(mean=mean, std=std, lo=lo, hi=hi)
    X = gen.normalise(raw)
    w = rng.uniform(*weight_range, size=z)
    w = w / w.sum()
    s = X @ w + rng.normal(0.0, noise, size=n_train)
    y = (s > 0.5).astype(np.int8)
    if y.min() == y.max():
        raise ValueError(
            "the drawn historical labels are all equal; widen mean_range or label_noise"
        )
    if estimator is None:
        estimator = make_estimator(kind, world_seed)
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        estimator = clone(estimator).fit(X, y)
    for arr in (mean, std, lo, hi, X, w, y):
        arr.setflags(write=False)
    return World(
        generator=gen,
        label_weights=w,
        X_train=X,
        y_train=y,
        decision_model=DecisionModel(estimator),
    )
