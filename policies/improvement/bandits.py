"""Recourse for long-term improvement: the four methods of the ARLIM task
(specs/improvement-bandits.md §1-§2; Kanamori et al., ICML 2025).

Arms are K recourse instances x̃_k (h(x̃_k) = 1); an arm's action for an instance x is
a = x̃_k - x, its cost c = ‖a‖₁ and its execution probability E = exp(-ν c) (eq. 2).
Every method picks one arm per round from a feasibility mask (K,):

* :func:`protoar_pick` -- ProtoAR, the cheapest arm (argmax of the E it is shown);
* :class:`PairVerifier` -- TAP's verifier (Friedbaum et al.), which restricts ProtoAR to
  trustworthy arms;
* :class:`LinUCB` -- Algorithm 1 on one-hot features ϕ = Ê e_k with a censoring window
  of m picks; V stays diagonal, so every update is O(1) per pick and exact;
* :class:`BwOUCB` -- Algorithm 2: UCB on a bagging-with-oversampling extra-trees
  surrogate of the reward over z = (x, x̃_k - x); it never sees E.

The functions are plain (arrays in, arrays out); the classes hold the little state each
method carries from round to round. The static task (Problem 3.1) drives them from
:mod:`lab.reproduce.improvement`; the population policies of
:mod:`policies.improvement.population` drive them from the model's ticks.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from abm.registry import checked
from abm.validation import ConfigError, problem, require_int, require_number

Bonus = Literal["quad", "sqrt"]
LearnWith = Literal["shown", "true"]
#: the parameters' declarations (type and bounds): the registry, the population policies
#: and the bandits here all check against these (abm.registry.checked)
NArms = Annotated[int, Field(ge=1, le=100_000)]
Lam = Annotated[float, Field(gt=0.0, le=1e9)]
Delta = Annotated[float, Field(gt=0.0, lt=1.0)]
M = Annotated[int, Field(ge=1, le=1_000_000)]
NTrees = Annotated[int, Field(ge=1, le=10_000)]
MaxSamples = Annotated[float, Field(gt=0.0, le=1.0)]


# -- costs and execution probabilities ------------------------------------------------------
def l1_costs(x: np.ndarray, arms: np.ndarray) -> np.ndarray:
    """‖x̃_k - x‖₁ (K,) for one instance x (z,) and arms (K, z)."""
    return np.add.reduce(np.abs(arms - x), axis=1)


def execution_probability(cost: np.ndarray, nu: float) -> np.ndarray:
    """E = exp(-ν c) (eq. 2), elementwise."""
    return np.exp(-nu * np.asarray(cost, dtype=float))


def noisy_probability(E: np.ndarray, xi: float, eps: np.ndarray) -> np.ndarray:
    """Ê = clip(E + ξ ε, 0, 1) with standard normals ε of E's shape (§2, cost noise)."""
    return np.clip(E + xi * eps, 0.0, 1.0)


def feasible_arms(x: np.ndarray, arms: np.ndarray, immutable: np.ndarray) -> np.ndarray:
    """(K,) bool: arms whose immutable features equal the instance's (A_t of eq. 3)."""
    if not immutable.any():
        return np.ones(arms.shape[0], dtype=bool)
    return (arms[:, immutable] == x[immutable]).all(axis=1)


def argmax_feasible(score: np.ndarray, feasible: np.ndarray) -> int:
    """The first arm with the highest score among the feasible (-1: none is feasible)."""
    if not feasible.any():
        return -1
    # the infeasible can never win: every score here is finite
    return int(np.argmax(np.where(feasible, score, -np.inf)))


# -- ProtoAR ---------------------------------------------------------------------------------
def protoar_pick(E_shown: np.ndarray, feasible: np.ndarray) -> int:
    """ProtoAR: the feasible arm with the highest shown execution probability (-1: none)."""
    return argmax_feasible(E_shown, feasible)


