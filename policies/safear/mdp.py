"""Finite-horizon recourse MDP data structure.

A :class:`RecourseMDP` holds ``S`` states, ``A`` actions and a horizon ``H``.
Transitions and costs are stored as one stacked CSR matrix of shape
``(A * S, S)``: row ``a * S + s`` is the next-state distribution of taking
action ``a`` in state ``s``. ``cost`` is aligned with the CSR data, so every
transition ``(s, a, s')`` can carry its own cost (a failed action still costs
its price). Goal states are absorbing with a zero-cost self-loop; the solvers
treat them specially and mark them with :data:`GOAL_ACTION` in policies.

:func:`build_feature_mdp` builds such an MDP from discrete features and
high-level action descriptions (the SafeAR paper's dataset models).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

GOAL_ACTION = -1
"""Policy entry for goal states: stay put at zero cost."""

_PROB_TOL = 1e-9

FEATURE_KINDS = ("immutable", "actionable", "non_actionable")


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


@dataclass(frozen=True, eq=False)
class RecourseMDP:
    """Validated finite-horizon recourse MDP.

    Attributes
    ----------
    n_states, n_actions : int
        ``S`` and ``A``.
    horizon : int
        ``H >= 1``; at most ``H`` actions are taken.
    indptr : (A*S + 1,) int64 ; indices : (nnz,) int64 ; prob : (nnz,) float64
        CSR components of the stacked transition matrix ``(A*S, S)``.
    cost : (nnz,) float64
        Non-negative cost of each stored transition.
    available : (A, S) bool
        Whether action ``a`` may be taken in state ``s`` (row non-empty).
    goal : (S,) bool
        Favourable (absorbing, zero-cost) states.
    features : (S, D) int or None
        Discrete feature codes of each state (for sparsity / proximity).
    """

    n_states: int
    n_actions: int
    horizon: int
    indptr: np.ndarray
    indices: np.ndarray
    prob: np.ndarray
    cost: np.ndarray
    available: np.ndarray
    goal: np.ndarray
    features: np.ndarray | None = None
    action_names: tuple[str, ...] = ()
    feature_names: tuple[str, ...] = ()
    ordinal: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ build
    @classmethod
    def from_csr(
        cls,
        transitions: sparse.spmatrix | Sequence[sparse.spmatrix],
        costs,
        goal,
        horizon: int,
        *,
        features=None,
        action_names: Sequence[str] | None = None,
        feature_names: Sequence[str] | None = None,
        ordinal=None,
        meta: dict | None = None,
    ) -> RecourseMDP:
        """Build from per-action transition matrices.

        ``transitions``: a list of ``A`` sparse ``(S, S)`` matrices, or one
        stacked ``(A*S, S)`` matrix. An all-zero row means "action not
        available in this state"; other rows must sum to 1.
        ``costs``: ``(A, S)`` array (cost of taking ``a`` in ``s``, whatever the
        outcome), scalar, or sparse matrices with the same pattern as
        ``transitions`` (per-transition cost).
        ``goal``: ``(S,)`` bool.
        """
        goal = np.asarray(goal)
        _check(goal.ndim == 1, f"goal must be 1-D of shape (S,), got shape {goal.shape}")
        _check(goal.shape[0] >= 1, "goal must contain at least one state (S >= 1)")
        stacked = _stacked_transitions(transitions, goal.shape[0])
        cost = _transition_costs(costs, stacked, goal.shape[0])
        return cls.from_arrays(
            stacked.indptr,
            stacked.indices,
            stacked.data,
            cost,
            goal,
            horizon,
            features=features,
            action_names=action_names,
            feature_names=feature_names,
            ordinal=ordinal,
            meta=meta,
        )

    @classmethod
    def from_arrays(
        cls,
        indptr,
        indices,
        prob,
        cost,
        goal,
        horizon: int,
        *,
        features=None,
        action_names: Sequence[str] | None = None,
        feature_names: Sequence[str] | None = None,
        ordinal=None,
        meta: dict | None = None,
    ) -> RecourseMDP:
        """Build from raw CSR arrays of the stacked ``(A*S, S)`` matrix, validating all inputs."""
        _check(
            isinstance(horizon, (int, np.integer))
            and not isinstance(horizon, bool)
            and horizon >= 1,
            f"horizon H must be an integer >= 1, got {horizon!r}",
        )
        goal = _checked_goal(goal)
        n_states = goal.size
        indptr, indices, prob, cost = _checked_csr(indptr, indices, prob, cost, n_states)
        n_actions = (indptr.size - 1) // n_states
        # Zero-probability entries carry no information and would only create
        # phantom outcomes for the variance computation.
        indptr, indices, prob, cost = _without_zero_prob(indptr, indices, prob, cost)
        prob, available = _normalised_rows(indptr, prob, n_states)
        stuck = ~goal & ~available.any(axis=0)
        if stuck.any():
            raise ValueError(
                f"state {int(np.flatnonzero(stuck)[0])} is not a goal and has no available action; "
                "every non-goal state needs at least one action"
            )
        names = (
            tuple(action_names)
            if action_names is not None
            else tuple(f"a{i}" for i in range(n_actions))
        )
        _check(
            len(names) == n_actions,
            f"action_names must have A = {n_actions} entries, got {len(names)}",
        )
        features, fnames, ordinal = _checked_features(features, feature_names, ordinal, n_states)
        for arr in (indptr, indices, prob, cost, available, goal):
            arr.setflags(write=False)
        return cls(
            n_states=n_states,
            n_actions=n_actions,
            horizon=int(horizon),
            indptr=indptr,
            indices=indices,
            prob=prob,
            cost=cost,
            available=available,
            goal=goal,
            features=features,
            action_names=names,
            feature_names=fnames,
            ordinal=ordinal,
            meta=dict(meta or {}),
        )

    @classmethod
    def from_outcomes(
        cls,
        next_state,
        prob,
        cost,
        goal,
        horizon: int,
        **kwargs,
    ) -> RecourseMDP:
        """Build from padded outcome tables.

        ``next_state``: ``(A, S, K)`` int, ``prob``: ``(A, S, K)`` float (a row
        of zeros = unavailable), ``cost``: ``(A, S)`` or ``(A, S, K)``.
        """
        nxt = np.asarray(next_state)
        p = np.asarray(prob, dtype=np.float64)
        _check(nxt.ndim == 3, f"next_state must have shape (A, S, K), got {nxt.shape}")
        _check(
            p.shape == nxt.shape,
            f"prob must have the shape of next_state {nxt.shape}, got {p.shape}",
        )
        c = np.asarray(cost, dtype=np.float64)
        if c.ndim == 2:
            _check(
                c.shape == nxt.shape[:2],
                f"cost must have shape (A, S) = {nxt.shape[:2]} or (A, S, K), got {c.shape}",
            )
            c = np.broadcast_to(c[..., None], nxt.shape)
        _check(
            c.shape == nxt.shape,
            f"cost must have shape (A, S) or (A, S, K) = {nxt.shape}, got {c.shape}",
        )
        n_actions, n_states, k = nxt.shape
        goal = np.asarray(goal)
        _check(
            goal.shape == (n_states,),
            f"goal must have shape (S,) = ({n_states},), got {goal.shape}",
        )
        _check(
            np.all((nxt >= 0) & (nxt < n_states)),
            f"next_state entries must lie in [0, S) = [0, {n_states})",
        )
        _check(np.all(np.isfinite(p)) and np.all(p >= 0), "prob must be finite and >= 0")
        _check(
            np.all(np.isfinite(c)) and np.all(c >= 0),
            "cost must be finite and >= 0 (costs are minimised)",
        )
        if k == 2:  # the population planner's layout: success and failure of each attempt
            indptr, indices, data, cost_nz = _pairs_csr(nxt, p, c)
            return cls.from_arrays(indptr, indices, data, cost_nz, goal, horizon, **kwargs)
        rows = np.repeat(np.arange(n_actions * n_states), k)
        shape = (n_actions * n_states, n_states)
        m = sparse.coo_matrix((p.ravel(), (rows, nxt.ravel())), shape=shape).tocsr()
        # Duplicate next states are merged; their cost becomes the probability-weighted mean.
        w = sparse.coo_matrix(((c * p).ravel(), (rows, nxt.ravel())), shape=shape).tocsr()
        m.sum_duplicates()
        w.sum_duplicates()
        m.sort_indices()
        w.sort_indices()
        # built from the same (row, column) pairs, m and w share their layout: w's value of
        # each entry m keeps is read in place (sparse fancy indexing cost a third of a build)
        same = np.array_equal(m.indptr, w.indptr) and np.array_equal(m.indices, w.indices)
        keep = m.data != 0
        m.eliminate_zeros()
        if not m.nnz:
            wr = np.zeros(0)
        elif same:
            wr = w.data[keep]
        else:
            wr = np.asarray(w[np.repeat(np.arange(shape[0]), np.diff(m.indptr)), m.indices]).ravel()
        cost_nz = np.divide(wr, m.data, out=np.zeros_like(wr), where=m.data > 0)
        return cls.from_arrays(m.indptr, m.indices, m.data, cost_nz, goal, horizon, **kwargs)

    # -------------------------------------------------------------- accessors
    @property
    def row_of(self) -> np.ndarray:
        """(nnz,) stacked row index ``a*S + s`` of each stored transition."""
        r = self.meta.get("_row_of")
        if r is None:
            r = np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))
            self.meta["_row_of"] = r
        return r

    @property
    def P(self) -> sparse.csr_matrix:
        """Stacked transition matrix, shape ``(A*S, S)``."""
        return sparse.csr_matrix(
            (self.prob, self.indices, self.indptr),
            shape=(self.n_actions * self.n_states, self.n_states),
        )

    def transitions(self, action: int) -> sparse.csr_matrix:
        """Transition matrix of one action, shape ``(S, S)``."""
        s = self.n_states
        return self.P[action * s : (action + 1) * s]

    def outcomes(self, state: int, action: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(next_states (k,), probs (k,), costs (k,)) of taking ``action`` in ``state``."""
        r = action * self.n_states + state
        lo, hi = self.indptr[r], self.indptr[r + 1]
        return self.indices[lo:hi], self.prob[lo:hi], self.cost[lo:hi]

    def with_horizon(self, horizon: int) -> RecourseMDP:
        """Same MDP, different horizon."""
        return RecourseMDP.from_arrays(
            self.indptr,
            self.indices,
            self.prob,
            self.cost,
            self.goal,
            horizon,
            features=self.features,
            action_names=self.action_names,
            feature_names=self.feature_names or None,
            ordinal=self.ordinal,
            meta={k: v for k, v in self.meta.items() if not k.startswith("_")},
        )

    def state_index(self, codes) -> np.ndarray:
        """Map feature codes ``(N, D)`` to state indices ``(N,)`` (feature MDPs only)."""
        radix = self.meta.get("radix")
        _check(radix is not None, "state_index needs an MDP built by build_feature_mdp")
        codes = np.atleast_2d(np.asarray(codes, dtype=np.int64))
        return np.ravel_multi_index(tuple(codes.T), tuple(radix))


