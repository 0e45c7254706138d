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
from abm.compiled import compiled

# the layouts of the last few ``counts`` seen (a tick reduces over the same few several
# times): their arrays are read only; threads (a dashboard's forecast beside its runs)
# share the dict through single operations only, so a lost race computes one twice
_LAYOUTS: dict[tuple, _Layout] = {}
_KEEP = 16


class _Layout:
    """What reductions over one ``counts`` (B,) need: each row's episode (n,), each
    episode's first row (B,) and the rows grouped by length (:func:`by_length`)."""

    __slots__ = ("episode", "starts", "_lengths", "_counts")

    def __init__(self, counts: np.ndarray) -> None:
        self._counts = counts
        # one compiled loop where a batch asks (a run alone keeps NumPy, without Numba;
        # other dtypes keep theirs)
        if counts.dtype == np.int64 and counts.shape[0] > 1:
            self.episode, self.starts = compiled("layout_rows")(counts)
        else:
            self.episode = np.arange(counts.shape[0]).repeat(counts)
            self.starts = counts.cumsum()
            self.starts -= counts
        self._lengths: list | None = None
        for a in (self.episode, self.starts):
            a.flags.writeable = False

    @property
    def lengths(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        if self._lengths is None:
            counts, out = self._counts, []
            if counts.shape[0] == 0:
                self._lengths = out
                return out
            # the episodes by length in one stable sort (each length's in episode order),
            # and every episode's positions in one grid, cut a length at a time
            order = counts.argsort(kind="stable")
            ranked = counts.take(order)
            cuts = ((ranked[1:] != ranked[:-1]).nonzero()[0] + 1).tolist()
            width = int(ranked[-1])
            grid = self.starts[:, None] + np.arange(width)
            for lo, hi in zip([0, *cuts], [*cuts, ranked.shape[0]], strict=True):
                n = int(ranked[lo])
                if n == 0:
                    continue
                eps = order[lo:hi]
                rows = grid[eps, :n]
                eps.flags.writeable = rows.flags.writeable = False
                out.append((n, eps, rows))
            self._lengths = out
        return self._lengths


def _layout(counts: np.ndarray) -> _Layout:
    key = (counts.dtype.num, counts.tobytes())
    got = _LAYOUTS.get(key)
    if got is None:
        got = _Layout(counts.copy())
        if len(_LAYOUTS) >= _KEEP:
            _LAYOUTS.clear()  # no iteration: another thread may be changing the dict
        _LAYOUTS[key] = got
    return got


def by_length(counts: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(n, episodes (m,), rows (m, n)) for each length n > 0 among ``counts`` (B,): the
    episodes with n values and the flat positions of their values, row by row (read
    only)."""
    return _layout(counts).lengths


def offsets(counts: np.ndarray) -> list[int]:
    """(B + 1,) each episode's first row of a flat array, then the rows' number."""
    return [0, *counts.cumsum().tolist()]


def episode_of(counts: np.ndarray) -> np.ndarray:
    """(counts.sum(),) each row's episode (read only)."""
    return _layout(counts).episode


def starts_of(counts: np.ndarray) -> np.ndarray:
    """(B,) each episode's first row (read only)."""
    return _layout(counts).starts


def per_row(values: np.ndarray, counts: np.ndarray) -> np.ndarray | float:
    """Each episode's value (B,) repeated over its ``counts`` rows (a scalar for one)."""
    if counts.shape[0] == 1:
        return values[0]
    return values.take(episode_of(counts))


def first(n_first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(counts.sum(),) bool: the first ``n_first[b]`` of each episode's ``counts[b]`` rows."""
    if counts.shape[0] == 1:
        return np.arange(counts[0]) < n_first[0]
    layout = _layout(counts)
    episode = layout.episode
    return np.arange(episode.shape[0]) - layout.starts.take(episode) < n_first.take(episode)


def count(mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) int64: the True values of ``mask`` in each episode."""
    if counts.shape[0] == 1:
        return np.array([np.count_nonzero(mask)], dtype=np.int64)
    # one compiled loop over the rows (Numba specialises it to the arrays' layouts)
    return compiled("count_rows")(mask, counts)


def sums(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) each episode's ``np.add.reduce`` of its values (0 where it has none); x (k, n)
    (k arrays over the same episodes' rows, reduced in one pass): (k, B)."""
    out = np.zeros(x.shape[:-1] + counts.shape)
    if counts.shape[0] == 1:
        out[..., 0] = np.add.reduce(x, axis=-1)
        return out
    for _, eps, rows in by_length(counts):
        # each (m, n) row of a last-axis reduction is summed in the 1-D array's order
        out[..., eps] = np.add.reduce(x.take(rows, axis=-1), axis=-1)
    return out


def nanmeans(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) :func:`abm.metrics.nanmean` of each episode's values; x (k, n): (k, B)."""
    if x.ndim == 2:
        total = sums(x, counts)
        if (total == total).all():  # no NaN among the values: one division for all
            out = np.full(total.shape, np.nan)
            np.divide(total, counts, out=out, where=counts > 0)
            return out
        return np.stack([nanmeans(row, counts) for row in x])
    if counts.shape[0] == 1:
        return np.array([metrics.nanmean(x)])
    total = sums(x, counts)
    out = np.full(counts.shape[0], np.nan)
    clean = (counts > 0) & (total == total)
    out[clean] = total[clean] / counts[clean]
    # an episode with a NaN among its values: the mean of the others, as the metric takes it
    starts = offsets(counts)
    for b in ((counts > 0) & ~clean).nonzero()[0].tolist():
        out[b] = metrics.nanmean(x[starts[b] : starts[b + 1]])
    return out


def ginis(x: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) :func:`abm.metrics.gini` (eq. 1) of each episode's values; x (k, n): (k, B)."""
    if counts.shape[0] == 1:
        return (
            np.array([metrics.gini(x)]) if x.ndim == 1 else np.array([ginis(r, counts) for r in x])
        )
    finite = np.isfinite(x)
    if np.count_nonzero(finite) != finite.size:  # non-finite values are left out
        if x.ndim == 2:
            return np.stack([ginis(row, counts) for row in x])
        counts = count(finite, counts)
        x = x[finite]
    groups = by_length(counts)
    if len(groups) <= 2:  # few lengths: each group's arrays as they are
        return _ginis_by_length(x, counts, groups)
    # many lengths: the elementwise steps once for all episodes on a grid (B, width),
    # each padded past its values; only the two sums go length by length, over rows of
    # exactly its values, so each has the bits of the episode's own array
    B, width = counts.shape[0], int(counts.max())
    layout = _layout(counts)
    column = np.arange(x.shape[-1]) - layout.starts.take(layout.episode)
    grid = np.full(x.shape[:-1] + (B, width), np.inf)
    grid[..., layout.episode, column] = x
    total = np.zeros(x.shape[:-1] + (B,))
    for _, eps, rows in groups:  # the values' sum in their own order (before sorting)
        total[..., eps] = np.add.reduce(x.take(rows, axis=-1), axis=-1)
    grid.sort(axis=-1)
    at = np.arange(width)
    last = np.maximum(counts - 1, 0)
    equal = grid[..., 0] == grid[..., np.arange(B), last]
    # the rank weights 2i - n - 1 (i = 1..n) of each episode's row, 0 past its values
    weights = 2.0 * (at + 1) - counts[:, None] - 1.0
    inside = at < counts[:, None]
    grid[..., ~inside] = 0.0
    grid *= np.where(inside, weights, 0.0)
    pair = np.zeros(x.shape[:-1] + (B,))
    for n, eps, _ in groups:  # C order: each row summed alone, in the 1-D array's order
        pair[..., eps] = 2.0 * np.add.reduce(np.ascontiguousarray(grid[..., eps, :n]), axis=-1)
    empty = ~(total > 0)  # no values, or a sum <= 0: NaN, as alone (and no 0 / 0)
    total[empty] = np.nan
    value = pair / (2.0 * counts * total)
    value = np.where(0.0 > value, 0.0, value)  # max(value, 0.0), first argument on ties
    value[equal] = 0.0
    value[empty] = np.nan
    return value


def _ginis_by_length(x: np.ndarray, counts: np.ndarray, groups: list) -> np.ndarray:
    """:func:`ginis` one length at a time (``groups``: :func:`by_length`)."""
    out = np.full(x.shape[:-1] + counts.shape, np.nan)
    for n, eps, rows in groups:
        g = x.take(rows, axis=-1)  # (m, n) or (k, m, n)
        total = np.add.reduce(g, axis=-1)
        g.sort(axis=-1)
        equal = g[..., 0] == g[..., -1]
        g *= metrics._rank_weights(n)
        pair = 2.0 * np.add.reduce(g, axis=-1)
        empty = ~(total > 0)  # a sum <= 0: NaN, as alone (and no 0 / 0)
        total[empty] = np.nan
        value = pair / (2.0 * n * total)
        value = np.where(0.0 > value, 0.0, value)  # max(value, 0.0), first argument on ties
        value[equal] = 0.0
        value[empty] = np.nan
        out[..., eps] = value
    return out
