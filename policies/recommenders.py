"""Recommenders: given features X (n, z) and goal scores g (n,), return X_cf (n, z)."""

from __future__ import annotations

import functools
import itertools
import math
from typing import Annotated, Literal, get_args

import numpy as np
from pydantic import Field
from scipy.special import logit

from abm.behaviour import attainability
from abm.interfaces import (
    Feedback,
    FollowsModel,
    PolicyContext,
    RejectedRows,
    Scorer,
    linear_logit,
)
from abm.onehot import OneHot
from abm.validation import ConfigError, problem

CostWeights = Literal["uniform", "true", "estimated"]
COST_WEIGHTS: tuple[str, ...] = get_args(CostWeights)


class DifficultyEstimator:
    """Online estimate of per-feature difficulty d (durable-recourse-rl eqs. 12-14).

    Starts at d0 for every feature; each observed attempt of feature i with outcome y
    moves d_i by eta_i (p_i - y) a_i, with eta_i = eta0 / (1 + updates so far of i).
    """

    def __init__(self, n_features: int, beta: float, d0: float = 0.5, eta0: float = 0.05) -> None:
        self.beta = beta
        self.eta0 = eta0
        self.d = np.full(n_features, d0)
        self.updates = np.zeros(n_features, dtype=np.int64)

    def predicted_success(self, a: np.ndarray, d: np.ndarray | None = None) -> np.ndarray:
        """p = 1 - exp(-beta a / d_hat) for attainabilities a (..., z) (or a subset with its d)."""
        d = self.d if d is None else d
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.expm1(-self.beta * a / d)

    def update(
        self, X_before: np.ndarray, X_cf: np.ndarray, attempted: np.ndarray, succeeded: np.ndarray
    ) -> None:
        """Fold in observed attempts: all arrays (r, z); one sequential update per attempt."""
        a_all = attainability(X_before, X_cf)
        for a, tried, ok in zip(a_all, attempted, succeeded, strict=True):
            # an infinite attainability carries no information (success is certain)
            use = tried & np.isfinite(a)
            if not use.any():
                continue
            p = self.predicted_success(a[use], self.d[use])
            eta = self.eta0 / (1.0 + self.updates[use])
            self.d[use] = np.clip(self.d[use] + eta * (p - ok[use]) * a[use], 0.0, 1.0)
            self.updates[use] += 1


def fill_order(weights: np.ndarray, cost: np.ndarray, mutable: np.ndarray) -> np.ndarray:
    """Useful features (mutable, w != 0) by decreasing score per unit cost |w_i| / cost_i."""
    useful = mutable & (weights != 0)
    ratio = np.abs(weights) / np.maximum(cost, 1e-12)
    order = np.argsort(-ratio, kind="stable")
    return order[useful[order]]


