"""The exact worst-case price of recourse under an Lp-bounded model change (spec §1).

Model f_θ(x) = σ(θ·x̃) with x̃ = (x, 1) and θ = (w, b): the intercept is a parameter the
adversary may move. Over the ball Θ = {θ : ‖θ − θ₀‖_p ≤ α} the lowest logit is
θ₀·x̃ − α‖x̃‖_q (Hölder, 1/p + 1/q = 1), so for the binary cross-entropy to label 1,
ℓ(s) = softplus(−s), which falls as s grows,

    max_Θ J(x, θ) = softplus(−(θ₀·x̃ − α‖x̃‖_q)) + λ‖x − x₀‖₁.

Every price, worst-case validity and test of :mod:`policies.robust` goes through this
module. Shapes: n rows, z features; ``w`` is (z,) or one linearisation per row (n, z),
``b`` a scalar or (n,).
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import BeforeValidator, Field
from scipy.special import log_expit

from abm.registry import check_declared, not_bool
from abm.validation import ConfigError, problem

P_ALLOWED = "a number in [1, inf] (1, 2 and inf are the usual choices)"


def check_p(p: float, field: str = "p") -> float:
    """``p`` as a float in [1, inf]; anything else is a one-line :class:`ConfigError`."""
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise ConfigError(problem(field, p, P_ALLOWED)) from None
    if isinstance(p, bool) or not value >= 1.0:  # NaN fails too
        raise ConfigError(problem(field, p, P_ALLOWED))
    return value


#: the parameters' declarations (type and bounds): the registry, the policies' constructors
#: and the solvers below all check against these
Alpha = Annotated[float, BeforeValidator(not_bool), Field(ge=0.0, le=1e6)]  # the ball's radius
Lam = Annotated[float, BeforeValidator(not_bool), Field(gt=0.0, le=1e6)]  # the L1 cost weight
#: the L1 cost weight relative to the largest weight
Kappa = Annotated[float, BeforeValidator(not_bool), Field(gt=0.0, lt=1.0)]


def check_alpha(alpha: float, field: str = "alpha") -> float:
    """``alpha`` checked against :data:`Alpha`, as a float."""
    return float(check_declared(Alpha, alpha, field))


def check_lam(lam: float, field: str = "lam") -> float:
    """``lam`` checked against :data:`Lam`, as a float."""
    return float(check_declared(Lam, lam, field))


def dual_exponent(p: float) -> float:
    """q with 1/p + 1/q = 1: p = 1 gives inf, p = inf gives 1."""
    p = check_p(p)
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def augmented_norm(X: np.ndarray, q: float) -> np.ndarray:
    """‖(x, 1)‖_q for every row of X (n, z), shape (n,)."""
    A = np.abs(np.asarray(X, dtype=float))
    if math.isinf(q):
        return np.maximum(A.max(axis=1, initial=0.0), 1.0)
    if q == 1.0:
        return 1.0 + A.sum(axis=1)
    if q == 2.0:
        return np.sqrt(1.0 + np.square(A).sum(axis=1))
    return (1.0 + (A**q).sum(axis=1)) ** (1.0 / q)


def nominal_logit(X: np.ndarray, w: np.ndarray, b) -> np.ndarray:
    """θ₀·x̃ = w·x + b for every row, shape (n,); row sums in a fixed order (z alone)."""
    X = np.asarray(X, dtype=float)
    return np.add.reduce(X * w, axis=1) + b


def worst_logit(X: np.ndarray, w: np.ndarray, b, alpha: float, p: float) -> np.ndarray:
    """min over Θ of θ·x̃ = θ₀·x̃ − α‖x̃‖_q, shape (n,) (spec §1)."""
    s = nominal_logit(X, w, b)
    if alpha == 0:
        return s
    return s - alpha * augmented_norm(X, dual_exponent(p))


def worst_model(
    X: np.ndarray, w: np.ndarray, b, alpha: float, p: float, zero_sign: float = 0.0
) -> np.ndarray:
    """θ*(x), the model of the ball with the lowest logit at each row, shape (n, z + 1).

    p = 1: −α·sgn(x̃_k) on k = argmax |x̃_k| (first of ties; the intercept is last);
    p = inf: θ₀ − α·sgn(x̃); other p: θ₀ − α·sgn(x̃)|x̃|^(q−1) / ‖x̃‖_q^(q−1) (p = 2:
    θ₀ − α·x̃/‖x̃‖₂). Where x̃_k = 0 the logit does not depend on θ_k; ``zero_sign`` is the
    sign used there (ROAR's convention is +1, ours 0: no change).
    """
    X = np.asarray(X, dtype=float)
    n, z = X.shape
    Xt = np.concatenate([X, np.ones((n, 1))], axis=1)
    theta = np.empty((n, z + 1))
    theta[:, :z] = w
    theta[:, z] = b
    if alpha == 0:
        return theta
    sign = np.sign(Xt)
    sign[sign == 0] = zero_sign
    q = dual_exponent(p)
    if math.isinf(q):  # p = 1: one coordinate takes the whole budget
        k = np.argmax(np.abs(Xt), axis=1)
        rows = np.arange(n)
        theta[rows, k] -= alpha * sign[rows, k]
    elif q == 1.0:  # p = inf: every coordinate moves by alpha
        theta -= alpha * sign
    else:
        A = np.abs(Xt)
        norm = augmented_norm(X, q)[:, None]
        theta -= alpha * sign * (A / norm) ** (q - 1.0)
    return theta


def softplus_neg(s: np.ndarray) -> np.ndarray:
    """ℓ(s) = −log σ(s) = softplus(−s), the cross-entropy to label 1, without overflow."""
    return -log_expit(s)


def price(
    X: np.ndarray,
    X0: np.ndarray,
    w: np.ndarray,
    b,
    alpha: float,
    lam: float,
    p: float,
) -> np.ndarray:
    """J(x, θ*(x)) = softplus(−(θ₀·x̃ − α‖x̃‖_q)) + λ‖x − x₀‖₁ for rows X, X0 (n, z): (n,)."""
    X = np.asarray(X, dtype=float)
    cost = np.add.reduce(np.abs(X - np.asarray(X0, dtype=float)), axis=1)
    return softplus_neg(worst_logit(X, w, b, alpha, p)) + lam * cost


def worst_case_valid(
    X: np.ndarray, w: np.ndarray, b, alpha: float, p: float, offset: float = 0.0
) -> np.ndarray:
    """(n,) bool: σ of the worst-case logit reaches σ(offset) (offset 0: the 0.5 cut)."""
    return worst_logit(X, w, b, alpha, p) >= offset
