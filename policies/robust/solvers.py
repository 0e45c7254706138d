"""Robust recourse solvers (spec §2): the convex program, Algorithms 1 and 2, and ROAR.

All minimise the worst-case price of :mod:`policies.robust.price`,
max_{‖θ−θ₀‖_p ≤ α} ℓ(θ·x̃) + λ‖x − x₀‖₁, for one linear model θ₀ = (w, b):

* :func:`robust_lp` -- the problem is convex for every p (spec §4.1), so it is solved
  directly: epigraph variables for |x − x₀| and for the dual norm, SLSQP with analytic
  gradients. Any p in [1, inf]: the reference for the faster exact solvers.
* :func:`robust_l2_batch` -- the same optimum for p = 2 in a finite box, every row at once
  (a 1-D search on the optimality condition; each inner point in closed form).
* :func:`alg1` -- the paper's Algorithm 1 for p = 1: one convex subproblem per model of
  Θ± (±α on a weight, −α on the intercept), each constrained to points where that model is
  the worst; the cheapest wins.
* :func:`alg2` -- the greedy Algorithm 2 for p = inf with the termination fix of §4.3;
  :func:`alg2_rows` runs it on every row at once, bit for bit.
* :func:`roar` -- the ROAR baseline: Adam on the price against the closed-form worst
  model of the current point (batched over rows).
* :func:`switch_search` -- one-hot groups (issue 53, item 1): each switch of a group one
  move at its cost, the numeric features solved by any of the above with the indicators
  held.

Bounds ``lower``/``upper`` (z,) and ``immutable`` (z,) bool are optional everywhere; a
start outside the bounds is clipped first. The batched solvers (:func:`alg2_rows`,
:func:`robust_l2_batch`, :func:`roar`) also take bounds (n, z), one box per row: a
one-way feature holds its row's value as one end (``PolicyContext.box``).
:func:`linearise` turns any Scorer into (w, b) at the rows to advise (exact weights, or
central differences of the logit).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.special import logit as _logit

from abm.validation import ConfigError, problem
from policies.robust.price import (
    check_alpha,
    check_lam,
    check_p,
    dual_exponent,
    price,
    softplus_neg,
)

#: moves smaller than this (relative to 1 + |x₀|) are solver noise: the feature is kept as is
SNAP = 1e-9
#: central-difference step of :func:`linearise` (ours; replaces LIME, deterministic)
FD_STEP = 1e-4
#: Algorithm 2 stops after this many passes per feature (a guard; it needs at most 2 each)
ALG2_PASSES = 10
#: ROAR: Adam's learning rate, the |ΔJ| stopping tolerance and the step cap (ours)
ROAR_LR, ROAR_TOL, ROAR_MAX_STEPS = 1e-3, 1e-4, 200_000
#: ROAR: Adam's β₁, β₂ and ε (Adam's defaults)
ROAR_ADAM = (0.9, 0.999, 1e-8)
#: ROAR: steps between two evaluations of the stopping test (any value gives the same
#: bits), in NumPy and compiled (where a step costs well under a microsecond)
ROAR_BLOCK, ROAR_BLOCK_COMPILED = 16, 64
# SLSQP: tolerance on the objective and iteration cap; a violated constraint above
# _FEAS_TOL makes a solve a failure
_FTOL, _MAXITER, _FEAS_TOL = 1e-13, 500, 1e-8


@dataclass(frozen=True)
class Solution:
    """One robust recourse: ``x`` (z,), its exact worst-case price ``J`` (spec §1) and
    ``ok`` (False: the solver failed and ``x`` is the best point it had)."""

    x: np.ndarray
    J: float
    ok: bool = True


# -- input checks ---------------------------------------------------------------------
def check_weights(w: np.ndarray, b: float, field: str = "decision_model") -> None:
    """Finite weights (z,) or (n, z) and intercept(s); NaN or inf is a one-line error."""
    w_arr, b_arr = np.asarray(w, dtype=float), np.asarray(b, dtype=float)
    if not np.isfinite(w_arr).all():
        bad = w_arr[~np.isfinite(w_arr)].flat[0]
        raise ConfigError(problem(f"{field}.weights", float(bad), "finite numbers"))
    if not np.isfinite(b_arr).all():
        bad = b_arr[~np.isfinite(b_arr)].flat[0]
        raise ConfigError(problem(f"{field}.intercept", float(bad), "a finite number"))


def _bound(z: int, value, fill: float) -> np.ndarray:
    """A bound as (z,), or as (n, z) per row (given so, n > 1: the batched solvers)."""
    if value is None:
        return np.full(z, fill)
    arr = np.asarray(value, dtype=float)
    return arr if arr.ndim == 2 and arr.shape[0] != 1 else arr.reshape(z)


def _box(z: int, lower, upper, immutable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo, hi = _bound(z, lower, -np.inf), _bound(z, upper, np.inf)
    if (lo > hi).any():
        i = int(np.argwhere(lo > hi)[0][-1])
        raise ConfigError(
            problem(f"lower[{i}]", float(np.max(lo[..., i])), f"a number <= upper[{i}]")
        )
    fixed = np.zeros(z, bool) if immutable is None else np.asarray(immutable, bool).reshape(z)
    return lo, hi, fixed


def clip_to_box(X: np.ndarray, lower=None, upper=None) -> tuple[np.ndarray, int]:
    """X (n, z) clipped into [lower, upper] and the number of rows that moved (spec §6)."""
    Xc, moved = clip_rows(X, lower, upper)
    return Xc, int(np.count_nonzero(moved))


def clip_rows(X: np.ndarray, lower=None, upper=None) -> tuple[np.ndarray, np.ndarray]:
    """X (n, z) clipped into [lower, upper] and which rows moved (n,) bool; a single row
    (z,) gives (1,)."""
    X = np.asarray(X, dtype=float)
    lo = -np.inf if lower is None else np.asarray(lower, dtype=float)
    hi = np.inf if upper is None else np.asarray(upper, dtype=float)
    Xc = np.clip(X, lo, hi)
    return Xc, (Xc != X).any(axis=1) if X.ndim == 2 else np.array([(Xc != X).any()])


def _snap(x: np.ndarray, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Solver noise removed: tiny moves undone, the point put back inside its bounds."""
    x = np.clip(x, lo, hi)
    tiny = np.abs(x - x0) <= SNAP * (1.0 + np.abs(x0))
    return np.where(tiny, x0, x)


