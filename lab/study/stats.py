"""Intervals, tests and verdicts for study reports (issue 48): the world is the unit.

A study runs W worlds (``world_seed``) x E paired episodes (``seed``). Episodes of one
world share its draw of the population and say little about the next world, so worlds
are a random effect: every interval and test here works on the W world means (NaN
episodes skipped within a world, worlds without a defined episode dropped), and the
figure of a policy is the mean of its world means.

The interval (:func:`world_interval`) is Student's t on the world means with Hall's
(1992) skewness correction. ``tests/test_stats.py`` chose it by coverage of a nominal 95 %
interval, with 10 episodes per world, world SD 0.15 and episode SD 0.05 (200,000
simulated studies per cell for the t intervals, 4,000 for BCa, 2,000 for the percentile
bootstrap):

================================  ======  =====  ======  =====  ======  =====
worlds                              5       5      10      10     20      20
world effects                     normal   exp   normal   exp   normal   exp
================================  ======  =====  ======  =====  ======  =====
percentile (old nested_bootstrap)  .840    .806   .895    .868   .927    .912
BCa on world means (scipy)         .823    .801   .892    .877   .932    .907
Student t on world means           .951    .886   .950    .902   .949    .920
Hall-corrected t (this module)     .951    .911   .948    .932   .949    .944
================================  ======  =====  ======  =====  ======  =====

Plain t sits on the bars the test sets for skewed worlds (90 % at 10 worlds, 92 % at
20), so it could pass or fail by the simulation's luck; BCa undercovers like the
percentile bootstrap, since a bootstrap of 10 world means has no allowance for the
unknown spread (t's n - 1 degrees of freedom). Hall's correction (P. Hall, "On the
removal of skewness by transformation", JRSS B 54, 1992) stays within 0.2 points of t
for normal worlds and adds the skewness term t lacks.

Tests are on the same world means: a two-sided t-test of the paired difference
(:func:`difference_p`) and TOST for equivalence within ±bound (:func:`tost_p`), both by
statsmodels. A report's family of contrasts is corrected together (:func:`adjust`, Holm
by default) before :func:`verdict` reads them; no verdict is given with fewer than
:data:`MIN_WORLDS_FOR_VERDICT` worlds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ALPHA",
    "BOUNDS",
    "DIRECTIONS",
    "MIN_WORLDS_FOR_VERDICT",
    "Interval",
    "add_verdicts",
    "adjust",
    "difference_p",
    "judge",
    "paired_interval",
    "tost_p",
    "verdict",
    "world_interval",
    "world_intervals",
    "world_means",
]

#: fewer worlds than this give intervals but no verdict: with 5 worlds even the corrected
#: interval misses skewed world effects too often (see the table above)
MIN_WORLDS_FOR_VERDICT = 10
#: the level at which a (corrected) test counts
ALPHA = 0.05
#: equivalence bounds ±b a report states per figure: 0.02 for RR, RF and every share in
#: [0, 1] (a difference of two shares for the gaps); figures not listed get no "level"
BOUNDS: dict[str, float] = dict.fromkeys(
    """rr rf accept_rate never_accepted_share accepted_new_share accepted_advised_share
    advice_paid valid_at_reapply valid_vs_issued wasted_share unadvised_share unreached_share
    withheld_share no_change_share short_of_goal_share noncausal_share qualified_rate
    valid_outstanding valid_after_refit own_goal_outstanding own_goal_after_refit
    disagreement still_valid dp_gap accept_gap rr_gap rf_gap""".split(),
    0.02,
)
#: figure -> True when higher is better, False when lower is; a figure not listed (the
#: signed gaps, shifts, budgets) has no direction and reads "higher" / "lower"
DIRECTIONS: dict[str, bool] = {
    **dict.fromkeys(
        """rr rf accept_rate advice_paid paid_per_effort valid_at_reapply valid_vs_issued
        true_gain qualified_rate valid_outstanding valid_after_refit own_goal_outstanding
        own_goal_after_refit still_valid paid_per_budget""".split(),
        True,
    ),
    **dict.fromkeys(
        """time_to_accept median_time_to_accept never_accepted_share cost_recommended
        cost_incurred effort wasted_share cvar95_effort unadvised_share unreached_share
        no_change_share short_of_goal_share noncausal_share dp_gap w_dist
        disagreement""".split(),
        False,
    ),
}
_METHODS = {"holm": "holm", "bh": "fdr_bh", "fdr_bh": "fdr_bh"}


class Interval(NamedTuple):
    """Mean of the world means, its interval and the number of worlds it rests on."""

    mean: float
    lo: float
    hi: float
    n_worlds: int


def world_means(values: np.ndarray) -> np.ndarray:
    """(..., W, E) -> (..., W): each world's mean over its defined (non-NaN) episodes,
    NaN for a world without one."""
    v = np.asarray(values, dtype=float)
    if v.ndim < 2:
        raise ValueError(f"values must be (..., worlds, episodes), got shape {v.shape}")
    defined = ~np.isnan(v)
    n = defined.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(defined, v, 0.0).sum(axis=-1) / n, np.nan)


def _hall_inverse(x: np.ndarray, gamma: np.ndarray, n: np.ndarray) -> np.ndarray:
    """W solving x = W + γW²/3 + γ²W³/27 + γ/(6n) (Hall 1992): the cubic is
    ((1 + γW/3)³ − 1)/γ + γ/(6n), increasing in W for every γ, so it inverts in closed form."""
    small = np.abs(gamma) < 1e-8  # the t interval; avoids 0/0 in the closed form
    g = np.where(small, 1.0, gamma)
    exact = 3.0 / g * (np.cbrt(1.0 + g * (x - g / (6.0 * n))) - 1.0)
    return np.where(small, x - gamma / (6.0 * n), exact)


def _interval_of_means(m: np.ndarray, level: float) -> tuple[np.ndarray, ...]:
    """(..., W) world means, NaN for dropped worlds -> (mean, lo, hi, n), each (...)."""
    from scipy import stats

    ok = ~np.isnan(m)
    n = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, m, 0.0).sum(axis=-1) / n
        dev = np.where(ok, m - mean[..., None], 0.0)
        s = np.sqrt((dev**2).sum(axis=-1) / (n - 1))
        # skewness of the world means: third central moment over s³ (s with n - 1)
        gamma = (dev**3).sum(axis=-1) / n / s**3
        q = stats.t.ppf((1 + level) / 2, n - 1)
        # Hall: sqrt(n) g((mean - mu) / s) is close to Student's t with n - 1 df
        lo = mean - s * _hall_inverse(q / np.sqrt(n), gamma, n)
        hi = mean - s * _hall_inverse(-q / np.sqrt(n), gamma, n)
    flat = (n > 1) & (s == 0)  # every world alike: nothing varies, the interval is a point
    lo, hi = np.where(flat, mean, lo), np.where(flat, mean, hi)
    lo, hi = np.where(n > 1, lo, np.nan), np.where(n > 1, hi, np.nan)
    return np.where(n > 0, mean, np.nan), lo, hi, n


def world_intervals(values: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, ...]:
    """:func:`world_interval` over the leading axes of ``values`` (..., W, E): four arrays
    (...) of mean, lo, hi and worlds (no one-world fallback: lo, hi NaN below 2 worlds)."""
    return _interval_of_means(world_means(values), level)


def world_interval(values: np.ndarray, level: float = 0.95) -> Interval:
    """Mean of world means of ``values`` (W, E) and its ``level`` interval, worlds as a
    random effect (Hall-corrected t on the world means, see the module docstring).

    NaN episodes are skipped within a world and worlds without a defined episode dropped;
    ``n_worlds`` counts the worlds kept. One world: the interval is over its episodes and
    speaks of that world alone (``n_worlds`` = 1 says so). NaN where undefined."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"values must be (worlds, episodes), got shape {v.shape}")
    mean, lo, hi, n = (x.item() for x in world_intervals(v, level))
    if n == 1:
        world = v[~np.all(np.isnan(v), axis=1)][0]
        _, lo, hi, _ = (x.item() for x in world_intervals(world[:, None], level))
    return Interval(float(mean), float(lo), float(hi), int(n))


