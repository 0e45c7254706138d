"""The candidates' responses as stages of the tick: who reapplies (eq. 9), who drops out
(eq. 6) and which recommended changes succeed (eq. 8), each drawing from its own stream.
Shapes: w waiting, n rejected, s stayers, z features."""

from __future__ import annotations

from typing import Any

import numpy as np

from abm import behaviour, segments
from abm.population import Population
from abm.tick import Outcome


def reapplications(pool: Any, t: int, config: Any, episodes: Any) -> np.ndarray:
    """(w,) bool: who of the waiting ``pool`` reapplies at ``t``; everyone does at the
    latest T ticks on (no draw is needed in an episode where all are due, always so at
    T = 1). ``episodes`` (:class:`abm.batch.Episodes`) draws from each episode's stream."""
    column = pool.column
    elapsed = t - column("last_tick")
    due = elapsed >= config.validity
    if np.count_nonzero(due) == due.shape[0]:
        return due
    gap = behaviour.score_gap(column("goal"), column("score_now"))
    p = behaviour.reapply_probability(gap, elapsed, config.validity, config.nu)
    counts = pool.counts
    skip = None if counts.shape[0] == 1 else segments.count(~due, counts) == 0
    u = episodes.uniform("reapply", counts, skip)
    return u < p if skip is None or not skip.any() else (u < p) | due


def dropout(
    goal: np.ndarray,
    scores: np.ndarray,
    n_apps: np.ndarray,
    config: Any,
    episodes: Any,
    counts: np.ndarray,
) -> np.ndarray:
    """(n,) bool: the rejected who give up now (eq. 6), given their goals, scores and
    earlier applications (each (n,)); ``counts`` (B,) rejected per episode."""
    c = config
    gap = behaviour.score_gap(goal, scores)
    p = behaviour.dropout_probability(gap, n_apps, c.rho, c.chi, c.omega)
    return episodes.uniform("dropout", counts) < p


def implement(
    stayers: Population,
    counts: np.ndarray,
    difficulty: np.ndarray,
    beta: float,
    episodes: Any,
    known: tuple | None = None,
    onehot: Any = None,
) -> Outcome:
    """Each recommended change succeeds with eq. 8's probability; updates ``stayers``.

    Only changed entries are drawn (one uniform each, row-major order, from the stream of
    the row's episode): advice usually touches one or two of the z features.
    ``counts`` (B,) gives the stayers per episode; ``difficulty`` is the true d (z,);
    ``episodes`` (:class:`abm.batch.Episodes`) draws, carries the changes on (a causal
    graph, §4) and scores the rows (each episode's decision model in force). ``known`` = (M(x_cf), M(x)), each (s,), spares scoring the
    rows that end at x_cf or at x. ``onehot`` (abm.onehot.OneHot or None): a switch is one
    change, attempted as eq. 7 sees its cost (:meth:`~abm.onehot.OneHot.attempted`) and
    made or not as a whole, its effort c(a, b) d_b.
    """
    X, X_cf = stayers.X_obs, stayers.X_cf
    n, z = X.shape
    # flat positions of the changed entries (row-major, as np.nonzero orders them);
    # X and X_cf are contiguous (see advised_rows), so ravel() makes no copy
    flat, flat_cf = X.ravel(), X_cf.ravel()
    changed = (flat_cf != flat).nonzero()[0]
    rows, cols = np.divmod(changed, z)
    x, x_cf = flat.take(changed), flat_cf.take(changed)
    d = difficulty.take(cols)
    per_episode = _count_by_rows(rows, counts)
    if onehot is None:
        p = behaviour.change_success_probability(x, x_cf, beta, d)
        ok = episodes.uniform("implementation", per_episode) < p
        size = None
    else:
        seen = onehot.attempted(X, X_cf).ravel().take(changed)
        p = behaviour.change_success_probability(seen, x_cf, beta, d)
        # one uniform per changed entry as without groups; a source indicator's is unused
        u = episodes.uniform("implementation", per_episode)
        ok = onehot.follow(rows, cols, x_cf, u < p, z)
        size = onehot.moves(X, X_cf).ravel().take(changed)
    rows_ok, x_cf_ok = rows[ok], x_cf[ok]
    X_new = X.copy()
    X_new.ravel()[changed[ok]] = x_cf_ok
    dprop = None

    def intervened() -> np.ndarray:  # (s, z) bool: the changes made
        mask = np.zeros(X.shape, dtype=bool)
        mask.ravel()[changed[ok]] = True
        return mask

    carried = episodes.propagate(X, X_new, intervened, counts)
    if carried is not None:
        dprop, X_new = carried - X_new, carried
    moved = np.abs(x_cf_ok - x[ok]) if size is None else size[ok]
    effort = np.bincount(rows_ok, weights=moved * d[ok], minlength=n)
    implemented = stayers.advised.copy()
    implemented[rows[~ok]] = False  # a failed change
    # stayers' arrays are fresh (see advised_rows): new columns replace them
    data = stayers.data
    data["X"], data["implemented"] = X_new, implemented
    data["effort"] = data["effort"] + effort
    if known is None:
        data["score_now"] = episodes.score(X_new, counts)
    else:  # rows where some changes failed and others held are the only new points
        cf_score, before = known
        score_now = np.where(implemented, cf_score, before)
        partial = np.bincount(rows_ok, minlength=n).astype(bool) & ~implemented
        if partial.any():
            rows_p = partial.nonzero()[0]
            which = segments.episode_of(counts).take(rows_p)
            score_now[rows_p] = episodes.score_of(X_new.take(rows_p, axis=0), which)
        data["score_now"] = score_now
    return Outcome(rows, cols, ok, effort, implemented, X, X_new, dprop)


def _count_by_rows(rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) how many of ``rows`` (sorted row numbers of a flat array) fall in each
    episode's rows (``counts`` (B,))."""
    if counts.shape[0] == 1:
        return np.array([rows.shape[0]])
    return np.diff(rows.searchsorted(segments.offsets(counts)))