def exact_linear_counterfactuals(
    X: np.ndarray,
    goals: np.ndarray,
    weights: np.ndarray,
    intercept: float,
    cost: np.ndarray,
    mutable: np.ndarray,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Cheapest weighted-L1 move into {x : sigmoid(w.x + b) >= g} inside [0, 1]^z.

    X (n, z), goals (n,), weights (z,), cost (z,) positive, mutable (z,) bool; ``order``
    is :func:`fill_order` of the last three, when the caller has it cached.
    The problem is a fractional knapsack: each feature buys score at |w_i| per unit for
    cost_i per unit, up to its room to the bound in the direction of sign(w_i), so filling
    features in decreasing |w_i| / cost_i order is optimal. A goal out of reach inside the
    box gives a NaN row (no advice, SPEC §2: never a bound-pushed substitute); goals
    already met leave the row unchanged.
    """
    X = np.asarray(X, dtype=float)
    cost = np.asarray(cost, dtype=float)
    if cost.shape != weights.shape:
        raise ValueError(f"cost must have shape {weights.shape}, got {cost.shape}")
    # ndarray.clip is np.clip without its wrapper; logit gives +-inf at 1 and 0, no warnings
    target = logit(np.asarray(goals, dtype=float).clip(0.0, 1.0))
    need = target - linear_logit(X, weights, intercept)  # (n,) logit units still missing
    out = X.copy()
    rows = (need > 0).nonzero()[0]
    need = need[rows]
    if order is None:
        order = fill_order(weights, cost, mutable)
    # usually the first feature or two close the gap: later passes touch few rows
    for j in order.tolist():
        if rows.size == 0:
            break
        w = float(weights[j])
        x = X[:, j].take(rows)
        gain = w * (1.0 - x) if w > 0 else -w * x  # logit units this feature can add
        full = need >= gain
        # a feature used to the full lands exactly on its bound (no rounding residue)
        out[:, j][rows] = np.where(full, 1.0 if w > 0 else 0.0, (x + need / w).clip(0.0, 1.0))
        need = need - gain
        more = full & (need > 0)
        rows, need = rows[more], need[more]
    out[rows] = np.nan  # every useful feature at its bound and still short of the goal
    return out


def capped_counterfactuals(
    X: np.ndarray,
    goals: np.ndarray,
    weights: np.ndarray,
    intercept: float,
    cost: np.ndarray,
    useful: np.ndarray,
    max_changes: int,
) -> np.ndarray:
    """:func:`exact_linear_counterfactuals` changing at most ``max_changes`` features.

    With a cap the fractional knapsack loses its greedy optimum, but some set of
    ``max_changes`` useful features (``useful`` (z,) bool) holds the best capped move, and
    within a set the greedy fill is optimal: so the cheapest of the fills over every such
    set (rows (n, z); NaN where no set reaches the goal). Ties keep the earliest set.
    """
    feats = np.flatnonzero(useful)
    if feats.size <= max_changes:
        return exact_linear_counterfactuals(X, goals, weights, intercept, cost, useful)
    X = np.asarray(X, dtype=float)
    out = np.full_like(X, np.nan)
    best = np.full(X.shape[0], np.inf)
    for chosen in itertools.combinations(feats.tolist(), max_changes):
        mask = np.zeros_like(useful)
        mask[list(chosen)] = True
        X_cf = exact_linear_counterfactuals(X, goals, weights, intercept, cost, mask)
        spent = np.abs(X_cf - X) @ cost  # NaN where this set falls short
        better = spent < best
        out[better], best[better] = X_cf[better], spent[better]
    return out


#: at most this many feature sets are tried per call of a capped exact-linear (z = 10, a
#: cap of 5: 252; 20 useful features, a cap of 3: 1,140); with one-hot groups, at most this
#: many fills (switch combinations times the sets each fills over)
MAX_FEATURE_SETS = 2_000


def switch_costs(onehot: OneHot, mutable: np.ndarray) -> list[np.ndarray]:
    """Per group g of ``onehot``, its (m_g, m_g) switching costs with every switch from or
    to an immutable indicator (``mutable`` (z,) bool False) barred (inf): an immutable
    group never switches."""
    out = []
    for members, c in zip(onehot.groups, onehot.costs, strict=True):
        free = mutable[members]
        out.append(
            np.where(free[:, None] & free[None, :], c, np.where(np.eye(c.shape[0]), 0, np.inf))
        )
    return out


def switchable(switch: list[np.ndarray]) -> list[int]:
    """The groups with some allowed switch, given :func:`switch_costs`."""
    return [g for g, c in enumerate(switch) if np.isfinite(c).sum() > c.shape[0]]


def n_fills(sizes: list[int], n_useful: int, max_changes: int | None) -> int:
    """How many numeric fills :func:`onehot_counterfactuals` may run per call: one per
    switch combination (``sizes`` the switchable groups' m_g), times, with a cap K, the
    feature sets of every numeric cap K - s left by s switches."""
    combos = math.prod(sizes)
    if max_changes is None:
        return combos
    k = max_changes
    sets = sum(
        math.comb(n_useful, k - s) if n_useful > k - s else 1 for s in range(min(k, len(sizes)) + 1)
    )
    return combos * sets


def onehot_counterfactuals(
    X: np.ndarray,
    goals: np.ndarray,
    weights: np.ndarray,
    intercept: float,
    cost: np.ndarray,
    useful: np.ndarray,
    onehot: OneHot,
    switch: list[np.ndarray],
    max_changes: int | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Cheapest move to the goal with one-hot groups (eq. 5's cost): |dx|·cost on numeric
    features plus c(a, b)·cost_b per switch a -> b of a group (to b's indicator).

    X (n, z) valid one-hot rows, goals (n,), weights and cost (z,), ``useful`` (z,) bool the
    numeric features the fill may use (no indicator), ``switch`` the groups' costs with
    barred switches inf (:func:`switch_costs`). Per row, each group stays or makes one
    switch; every combination of targets (one category per switchable group, the product
    of their sizes) is made first and the rest of the need filled exactly
    (:func:`exact_linear_counterfactuals`, or :func:`capped_counterfactuals` with
    ``max_changes`` - s left after s switches), so the cheapest is the exact optimum. Ties
    keep fewer switches, then the earliest combination. Rows (n, z); NaN where nothing
    reaches the goal.
    """
    X = np.asarray(X, dtype=float)
    goals = np.asarray(goals, dtype=float)
    n = X.shape[0]
    out = np.full_like(X, np.nan)
    best = np.full(n, np.inf)
    fewest = np.zeros(n, dtype=np.intp)
    live = switchable(switch)
    cats = [onehot.category(X, g) for g in live]
    if order is None and max_changes is None:
        order = fill_order(weights, cost, useful)
    for targets in itertools.product(*(range(onehot.groups[g].shape[0]) for g in live)):
        X_mod = X.copy()
        extra = np.zeros(n)
        s = np.zeros(n, dtype=np.intp)
        for g, a, t in zip(live, cats, targets, strict=True):
            members = onehot.groups[g]
            extra += switch[g][a, t] * cost[members[t]]  # 0 where it stays
            onehot.assign(X_mod, g, np.full(n, t))
            s += a != t
        ok = np.isfinite(extra)
        if max_changes is None:
            batches = [(0, ok.nonzero()[0])]
        else:  # each switch is one change: s of them leave a cap of K - s to the fill
            ok &= s <= max_changes
            batches = [(k, (ok & (s == k)).nonzero()[0]) for k in np.unique(s[ok]).tolist()]
        for k, rows in batches:
            if rows.size == 0:
                continue
            Xr, gr = X_mod[rows], goals[rows]
            if max_changes is None:
                X_cf = exact_linear_counterfactuals(Xr, gr, weights, intercept, cost, useful, order)
            elif k == max_changes:  # the switches are every change allowed
                none = np.zeros_like(useful)
                X_cf = exact_linear_counterfactuals(Xr, gr, weights, intercept, cost, none)
            else:
                X_cf = capped_counterfactuals(
                    Xr, gr, weights, intercept, cost, useful, max_changes - k
                )
            spent = extra[rows] + np.abs(X_cf - Xr) @ cost  # NaN where the fill falls short
            better = (spent < best[rows]) | ((spent == best[rows]) & (s[rows] < fewest[rows]))
            take = rows[better]
            out[take], best[take], fewest[take] = X_cf[better], spent[better], s[take]
    return out


def require_linear(name: str, model: Scorer) -> None:
    """A :class:`ConfigError` unless ``model`` is linear: ``name`` cannot serve it."""
    if not model.is_linear:
        # a scenario this recommender cannot serve: the user's choice, not a bug
        est = getattr(model, "estimator", model)
        kind = getattr(est, "kind_text", None) or type(est).__name__
        raise ConfigError(f"{name} needs a linear decision model (logistic regression), got {kind}")


# optimistic difficulties never go below this: a planning weight of 0 would make a feature
# free, and fill_order ranks floored features by |w_i| among themselves either way
OPTIMISM_FLOOR = 1e-3


def optimistic_difficulty(d_hat: np.ndarray, updates: np.ndarray, c: float) -> np.ndarray:
    """Lower confidence bound d_hat_i - c / sqrt(1 + V_i), clipped to [OPTIMISM_FLOOR, 1].

    d_hat (z,) the estimate of eqs. 12-14, updates (z,) V_i its observed attempts. The
    width shrinks at the Hoeffding rate 1/sqrt(n); with c >= d0 an untried feature sits
    at the floor, below any d in (0, 1] worth modelling (docs/exploration.md).
    """
    width = c / np.sqrt(1.0 + updates)
    return np.clip(d_hat - width, OPTIMISM_FLOOR, 1.0)


def least_tried_first(order: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """``order`` (useful features, best first) re-sorted by attempts V_i, fewest first;
    ties keep their place in ``order`` (a stable sort)."""
    return order[np.argsort(updates[order], kind="stable")]


class ExactLinear(FollowsModel):
    """Exactly optimal weighted-L1 recourse for linear (logistic) decision models.

    ``weights``: ``uniform`` (plain L1), ``true`` (oracle difficulties d) or
    ``estimated`` (d learned online from observed implementation outcomes, eqs. 12-14,
    starting at ``d0`` with step size ``eta0``). Advice uses the decision model in force
    (``use_model``); the learned d survives a change of model.

    Exploration (``estimated`` only; both off by default, which is the plain greedy
    advice): ``optimism`` = c plans with the lower confidence bound
    :func:`optimistic_difficulty` instead of d_hat, so rarely tried features look cheap
    until tried; ``explore_share`` = epsilon gives each advised candidate, with
    probability epsilon (drawn from the policy's ``rng``), advice that fills the least
    tried useful features first (:func:`least_tried_first`). Either way the advice reaches
    the same goal exactly: only which features carry the change differs.

    One-way features (``ctx.direction``) take part only where the score rises the way they
    may move, which keeps the fill optimal. ``max_changes`` = K caps the features one
    advice changes: the cheapest move among every set of K useful features
    (:func:`capped_counterfactuals`; refused where that means over
    :data:`MAX_FEATURE_SETS` sets).

    One-hot groups (``ctx.onehot``): the numeric fill never touches an indicator; each
    group stays or makes one allowed switch a -> b at c(a, b) times the weight of b's
    indicator, every combination tried (:func:`onehot_counterfactuals`, the exact optimum;
    refused where that means over :data:`MAX_FEATURE_SETS` fills). A switch counts as one
    change towards ``max_changes``; eq. 7 learns a switch's difficulty on b's indicator.
    """

    keeps_one_way = True
    keeps_onehot = True

    def __init__(
        self,
        weights: CostWeights = "uniform",
        d0: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5,
        eta0: Annotated[float, Field(ge=0.0)] = 0.05,
        optimism: Annotated[float, Field(ge=0.0)] = 0.0,
        explore_share: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0,
        max_changes: Annotated[int, Field(ge=1)] | None = None,
    ) -> None:
        if weights not in COST_WEIGHTS:
            raise ValueError(f"weights must be one of {', '.join(COST_WEIGHTS)}, got {weights!r}")
        if not 0.0 < d0 <= 1.0:
            raise ValueError(f"d0 must be in (0, 1], got {d0!r}")
        if not 0.0 <= eta0 < float("inf"):
            raise ValueError(f"eta0 must be a finite number >= 0, got {eta0!r}")
        if not 0.0 <= optimism < float("inf"):
            raise ConfigError(
                "exact-linear: " + problem("optimism", optimism, "a finite number >= 0")
            )
        if not 0.0 <= explore_share <= 1.0:
            raise ConfigError(
                "exact-linear: " + problem("explore_share", explore_share, "a number in [0, 1]")
            )
        for name, value in (("optimism", optimism), ("explore_share", explore_share)):
            if value and weights != "estimated":
                # exploration feeds the online estimate: with fixed weights it only costs
                raise ConfigError(
                    "exact-linear: "
                    + problem(name, value, f"0 unless weights='estimated' (got {weights!r})")
                )
        if max_changes is not None and explore_share:
            allowed = "None (no cap) when explore_share > 0: exploring fills least tried first"
            raise ConfigError("exact-linear: " + problem("max_changes", max_changes, allowed))
        self.max_changes = max_changes
        self.weights = weights
        self.d0, self.eta0 = d0, eta0
        self.optimism, self.explore_share = float(optimism), float(explore_share)
        self.estimator: DifficultyEstimator | None = None

    @property
    def deterministic(self) -> bool:
        """No draw without exploration; the learned weights move only in ``observe``."""
        return self.explore_share == 0.0

    def prepare(self, ctx: PolicyContext) -> None:
        require_linear("exact-linear", ctx.decision_model)
        self.ctx = ctx
        self._follow_features()
        self._order = None
        self._uniform = np.ones(ctx.n_features)
        if self.weights == "estimated":
            self.estimator = DifficultyEstimator(ctx.n_features, ctx.beta, self.d0, self.eta0)

    def model_changed(self) -> None:
        require_linear("exact-linear", self.ctx.decision_model)
        self._follow_features()
        self._order = None  # the fill order ranks the old model's weights

    def _follow_features(self) -> None:
        """The features that may carry advice under the model in force (z,) bool, and the
        cap checked against their number."""
        self._useful = self.ctx.useful(self.ctx.decision_model.weights)
        k = self.max_changes
        onehot = self.ctx.onehot
        if onehot is not None:
            # indicators move only by switches, never by the numeric fill
            self._useful[onehot.columns] = False
            self._switch = switch_costs(onehot, self.ctx.mutable)
            live = switchable(self._switch)
            sizes = [onehot.groups[g].shape[0] for g in live]
            fills = n_fills(sizes, int(self._useful.sum()), k)
            if fills > MAX_FEATURE_SETS:
                named = ", ".join(onehot.describe(g) for g in live)
                cap = "" if k is None else f" with max_changes={k}"
                raise ConfigError(
                    f"exact-linear: one-hot groups {named} need {fills} fills per advice"
                    f"{cap}, over {MAX_FEATURE_SETS}; merge categories or hold a group "
                    "immutable"
                )
            return
        if k is None:
            return
        n = int(self._useful.sum())
        if math.comb(n, k) > MAX_FEATURE_SETS:
            allowed = f"a cap whose feature sets C({n}, K) number at most {MAX_FEATURE_SETS}"
            raise ConfigError("exact-linear: " + problem("max_changes", k, allowed))

    def cost_weights(self) -> np.ndarray:
        """The per-feature cost weights in use now, shape (z,)."""
        if self.weights == "true":
            return self.ctx.difficulty
        if self.weights == "estimated":
            return self.estimator.d
        return self._uniform

    def planning_weights(self) -> np.ndarray:
        """The weights advice is planned with, shape (z,): :meth:`cost_weights`, or their
        optimistic lower bound when ``optimism`` > 0."""
        if self.optimism > 0.0:
            est = self.estimator
            return optimistic_difficulty(est.d, est.updates, self.optimism)
        return self.cost_weights()

    @property
    def rows_ready(self) -> bool:
        """Fixed weights (uniform or true), no cap, no one-hot groups: each row's advice is
        a function of the row and its episode's model alone (abm.interfaces.rows_ready)."""
        return self.weights != "estimated" and self.max_changes is None and self.ctx.onehot is None

    def _fill_of(self, model: Scorer, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(useful (z,), fill order) under ``model``: kept per model (the weights and the
        fixed costs never change), holding the model so its id is never another's."""
        cache = self.__dict__.setdefault("_fills", {})
        got = cache.get(id(model))
        if got is None or got[0] is not model:
            if len(cache) >= 64:  # refits make new models: keep the recent ones
                cache.clear()
            useful = self.ctx.useful(model.weights)
            got = cache[id(model)] = (model, useful, fill_order(model.weights, cost, useful))
        return got[1], got[2]

    def recommend_rows(self, rows: RejectedRows, goals: np.ndarray) -> np.ndarray:
        """X_cf (n, z) of many episodes' rejected (:class:`~abm.interfaces.RejectedRows`),
        goals (n,): one fill per decision model in force, each row as its episode's
        :meth:`recommend` answers it."""
        cost = self.cost_weights()
        out = None
        for model, which in rows.by_model():
            useful, order = self._fill_of(model, cost)
            X = rows.X if which is None else rows.X.take(which, axis=0)
            g = goals if which is None else goals.take(which)
            got = exact_linear_counterfactuals(
                X, g, model.weights, model.intercept, cost, useful, order
            )
            if which is None:
                return got
            if out is None:
                out = np.empty_like(rows.X)
            out[which] = got
        return out

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        m = self.ctx.decision_model
        cost = self.planning_weights()
        useful = self._useful
        if self.ctx.onehot is not None:
            return self._recommend_onehot(X, goals, rng, cost)
        if self.max_changes is not None:
            return capped_counterfactuals(
                X, goals, m.weights, m.intercept, cost, useful, self.max_changes
            )
        if self._order is None or self.estimator is not None:  # learned costs move
            self._order = fill_order(m.weights, cost, useful)
        X_cf = exact_linear_counterfactuals(
            X, goals, m.weights, m.intercept, cost, useful, self._order
        )
        if self.explore_share > 0.0:
            # one draw per candidate, every call: the stream's use depends on n alone
            pick = (rng.random(X.shape[0]) < self.explore_share).nonzero()[0]
            if pick.size:
                order = least_tried_first(self._order, self.estimator.updates)
                X_cf[pick] = exact_linear_counterfactuals(
                    X[pick], goals[pick], m.weights, m.intercept, cost, useful, order
                )
        return X_cf

    def _recommend_onehot(
        self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator, cost: np.ndarray
    ) -> np.ndarray:
        """:meth:`recommend` with one-hot groups (:func:`onehot_counterfactuals`); exploring
        candidates fill the least tried numeric features first, each combination alike."""
        m, useful = self.ctx.decision_model, self._useful
        solve = functools.partial(
            onehot_counterfactuals,
            weights=m.weights,
            intercept=m.intercept,
            cost=cost,
            useful=useful,
            onehot=self.ctx.onehot,
            switch=self._switch,
            max_changes=self.max_changes,
        )
        if self.max_changes is not None:
            return solve(X, goals)
        if self._order is None or self.estimator is not None:  # learned costs move
            self._order = fill_order(m.weights, cost, useful)
        X_cf = solve(X, goals, order=self._order)
        if self.explore_share > 0.0:
            pick = (rng.random(X.shape[0]) < self.explore_share).nonzero()[0]
            if pick.size:
                order = least_tried_first(self._order, self.estimator.updates)
                X_cf[pick] = solve(X[pick], goals[pick], order=order)
        return X_cf

    def observe(self, feedback: Feedback) -> None:
        if self.estimator is not None:
            attempted, succeeded = feedback.outcomes()
            X_before, onehot = feedback.X_before, self.ctx.onehot
            if onehot is not None:
                # a switch a -> b is one attempt, on b's indicator at |dx|·x_cf = c(a, b);
                # a's 1 -> 0 is the same attempt, not one of its own
                X_before = onehot.attempted(X_before, feedback.X_cf)
                cols = onehot.columns
                attempted[:, cols] &= feedback.X_cf[:, cols] == 1.0
                succeeded &= attempted
            self.estimator.update(X_before, feedback.X_cf, attempted, succeeded)
