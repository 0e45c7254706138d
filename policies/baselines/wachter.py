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

    In a world with one-hot groups (``ctx.onehot``) the advice is the cheapest valid one of
    several candidates, each descended by this loop (after CARLA's relaxation and
    reconstruction, then a repair): the relaxation, each mutable group's indicators on the
    simplex of its allowed categories at the linear cost sum_b c(a, b) x'_b (the switching
    cost's convex envelope; :meth:`_onto_simplex`), snapped to one-hot (``OneHot.snap``);
    the snapped categories with the numeric move descended again, the groups held; the
    numeric move with every group held at the row's category; and each allowed switch of a
    mutable group made, then held, with its numeric move. Validity is the loop's own
    (``_short``), the cost :meth:`_choice_cost`: ||x' - x||_1 with a switch a -> b at
    c(a, b) (``OneHot.moves``). No candidate valid: a NaN row. Several switches at once
    come from the relaxation only.
    """

    keeps_one_way = True
    keeps_onehot = True

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
        if self.ctx.onehot is not None:
            out[need] = self._onehot_advice(X[need], goals[need])
            return out
        cf, short = self._descend(X[need], goals[need])
        out[need] = cf
        out[need[short]] = np.nan
        return out

    def _descend(
        self,
        x0: np.ndarray,
        g: np.ndarray,
        hold: np.ndarray | None = None,
        simplex: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Counterfactuals (n, z) from rows x0 (n, z) for goals g (n,), and the rows still
        short of their goal (n,) bool. One-hot groups (None: none): ``hold`` (n, z) bool,
        features held at x0 besides the immutable ones; ``simplex``, (members (m,), costs
        (n, m)) of groups relaxed to the simplex (see :meth:`_onto_simplex`)."""
        ctx = self.ctx
        lo, hi = np.asarray(ctx.lower, dtype=float), np.asarray(ctx.upper, dtype=float)
        mutable = np.asarray(ctx.mutable, dtype=float)
        lam = np.full(g.shape, self.lam)
        half_lr = self.lr / (2.0 * lam)  # changes with lambda only
        target = self._aim(x0, g)
        # the move d = x' − x0 (n, z) is what the prox acts on; the box bounds it too (the
        # rows' own boxes where features move one way only)
        b_lo, b_hi = ctx.bounds(x0, lo, hi)
        d_lo, d_hi = b_lo - x0, b_hi - x0
        if hold is not None:  # masked from the gradient too, so the step ignores them
            mutable = mutable * ~hold
            d_lo, d_hi = np.where(hold, 0.0, d_lo), np.where(hold, 0.0, d_hi)
        fixed = not mutable.all()
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
            if simplex is not None:
                v = d
            # the exact prox of ||.||_1 / lambda: a soft threshold
            d = np.copysign(np.maximum(np.abs(d) - thresh[:, None], 0.0), d)
            # np.clip's Python wrapper costs more than the two ufuncs
            dx_prev, dx = dx, np.minimum(np.maximum(d, d_lo), d_hi)
            if simplex is not None:  # the groups' own prox
                self._onto_simplex(x0, v, thresh, simplex, dx)
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

    @staticmethod
    def _onto_simplex(x0, v, thresh, simplex, dx) -> None:
        """The prox step on one-hot groups relaxed to the simplex, into dx (n, z): a group
        g of row i at x0 (n, z) moved by v (n, z) (the step before the prox) becomes the
        projection of x0 + v - thresh_i * costs_g[i] onto the simplex, costs_g[i] (m,) the
        row's switching costs c(a, .) (inf: not allowed, held at 0). On the simplex the
        linear cost is the convex envelope of the switching cost."""
        for members, costs in simplex:
            barred = ~np.isfinite(costs)
            y = x0[:, members] + v[:, members] - thresh[:, None] * np.where(barred, 0.0, costs)
            # more than 1 below the row's top: the projection's 0
            y = np.where(barred, y.max(axis=1, keepdims=True) - 2.0, y)
            # Duchi et al. (2008): the largest k with u_k > (sum of the top k - 1) / k
            u = -np.sort(-y, axis=1)
            css = np.cumsum(u, axis=1) - 1.0
            k = np.arange(1, members.shape[0] + 1)
            top = members.shape[0] - 1 - np.argmax((u * k > css)[:, ::-1], axis=1)
            theta = css[np.arange(y.shape[0]), top] / (top + 1)
            dx[:, members] = np.maximum(y - theta[:, None], 0.0) - x0[:, members]

    def _onehot_advice(self, X: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Counterfactuals (n, z) of rows X (n, z) below their goals g (n,) in a world with
        one-hot groups: each row's cheapest valid candidate (see class), NaN if none."""
        oh, ctx = self.ctx.onehot, self.ctx
        n, z = X.shape
        held = np.zeros(z, bool)
        held[oh.columns] = True
        frozen = np.zeros(z, bool)  # immutable groups (any immutable indicator: held whole)
        simplex = []
        for members, costs in zip(oh.groups, oh.costs, strict=True):
            if ctx.immutable[members].any():
                frozen[members] = True
            else:
                simplex.append((members, costs[X[:, members].argmax(axis=1)]))
        hold = np.broadcast_to(frozen, X.shape) if frozen.any() else None
        relaxed, _ = self._descend(X, g, hold=hold, simplex=simplex)
        snapped = oh.snap(X, relaxed)
        # the repairs, descended together (rows are independent), each with its groups held:
        # the snapped categories with x's numeric part, x itself, and x with each allowed
        # switch of a mutable group made
        switched = np.flatnonzero((snapped[:, oh.columns] != X[:, oh.columns]).any(axis=1))
        polished = X[switched]
        polished[:, oh.columns] = snapped[switched][:, oh.columns]
        starts, rows = [polished, X], [switched, np.arange(n)]
        for i in range(n):
            for switch in oh.switches(X[i]):
                if not frozen[switch.column]:
                    starts.append(oh.apply(X[i], switch)[None])
                    rows.append(np.array([i]))
        S, R = np.concatenate(starts), np.concatenate(rows)
        repaired, _ = self._descend(S, g[R], hold=np.broadcast_to(held, S.shape))
        C = np.concatenate([snapped, repaired])
        R = np.concatenate([np.arange(n), R])
        cost = self._choice_cost(X[R], C, g[R])
        cost[self._short(C, self.score(C), g[R])] = np.inf
        # each row's cheapest (ties: the first candidate); every row has two or more
        order = np.lexsort((np.arange(R.size), cost, R))
        first = order[np.r_[True, R[order][1:] != R[order][:-1]]]
        out = C[first]
        out[~np.isfinite(cost[first])] = np.nan
        return out

    def _choice_cost(self, X, X_cf, g):
        """The cost (n,) by which one-hot advice picks among valid candidates X_cf (n, z)
        of rows X (n, z) for goals g (n,): ||x' - x||_1, a switch a -> b at c(a, b)."""
        return self.ctx.onehot.moves(X, X_cf).sum(axis=1)

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
