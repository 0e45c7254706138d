"""Ustun-style actionable recourse: a mixed-integer program with percentile-shift costs.

After Ustun, Spangher & Liu (2019), "Actionable recourse in linear classification".
Cost is measured in the training distribution's percentiles: moving feature j from
x_j to v costs |F_j(v) - F_j(x_j)|, with F_j the empirical CDF of ``X_train[:, j]``
interpolated linearly between a grid of quantiles. That cost is piecewise linear but
neither convex nor concave in the change (the density rises, then falls), so picking
the cheapest mix of changes needs binary variables: each feature's path from x_j
towards its bound is cut at the quantile grid into segments that must be used in
order (the incremental MILP formulation). Continuous fill of the last segment used
lets the program land on the goal score exactly rather than on a grid point.

The program has one constraint besides the paths, so it is solved exactly without a MILP
solver: some optimum leaves every feature but one on a breakpoint of its path (fix which
segment each feature ends in and what is left is an LP with one constraint, whose
vertices have at most one variable strictly inside its segment). :func:`cheapest_mix`
enumerates those points through Pareto fronts of (gain, cost); the MILP stays as the
reference (``solver="milp"``) and the tests hold the two to the same optimum.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Annotated, Literal

import numpy as np
from pydantic import Field
from scipy.special import logit

from abm.interfaces import Feedback, FollowsModel, PolicyContext, linear_logit
from policies.recommenders import require_linear, switch_costs, switchable


def quantile_grid(
    X_train: np.ndarray | None, lower: np.ndarray, upper: np.ndarray, levels: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per feature, (breakpoints, cdf) of the interpolated empirical CDF on [lower, upper].

    ``levels`` + 1 quantiles at 0, 1/levels, ..., 1; without training data the CDF is
    uniform on the box (cost in raw units).
    """
    z = lower.shape[0]
    probs = np.linspace(0.0, 1.0, levels + 1)
    out = []
    for j in range(z):
        if X_train is None:
            xp = np.array([lower[j], upper[j]])
            fp = np.array([0.0, 1.0])
        else:
            q = np.quantile(X_train[:, j], probs)
            # extend to the box so every reachable value has a percentile
            xp = np.concatenate([[lower[j]], q, [upper[j]]])
            fp = np.concatenate([[0.0], probs, [1.0]])
            xp, keep = np.unique(xp, return_index=True)  # tied quantiles: keep the first
            fp = np.maximum.accumulate(fp[keep])
        out.append((xp, fp))
    return out


