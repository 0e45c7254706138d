"""The constant-margin front as the reference a policy is judged against (issue 48, item 3).

The strongest simple baseline is not one margin but the front of all of them: advice to
reach th_t + c for every c of :data:`MARGINS`, with the policy's recommender. A policy
"beats the margin" only if it lies above that front: more RF at the RR it reaches, or
more RR at the RF it reaches. Studies run the margin grid (:func:`margin_grids`) on the
same worlds and episode seeds as the policies; :func:`episode_arrays` shapes their runs
and :func:`front_rows` gives the distances with intervals and tests (worlds as the
unit, :mod:`lab.study.stats`), :func:`add_front_verdicts` the verdicts.

The read-offs of the Pareto study (:func:`read_off`, :func:`read_front`) live here too, so
that lab.study, which lab.reproduce builds on, can use them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from lab.study.analysis import pareto_front
from lab.study.stats import (
    ALPHA,
    add_verdicts,
    difference_p,
    tost_p,
    world_interval,
    world_means,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FRONT_BOUND",
    "FRONT_FIGURES",
    "MARGINS",
    "MARGIN_RECOMMENDERS",
    "TARGET_RR",
    "FrontDistances",
    "add_front_verdicts",
    "episode_arrays",
    "front_distances",
    "front_rf_at",
    "front_rows",
    "front_rr_at",
    "margin_grids",
    "margin_policies",
    "margin_policy",
    "read_front",
    "read_off",
]

#: the RR at which Table 3 reads RF off a front (durable-recourse-rl)
TARGET_RR = 0.95
#: the constant margins c of the goal th_t + c (issue 14's baselines)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3)
#: front name -> recommender spec of the margin grids every study can run; a trained φ
#: (``rl:path=DIR``) adds "margin-phi" (:func:`margin_grids`)
MARGIN_RECOMMENDERS = {
    "margin-exact-linear": "exact-linear",
    "margin-estimated": "exact-linear:weights=estimated",
    "margin-true": "exact-linear:weights=true",
}
#: the distances to the front: RF - front RF at the policy's RR, RR - front RR at its RF
FRONT_FIGURES = ("rf_at_equal_rr", "rr_at_equal_rf")
#: "matches the front": both distances are RR or RF differences, bound as RR and RF are
FRONT_BOUND = 0.02
_WORDS = {"better": "beats", "worse": "trails", "level": "matches"}


def margin_policy(margin: float, recommender: str) -> str:
    """The policy advising goal th_t + ``margin`` through ``recommender``."""
    return f"last-threshold:margin={margin:g}+{recommender}"


def margin_policies(recommender: str, margins: Sequence[float] = MARGINS) -> list[str]:
    """The margin grid of ``recommender`` (a recommender spec): one policy per margin."""
    return [margin_policy(c, recommender) for c in margins]


def margin_grids(
    phi: str | Path | None = None, margins: Sequence[float] = MARGINS
) -> dict[str, list[str]]:
    """Front name -> its margin-grid policies: exact-linear with uniform, estimated and
    true difficulties, and the trained φ in directory ``phi`` where given ("margin-phi")."""
    recs = dict(MARGIN_RECOMMENDERS)
    if phi is not None:
        recs["margin-phi"] = f"rl:path={phi}"
    return {name: margin_policies(rec, margins) for name, rec in recs.items()}


def episode_arrays(
    runs: pd.DataFrame, worlds: list[int], policies: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """RR and RF of a study's ``runs`` (one row per run: world_seed, policy, seed, rr, rf),
    each (worlds, policies, episodes), episodes in seed order: every policy of a world on
    the same seeds, as a paired study runs them."""
    ordered = runs.sort_values(["world_seed", "policy", "seed"])
    # each (world, policy)'s rows, in seed order: positions read once, not a lookup a cell
    rows = ordered.groupby(["world_seed", "policy"], sort=False).indices
    return tuple(
        np.array([[values[rows[(w, p)]] for p in policies] for w in worlds])
        for values in (ordered[fig].to_numpy(float) for fig in ("rr", "rf"))
    )


def _front(rr: np.ndarray, rf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RR (increasing) and RF (decreasing) of the Pareto front of points rr, rf (p,)."""
    rr, rf = np.asarray(rr, dtype=float), np.asarray(rf, dtype=float)
    front = pareto_front(rr, rf)
    return rr[front], rf[front]