# -- TAP's verifier --------------------------------------------------------------------------
@dataclass(frozen=True)
class PairVerifier:
    """TAP's trust check (§2): ``model`` maps a pair (x, x̃) (2z,) to P(same label);
    ``h`` is the decision model (``predict_proba``); trust = |v - (p p̃ + (1-p)(1-p̃))|
    with p, p̃ h's probabilities of class 1; trustworthy iff trust <= ``threshold``."""

    model: Any
    h: Any
    threshold: float

    def trust(self, X: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """Trust scores (n, K) of every instance in X (n, z) with every arm (K, z)."""
        n, K = X.shape[0], arms.shape[0]
        pairs = np.concatenate([np.repeat(X, K, axis=0), np.tile(arms, (n, 1))], axis=1)
        v = self.model.predict_proba(pairs)[:, 1].reshape(n, K)
        p = self.h.predict_proba(X)[:, 1][:, None]
        q = self.h.predict_proba(arms)[:, 1][None, :]
        return np.abs(v - (p * q + (1.0 - p) * (1.0 - q)))

    def trustworthy(self, X: np.ndarray, arms: np.ndarray) -> np.ndarray:
        """(n, K) bool: pairs whose trust score is at most the threshold."""
        return self.trust(X, arms) <= self.threshold


def fit_pair_verifier(
    h: Any,
    X: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    n_pairs: int = 10_000,
    quantile: float = 0.3,
) -> PairVerifier:
    """Fit TAP's verifier: a clone of ``h`` on ``n_pairs`` random training pairs
    (x_i, x_j) (drawn with replacement from X (n, z), labels y (n,)) with target
    1[y_i = y_j]; the threshold is the ``quantile`` of trust over the pairs of different
    labels (§2). The clone's own randomness is seeded from ``rng``."""
    from sklearn.base import clone

    n_pairs = require_int("n_pairs", n_pairs, 2)
    quantile = require_number("quantile", quantile, 0.0, 1.0)
    n = X.shape[0]
    left, right = rng.integers(0, n, n_pairs), rng.integers(0, n, n_pairs)
    Z = np.concatenate([X[left], X[right]], axis=1)
    same = (y[left] == y[right]).astype(np.int64)
    if np.unique(same).size < 2:
        raise ConfigError(problem("y", "one label", "training labels of both classes"))
    model = clone(h)
    if "random_state" in model.get_params():
        model.set_params(random_state=int(rng.integers(2**31 - 1)))
    model.fit(Z, same)
    diff = same == 0
    v = model.predict_proba(Z[diff])[:, 1]
    p = h.predict_proba(X[left[diff]])[:, 1]
    q = h.predict_proba(X[right[diff]])[:, 1]
    trust = np.abs(v - (p * q + (1.0 - p) * (1.0 - q)))
    return PairVerifier(model, h, float(np.quantile(trust, quantile)))


# -- LinUCB (Algorithm 1) --------------------------------------------------------------------
def linucb_width(t: int, K: int, lam: float, delta: float, bonus: Bonus = "quad") -> float:
    """f_t (t 1-based): √λ + √(2 log(1/δ) + K log((Kλ + t)/(Kλ))) for ``bonus="quad"``
    (the authors' code); the paper's α_t (no √λ) for ``"sqrt"`` (D1)."""
    alpha = math.sqrt(2.0 * math.log(1.0 / delta) + K * math.log((K * lam + t) / (K * lam)))
    return alpha + math.sqrt(lam) if bonus == "quad" else alpha


class LinUCB:
    """Algorithm 1 with one-hot arms ϕ_t(k) = Ê_tk e_k ∈ R^K (§2).

    V = λI + Σ ϕϕᵀ stays diagonal, so ``vinv`` (K,) is V⁻¹'s diagonal and both the
    Sherman-Morrison step and θ̂ = V⁻¹b are exact O(1) and O(K) updates. Score of arm k:
    ϕᵀθ̂ + κ_t q_k with q_k = ϕᵀV⁻¹ϕ = Ê_k² V⁻¹_kk (``bonus="quad"``) or √q_k (``"sqrt"``);
    κ_t = 2 f_t + Σ of q at pick over the last ``m`` picks. ``learn_with`` says which
    ϕ the reward is credited to: the shown Ê (ours) or the true E (the authors' code, D2).
    """

    @checked
    def __init__(
        self,
        n_arms: NArms,
        lam: Lam = 20.0,
        delta: Delta = 0.05,
        m: M = 10,
        bonus: Bonus = "quad",
        learn_with: LearnWith = "shown",
    ) -> None:
        self.K, self.lam, self.delta, self.m = int(n_arms), float(lam), float(delta), int(m)
        self.bonus, self.learn_with = bonus, learn_with
        self.vinv = np.full(self.K, 1.0 / self.lam)
        self.b = np.zeros(self.K)
        self.t = 0  # picks so far
        self.recent: deque[float] = deque(maxlen=self.m)

    def scores(self, E_shown: np.ndarray) -> np.ndarray:
        """UCB scores (K,) of this round (t = picks so far + 1) for shown Ê (K,)."""
        q = E_shown * E_shown * self.vinv
        kappa = 2.0 * linucb_width(self.t + 1, self.K, self.lam, self.delta, self.bonus)
        kappa += math.fsum(self.recent)
        width = q if self.bonus == "quad" else np.sqrt(q)
        return E_shown * (self.vinv * self.b) + kappa * width

    def pick(self, E_shown: np.ndarray, feasible: np.ndarray) -> int:
        """Choose among the feasible arms, then V += ϕϕᵀ for the pick (-1: none feasible)."""
        k = argmax_feasible(self.scores(E_shown), feasible)
        if k >= 0:
            self.commit(k, float(E_shown[k]))
        return k

    def pick_rows(self, E_shown: np.ndarray, feasible: np.ndarray) -> np.ndarray:
        """:meth:`pick` for n rounds in a row, E_shown and feasible (n, K): the arms (n,)
        (-1 where a row has no feasible arm), bit for bit what n calls of :meth:`pick`
        return. No reward arrives between the rounds, so b is fixed: θ̂ = V⁻¹b changes
        only at each picked arm, and Ê² is squared once for all rows."""
        n = E_shown.shape[0]
        out = np.full(n, -1, dtype=np.int64)
        theta = self.vinv * self.b
        # with b >= 0 (so θ̂ >= 0) and κ > 0 a feasible arm with Ê > 0 scores > 0: with the
        # infeasible arms' Ê set to 0 (score exactly 0) a plain argmax finds the same arm
        positive = bool((E_shown[feasible] > 0).all() and (self.b >= 0).all())
        E = np.where(feasible, E_shown, 0.0) if positive else E_shown
        EE = E * E
        quad = self.bonus == "quad"
        vinv, recent = self.vinv, self.recent
        for i in np.flatnonzero(feasible.any(axis=1)).tolist():
            # the same products and sums as scores(), in the same order
            q = EE[i] * vinv
            kappa = 2.0 * linucb_width(self.t + 1, self.K, self.lam, self.delta, self.bonus)
            kappa += math.fsum(recent)
            score = E[i] * theta + kappa * (q if quad else np.sqrt(q))
            if not positive:
                score = np.where(feasible[i], score, -np.inf)
            k = int(score.argmax())
            self.commit(k, float(E[i, k]))
            theta[k] = vinv[k] * self.b[k]
            out[i] = k
        return out

    def commit(self, k: int, e: float) -> None:
        """Record a pick of arm k shown with Ê_k = e: bonus term and Sherman-Morrison."""
        q = e * e * self.vinv[k]
        self.recent.append(q)
        # (V + e² e_k e_kᵀ)⁻¹ on a diagonal V changes entry k only
        self.vinv[k] = self.vinv[k] / (1.0 + q)
        self.t += 1

    def reward(self, k: int, value: float, e_shown: float, e_true: float | None = None) -> None:
        """b += R ϕ_s for a reward R = ``value`` of a pick of arm k (ϕ per ``learn_with``)."""
        e = e_shown if self.learn_with == "shown" or e_true is None else e_true
        self.b[k] += value * e

    def theta(self) -> np.ndarray:
        """θ̂ = V⁻¹ b (K,)."""
        return self.vinv * self.b


# -- BwO-UCB (Algorithm 2) -------------------------------------------------------------------
def bwo_kappa(t: int) -> float:
    """√(ln t / t) for round t (1-based)."""
    return math.sqrt(math.log(t) / t)


def bwo_forest(n_trees: int = 50, max_samples: float | int = 0.25, seed: int = 0):
    """The surrogate: ``ExtraTreesRegressor(n_trees, bootstrap=True, max_samples)`` (a
    share or a count of rows per tree), one thread (study runs and the population model
    run it side by side)."""
    from sklearn.ensemble import ExtraTreesRegressor

    return ExtraTreesRegressor(
        n_estimators=n_trees, bootstrap=True, max_samples=max_samples, n_jobs=1, random_state=seed
    )


def bwo_predict(forest: Any, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """μ̂ and σ̂ (n,) of rows Z (n, 2z): mean over trees of the leaf mean, and
    σ̂² = mean(leaf variance + leaf mean²) - μ̂² (clipped at 0) (§2)."""
    Z = np.asarray(Z, dtype=np.float32)  # what the trees compare against
    mu = np.zeros(Z.shape[0])
    second = np.zeros(Z.shape[0])
    for tree in forest.estimators_:
        t = tree.tree_
        leaf = t.apply(Z)
        mean = t.value[leaf, 0, 0]
        mu += mean
        second += t.impurity[leaf] + mean * mean
    B = len(forest.estimators_)
    mu /= B
    var = np.maximum(second / B - mu * mu, 0.0)
    return mu, np.sqrt(var)


class BwOUCB:
    """Algorithm 2: picks are stored as (z, R = 0) and set to 1 when their reward
    arrives; the forest is refitted on every round with feedback; picks are uniform
    among the feasible until the first positive reward (§2)."""

    @checked
    def __init__(
        self,
        n_trees: NTrees = 50,
        max_samples: MaxSamples = 0.25,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.n_trees, self.max_samples = int(n_trees), float(max_samples)
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.Z: list[np.ndarray] = []
        self.R: list[float] = []
        self.forest: Any = None
        self.learned = False

    def pick(self, Z: np.ndarray, feasible: np.ndarray) -> int:
        """Choose among the feasible rows of Z (K, 2z) at round t = picks so far + 1 and
        store the pick with R = 0; returns its arm (-1: none feasible)."""
        idx = np.flatnonzero(feasible)
        if idx.size == 0:
            return -1
        t = len(self.Z) + 1
        if not self.learned or self.forest is None:
            k = int(idx[self.rng.integers(idx.size)])
        else:
            mu, sigma = bwo_predict(self.forest, Z[idx])
            k = int(idx[np.argmax(mu + bwo_kappa(t) * sigma)])
        self.Z.append(np.asarray(Z[k], dtype=float))
        self.R.append(0.0)
        return k

    def reward(self, pick: int, value: float = 1.0) -> None:
        """Set the stored reward of pick number ``pick`` (0-based, in pick order)."""
        self.R[pick] = float(value)
        if value > 0:
            self.learned = True

    def refit(self) -> None:
        """Fit a fresh forest on every stored pick (call on rounds with feedback)."""
        if not self.Z:
            return
        seed = int(self.rng.integers(2**31 - 1))
        # the bootstrap size sklearn would derive from the share, given as a count
        size = max(round(len(self.Z) * self.max_samples), 1)
        forest = bwo_forest(self.n_trees, size, seed)
        self.forest = forest.fit(np.stack(self.Z), np.asarray(self.R))