# ------------------------------------------------------- building blocks of the constructors
def _stacked_transitions(transitions, n_states: int) -> sparse.csr_matrix:
    """Per-action ``(S, S)`` matrices (or one stacked matrix) as one ``(A*S, S)`` float64 CSR
    with summed duplicates and sorted indices."""
    if isinstance(transitions, (list, tuple)):
        _check(len(transitions) >= 1, "transitions must hold at least one action (A >= 1)")
        for a, m in enumerate(transitions):
            _check(
                sparse.issparse(m) or isinstance(m, np.ndarray),
                f"transitions[{a}] must be a scipy.sparse matrix or ndarray",
            )
            _check(
                m.shape == (n_states, n_states),
                f"transitions[{a}] must have shape (S, S) = ({n_states}, {n_states}), got {m.shape}",
            )
        stacked = sparse.vstack([sparse.csr_matrix(m) for m in transitions], format="csr")
    else:
        stacked = sparse.csr_matrix(transitions)
    _check(
        stacked.shape[1] == n_states and stacked.shape[0] % n_states == 0 and stacked.shape[0] > 0,
        f"stacked transitions must have shape (A*S, S) with S={n_states}, got {stacked.shape}",
    )
    stacked = stacked.astype(np.float64)
    stacked.sum_duplicates()
    stacked.sort_indices()
    return stacked


