"""Fairness-regularised decision models (long-term-fairness spec §1, §4): ``decision_model =
"dp"`` and ``"ei"`` build a logistic model whose training loss adds a group penalty.

Both change the decision-maker, not the advice. The loss is

    J(θ) = (1 − λ)·BCE(θ) + λ·penalty(θ),

minimised by L-BFGS-B from the plain logistic solution. Penalties use scale-free soft
decisions φ(x) = sigmoid(logit(x) / (‖w‖₂ τ)): the signed distance to the decision
boundary in feature units, divided by τ. A penalty on raw probabilities could be met by
shrinking the weights, which leaves every decision as it was.

* ``dp`` (demographic parity, λ = 0.3): max − min over groups of the mean φ.
* ``ei`` (equal improvability, Guldogan et al., λ = 0.1): Σ_g |L_g − L|. L_g is the mean
  over group g's soft-rejected rows (weights 1 − φ) of −log h(x + Δ·e_I), and L the same
  mean over all soft-rejected rows. h(x + Δ·e_I) is the model's probability after an effort
  Δ on every improvable feature I (mutable and causal; Δ = 0.1, ours).

Groups come from the world's training rows (``World.group_train``); with one group both
penalties are 0 and the fit is the plain logistic one.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.linear_model import LogisticRegression

FAIR_MODELS = ("dp", "ei")
LAMBDA = {"dp": 0.3, "ei": 0.1}  # spec §1
TAU = 0.1  # τ_φ of the soft decisions (spec §1, ours)
EFFORT = 0.1  # Δ of the EI penalty in the population world (ours)


class FairLogisticRegression(LogisticRegression):
    """A logistic model trained with a DP or EI group penalty (see the module docstring).

    ``fit(X, y, groups=...)`` needs the training rows' groups (n,); ``improvable`` (z,)
    bool marks the features the EI penalty moves. After fitting, ``coef_`` and
    ``intercept_`` are those of the penalised solution, so the world scores it as the
    linear model it is.
    """

    def __init__(
        self,
        objective: str = "dp",
        lam: float | None = None,
        tau: float = TAU,
        effort: float = EFFORT,
        improvable: tuple[bool, ...] | None = None,
        max_iter: int = 1000,
    ) -> None:
        super().__init__(max_iter=max_iter)
        self.objective = objective
        self.lam = lam
        self.tau = tau
        self.effort = effort
        self.improvable = improvable

    def fit(self, X, y, sample_weight=None, groups=None):  # noqa: D102 (see the class)
        if self.objective not in FAIR_MODELS:
            raise ValueError(f"objective must be one of {FAIR_MODELS}, got {self.objective!r}")
        super().fit(X, y, sample_weight=sample_weight)
        if groups is None:
            raise ValueError("a fairness-regularised model needs the training rows' groups")
        groups = np.asarray(groups, dtype=np.int64)
        if np.unique(groups).shape[0] < 2:
            return self  # no group penalty to pay: the plain logistic fit
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        lam = LAMBDA[self.objective] if self.lam is None else float(self.lam)
        z = X.shape[1]
        mask = np.ones(z, bool) if self.improvable is None else np.asarray(self.improvable, bool)
        X_moved = X + self.effort * mask  # EI: every improvable feature moved by Δ
        members = [groups == g for g in np.unique(groups)]
        sign = 1.0 if self.classes_[1] == 1 else -1.0

        def loss(theta: np.ndarray) -> float:
            w, b = theta[:z], theta[z]
            logit = sign * (np.add.reduce(X * w, axis=1) + b)
            bce = -np.mean(y * log_expit(logit) + (1 - y) * log_expit(-logit))
            soft = expit(logit / (max(np.linalg.norm(w), 1e-12) * self.tau))
            if self.objective == "dp":
                means = [soft[m].mean() for m in members]
                penalty = max(means) - min(means)
            else:
                reject = 1.0 - soft
                hurt = -log_expit(sign * (np.add.reduce(X_moved * w, axis=1) + b))
                overall = np.sum(reject * hurt) / max(np.sum(reject), 1e-12)
                penalty = sum(
                    abs(np.sum(reject[m] * hurt[m]) / max(np.sum(reject[m]), 1e-12) - overall)
                    for m in members
                )
            return float((1 - lam) * bce + lam * penalty)

        start = np.append(self.coef_[0], self.intercept_[0])
        result = minimize(loss, start, method="L-BFGS-B", options={"maxiter": 200})
        self.coef_ = result.x[:z][None, :].copy()
        self.intercept_ = np.array([result.x[z]])
        self.fair_loss_ = float(result.fun)
        return self
