"""A policy's advice as the model takes it: shapes checked, round-off dropped, the [0, 1]
box and the immutable features kept (SPEC §2, §4). Shapes: n rejected, z features."""

from __future__ import annotations

import numpy as np

from abm import segments
from abm.interfaces import PolicyContext, Recommendation
from abm.onehot import OneHot
from abm.population import filled
from abm.tick import Advice
from abm.validation import ConfigError

#: tolerance for a policy's counterfactual leaving the [0, 1] box (then clipped)
BOUND_TOL = 1e-9
#: a recommended change smaller than this (feature units) is round-off, not advice: solvers
#: leave residues of about 1e-16 where a need is exactly met, and whether one appears
#: depends on the CPU's kernels; each would be asked of the candidate and drawn for
CHANGE_TOL = 1e-9


def keeps_one_way(policy: object) -> bool:
    """Whether ``policy`` declares that its advice keeps one-way features
    (``keeps_one_way = True``): never lowers an increase-only feature nor raises a
    decrease-only one."""
    return bool(getattr(policy, "keeps_one_way", False))


def refuse_one_way(policy: object, ctx: PolicyContext, name: str) -> None:
    """A one-line :class:`ConfigError` when the world has one-way features and ``policy``
    does not declare that it keeps them (docs/own-data.md, "Which way a feature moves")."""
    if ctx.one_way and not keeps_one_way(policy):
        d = ctx.direction
        up, down = np.flatnonzero(d > 0).tolist(), np.flatnonzero(d < 0).tolist()
        raise ConfigError(
            f"policy {name!r} does not keep one-way features (increase {up}, decrease "
            f"{down}); run it without increase and decrease, or choose a policy that keeps "
            "them (docs/own-data.md)"
        )


def keeps_onehot(policy: object) -> bool:
    """Whether ``policy`` declares that its advice keeps one-hot groups valid
    (``keeps_onehot = True``): every group one-hot, only allowed switches."""
    return bool(getattr(policy, "keeps_onehot", False))


def refuse_onehot(policy: object, ctx: PolicyContext, name: str) -> None:
    """A one-line :class:`ConfigError` when the world has one-hot groups and ``policy``
    does not declare that it keeps them (docs/own-data.md, "Categories without an order")."""
    if ctx.onehot is not None and not keeps_onehot(policy):
        groups = ", ".join(ctx.onehot.describe(g) for g in range(len(ctx.onehot.groups)))
        raise ConfigError(
            f"policy {name!r} does not keep one-hot groups valid ({groups}); run it on data "
            "without [data.onehot], or choose a policy that keeps them (docs/own-data.md)"
        )


def checked_advice(
    X: np.ndarray,
    rec: Recommendation | None,
    immutable: np.ndarray | None,
    name: str,
    direction: np.ndarray | None = None,
    onehot: OneHot | None = None,
) -> Advice:
    """Policy ``name``'s advice ``rec`` to the rejected, whose features are X (n, z): shapes
    checked, changes below CHANGE_TOL dropped, a change of nothing no advice (SPEC §2), the
    [0, 1] box, the ``immutable`` features (z,) bool (None: none) and the one-way
    ``direction`` (z,) int8 (+1 only up, -1 only down; None: none) and the ``onehot`` groups
    (each group one-hot, only allowed switches) kept."""
    n, z = X.shape
    if n == 0:
        if rec is not None and np.asarray(rec.goal).size:
            raise RuntimeError(f"policy {name!r} advised candidates although none was rejected")
        return _nobody_rejected(X)
    if not isinstance(rec, Recommendation):
        raise TypeError(f"respond() needs a Recommendation for {n} rejected, got {rec!r}")
    goal, X_cf, advised, no_change = _taken(X, rec, name)
    n_no_change = int(np.count_nonzero(no_change))
    all_advised = np.count_nonzero(advised) == n
    if not all_advised:
        X_cf = np.where(advised[:, None], X_cf, X)
        goal = np.where(advised, goal, np.nan)
    n_unreached, n_withheld = (
        0 if flags is None else int(np.count_nonzero(np.asarray(flags, dtype=bool) & ~advised))
        for flags in (rec.unreached, rec.withheld)
    )
    lo, hi = np.minimum.reduce(X_cf, axis=None), np.maximum.reduce(X_cf, axis=None)
    # NaN fails both comparisons, so this also catches non-finite advice
    if not (lo >= -BOUND_TOL and hi <= 1 + BOUND_TOL):
        raise RuntimeError(f"policy {name!r} returned counterfactuals outside [0, 1] (or NaN)")
    if immutable is not None and (X_cf[:, immutable] != X[:, immutable]).any():
        raise RuntimeError(f"policy {name!r} changed an immutable feature")
    if direction is not None:
        wrong = np.sign(X_cf - X) * direction < 0  # residues already dropped
        if wrong.any():
            i, j = np.argwhere(wrong)[0]
            way = "raised" if X_cf[i, j] > X[i, j] else "lowered"
            raise RuntimeError(
                f"policy {name!r} {way} feature {j}, which advice may only "
                f"{'raise' if direction[j] > 0 else 'lower'}"
            )
    if lo < 0 or hi > 1:
        X_cf = np.clip(X_cf, 0.0, 1.0)
    if onehot is not None:
        problem = onehot.problem(X, X_cf)
        if problem is not None:
            raise RuntimeError(f"policy {name!r} {problem[1]} (row {problem[0]})")
    info = {key: np.asarray(v) for key, v in rec.info.items()}
    counts = (n_unreached, n_withheld, n_no_change)
    return Advice(goal, X, X_cf, advised, info, all_advised, counts)