def _transition_costs(costs, stacked: sparse.csr_matrix, n_states: int) -> np.ndarray:
    """(nnz,) cost of each stored transition of ``stacked``: from per-transition sparse
    matrices, or from an ``(A, S)`` array / scalar (cost of the action, whatever the outcome)."""
    n_actions = stacked.shape[0] // n_states
    rows = np.repeat(np.arange(stacked.shape[0]), np.diff(stacked.indptr))
    if isinstance(costs, (list, tuple)) or sparse.issparse(costs):
        cmat = (
            sparse.vstack([sparse.csr_matrix(m) for m in costs], format="csr")
            if isinstance(costs, (list, tuple))
            else sparse.csr_matrix(costs)
        )
        _check(
            cmat.shape == stacked.shape,
            f"per-transition costs must have shape {stacked.shape}, got {cmat.shape}",
        )
        return np.asarray(cmat[rows, stacked.indices]).ravel().astype(np.float64)
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim == 0:
        c = np.full((n_actions, n_states), float(c))
    _check(
        c.shape == (n_actions, n_states),
        f"costs must be a scalar or have shape (A, S) = ({n_actions}, {n_states}), got {c.shape}",
    )
    return c.reshape(-1)[rows]


def _checked_goal(goal) -> np.ndarray:
    """(S,) bool goal flags from a non-empty 1-D boolean or 0/1 array."""
    goal = np.asarray(goal)
    _check(
        goal.ndim == 1 and goal.size >= 1,
        f"goal must be a non-empty 1-D array (S,), got shape {goal.shape}",
    )
    _check(goal.dtype == bool or np.isin(goal, (0, 1)).all(), "goal must be boolean (or 0/1)")
    return goal.astype(bool)


