"""Wachter-style counterfactuals: gradient descent on lambda (M(x') - g)^2 + ||x' - x||_1.

After Wachter, Mittelstadt & Russell (2017). Works for any decision model whose score has
a gradient: logistic regression in closed form (from its weights) and the ``mlp``
decision model through torch's autograd (``torch_score``). All rejected candidates of a
tick are optimised together as one (n, z) array; rows are independent. The loop runs in
NumPy: a tick's few rows make every iteration a dozen small calls, and NumPy's cost about
a tenth of torch's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import Field
from scipy.special import expit

from abm.interfaces import Feedback, FollowsModel, PolicyContext
from abm.validation import ConfigError, optional_import

#: (M(X) (n,), ∂M/∂X (n, z)) of rows X (n, z)
ScoreGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def torch_scorer(model: Any) -> Callable[[Any], Any]:
    """A differentiable float64 torch function X (n, z) -> M(X) (n,) for ``model``."""
    torch = optional_import("torch", "rl", "the wachter recommender")

    if model.is_linear:
        w = torch.tensor(np.asarray(model.weights), dtype=torch.float64)
        b = float(model.intercept)
        return lambda X: torch.sigmoid(X @ w + b)
    est = getattr(model, "estimator", None)
    if est is not None and hasattr(est, "torch_score"):
        return est.torch_score
    name = type(est).__name__ if est is not None else type(model).__name__
    name = getattr(est, "kind_text", None) or name  # a model from a file says why
    # a scenario the recommender cannot serve: the user's choice, not a bug
    raise ConfigError(
        f"decision model = {name} does not suit wachter; allowed: a differentiable one (logistic or mlp)"
    )


def score_grad(model: Any) -> ScoreGrad:
    """X (n, z) -> (M(X) (n,), ∂M/∂X (n, z)) in NumPy: for a linear ``model`` in closed
    form (σ' = (1 − σ)σ times w), otherwise :func:`autograd_score_grad` of its torch
    scorer."""
    if model.is_linear:
        w = np.asarray(model.weights, dtype=float)
        b = float(model.intercept)

        def linear(X):
            s = expit(X @ w + b)
            return s, ((1.0 - s) * s)[:, None] * w

        return linear
    return autograd_score_grad(torch_scorer(model))


def autograd_score_grad(f: Callable[[Any], Any]) -> ScoreGrad:
    """:data:`ScoreGrad` of a differentiable torch scorer ``f`` by autograd (one thread: a
    tick's rows are too few to share out)."""
    import torch

    from abm.mlp import torch_threads

    def autograd(X):
        with torch_threads(1), torch.enable_grad():
            xv = torch.from_numpy(np.array(X, dtype=float)).requires_grad_(True)
            s = f(xv)
            (grad,) = torch.autograd.grad(s.sum(), xv)  # rows are independent
        return s.detach().numpy(), grad.numpy()

    return autograd


class Wachter(FollowsModel):
    """Proximal gradient descent with a growing lambda, batched over candidates.

    Advice must reach its goal g (SPEC §2): the descent aims ``tol`` above it, at
    g' = min(g + tol, (1 + g) / 2), and a row counts as reached only at M(x') >= g.
    Each iteration takes a Gauss-Newton-scaled gradient step on (M(x') - g')^2 and then
    the exact proximal step of ||x' - x||_1 / lambda (a soft threshold, so features
    that do not pay for themselves stay exactly unchanged), clipped to the bounds with
    immutable features fixed. Every ``check`` iterations, rows still below g double
    their lambda (Wachter's schedule). After ``max_iter`` iterations (an iteration cap,
    never a clock), rows below g get a NaN row: no advice (unreached). It stops earlier
    once every row lies in [g, g' + tol] and either no entry moves by ``xtol`` or
    ``min_iter`` iterations have passed. M is the decision model in force
    (``use_model``), its score and gradient rebuilt when it changes.

    In a world with one-way features the clip is to each row's own box (``ctx.box``):
    an increase-only feature never falls below x, a decrease-only one never rises above.
    The generators built on this loop (claproar, gravitational, probe) inherit it.
    """

    keeps_one_way = True

    def __init__(
        self,
        lam: Annotated[float, Field(gt=0.0)] = 10.0,
        tol: Annotated[float, Field(gt=0.0, lt=1.0)] = 1e-3,
        max_iter: Annotated[int, Field(ge=1, le=1_000_000)] = 1000,
        check: Annotated[int, Field(ge=1)] = 20,
        lr: Annotated[float, Field(gt=0.0, le=1.0)] = 0.5,
        xtol: Annotated[float, Field(ge=0.0)] = 1e-7,
        min_iter: Annotated[int, Field(ge=0)] = 100,
    ) -> None:
        if not lam > 0:
            raise ValueError(f"lam must be > 0, got {lam!r}")
        if not 0 < tol < 1:
            raise ValueError(f"tol must be in (0, 1), got {tol!r}")
        if not (isinstance(max_iter, int) and 1 <= max_iter <= 1_000_000):
            raise ValueError(f"max_iter must be an integer in [1, 1000000], got {max_iter!r}")
        if not (isinstance(check, int) and check >= 1):
            raise ValueError(f"check must be an integer >= 1, got {check!r}")
        if not 0 < lr <= 1:
            raise ValueError(f"lr must be in (0, 1], got {lr!r}")
        self.lam, self.tol, self.max_iter, self.check, self.lr = (
            float(lam),
            tol,
            max_iter,
            check,
            lr,
        )
        self.xtol, self.min_iter = float(xtol), int(min_iter)

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.model_changed()

    def model_changed(self) -> None:
        self.score_grad = score_grad(self.ctx.decision_model)

    def score(self, X: np.ndarray) -> np.ndarray:
        """M(X) (n,) of rows X (n, z), as the descent sees it."""
        return self.score_grad(X)[0]

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        goals = np.broadcast_to(np.asarray(goals, dtype=float), X.shape[:1])
        out = X.copy()
        need = np.flatnonzero(
            self.ctx.decision_model.score(X) < goals
        )  # goals already met: no change
        if need.size == 0:
            return out
        cf, short = self._descend(X[need], goals[need])
        out[need] = cf
        out[need[short]] = np.nan
        return out

    def _descend(self, x0: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactuals (n, z) from rows x0 (n, z) for goals g (n,), and the rows still
        short of their goal (n,) bool."""
        ctx = self.ctx
        lo, hi = np.asarray(ctx.lower, dtype=float), np.asarray(ctx.upper, dtype=float)
        mutable = np.asarray(ctx.mutable, dtype=float)
        fixed = not mutable.all()
        lam = np.full(g.shape, self.lam)
        half_lr = self.lr / (2.0 * lam)  # changes with lambda only
        target = self._aim(x0, g)
        # the move d = x' − x0 (n, z) is what the prox acts on; the box bounds it too (the
        # rows' own boxes where features move one way only)
        b_lo, b_hi = ctx.bounds(x0, lo, hi)
        d_lo, d_hi = b_lo - x0, b_hi - x0
        x, dx = x0.copy(), np.zeros_like(x0)
        trust = None  # a penalty step's largest move, once one is needed
        for it in range(1, self.max_iter + 1):
            s, grad = self.score_grad(x)
            pen = self._penalty_grad(x, s, grad, g, lam)
            if fixed:  # with pgrad masked too, immutable features never move
                grad = grad * mutable
            norm2 = np.maximum(np.add.reduce(grad * grad, axis=1), 1e-12)
            # Gauss-Newton scaling: step eta = lr / (2 lambda |grad M|^2), so one step would
            # close the linearised gap at lr = 1; the prox threshold is eta itself
            thresh = half_lr / norm2
            step = (s - target) * (self.lr / norm2)
            if pen is not None:  # a further smooth term, weighted against ||x' - x||_1
                # its curvature bound c (n,) caps the step at lr / c where that is shorter,
                # and so does a trust region (the term's own move at most lr * 5% of the
                # widest feature range a step): far from the boundary the penalties are
                # nearly flat, and a step sized by curvature alone overshoots to the box's
                # corner. The fixed point does not depend on the step.
                pgrad, curv = pen
                if fixed:
                    pgrad = pgrad * mutable
                pnorm = np.sqrt(np.add.reduce(pgrad * pgrad, axis=1))
                if trust is None:
                    trust = self._trust(lo, hi)
                curv = np.maximum(curv, pnorm / trust)
                eta = np.minimum(thresh, self.lr / np.maximum(curv, 1e-300))
                d = dx - ((eta / thresh) * step)[:, None] * grad - eta[:, None] * pgrad
                thresh = eta
            else:
                d = dx - step[:, None] * grad
            # the exact prox of ||.||_1 / lambda: a soft threshold
            d = np.copysign(np.maximum(np.abs(d) - thresh[:, None], 0.0), d)
            # np.clip's Python wrapper costs more than the two ufuncs
            dx_prev, dx = dx, np.minimum(np.maximum(d, d_lo), d_hi)
            x = x0 + dx
            if it % self.check == 0:
                moved = float(np.abs(dx - dx_prev).max())  # how far the last step went
                s = self.score(x)
                short = self._short(x, s, g)
                close = self._settled(x, s, g, target)
                if close and (moved < self.xtol or it >= self.min_iter):
                    break  # every row reaches its goal, close to the aim (and settled)
                lam = np.where(short, lam * 2.0, lam)
                half_lr = self.lr / (2.0 * lam)
        return x, self._short(x, self.score(x), g)

    # Hooks for generators that add a penalty to Wachter's objective (policies.generators):
    # Wachter itself adds none, so its iterations are the plain ones above. All take and
    # give NumPy arrays.
    def _penalty_grad(self, x, s, grad, g, lam):
        """(gradient (n, z), curvature bound (n,)) of the extra term at x (n, z), given
        M(x) (n,), ∂M/∂x (n, z), goals g (n,) and the rows' lambdas (n,); None: no extra
        term."""
        return None

    @staticmethod
    def _trust(lo: np.ndarray, hi: np.ndarray) -> float:
        """A penalty step's largest move: 5% of the widest finite feature range."""
        width = (hi - lo)[np.isfinite(hi - lo)]
        return 0.05 * float(width.max()) if width.size else 0.05

    def _aim(self, x0, g):
        """The score (n,) the descent aims at from x0 (n, z): tol above the goal g (n,)."""
        return np.minimum(g + self.tol, (1.0 + g) / 2.0)

    def _short(self, x, s, g):
        """Rows (n,) bool whose counterfactual is not (yet) valid: M(x') < g."""
        return s < g

    def _settled(self, x, s, g, target) -> bool:
        """Whether every row is done: at its goal and within tol of the aim."""
        return bool(((s >= g) & (s <= target + self.tol)).all())

    def observe(self, feedback: Feedback) -> None:
        pass
