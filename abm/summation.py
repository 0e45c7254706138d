"""Row sums in NumPy's own order: ``linear_logit`` (w . x + b of every row), bit for bit
what ``np.add.reduce(X * w, axis=1) + b`` gives: from 64 rows one compiled loop
(:func:`abm.kernels.linear_rows`), else blocked for large batches where the loop is not
in use.

Shapes: X (n, z), weights (z,).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from abm.compiled import compiled


def linear_logit(X: np.ndarray, weights: np.ndarray, intercept: float) -> np.ndarray:
    """w . x + b for every row of X (n, z), shape (n,).

    An elementwise product reduced along the feature axis: each row's sum runs in an
    order fixed by z alone, so a row's value never depends on which other rows share the
    batch (BLAS matrix-vector kernels can differ in the last bit by position). The same
    candidate therefore scores identically under every policy and batch size.
    """
    if (
        len(X) >= _COMPILED_FROM
        and getattr(X, "ndim", 0) == 2
        and X.dtype == np.float64
        and np.ndim(weights) == 1
        and X.shape[1] <= _PAIRWISE_BLOCK
        and _compiled_sums_match_numpy(X.shape[1])
    ):
        # one compiled loop over the rows, in the same order (abm.kernels.linear_rows)
        w = np.ascontiguousarray(weights, dtype=np.float64)
        return compiled("linear_rows")(X, w, float(intercept))
    if (
        len(X) >= _BLOCK_FROM
        and getattr(X, "ndim", 0) == 2
        and X.dtype == np.float64
        and np.ndim(weights) == 1
        and _feature_sums_match_numpy(X.shape[1])
    ):
        out = _blocked_row_sums(X, weights)
    else:
        out = np.add.reduce(X * weights, axis=1)
    out += intercept
    return out


# From this many rows a compiled loop (a batch's tick; below, NumPy's calls cost less)
_COMPILED_FROM = 64


# Large batches: numpy reduces each row with its own inner-loop call, which dominates at
# 10^5+ rows. The same pairwise order run across a block of rows at once, on a
# feature-major (z, rows) scratch that stays in cache, gives the same bits 2-3x faster.
_BLOCK_FROM = 1024
_BLOCK_ROWS = 8192
_PAIRWISE_BLOCK = 128  # numpy's PW_BLOCKSIZE


def _blocked_row_sums(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """np.add.reduce(X * weights, axis=1), bit for bit, for X (n, z); shape (n,)."""
    n, z = X.shape
    out = np.empty(n)
    scratch = np.empty((z, min(n, _BLOCK_ROWS)))
    w = np.asarray(weights, dtype=float).reshape(z, 1)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n)
        P = scratch[:, : stop - start]
        np.multiply(X[start:stop].T, w, out=P)
        _pairwise_into_first(P, 0, z)
        # the reduction starts from +0.0: a row of -0.0 products sums to +0.0
        np.add(P[0], 0.0, out=out[start:stop])
    return out


def _pairwise_into_first(P: np.ndarray, lo: int, n: int) -> None:
    """Sum rows P[lo : lo + n] (each a block of columns) into P[lo], in numpy's order.

    numpy's pairwise summation (``pairwise_sum`` in its umath loops): below 8 terms a
    running sum; up to 128, eight running sums over strides of 8, combined as
    ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the leftover terms in turn;
    above 128, the two halves (the first a multiple of 8 long) summed apart and added.
    P is scratch: its rows are overwritten.
    """
    if n < 8:
        for i in range(lo + 1, lo + n):
            P[lo] += P[i]
    elif n <= _PAIRWISE_BLOCK:
        full = lo + n - n % 8
        for i in range(lo + 8, full, 8):
            P[lo : lo + 8] += P[i : i + 8]
        r = P[lo : lo + 8]
        r[0] += r[1]
        r[2] += r[3]
        r[0] += r[2]
        r[4] += r[5]
        r[6] += r[7]
        r[4] += r[6]
        r[0] += r[4]
        for i in range(full, lo + n):
            P[lo] += P[i]
    else:
        half = n // 2
        half -= half % 8
        _pairwise_into_first(P, lo, half)
        _pairwise_into_first(P, lo + half, n - half)
        P[lo] += P[lo + half]


@lru_cache(maxsize=64)
def _compiled_sums_match_numpy(z: int) -> bool:
    """Whether the compiled loop (:func:`abm.kernels.linear_rows`) gives this numpy's
    ``np.add.reduce(X * w, axis=1) + b`` for z features, on the probe of
    :func:`_feature_sums_match_numpy` (a numpy that sums otherwise keeps its own path)."""
    X, w = _probe(z)
    for b in (0.5, 0.0, -0.0):
        expected = np.add.reduce(X * w, axis=1) + b
        if expected.tobytes() != compiled("linear_rows")(X, w, b).tobytes():
            return False
    return True


def _probe(z: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows (8229, z) of mixed signs, magnitudes and signed zeros, and weights (z,)."""
    rng = np.random.default_rng(z)
    X = rng.standard_normal((_BLOCK_ROWS + 37, z)) * 10.0 ** rng.integers(-8, 9, (1, z))
    X[:5] = -0.0
    X[5:9] = 0.0
    w = rng.standard_normal(z)
    w[: z // 2] *= -1.0
    return X, w


@lru_cache(maxsize=64)
def _feature_sums_match_numpy(z: int) -> bool:
    """Whether :func:`_blocked_row_sums` reproduces this numpy's row sums for z features.

    Checked once per z on a probe of mixed signs, magnitudes and signed zeros; a numpy
    that sums in another order keeps the plain path, so results never depend on the path.
    """
    X, w = _probe(z)
    expected = np.add.reduce(X * w, axis=1)
    return expected.tobytes() == _blocked_row_sums(X, w).tobytes()
