"""The synthetic SCM reproduction of SCARF (specs/long-term-fairness.md §2-§3): one paired
trial per seed, the ``fairness-trial`` experiment of the study runner.

World (spec §2, all numbers ours): s ~ Bernoulli(0.5); x = μ_x[s] + u,
z = 0.5x + μ_z[s] + u'; labels y ~ Bernoulli(h*(x, z)), h* = sigmoid(1.2x + 0.6z).
The improvable set is {x}, z is mediated: x̃ = x + δ, z̃ = z + 0.5δ. Eq. 10 (rebuilt):
x_{t+1} = x̃_t + ε(2ŷ_t − 1)β̂_x + b_s + ξ, z_{t+1} = z̃_t + 0.5(x_{t+1} − x̃_t) +
ε(2ŷ_t − 1)β̂_z + b_s + ξ'. h is a logistic regression on ``n_train`` rows (s excluded);
evaluation runs on a fresh cohort of ``n_eval``.

Methods, all on the same evaluation draws (cohort, transition noise, label uniforms):
``none`` (δ = 0, plain h), ``DP`` and ``EI`` (h trained with the group penalty of
:class:`abm.fair_models.FairLogisticRegression`, λ = 0.3 / 0.1; EI gives every rejected
the effort Δ = B/T on x at each step), ``noLSTM`` (memoryless MLP, B/T a step) and
``SCARF`` (the LSTM plan projected onto B). The learned generators train through the
known SCM in torch (:mod:`policies.fairness.generator`) on the training cohort.

Metrics per step t on x̃_t: accuracy mean(ŷ_t = y_t); short-term |P(ŷ=1|s=1) −
P(ŷ=1|s=0)|; long-term exact W1 (``ot.emd2``, Euclidean) between the groups' (x̃, z̃).
Shapes: n rows, T steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm.rng import stream
from policies.fairness.generator import (
    Budget,
    Horizon,
    Lambdas,
    TrainSettings,
    plan_lstm,
    step_mlp,
    train,
)

METHODS = ("none", "DP", "EI", "noLSTM", "SCARF")
MU_X = (-0.5, 0.5)
MU_Z = (-0.25, 0.25)
BETA_STAR = np.array([1.2, 0.6])
BETA_HAT = BETA_STAR / np.linalg.norm(BETA_STAR)
EPS = 0.05  # ε of eq. 10
DRIFT = (-0.075, 0.075)  # b_s
NOISE = 0.3  # sd of ξ, ξ'
MEDIATION = 0.5  # z's weight on x
Method = Literal["none", "DP", "EI", "noLSTM", "SCARF"]


def draw_cohort(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, 2) columns (x, z), s (n,) int) from the SCM at t = 0."""
    s = (rng.random(n) < 0.5).astype(np.int64)
    x = np.asarray(MU_X)[s] + rng.standard_normal(n)
    z = MEDIATION * x + np.asarray(MU_Z)[s] + rng.standard_normal(n)
    return np.column_stack([x, z]), s


def true_prob(X: np.ndarray) -> np.ndarray:
    """h*(x, z) = sigmoid(1.2x + 0.6z), shape (n,)."""
    return 1.0 / (1.0 + np.exp(-(X @ BETA_STAR)))


