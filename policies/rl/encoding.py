"""What a learned policy sees and how its actions become advice (durable-recourse-rl §4).

Pure functions shared by the trained policies (decision time) and the gymnasium
environments that train them, so both encode observations identically. Shapes: n rows,
z features, w candidates in the history window, T = validity.
"""

from __future__ import annotations

import math

import numpy as np

from abm import segments
from abm.interfaces import PolicyContext, RecourseObs

RECOMMENDER_ACTIONS = ("direct", "direction")
# names the recommender observation layout; stored in manifests so stale artefacts are refused
RECOMMENDER_OBSERVATION = "x, g, M(x), g - M(x), (logit g - logit M(x)) / 10, d_hat"

LOGIT_GAP_SCALE = 10.0  # the logit gap is observed as clip(gap / 10, -1, 1)


def recommender_observation_size(z: int) -> int:
    """Length of :func:`recommender_observation`'s vector for z features."""
    return 2 * z + 4


def recommender_observation_bounds(z: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of :func:`recommender_observation` for z features."""
    low = np.zeros(recommender_observation_size(z), np.float32)
    high = np.ones(recommender_observation_size(z), np.float32)
    low[z + 2 : z + 4] = -1.0  # the gaps are negative once the goal is met
    return low, high


def recommender_observation(
    X: np.ndarray, goals: np.ndarray, scores: np.ndarray, d_hat: np.ndarray
) -> np.ndarray:
    """φ's observation (n, 2z + 4) float32: [x (z), g, M(x), g - M(x), logit gap, d̂ (z)].

    X (n, z), goals (n,), scores = M(X) (n,), d_hat (z,) shared by every row. The logit
    gap is clip((logit g - logit M(x)) / 10, -1, 1), probabilities clipped to [1e-6, 1 - 1e-6]:
    for a score that is a sigmoid of a roughly linear function (logistic regression, as
    here) the change needed is about linear in it, which a small network fits far more
    precisely than the same change as a function of g - M(x). It uses M's scores only.
    """
    n = X.shape[0]
    d = np.broadcast_to(np.asarray(d_hat, dtype=float), (n, X.shape[1]))
    g, s = np.clip(goals, 1e-6, 1 - 1e-6), np.clip(scores, 1e-6, 1 - 1e-6)
    logit_gap = np.clip((np.log(g / (1 - g)) - np.log(s / (1 - s))) / LOGIT_GAP_SCALE, -1.0, 1.0)
    cols = [X, goals[:, None], scores[:, None], (goals - scores)[:, None], logit_gap[:, None], d]
    return np.concatenate(cols, axis=1).astype(np.float32)


def recommender_counterfactual(
    X: np.ndarray,
    A: np.ndarray,
    goals: np.ndarray,
    ctx: PolicyContext,
    action: str,
    max_step: float,
) -> np.ndarray:
    """x^CF of φ's actions A (n, z) under the mapping ``action`` (see :class:`RecommenderEnv`)."""
    if action == "direct":
        return action_to_counterfactual(X, A, ctx.immutable, max_step)
    if action == "direction":
        return direction_to_counterfactual(X, A, goals, ctx.decision_model.score, ctx.immutable)
    raise ValueError(f"action must be one of {', '.join(RECOMMENDER_ACTIONS)}, got {action!r}")


def action_to_counterfactual(
    X: np.ndarray, A: np.ndarray, immutable: np.ndarray, max_step: float = 1.0
) -> np.ndarray:
    """clip(X + max_step A, 0, 1) with A clipped to [-1, 1] and immutable columns of X kept; X, A (n, z)."""
    X_cf = np.clip(X + max_step * np.clip(A, -1.0, 1.0), 0.0, 1.0)
    X_cf[:, immutable] = X[:, immutable]
    return X_cf


def direction_to_counterfactual(
    X: np.ndarray, A: np.ndarray, goals: np.ndarray, score, immutable: np.ndarray, iters: int = 60
) -> np.ndarray:
    """x(t) = clip(X + t u, 0, 1), u = (A + 1) / 2 on mutable features, at the smallest t found
    by bisection with M(x(t)) >= g (``score`` is M.score: model-agnostic).

    t ranges over [0, t_max], t_max the step at which every feature with u_i > 0 sits at
    its upper bound; a goal out of reach along u gives x(t_max); rows whose goal is met
    are unchanged. The bisection keeps the upper end, so a reachable goal is met with an
    error of at most the score change over t_max 2^-iters.
    """
    X = np.asarray(X, dtype=float)
    U = (np.clip(A, -1.0, 1.0) + 1.0) / 2.0
    U[:, immutable] = 0.0
    U = np.maximum(U, 1e-3)  # a zero direction would never move; 1e-3 keeps t_max finite
    U[:, immutable] = 0.0
    with np.errstate(divide="ignore"):
        t_max = np.where(U > 0, (1.0 - X) / np.where(U > 0, U, 1.0), 0.0).max(axis=1)

    def at(t: np.ndarray) -> np.ndarray:
        out = np.clip(X + t[:, None] * U, 0.0, 1.0)
        out[:, immutable] = X[:, immutable]
        return out

    lo, hi = np.zeros(X.shape[0]), t_max.copy()
    for _ in range(iters):
        mid = (lo + hi) / 2.0
        up = score(at(mid)) >= goals
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    out = at(hi)
    met = ~(score(X) < goals)
    out[met] = X[met]
    return out


# -- the population environment (§4.2) -------------------------------------------------

N_BINS = 10  # score histogram bins over [0, 1]
N_APPS = 4  # n_applications histogram: 1, 2, 3, 4+


# the capacity the goal selector may also see: (k_t / k, m_t / m) of a capacity schedule
CAPACITY_OBSERVATION = "k_t / k, m_t / m"
# the manifest's ``objective`` of a μ trained for an RR target (lab.envs.ReliableGoalEnv)
CONSTRAINED_OBJECTIVE = "max RF s.t. RR >= rr_target (Lagrangian, normalised; docs/rl.md)"


def observation_size(n_features: int, validity: int, capacity: bool = False) -> int:
    """Length of :func:`encode_observation`'s vector (``capacity``: with k_t, m_t)."""
    return 4 + 3 * N_BINS + 1 + validity + N_APPS + 2 * n_features + (2 if capacity else 0)


def encode_observation(
    obs: RecourseObs,
    window_scores: np.ndarray,
    k: int,
    ticks: int,
    validity: int,
    m: int | None = None,
) -> np.ndarray:
    """Fixed-size, permutation-invariant encoding of what the goal selector sees, float32.

    Layout (z features, B = :data:`N_BINS`, T = validity): progress t / ticks, the
    threshold, #applicants / k, #window / k; histograms (counts / k) of the applicants'
    scores (B), of the window's last-seen scores ``window_scores`` (w,) (B) and of its last goals (B, plus
    one count of window members with no goal); the window's ages t - l in 1..T (T); its
    application counts 1, 2, 3, 4+ (:data:`N_APPS`); the mean features of the applicants
    (z) and of the window (z). Candidates are exchangeable, so a histogram loses only
    their order; ids carry no information once the order is gone and are left out.

    With ``m`` (the scenario's base entrants per tick) two entries follow
    (:data:`CAPACITY_OBSERVATION`): the places and entrants in force, k_t / k and
    m_t / max(m, 1), so a goal selector can see a capacity schedule move (issue 39);
    an observation without them (``obs.k_t`` None) counts as the base values.
    """
    h = obs.history
    scale = float(k)

    def hist(v: np.ndarray) -> np.ndarray:
        return histogram01(v) / scale

    w = h.ids.shape[0]
    has_goal = np.isfinite(h.goal)
    # integer clips as minimum(maximum()): the same values, a third of ndarray.clip's cost
    ages = np.minimum(np.maximum(np.subtract(obs.tick, h.last_tick), 1), validity)
    ages = np.bincount(ages - 1, minlength=validity)
    apps = np.minimum(np.maximum(h.n_applications, 1), N_APPS)
    apps = np.bincount(apps - 1, minlength=N_APPS)
    parts = [
        np.array(
            [
                obs.tick / ticks,
                _nan_to_num(obs.threshold),
                obs.applicant_ids.shape[0] / scale,
                w / scale,
            ]
        ),
        hist(obs.applicant_scores),
        hist(window_scores),
        hist(h.goal[has_goal]),
        np.array([np.count_nonzero(~has_goal) / scale]),
        ages[:validity] / scale,
        apps[:N_APPS] / scale,
        _column_means(obs.applicant_X),
        _column_means(h.X),
    ]
    if m is not None:
        k_t = k if obs.k_t is None else obs.k_t
        m_t = m if obs.m_t is None else obs.m_t
        parts.append(np.array([k_t / scale, m_t / max(m, 1)]))
    return np.concatenate(parts).astype(np.float32)


# bin edges of the score histograms, as np.histogram(v, bins=N_BINS, range=(0, 1)) has them
_EDGES = np.linspace(0.0, 1.0, N_BINS + 1)
_EDGES.setflags(write=False)


def histogram01(v: np.ndarray) -> np.ndarray:
    """Counts (N_BINS,) int64 of clip(v, 0, 1) over N_BINS equal bins of [0, 1]; NaN is left out.

    Equal to ``np.histogram(np.clip(v, 0, 1), bins=linspace(0, 1, N_BINS + 1))[0]``: bin i
    holds edges[i] <= v < edges[i + 1], the last bin also v = 1, at a fraction of the cost.
    """
    v = np.asarray(v, dtype=float).clip(0.0, 1.0)
    if np.count_nonzero(v == v) != v.shape[0]:
        v = v[v == v]
    bins = _EDGES.searchsorted(v, side="right") - 1
    bins[bins == N_BINS] = N_BINS - 1  # v = 1 belongs to the last, closed bin
    return np.bincount(bins, minlength=N_BINS)


def _column_means(X: np.ndarray) -> np.ndarray:
    """X.mean(axis=0) of X (n, z), shape (z,) (zeros when n = 0), without its wrapper."""
    n = X.shape[0]
    return np.add.reduce(X, axis=0) / n if n else np.zeros(X.shape[1])


def _nan_to_num(x: float) -> float:
    """np.nan_to_num of one number, without its overhead for the usual finite case."""
    x = float(x)
    return x if math.isfinite(x) else float(np.nan_to_num(x))


def encode_batch(
    tick: int,
    thresholds: np.ndarray,
    app_X: np.ndarray,
    app_scores: np.ndarray,
    app_counts: np.ndarray,
    window: dict[str, np.ndarray],
    window_scores: np.ndarray,
    window_counts: np.ndarray,
    k: int,
    ticks: int,
    validity: int,
    m: int | None = None,
    k_t: np.ndarray | None = None,
    m_t: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`encode_observation` of the B decisions of one tick at once, (B, size)
    float32, row b bit for bit what episode b's observation alone gives. The decisions'
    ``thresholds`` (B,); the applicants' features ``app_X`` (a, z) and scores
    ``app_scores`` (a,), and the windows' rows (``window``: columns ``X_obs``,
    ``last_tick``, ``n_apps``, ``goal``; ``window_scores`` (w,)), flat, episode after
    episode, ``app_counts`` and ``window_counts`` (B,) rows each. With ``m``, the places
    and entrants in force ``k_t`` and ``m_t`` (B,)."""
    from policies.rl.kernels import encode_rows  # Numba: imported when first needed

    B, scale = thresholds.shape[0], float(k)
    z = app_X.shape[1]
    base = observation_size(z, validity)
    out = np.zeros((B, base))
    # each entry one division or nan_to_num of one number, elementwise: its own bits
    out[:, 0] = tick / ticks
    # nan_to_num's own overhead is ten times a check that every threshold is finite
    out[:, 1] = thresholds if np.isfinite(thresholds).all() else np.nan_to_num(thresholds)
    np.divide(app_counts, scale, out=out[:, 2])
    np.divide(window_counts, scale, out=out[:, 3])
    # histograms, counts and (z >= 2: rows summed in order) column means in one loop
    w_X = window["X_obs"]
    means = z >= 2
    encode_rows(
        out,
        np.ascontiguousarray(app_X, dtype=np.float64),
        np.ascontiguousarray(app_scores, dtype=np.float64),
        np.ascontiguousarray(app_counts, dtype=np.int64),
        np.ascontiguousarray(w_X, dtype=np.float64),
        np.ascontiguousarray(window_scores, dtype=np.float64),
        np.ascontiguousarray(window["goal"], dtype=np.float64),
        np.ascontiguousarray(window["last_tick"], dtype=np.int64),
        np.ascontiguousarray(window["n_apps"], dtype=np.int64),
        np.ascontiguousarray(window_counts, dtype=np.int64),
        _EDGES,
        int(tick),
        int(validity),
        N_APPS,
        scale,
        means,
    )
    if not means:  # one column: NumPy sums it pairwise, so the episodes' own reductions
        at = base - 2 * z
        out[:, at : at + z] = _column_means_of(app_X, app_counts)
        out[:, at + z :] = _column_means_of(w_X, window_counts)
    if m is not None:
        k_t = np.full(B, k) if k_t is None else k_t
        m_t = np.full(B, m) if m_t is None else m_t
        capacity = np.array(
            [[a / scale, b / max(m, 1)] for a, b in zip(k_t.tolist(), m_t.tolist(), strict=True)]
        )
        out = np.concatenate([out, capacity], axis=1)
    return out.astype(np.float32)


def _column_means_of(X: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B, z) :func:`_column_means` of each episode's rows of X (n, z), each with the bits
    of its own rows' reduction, for one column (z = 1): NumPy sums a 1-D run pairwise, in
    an order fixed by its length, so episodes of one length are reduced as one (m, n, 1)
    stack. (With more columns it sums row after row, which :func:`encode_rows` does.)"""
    B, z = counts.shape[0], X.shape[1]
    out = np.zeros((B, z))
    for n, eps, rows in segments.by_length(counts):
        out[eps] = np.add.reduce(X.take(rows, axis=0), axis=1) / n
    return out


def encode_window(
    obs: RecourseObs, scorer, k: int, ticks: int, validity: int, m: int | None = None
) -> np.ndarray:
    """:func:`encode_observation` with the window scored by the decision model ``scorer``."""
    X = obs.history.X
    scores = scorer.score(X) if X.shape[0] else np.zeros(0)
    return encode_observation(obs, scores, k, ticks, validity, m)


def goal_from_action(action: np.ndarray, threshold: float, max_margin: float) -> np.ndarray:
    """g = min(th + max_margin (a + 1) / 2, 1) for actions (n, 1) in [-1, 1]; shape (n,).

    ``threshold``: one for all actions, or one per action (n,) (a vector env's episodes).
    An undefined threshold (fewer applicants than places) counts as 0.
    """
    a = np.asarray(action, dtype=float).reshape(-1).clip(-1.0, 1.0)
    if np.ndim(threshold):
        th = np.where(np.isfinite(threshold), threshold, 0.0)
    else:
        th = float(threshold) if np.isfinite(threshold) else 0.0
    return np.minimum(th + max_margin * (a + 1.0) / 2.0, 1.0)
