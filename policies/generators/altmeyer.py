"""ClaPROAR and Gravitational: Wachter's generator plus a penalty on the external cost.

After Altmeyer et al., "Endogenous Macrodynamics in Algorithmic Recourse" (SaTML 2023),
eq. 4: s' = argmin yloss(M(s'), y*) + lambda_1 cost(s') + lambda_2 extcost(s'). Our
Wachter already minimises lam (M(x') - g')^2 + ||x' - x||_1 (cost weight 1/lam); both
generators add mu * extcost(x') to it, mu = lambda_2 / lambda_1 of the authors' defaults
(CounterfactualExplanations.jl, src/generators/gradient_based/generators.jl: lambda =
[0.1, 0.5], so mu = 5), and reuse Wachter's proximal-gradient loop (its hooks).

- ClaPROAR: extcost = the classifier's loss at x' labelled with the positive class,
  l(M(x'), 1) = -log M(x') (binary cross-entropy on the logit).
- Gravitational: extcost = ||x' - c||_2 over the mutable features, c the centroid of the
  positive rows of the training data (ctx.X_train[ctx.y_train == 1], all of them).

A row counts as reached at M(x') >= g, as for Wachter; the penalties push the
counterfactual past the aim, so the loop stops once every row reaches its goal (and has
settled or run ``min_iter`` iterations), not when it sits in Wachter's band above g.

With one-hot groups both keep them as Wachter does (its candidates), picking the one of
least cost + mu * extcost, a switch a -> b costing c(a, b).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from abm.validation import ConfigError
from policies.baselines.wachter import Wachter


class _Penalised(Wachter):
    """Wachter plus mu * extcost(x'); subclasses give the penalty and its gradient."""

    def __init__(
        self,
        lam: Annotated[float, Field(gt=0.0)] = 10.0,
        mu: Annotated[float, Field(ge=0.0, le=1e6)] = 5.0,
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
        if not (np.isfinite(mu) and mu >= 0):
            raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
        self.mu = float(mu)

    def _settled(self, x, s, g, target) -> bool:
        return bool((s >= g).all())

    def _choice_cost(self, X, X_cf, g):
        # one-hot advice picks by the objective less its score term: cost + mu * extcost
        return super()._choice_cost(X, X_cf, g) + self.mu * self.penalty(X_cf)

    def penalty(self, x):
        """extcost(x') (n,) of rows x (n, z) (for checks)."""
        raise NotImplementedError


class ClaPROAR(_Penalised):
    """Wachter + mu * l(M(x'), 1): the classifier's own loss at the counterfactual.

    Penalising the loss the model would incur if x' joined its training data with the
    positive label keeps x' where the classifier is already confident, so retraining on
    implemented recourse moves its boundary less (Altmeyer et al. 2023, §5). Gradient:
    ∇(-log M(x')) = -∇M(x') / M(x'), (n, z), from the loop's own M and ∇M.
    """

    def penalty(self, x):
        return -np.log(np.maximum(self.score(x), 1e-300))

    def _penalty_grad(self, x, s, grad, g, lam):
        s = np.maximum(s, 1e-300)
        # Hessian of -log sigmoid(f) along ∇f: M (1 - M) ||∇f||^2 = ||∇M||^2 / (M (1 - M))
        curv = np.add.reduce(grad * grad, axis=1) / np.maximum(s * (1.0 - s), 1e-300)
        return -self.mu * grad / s[:, None], self.mu * curv


class Gravitational(_Penalised):
    """Wachter + mu * ||x' - c||_2: pulled towards the positive class's centroid c.

    c (z,) is the mean of the positive training rows (ctx.X_train, ctx.y_train), taken
    once per world; the distance counts mutable features only (the immutable ones cannot
    move). Gradient: (x' - c) / ||x' - c||_2 on the mutable features, (n, z).
    """

    def model_changed(self) -> None:
        super().model_changed()
        ctx = self.ctx
        if ctx.X_train is None or ctx.y_train is None or not np.any(ctx.y_train == 1):
            raise ConfigError(
                "X_train = None or no positive row; allowed: a world with labelled "
                "training data (gravitational needs the positive class's centroid)"
            )
        X, y = np.asarray(ctx.X_train, dtype=float), np.asarray(ctx.y_train)
        self.centre = X[y == 1].mean(axis=0)
        # None when every feature moves: multiplying by ones changes no bit, only time
        self._m = None if np.all(ctx.mutable) else np.asarray(ctx.mutable, dtype=float)

    def _offset(self, x):
        """x' − c (n, z) on the mutable features (zero on the others)."""
        d = x - self.centre
        return d if self._m is None else d * self._m

    def penalty(self, x):
        return np.sqrt((self._offset(x) ** 2).sum(axis=1))

    def _penalty_grad(self, x, s, grad, g, lam):
        d = self._offset(x)
        norm = np.maximum(np.sqrt(np.add.reduce(d * d, axis=1)), 1e-12)
        # the norm's Hessian is (I - u u^T) / ||d||; capped near the centre, where the
        # counterfactual would stop anyway
        return self.mu * d / norm[:, None], self.mu / np.maximum(norm, 1e-2)