def paired_interval(values: np.ndarray, baseline: np.ndarray, level: float = 0.95) -> Interval:
    """:func:`world_interval` of ``values - baseline``, both (W, E) on the same worlds and
    episode seeds: the paired difference (an episode counts where both are defined)."""
    return world_interval(_difference(values, baseline), level)


def _difference(values: np.ndarray, baseline: np.ndarray | None) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if baseline is None:
        return v
    b = np.asarray(baseline, dtype=float)
    if b.shape != v.shape:
        raise ValueError(f"values {v.shape} and baseline {b.shape} must pair up")
    return v - b


def _defined_world_means(d: np.ndarray) -> np.ndarray:
    m = world_means(d)
    if m.ndim != 1:
        raise ValueError(f"values must be (worlds, episodes), got shape {d.shape}")
    return m[~np.isnan(m)]


def difference_p(values: np.ndarray, baseline: np.ndarray | None = None) -> float:
    """Two-sided p-value of a t-test that the mean of the world means of ``values -
    baseline`` (each (W, E), paired; ``values`` alone when no baseline) is 0. NaN below 2
    worlds; with every world's mean alike, 0 if that mean is not 0, else 1."""
    from statsmodels.stats.weightstats import DescrStatsW

    m = _defined_world_means(_difference(values, baseline))
    if m.size < 2:
        return math.nan
    if np.all(m == m[0]):  # no spread: the t statistic is 0/0 or ±inf
        return 0.0 if m[0] != 0 else 1.0
    return float(DescrStatsW(m).ttest_mean(0.0)[1])


