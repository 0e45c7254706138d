"""RBR: Robust Bayesian Recourse (Nguyen, Bui, Nguyen, Yue & Nguyen, UAI 2022).

The recourse x' lowers a worst-case posterior odds ratio: an optimistic (smallest)
negative log-likelihood of the accepted samples near x' minus a pessimistic one of the
rejected samples, each over a Gelbrich/Wasserstein ambiguity set around the Gaussian
(bandwidth ``sigma``) kernel at each sample. The inner worst cases reduce to two scalars
per sample (the paper's Propositions/Theorems on the optimistic and pessimistic
likelihoods), solved by projected gradient; the outer problem by projected gradient on x'
inside an L1 ball around x. All rows of a tick are optimised together: arrays (q, S) with
q rows and S samples each.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from abm.interfaces import Feedback, FollowsModel, PolicyContext
from abm.validation import ConfigError


def _l2_ball(V: np.ndarray, radius: float) -> np.ndarray:
    """Scale each last-axis vector of V (..., 2) into the L2 ball of ``radius``."""
    n = np.linalg.norm(V, axis=-1, keepdims=True)
    return V * (radius / np.maximum(n, radius))


def optimistic_nll(c: np.ndarray, v: np.ndarray, sigma: float, p: int) -> np.ndarray:
    """Optimistic negative log-likelihood terms, c (...) distances, v (..., 2) duals."""
    d = v[..., 1] + sigma
    return np.log(d) + (c - v[..., 0]) ** 2 / (2 * d**2) + (p - 1) * np.log(sigma)


def pessimistic_ll(c: np.ndarray, u: np.ndarray, sigma: float, eps: float, p: int) -> np.ndarray:
    """Pessimistic log-likelihood terms (up to constants), c (...), u (..., 2)."""
    d = u[..., 1] + sigma
    f = np.sqrt(np.maximum(1e-6 + eps**2 - p * u[..., 0] ** 2 - u[..., 1] ** 2, 0.0) / (p - 1))
    return -np.log(d) - (c + np.sqrt(p) * u[..., 0]) ** 2 / (2 * d**2) - (p - 1) * np.log(f + sigma)


def solve_optimistic(c, sigma, eps, p, iters, v=None):
    """min over v in {v >= 0, ||v|| <= eps} of the optimistic terms, per entry of c (...)."""
    v = np.zeros(c.shape + (2,)) if v is None else v.copy()
    lr = 1.0 / np.sqrt(iters)
    for _ in range(iters):
        d = v[..., 1] + sigma
        r = c - v[..., 0]
        g = np.stack([-r / d**2, 1 / d - r**2 / d**3], axis=-1)
        v = _l2_ball(np.maximum(v - lr * g, 0.0), eps)
    return v


def solve_pessimistic(c, sigma, eps, p, iters, u=None):
    """min over u in {u >= 0, ||u|| <= eps / sqrt(p)} of the pessimistic terms, per entry."""
    u = np.zeros(c.shape + (2,)) if u is None else u.copy()
    lr, sp = 1.0 / np.sqrt(iters), np.sqrt(p)
    for _ in range(iters):
        d = u[..., 1] + sigma
        f = np.sqrt(
            np.maximum(1e-6 + eps**2 - p * u[..., 0] ** 2 - u[..., 1] ** 2, 1e-12) / (p - 1)
        )
        a = c + sp * u[..., 0]
        g0 = -sp * a / d**2 - p * u[..., 0] / (f * (f + sigma))
        g1 = -1 / d + a**2 / d**3 + u[..., 1] / (f * (f + sigma))
        u = _l2_ball(np.maximum(u - lr * np.stack([g0, g1], axis=-1), 0.0), eps / sp)
    return u


def _l1_ball(D: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Project each row of D (q, z) onto the L1 ball of its radius (q,) (sorting method)."""
    A = np.abs(D)
    inside = A.sum(axis=1) <= radius
    U = -np.sort(-A, axis=1)
    css = np.cumsum(U, axis=1)
    k = np.arange(1, D.shape[1] + 1)
    rho = ((U * k) > (css - radius[:, None])).sum(axis=1)
    theta = (css[np.arange(len(D)), np.maximum(rho, 1) - 1] - radius) / np.maximum(rho, 1)
    P = np.sign(D) * np.maximum(A - theta[:, None], 0.0)
    return np.where(inside[:, None], D, P)


