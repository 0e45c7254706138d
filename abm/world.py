"""The synthetic world: feature generator, historical dataset and decision model (App. B.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from abm.causal import CausalGraph
from abm.config import ScenarioConfig
from abm.data import build_data_world
from abm.fair_models import FAIR_MODELS, FairLogisticRegression
from abm.interfaces import PolicyContext
from abm.mechanisms import registered
from abm.metrics_ext import true_outcome_probability
from abm.onehot import OneHot
from abm.rng import stream
from abm.summation import linear_logit


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

    @property
    def affine(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale, offset), each (z,): :meth:`sample` is clip(scale * N(0, 1) + offset)."""
        return self._affine

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
        elif hasattr(estimator, "world_linear"):  # a model from a file (abm.model_file)
            form = estimator.world_linear()
            if form is not None:
                self.weights = np.array(form[0], dtype=float)
                self.weights.setflags(write=False)
                self.intercept = float(form[1])

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
class Structure:
    """How the world's rows are made beyond independent features: the generating parts of
    the world extensions (specs/world-extensions.md §1, §3, §4).

    ``proxies`` are the non-causal features N, ``strength`` their r; ``share`` (G,) the
    group shares and ``shift`` (G, z) their mean shifts (zeros: none); ``graph`` the
    causal graph or None. ``plain`` is True when none of them changes a drawn row.
    """

    proxies: tuple[int, ...] = ()
    strength: float = 0.5
    share: tuple[float, ...] = (1.0,)
    shift: np.ndarray | None = None
    graph: CausalGraph | None = None
    onehot: OneHot | None = None  # groups of indicators, one-hot of their largest draw

    @property
    def plain(self) -> bool:
        return self.independent and self.onehot is None

    @property
    def independent(self) -> bool:
        """No proxies, shift or graph: the generator's rows are the features' values."""
        return not self.proxies and self.shift is None and self.graph is None

    @cached_property
    def _edges(self) -> np.ndarray:
        return np.cumsum(self.share)

    @property
    def n_groups(self) -> int:
        return len(self.share)

    def groups(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Group ids (n,) int64: searchsorted(cumsum(share), U, "right"); G = 1 draws nothing."""
        if len(self.share) == 1:
            return np.zeros(n, dtype=np.int64)
        g = np.searchsorted(self._edges, rng.random(n), side="right")
        # a sum of shares just below 1 must not put U in a group G
        return np.minimum(g, len(self.share) - 1).astype(np.int64)


def base_rows(E: np.ndarray, nu: np.ndarray, group: np.ndarray, structure: Structure) -> np.ndarray:
    """Rows (n, z) from base values E = ν + τ·noise (n, z, written in place): the group
    shift, then the SEM in topological order (§4) or a clip to [0, 1]."""
    if structure.shift is not None:
        E += structure.shift[group]
    if structure.graph is not None:
        return structure.graph.generate(E, nu)
    return np.clip(E, 0.0, 1.0, out=E)


def proxy_columns(
    X: np.ndarray,
    nu: np.ndarray,
    tau: np.ndarray,
    group: np.ndarray,
    u: np.ndarray,
    structure: Structure,
    rng: np.random.Generator,
) -> None:
    """§1: X[:, i] = clip(ν_i + shift_{g,i} + τ_i (r u + √(1 - r²) e_i), 0, 1) for i in N,
    in place; u (n,) is the standardised label score, e (n, |N|) drawn from ``rng``."""
    cols = list(structure.proxies)
    e = rng.standard_normal((X.shape[0], len(cols)))
    r = structure.strength
    noise = r * u[:, None] + math.sqrt(1.0 - r * r) * e
    base = nu[cols] if structure.shift is None else nu[cols] + structure.shift[group][:, cols]
    X[:, cols] = np.clip(base + tau[cols] * noise, 0.0, 1.0)


@dataclass(frozen=True)
class World:
    """One drawn world: generator, label weights, training set (n_train, z) and M.

    World extensions (specs/world-extensions.md): ``w_star`` (z,) are the true weights of
    h* (the label weights with non-causal features at 0, renormalised); ``s_mean`` and
    ``s_sd`` the mean and std of the training rows' label score s (for the proxies);
    ``group_train`` (n_train,) the training rows' groups; ``structure`` how rows are generated.
    """

    generator: FeatureGenerator
    label_weights: np.ndarray
    X_train: np.ndarray
    y_train: np.ndarray
    decision_model: DecisionModel
    w_star: np.ndarray | None = None
    s_mean: float = 0.0
    s_sd: float = 1.0
    group_train: np.ndarray | None = None
    structure: Structure = field(default_factory=Structure)
    label_noise: float = 0.0

    def draw(
        self,
        n: int,
        normals: np.random.Generator,
        groups: np.random.Generator | None = None,
        noncausal: np.random.Generator | None = None,
        drift: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(X (n, z) in [0, 1], group (n,) int64) of n new candidates (§1, §3, §4).

        ``normals`` gives the (n, z) standard normals every scenario draws; ``groups`` one
        uniform per row when G > 1; ``noncausal`` η (n,) then e (n, |N|) when there are
        proxies. ``drift`` (z,) moves the means ν (retraining's "shifted" data). Without
        extensions and drift this is :meth:`FeatureGenerator.sample`, bit for bit.
        """
        structure, gen = self.structure, self.generator
        if structure.independent and drift is None:
            X = gen.sample(n, normals)
            if structure.onehot is not None:
                structure.onehot.encode(X)
            return X, np.zeros(n, dtype=np.int64)
        tau, nu = gen._affine
        if drift is not None:
            nu = nu + drift
        E = normals.standard_normal((n, gen.n_features))
        E *= tau  # the arithmetic of FeatureGenerator.sample: same bits without extensions
        E += nu
        group = (
            structure.groups(n, groups) if structure.n_groups > 1 else np.zeros(n, dtype=np.int64)
        )
        X = base_rows(E, nu, group, structure)
        if structure.onehot is not None:
            structure.onehot.encode(X)
        if structure.proxies:
            # §1: an entrant's label score s = w*·x + label_noise·η, η before e
            eta = noncausal.standard_normal(n)
            s = np.add.reduce(X * self.w_star, axis=1) + self.label_noise * eta
            proxy_columns(X, nu, tau, group, (s - self.s_mean) / self.s_sd, structure, noncausal)
        return X, group

    def policy_context(
        self,
        config: Any,
        immutable: np.ndarray,
        difficulty: np.ndarray,
        extra: dict,
        direction: np.ndarray | None = None,
    ) -> PolicyContext:
        """What a policy may know of this world under scenario ``config`` (SPEC §4): the
        decision model, the box, immutables (z,), the one-way ``direction`` (z,) int8
        (None: none), difficulties (z,) and the training data."""
        c, z = config, config.n_features
        return PolicyContext(
            decision_model=self.decision_model,
            lower=np.zeros(z),
            upper=np.ones(z),
            immutable=immutable,
            difficulty=difficulty,
            k=c.k,
            m=c.m,
            validity=c.validity,
            beta=c.beta,
            ticks=c.ticks,
            X_train=self.X_train,
            extra=extra,
            y_train=self.y_train,
            group_train=self.group_train,
            n_groups=c.n_groups,
            causal_graph=self.structure.graph,
            onehot=self.structure.onehot,
            increase=None if direction is None else direction > 0,
            decrease=None if direction is None else direction < 0,
            # what the extensions tell policies (a budget); registry order
            **{k: v for m in registered() for k, v in m.context(c).items()},
        )

    def entrants(self, n: int, streams: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """(X (n, z), group (n,) or None: all 0) of ``n`` new candidates: the features from
        the arrivals stream; groups and proxies each from their own (§0)."""
        if self.structure.plain:
            return self.generator.sample(n, streams.arrivals), None
        return self.draw(n, streams.arrivals, streams.get("groups"), streams.get("noncausal"))

    def true_probability(self, X: np.ndarray, c_star: float, sigma_star: float) -> np.ndarray:
        """h*(x) (n,) of rows X (n, z) (§1)."""
        return true_outcome_probability(X, self.w_star, c_star, sigma_star)

    def shifted_rows(
        self, n: int, drift: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """(X (n, z), y (n,) int8): training rows of the generator with means ν + drift and
        the historical labelling rule y = 1[w*·x + N(0, label_noise²) > 0.5] (§2)."""
        X, _ = self.draw(n, rng, rng, rng, drift=np.asarray(drift, dtype=float))
        s = np.add.reduce(X * self.w_star, axis=1) + rng.normal(0.0, self.label_noise, size=n)
        return X, (s > 0.5).astype(np.int8)


def make_estimator(kind: str, seed: int, improvable: tuple[bool, ...] | None = None) -> Any:
    """An unfitted classifier of the named kind (``improvable``: the EI model's features)."""
    if kind == "logistic":
        return LogisticRegression(max_iter=1000)
    if kind in FAIR_MODELS:
        return FairLogisticRegression(objective=kind, improvable=improvable)
    if kind == "mlp":
        from abm.mlp import MLPClassifier

        return MLPClassifier(random_state=seed)
    raise ValueError(f"decision_model must be one of: logistic, mlp, dp, ei, got {kind!r}")


def build_world(config: ScenarioConfig, estimator: Any | None = None) -> World:
    """Draw the world of ``config.world_seed`` and fit the decision model on it.

    ``estimator`` may be any scikit-learn classifier with ``predict_proba``: an unfitted
    one is cloned and fitted on the historical data, a fitted one is used as it is.
    """
    if config.data is not None:  # a population from the user's own table (abm.data)
        d = build_data_world(
            config.data,
            world_seed=config.world_seed,
            decision_model=config.decision_model,
            weight_range=config.weight_range,
            label_noise=config.label_noise,
            estimator=estimator,
        )
        model = DecisionModel(d.estimator)
        return World(
            d.generator,
            d.label_weights,
            d.X_train,
            d.y_train,
            model,
            w_star=d.label_weights,
            structure=Structure(onehot=OneHot.of(config)),
        )
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
        # world extensions: proxies, groups, graph (their defaults leave the world as it was)
        c.noncausal_features,
        c.noncausal_strength,
        c.group_share,
        c.group_shift,
        c.causal_graph,
        # immutables matter to the graph's checks and to the fair models' improvable set
        c.immutable if (c.causal_graph or c.decision_model in FAIR_MODELS) else (),
        # one-hot groups: drawn rows become categories (abm.onehot)
        (c.onehot, c.switch_cost),
    )


@lru_cache(maxsize=16)
def _cached_world(key: tuple) -> World:
    return _build_world(key, None)


def _structure(key: tuple) -> Structure:
    z, *_, proxies, strength, share, shift, edges, immutable, (groups, costs) = key
    onehot = OneHot.build(groups, costs)
    if not (proxies or len(share) > 1 or edges):
        return Structure(onehot=onehot)
    shift_arr = np.asarray(shift, dtype=float) if shift and np.any(shift) else None
    if shift_arr is not None:
        shift_arr.setflags(write=False)
    graph = CausalGraph.from_edges(edges, z, immutable, proxies) if edges else None
    return Structure(tuple(proxies), float(strength), tuple(share), shift_arr, graph, onehot)


def _build_world(key: tuple, estimator: Any | None) -> World:
    z, mean_range, std_range, weight_range, noise, n_train, kind, world_seed = key[:8]
    structure = _structure(key)
    rng = stream(world_seed, "world")
    mean = rng.uniform(*mean_range, size=z)
    std = rng.uniform(*std_range, size=z)
    raw = rng.normal(mean, std, size=(n_train, z))
    lo, hi = raw.min(axis=0), raw.max(axis=0)
    hi = np.where(hi > lo, hi, lo + 1.0)  # a constant feature would divide by zero
    gen = FeatureGenerator(mean=mean, std=std, lo=lo, hi=hi)
    X = gen.normalise(raw)
    if structure.onehot is not None:
        structure.onehot.encode(X)
    w = rng.uniform(*weight_range, size=z)
    w = w / w.sum()
    w_star = w
    if structure.proxies:
        w_star = w.copy()
        w_star[list(structure.proxies)] = 0.0
        w_star /= w_star.sum()
    groups = structure.groups(n_train, stream(world_seed, "world-groups"))
    tau, nu = gen._affine
    if structure.shift is not None or structure.graph is not None:
        X = base_rows(X, nu, groups, structure)  # §3-§4 from today's normalised draw
    s = X @ w_star + rng.normal(0.0, noise, size=n_train)
    s_mean, s_sd = float(s.mean()), float(s.std())
    if structure.proxies:  # training rows carry their historical s
        u = (s - s_mean) / s_sd
        proxy_columns(X, nu, tau, groups, u, structure, stream(world_seed, "world-noncausal"))
    y = (s > 0.5).astype(np.int8)
    if y.min() == y.max():
        raise ValueError(
            "the drawn historical labels are all equal; widen mean_range or label_noise"
        )
    if estimator is None:
        # the fairness-regularised models move the mutable, causal features
        improvable = np.ones(z, dtype=bool)
        improvable[list(key[-2])] = False
        improvable[list(structure.proxies)] = False
        estimator = make_estimator(kind, world_seed, tuple(improvable.tolist()))
    try:
        check_is_fitted(estimator)
    except NotFittedError:
        if isinstance(estimator, FairLogisticRegression):
            estimator = clone(estimator).fit(X, y, groups=groups)
        else:
            estimator = clone(estimator).fit(X, y)
    for arr in (mean, std, lo, hi, X, w, w_star, y, groups):
        arr.setflags(write=False)
    return World(
        generator=gen,
        label_weights=w,
        X_train=X,
        y_train=y,
        decision_model=DecisionModel(estimator),
        w_star=w_star,
        s_mean=s_mean,
        s_sd=s_sd,
        group_train=groups,
        structure=structure,
        label_noise=noise,
    )