# -- the convex core (SLSQP) --------------------------------------------------------------
class _Convex:
    """min softplus(−(a·x + c − α·N(x))) + λ Σ|x − x₀| over m free coordinates x.

    N(x) = ‖(x, fixed, 1)‖_q is the dual norm of the augmented point, ``base`` holding the
    fixed part (q = inf: max(1, |fixed|), q = 1: 1 + Σ|fixed|, else 1 + Σ|fixed|^q).
    Extra linear constraints G x ≥ h (Algorithm 1's "this model is the worst"). Variables:
    x (m), u (m) ≥ |x − x₀|, then v (q = inf) or t (m) ≥ |x| (q = 1).
    """

    def __init__(self, a, c, x0, lam, lo, hi, alpha=0.0, q=math.inf, base=1.0, G=None, h=None):
        self.a, self.c, self.x0, self.lam = a, float(c), x0, lam
        self.lo, self.hi = lo, hi
        self.alpha, self.q, self.base = alpha, q, base
        m = a.shape[0]
        self.m = m
        self.kind = (
            "none" if alpha == 0 else ("max" if math.isinf(q) else "sum" if q == 1 else "smooth")
        )
        self.n_var = 2 * m + {"none": 0, "max": 1, "sum": m, "smooth": 0}[self.kind]
        eye, Z = np.eye(m), np.zeros((m, m))
        rows = [np.hstack([-eye, eye]), np.hstack([eye, eye])]
        rhs = [-x0, x0]  # rows @ z >= rhs
        extra = self.n_var - 2 * m
        if extra:
            rows = [np.hstack([r, np.zeros((m, extra))]) for r in rows]
        if self.kind == "max":
            one = np.ones((m, 1))
            rows += [np.hstack([-eye, Z, one]), np.hstack([eye, Z, one])]
            rhs += [np.zeros(m), np.zeros(m)]
        elif self.kind == "sum":
            rows += [np.hstack([-eye, Z, eye]), np.hstack([eye, Z, eye])]
            rhs += [np.zeros(m), np.zeros(m)]
        if G is not None and G.shape[0]:
            rows.append(np.hstack([G, np.zeros((G.shape[0], self.n_var - m))]))
            rhs.append(np.asarray(h, dtype=float))
        self.A = np.vstack(rows)
        self.rhs = np.concatenate(rhs)

    def _split(self, z):
        m = self.m
        return z[:m], z[m : 2 * m], z[2 * m :]

    def _norm(self, x, extra):
        if self.kind == "max":
            return extra[0]
        if self.kind == "sum":
            return self.base + extra.sum()
        if self.kind == "smooth":
            return (self.base + (np.abs(x) ** self.q).sum()) ** (1.0 / self.q)
        return 0.0

    def _score(self, x, extra):
        return self.a @ x + self.c - self.alpha * self._norm(x, extra)

    def fun(self, z):
        x, u, extra = self._split(z)
        return float(softplus_neg(self._score(x, extra)) + self.lam * u.sum())

    def jac(self, z):
        x, u, extra = self._split(z)
        s = self._score(x, extra)
        dl = -expit(-s)  # dℓ/ds
        g = np.empty(self.n_var)
        if self.kind == "smooth":
            N = self._norm(x, extra)
            dN = np.sign(x) * (np.abs(x) / N) ** (self.q - 1.0)
            g[: self.m] = dl * (self.a - self.alpha * dN)
        else:
            g[: self.m] = dl * self.a
        g[self.m : 2 * self.m] = self.lam
        g[2 * self.m :] = -dl * self.alpha
        return g

    def start(self, xs):
        """A feasible start from a feasible x (m,)."""
        parts = [xs, np.abs(xs - self.x0)]
        if self.kind == "max":
            parts.append([max(self.base, float(np.abs(xs).max(initial=0.0)))])
        elif self.kind == "sum":
            parts.append(np.abs(xs))
        return np.concatenate(parts)

    def bounds(self):
        bx = [
            (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
            for lo, hi in zip(self.lo, self.hi, strict=True)
        ]
        # u >= 0 and t >= 0 follow from the pairs of constraints: as bounds too they make
        # the active set degenerate at x = x0 (or x = 0) and SLSQP's inner solver crawls
        bu = [(None, None)] * self.m
        if self.kind == "max":
            return bx + bu + [(self.base, None)]
        if self.kind == "sum":
            return bx + bu + [(None, None)] * self.m
        return bx + bu

    def solve(self, xs):
        """(x (m,), ok) from the feasible start ``xs`` (m,)."""
        from scipy.optimize import minimize

        if self.m == 0:
            return xs, True
        z0 = self.start(xs)
        A, rhs = self.A, self.rhs
        cons = {"type": "ineq", "fun": lambda z: A @ z - rhs, "jac": lambda z: A}
        res = minimize(
            self.fun,
            z0,
            jac=self.jac,
            method="SLSQP",
            bounds=self.bounds(),
            constraints=[cons],
            options={"ftol": _FTOL, "maxiter": _MAXITER},
        )
        z = np.asarray(res.x, dtype=float)
        feasible = (
            np.isfinite(z).all()
            and float((A @ z - rhs).min(initial=0.0)) >= -_FEAS_TOL
            and bool((z[: self.m] >= self.lo - _FEAS_TOL).all())
            and bool((z[: self.m] <= self.hi + _FEAS_TOL).all())
        )
        # SLSQP's exit 8 ("positive directional derivative") at a tight ftol is a converged
        # point more often than not; it counts when the point is feasible and no worse
        converged = res.status in (0, 8)
        ok = bool(feasible and converged and self.fun(z) <= self.fun(z0) + 1e-12)
        return (z[: self.m] if ok else xs), ok


def _reduce(x0, w, b, fixed):
    """(free indices, the fixed part of the logit)."""
    free = np.flatnonzero(~fixed)
    c = float(b + np.add.reduce(w[fixed] * x0[fixed]))
    return free, c


def _norm_base(xf: np.ndarray, q: float) -> float:
    a = np.abs(xf)
    if math.isinf(q):
        return max(1.0, float(a.max(initial=0.0)))
    if q == 1.0:
        return 1.0 + float(a.sum())
    return 1.0 + float((a**q).sum())


def _prepare(x0, w, b, alpha, lam, lower, upper, immutable):
    x0 = np.asarray(x0, dtype=float).reshape(-1)
    z = x0.shape[0]
    w = np.asarray(w, dtype=float).reshape(z)
    check_weights(w, b)
    alpha, lam = check_alpha(alpha), check_lam(lam)
    lo, hi, fixed = _box(z, lower, upper, immutable)
    if not np.isfinite(x0).all():
        raise ConfigError(problem("x0", x0.tolist(), "finite numbers"))
    return np.clip(x0, lo, hi), w, float(b), alpha, lam, lo, hi, fixed


# -- the convex program ----------------------------------------------------------------
def robust_lp(
    x0: np.ndarray,
    w: np.ndarray,
    b: float,
    alpha: float,
    lam: float,
    p: float,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    immutable: np.ndarray | None = None,
    warm_start: bool = True,
) -> Solution:
    """Robust recourse of x₀ (z,) against ‖θ − θ₀‖_p ≤ α, θ₀ = (w (z,), b), as one convex
    program (spec §2, eq. 3): min_x ℓ(θ₀·x̃ − α‖x̃‖_q) + λ‖x − x₀‖₁ within the bounds.

    p = 1 and p = inf use an epigraph variable for the norm (linear constraints); other p
    keep the smooth norm in the objective. ``ok`` is False when SLSQP failed (then ``x``
    is x₀); callers fall back to :func:`alg1` or :func:`alg2`. ``warm_start`` starts SLSQP
    from the cheapest of x₀ and two greedy points (:func:`alg2`: against L-inf, and
    non-robust with the intercept lowered by α); False starts from x₀ (tests use it to
    check :func:`alg1` and :func:`alg2` independently).
    """
    p = check_p(p)
    x0, w, b, alpha, lam, lo, hi, fixed = _prepare(x0, w, b, alpha, lam, lower, upper, immutable)
    q = dual_exponent(p)
    free, c = _reduce(x0, w, b, fixed)
    base = _norm_base(x0[fixed], q)
    prob = _Convex(w[free], c, x0[free], lam, lo[free], hi[free], alpha, q, base)
    # warm start: the greedy p = inf optimum (exact there, a good guess elsewhere) when it
    # beats x0; SLSQP from x0 needs ~10x the iterations, each slow on the degenerate
    # corners |x_i| = 0 and x_i = x0_i
    xs = x0
    if warm_start:
        # the greedy optimum against L-inf, and the non-robust optimum with the intercept
        # lowered by α, free and kept in [-1, 1] (where ‖x̃‖∞ = 1, so for p = 1 that is
        # Algorithm 1's intercept subproblem, solved exactly)
        x0_unit = np.clip(x0, -1.0, 1.0)
        unit = (np.maximum(lo, -1.0), np.minimum(hi, 1.0))
        starts = [
            x0,
            alg2(x0, w, b, alpha, lam, lo, hi, fixed).x,
            alg2(x0, w, b - alpha, 0.0, lam, lo, hi, fixed).x,
        ]
        if (unit[0] <= unit[1]).all() and (x0_unit[fixed] == x0[fixed]).all():
            at_unit = alg2(x0_unit, w, b - alpha, 0.0, lam, *unit, fixed).x
            starts.append(at_unit)
        starts = np.stack(starts)
        xs = starts[int(np.argmin(price(starts, x0[None], w, b, alpha, lam, p)))]
    xf, ok = prob.solve(xs[free].copy())
    x = x0.copy()
    x[free] = xf
    x = _snap(x, x0, lo, hi)
    return Solution(x, float(price(x[None], x0[None], w, b, alpha, lam, p)[0]), ok)


# -- the convex program for p = 2, exactly and batched ----------------------------------
def _l2_prox(a, b, nu, x0, lo, hi):
    """argmin over [lo, hi] of −w·x + (ν/2)x² + μ|x − x₀| per coordinate, with a = w − μ
    and b = w + μ: a/ν when that lies above x₀, b/ν when below, else x₀ (then clipped)."""
    t = np.where(a > nu * x0, a / nu, np.where(b < nu * x0, b / nu, x0))
    return np.minimum(np.maximum(t, lo), hi)


def _l2_pattern(a, b, nu, x0f, lo, hi, base, alpha):
    """The state of each coordinate at ν (n, 1) and the root of r on that state's segment:
    interior masks up and down (n, m), the fixed values, K (n,) and the root ν* (n,)."""
    up = (a > nu * x0f) & (a > nu * lo) & (a < nu * hi)
    down = ~up & (b < nu * x0f) & (b > nu * lo) & (b < nu * hi)
    const = _l2_prox(a, b, nu, x0f, lo, hi)
    K = base + np.where(up | down, 0.0, np.square(const)).sum(axis=1)
    Q = np.where(up, a * a, np.where(down, b * b, 0.0)).sum(axis=1)
    return up, down, const, K, np.sqrt(np.maximum(alpha**2 - Q, 0.0) / K)


def _l2_inner(mu, wf, x0f, lo, hi, base, alpha, guess=None):
    """Exact minimiser of α‖x̃‖₂ − w·x + μ‖x − x₀‖₁ over the box, for every row.

    μ (n,), w and x₀ (n, m), lo and hi (m,) or (n, m), base (n,) = 1 + Σ fixed x². With
    ν = α/‖x̃‖₂ the minimiser is the separable prox of :func:`_l2_prox`; ν solves
    r(ν) = ν²(base + ‖x(ν)‖²) − α² = 0, r increasing (the inner problem is a partial
    minimum of a jointly convex function of x and ‖x̃‖). Between the breakpoints where a
    coordinate changes state r is ν²K + Q, so the root is sqrt((α² − Q)/K) on the segment
    where r changes sign. ``guess`` (n,): a ν whose segment's root is tried first, and
    kept where the state at that root is the state it came from (then it is the root);
    the other rows scan every breakpoint. Returns x (n, m), ν (n,), the interior masks up
    and down (n, m) and K (n,).
    """
    a, b = wf - mu[:, None], wf + mu[:, None]
    if guess is not None:
        up, down, const, K, nu = _l2_pattern(a, b, guess[:, None], x0f, lo, hi, base, alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            up2, down2, const2, _, _ = _l2_pattern(a, b, nu[:, None], x0f, lo, hi, base, alpha)
        same = ((up == up2) & (down == down2) & ((up | down) | (const == const2))).all(axis=1)
        same &= nu > 0.0
        redo = np.flatnonzero(~same)
        if redo.size:
            lo_r, hi_r = (lo[redo], hi[redo]) if lo.ndim == 2 else (lo, hi)
            sub = _l2_inner(mu[redo], wf[redo], x0f[redo], lo_r, hi_r, base[redo], alpha)
            up[redo], down[redo], K[redo], nu[redo] = sub[2], sub[3], sub[4], sub[1]
            const[redo] = sub[0]
        x = np.where(up, a / nu[:, None], np.where(down, b / nu[:, None], const))
        return np.minimum(np.maximum(x, lo), hi), nu, up, down, K
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.concatenate([a / x0f, a / hi, a / lo, b / x0f, b / hi, b / lo], axis=1)
        cand = np.where(np.isfinite(cand) & (cand > 0.0), cand, np.nan)
        nu = cand[:, :, None]
        lo_c, hi_c = (lo[:, None], hi[:, None]) if lo.ndim == 2 else (lo, hi)
        xc = _l2_prox(a[:, None], b[:, None], nu, x0f[:, None], lo_c, hi_c)
        r = nu[:, :, 0] ** 2 * (base[:, None] + np.square(xc).sum(axis=2)) - alpha**2
    below, above = r < 0.0, r >= 0.0
    nu_lo = np.max(np.where(below, cand, 0.0), axis=1, initial=0.0)
    nu_hi = np.min(np.where(above, cand, np.inf), axis=1, initial=np.inf)
    # the state of each coordinate on the segment (nu_lo, nu_hi): constant there
    mid = np.where(np.isinf(nu_hi), 2.0 * nu_lo + 1.0, 0.5 * (nu_lo + nu_hi))[:, None]
    up, down, const, K, nu = _l2_pattern(a, b, mid, x0f, lo, hi, base, alpha)
    x = np.where(up, a / nu[:, None], np.where(down, b / nu[:, None], const))
    return np.minimum(np.maximum(x, lo), hi), nu, up, down, K


def robust_l2_batch(
    X0: np.ndarray,
    w: np.ndarray,
    b,
    alpha: float,
    lam: float,
    lower: np.ndarray,
    upper: np.ndarray,
    immutable: np.ndarray | None = None,
    max_iter: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """The optimum of :func:`robust_lp` for p = 2 at every row of X0 (n, z) at once.

    ``w`` (z,) or (n, z), ``b`` scalar or (n,); finite bounds (z,) or (n, z) and α > 0
    (else use :func:`robust_lp`). The optimum is the minimiser of the linearised price
    −s(x) + μ‖x − x₀‖₁ (s the worst-case logit) at μ = λ / σ(−s(x)): with
    u = log(μ/λ − 1), F(u) = u − s(x(u)) is increasing with slope >= 1 (s falls as μ
    grows) and its root is found inside a bracket [s(x₀), an upper bound of s] by Newton's
    method where some coordinate is interior, by a jump to the root or to the end of the
    stretch where none is (x is constant there, F has slope 1), and by bisection where a
    step leaves the bracket or stalls; each x(u) is exact (:func:`_l2_inner`). Started at
    the root of the limit α -> 0. A row is done when the step is rounding and |F| <= 1e-9.
    Returns X (n, z) and ok (n,): False where the search did not converge (those rows
    are x₀; :class:`RobustPolicy` sends them to SLSQP).
    """
    alpha, lam = check_alpha(alpha), check_lam(lam)
    X0 = np.atleast_2d(np.asarray(X0, dtype=float))
    n, z = X0.shape
    lo, hi, fixed = _box(z, lower, upper, immutable)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and alpha > 0):
        raise ConfigError(
            problem(
                "robust_l2_batch",
                "an unbounded box or alpha = 0",
                "a finite box and alpha > 0 (else robust_lp)",
            )
        )
    X0 = np.clip(X0, lo, hi)
    W = np.array(np.broadcast_to(np.asarray(w, dtype=float), (n, z)))
    B = np.array(np.broadcast_to(np.asarray(b, dtype=float), (n,)))
    check_weights(W, B)
    free = ~fixed
    X = X0.copy()
    if n == 0 or not free.any():
        return X, np.ones(n, bool)
    x0f, wf, lof, hif = X0[:, free], W[:, free], lo[..., free], hi[..., free]
    per_row = lof.ndim == 2  # one box per row: shrunk with the rows still searching
    c = B + np.add.reduce(W[:, fixed] * X0[:, fixed], axis=1)
    base = 1.0 + np.add.reduce(np.square(X0[:, fixed]), axis=1)

    def logit(xf, wf, c, base):
        return np.add.reduce(wf * xf, axis=1) + c - alpha * np.sqrt(base + (xf * xf).sum(1))

    u_lo = logit(x0f, wf, c, base)
    u_hi = c + np.maximum(wf * lof, wf * hif).sum(axis=1) - alpha * np.sqrt(base)
    # for μ above max |w_i| + α|x₀_i| no coordinate moves (ν <= α): x = x₀ there
    mu_max = (np.abs(wf) + alpha * np.abs(x0f)).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        u_hi = np.minimum(u_hi, np.where(mu_max > lam, np.log(mu_max / lam - 1.0), -np.inf))
    u_hi = np.maximum(u_hi, u_lo)
    # start: the root of the limit α -> 0 (with the robust logit at its corners), where
    # the features move to their bounds in the order of |w| while the next one pays
    order = np.argsort(-np.abs(wf), axis=1, kind="stable")
    w_s = np.take_along_axis(wf, order, axis=1)
    x0_s = np.take_along_axis(x0f, order, axis=1)
    if per_row:
        t_s = np.where(
            w_s > 0,
            np.take_along_axis(hif, order, axis=1),
            np.take_along_axis(lof, order, axis=1),
        )
    else:
        t_s = np.where(w_s > 0, hif[order], lof[order])
    gain = np.cumsum(w_s * (t_s - x0_s), axis=1)
    sq = np.cumsum(t_s * t_s - x0_s * x0_s, axis=1)
    norm0 = base + (x0f * x0f).sum(axis=1)
    S = np.concatenate(
        [
            u_lo[:, None],
            (c + (wf * x0f).sum(axis=1))[:, None]
            + gain
            - alpha * np.sqrt(np.maximum(norm0[:, None] + sq, base[:, None])),
        ],
        axis=1,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        U = np.where(np.abs(w_s) > lam, np.log(np.abs(w_s) / lam - 1.0), -np.inf)
    j = (S[:, :-1] < U).sum(axis=1)
    U_j = np.where(
        j > 0, np.take_along_axis(U, np.maximum(j - 1, 0)[:, None], axis=1)[:, 0], np.inf
    )
    u = np.clip(np.minimum(np.take_along_axis(S, j[:, None], axis=1)[:, 0], U_j), u_lo, u_hi)
    widths = (np.full(n, np.inf), np.full(n, np.inf))
    ok = np.zeros(n, bool)
    X_free = x0f.copy()
    rows = np.arange(n)  # the rows still searching; the others are dropped once done
    nu = None  # the last ν: the next inner solve tries its segment first
    for _ in range(max_iter):
        mu = lam * (1.0 + np.exp(u))
        xf, nu, up, down, K = _l2_inner(mu, wf, x0f, lof, hif, base, alpha, nu)
        F = u - logit(xf, wf, c, base)
        # dF/du = 1 − ds/dμ · dμ/du on this pattern of interior coordinates (ds/dμ <= 0)
        sig = np.where(up, -1.0, np.where(down, 1.0, 0.0))
        ci = np.where(up, wf - mu[:, None], wf + mu[:, None]) * (up | down)
        with np.errstate(divide="ignore", invalid="ignore"):  # ν = 0: NaN, then bisection
            d_nu = -(sig * ci).sum(axis=1) / (nu * K)
            P = (wf * ci).sum(axis=1) - alpha**2
            ds = (wf * sig).sum(axis=1) / nu - P / nu**2 * d_nu
            dF = 1.0 - ds * (mu - lam)
        # F' >= 1 everywhere: F(u) < 0 puts the root in (u, u − F], F(u) > 0 in [u − F, u)
        neg, pos = F < 0.0, F > 0.0
        u_lo = np.where(neg, u, np.where(pos, np.maximum(u_lo, u - F), u_lo))
        u_hi = np.where(pos, u, np.where(neg, np.minimum(u_hi, u - F), u_hi))
        # no interior coordinate: x and ν stay put while μ stays in the flat's range, where
        # F = u − s has slope 1; the root is there or beyond the flat's far end, which is
        # where to look next. A coordinate at x₀ starts to move when μ falls below
        # w − ν·x₀ (up, if it can) or ν·x₀ − w (down); one moved up to its upper bound
        # leaves it when μ rises above w − ν·hi, one moved down to lo above ν·lo − w
        flat = ~(up | down).any(axis=1)
        step = u - F / dF
        if flat.any():  # (most steps are on a ramp: skipped)
            nu_c = nu[:, None]
            at_x0 = xf == x0f
            lower_bp = np.maximum(
                np.where(at_x0 & (x0f < hif), wf - nu_c * x0f, -np.inf),
                np.where(at_x0 & (x0f > lof), nu_c * x0f - wf, -np.inf),
            )
            upper_bp = np.where(
                ~at_x0 & (xf == hif), wf - nu_c * hif, np.where(~at_x0, nu_c * lof - wf, np.inf)
            )
            m_a = lower_bp.max(axis=1)
            m_b = upper_bp.min(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                u_a = np.where(m_a > lam, np.log(m_a / lam - 1.0), -np.inf)
                u_b = np.log(m_b / lam - 1.0)
            s_flat = u - F
            jump = np.where(
                (s_flat >= u_a) & (s_flat <= u_b),
                s_flat,
                np.where(neg, u_b + 1e-9 * (1.0 + np.abs(u_b)), u_a - 1e-9 * (1.0 + np.abs(u_a))),
            )
            u_lo = np.where(flat & neg, np.maximum(u_lo, np.minimum(u_b, u_hi)), u_lo)
            u_hi = np.where(flat & pos, np.minimum(u_hi, np.maximum(u_a, u_lo)), u_hi)
            step = np.where(flat, jump, step)
        width = u_hi - u_lo
        # Newton (or the jump) unless it leaves the bracket or the bracket shrank less
        # than half in two steps (a kink): then bisection
        newton = (step >= u_lo) & (step <= u_hi) & (flat | (width <= 0.5 * widths[0]))
        new = np.where(F == 0.0, u, np.where(newton, step, 0.5 * (u_lo + u_hi)))
        widths = (widths[1], width)
        # converged: the step is rounding and u solves F(u) = 0 (not a bracket's edge)
        done = (np.abs(new - u) <= 1e-13 * (1.0 + np.abs(u))) & (
            np.abs(F) <= 1e-9 * (1.0 + np.abs(u))
        )
        u = new
        if done.any():
            X_free[rows[done]] = xf[done]
            ok[rows[done]] = True
            keep = ~done
            if not keep.any():
                break
            rows, u, u_lo, u_hi, wf, x0f, c, base, nu = (
                a[keep] for a in (rows, u, u_lo, u_hi, wf, x0f, c, base, nu)
            )
            widths = (widths[0][keep], widths[1][keep])
            if per_row:
                lof, hif = lof[keep], hif[keep]
    X[:, free] = X_free
    return _snap(X, X0, lo, hi), ok


# -- Algorithm 1 (p = 1) ---------------------------------------------------------------
def _alg1_subproblem(k, s, x0, w, b, alpha, lam, lo, hi, fixed):
    """Best x against θ' = θ₀ − α·s·e_k among points where θ' is a worst model.

    k in [0, z) a feature (sign s = ±1), k = z the intercept (s = +1). θ' is worst at x
    exactly when s·x̃_k ≥ |x̃_j| for every j (|x̃_k| is the largest and has sign s). Returns
    (x (z,), J(x, θ')) or None when no point of the box qualifies or the solve failed.
    """
    z = x0.shape[0]
    wp, bp = w.copy(), b
    lo_k, hi_k = lo.copy(), hi.copy()
    if k == z:
        bp -= alpha
        T = 1.0  # every |x_j| <= 1
    else:
        wp[k] -= alpha * s
        T = None
    rows, rhs = [], []
    free = np.flatnonzero(~fixed)
    col = {j: i for i, j in enumerate(free)}
    if T is not None or (k < z and fixed[k]):
        # the largest coordinate is a constant: it bounds every free |x_j|
        if T is None:
            T = s * x0[k]
        if T < 1.0 or (np.abs(x0[fixed]) > T).any():
            return None
        lo_k, hi_k = np.maximum(lo_k, -T), np.minimum(hi_k, T)
    else:
        need = max(1.0, float(np.abs(x0[fixed]).max(initial=0.0)))
        ck = col[k]
        for j in free:
            if j == k:
                continue
            for sign in (1.0, -1.0):  # s·x_k ∓ x_j >= 0
                r = np.zeros(free.shape[0])
                r[ck], r[col[j]] = s, -sign
                rows.append(r)
                rhs.append(0.0)
        # s·x_k >= max(1, |fixed|) is a bound on x_k
        if s > 0:
            lo_k[k] = max(lo_k[k], need)
        else:
            hi_k[k] = min(hi_k[k], -need)
    if (lo_k > hi_k).any():
        return None
    # a feasible start: x₀ in the (narrowed) box, x_k pushed out to dominate the rest
    xs = np.clip(x0, lo_k, hi_k)
    if k < z and not fixed[k]:
        others = np.abs(np.delete(xs, k)).max(initial=0.0)
        xs[k] = np.clip(s * max(abs(xs[k]), others), lo_k[k], hi_k[k])
        T = s * xs[k]
        xs[free] = np.where(free == k, xs[free], np.clip(xs[free], -T, T))
        if not (np.clip(xs[free], lo_k[free], hi_k[free]) == xs[free]).all():
            return None  # the box leaves no room under |x_k|
    G = np.array(rows) if rows else np.zeros((0, free.shape[0]))
    _, c = _reduce(x0, wp, bp, fixed)
    prob = _Convex(wp[free], c, x0[free], lam, lo_k[free], hi_k[free], G=G, h=np.array(rhs))
    xf, ok = prob.solve(xs[free])
    if not ok:
        return None
    x = x0.copy()
    x[free] = xf
    J = float(softplus_neg(wp @ x + bp) + lam * np.abs(x - x0).sum())
    return x, J


def alg1(
    x0: np.ndarray,
    w: np.ndarray,
    b: float,
    alpha: float,
    lam: float,
    p: float = 1,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    immutable: np.ndarray | None = None,
) -> Solution:
    """Algorithm 1 of the paper for p = 1: the cheapest of the 2z + 1 subproblems of Θ±
    (±α on each weight, −α on the intercept; +α there never lowers the logit since
    x̃_{z+1} = 1). Exact for p = 1 only (spec §4.2): other p is a :class:`ConfigError`.
    ``ok`` is False when no subproblem was solved (then ``x`` is x₀).
    """
    if check_p(p) != 1.0:
        raise ConfigError(
            problem("p", p, "1 (Algorithm 1 is exact only for p = 1; use robust_lp for other p)")
        )
    x0, w, b, alpha, lam, lo, hi, fixed = _prepare(x0, w, b, alpha, lam, lower, upper, immutable)
    best, best_J = None, math.inf
    for k, s in alg1_models(x0.shape[0]):
        sub = _alg1_subproblem(k, s, x0, w, b, alpha, lam, lo, hi, fixed)
        if sub is not None and sub[1] < best_J:
            best, best_J = sub[0], sub[1]
    ok = best is not None
    x = _snap(best if ok else x0.copy(), x0, lo, hi)
    return Solution(x, float(price(x[None], x0[None], w, b, alpha, lam, 1.0)[0]), ok)


def alg1_models(z: int) -> list[tuple[int, float]]:
    """The 2z + 1 models of Θ± as (coordinate, sign): θ' = θ₀ − α·sign·e_coordinate,
    coordinate z being the intercept."""
    return [(k, s) for k in range(z) for s in (1.0, -1.0)] + [(z, 1.0)]


# -- Algorithm 2 (p = inf) -------------------------------------------------------------
def alg2(
    x0: np.ndarray,
    w: np.ndarray,
    b: float,
    alpha: float,
    lam: float,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    immutable: np.ndarray | None = None,
) -> Solution:
    """Algorithm 2 (p = inf), greedy, with the fix of spec §4.3; always terminates.

    Against the worst model θ' = θ₀ − α·sgn(x̃) the logit gains |θ'_i| per unit cost on
    feature i moving in the direction sgn(θ'_i); that rate drops to |w_i| − α once x_i
    crosses 0 (the adversary's sign flips). Rates only fall as a feature moves, so the
    greedy takes the best active feature (a mask, never zero-and-retry) as far as it pays:
    up to the logit where σ(−s)·rate = λ (then it stops), or to 0 (new rate, or dropped
    when |w_i| <= α), or to its bound (dropped). A feature at x_i = 0 starts with the rate
    of a move in sgn(w_i), |w_i| − α, or is dropped (§4.3: the printed algorithm loops
    there). It also stops when the best rate is <= λ, and after 10·z passes (a guard).
    """
    x0, w, b, alpha, lam, lo, hi, fixed = _prepare(x0, w, b, alpha, lam, lower, upper, immutable)
    z = x0.shape[0]
    x = x0.copy()
    sgn0 = np.sign(x0)
    # adversary's weights at x0; at x_i = 0 the weight of a move in direction sgn(w_i)
    theta = np.where(sgn0 != 0, w - alpha * sgn0, w - alpha * np.sign(w))
    active = ~fixed & ~((sgn0 == 0) & (np.abs(w) <= alpha))
    s = float(np.add.reduce(theta * x) + b - alpha)
    for _ in range(ALG2_PASSES * max(z, 1)):
        rates = np.where(active, np.abs(theta), -np.inf)
        i = int(np.argmax(rates))
        rate = rates[i]
        if not rate > lam:  # also: nothing active
            break
        target = math.log(rate / lam - 1.0)  # σ(−s)·rate = λ
        if s >= target:  # Δ = 0
            break
        d = 1.0 if theta[i] > 0 else -1.0
        step = (target - s) / rate
        room = hi[i] - x[i] if d > 0 else x[i] - lo[i]
        to_zero = abs(x[i]) if x[i] * d < 0 else math.inf
        if step < min(room, to_zero):  # interior optimum: done
            x[i] += d * step
            s = target
            break
        if to_zero <= room:  # reach 0; past it the adversary's sign flips
            s += rate * to_zero
            x[i] = 0.0
            theta[i] = w[i] - alpha * d
            if not d * theta[i] > 0:  # |w_i| <= α or w_i points the other way
                active[i] = False
        else:  # the bound stops it
            s += rate * room
            x[i] = hi[i] if d > 0 else lo[i]
            active[i] = False
    x = _snap(x, x0, lo, hi)
    return Solution(x, float(price(x[None], x0[None], w, b, alpha, lam, math.inf)[0]), True)


def alg2_rows(
    X0: np.ndarray,
    w: np.ndarray,
    b,
    alpha: float,
    lam: float,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    immutable: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`alg2`'s points for every row of X0 (n, z) at once, bit for bit: the rows run
    its passes side by side, each with the same operations on the same numbers (the
    logarithm through ``math.log``, as there). ``w`` (z,) or (n, z), ``b`` scalar or (n,);
    bounds (z,) or (n, z). Returns X (n, z)."""
    X0 = np.atleast_2d(np.asarray(X0, dtype=float))
    n, z = X0.shape
    alpha, lam = check_alpha(alpha), check_lam(lam)
    W = np.array(np.broadcast_to(np.asarray(w, dtype=float), (n, z)))
    B = np.array(np.broadcast_to(np.asarray(b, dtype=float), (n,)))
    check_weights(W, B)
    lo, hi, fixed = _box(z, lower, upper, immutable)
    if not np.isfinite(X0).all():
        raise ConfigError(problem("x0", X0.tolist(), "finite numbers"))
    X0 = np.clip(X0, lo, hi)
    X = X0.copy()
    sgn0 = np.sign(X0)
    theta = np.where(sgn0 != 0, W - alpha * sgn0, W - alpha * np.sign(W))
    active = ~fixed & ~((sgn0 == 0) & (np.abs(W) <= alpha))
    s = np.add.reduce(theta * X, axis=1) + B - alpha
    run = np.arange(n)
    for _ in range(ALG2_PASSES * max(z, 1)):
        if run.size == 0:
            break
        rates = np.where(active[run], np.abs(theta[run]), -np.inf)
        i = np.argmax(rates, axis=1)
        rate = rates[np.arange(run.size), i]
        go = rate > lam
        run, i, rate = run[go], i[go], rate[go]
        target = np.array([math.log(v) for v in (rate / lam - 1.0).tolist()])
        go = ~(s[run] >= target)
        run, i, rate, target = run[go], i[go], rate[go], target[go]
        if run.size == 0:
            break
        th, xi = theta[run, i], X[run, i]
        d = np.where(th > 0, 1.0, -1.0)
        step = (target - s[run]) / rate
        lo_i, hi_i = (lo[run, i], hi[run, i]) if lo.ndim == 2 else (lo[i], hi[i])
        room = np.where(d > 0, hi_i - xi, xi - lo_i)
        to_zero = np.where(xi * d < 0, np.abs(xi), np.inf)
        inner = step < np.minimum(room, to_zero)
        zero = ~inner & (to_zero <= room)
        bound = ~inner & ~zero
        X[run, i] = np.where(inner, xi + d * step, np.where(zero, 0.0, np.where(d > 0, hi_i, lo_i)))
        s[run] = np.where(inner, target, s[run] + rate * np.where(zero, to_zero, room))
        th_new = np.where(zero, W[run, i] - alpha * d, th)
        theta[run, i] = th_new
        active[run, i] = ~(bound | (zero & ~(d * th_new > 0)))
        run = run[~inner]
    return _snap(X, X0, lo, hi)


# -- ROAR ------------------------------------------------------------------------------
def roar(
    X0: np.ndarray,
    w: np.ndarray,
    b,
    alpha: float,
    lam: float,
    p: float,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    immutable: np.ndarray | None = None,
    lr: float = ROAR_LR,
    tol: float = ROAR_TOL,
    max_steps: int = ROAR_MAX_STEPS,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """ROAR for rows X0 (n, z): Adam from x₀ on ℓ(θ_adv(x)·x̃) + λ‖x − x₀‖₁ (spec §2).

    θ_adv is the worst model of the current point in closed form (:func:`worst_model`,
    sgn 0 := +1 as in ROAR), recomputed every step and held fixed for the gradient; the
    L1 adversary subtracts α·sgn(x̃_k) (spec §4.4). A row stops once |ΔJ| <= ``tol``
    between successive steps, or after ``max_steps`` (ours). Bounds are kept by clipping
    after each step (projected Adam); immutable features get no gradient. ``w`` is (z,)
    or (n, z), ``b`` a scalar or (n,), bounds (z,) or (n, z). Returns X (n, z) and the
    steps taken (n,).
    The steps run compiled (:mod:`policies.robust.kernels`) for p = 1 and inf; ``compiled``
    False runs them in NumPy, the reference, with the same bits.
    """
    p = check_p(p)
    alpha, lam = check_alpha(alpha), check_lam(lam)
    X0 = np.atleast_2d(np.asarray(X0, dtype=float))
    n, z = X0.shape
    check_weights(w, b)
    lo, hi, fixed = _box(z, lower, upper, immutable)
    X0 = np.clip(X0, lo, hi)
    free = (~fixed).astype(float)
    masked = bool(fixed.any())
    X = X0.copy()
    steps = np.zeros(n, dtype=np.int64)
    b1, b2, eps = ROAR_ADAM
    alpha, lam, lr, eps = float(alpha), float(lam), float(lr), float(eps)
    # the live rows' state is kept compact and shrunk only when rows stop. The stopping
    # test needs J at every step: it is evaluated once per block of steps over the block's
    # stored points and logits (the same operations on the same numbers, so the same
    # bits); a row that stopped inside a block takes the point it had there, and its
    # extra steps in the block are thrown away
    live = np.arange(n)
    X0l = X0.copy()
    state = {
        "W": np.array(np.broadcast_to(np.asarray(w, dtype=float), (n, z))),
        "B": np.array(np.broadcast_to(np.asarray(b, dtype=float), (n,))),
        "lo": np.array(np.broadcast_to(lo, (n, z))),
        "hi": np.array(np.broadcast_to(hi, (n, z))),
    }
    nonneg = bool((lo >= 0).all())
    # the kernel has the α = 0, L1 and L∞ adversaries; p = 2 (not a ROAR policy) runs in NumPy
    compiled = compiled and (alpha == 0 or p == 1.0 or math.isinf(p))
    if compiled:
        from policies.robust import kernels

        mode = kernels.NONE if alpha == 0 else kernels.LINF if math.isinf(p) else kernels.L1
        block_steps = ROAR_BLOCK_COMPILED
    else:
        steps_numpy = _roar_steps(state, alpha, p, z, nonneg, lam, lr, masked, free)
        block_steps = ROAR_BLOCK
    MV = np.zeros((2, n, z))  # Adam's ml and vl
    prev = np.full(n, np.inf)
    Xl = X0.copy()
    t = 0
    while t < max_steps and live.size:
        k = min(block_steps, max_steps - t)
        m = live.size
        Xh = np.empty((k + 1, m, z))
        Xh[0] = Xl
        NSh = np.empty((k, m))  # −s per step: expit(−s) needs it, J takes s = −(−s)
        t0 = t
        if compiled:
            ts = range(t0 + 1, t0 + k + 1)
            C1 = np.array([1 - b1**u for u in ts])
            C2 = np.array([1 - b2**u for u in ts])
            kernels.roar_block(
                Xh,
                NSh,
                X0l,
                state["W"],
                state["B"],
                state["lo"],
                state["hi"],
                free,
                masked,
                mode,
                nonneg,
                alpha,
                lam,
                lr,
                eps,
                b1,
                b2,
                C1,
                C2,
                MV,
            )
        else:
            steps_numpy(Xh, NSh, X0l, MV, t0, k)
        t = t0 + k
        Xl = Xh[k]
        J = softplus_neg(-NSh) + lam * np.add.reduce(np.abs(Xh[:k] - X0l), axis=2)
        before = np.concatenate([prev[None], J[:-1]])
        done = np.abs(J - before) <= tol
        stop = done.any(axis=0)
        prev = J[-1]
        if stop.any():
            first = done.argmax(axis=0)[stop]
            rows = np.flatnonzero(stop)
            X[live[rows]] = Xh[first + 1, rows]
            steps[live[rows]] = t0 + first + 1
            keep = ~stop
            live, Xl, X0l, prev = (a[keep] for a in (live, Xl, X0l, prev))
            MV = np.ascontiguousarray(MV[:, keep])
            for key in state:
                state[key] = state[key][keep]
    X[live] = Xl
    steps[live] = t
    return X, steps


def _roar_steps(
    state: dict,
    alpha: float,
    p: float,
    z: int,
    nonneg: bool,
    lam: float,
    lr: float,
    masked: bool,
    free: np.ndarray,
):
    """ROAR's Adam steps in NumPy: the reference for :func:`kernels.roar_block`.

    Returns ``run(Xh, NSh, X0l, MV, t0, k)``, which takes k steps from Xh[0] (m, z) as
    ``roar_block`` does (same arguments, same bits). NumPy's cost here is per call, and
    more for broadcasting or a Python scalar: the loop writes in place (out=) into
    full-size arrays, constants included.
    """
    b1, b2, eps = ROAR_ADAM
    adversary = _roar_worst(state, alpha, p, z, nonneg)
    cache: dict = {}

    def run(Xh, NSh, X0l, MV, t0, k):
        m = X0l.shape[0]
        if cache.get("m") != m:
            beta, beta_c = np.empty((2, m, z)), np.empty((2, m, z))
            beta[0], beta[1], beta_c[0], beta_c[1] = b1, b2, 1 - b1, 1 - b2
            cache.update(
                m=m, beta=beta, beta_c=beta_c, full=[np.full((m, z), c) for c in (lam, lr, eps)]
            )
        L, LR, EPS = cache["full"]
        BETA, BETA_C = cache["beta"], cache["beta_c"]
        LO, HI = state["lo"], state["hi"]
        prod, moved, tmp, E = np.empty((m, z)), np.empty((m, z)), np.empty((m, z)), np.empty((m, 1))
        G, T, H, corr = (np.empty((2, m, z)) for _ in range(4))
        # views made once per block, not per step
        grad, grad_copy, T_v, num, den, c1, c2, e = (
            G[0],
            G[1],
            T[1],
            H[0],
            H[1],
            corr[0],
            corr[1],
            E[:, 0],
        )
        t = t0
        for j in range(k):
            t += 1
            Xl = Xh[j]
            wa, nba = adversary(Xl)
            np.multiply(wa, Xl, out=prod)
            # −(Σ wa·x + ba) as (−ba) − Σ wa·x: the same bits
            ns = np.subtract(nba, np.add.reduce(prod, axis=1), out=NSh[j])
            np.subtract(Xl, X0l, out=moved)
            # −σ(−s)·wa + λ·sgn(x − x₀), as λ·sgn − σ(−s)·wa: the same bits
            np.multiply(L, np.sign(moved, out=grad), out=grad)
            expit(ns, out=e)
            np.multiply(E, wa, out=tmp)
            np.subtract(grad, tmp, out=grad)
            if masked:  # × 1.0 changes no bit: skipped when every feature is free
                grad *= free
            # ml = b1·ml + (1 − b1)·g and vl = b2·vl + ((1 − b2)·g)·g in four calls
            np.copyto(grad_copy, grad)
            np.multiply(BETA_C, G, out=T)
            T_v *= grad
            MV *= BETA
            MV += T
            # lr·(ml / (1 − b1ᵗ)) / (sqrt(vl / (1 − b2ᵗ)) + eps)
            c1.fill(1 - b1**t)
            c2.fill(1 - b2**t)
            np.divide(MV, corr, out=H)
            np.multiply(LR, num, out=num)
            np.add(np.sqrt(den, out=den), EPS, out=den)
            np.divide(num, den, out=num)
            # np.clip's bits for finite values, without its dispatch cost
            out = Xh[j + 1]
            np.subtract(Xl, num, out=out)
            np.maximum(out, LO, out=out)
            np.minimum(out, HI, out=out)

    return run


def _roar_worst(state: dict, alpha: float, p: float, z: int, nonneg: bool):
    """ROAR's worst model as a function of the live rows X (m, z) -> (weights (m, z),
    minus the intercepts (m,)), reading the live rows' W and B from ``state`` (shrunk
    with them).

    The bits of :func:`_roar_adversary`: W − α·sgn is W − α or W + α, precomputed per
    row (``state`` keeps them); in a box with lower >= 0, sgn = +1 throughout (sgn 0 := +1).
    """
    if alpha == 0:
        state["nB"] = -state["B"]
        return lambda X: (state["W"], state["nB"])
    state["Wp"], state["Wm"] = state["W"] - alpha * 1.0, state["W"] - alpha * -1.0
    state["nBm"] = -(state["B"] - alpha * 1.0)
    if math.isinf(p):
        if nonneg:
            return lambda X: (state["Wp"], state["nBm"])
        return lambda X: (np.where(X < 0, state["Wm"], state["Wp"]), state["nBm"])
    if p == 1.0:
        # the largest |x̃_k|, the intercept's 1 last so that a feature wins a tie; row k of
        # `eye` is α on feature k (zeros for the intercept), of `eye_b` α on the intercept
        eye = np.vstack([alpha * 1.0 * np.eye(z), np.zeros((1, z))])
        eye_b = np.zeros(z + 1)
        eye_b[z] = alpha * 1.0
        if nonneg:  # sgn = +1: W − α·1 at k, W − 0 (the same bits as W) elsewhere
            state["WK"] = state["W"][:, None, :] - eye[None]  # (n, z + 1, z): by k
            state["nBK"] = eye_b[None] - state["B"][:, None]  # −(B − e) as e − B
        buf = {}

        def l1(X):
            m = X.shape[0]
            if buf.get("m") != m:
                buf["m"], buf["A"], buf["rows"] = m, np.ones((m, z + 1)), np.arange(m)
            A = buf["A"]
            np.abs(X, out=A[:, :z])
            k = A.argmax(axis=1)
            if nonneg:
                return state["WK"][buf["rows"], k], state["nBK"][buf["rows"], k]
            hit = eye[k] != 0.0
            moved = np.where(X < 0, state["Wm"], state["Wp"])
            return np.where(hit, moved, state["W"]), eye_b[k] - state["B"]

        return l1

    def other(X):
        wa, ba = _roar_adversary(X, state["W"], state["B"], alpha, p)
        return wa, -ba

    return other


def _roar_adversary(X: np.ndarray, W: np.ndarray, B: np.ndarray, alpha: float, p: float):
    """ROAR's worst model at rows X (n, z) (:func:`worst_model` with sgn 0 := +1), split
    as weights (n, z) and intercepts (n,), with the same arithmetic for p = 1 and inf."""
    if alpha == 0:
        return W, B
    sign = np.sign(X)
    sign[sign == 0] = 1.0
    if math.isinf(p):  # every coordinate moves by α, the intercept's too (x̃ = 1 there)
        return W - alpha * sign, B - alpha * 1.0
    if p == 1.0:  # the largest |x̃_k| takes it all; the intercept (|1|) loses ties
        A = np.abs(X)
        k = np.argmax(A, axis=1)
        rows = np.arange(X.shape[0])
        on_feature = A[rows, k] >= 1.0
        wa = W.copy()
        wa[rows[on_feature], k[on_feature]] -= alpha * sign[rows[on_feature], k[on_feature]]
        return wa, np.where(on_feature, B, B - alpha * 1.0)
    from policies.robust.price import worst_model

    theta = worst_model(X, W, B, alpha, p, zero_sign=1.0)
    return theta[:, :-1], theta[:, -1]


# -- one-hot groups (issue 53, item 1) ---------------------------------------------------
#: :func:`switch_search` tries every combination of categories up to this many (one solve
#: each); past it, one group at a time
ONEHOT_PROFILES = 64
#: rounds of the one-group-at-a-time search (it stops at a round where no row improves)
ONEHOT_ROUNDS = 3


def switch_search(X, onehot, open_groups, solve, objective, proposals=None):
    """Counterfactuals (n, z) of valid rows X (n, z) where a switch of a one-hot group is one
    move: the cheapest by ``objective`` of staying and of each choice of categories tried.

    A choice sets each group's indicators to one category (an allowed switch from the
    row's, or its own) and solves the numeric features from there with every indicator held:
    ``solve(X_start (r, z), rows (r,))`` -> (X_cf (r, z), fallbacks); ``objective(X_cf,
    rows)`` -> (r,) the price with each switch at its cost. Groups not in ``open_groups``
    keep their category. Tried: staying, then every combination of the open groups'
    categories when there are at most :data:`ONEHOT_PROFILES`, else each category of one
    group at a time from the best so far (rounds until none improves, at most
    :data:`ONEHOT_ROUNDS`); ``proposals``, a list of (n, G) int categories, instead tries
    those choices per row (ROAR's: its snapped relaxation, the greedy's choice). A choice
    replaces the best only where strictly cheaper, so ties stay. Returns X_cf (n, z), the
    fallbacks summed over the solves and the categories chosen (n, G).
    """
    n = X.shape[0]
    groups = onehot.groups
    A = np.stack([onehot.category(X, g) for g in range(len(groups))], axis=1)
    every = np.arange(n)
    best, fallbacks = solve(X, every)
    best = np.array(best, dtype=float)
    best_J = np.asarray(objective(best, every), dtype=float).copy()
    current = A.copy()  # the best choice per row so far

    def attempt(C, rows):
        nonlocal fallbacks
        if rows.size == 0:
            return
        start = np.array(X[rows], dtype=float)
        for g in range(len(groups)):
            onehot.assign(start, g, C[rows, g])
        X_cf, more = solve(start, rows)
        fallbacks += more
        J = np.asarray(objective(X_cf, rows), dtype=float)
        better = J < best_J[rows]
        won = rows[better]
        best[won], best_J[won], current[won] = X_cf[better], J[better], C[won]

    def allowed(C):  # (n,) bool: every group's switch allowed
        ok = np.ones(n, dtype=bool)
        for g in range(len(groups)):
            ok &= np.isfinite(onehot.costs[g][A[:, g], C[:, g]])
        return ok

    if proposals is not None:
        closed = [g for g in range(len(groups)) if g not in open_groups]
        tried = [A]
        for C in proposals:
            C = np.array(C, dtype=np.intp)
            C[:, closed] = A[:, closed]  # a held group keeps its category
            new = np.logical_and.reduce([(C != T).any(axis=1) for T in tried])
            attempt(C, np.flatnonzero(allowed(C) & new))
            tried.append(C)
        return best, fallbacks, current
    sizes = [groups[g].shape[0] for g in open_groups]
    if math.prod(sizes) <= ONEHOT_PROFILES:
        for profile in itertools.product(*(range(m) for m in sizes)):
            C = A.copy()
            C[:, open_groups] = profile
            attempt(C, np.flatnonzero(allowed(C) & (C != A).any(axis=1)))
        return best, fallbacks, current
    for _ in range(ONEHOT_ROUNDS):
        before = best_J.copy()
        for g in open_groups:
            for b in range(groups[g].shape[0]):
                C = current.copy()
                C[:, g] = b
                attempt(C, np.flatnonzero(allowed(C) & (current[:, g] != b)))
        if not (best_J < before).any():
            break
    return best, fallbacks, current


# -- linearisation ---------------------------------------------------------------------
def _scorer_logit(scorer, X: np.ndarray) -> np.ndarray:
    # scores of a non-linear model may be exactly 0 or 1: keep the logit finite
    return _logit(np.clip(scorer.score(X), 1e-12, 1.0 - 1e-12))


def linearise(scorer, X: np.ndarray, h: float = FD_STEP):
    """θ = (w, b) of the Scorer's logit at the rows X (n, z) (spec §2).

    A linear Scorer gives its exact ``weights`` (z,) and ``intercept``; any other is
    linearised at each row by central differences of its logit with step ``h`` (ours,
    deterministic, in place of LIME): w (n, z), b (n,) with w·x + b equal to the logit at
    x. NaN or infinite weights are a :class:`ConfigError`.
    """
    X = np.asarray(X, dtype=float)
    if getattr(scorer, "is_linear", False) and getattr(scorer, "weights", None) is not None:
        w = np.asarray(scorer.weights, dtype=float)
        b = float(scorer.intercept)
        check_weights(w, b)
        return w, b
    n, z = X.shape
    W = np.empty((n, z))
    for j in range(z):
        up, down = X.copy(), X.copy()
        up[:, j] += h
        down[:, j] -= h
        W[:, j] = (_scorer_logit(scorer, up) - _scorer_logit(scorer, down)) / (2.0 * h)
    B = _scorer_logit(scorer, X) - np.add.reduce(W * X, axis=1)
    check_weights(W, B)
    return W, B