def _taken(X: np.ndarray, rec: Recommendation, name: str):
    """(goal (n,), X_cf (n, z), advised (n,), no_change (n,)) of ``rec`` for rows X (n, z):
    shapes checked, changes below CHANGE_TOL dropped, and a recommendation that changes
    nothing no advice (SPEC §2), whatever its goal."""
    n, z = X.shape
    goal = np.asarray(rec.goal, dtype=float).reshape(-1)
    X_cf = np.asarray(rec.X_cf, dtype=float)
    if goal.shape != (n,) or X_cf.shape != (n, z):
        raise RuntimeError(
            f"policy {name!r} returned goal {goal.shape} and X_cf "
            f"{X_cf.shape}; expected ({n},) and ({n}, {z})"
        )
    advised = filled(n, True, np.bool_) if rec.advised is None else np.asarray(rec.advised, bool)
    residue = np.abs(X_cf - X) < CHANGE_TOL
    if residue.any():
        X_cf = np.where(residue, X, X_cf)
    no_change = advised & residue.all(axis=1)
    if np.count_nonzero(no_change):
        advised = advised & ~no_change
    return goal, X_cf, advised, no_change


def _nobody_rejected(X: np.ndarray) -> Advice:
    """The advice of a tick nobody was rejected at (X (0, z))."""
    return Advice(np.empty(0), X, X.copy(), np.zeros(0, bool), {}, True, (0, 0, 0))


def checked_rows(
    X: np.ndarray,
    rec: Recommendation,
    counts: np.ndarray,
    immutable: np.ndarray | None,
    name: str,
    direction: np.ndarray | None = None,
    onehot: OneHot | None = None,
) -> list[Advice] | AdviceRows:
    """:func:`checked_advice` of B episodes' rejected at once: rows X (n, z) and one flat
    Recommendation ``rec`` over them, episode b's ``counts[b]`` rows after episode b - 1's;
    one Advice per episode (views), each what its own call gives. Advice that breaks a rule
    is checked again episode by episode, which raises the error the episode raises alone."""
    if counts.shape[0] == 1:  # one episode: its own check is the same, with less bookkeeping
        return [checked_advice(X, rec, immutable, name, direction, onehot)]
    n = X.shape[0]
    goal, X_cf, advised, no_change = _taken(X, rec, name)
    n_advised = segments.count(advised, counts)
    if n_advised.sum() != n:  # where all are advised this changes nothing
        X_cf = np.where(advised[:, None], X_cf, X)
        goal = np.where(advised, goal, np.nan)
    flags = [
        None if f is None else segments.count(np.asarray(f, dtype=bool) & ~advised, counts)
        for f in (rec.unreached, rec.withheld)
    ]
    low, high = X_cf < 0, X_cf > 1
    broken = not (np.minimum.reduce(X_cf, axis=None) >= -BOUND_TOL) or not (
        np.maximum.reduce(X_cf, axis=None) <= 1 + BOUND_TOL
    )
    if immutable is not None:
        broken = broken or bool((X_cf[:, immutable] != X[:, immutable]).any())
    if direction is not None:
        broken = broken or bool((np.sign(X_cf - X) * direction < 0).any())
    if not broken:
        outside = (low | high).any(axis=1)
        if outside.any():  # an episode with a row outside the box has all its rows clipped
            rows = np.repeat(segments.count(outside, counts) > 0, counts)
            X_cf = X_cf.copy()  # the policy's own array may be this one
            X_cf[rows] = np.clip(X_cf[rows], 0.0, 1.0)
        if onehot is not None:
            broken = onehot.problem(X, X_cf) is not None
    bounds = segments.offsets(counts)
    if broken:  # each episode alone raises what it raises
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            part = Recommendation(
                rec.goal[lo:hi],
                rec.X_cf[lo:hi],
                None if rec.advised is None else rec.advised[lo:hi],
                {k: v[lo:hi] for k, v in rec.info.items()},
                None if rec.unreached is None else rec.unreached[lo:hi],
                None if rec.withheld is None else rec.withheld[lo:hi],
            )
            checked_advice(X[lo:hi], part, immutable, name, direction, onehot)
        raise AssertionError("flat and per-episode checks of advice disagree")
    info = {key: np.asarray(v) for key, v in rec.info.items()}
    B = counts.shape[0]
    unreached, withheld = (np.zeros(B, np.int64) if f is None else f for f in flags)
    n_no_change = segments.count(no_change, counts)
    return AdviceRows(
        goal, X, X_cf, advised, info, bounds, n_advised, unreached, withheld, n_no_change
    )