def _checked_csr(indptr, indices, prob, cost, n_states: int):
    """The raw CSR arrays as int64 / float64, validated (shapes, ranges, finiteness)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    prob = np.asarray(prob, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    _check(indptr.ndim == 1 and indptr.size >= 2, "indptr must be 1-D of length A*S + 1")
    _check(
        (indptr.size - 1) % n_states == 0,
        f"indptr length - 1 = {indptr.size - 1} must be a multiple of S = {n_states} (rows are (action, state) pairs)",
    )
    nnz = indices.size
    _check(
        indptr[0] == 0 and indptr[-1] == nnz and np.all(np.diff(indptr) >= 0),
        "indptr must start at 0, be non-decreasing and end at len(indices)",
    )
    _check(prob.shape == (nnz,), f"prob must have shape ({nnz},) like indices, got {prob.shape}")
    _check(cost.shape == (nnz,), f"cost must have shape ({nnz},) like indices, got {cost.shape}")
    _check(
        nnz == 0 or (indices.min() >= 0 and indices.max() < n_states),
        f"next-state indices must lie in [0, S) = [0, {n_states})",
    )
    _check(
        np.all(np.isfinite(prob)) and np.all(prob >= 0) and np.all(prob <= 1 + _PROB_TOL),
        "transition probabilities must be finite and in [0, 1]",
    )
    _check(np.all(np.isfinite(cost)), "costs must be finite")
    _check(
        np.all(cost >= 0),
        f"costs must be >= 0 (costs are minimised); smallest given: {cost.min() if cost.size else 0:.6g}",
    )
    return indptr, indices, prob, cost


def _without_zero_prob(indptr, indices, prob, cost):
    """The CSR arrays without their zero-probability entries."""
    keep = prob > 0
    if keep.all():
        return indptr, indices, prob, cost
    rows0 = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    counts = np.bincount(rows0[keep], minlength=indptr.size - 1)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return indptr, indices[keep], prob[keep], cost[keep]


def _pairs_csr(nxt: np.ndarray, p: np.ndarray, c: np.ndarray):
    """CSR arrays (indptr, indices, prob, cost) of outcome tables with two outcomes a row
    ((A, S, 2) each), as the general sparse path of :meth:`RecourseMDP.from_outcomes`
    builds them, without its sparse conversions: columns ascending, two outcomes to one
    state merged (probabilities summed, cost the probability-weighted mean), zero
    probabilities dropped. Sums of two terms do not depend on their order, so every value
    has the general path's bits."""
    c0, c1 = nxt[..., 0].ravel(), nxt[..., 1].ravel()
    p0, p1 = p[..., 0].ravel(), p[..., 1].ravel()
    cp = c * p
    w0, w1 = cp[..., 0].ravel(), cp[..., 1].ravel()
    same, swap = c0 == c1, c0 > c1
    first = np.where(same, p0 + p1, np.where(swap, p1, p0))
    second = np.where(same, 0.0, np.where(swap, p0, p1))
    w_first = np.where(same, w0 + w1, np.where(swap, w1, w0))
    w_second = np.where(swap, w0, w1)
    cols = np.stack([np.minimum(c0, c1), np.maximum(c0, c1)], axis=1).ravel()
    data = np.stack([first, second], axis=1).ravel()
    wr = np.stack([w_first, w_second], axis=1).ravel()
    keep = data != 0
    indptr = np.concatenate([[0], np.cumsum(keep.reshape(-1, 2).sum(axis=1))])
    data, wr = data[keep], wr[keep]
    cost_nz = np.divide(wr, data, out=np.zeros_like(wr), where=data > 0)
    return indptr, cols[keep], data, cost_nz


