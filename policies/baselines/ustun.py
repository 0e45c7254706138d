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
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Annotated

import numpy as np
from pydantic import Field
from scipy.special import logit

from abm.interfaces import Feedback, FollowsModel, PolicyContext, linear_logit
from policies.recommenders import require_linear


def quantile_grid(X_train: np.ndarray | None, lower: np.ndarray, upper: np.ndarray,
                  levels: int) -> list[tuple[np.ndarray, np.ndarray]]:  # fmt: skip
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

    Solved exactly with scipy's ``milp`` (HiGHS); ``levels`` sets the quantile grid
    (10 = deciles), ``batch=1`` solves one block-diagonal MILP per tick instead of one
    per candidate (slower: HiGHS' search grows faster than linearly). Goals out of reach inside the box give a NaN row (no advice).
    The program uses the decision model in force (``use_model``); the percentile grid
    depends on the training data only and is kept.
    """

    def __init__(
        self,
        levels: Annotated[int, Field(ge=1, le=1000)] = 10,
        batch: bool = False,
        gap: Annotated[float, Field(ge=0.0, lt=1.0)] = 1e-9,
    ) -> None:
        if not (isinstance(levels, int) and 1 <= levels <= 1000):
            raise ValueError(f"levels must be an integer in [1, 1000], got {levels!r}")
        if not 0.0 <= gap < 1.0:
            raise ValueError(f"gap must be in [0, 1), got {gap!r}")
        self.levels = levels
        self.batch = bool(batch)
        self.gap = float(gap)

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.model_changed()
        self.grid = quantile_grid(ctx.X_train, ctx.lower, ctx.upper, self.levels)

    def model_changed(self) -> None:
        """w (z,), b and the useful features (mutable, w != 0) of the decision model in force."""
        model = self.ctx.decision_model
        require_linear("ustun", model)
        self.w = np.asarray(model.weights, dtype=float)
        self.b = float(model.intercept)
        self.useful = np.flatnonzero(self.ctx.mutable & (self.w != 0))

    def percentile_cost(self, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """Total percentile shift sum_j |F_j(x_cf_j) - F_j(x_j)|, shape (n,)."""
        total = np.zeros(X.shape[0])
        for j, (xp, fp) in enumerate(self.grid):
            total += np.abs(np.interp(X_cf[:, j], xp, fp) - np.interp(X[:, j], xp, fp))
        return total

    # -- one candidate's block of the program ------------------------------------------
    def _segments(self, x: np.ndarray):
        """Segments of every useful feature: feature index, signed length, cost, gain."""
        feat, length, cost, gain, first = [], [], [], [], []
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
            pts_f = np.interp(pts, xp, fp)
            first.append(len(feat))
            feat += [j] * int(keep.sum())
            length += list(steps[keep])
            cost += list(np.abs(np.diff(pts_f))[keep])
            gain += list(np.abs(self.w[j] * steps[keep]))
        return (np.array(feat, dtype=np.int64), np.array(length), np.array(cost),
                np.array(gain), first)  # fmt: skip

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        out = X.copy()
        need = logit(np.clip(goals, 0.0, 1.0)) - linear_logit(X, self.w, self.b)
        blocks = []
        for i in np.flatnonzero(need > 0):
            feat, length, cost, gain, first = self._segments(X[i])
            if gain.sum() < need[i] * (1 - 1e-12) or not np.isfinite(need[i]):
                out[i] = np.nan  # out of reach inside the box: no advice
                continue
            blocks.append((i, feat, length, cost, gain, first))
        if not blocks:
            return out
        groups = [blocks] if self.batch else [[b] for b in blocks]
        for group in groups:
            for (i, feat, length, _, _, _), delta in zip(
                group, self._solve(group, need), strict=True
            ):
                x_cf = X[i].copy()
                np.add.at(x_cf, feat, length * delta)
                out[i] = self._snap(
                    x_cf, X[i], need[i] + linear_logit(X[i : i + 1], self.w, self.b)[0], feat
                )
        return out

    def _solve(self, group, need) -> list[np.ndarray]:
        """One MILP over the candidates in ``group``; the segment fills of each."""
        # scipy.optimize takes a second to import: load it when a program is solved
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_array

        c, gains_rows, gains_cols, gains_vals, rhs = [], [], [], [], []
        link_rows, link_cols, link_vals = [], [], []
        integrality, offsets = [], []
        n_var = 0
        n_link = 0
        for r, (i, _feat, _, cost, gain, first) in enumerate(group):
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
            n_var += s + nb
        m = len(group)
        A = coo_array((gains_vals, (gains_rows, gains_cols)), shape=(m, n_var))
        cons = [LinearConstraint(A, lb=np.asarray(rhs), ub=np.inf)]
        if n_link:
            L = coo_array((link_vals, (link_rows, link_cols)), shape=(n_link, n_var))
            cons.append(LinearConstraint(L, lb=-np.inf, ub=0.0))
        with _quiet_stdout():
            res = milp(np.asarray(c), constraints=cons, integrality=np.asarray(integrality),
                       bounds=Bounds(0.0, 1.0),
                       # presolve costs more than it saves on these small programs (2x slower)
                       options={"mip_rel_gap": self.gap, "presolve": False})  # fmt: skip
        if res.x is None:
            raise RuntimeError(f"ustun: HiGHS found no solution ({res.message})")
        return [np.clip(res.x[o : o + s], 0.0, 1.0) for o, s in offsets]

    def _snap(
        self, x_cf: np.ndarray, x0: np.ndarray, target: float, feat: np.ndarray
    ) -> np.ndarray:
        """Remove the solver's feasibility slack so that w.x_cf + b hits ``target`` exactly.

        The residual (about 1e-9 logit units) goes to the changed feature with the
        largest |w_j| that has room left in the needed direction.
        """
        x_cf = np.clip(x_cf, self.ctx.lower, self.ctx.upper)
        resid = target - linear_logit(x_cf[None, :], self.w, self.b)[0]
        changed = np.unique(feat[x_cf[feat] != x0[feat]])
        for j in changed[np.argsort(-np.abs(self.w[changed]), kind="stable")]:
            v = x_cf[j] + resid / self.w[j]
            if self.ctx.lower[j] <= v <= self.ctx.upper[j]:
                x_cf[j] = v
                break
        return x_cf

    def observe(self, feedback: Feedback) -> None:
        pass