class AdviceRows:
    """:func:`checked_rows`' answer: B episodes' advice flat (goal (n,), X and X_cf (n, z),
    advised (n,), info columns (n,)), episode b's rows at ``bounds[b]:bounds[b + 1]``
    ((B + 1,), a list), ``n_advised`` (B,) and the
    unadvised counts (``unreached``, ``withheld``, ``no_change``, (B,) each). A sequence of
    each episode's :class:`~abm.tick.Advice` (views), each made when first read (a batch
    whose record and extensions read only the flat arrays makes none). ``cf`` and
    ``cost`` hold the record's flat M(x_cf) caches and eq. 18 once computed (each
    Advice's ``scores`` and ``cost`` are cut from them)."""

    def __init__(
        self, goal, X, X_cf, advised, info, bounds, n_advised, unreached, withheld, no_change
    ) -> None:
        self.goal, self.X, self.X_cf, self.advised, self.info = goal, X, X_cf, advised, info
        self.bounds, self.n_advised = bounds, n_advised
        self.unreached, self.withheld, self.no_change = unreached, withheld, no_change
        self._made: list[Advice | None] = [None] * n_advised.shape[0]
        #: (M(x_cf) (n,) NaN where unadvised, M(x_cf) of the advised (a,)) and eq. 18 (n,)
        self.cf: tuple[np.ndarray, np.ndarray] | None = None
        self.cost: np.ndarray | None = None
        self._at: list[int] | None = None

    def __len__(self) -> int:
        return len(self._made)

    def __iter__(self):
        return (self[b] for b in range(len(self._made)))

    def __getitem__(self, b: int) -> Advice:
        got = self._made[b]
        if got is None:
            got = self._made[b] = self._advice(b)
        return got

    def any_scored(self) -> bool:
        """Whether an episode's Advice made already holds M(x_cf) of its own (computed
        under the model in force when it was read: the flat pass must not stand in)."""
        if self._none_made():
            return False
        return any(a is not None and a.scores is not None for a in self._made)

    def _none_made(self) -> bool:
        """Whether no episode's Advice was made (the usual case), in one C loop."""
        return self._made.count(None) == len(self._made)

    def refresh(self) -> None:
        """Give the Advice made so far their cut of the flat caches just computed."""
        if self._none_made():
            return
        for b, a in enumerate(self._made):
            if a is not None:
                self._caches(a, b)

    def _advice(self, b: int) -> Advice:
        lo, hi = self.bounds[b], self.bounds[b + 1]
        if lo == hi:  # nobody rejected in this episode: what checked_advice gives
            empty = _nobody_rejected(self.X[lo:hi])
            self._caches(empty, b)
            return empty
        n_adv = int(self.n_advised[b])
        info = self.info
        advice = Advice(
            self.goal[lo:hi],
            self.X[lo:hi],
            self.X_cf[lo:hi],
            self.advised[lo:hi],
            {k: v[lo:hi] for k, v in info.items()} if info else {},
            n_adv == hi - lo,
            (int(self.unreached[b]), int(self.withheld[b]), int(self.no_change[b])),
        )
        self._caches(advice, b)
        return advice

    def _caches(self, advice: Advice, b: int) -> None:
        """Episode ``b``'s cut of the flat M(x_cf) and eq. 18, where they are computed."""
        lo, hi = self.bounds[b], self.bounds[b + 1]
        if self.cf is not None and advice.scores is None:
            cf_scores, cf_adv = self.cf
            at = self._advised_at()
            mine = cf_adv[at[b] : at[b + 1]]
            advice.scores = (mine, mine) if advice.all_advised else (cf_scores[lo:hi], mine)
        if self.cost is not None and advice.cost is None:
            advice.cost = self.cost[lo:hi]

    def _advised_at(self) -> list[int]:
        """Each episode's first row among the advised (B + 1,), found once."""
        if self._at is None:
            self._at = segments.offsets(self.n_advised)
        return self._at