def front_rf_at(rr: np.ndarray, rf: np.ndarray, at: float) -> float:
    """RF of the Pareto front of points rr, rf (p,) at RR ``at``, linear between front
    points; NaN where the front does not span ``at`` (no extrapolation)."""
    fr, ff = _front(rr, rf)
    if fr.size == 0 or not fr[0] <= at <= fr[-1]:
        return math.nan
    return float(np.interp(at, fr, ff))


def front_rr_at(rr: np.ndarray, rf: np.ndarray, at: float) -> float:
    """RR of the Pareto front of points rr, rf (p,) at RF ``at``, linear between front
    points; NaN where the front does not span ``at``."""
    fr, ff = _front(rr, rf)
    if ff.size == 0 or not ff[-1] <= at <= ff[0]:
        return math.nan
    return float(np.interp(at, ff[::-1], fr[::-1]))  # RF falls along the front


def read_off(rr: np.ndarray, rf: np.ndarray, target: float = TARGET_RR) -> tuple[float, float]:
    """(RF, RR) of a method's points rr, rf (p,) read off its Pareto front at RR = ``target``.

    If the front spans ``target``, RF is interpolated linearly between the two front points
    around it (and RR is ``target``); otherwise the front point with RR closest to
    ``target`` is taken, with its own RR. (NaN, NaN) when no point is defined.
    """
    value = front_rf_at(rr, rf, target)
    if value == value:
        return value, target
    fr, ff = _front(rr, rf)
    if fr.size == 0:
        return math.nan, math.nan
    j = int(np.argmin(np.abs(fr - target)))
    return float(ff[j]), float(fr[j])


def read_front(rr: np.ndarray, rf: np.ndarray, at: float = TARGET_RR) -> tuple[float, float]:
    """:func:`read_off` of points whose per-episode RR and RF are rr, rf (p, e): each point
    is its episode mean (NaN episodes left out)."""
    with np.errstate(invalid="ignore"):
        return read_off(np.nanmean(rr, axis=1), np.nanmean(rf, axis=1), at)


class FrontDistances(NamedTuple):
    """Per world (W,): the policy's distance to its world's margin front and why it is
    NaN where it is ("" where defined; "below" / "above" the range the front spans, or
    "undefined" where the policy or the front has no defined point)."""

    rf_at_equal_rr: np.ndarray
    rr_at_equal_rf: np.ndarray
    rf_note: np.ndarray
    rr_note: np.ndarray


def _note(value: float, lo: float, hi: float) -> str:
    if value != value or lo != lo:
        return "undefined"
    return "below" if value < lo else "above" if value > hi else ""


def front_distances(
    rr: np.ndarray, rf: np.ndarray, grid_rr: np.ndarray, grid_rf: np.ndarray
) -> FrontDistances:
    """Distances of a policy to the constant-margin front, world by world.

    ``rr``, ``rf`` (W, E): the policy's episodes; ``grid_rr``, ``grid_rf`` (W, M, E): the
    margin grid's, on the same worlds and episode seeds (:func:`episode_arrays`). In each
    world the front is the Pareto front of the margins' episode means, and the policy is
    its episode-mean point (rr̄, rf̄): ``rf_at_equal_rr`` = rf̄ − front RF at rr̄ and
    ``rr_at_equal_rf`` = rr̄ − front RR at rf̄ (> 0: above the front).

    Why the policy's mean point and not each episode against the front: the front is a
    curve of means, and it bends (RF falls ever faster as RR nears 1), so reading it at
    each episode's noisy RR and averaging is biased by that noise (Jensen) in the
    policy's favour where the front is concave; the world mean is also all the interval
    uses (worlds are the unit), and whether a policy lies inside the front's range is one
    question per world, not per episode. Where the policy lies outside the range the front
    spans in a world, the distance is NaN and the note says which side: no extrapolation.
    """
    p_rr, p_rf = world_means(rr), world_means(rf)  # episode means, NaN episodes skipped
    g_rr, g_rf = world_means(grid_rr), world_means(grid_rf)
    if p_rr.shape != g_rr.shape[:1] or g_rr.shape != g_rf.shape:
        raise ValueError(
            f"policy (W, E) {np.shape(rr)} and grid (W, M, E) {np.shape(grid_rr)} must "
            "share their worlds"
        )
    n = p_rr.size
    d_rf, d_rr = np.full(n, np.nan), np.full(n, np.nan)
    rf_note, rr_note = np.full(n, "", dtype=object), np.full(n, "", dtype=object)
    for w in range(n):
        fr, ff = _front(g_rr[w], g_rf[w])
        span_rr = (fr[0], fr[-1]) if fr.size else (math.nan, math.nan)
        span_rf = (ff[-1], ff[0]) if ff.size else (math.nan, math.nan)
        rf_note[w], rr_note[w] = _note(p_rr[w], *span_rr), _note(p_rf[w], *span_rf)
        if not rf_note[w] and p_rf[w] == p_rf[w]:
            d_rf[w] = p_rf[w] - front_rf_at(fr, ff, p_rr[w])
        if not rr_note[w] and p_rr[w] == p_rr[w]:
            d_rr[w] = p_rr[w] - front_rr_at(fr, ff, p_rf[w])
    rf_note[np.isnan(d_rf) & (rf_note == "")] = "undefined"
    rr_note[np.isnan(d_rr) & (rr_note == "")] = "undefined"
    return FrontDistances(d_rf, d_rr, rf_note, rr_note)


