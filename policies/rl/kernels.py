"""Compiled encoding of a batch's observations (:func:`policies.rl.encoding.encode_batch`),
with Numba.

An observation is a few histograms, counts and column means of each episode's rows; in
NumPy a batch of them is some forty calls over the flat rows, most of their cost the
calls' own. Here one loop over the rows fills every episode's entries.

Every entry is what NumPy computes for the episode alone, with the same bits: counts are
integers; a histogram bin is the number of edges at or below the clipped value, as
``searchsorted(side="right")`` finds it; a column mean sums the episode's rows one after
another from +0.0 (so a column of -0.0 sums to +0.0), as ``np.add.reduce(X, axis=0)``
does for z >= 2 columns, and divides once; every division is one IEEE division of the same two doubles.
tests/test_speed_paths.py checks the rows against :func:`encode_observation` of each
episode, NaN, infinities, -0.0 and empty episodes included.
"""

from __future__ import annotations

from numba import njit

from abm.kernels import check_rows


@njit(cache=True)
def _bin(v, edges):  # pragma: no cover - compiled
    """Bin of a value clipped to [0, 1] (not NaN): the edges at or below it, less one;
    1 falls in the last, closed bin."""
    if v < 0.0:
        v = 0.0
    elif v > 1.0:
        v = 1.0
    n = 0
    for e in edges:
        if e <= v:
            n += 1
        else:
            break
    last = edges.shape[0] - 2
    return min(n - 1, last)


@njit(cache=True)
def _histogram_and_means(out, scores, X, counts, edges, hist, mean, means):  # pragma: no cover
    """Each episode's histogram of its non-NaN ``scores`` into out[b, hist:] (counts)
    and, with ``means``, the column means of its rows of X into out[b, mean:]: each
    column's rows added one after another from +0.0, as ``np.add.reduce(X, axis=0)``
    sums z >= 2 columns, then one division."""
    lo = 0
    for b in range(counts.shape[0]):
        row = out[b]
        hi = lo + counts[b]
        for i in range(lo, hi):
            v = scores[i]
            if v == v:
                row[hist + _bin(v, edges)] += 1.0
        if means and hi > lo:
            for j in range(X.shape[1]):
                s = 0.0
                for i in range(lo, hi):
                    s += X[i, j]
                row[mean + j] = s / (hi - lo)
        lo = hi


@njit(cache=True)
def encode_rows(  # pragma: no cover - compiled
    out,
    app_X,
    app_scores,
    app_counts,
    w_X,
    w_scores,
    w_goal,
    w_last_tick,
    w_n_apps,
    w_counts,
    edges,
    tick,
    validity,
    n_apps,
    scale,
    means,
):
    """Fill ``out`` (B, size) float64, zeros on entry, from entry 4 on: the histograms of
    the applicants' scores, the window's scores and its finite goals (counts / scale),
    the window's count of no goal, its ages and application counts, then (``means``)
    the column means of the applicants' and the window's features. Rows flat, episode
    after episode: ``app_counts`` and ``w_counts`` (B,) each."""
    B = app_counts.shape[0]
    check_rows(app_counts, app_X.shape[0])
    check_rows(app_counts, app_scores.shape[0])
    check_rows(w_counts, w_X.shape[0])
    check_rows(w_counts, w_scores.shape[0])
    check_rows(w_counts, w_goal.shape[0])
    check_rows(w_counts, w_last_tick.shape[0])
    check_rows(w_counts, w_n_apps.shape[0])
    nb = edges.shape[0] - 1
    z = app_X.shape[1]
    hist_w, hist_g = 4 + nb, 4 + 2 * nb
    no_goal = 4 + 3 * nb
    ages = no_goal + 1
    apps = ages + validity
    mean_a = apps + n_apps
    mean_w = mean_a + z
    _histogram_and_means(out, app_scores, app_X, app_counts, edges, 4, mean_a, means)
    _histogram_and_means(out, w_scores, w_X, w_counts, edges, hist_w, mean_w, means)
    lo = 0
    for b in range(B):
        row = out[b]
        hi = lo + w_counts[b]
        for i in range(lo, hi):
            g = w_goal[i]
            if g - g == 0.0:  # finite
                row[hist_g + _bin(g, edges)] += 1.0
            else:
                row[no_goal] += 1.0
            age = tick - w_last_tick[i]
            age = min(max(age, 1), validity)
            row[ages + age - 1] += 1.0
            n = min(max(w_n_apps[i], 1), n_apps)
            row[apps + n - 1] += 1.0
        lo = hi
    # counts / scale: one division each, as NumPy divides the integer counts
    for b in range(B):
        row = out[b]
        for j in range(4, mean_a):
            row[j] = row[j] / scale