def tost_p(
    values: np.ndarray, baseline: np.ndarray | None = None, bound: float | None = None
) -> float:
    """p-value of TOST (two one-sided t-tests) that the mean of the world means of
    ``values - baseline`` lies within (−bound, bound): small means equivalent. NaN without
    a bound or below 2 worlds; with every world's mean alike, 0 inside the bounds, else 1."""
    from statsmodels.stats.weightstats import DescrStatsW

    if bound is None or not bound > 0:
        return math.nan
    m = _defined_world_means(_difference(values, baseline))
    if m.size < 2:
        return math.nan
    if np.all(m == m[0]):
        return 0.0 if abs(m[0]) < bound else 1.0
    return float(DescrStatsW(m).ttost_mean(-bound, bound)[0])


def adjust(
    pvalues: Iterable[float], method: str = "holm", alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """Family-wise (``holm``) or false-discovery-rate (``bh``) correction of a report's
    family of p-values (n,): (adjusted p-values (n,), which survive at ``alpha`` (n,)).
    NaN p-values (contrasts not tested) stay NaN, do not survive and do not count in the
    family's size."""
    from statsmodels.stats.multitest import multipletests

    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    p = np.asarray(list(pvalues), dtype=float)
    adjusted = np.full(p.shape, np.nan)
    survives = np.zeros(p.shape, dtype=bool)
    tested = np.isfinite(p)
    if tested.any():
        reject, corrected, _, _ = multipletests(p[tested], alpha=alpha, method=_METHODS[method])
        adjusted[tested], survives[tested] = corrected, reject
    return adjusted, survives


def verdict(
    diff: float,
    p: float,
    tost: float = math.nan,
    n_worlds: int = 0,
    higher_is_better: bool | None = None,
    alpha: float = ALPHA,
    lo: float = math.nan,
    hi: float = math.nan,
) -> str:
    """The verdict on one contrast from its mean difference ``diff``, its adjusted
    p-values (``p`` of :func:`difference_p`, ``tost`` of :func:`tost_p`; NaN: not tested)
    and the interval [``lo``, ``hi``] the report prints (NaN: none).

    "better" / "worse" (by ``higher_is_better``; "higher" / "lower" without a direction)
    when the difference test survives and the printed interval excludes 0, else "level"
    when TOST does, else "inconclusive"; "inconclusive (n worlds)" below
    :data:`MIN_WORLDS_FOR_VERDICT` worlds. The interval is Hall's skew-corrected t and the
    test a plain t-test on the same world means: with a few skewed worlds they can
    disagree, and a report must not call a difference whose own interval covers 0. A
    difference that survives wins over equivalence: with many worlds a real but small
    difference can pass both."""
    if n_worlds < MIN_WORLDS_FOR_VERDICT:
        return f"inconclusive ({n_worlds} world{'' if n_worlds == 1 else 's'})"
    covers_zero = lo <= 0.0 <= hi  # False when either end is NaN
    if p <= alpha and not covers_zero:
        up = diff > 0
        if higher_is_better is None:
            return "higher" if up else "lower"
        return "better" if up == higher_is_better else "worse"
    if tost <= alpha:
        return "level"
    return "inconclusive"


def judge(
    diff: Iterable[float],
    p: Iterable[float],
    tost: Iterable[float],
    worlds: Iterable[float],
    higher_is_better: bool | None | Sequence[bool | None] = None,
    method: str = "holm",
    alpha: float = ALPHA,
    lo: Iterable[float] | None = None,
    hi: Iterable[float] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The verdicts of one report's family of contrasts, each given by its mean difference,
    p-value of :func:`difference_p`, of :func:`tost_p`, number of worlds and (optional)
    printed interval ``lo``, ``hi`` (n,).

    Contrasts with fewer than :data:`MIN_WORLDS_FOR_VERDICT` worlds stay out of the family;
    difference and TOST p-values are each corrected by ``method`` (:func:`adjust`).
    ``higher_is_better``: one direction for all, or one per contrast. Returns the adjusted
    p-values (n,), the adjusted TOST p-values (n,) and the verdicts (:func:`verdict`)."""
    diff, p, tost = (np.asarray(list(x), dtype=float) for x in (diff, p, tost))
    n_worlds = np.nan_to_num(np.asarray(list(worlds), dtype=float)).astype(int)
    nan = np.full(diff.shape[0], np.nan)
    lo = nan if lo is None else np.asarray(list(lo), dtype=float)
    hi = nan if hi is None else np.asarray(list(hi), dtype=float)
    enough = n_worlds >= MIN_WORLDS_FOR_VERDICT
    p_adj = adjust(np.where(enough, p, np.nan), method, alpha)[0]
    tost_adj = adjust(np.where(enough, tost, np.nan), method, alpha)[0]
    if higher_is_better is None or isinstance(higher_is_better, bool):
        higher_is_better = [higher_is_better] * diff.shape[0]
    cases = zip(diff, p_adj, tost_adj, n_worlds, higher_is_better, lo, hi, strict=True)
    said = [verdict(d, pa, ta, int(w), up, alpha, a, b) for d, pa, ta, w, up, a, b in cases]
    return p_adj, tost_adj, said


def _direction(higher_is_better: Mapping[str, bool] | bool | None, figure: str) -> bool | None:
    if isinstance(higher_is_better, Mapping):
        return higher_is_better.get(figure)
    return higher_is_better


def add_verdicts(
    table: pd.DataFrame,
    keys: Sequence[str],
    higher_is_better: Mapping[str, bool] | bool | None = None,
    method: str = "holm",
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """``table`` (rows of :func:`lab.study.analysis.paired_rows`) with, for each baseline
    key, ``vs_<key>_p_adj``, ``vs_<key>_tost_p_adj`` and ``vs_<key>_verdict``.

    The family is every contrast of ``table`` (each row and key) with at least
    :data:`MIN_WORLDS_FOR_VERDICT` worlds and a defined p-value: pass one report's table.
    Difference p-values and TOST p-values of that family are each corrected by ``method``.
    ``higher_is_better``: a figure -> direction mapping (default :data:`DIRECTIONS`), or
    one direction for every figure."""
    directions = DIRECTIONS if higher_is_better is None else higher_is_better
    out = table.copy()
    cells = [(i, k) for k in keys for i in out.index]

    def column(name: str) -> list[float]:
        return [out.at[i, f"vs_{k}{name}"] for i, k in cells]

    ups = [_direction(directions, out.at[i, "figure"]) for i, _ in cells]
    p_adj, tost_adj, said = judge(
        column(""),
        column("_p"),
        column("_tost_p"),
        column("_worlds"),
        ups,
        method,
        alpha,
        column("_lo"),
        column("_hi"),
    )
    for k in keys:
        out[f"vs_{k}_p_adj"] = np.nan
        out[f"vs_{k}_tost_p_adj"] = np.nan
        out[f"vs_{k}_verdict"] = ""
    for (i, k), p, t, v in zip(cells, p_adj, tost_adj, said, strict=True):
        if out.at[i, f"vs_{k}"] != out.at[i, f"vs_{k}"]:  # the baseline, or it did not run
            continue
        out.at[i, f"vs_{k}_p_adj"], out.at[i, f"vs_{k}_tost_p_adj"] = p, t
        out.at[i, f"vs_{k}_verdict"] = v
    return out
