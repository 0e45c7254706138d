"""Top-k selection: who of the scored applicants gets one of the k places (SPEC §2)."""

from __future__ import annotations

import numpy as np

#: Scores within this distance of the k-th highest count as tied with it (score units).
#: Scores that are equal in exact arithmetic (many candidates implement advice to the same
#: goal) differ in their last digits, and which way they differ depends on the CPU's
#: kernels (about 1e-14 apart seen here); the tie must not. 1e-9 is far above that noise
#: and far below GOAL_GAP (1e-6), the least gap between goals that mean different things.
SCORE_TIE = 1e-9


def select_top_k(scores: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Accept exactly min(k, n) of scores (n,); returns (accepted (n,) bool, threshold).

    The threshold is the k-th highest score (the lowest score when n <= k, NaN when
    n = 0). Candidates within :data:`SCORE_TIE` of it are tied: as many of them as there
    are places left are admitted in a seeded random order; the generator is used only when
    such a tie must be broken (SPEC §2).
    """
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool), float("nan")
    if n <= k:
        return np.ones(n, dtype=bool), float(scores.min())
    part = scores.copy()
    part.partition(n - k)  # what np.partition does, without its wrapper
    threshold = float(part[n - k])
    accepted = scores > threshold + SCORE_TIE
    at = ((scores >= threshold - SCORE_TIE) & ~accepted).nonzero()[0]
    need = k - np.count_nonzero(accepted)
    if need == at.shape[0]:
        accepted[at] = True
    else:
        accepted[rng.permutation(at)[:need]] = True
    return accepted, threshold
