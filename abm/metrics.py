"""Metrics of durable-recourse-rl §3.2, and the eq. 16 reward, as pure functions.

A ratio whose denominator is empty is undefined for that tick and returned as NaN;
episode means skip undefined ticks (:func:`nanmean`); :func:`reward_eq16` states its rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:  # pandas is only passed in: importing the metrics must not load it
    import pandas as pd


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator, NaN when the denominator is 0."""
    return float(numerator) / denominator if denominator > 0 else float("nan")


def ratios(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """:func:`ratio` of each pair (n,), bit for bit: NaN where the denominator is 0."""
    num, den = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    out = np.full(num.shape, np.nan)
    return np.divide(num, den, out=out, where=den > 0)


def recourse_reliability(n_succ_accepted: int, n_succ: int) -> float:
    """Eq. 2: share of successful implementers reapplying now who were accepted."""
    return ratio(n_succ_accepted, n_succ)


def recourse_feasibility(n_succ: int, n_rejected_window: int) -> float:
    """Eq. 3: successful implementers reapplying now over everyone rejected in [t-T, t-1]."""
    return ratio(n_succ, n_rejected_window)


def gini(values: np.ndarray) -> float:
    """Eq. 1 over values g (n,): sum |g_i - g_j| / (2 n sum g); NaN if n = 0 or sum g = 0.

    Non-finite values are left out. Equal values give exactly 0, and round-off never
    makes the result negative (SPEC §2, edge cases). The sum is a pairwise reduction
    whose order depends on n only, so it has the same bits on every machine and BLAS.
    """
    g = np.asarray(values, dtype=float)
    finite = np.isfinite(g)
    if g.ndim != 1 or not g.flags.c_contiguous or np.count_nonzero(finite) != g.shape[0]:
        g = g[finite]
    total = np.add.reduce(g)
    n = g.shape[0]
    if n == 0 or total <= 0:
        return float("nan")
    g = g.copy()
    g.sort()  # np.sort without its wrapper
    if g[0] == g[-1]:
        return 0.0
    # sum over ordered pairs of |g_i - g_j| = 2 sum_i (2i - n - 1) g_(i), i = 1..n
    g *= _rank_weights(n)
    pair_sum = 2.0 * float(np.add.reduce(g))
    return max(pair_sum / (2.0 * n * float(total)), 0.0)


def _rank_weights(n: int) -> np.ndarray:
    """(2i - n - 1) for i = 1..n, shape (n,); small n (every tick's) are kept, read only."""
    return _small_rank_weights(n) if n <= 1024 else 2.0 * np.arange(1, n + 1) - n - 1


@lru_cache(maxsize=256)
def _small_rank_weights(n: int) -> np.ndarray:
    w = 2.0 * np.arange(1, n + 1) - n - 1
    w.setflags(write=False)
    return w


def recommendation_cost(
    X: np.ndarray, X_cf: np.ndarray, d: np.ndarray, onehot: Any = None
) -> np.ndarray:
    """Eq. 18 (with true d) or eq. 5 (with estimated d): sum_i |x_cf_i - x_i| d_i, shape (n,);
    a one-hot switch a -> b counts c(a, b) d_b (``onehot``: abm.onehot.OneHot or None)."""
    if onehot is not None:
        moved = onehot.moves(X, X_cf)
    else:
        moved = np.subtract(X_cf, X)
        np.abs(moved, out=moved)  # in place: one (n, z) temporary instead of two
    one_d = d.ndim == 1 if isinstance(d, np.ndarray) else np.ndim(d) == 1
    return moved @ d if one_d else (moved * d).sum(axis=1)


def recommendation_error(cf_scores: np.ndarray, goals: np.ndarray) -> np.ndarray:
    """Eq. 4: |M(x_cf) - g|, shape (n,)."""
    return np.abs(np.asarray(cf_scores) - np.asarray(goals))


def nanmean(values: np.ndarray | pd.Series) -> float:
    """Mean over defined (non-NaN) entries; NaN if none is defined."""
    v = np.asarray(values, dtype=float)
    if v.ndim == 1 and v.size and v.flags.c_contiguous:
        total = np.add.reduce(v)
        if total == total:  # no NaN among the entries: the sum of all of them is the sum
            return float(total / v.size)
    v = v[v == v]  # drop NaN without the overhead of np.nanmean on tiny arrays
    return float(np.add.reduce(v) / v.size) if v.size else float("nan")


def reward_eq16(rr, rf, alpha: float, tau: float, floor: float):
    """Eq. 16, R = α(1 + 0.9 log RR) + τ(1 + 0.9 log RF), per tick (elementwise).

    ``rr``, ``rf``: scalars or arrays of one tick's eq. 2 and eq. 3; returns a float for
    scalars, else an array. RR and RF below ``floor`` are raised to it, so RR = 0 or
    RF = 0 costs 1 + 0.9 log(floor) per unit weight instead of -inf.

    The one NaN rule: a tick whose RF is undefined (nobody was rejected within the
    window, so nothing could be measured) has reward 0. On every other tick eq. 16 has
    both terms, as in the paper: an undefined RR there means nobody carried out their
    advice (RF = 0), the outcome RF was introduced to punish, and RR counts as ``floor``.
    Dropping the RR term instead would let a goal selector escape a low RR by making
    advice unattainable.
    """
    if isinstance(rr, float) and isinstance(rf, float):  # one tick: the same steps on scalars
        if rf != rf:
            return 0.0
        total = 0.0
        if alpha:
            total += alpha * (1.0 + 0.9 * np.log(np.fmax(np.float64(rr), floor)))
        if tau:
            total += tau * (1.0 + 0.9 * np.log(np.fmax(np.float64(rf), floor)))
        return float(total)
    rr = np.asarray(rr, dtype=float)
    rf = np.asarray(rf, dtype=float)
    measured = rf == rf
    out = np.zeros(np.broadcast(rr, rf).shape)
    if alpha:
        out += alpha * (1.0 + 0.9 * np.log(np.fmax(rr, floor)))  # fmax: the number over a NaN
    if tau:
        out += tau * (1.0 + 0.9 * np.log(np.fmax(rf, floor)))
    if not measured.all():
        out = np.where(measured, out, 0.0)
    return float(out) if out.ndim == 0 else out


#: advice clears a threshold th when M(x_cf) >= th - CLEAR_TOL: rounding of one point's
#: score (~1e-15) never flips it, and the 1e-6 by which candidates tied at a threshold aim
#: above it is never taken for rounding (a tolerance of 1e-6 made those ties flip)
CLEAR_TOL = 1e-9


@dataclass(frozen=True)
class EpisodeFigure:
    """One figure of the episode summary (``summary.json``, the CLI's summary table), from
    the tick column ``column``: its ``how`` (``sum``, ``mean`` over defined ticks, ``last``,
    or ``derived``: computed by its owner, not by :func:`summarise`) and the CLI's
    ``label`` ("": not shown there)."""

    column: str
    how: Literal["sum", "mean", "last", "derived"]
    label: str


#: the world's own episode figures, in the CLI's order; the extensions declare theirs on
#: their class (:attr:`abm.mechanisms.Mechanism.episode`)
EPISODE = (
    EpisodeFigure("rr", "mean", "recourse reliability RR (mean over defined ticks)"),
    EpisodeFigure("rf", "mean", "recourse feasibility RF (mean over defined ticks)"),
    EpisodeFigure("gini", "mean", "Gini of goal scores (mean)"),
    EpisodeFigure("gini_cost", "mean", "Gini of true costs among the advised (mean)"),
    EpisodeFigure("mean_cost", "mean", "mean recommended cost (true d)"),
    EpisodeFigure("n_accepted", "sum", "accepted"),
    EpisodeFigure("n_dropped", "sum", "dropped out"),
    EpisodeFigure("n_reapplied", "sum", "reapplications"),
    EpisodeFigure("n_succ", "sum", "reapplied after full implementation"),
    EpisodeFigure("effort", "sum", "effort spent (sum |dx| d)"),
    EpisodeFigure("wasted_effort", "sum", "effort of those who dropped out"),
    EpisodeFigure("mean_time_to_accept", "mean", "mean ticks from entry to acceptance"),
    EpisodeFigure("n_unadvised", "sum", "rejections without advice"),
    EpisodeFigure("n_unreached", "sum", "  of which: goal out of reach"),
    EpisodeFigure("n_no_change", "sum", "  of which: advice changed nothing"),
    EpisodeFigure("n_withheld", "sum", "  of which: withheld by a budget"),
    EpisodeFigure("n_below_threshold", "sum", "advice short of the threshold"),
)
#: the episode means the studies compare (a subset of :data:`EPISODE`)
EPISODE_METRICS = ("rr", "rf", "gini", "gini_cost", "mean_cost")


def summarise(figures: tuple[EpisodeFigure, ...], ticks: Any) -> dict[str, float]:
    """The ``figures`` whose columns ``ticks`` (a tick table) has: counts (``n_*``) summed
    as int, other sums as float, ``last`` the final tick's value, ``mean`` over defined
    ticks."""
    out: dict[str, float] = {}
    for f in figures:
        if f.how == "derived" or f.column not in ticks:
            continue
        col = ticks[f.column]
        if f.how == "sum":
            total = col.sum()
            out[f.column] = int(total) if f.column.startswith("n_") else float(total)
        elif f.how == "last":
            out[f.column] = col.iloc[-1].item() if len(col) else math.nan
        else:
            out[f.column] = nanmean(col)
    return out


def episode_summary(ticks: pd.DataFrame) -> dict[str, float]:
    """The world's own episode figures (:data:`EPISODE`) from the per-tick table."""
    return summarise(EPISODE, ticks)
