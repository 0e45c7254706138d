"""PROBE: Wachter's generator plus a penalty on the recourse invalidation rate.

After Pawelczyk et al., "Probabilistically Robust Recourse" (ICLR 2023). If the person
implements x' + eps, eps ~ N(0, sigma2 I), the advice is invalidated when the score
falls below the goal. With f the model's logit and f_g = logit(g) the goal's logit,
the local linearisation of f at x' gives the invalidation rate (the paper's eq. 4,
with the decision threshold moved from 0.5 to the goal):

    IR(x') ~= Phi(-(f(x') - f_g) / (sigma ||∇f(x')||_2)),

exact for a linear logit. The objective (eq. 5, on Wachter's) is

    lam (M(x') - g')^2 + ||x' - x||_1 + mu max(0, IR(x') - r),

r the target rate. A row counts as reached only at M(x') >= g AND IR(x') <= r + eps;
rows short of either double their lam (the authors' loop likewise lowers the distance
weight until the target rate is met). Wachter's score term aims just above g, which
would hold x' on the goal against the hinge; here it aims at the score where the rate,
linearised at the factual x, equals r - eps (logit(g) + sigma ||∇f(x)|| Phi^-1(1 - r +
eps)), tol above it, so the two terms agree (for a linear logit the aim is exact); rows still short after max_iter get
NaN (unreached). Defaults from the authors' implementation (the PROBE recourse method
of CARLA, carla/recourse_methods/catalog/probe/library/probe.py, after
MartinPawelczyk/ProbabilisticallyRobustRecourse): sigma2 = noise_variance = 0.01,
r = invalidation_target = 0.45, eps = inval_target_eps = 0.005, and mu = 3 / 5 (their
hinge weight 3 over their distance weight lambda_param 5, our distance weight being 1).
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import Field
from scipy.special import expit, logit, ndtr, ndtri

from policies.baselines.wachter import Wachter

_S_CLAMP = 1e-12  # keeps logit(s) finite where a sigmoid saturates


class Probe(Wachter):
    """Wachter + mu * max(0, IR(x') - r), IR relative to the goal's logit; see module.

    The noise acts on the mutable features only (the world never moves the others), so
    ||∇f|| is taken over them; with one-hot groups, on the numeric ones (a switch is made
    whole), and advice is Wachter's cheapest valid candidate by cost + mu * hinge. For a
    non-linear model the hinge's gradient treats ||∇f(x')|| as locally constant (exact for
    a linear logit).
    """

    def __init__(
        self,
        lam: Annotated[float, Field(gt=0.0)] = 10.0,
        sigma2: Annotated[float, Field(gt=0.0, le=1e6)] = 0.01,
        target_rate: Annotated[float, Field(gt=0.0, lt=0.5)] = 0.45,
        rate_eps: Annotated[float, Field(ge=0.0, lt=0.5)] = 0.005,
        mu: Annotated[float, Field(ge=0.0, le=1e6)] = 0.6,
        tol: Annotated[float, Field(gt=0.0, lt=1.0)] = 1e-3,
        max_iter: Annotated[int, Field(ge=1, le=1_000_000)] = 1000,
        check: Annotated[int, Field(ge=1)] = 20,
        lr: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5,
        xtol: Annotated[float, Field(ge=0.0)] = 1e-7,
        min_iter: Annotated[int, Field(ge=0)] = 100,
    ) -> None:
        super().__init__(
            lam=lam, tol=tol, max_iter=max_iter, check=check, lr=lr, xtol=xtol, min_iter=min_iter
        )
        if not (np.isfinite(sigma2) and sigma2 > 0):
            raise ValueError(f"sigma2 must be a finite number > 0, got {sigma2!r}")
        if not 0 < target_rate < 0.5:
            raise ValueError(f"target_rate must be in (0, 0.5), got {target_rate!r}")
        if not 0 <= rate_eps < 0.5:
            raise ValueError(f"rate_eps must be in [0, 0.5), got {rate_eps!r}")
        if not (np.isfinite(mu) and mu >= 0):
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        self.sigma = math.sqrt(float(sigma2))
        self.target_rate, self.rate_eps, self.mu = float(target_rate), float(rate_eps), float(mu)

    def _margin(self, s, grad, g):
        """u = (f(x') - f_g) / (sigma ||∇f||) (n,), ∇f (n, z) and ||∇f|| (n,) from M (n,),
        ∂M/∂x (n, z) and goals g (n,)."""
        # np.clip's Python wrapper costs more than the two ufuncs (this runs every step)
        s = np.minimum(np.maximum(s, _S_CLAMP), 1.0 - _S_CLAMP)
        g = np.minimum(np.maximum(g, _S_CLAMP), 1.0 - _S_CLAMP)
        if self._m is not None:
            grad = grad * self._m
        dlogit = grad / (s * (1.0 - s))[:, None]  # logit' = M' / (M (1 - M))
        norm = np.maximum(np.sqrt(np.add.reduce(dlogit * dlogit, axis=1)), 1e-300)
        return (logit(s) - logit(g)) / (self.sigma * norm), dlogit, norm

    def invalidation_rate(self, x, g):
        """Eq. 4's closed form IR(x') (n,) for rows x (n, z), goals g (n,)."""
        u, _, _ = self._margin(*self.score_grad(x), g)
        return ndtr(-u)

    def _penalty_grad(self, x, s, grad, g, lam):
        u, dlogit, norm = self._margin(s, grad, g)
        rate = ndtr(-u)
        active = rate > self.target_rate
        if not active.any():
            return None  # the hinge is flat on every row: a plain Wachter step
        # d/dx Phi(-u) = -phi(u) ∇u, ∇u = ∇f / (sigma ||∇f||); zero where the hinge is flat
        phi = np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi)
        w = self.mu * active * phi / (self.sigma * norm)
        # second derivative of Phi(-u) along ∇u: |u| phi(u) / sigma^2 (linearised)
        curv = self.mu * active * np.abs(u) * phi / self.sigma**2
        return -w[:, None] * dlogit, curv

    def _aim(self, x0, g):
        # the score at which the linearised rate at x0 equals r - eps (then tol above it):
        # logit(g) + sigma ||∇f(x0)|| Phi^-1(1 - r + eps)
        _, _, gnorm = self._margin(*self.score_grad(x0), g)
        gc = np.clip(g, _S_CLAMP, 1.0 - _S_CLAMP)
        a = expit(logit(gc) + self.sigma * gnorm * ndtri(1.0 - self.target_rate + self.rate_eps))
        return np.minimum(a + self.tol, (1.0 + a) / 2.0)

    def model_changed(self) -> None:
        super().model_changed()
        # None when every feature moves: multiplying by ones changes no bit, only time
        mutable = np.asarray(self.ctx.mutable, dtype=float)
        if self.ctx.onehot is not None:  # a switch is made whole: no noise on indicators
            mutable[self.ctx.onehot.columns] = 0.0
        self._m = None if mutable.all() else mutable

    def _choice_cost(self, X, X_cf, g):
        # one-hot advice picks by the objective less its score term: cost + mu * hinge
        rate = self.invalidation_rate(X_cf, g)
        return super()._choice_cost(X, X_cf, g) + self.mu * np.maximum(rate - self.target_rate, 0.0)

    def _short(self, x, s, g):
        short = (s < g) | (self.invalidation_rate(x, g) > self.target_rate + self.rate_eps)
        self._last = (x, short)  # the loop asks _settled about the same x next
        return short

    def _settled(self, x, s, g, target) -> bool:
        last = getattr(self, "_last", None)
        short = last[1] if last is not None and last[0] is x else self._short(x, s, g)
        return not bool(short.any())
