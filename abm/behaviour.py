"""Candidate behaviour (durable-recourse-rl App. B.2-B.4), vectorised over candidates.

There is one implementation of each behaviour; a ``Candidate`` agent calls these
functions on its own row. Shapes: n candidates, z features. Difficulties ``d`` may
be (z,) or (n, z), so heterogeneous candidates need no new code.
"""

from __future__ import annotations

import numpy as np


def score_gap(goal: np.ndarray, score: np.ndarray) -> np.ndarray:
    """b = max(0, g - M(x)), shape (n,); 0 where no goal was given (g is NaN)."""
    return np.fmax(np.subtract(goal, score), 0.0)  # fmax takes the number over a NaN


def dropout_probability(
    gap: np.ndarray, reapplications: np.ndarray, rho: float, chi: float, omega: float
) -> np.ndarray:
    """Eq. 6: 1 - exp(-(rho b + chi q + omega b q)), shape (n,)."""
    q = np.asarray(reapplications, dtype=float)
    return -np.expm1(-(rho * gap + chi * q + omega * gap * q))


def attainability(X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
    """Eq. 7: 1 / (|x_cf - x| x_cf) - 1, shape (n, z); inf where a factor is 0."""
    denom = np.abs(X_cf - X) * X_cf
    positive = denom > 0
    if np.count_nonzero(positive) == positive.size:  # the usual case: no masked division
        a = np.divide(1.0, denom)
    else:
        a = np.divide(1.0, denom, out=np.full(np.shape(denom), np.inf), where=positive)
    a -= 1.0
    return a


def change_success_probability(
    x: np.ndarray, x_cf: np.ndarray, beta: float, d: np.ndarray
) -> np.ndarray:
    """Eq. 8, 1 - exp(-beta a / d), for entries that do change (x != x_cf); any shape.

    beta = inf is allowed: every change with positive attainability then succeeds.
    """
    a = attainability(x, x_cf)
    # a = 0 (a full 0 -> 1 jump) has probability 0 for every finite beta, so also in the
    # limit; computing the rate only where a > 0 also avoids inf * 0 when beta = inf
    positive = a > 0
    if np.count_nonzero(positive) == positive.size:  # the usual case: no masked product
        rate = np.multiply(beta, a)
    else:
        rate = np.multiply(beta, a, out=np.zeros(np.shape(a)), where=positive)
    rate /= d
    p = np.expm1(-rate)
    p *= -1.0
    return p


def success_probability(X: np.ndarray, X_cf: np.ndarray, beta: float, d: np.ndarray) -> np.ndarray:
    """Eq. 8 per feature, shape (n, z); unchanged features get probability 1 (nothing to do)."""
    return np.where(X_cf == X, 1.0, change_success_probability(X, X_cf, beta, d))


def reapply_probability(
    gap: np.ndarray, elapsed: np.ndarray, validity: int, nu: float
) -> np.ndarray:
    """Eqs. 9-11: (1 - u) exp(-nu b) + u with u = (t - l) / T, shape (n,)."""
    u = np.minimum(np.asarray(elapsed, dtype=float) / validity, 1.0)
    return (1.0 - u) * np.exp(-nu * gap) + u