# -- the exact combinatorial solver ------------------------------------------------------
def _pareto(gain: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Indices of the points (gain (p,), cost (p,)) that no other beats: none cheaper (or as
    cheap) with at least the gain. Cost ascending; of equal points the first stays."""
    order = np.lexsort((-gain, cost))
    g = gain[order]
    keep = np.empty(g.size, dtype=bool)
    keep[0] = True
    np.greater(g[1:], np.maximum.accumulate(g)[:-1], out=keep[1:])
    return order[keep]


def _add_feature(front, G: np.ndarray, C: np.ndarray, col: int, cap: float):
    """``front`` (gain (p,), cost (p,), breakpoint picks (p, f)) with one more feature on one
    of its breakpoints (cumulative gain G (K,) and cost C (K,)); gains above ``cap`` (the
    need) are worth no more than the need."""
    g, c, pick = front
    g2 = np.minimum(g[:, None] + G, cap).ravel()
    c2 = (c[:, None] + C).ravel()
    kept = _pareto(g2, c2)
    row, k = np.divmod(kept, G.size)
    pick2 = pick[row]
    pick2[:, col] = k
    return g2[kept], c2[kept], pick2


def _merge(*fronts):
    """The Pareto front of the union of ``fronts`` (each (gain, cost, picks))."""
    g = np.concatenate([a for a, _, _ in fronts])
    c = np.concatenate([b for _, b, _ in fronts])
    pick = np.concatenate([p for _, _, p in fronts])
    kept = _pareto(g, c)
    return g[kept], c[kept], pick[kept]


def _add_capped(fronts, G: np.ndarray, C: np.ndarray, col: int, need: float):
    """``fronts`` (one per count c = 0..K: the front of at most c moved features) with one
    more feature: left at its start, or moved to one of its breakpoints past it (one more
    moved feature)."""
    if G.size < 2:  # nowhere to go
        return fronts
    out = [fronts[0]]
    for c in range(1, len(fronts)):
        moved = _add_feature(fronts[c - 1], G[1:], C[1:], col, need)
        moved[2][:, col] += 1  # breakpoints past the start: indices from 1
        out.append(_merge(fronts[c], moved))
    return out


def cheapest_mix(
    G: list[np.ndarray],
    C: list[np.ndarray],
    need: float,
    max_changes: int | None = None,
    discrete: int = 0,
):
    """Exact min sum_j c_j(g_j) s.t. sum_j g_j >= need, 0 <= g_j <= G_j[-1].

    c_j is piecewise linear and nondecreasing with breakpoints (G[j] (K_j,), C[j] (K_j,)),
    G[j][0] = C[j][0] = 0 (the incremental MILP's objective and constraint). Returns
    (cost, breakpoint index (f,) of every feature, the fractional feature j or -1, its
    gain): features other than j sit on breakpoints. Fronts of the features before and
    after each j are built once (prefix and suffix), so the work is O(f) merges.
    ``max_changes`` = K also bounds how many g_j are nonzero (:func:`_capped_mix`).
    The last ``discrete`` items are choices, not paths (a one-hot group: G[j][0] = C[j][0]
    = 0 stay, then one point per switch): one of their points, never between two.
    """
    f = len(G)
    if max_changes is not None and f > max_changes:
        return _capped_mix(G, C, need, max_changes, discrete)
    empty = (np.zeros(1), np.zeros(1), np.zeros((1, f), dtype=np.int64))
    prefix = [empty]
    for j in range(f):
        prefix.append(_add_feature(prefix[-1], G[j], C[j], j, need))
    suffix = [empty]
    for j in range(f - 1, -1, -1):
        suffix.append(_add_feature(suffix[-1], G[j], C[j], j, need))
    suffix.reverse()  # suffix[j]: features j, j+1, ..., f-1
    best = _on_points(prefix[f], need) if discrete else (np.inf, None, -1, 0.0)
    for j in range(f - discrete):
        (ga, ca, pa), (gb, cb, pb) = prefix[j], suffix[j + 1]
        g = (ga[:, None] + gb[None, :]).ravel()
        rest = need - g  # what feature j must add, continuously along its path
        top = G[j][-1]
        fill = np.where(rest <= 0.0, 0.0, np.interp(rest, G[j], C[j]))
        total = (ca[:, None] + cb[None, :]).ravel() + np.where(rest > top, np.inf, fill)
        k = int(np.argmin(total))
        if total[k] < best[0]:
            a, b = divmod(k, gb.size)
            best = (float(total[k]), pa[a] + pb[b], j, max(float(rest[k]), 0.0))
    return best


def _on_points(front, need: float):
    """The cheapest point of ``front`` (gain, cost, picks) that meets ``need``, with no
    fractional feature (:func:`cheapest_mix`'s answer); cost inf where none does."""
    g, c, pick = front
    meets = np.flatnonzero(g >= need)
    if meets.size == 0:
        return (np.inf, None, -1, 0.0)
    k = meets[np.argmin(c[meets])]
    return (float(c[k]), pick[k].copy(), -1, 0.0)


def _capped_mix(G: list[np.ndarray], C: list[np.ndarray], need: float, cap: int, discrete: int = 0):
    """:func:`cheapest_mix` with at most ``cap`` features moved (cap < f).

    With the moved set fixed the argument stands (one feature off its breakpoints), so
    the prefix and suffix fronts are kept per count of moved features (K + 1 of each),
    and feature j fills the rest only where the two sides leave it a move.
    """
    f = len(G)
    empty = [(np.zeros(1), np.zeros(1), np.zeros((1, f), dtype=np.int64))] * (cap + 1)
    prefix = [empty]
    for j in range(f):
        prefix.append(_add_capped(prefix[-1], G[j], C[j], j, need))
    suffix = [empty]
    for j in range(f - 1, -1, -1):
        suffix.append(_add_capped(suffix[-1], G[j], C[j], j, need))
    suffix.reverse()
    best = _on_points(prefix[f][cap], need) if discrete else (np.inf, None, -1, 0.0)
    for j in range(f - discrete):
        top = G[j][-1]
        # a + b = cap - 1: j may move; a + b = cap: j must stay (fronts count "at most")
        for a in range(cap + 1):
            (ga, ca, pa) = prefix[j][a]
            for b, stay in ((cap - 1 - a, False), (cap - a, True)):
                if b < 0:
                    continue
                gb, cb, pb = suffix[j + 1][b]
                g = (ga[:, None] + gb[None, :]).ravel()
                rest = need - g
                if stay:
                    fill = np.where(rest <= 0.0, 0.0, np.inf)
                else:
                    fill = np.where(
                        rest <= 0.0,
                        0.0,
                        np.where(rest > top, np.inf, np.interp(rest, G[j], C[j])),
                    )
                total = (ca[:, None] + cb[None, :]).ravel() + fill
                k = int(np.argmin(total))
                if total[k] < best[0]:
                    a_, b_ = divmod(k, gb.size)
                    best = (float(total[k]), pa[a_] + pb[b_], j, max(float(rest[k]), 0.0))
    return best


@contextlib.contextmanager
def _quiet_stdout():
    """Silence file descriptor 1 inside the block.

    The HiGHS build inside scipy prints a stray debug line
    ("HighsMipSolverData::transformNewIntegerFeasibleSolution ...") straight to fd 1 on
    some programs; Python-level redirection cannot catch it.
    """
    fd = 1  # HiGHS writes to the C-level stdout, whatever sys.stdout is
    sys.stdout.flush()
    saved = os.dup(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)


class Ustun(FollowsModel):
    """Minimal total percentile-shift recourse for linear (logistic) decision models.

    Solved exactly, by default with :func:`cheapest_mix` (``solver="exact"``), or with
    scipy's ``milp`` (HiGHS; ``solver="milp"``, the reference: same optimum, its own
    choice among ties and about 1e-9 of slack); ``levels`` sets the quantile grid
    (10 = deciles). With the MILP, ``batch=1`` solves one block-diagonal program per tick
    instead of one per candidate (slower: HiGHS' search grows faster than linearly).
    Goals out of reach inside the box give a NaN row (no advice).
    The program uses the decision model in force (``use_model``); the percentile grid
    depends on the training data only and is kept.

    Every path runs from x_j the way the score rises, so one-way features take part only
    where that is their way (``ctx.useful``): the per-row bounds of a one-way world.
    ``max_changes`` = K caps the features one advice changes, exactly: the MILP gets a
    binary per feature (every segment's fill at most it, their sum at most K), the
    exact solver fronts per count of moved features (:func:`_capped_mix`).

    One-hot groups (``ctx.onehot``): no path runs along an indicator; each group stays or
    makes one allowed switch a -> b at c(a, b), added to the percentile shifts as they are
    (both lie in [0, 1]; :meth:`percentile_cost` counts it so): a choice among points in
    the exact solver (``discrete`` of :func:`cheapest_mix`), a binary per switch, at most
    one per group, in the MILP. A switch counts as one change towards ``max_changes``.
    """

    keeps_one_way = True
    keeps_onehot = True

    def __init__(
        self,
        levels: Annotated[int, Field(ge=1, le=1000)] = 10,
        batch: bool = False,
        gap: Annotated[float, Field(ge=0.0, lt=1.0)] = 1e-9,
        solver: Literal["exact", "milp"] = "exact",
        max_changes: Annotated[int, Field(ge=1)] | None = None,
    ) -> None:
        if not (isinstance(levels, int) and 1 <= levels <= 1000):
            raise ValueError(f"levels must be an integer in [1, 1000], got {levels!r}")
        if not 0.0 <= gap < 1.0:
            raise ValueError(f"gap must be in [0, 1), got {gap!r}")
        self.levels = levels
        self.batch = bool(batch)
        self.gap = float(gap)
        if solver not in ("exact", "milp"):
            raise ValueError(f"solver must be 'exact' or 'milp', got {solver!r}")
        if self.batch and solver != "milp":
            raise ValueError("batch = 1 needs solver = 'milp' (one program for the tick)")
        self.solver = solver
        if max_changes is not None and not (isinstance(max_changes, int) and max_changes >= 1):
            raise ValueError(f"max_changes must be an integer >= 1, got {max_changes!r}")
        self.max_changes = max_changes

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.model_changed()
        self.grid = quantile_grid(ctx.X_train, ctx.lower, ctx.upper, self.levels)

    def model_changed(self) -> None:
        """w (z,), b and the useful features (mutable, w != 0, not one-way against w) of
        the decision model in force."""
        model = self.ctx.decision_model
        require_linear("ustun", model)
        self.w = np.asarray(model.weights, dtype=float)
        self.b = float(model.intercept)
        useful = self.ctx.useful(self.w)
        onehot = self.ctx.onehot
        if onehot is not None:
            useful[onehot.columns] = False  # indicators move only by switches
            self.switch = switch_costs(onehot, self.ctx.mutable)
            self.live = switchable(self.switch)
        self.useful = np.flatnonzero(useful)

    def percentile_cost(self, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """Total percentile shift sum_j |F_j(x_cf_j) - F_j(x_j)|, shape (n,); with one-hot
        groups a switch a -> b counts c(a, b) instead of its indicators' shifts."""
        total = np.zeros(X.shape[0])
        onehot = self.ctx.onehot
        skip = set() if onehot is None else set(onehot.columns.tolist())
        for j, (xp, fp) in enumerate(self.grid):
            if j not in skip:
                total += np.abs(np.interp(X_cf[:, j], xp, fp) - np.interp(X[:, j], xp, fp))
        if onehot is not None:
            total += onehot.moves(X, X_cf)[:, onehot.columns].sum(axis=1)
        return total

    def _options(self, x: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Every switchable group's choices from valid row x (z,): (g, target categories
        (k,), cumulative-style gain in logit (k + 1,) and cost (k + 1,)), point 0 the stay;
        only switches that raise the score (any other costs and loses). Empty without
        groups."""
        if self.ctx.onehot is None:
            return []
        out = []
        for g in self.live:
            members = self.ctx.onehot.groups[g]
            a = int(x[members].argmax())
            gain = self.w[members] - self.w[members[a]]
            to = np.flatnonzero(np.isfinite(self.switch[g][a]) & (gain > 0))
            if to.size:
                zero = np.zeros(1)
                out.append(
                    (
                        g,
                        to,
                        np.concatenate([zero, gain[to]]),
                        np.concatenate([zero, self.switch[g][a, to]]),
                    )
                )
        return out

    def _switched(self, x: np.ndarray, opts, pick) -> np.ndarray:
        """Row x (z,) with the switch of point ``pick[q]`` of every group ``opts[q]``
        made (point 0: it stays). A copy."""
        x = x.copy()
        for (g, to, _, _), k in zip(opts, pick, strict=True):
            if k:
                members = self.ctx.onehot.groups[g]
                x[members] = 0.0
                x[members[to[k - 1]]] = 1.0
        return x

    # -- one candidate's paths and block of the program ---------------------------------
    def _paths(self, x: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Every useful feature's path from x_j (z,) to its bound, cut at the quantile grid:
        (j, positions (K,), cumulative gain in logit (K,), cumulative cost (K,)), starting
        at (x_j, 0, 0); features with nowhere to go are left out."""
        paths = []
        for j in self.useful:
            xp, fp = self.grid[j]
            up = self.w[j] > 0
            bound = self.ctx.upper[j] if up else self.ctx.lower[j]
            inner = xp[(xp > x[j]) & (xp < bound)] if up else xp[(xp < x[j]) & (xp > bound)][::-1]
            pts = np.concatenate([[x[j]], inner, [bound]])
            steps = np.diff(pts)
            keep = steps != 0
            if not keep.any():
                continue
            pts = np.concatenate([pts[:1], pts[1:][keep]])
            steps = steps[keep]
            cost = np.abs(np.diff(np.interp(pts, xp, fp)))
            gain = np.abs(self.w[j] * steps)
            paths.append(
                (
                    int(j),
                    pts,
                    np.concatenate([[0.0], np.cumsum(gain)]),
                    np.concatenate([[0.0], np.cumsum(cost)]),
                )
            )
        return paths

    @staticmethod
    def _segments(paths):
        """The MILP's block of ``paths``: feature index, signed length, cost, gain of every
        segment (s,) and each feature's first segment."""
        feat, length, cost, gain, first = [], [], [], [], []
        for j, pts, G, C in paths:
            first.append(len(feat))
            feat += [j] * (pts.size - 1)
            length += list(np.diff(pts))
            cost += list(np.diff(C))
            gain += list(np.diff(G))
        return (
            np.array(feat, dtype=np.int64),
            np.array(length),
            np.array(cost),
            np.array(gain),
            first,
        )

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        out = X.copy()
        base = linear_logit(X, self.w, self.b)
        need = logit(np.clip(goals, 0.0, 1.0)) - base
        todo = []
        for i in np.flatnonzero(need > 0):
            paths, opts = self._paths(X[i]), self._options(X[i])
            reach = self._reach(paths, opts)
            if reach < need[i] * (1 - 1e-12) or not np.isfinite(need[i]):
                out[i] = np.nan  # out of reach inside the box: no advice
                continue
            todo.append((i, paths, opts))
        if self.solver == "exact":
            for i, paths, opts in todo:
                out[i] = self._snap(
                    self._exact(X[i], paths, need[i], self.max_changes, opts),
                    X[i],
                    need[i] + base[i],
                    np.array([j for j, *_ in paths], dtype=np.intp),
                )
            return out
        blocks = [(i, *self._segments(paths), opts) for i, paths, opts in todo]
        if not blocks:
            return out
        groups = [blocks] if self.batch else [[b] for b in blocks]
        for group in groups:
            for (i, feat, length, _, _, _, opts), (delta, on) in zip(
                group, self._solve(group, need), strict=True
            ):
                x_cf = X[i].copy()
                np.add.at(x_cf, feat, length * delta)
                if opts:
                    parts = np.cumsum([0] + [to.size for _, to, _, _ in opts])
                    pick = [
                        int(np.argmax(on[a:b])) + 1 if on[a:b].any() else 0
                        for a, b in zip(parts[:-1], parts[1:], strict=True)
                    ]
                    x_cf = self._switched(x_cf, opts, pick)
                out[i] = self._snap(x_cf, X[i], need[i] + base[i], feat)
        return out

    def _reach(self, paths, opts=()) -> float:
        """The most score (logit) ``paths`` and group switches ``opts`` can add: every path
        to its end and each group's best switch, or with a cap the ``max_changes``
        longest."""
        ends = [G[-1] for _, _, G, _ in paths] + [G.max() for _, _, G, _ in opts]
        if self.max_changes is None:
            return sum(ends)
        return float(np.sort(ends)[::-1][: self.max_changes].sum())

    def _exact(
        self, x: np.ndarray, paths, need: float, cap: int | None = None, opts=()
    ) -> np.ndarray:
        """The counterfactual (z,) of :func:`cheapest_mix` on ``paths`` and the groups'
        choices ``opts`` (:meth:`_options`) from x (z,), at most ``cap`` features changed
        (None: no cap)."""
        G = [G for *_, G, _ in paths] + [G for *_, G, _ in opts]
        C = [C for *_, C in paths] + [C for *_, C in opts]
        _, pick, frac, rest = cheapest_mix(G, C, need, cap, len(opts))
        x_cf = x.copy()
        f = len(paths)
        if pick is None:  # the need exceeds the reach by rounding only: every path to its end
            ends = np.array([g.max() if q >= f else g[-1] for q, g in enumerate(G)])
            pick = np.zeros(len(G), dtype=np.intp)
            for q in np.argsort(-ends, kind="stable")[:cap]:  # with a cap, the longest
                if q >= f:  # a group: its best switch
                    pick[q] = int(np.argmax(G[q]))
                    continue
                j, pts, _, _ = paths[q]
                x_cf[j] = pts[-1]
            return self._switched(x_cf, opts, pick[f:])
        for q, (j, pts, G, _) in enumerate(paths):
            x_cf[j] = np.interp(rest, G, pts) if q == frac and rest > 0 else pts[pick[q]]
        return self._switched(x_cf, opts, pick[f:])

    def _solve(self, group, need) -> list[tuple[np.ndarray, np.ndarray]]:
        """One MILP over the candidates in ``group``; the segment fills (s,) of each and
        which of its switches (k,) bool are made."""
        # scipy.optimize takes a second to import: load it when a program is solved
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_array

        c, gains_rows, gains_cols, gains_vals, rhs = [], [], [], [], []
        link_rows, link_cols, link_vals = [], [], []
        integrality, offsets = [], []
        card_rows, card_cols = [], []
        n_var = 0
        n_link = 0
        cap = self.max_changes
        one_rows, one_cols, n_one, switches = [], [], 0, []
        for r, (i, _feat, _, cost, gain, first, opts) in enumerate(group):
            s = cost.shape[0]
            # variables: s fills delta in [0, 1], then one binary per inner segment boundary
            starts = list(first) + [s]
            slope = cost / np.maximum(gain, 1e-300)
            bins = []  # (feature's first segment, k, feature's end): binary y at kink k|k+1
            for a, bnd in zip(starts[:-1], starts[1:], strict=True):
                # ordering is only at risk where the next segment is cheaper per unit of
                # score (a concave kink); inside convex runs the LP fills in order anyway
                bins += [(a, k, bnd) for k in range(a, bnd - 1) if slope[k + 1] < slope[k]]
            nb = len(bins)
            offsets.append((n_var, s))
            c += list(cost) + [0.0] * nb
            gains_rows += [r] * s
            gains_cols += list(range(n_var, n_var + s))
            gains_vals += list(gain)
            rhs.append(need[i])
            integrality += [0] * s + [1] * nb
            for q, (a, k, bnd) in enumerate(bins):
                y = n_var + s + q
                # delta_j <= y <= delta_i for every segment j past the kink and i before it:
                # going past a concave kink needs the whole path up to it
                for j in range(k + 1, bnd):
                    link_rows += [n_link, n_link]
                    link_cols += [n_var + j, y]
                    link_vals += [1.0, -1.0]
                    n_link += 1
                for j in range(a, k + 1):
                    link_rows += [n_link, n_link]
                    link_cols += [y, n_var + j]
                    link_vals += [1.0, -1.0]
                    n_link += 1
            capped = cap is not None and len(first) + len(opts) > cap
            if capped:
                # a binary u per feature after the kinks': delta_j <= u on each of its
                # segments, and at most cap of them 1 (a row of its own below)
                for q, (a, bnd) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
                    u = n_var + s + nb + q
                    for j in range(a, bnd):
                        link_rows += [n_link, n_link]
                        link_cols += [n_var + j, u]
                        link_vals += [1.0, -1.0]
                        n_link += 1
                    card_rows.append(r)
                    card_cols.append(u)
                c += [0.0] * len(first)
                integrality += [1] * len(first)
                nb += len(first)
            n_var += s + nb
            # a binary per switch, at most one per group, each one change towards the cap
            start = n_var
            for _, to, G, C in opts:
                cols = list(range(n_var, n_var + to.size))
                c += list(C[1:])
                gains_rows += [r] * to.size
                gains_cols += cols
                gains_vals += list(G[1:])
                integrality += [1] * to.size
                one_rows += [n_one] * to.size
                one_cols += cols
                n_one += 1
                if capped:
                    card_rows += [r] * to.size
                    card_cols += cols
                n_var += to.size
            switches.append((start, n_var - start))
        m = len(group)
        A = coo_array((gains_vals, (gains_rows, gains_cols)), shape=(m, n_var))
        cons = [LinearConstraint(A, lb=np.asarray(rhs), ub=np.inf)]
        if n_link:
            L = coo_array((link_vals, (link_rows, link_cols)), shape=(n_link, n_var))
            cons.append(LinearConstraint(L, lb=-np.inf, ub=0.0))
        if card_rows:
            K = coo_array((np.ones(len(card_rows)), (card_rows, card_cols)), shape=(m, n_var))
            cons.append(LinearConstraint(K, lb=-np.inf, ub=float(cap)))
        if n_one:
            One = coo_array((np.ones(len(one_rows)), (one_rows, one_cols)), shape=(n_one, n_var))
            cons.append(LinearConstraint(One, lb=-np.inf, ub=1.0))
        with _quiet_stdout():
            res = milp(
                np.asarray(c),
                constraints=cons,
                integrality=np.asarray(integrality),
                bounds=Bounds(0.0, 1.0),
                # presolve costs more than it saves on these small programs (2x slower)
                options={"mip_rel_gap": self.gap, "presolve": False},
            )
        if res.x is None:
            raise RuntimeError(f"ustun: HiGHS found no solution ({res.message})")
        return [
            (np.clip(res.x[o : o + s], 0.0, 1.0), res.x[a : a + k] > 0.5)
            for (o, s), (a, k) in zip(offsets, switches, strict=True)
        ]

    def _snap(
        self, x_cf: np.ndarray, x0: np.ndarray, target: float, feat: np.ndarray
    ) -> np.ndarray:
        """Remove the solver's feasibility slack so that w.x_cf + b hits ``target`` exactly.

        The residual (about 1e-9 logit units) goes to the changed feature with the
        largest |w_j| that has room left in the needed direction.
        """
        # with one-way features the slack must not push one back past x0: x0's own box
        lo, hi = self.ctx.bounds(x0)
        x_cf = np.clip(x_cf, lo, hi)
        resid = target - linear_logit(x_cf[None, :], self.w, self.b)[0]
        changed = np.unique(feat[x_cf[feat] != x0[feat]])
        for j in changed[np.argsort(-np.abs(self.w[changed]), kind="stable")]:
            v = x_cf[j] + resid / self.w[j]
            if lo[j] <= v <= hi[j]:
                x_cf[j] = v
                break
        return x_cf

    def observe(self, feedback: Feedback) -> None:
        pass