class RBR(FollowsModel):
    """Robust Bayesian Recourse, batched over a tick's rejected rows.

    Per row x with goal g: (1) a boundary point x_b: over the ``n_candidates`` training
    applicants nearest in L1 that the model in force accepts at g and share x's immutable
    values, the first of 100 points on the segment from x that reaches g; the L1-closest
    such point. (2) ``num_samples`` points uniform in the L2 ball of ``perturb_radius``
    around x_b, split by M >= g into accepted and rejected. (3) From x_b, projected
    gradient steps (size 1/sqrt(1000)) on F(x') = sum optimistic NLL over the accepted
    minus sum pessimistic LL over the rejected (the inner duals re-solved each step,
    warm-started), inside the L1 ball of radius ||x_b - x||_1 + ``delta_plus`` around x,
    clipped to [lower, upper] with immutables fixed; stops at ``max_iter``, when the L1
    ball's edge is reached, or when F has not improved for 10 steps. The advice is the
    last iterate with M(x') >= g under the model in force (x_b at worst); a row with no
    candidate gets NaN.

    One-way features: candidates are only the applicants on the permitted side of x
    (an increase-only feature at least x_j, a decrease-only one at most x_j), so the
    segment to x_b keeps them, and the steps are clipped to the row's own box
    (``ctx.box``) instead of [lower, upper]; the clip pulls towards x, so the iterate
    stays in the L1 ball.
    """

    keeps_one_way = True

    def __init__(
        self,
        num_samples: Annotated[int, Field(ge=2, le=100_000)] = 200,
        perturb_radius: Annotated[float, Field(gt=0.0)] = 0.2,
        delta_plus: Annotated[float, Field(ge=0.0)] = 1.0,
        sigma: Annotated[float, Field(gt=0.0)] = 1.0,
        epsilon_op: Annotated[float, Field(ge=0.0)] = 0.5,
        epsilon_pe: Annotated[float, Field(ge=0.0)] = 1.0,
        max_iter: Annotated[int, Field(ge=1, le=100_000)] = 1000,
        inner_iter: Annotated[int, Field(ge=1, le=100_000)] = 50,
        n_candidates: Annotated[int, Field(ge=1, le=100_000)] = 1000,
    ) -> None:
        if not (isinstance(num_samples, int) and num_samples >= 2):
            raise ValueError(f"num_samples must be an integer >= 2, got {num_samples!r}")
        if not (perturb_radius > 0 and sigma > 0 and delta_plus >= 0):
            raise ValueError("perturb_radius and sigma must be > 0, delta_plus >= 0")
        if not (epsilon_op >= 0 and epsilon_pe >= 0):
            raise ValueError("epsilon_op and epsilon_pe must be >= 0")
        self.num_samples, self.perturb_radius = int(num_samples), float(perturb_radius)
        self.delta_plus, self.sigma = float(delta_plus), float(sigma)
        self.epsilon_op, self.epsilon_pe = float(epsilon_op), float(epsilon_pe)
        self.max_iter, self.inner_iter = int(max_iter), int(inner_iter)
        self.n_candidates = int(n_candidates)

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        if ctx.X_train is None or len(ctx.X_train) < 1:
            raise ConfigError("X_train = none; allowed: a world with training applicants")
        if ctx.n_features < 2:
            raise ConfigError(f"features = {ctx.n_features}; allowed: rbr needs >= 2")
        self.nodes = np.unique(np.asarray(ctx.X_train, dtype=float), axis=0)
        lo, hi = np.asarray(ctx.lower, dtype=float), np.asarray(ctx.upper, dtype=float)
        self.nodes = self.nodes[((self.nodes >= lo) & (self.nodes <= hi)).all(axis=1)]
        self.model_changed()

    def model_changed(self) -> None:
        self.node_score = np.asarray(self.ctx.decision_model.score(self.nodes), dtype=float)

    def _score(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.ctx.decision_model.score(X), dtype=float)

    def _boundary(self, x: np.ndarray, g: float) -> np.ndarray | None:
        imm = np.asarray(self.ctx.immutable, dtype=bool)
        if imm.any():
            # candidates carry the row's immutable values (re-scored), so every point on
            # the segment keeps them
            C = self.nodes.copy()
            C[:, imm] = x[imm]
            C = C[self._score(C) >= g]
        else:
            C = self.nodes[self.node_score >= g]
        if self.ctx.one_way:  # only applicants on x's permitted side of each one-way feature
            C = C[((C - x) * self.ctx.direction >= 0).all(axis=1)]
        if len(C) == 0:
            return None
        C = C[np.argsort(np.abs(C - x).sum(axis=1), kind="stable")[: self.n_candidates]]
        lam = np.linspace(0.0, 1.0, 100)
        P = x + lam[None, :, None] * (C - x)[:, None, :]  # (c, 100, z)
        hit = (self._score(P.reshape(-1, x.size)) >= g).reshape(len(C), 100)
        first = hit.argmax(axis=1)  # C itself is accepted, so every row has a hit
        B = P[np.arange(len(C)), first]
        return B[np.argmin(np.abs(B - x).sum(axis=1))]

    def _objective_grad(self, X, S, pos, sp):
        """F (q,) and dF/dX (q, z) at X (q, z), samples S (q, m, z), masks pos (q, m)."""
        p = X.shape[1]
        diff = X[:, None, :] - S
        c = np.maximum(np.linalg.norm(diff, axis=-1), 1e-12)
        self._v = solve_optimistic(c, self.sigma, self.epsilon_op, p, self.inner_iter, self._v)
        self._u = solve_pessimistic(c, self.sigma, self.epsilon_pe, p, self.inner_iter, self._u)
        op = optimistic_nll(c, self._v, self.sigma, p)
        pe = pessimistic_ll(c, self._u, self.sigma, self.epsilon_pe, p)
        # log worst-case odds of rejection: optimistic likelihood of the rejected samples
        # over pessimistic likelihood of the accepted ones (op is an NLL, pe a log-lik)
        # averaged over the samples (the authors sum): with their step 1/sqrt(1000) a
        # summed gradient overshoots to the L1 ball's edge in one step
        m = S.shape[1]
        F = (-np.where(~pos, op, 0.0).sum(1) - np.where(pos, pe, 0.0).sum(1)) / m
        dv = self._v[..., 1] + self.sigma
        du = self._u[..., 1] + self.sigma
        dop = (c - self._v[..., 0]) / dv**2
        dpe = -(c + sp * self._u[..., 0]) / du**2
        w = np.where(pos, -dpe, -dop) / c  # dF/dc per sample, over dc/dx's norm
        return F, (w[..., None] * diff).sum(axis=1) / m

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        goals = np.broadcast_to(np.asarray(goals, dtype=float), X.shape[:1])
        out = X.copy()
        need = np.flatnonzero(self._score(X) < goals)
        if need.size == 0:
            return out
        bs = [self._boundary(X[i], goals[i]) for i in need]
        has = np.array([b is not None for b in bs])
        out[need[~has]] = np.nan
        rows = need[has]
        if rows.size == 0:
            return out
        X0, g = X[rows], goals[rows]
        Xb = np.array([b for b in bs if b is not None])
        q, z = X0.shape
        m = self.num_samples
        # uniform in the L2 ball: direction ~ normal, radius ~ U^(1/z)
        V = rng.standard_normal((q, m, z))
        V /= np.linalg.norm(V, axis=-1, keepdims=True)
        V *= (rng.random((q, m)) ** (1.0 / z))[..., None] * self.perturb_radius
        S = Xb[:, None, :] + V
        pos = self._score(S.reshape(-1, z)).reshape(q, m) >= g[:, None]
        lo, hi = self.ctx.bounds(
            X0, np.asarray(self.ctx.lower, dtype=float), np.asarray(self.ctx.upper, dtype=float)
        )
        mut = np.asarray(self.ctx.mutable, dtype=float)
        radius = np.abs(Xb - X0).sum(axis=1) + self.delta_plus
        self._v = self._u = None
        x, best = Xb.copy(), Xb.copy()
        active = pos.any(axis=1) & (~pos).any(axis=1)  # both classes present (as the authors)
        best_F = np.full(q, np.inf)
        stable = np.zeros(q, dtype=int)
        step = 1.0 / np.sqrt(1e3)
        for _ in range(self.max_iter):
            if not active.any():
                break
            F, G = self._objective_grad(x, S, pos, np.sqrt(z))
            active &= np.abs(x - X0).sum(axis=1) < radius
            improved = best_F - F > 1e-10
            stable = np.where(improved, 0, stable + 1)
            best_F = np.minimum(best_F, F)
            active &= stable < 10
            nxt = X0 + _l1_ball(x - step * G * mut - X0, radius)
            nxt = np.clip(nxt, lo, hi)
            x = np.where(active[:, None], nxt, x)
            valid = active & (self._score(x) >= g)
            best = np.where(valid[:, None], x, best)
        out[rows] = best
        return out

    def observe(self, feedback: Feedback) -> None:
        pass
