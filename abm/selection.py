"""Top-k selection: who of the scored applicants gets one of the k places (SPEC §2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from abm import segments
from abm.compiled import compiled

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


def select_each(
    scores: np.ndarray, counts: np.ndarray, ks: np.ndarray, rngs: Sequence[np.random.Generator]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`select_top_k` of B episodes at once: scores (n,) flat, episode b's
    ``counts[b]`` of them with ``ks[b]`` places and ties broken by ``rngs[b]``; returns
    (accepted (n,) bool, thresholds (B,)), each episode's bit for bit its own call's.
    ``rngs[b]`` is read only when episode b draws.

    Each episode's k-th highest score and its rows above and at it are found in one
    compiled loop over all rows (:func:`abm.kernels.select_rows`; an order statistic is a
    value, whichever way it is found); only an episode whose tie must be broken draws,
    as alone, here.
    """
    B = counts.shape[0]
    if B == 1:
        accepted, threshold = select_top_k(scores, int(ks[0]), rngs[0])
        return accepted, np.array([threshold])
    accepted, thresholds, tied, n_tied, need, drawn = compiled("select_rows")(
        np.ascontiguousarray(scores, dtype=np.float64),
        np.ascontiguousarray(counts, dtype=np.int64),
        np.ascontiguousarray(ks, dtype=np.int64),
        SCORE_TIE,
    )
    if not drawn.any():  # the usual tick: every row at a threshold is admitted
        return accepted, thresholds
    # the tied rows of the episodes that draw, in row order; each draws its own shuffle of
    # its tied rows' positions (the draws depend on their number only)
    which = drawn.nonzero()[0]
    rows_tied = tied.nonzero()[0]
    bounds = segments.offsets(n_tied[which])
    chosen = []
    each = zip(which.tolist(), bounds[:-1], bounds[1:], need[which].tolist(), strict=True)
    for b, lo, hi, k in each:  # a tie at the threshold: this episode's draw
        rows = rows_tied[lo:hi].copy()
        rngs[b].shuffle(rows)  # what permutation() does to its own copy: same draws
        chosen.append(rows[:k])
    accepted[np.concatenate(chosen)] = True
    return accepted, thresholds