def counterfactual(X: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """x̃ = q(x, δ) of the linear SCM: δ (n,) on x, 0.5δ passed on to z."""
    out = X.copy()
    out[:, 0] += delta
    out[:, 1] += MEDIATION * delta
    return out


def transition(Xt: np.ndarray, yhat: np.ndarray, s: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """Eq. 10: x_{t+1} from x̃_t (n, 2), decisions ŷ_t (n,) in {0, 1} (or soft), groups s
    and noise ξ (n, 2)."""
    push = EPS * (2.0 * yhat - 1.0)
    b = np.asarray(DRIFT)[s]
    x_next = Xt[:, 0] + push * BETA_HAT[0] + b + xi[:, 0]
    z_next = Xt[:, 1] + MEDIATION * (x_next - Xt[:, 0]) + push * BETA_HAT[1] + b + xi[:, 1]
    return np.column_stack([x_next, z_next])


class SCMSurrogate:
    """The known SCM in torch (:class:`policies.fairness.generator.Surrogate`): h's logit
    with weights ``w`` (2,) and intercept ``b``, groups ``s`` (n,) for the drift."""

    k = 1

    def __init__(self, w: np.ndarray, b: float, s: np.ndarray) -> None:
        import torch

        self.w = torch.as_tensor(np.asarray(w, dtype=float))
        self.b = float(b)
        self.drift = torch.as_tensor(np.asarray(DRIFT)[s])
        self.beta_hat = torch.as_tensor(BETA_HAT)
        self.mediate = torch.tensor([1.0, MEDIATION], dtype=torch.float64)

    def counterfactual(self, X, D):
        return X + D[:, :1] * self.mediate

    def logit(self, X):
        return X @ self.w + self.b

    def transition(self, X, soft, t, noise):
        push = EPS * (2.0 * soft - 1.0)
        x_next = X[:, 0] + push * self.beta_hat[0] + self.drift + noise[:, 0]
        z_next = (
            X[:, 1]
            + MEDIATION * (x_next - X[:, 0])
            + push * self.beta_hat[1]
            + self.drift
            + noise[:, 1]
        )
        import torch

        return torch.stack([x_next, z_next], dim=1)

    def noise(self, T, n, gen):
        import torch

        return NOISE * torch.randn((T, n, 2), generator=gen, dtype=torch.float64)


def w1_groups(X: np.ndarray, s: np.ndarray) -> float:
    """Exact W1 (``ot.emd2``, uniform weights, Euclidean ground cost) between the rows of
    group 0 and group 1 of X (n, q); NaN if a group is empty."""
    import ot

    A, B = X[s == 0], X[s == 1]
    if A.shape[0] == 0 or B.shape[0] == 0:
        return float("nan")
    M = ot.dist(A, B, metric="euclidean")
    return float(
        ot.emd2(np.full(A.shape[0], 1.0 / A.shape[0]), np.full(B.shape[0], 1.0 / B.shape[0]), M)
    )


def parity_gap(yhat: np.ndarray, s: np.ndarray) -> float:
    """|P(ŷ=1 | s=1) − P(ŷ=1 | s=0)|; NaN if a group is empty."""
    if not (s == 0).any() or not (s == 1).any():
        return float("nan")
    return float(abs(yhat[s == 1].mean() - yhat[s == 0].mean()))


FROZEN = ConfigDict(extra="forbid", frozen=True)


class FairnessTrialParams(BaseModel):
    """One paired trial of the synthetic reproduction (spec §2; defaults are the spec's)."""

    model_config = FROZEN
    methods: tuple[Method, ...] = Field(METHODS, min_length=1)
    n_train: int = Field(700, ge=10, le=1_000_000)
    n_eval: int = Field(200, ge=4, le=1_000_000)
    horizon: Horizon = 10
    budget: Budget = 2.0  # per capita, L1 over the horizon
    lam: Lambdas = (1.0, 1.0, 1.0)
    hidden: int = Field(32, ge=1, le=4096)
    lr: float = Field(0.02, gt=0.0, le=10.0)
    epochs: int = Field(150, ge=0, le=1_000_000)
    tau: float = Field(0.1, gt=0.0, le=100.0)
    sinkhorn_eps: float = Field(0.1, gt=0.0, le=100.0)
    sinkhorn_points: int = Field(128, ge=2, le=1_000_000)
    lam_dp: float = Field(0.3, ge=0.0, le=1.0)
    lam_ei: float = Field(0.1, ge=0.0, le=1.0)


TRIAL_COLUMNS = (
    "accuracy",
    "short",
    "long",
    "short_first",
    "short_last",
    "long_first",
    "long_last",
    "spend",
    "train_s",
)


@dataclass(frozen=True)
class Trace:
    """One method's evaluation: per-step ``accuracy``, ``short``, ``long`` (T,) and the
    per-capita ``spend``."""

    accuracy: np.ndarray
    short: np.ndarray
    long: np.ndarray
    spend: float


def evaluate(X0, s, w, b, deltas, T, xi, u) -> Trace:
    """Roll the SCM for T steps from X0 (n, 2) under the linear classifier (w, b);
    ``deltas(t, X)`` gives step t's δ (n,) from the state X; ``xi`` (T, n, 2) and ``u``
    (T, n) are the paired transition noise and label uniforms."""
    n = X0.shape[0]
    X = X0
    acc, short, long = np.empty(T), np.empty(T), np.empty(T)
    spent = 0.0
    for t in range(T):
        d = np.maximum(np.asarray(deltas(t, X), dtype=float), 0.0)
        spent += float(d.sum())
        Xt = counterfactual(X, d)
        yhat = (Xt @ w + b >= 0.0).astype(float)  # h(x̃) >= 0.5
        y = (u[t] < true_prob(Xt)).astype(float)
        acc[t] = float((yhat == y).mean())
        short[t] = parity_gap(yhat, s)
        long[t] = w1_groups(Xt, s)
        X = transition(Xt, yhat, s, xi[t])
    return Trace(acc, short, long, spent / n)


def run_trial_methods(params: FairnessTrialParams, seed: int) -> dict[str, tuple[Trace, float]]:
    """Every method of ``params`` on seed ``seed``'s paired draws: {method: (trace, training
    seconds)}. Streams: ``fairness-train``, ``fairness-eval``, ``fairness-noise``."""
    from sklearn.linear_model import LogisticRegression

    from abm.fair_models import FairLogisticRegression

    # checked by FairnessTrialParams against the generator's declarations
    T, per_capita, lam = params.horizon, params.budget, tuple(float(v) for v in params.lam)
    rng_train = stream(seed, "fairness-train")
    X_tr, s_tr = draw_cohort(params.n_train, rng_train)
    y_tr = (rng_train.random(params.n_train) < true_prob(X_tr)).astype(int)
    X_ev, s_ev = draw_cohort(params.n_eval, stream(seed, "fairness-eval"))
    rng_noise = stream(seed, "fairness-noise")
    xi = NOISE * rng_noise.standard_normal((T, params.n_eval, 2))
    u = rng_noise.random((T, params.n_eval))
    n = params.n_eval
    lr = LogisticRegression().fit(X_tr, y_tr)
    w, b = lr.coef_[0], float(lr.intercept_[0])
    zero = np.zeros(n)
    effort = per_capita / T
    settings = TrainSettings(
        lam=lam,
        hidden=params.hidden,
        lr=params.lr,
        epochs=params.epochs,
        tau=params.tau,
        eps=params.sinkhorn_eps,
        sinkhorn_points=params.sinkhorn_points,
    )

    def one(method: str) -> Trace:
        if method == "none":
            return evaluate(X_ev, s_ev, w, b, lambda t, X: zero, T, xi, u)
        if method in ("DP", "EI"):
            fair = FairLogisticRegression(
                objective=method.lower(),
                lam=params.lam_dp if method == "DP" else params.lam_ei,
                tau=params.tau,
                effort=effort,
                improvable=(True, False),
            ).fit(X_tr, y_tr, groups=s_tr)
            wf, bf = fair.coef_[0], float(fair.intercept_[0])
            if method == "DP":
                return evaluate(X_ev, s_ev, wf, bf, lambda t, X: zero, T, xi, u)
            # every rejected (before the step) makes the effort Δ on x
            return evaluate(
                X_ev, s_ev, wf, bf, lambda t, X: np.where(X @ wf + bf < 0.0, effort, 0.0), T, xi, u
            )
        kind = "lstm" if method == "SCARF" else "mlp"
        sur = SCMSurrogate(w, b, s_tr)
        net = train(
            kind,
            sur,
            X_tr,
            s_tr,
            T,
            per_capita * params.n_train,
            settings,
            seed=int(stream(seed, f"fairness-{kind}").integers(2**31)),
        )
        budget = per_capita * n
        if kind == "lstm":
            D = plan_lstm(net, X_ev, s_ev)[:, :, 0]
            D = D * min(1.0, budget / max(float(D.sum()), 1e-12))
            return evaluate(X_ev, s_ev, w, b, lambda t, X: D[:, t], T, xi, u)

        def mlp_step(t: int, X: np.ndarray) -> np.ndarray:
            d = step_mlp(net, X, s_ev)[:, 0]
            return d * min(1.0, budget / T / max(float(d.sum()), 1e-12))

        return evaluate(X_ev, s_ev, w, b, mlp_step, T, xi, u)

    out: dict[str, tuple[Trace, float]] = {}
    for method in params.methods:
        start = time.perf_counter()
        trace = one(method)
        out[method] = (trace, time.perf_counter() - start)
    return out


def run_fairness_trial(
    config: Any, policy: str, params: FairnessTrialParams, metrics: tuple[str, ...]
) -> tuple[list[dict[str, Any]], Any]:
    """The ``fairness-trial`` experiment: one paired trial of seed ``config.seed``.

    Rows: one per method with :data:`TRIAL_COLUMNS` (means over steps, first and last
    step, per-capita spend, seconds). Ticks: per step (``tick`` 1..T) and method the
    accuracy, short-term gap and long-term W1.
    """
    import pandas as pd

    seed = int(config.seed)
    rows, ticks = [], []
    for method, (tr, seconds) in run_trial_methods(params, seed).items():
        rows.append(
            {
                "method": method,
                "accuracy": float(tr.accuracy.mean()),
                "short": float(tr.short.mean()),
                "long": float(tr.long.mean()),
                "short_first": float(tr.short[0]),
                "short_last": float(tr.short[-1]),
                "long_first": float(tr.long[0]),
                "long_last": float(tr.long[-1]),
                "spend": tr.spend,
                "train_s": seconds,
            }
        )
        ticks.append(
            pd.DataFrame(
                {
                    "tick": np.arange(1, tr.short.size + 1),
                    "method": method,
                    "accuracy": tr.accuracy,
                    "short": tr.short,
                    "long": tr.long,
                }
            )
        )
    return rows, pd.concat(ticks, ignore_index=True)