def _normalised_rows(indptr: np.ndarray, prob: np.ndarray, n_states: int):
    """Check that every non-empty row sums to 1 and renormalise away its rounding (so rollouts
    and exact evaluation agree). Returns (prob (nnz,), available (A, S) bool)."""
    n_rows = indptr.size - 1
    row_nnz = np.diff(indptr)
    row_of = np.repeat(np.arange(n_rows), row_nnz)
    sums = np.bincount(row_of, weights=prob, minlength=n_rows)
    available = row_nnz > 0
    bad = available & (np.abs(sums - 1.0) > 1e-6)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"transition probabilities of (action {r // n_states}, state {r % n_states}) sum to "
            f"{sums[r]:.6g}; every available (action, state) row must sum to 1 (all-zero = unavailable)"
        )
    prob = prob / np.where(available, sums, 1.0)[row_of]
    return prob, available.reshape(n_rows // n_states, n_states)


def _checked_features(features, feature_names, ordinal, n_states: int):
    """(features (S, D) int64 or None, feature names, ordinal (D,) bool or None), validated."""
    if features is None:
        return None, (), None
    features = np.asarray(features)
    _check(
        features.ndim == 2 and features.shape[0] == n_states,
        f"features must have shape (S, D) with S = {n_states}, got {features.shape}",
    )
    features = features.astype(np.int64)
    d = features.shape[1]
    fnames = tuple(feature_names) if feature_names is not None else tuple(f"x{i}" for i in range(d))
    _check(len(fnames) == d, f"feature_names must have D = {d} entries, got {len(fnames)}")
    ordinal = np.ones(d, bool) if ordinal is None else np.asarray(ordinal, bool)
    _check(ordinal.shape == (d,), f"ordinal must have shape (D,) = ({d},), got {ordinal.shape}")
    return features, fnames, ordinal


# ---------------------------------------------------------------- features
@dataclass(frozen=True)
class Feature:
    """A discrete feature. ``kind`` is one of ``immutable``, ``actionable``, ``non_actionable``."""

    name: str
    levels: tuple[str, ...]
    kind: str = "actionable"
    ordinal: bool = True

    def __post_init__(self):
        _check(len(self.levels) >= 1, f"feature {self.name!r}: levels must be non-empty")
        _check(
            len(set(self.levels)) == len(self.levels),
            f"feature {self.name!r}: levels must be distinct",
        )
        _check(
            self.kind in FEATURE_KINDS,
            f"feature {self.name!r}: kind must be one of {FEATURE_KINDS}, got {self.kind!r}",
        )


@dataclass(frozen=True)
class Action:
    """A recourse action changing one actionable feature.

    ``mode="increment"`` moves an ordinal feature up one level (``target``
    unused); ``mode="set"`` sets it to level ``target``. ``success`` is a
    probability in [0, 1], or a mapping from the level reached to its
    probability (levels missing from the mapping cannot be reached). On
    failure the state is unchanged; the cost is paid either way. On success,
    each feature in ``side_effects`` (typically the non-actionable age)
    moves up one level when not already at its top level.
    """

    name: str
    feature: str
    cost: float
    success: float | Mapping[str, float] = 1.0
    mode: str = "increment"
    target: str | None = None
    side_effects: tuple[str, ...] = ()
    from_levels: tuple[str, ...] | None = None
    jump: Mapping[str, str] | None = None


def _reached_level(act: Action, feat: Feature, cur: np.ndarray, n_states: int):
    """The level ``act`` moves its feature to from each state's level ``cur`` (S,), and
    whether it can be taken there at all (by its mode and ``from_levels``)."""
    if act.mode == "increment":
        _check(feat.ordinal, f"action {act.name!r}: increment needs an ordinal feature")
        new = cur + 1
        if act.jump:
            for src, dst in act.jump.items():
                _check(
                    src in feat.levels and dst in feat.levels,
                    f"action {act.name!r}: jump levels must be levels of {feat.name!r}",
                )
                new = np.where(cur == feat.levels.index(src), feat.levels.index(dst), new)
        ok = new < len(feat.levels)
    else:
        _check(
            act.target in feat.levels,
            f"action {act.name!r}: target must be one of {feat.levels}, got {act.target!r}",
        )
        new = np.full(n_states, feat.levels.index(act.target))
        ok = cur != new
    if act.from_levels is not None:
        allowed = [feat.levels.index(lv) for lv in act.from_levels]
        ok &= np.isin(cur, allowed)
    return new, ok


def _success_probability(act: Action, feat: Feature, newc: np.ndarray, n_states: int):
    """P(success) (S,) of reaching level ``newc``, and where that level can be reached at all
    (a mapping of ``success`` names the reachable levels; None: every level)."""
    if not isinstance(act.success, Mapping):
        _check(
            0 <= float(act.success) <= 1,
            f"action {act.name!r}: success must be in [0, 1], got {act.success}",
        )
        return np.full(n_states, float(act.success)), None
    table = np.zeros(len(feat.levels))
    for lv, p in act.success.items():
        _check(lv in feat.levels, f"action {act.name!r}: success level {lv!r} not in {feat.levels}")
        _check(
            0 <= p <= 1,
            f"action {act.name!r}: success probability for {lv!r} must be in [0, 1], got {p}",
        )
        table[feat.levels.index(lv)] = p
    return table[newc], np.isin(newc, [feat.levels.index(lv) for lv in act.success])


def _check_action(act: Action, features: Sequence[Feature], fidx: dict[str, int]) -> None:
    _check(
        act.feature in fidx,
        f"action {act.name!r}: unknown feature {act.feature!r}; known: {list(fidx)}",
    )
    feat = features[fidx[act.feature]]
    _check(
        feat.kind == "actionable",
        f"action {act.name!r}: feature {act.feature!r} is {feat.kind}, only actionable features can be acted on",
    )
    _check(
        np.isfinite(act.cost) and act.cost >= 0,
        f"action {act.name!r}: cost must be finite and >= 0, got {act.cost}",
    )
    _check(
        act.mode in ("increment", "set"),
        f"action {act.name!r}: mode must be 'increment' or 'set', got {act.mode!r}",
    )
    for se in act.side_effects:
        _check(se in fidx, f"action {act.name!r}: unknown side-effect feature {se!r}")
        _check(
            features[fidx[se]].kind != "immutable",
            f"action {act.name!r}: side effect on immutable feature {se!r}",
        )


def _action_outcomes(act, features, fidx, codes, radix, strides, goal):
    """Where ``act`` can be taken (states ``s`` (n,)), the state it leads to on success (n,)
    and P(success) (n,); on failure the state stays ``s``."""
    n_states = codes.shape[0]
    fi = fidx[act.feature]
    feat = features[fi]
    cur = codes[:, fi]
    new, ok = _reached_level(act, feat, cur, n_states)
    newc = np.clip(new, 0, radix[fi] - 1)
    psucc, reachable = _success_probability(act, feat, newc, n_states)
    if reachable is not None:
        ok &= reachable
    ok &= ~goal
    nxt = np.arange(n_states) + (newc - cur) * strides[fi]
    for se in act.side_effects:
        si = fidx[se]
        up = codes[:, si] < radix[si] - 1
        nxt = nxt + up * strides[si]
    s = np.flatnonzero(ok)
    return s, nxt[s], psucc[s]


def build_feature_mdp(
    features: Sequence[Feature],
    actions: Sequence[Action],
    is_goal: Callable[[np.ndarray], np.ndarray] | np.ndarray,
    horizon: int,
) -> RecourseMDP:
    """Enumerate the Cartesian product of feature levels and build the MDP.

    ``is_goal``: a callable mapping feature codes ``(S, D)`` to a bool
    ``(S,)`` (e.g. a classifier's favourable prediction), or that array.
    State index = row-major mixed-radix code of the feature levels.
    """
    _check(len(features) >= 1, "features must be non-empty")
    names = [f.name for f in features]
    _check(len(set(names)) == len(names), "feature names must be distinct")
    fidx = {n: i for i, n in enumerate(names)}
    radix = np.array([len(f.levels) for f in features], dtype=np.int64)
    n_states = int(np.prod(radix))
    codes = np.stack(np.unravel_index(np.arange(n_states), tuple(radix)), axis=1).astype(np.int64)
    strides = np.array([int(np.prod(radix[i + 1 :])) for i in range(len(radix))], dtype=np.int64)

    goal = is_goal(codes) if callable(is_goal) else is_goal
    goal = np.asarray(goal).astype(bool).reshape(-1)
    _check(
        goal.shape == (n_states,), f"is_goal must give shape (S,) = ({n_states},), got {goal.shape}"
    )

    _check(len(actions) >= 1, "actions must be non-empty")
    all_next, all_p, all_rows, all_cost = [], [], [], []
    for ai, act in enumerate(actions):
        _check_action(act, features, fidx)
        s, succ, psucc = _action_outcomes(act, features, fidx, codes, radix, strides, goal)
        rows = ai * n_states + s
        # two outcomes per (action, state): success and failure (stay), each paying the cost
        all_rows += [rows, rows]
        all_next += [succ, s]
        all_p += [psucc, 1.0 - psucc]
        all_cost += [np.full(s.size, act.cost), np.full(s.size, act.cost)]
    rows = np.concatenate(all_rows)
    nxt = np.concatenate(all_next)
    p = np.concatenate(all_p)
    c = np.concatenate(all_cost)
    keep = p > 0
    rows, nxt, p, c = rows[keep], nxt[keep], p[keep], c[keep]
    order = np.lexsort((nxt, rows))
    rows, nxt, p, c = rows[order], nxt[order], p[order], c[order]
    n_rows = len(actions) * n_states
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
    return RecourseMDP.from_arrays(
        indptr,
        nxt,
        p,
        c,
        goal,
        horizon,
        features=codes,
        action_names=[a.name for a in actions],
        feature_names=names,
        ordinal=np.array([f.ordinal for f in features]),
        meta={"radix": radix, "feature_specs": tuple(features), "action_specs": tuple(actions)},
    )
