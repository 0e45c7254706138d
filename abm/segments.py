"""Per-episode reductions over flat arrays: episode b's values at rows
``offsets[b]:offsets[b+1]`` (``counts`` (B,) of them), each reduced with the bits its
episode's array alone gives.

numpy sums a 1-D array pairwise, in an order fixed by its length; ``np.add.reduceat`` does
not (it runs each segment in turn). Episodes of equal length are therefore reduced as the
rows of one (m, n) array, whose row sums follow the 1-D order: one call per distinct length,
never one per episode. With one episode each function is its scalar metric on the array.
"""

from __future__ import annotations

import numpy as np

from abm import metrics


def by_length(counts: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(n, episodes (m,), rows (m, n)) for each length n > 0 among ``counts`` (B,): the
    episodes with n values and the flat positions of their values, row by row."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = []
    for n in np.unique(counts).tolist():
        if n == 0:
            continue
        eps = (counts == n).nonzero()[0]
        out.append((n, eps, starts.take(eps)[:, None] + np.arange(n)))
    return out


def per_row(values: np.ndarray, counts: np.ndarray) -> np.ndarray | float:
    """Each episode's value (B,) repeated over its ``counts`` rows (a scalar for one)."""
    if counts.shape[0] == 1:
        return values[0]
    return values.take(np.repeat(np.arange(counts.shape[0]), counts))


def first(n_first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(counts.sum(),) bool: the first ``n_first[b]`` of each episode's ``counts[b]`` rows."""
    if counts.shape[0] == 1:
        return np.arange(counts[0]) < n_first[0]
    episode = np.repeat(np.arange(counts.shape[0]), counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return np.arange(episode.shape[0]) - starts.take(episode) < n_first.take(episode)


def count(mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) int64: the True values of ``mask`` in each episode."""
    if counts.shape[0] == 1:
        return np.array([np.count_nonzero(mask)], dtype=np.int64)
    index = np.repeat(np.arange(counts.shape[0]), counts)
    return np.bincount(index[mask], minlength=counts.shape[0]).astype(np.int64)


def sums(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) each episode's ``np.add.reduce`` of its values (0 where it has none)."""
    out = np.zeros(counts.shape[0])
    if counts.shape[0] == 1:
        out[0] = np.add.reduce(x)
        return out
    for _, eps, rows in by_length(counts):
        out[eps] = np.add.reduce(x.take(rows), axis=1)
    return out


def nanmeans(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) :func:`abm.metrics.nanmean` of each episode's values."""
    if counts.shape[0] == 1:
        return np.array([metrics.nanmean(x)])
    total = sums(x, counts)
    out = np.full(counts.shape[0], np.nan)
    clean = (counts > 0) & (total == total)
    out[clean] = total[clean] / counts[clean]
    # an episode with a NaN among its values: the mean of the others, as the metric takes it
    starts = np.concatenate([[0], np.cumsum(counts)])
    for b in ((counts > 0) & ~clean).nonzero()[0].tolist():
        out[b] = metrics.nanmean(x[starts[b] : starts[b + 1]])
    return out


def ginis(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) :func:`abm.metrics.gini` (eq. 1) of each episode's values."""
    if counts.shape[0] == 1:
        return np.array([metrics.gini(x)])
    finite = np.isfinite(x)
    if np.count_nonzero(finite) != finite.shape[0]:  # non-finite values are left out
        counts = count(finite, counts)
        x = x[finite]
    out = np.full(counts.shape[0], np.nan)
    for n, eps, rows in by_length(counts):
        g = x.take(rows)
        total = np.add.reduce(g, axis=1)
        g.sort(axis=1)
        equal = g[:, 0] == g[:, -1]
        g *= metrics._rank_weights(n)
        pair = 2.0 * np.add.reduce(g, axis=1)
        value = pair / (2.0 * n * total)
        value = np.where(0.0 > value, 0.0, value)  # max(value, 0.0), first argument on ties
        value[equal] = 0.0
        value[total <= 0] = np.nan
        out[eps] = value
    return out