def front_rows(
    policies: Mapping[str, tuple[np.ndarray, np.ndarray]],
    grid_rr: np.ndarray,
    grid_rf: np.ndarray,
    front: str = "margin front",
    bound: float = FRONT_BOUND,
    head: Mapping[str, Any] | None = None,
) -> list[dict]:
    """Two rows per policy (name -> its RR, RF (W, E)): its distances to the margin front
    of ``grid_rr``, ``grid_rf`` (W, M, E), :data:`FRONT_FIGURES`, as in
    :func:`front_distances`.

    Columns: ``head``, policy, front, figure, rr and rf (the policy's mean of world means),
    ``vs_front`` with ``_lo``, ``_hi``, ``_worlds`` (the interval over the worlds where the
    distance is defined, :func:`lab.study.stats.world_interval`), ``_p`` (t-test of 0 on
    those worlds), ``_tost_p`` (TOST within ±``bound``), bound, and ``outside_below``,
    ``outside_above``, ``undefined``: the worlds left out and why. p-values are
    uncorrected: :func:`add_front_verdicts` corrects the family."""
    rows = []
    for policy, (rr, rf) in policies.items():
        dist = front_distances(rr, rf, grid_rr, grid_rf)
        level_rr, level_rf = world_interval(rr).mean, world_interval(rf).mean
        for figure, d, note in (
            ("rf_at_equal_rr", dist.rf_at_equal_rr, dist.rf_note),
            ("rr_at_equal_rf", dist.rr_at_equal_rf, dist.rr_note),
        ):
            mean, lo, hi, n = world_interval(d[:, None])
            rows.append(
                {
                    **(head or {}),
                    "policy": policy,
                    "front": front,
                    "figure": figure,
                    "rr": level_rr,
                    "rf": level_rf,
                    "vs_front": mean,
                    "vs_front_lo": lo,
                    "vs_front_hi": hi,
                    "vs_front_worlds": n,
                    "vs_front_p": difference_p(d[:, None]),
                    "vs_front_tost_p": tost_p(d[:, None], bound=bound),
                    "bound": bound,
                    "outside_below": int(np.sum(note == "below")),
                    "outside_above": int(np.sum(note == "above")),
                    "undefined": int(np.sum(note == "undefined")),
                }
            )
    return rows


def add_front_verdicts(
    table: pd.DataFrame, method: str = "holm", alpha: float = ALPHA
) -> pd.DataFrame:
    """``table`` (rows of :func:`front_rows`, one report's family) with ``vs_front_p_adj``,
    ``vs_front_tost_p_adj`` and ``vs_front_verdict``: "beats" (above the front, the
    corrected test survives), "trails" (below it), "matches" (TOST survives), else
    "inconclusive" (with the number of worlds below
    :data:`lab.study.stats.MIN_WORLDS_FOR_VERDICT` worlds where the distance is defined)."""
    out = add_verdicts(table, ["front"], higher_is_better=True, method=method, alpha=alpha)
    out["vs_front_verdict"] = out["vs_front_verdict"].map(lambda v: _WORDS.get(v, v))
    # no world where the distance is defined: say where the policy lies instead
    off = out["vs_front"].isna()
    out.loc[off, "vs_front_verdict"] = [
        "above the front's range"
        if a and not b
        else "below the front's range"
        if b and not a
        else "undefined"
        for a, b in zip(
            out.loc[off, "outside_above"] > 0, out.loc[off, "outside_below"] > 0, strict=True
        )
    ]
    return out
