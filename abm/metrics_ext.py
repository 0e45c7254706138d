"""Metrics of the world extensions (specs/world-extensions.md §7), as pure functions.

True outcomes (§1), validity under retraining (§2) and the shifts recourse causes
(domain and model, by MMD), and group fairness (§3). n rows,
z features, G = ``n_groups``; group ids are integers in [0, G-1]. As in
:mod:`abm.metrics`, a ratio whose denominator is empty is NaN. Sums over features are
row reductions (``np.add.reduce``), not matrix products, so their bits depend on the
inputs only, never on the BLAS library or its thread count.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import ndtr

from abm.metrics import ratio
from abm.validation import ConfigError, problem

if TYPE_CHECKING:  # pandas is only passed in: importing the metrics must not load it
    import pandas as pd

W_DIST_MAX_POINTS = 2000  # §7.3: larger groups are subsampled to this many rows

_NAN = float("nan")


# -- §1: true outcome -------------------------------------------------------------------
def _true_score(X: np.ndarray, w_star: np.ndarray) -> np.ndarray:
    """w*·x per row, shape (n,), for X (n, z) and w* (z,)."""
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(w_star, dtype=np.float64)
    if X.ndim != 2 or w.shape != (X.shape[1],):
        raise ConfigError(
            problem("w_star", w.shape, f"shape ({X.shape[-1]},) to match X of shape {X.shape}")
        )
    return np.add.reduce(X * w, axis=1)


def true_outcome_probability(
    X: np.ndarray, w_star: np.ndarray, c_star: float, sigma_star: float
) -> np.ndarray:
    """§1: h*(x) = Φ((w*·x - c*)/σ*) per row of X (n, z), shape (n,) float64.

    ``w_star`` (z,) are the true weights (non-causal features at 0). σ* = 0 gives the
    step 1[w*·x > c*] as 0.0/1.0.
    """
    if not (sigma_star >= 0 and np.isfinite(sigma_star)):
        raise ConfigError(problem("outcome_noise", sigma_star, "a finite number >= 0"))
    return probability_of_true_score(_true_score(X, w_star), c_star, sigma_star)


def probability_of_true_score(s: np.ndarray, c_star: float, sigma_star: float) -> np.ndarray:
    """h* from the true score s = w*·x (n,): Φ((s − c*)/σ*), the step 1[s > c*] at σ* = 0.
    No input checks: :func:`true_outcome_probability` makes them for user input."""
    if sigma_star == 0:
        return (s > c_star).astype(np.float64)
    return ndtr((s - c_star) / sigma_star)


def improvement_rate(
    X_cf: np.ndarray, w_star: np.ndarray, c_star: float, advised: np.ndarray
) -> float:
    """§7.1: share of advised rows whose counterfactual truly qualifies, w*·x_cf >= c*.

    ``X_cf`` (n, z) are the (propagated) counterfactuals, ``advised`` (n,) bool marks the
    rows that were advised; NaN if none was.
    """
    advised = np.asarray(advised, dtype=bool)
    X_cf = np.asarray(X_cf, dtype=np.float64)
    s = _true_score(X_cf[advised], w_star)
    return ratio(np.count_nonzero(s >= c_star), s.shape[0])


def mean_true_gain(p_true_cf: np.ndarray, p_true: np.ndarray, advised: np.ndarray) -> float:
    """§7.1: mean of h*(x_cf) - h*(x) over the advised rows; inputs (n,), NaN if none advised."""
    advised = np.asarray(advised, dtype=bool)
    gain = np.asarray(p_true_cf, dtype=np.float64)[advised]
    gain = gain - np.asarray(p_true, dtype=np.float64)[advised]
    return float(np.add.reduce(gain) / gain.shape[0]) if gain.shape[0] else _NAN


def true_positive_rate(y: np.ndarray) -> float:
    """§7.1 ``tp_rate``: share of positives among revealed outcomes y (o,) in {0, 1}.

    NaN if nothing was revealed. Unrevealed entries (the candidate table's -1) must be
    left out by the caller.
    """
    y = np.asarray(y)
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise ConfigError(problem("y", y[bad][0].item(), "revealed outcomes 0 or 1"))
    return ratio(np.count_nonzero(y == 1), y.shape[0])


# -- §2: validity under retraining ------------------------------------------------------
def validity(cf_scores_now: np.ndarray, goals: np.ndarray, tol: float = 1e-6) -> float:
    """§2/§7.2: share of outstanding advice still valid, M_v(x_cf) >= goal - tol.

    ``cf_scores_now`` (o,) are the counterfactuals' scores under the model in force,
    ``goals`` (o,) the goals they were advised for; NaN if no advice is outstanding.
    """
    cf = np.asarray(cf_scores_now, dtype=np.float64)
    goals = np.asarray(goals, dtype=np.float64)
    if cf.shape != goals.shape:
        raise ConfigError(problem("goals", goals.shape, f"shape {cf.shape} like cf_scores_now"))
    return ratio(np.count_nonzero(cf >= goals - tol), cf.size)


# -- shifts that recourse causes (Altmeyer et al., SaTML 2023) ---------------------------
SHIFT_MAX_POINTS = 2000  # larger samples are subsampled to this many rows


def subsample(n: int, max_points: int, rng: np.random.Generator | None) -> np.ndarray:
    """Row indices (<= max_points,) of a sample of ``n`` rows: all of them, or ``max_points``
    drawn without replacement from ``rng`` (sorted, so rows keep their order)."""
    if n <= max_points:
        return np.arange(n)
    if rng is None:
        raise ValueError(problem("rng", None, f"a numpy Generator: {n} rows > {max_points}"))
    return np.sort(rng.choice(n, size=max_points, replace=False))


@functools.cache
def _blas_libraries() -> Any:
    """threadpoolctl's controller of the BLAS libraries loaded, made once, after sklearn
    (and with it numpy's and scipy's BLAS) is imported: a ``threadpool_limits`` call scans
    the process's libraries again each time, about 3 ms, a tenth of a refit's shifts."""
    import sklearn.metrics.pairwise  # noqa: F401 - loads the BLAS libraries the kernels use
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _one_blas_thread() -> Any:
    """A context in which the BLAS libraries run one thread (the same bits in any process)."""
    return _blas_libraries().limit(limits=1, user_api="blas")


def median_gamma(X: np.ndarray) -> float:
    """The RBF kernel's γ = 1 / (2 m²) by the median heuristic, m = the median Euclidean
    distance between distinct rows of X (n, z); 1.0 where m is 0 or n < 2."""
    from sklearn.metrics.pairwise import euclidean_distances

    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] < 2:
        return 1.0
    with _one_blas_thread():  # the same bits in every process
        d2 = euclidean_distances(X, squared=True)
    med2 = float(np.median(d2[np.triu_indices(X.shape[0], 1)]))
    return 1.0 / (2.0 * med2) if med2 > 0 else 1.0


def kernel_matrix(X: np.ndarray, Y: np.ndarray | None, gamma: float) -> np.ndarray:
    """k(x, y) = exp(−γ‖x − y‖²) over X (m, z) × Y (n, z), shape (m, n); Y None: X × X."""
    from sklearn.metrics.pairwise import rbf_kernel

    with _one_blas_thread():  # the same bits in every process
        return rbf_kernel(X, Y, gamma=gamma)


def kernel_mean(X: np.ndarray, Y: np.ndarray | None, gamma: float, paired: bool = False) -> float:
    """Mean of k(x, y) = exp(−γ‖x − y‖²) over X (m, z) × Y (n, z); over the m(m − 1) pairs
    of distinct rows when Y is None (the within-sample term of the unbiased MMD²), and so
    too when ``paired`` (m = n, row i of X and of Y measured on one unit: the cross term
    of the paired U-statistic, Gretton et al. 2012, Lemma 6)."""
    K = kernel_matrix(X, Y, gamma)
    if Y is not None and not paired:
        return float(np.add.reduce(K, axis=None) / K.size)
    m = K.shape[0]
    if m < 2:
        return _NAN
    return float((np.add.reduce(K, axis=None) - np.trace(K)) / (m * (m - 1)))


def mmd2(
    X: np.ndarray,
    Y: np.ndarray,
    gamma: float | None = None,
    rng: np.random.Generator | None = None,
    max_points: int = SHIFT_MAX_POINTS,
    paired: bool = False,
) -> float:
    """The unbiased estimate of MMD² between the rows of X (m, z) and Y (n, z) (Gretton et
    al. 2012, eq. 3) with the RBF kernel exp(−γ‖x − y‖²); γ by :func:`median_gamma` over
    both samples pooled when None. A sample over ``max_points`` rows is subsampled from
    ``rng`` (X first). NaN when either sample has fewer than 2 rows. Its expectation is 0
    when X and Y come from one distribution, so an estimate may be slightly negative.
    ``paired`` (m = n): row i of X and of Y belong to one unit (two models' scores of one
    applicant); the cross term then leaves out the pairs i = i (Lemma 6's U-statistic),
    without which two identical samples would score below 0.
    """
    X, Y = _two_samples(X, Y, rng, max_points, paired)
    if X.shape[0] < 2 or Y.shape[0] < 2:
        return _NAN
    if gamma is None:
        gamma = median_gamma(np.concatenate([X, Y]))
    cross = kernel_mean(X, Y, gamma, paired=paired)
    return kernel_mean(X, None, gamma) + kernel_mean(Y, None, gamma) - 2.0 * cross


def _two_samples(
    X: np.ndarray, Y: np.ndarray, rng: np.random.Generator | None, max_points: int, paired: bool
) -> tuple[np.ndarray, np.ndarray]:
    """X (m, z) and Y (n, z) as float64 (a 1-D sample as one column), checked, and each
    subsampled to ``max_points`` rows from ``rng`` (X first; paired rows together)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if X.ndim == 1:
        X, Y = X[:, None], Y[:, None]
    if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
        raise ConfigError(problem("Y", Y.shape, f"(n, {X.shape[-1]}) like X of shape {X.shape}"))
    if paired:
        if X.shape != Y.shape:
            raise ConfigError(problem("Y", Y.shape, f"shape {X.shape} like X (paired rows)"))
        keep = subsample(X.shape[0], max_points, rng)
        return X[keep], Y[keep]
    return X[subsample(X.shape[0], max_points, rng)], Y[subsample(Y.shape[0], max_points, rng)]


def disagreement(scores_a: np.ndarray, scores_b: np.ndarray, cut: float = 0.5) -> float:
    """Share of rows whose predicted class (score >= ``cut``) differs between two models'
    scores (n,) of the same rows; NaN for no rows."""
    a = np.asarray(scores_a, dtype=np.float64) >= cut
    b = np.asarray(scores_b, dtype=np.float64) >= cut
    return ratio(np.count_nonzero(a != b), a.size)


# -- the significance of a shift: permutation tests of the MMD² -------------------------
#: a permuted MMD² counts as at least the observed one when it is >= observed − PERM_TOL.
#: The statistics combine kernel means in [0, 1] of features and scores of order 1, whose
#: rounding errors (which differ with the BLAS library) stay below ~1e-14: a tie in exact
#: arithmetic (a relabelling that keeps both samples, two models with equal scores) then
#: counts on every machine, and only MMD² gaps under 1e-12 (the smallest model shift
#: measured, outcomes-only refits, is ~5e-7) are read as ties.
PERM_TOL = 1e-12
PERM_BATCH = 256  # permutations per matrix product: the labels take N × 256 floats


def permutation_p(observed: float, null: np.ndarray, tol: float = PERM_TOL) -> float:
    """(1 + #{null >= observed − tol}) / (1 + B) for the B permuted statistics ``null``
    (B,): the observed labelling counts as one of the permutations, so p >= 1/(B + 1) and,
    under the null, P(p <= α) <= α with randomly drawn permutations (Phipson and Smyth
    2010). NaN when ``observed`` is NaN or B = 0."""
    null = np.asarray(null, dtype=np.float64)
    if observed != observed or null.shape[0] == 0:
        return _NAN
    return (1 + int(np.count_nonzero(null >= observed - tol))) / (1 + null.shape[0])


def mmd2_test(
    X: np.ndarray,
    Y: np.ndarray,
    rng: np.random.Generator,
    permutations: int,
    gamma: float | None = None,
    max_points: int = SHIFT_MAX_POINTS,
    paired: bool = False,
) -> tuple[float, float]:
    """(MMD², p): :func:`mmd2` of X (m, z) and Y (n, z), up to rounding, with its
    permutation p-value (:func:`permutation_p`) over ``permutations`` relabellings drawn
    from ``rng`` (after any subsampling, which :func:`mmd2` draws alike):

    * independent samples: the m + n rows are pooled, shuffled and split into m and n
      again (as AlgorithmicRecourseDynamics.jl's ``mmd_null_dist`` does);
    * ``paired`` (m = n; row i of X and of Y measured on one unit, e.g. two models' scores
      of one applicant): each unit's two rows are swapped with probability 1/2. The null
      is that a unit's two rows are exchangeable (the refit changed no row's score
      systematically), not that rows of different units are: a pooled shuffle would
      break the pairing the statistic relies on. A swap flips the sign
      of unit i's term, so MMD² = εᵀHε / (m(m − 1)) with ε ∈ {±1}^m and H (m, m) the
      paired kernel differences off the diagonal.

    The kernel matrix is computed once; every permuted MMD² is read from it by matrix
    products, :data:`PERM_BATCH` permutations at a time: O(N² B) flops for N = m + n.
    (NaN, NaN) when a sample has under 2 rows; p is NaN when ``permutations`` is 0.
    """
    X, Y = _two_samples(X, Y, rng, max_points, paired)
    m, n = X.shape[0], Y.shape[0]
    if m < 2 or n < 2:
        return _NAN, _NAN
    Z = np.concatenate([X, Y])
    if gamma is None:
        gamma = median_gamma(Z)
    K = kernel_matrix(Z, None, gamma)  # (N, N): X's rows first
    null_of = _paired_null if paired else _pooled_null
    with _one_blas_thread():  # as kernel_matrix
        observed, null = null_of(K, m, rng, permutations)
    return observed, permutation_p(observed, null)


def _pooled_null(
    K: np.ndarray, m: int, rng: np.random.Generator, permutations: int
) -> tuple[float, np.ndarray]:
    """The unbiased MMD² of the first m rows against the other n of the kernel matrix K
    (N, N) (overwritten), and of ``permutations`` random splits of the N rows into m and n,
    (B,). For a split with indicator a (N,) of the m rows: with K's diagonal at 0, r = K1
    and S = 1ᵀK1, the three sums of the estimator are aᵀKa, aᵀr − aᵀKa (across) and
    S − 2aᵀr + aᵀKa, so one product K·A serves a batch of splits A (N, b)."""
    N = K.shape[0]
    n = N - m
    np.fill_diagonal(K, 0.0)
    r = np.add.reduce(K, axis=1)
    S = float(np.add.reduce(r))

    def mmd(within: np.ndarray | float, to_all: np.ndarray | float) -> np.ndarray | float:
        across = to_all - within
        return (
            within / (m * (m - 1)) + (S - to_all - across) / (n * (n - 1)) - 2.0 * across / (m * n)
        )

    observed = float(mmd(np.add.reduce(K[:m, :m], axis=None), np.add.reduce(r[:m])))
    null = np.empty(permutations)
    for lo in range(0, permutations, PERM_BATCH):
        b = min(PERM_BATCH, permutations - lo)
        A = np.zeros((N, b))
        for j in range(b):
            A[rng.permutation(N)[:m], j] = 1.0
        null[lo : lo + b] = mmd(np.add.reduce(A * (K @ A), axis=0), r @ A)
    return observed, null


def _paired_null(
    K: np.ndarray, m: int, rng: np.random.Generator, permutations: int
) -> tuple[float, np.ndarray]:
    """The paired unbiased MMD² of the first m rows of the kernel matrix K (2m, 2m) against
    the other m (row i paired with row m + i), and of ``permutations`` random swaps within
    the pairs, (B,). H = Kxx + Kyy − Kxy − Kxyᵀ with its diagonal at 0; a batch of swaps is
    E (m, b) of ±1 and its statistics are the columns' εᵀHε / (m(m − 1))."""
    Kxy = K[:m, m:]
    H = K[:m, :m] + K[m:, m:] - Kxy - Kxy.T
    np.fill_diagonal(H, 0.0)
    norm = m * (m - 1)
    observed = float(np.add.reduce(H, axis=None) / norm)
    null = np.empty(permutations)
    for lo in range(0, permutations, PERM_BATCH):
        b = min(PERM_BATCH, permutations - lo)
        E = rng.integers(0, 2, size=(m, b)) * 2.0 - 1.0
        null[lo : lo + b] = np.add.reduce(E * (H @ E), axis=0) / norm
    return observed, null


# -- §3: groups -------------------------------------------------------------------------
def _group_counts(
    group: np.ndarray, n_groups: int, mask: np.ndarray | None = None, mask_name: str = "mask"
) -> np.ndarray:
    """Rows per group, shape (G,) int64, counting only ``mask``'s rows when given."""
    if not (isinstance(n_groups, int | np.integer) and n_groups >= 1):
        raise ConfigError(problem("n_groups", n_groups, "an integer >= 1"))
    group = np.asarray(group)
    if group.size and (group.min() < 0 or group.max() >= n_groups):
        bad = group.min() if group.min() < 0 else group.max()
        raise ConfigError(problem("group", bad.item(), f"an integer in [0, {n_groups - 1}]"))
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != group.shape:
            raise ConfigError(problem(mask_name, mask.shape, f"shape {group.shape} like group"))
        group = group[mask]
    return np.bincount(group.astype(np.int64, copy=False), minlength=n_groups)


def _ratios(numer: np.ndarray, denom: np.ndarray) -> list[float]:
    return [ratio(int(k), int(m)) for k, m in zip(numer, denom, strict=True)]


def per_group_ratio(
    numer_mask: np.ndarray,
    denom_mask: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    name: str,
) -> dict[str, float]:
    """§7.3: ``{name}_g{g}`` = (numerator rows of g) / (denominator rows of g), g = 0..G-1.

    ``numer_mask``, ``denom_mask`` and ``group`` are (m,) over one set of rows (e.g. the
    agents in the pool); the numerator need not be a subset of the denominator (``rf``).
    NaN for a group with no denominator row. Example: ``rr`` has numerator "successful
    and accepted" and denominator "successful" among the reapplicants.
    """
    numer = _group_counts(group, n_groups, numer_mask, "numer_mask")
    denom = _group_counts(group, n_groups, denom_mask, "denom_mask")
    return {f"{name}_g{g}": r for g, r in enumerate(_ratios(numer, denom))}


def per_group_rates(accepted: np.ndarray, group: np.ndarray, n_groups: int) -> dict[str, Any]:
    """§7.3: ``n_applicants_g{g}`` (int) for every g, then ``accept_rate_g{g}`` (float).

    ``accepted`` (a,) bool and ``group`` (a,) int are over this tick's applicants; the
    rate of a group without applicants is NaN.
    """
    applicants = _group_counts(group, n_groups)
    admitted = _group_counts(group, n_groups, accepted, "accepted")
    out: dict[str, Any] = {f"n_applicants_g{g}": int(n) for g, n in enumerate(applicants)}
    out.update({f"accept_rate_g{g}": r for g, r in enumerate(_ratios(admitted, applicants))})
    return out


def per_group_mean(
    values: np.ndarray, group: np.ndarray, n_groups: int, name: str
) -> dict[str, float]:
    """§7.3: ``{name}_g{g}`` = mean of ``values`` (m,) over the rows of group g (m,).

    For e.g. ``mean_time_to_accept_g{g}`` over this tick's acceptances; NaN for a group
    with no row. Sums run in row order (``np.bincount``), so the bits are reproducible.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = _group_counts(group, n_groups)
    if values.shape != np.shape(group):
        raise ConfigError(problem("values", values.shape, f"shape {np.shape(group)} like group"))
    sums = np.bincount(np.asarray(group, dtype=np.int64), weights=values, minlength=n_groups)
    return {
        f"{name}_g{g}": float(sums[g] / counts[g]) if counts[g] else _NAN for g in range(n_groups)
    }


def demographic_parity_gap(accepted: np.ndarray, group: np.ndarray, n_groups: int) -> float:
    """§7.3 ``dp_gap``: max - min acceptance rate over the groups that have applicants.

    ``accepted`` (a,) bool, ``group`` (a,) int over this tick's applicants; NaN when
    fewer than 2 groups have applicants.
    """
    applicants = _group_counts(group, n_groups)
    admitted = _group_counts(group, n_groups, accepted, "accepted")
    present = applicants > 0
    if np.count_nonzero(present) < 2:
        return _NAN
    rates = admitted[present] / applicants[present]
    return float(rates.max() - rates.min())


def wasserstein_between_groups(
    X: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    rng: np.random.Generator | None = None,
    max_points: int = W_DIST_MAX_POINTS,
) -> tuple[float, int]:
    """§7.3 ``w_dist``: the largest exact W1 between two groups' rows of X (n, z).

    Each pair of groups is solved exactly by POT's network simplex (``ot.emd2``) with
    uniform weights and the Euclidean ground cost. A group with more than ``max_points``
    rows is replaced by ``max_points`` of them drawn without replacement from ``rng``
    (groups in ascending order, each draw sorted, so the points keep their row order);
    ``rng`` is required only then. Returns ``(distance, n_used)``, n_used = the most rows
    any group contributed (``w_dist_n``); ``(NaN, 0)`` if G < 2 or a group is empty.
    """
    if not (isinstance(max_points, int | np.integer) and max_points >= 1):
        raise ConfigError(problem("max_points", max_points, "an integer >= 1"))
    X = np.asarray(X, dtype=np.float64)
    group = np.asarray(group)
    if X.ndim != 2 or group.shape != (X.shape[0],):
        raise ConfigError(problem("group", group.shape, f"shape ({X.shape[0]},) like X's rows"))
    counts = _group_counts(group, n_groups)
    if n_groups < 2 or counts.min() == 0:
        return _NAN, 0
    clouds = []
    for g in range(n_groups):
        rows = np.flatnonzero(group == g)
        if rows.shape[0] > max_points:
            if rng is None:
                raise ValueError(
                    problem(
                        "rng",
                        None,
                        f"a numpy Generator: group {g} has {rows.shape[0]} rows "
                        f"> max_points = {max_points}",
                    )
                )
            rows = rows[np.sort(rng.choice(rows.shape[0], size=max_points, replace=False))]
        clouds.append(X[rows])
    n_used = max(c.shape[0] for c in clouds)

    import ot  # heavy (it loads torch when installed): only when the metric is asked for
    from scipy.spatial.distance import cdist

    worst = 0.0
    for g in range(n_groups):
        for h in range(g + 1, n_groups):
            A, B = clouds[g], clouds[h]
            a = np.full(A.shape[0], 1.0 / A.shape[0])
            b = np.full(B.shape[0], 1.0 / B.shape[0])
            # cdist, not ot.dist: the same Euclidean cost matrix, computed row by row, so
            # it is exact near 0 and free of BLAS-dependent bits (ot.dist expands
            # |a|^2 + |b|^2 - 2ab through a matrix product)
            # a and b sum to 1 by construction: POT's marginal check (np.testing) is skipped
            cost, log = ot.emd2(
                a, b, cdist(A, B, "euclidean"), numItermax=10**8, log=True, check_marginals=False
            )
            if log["warning"] is not None:
                raise RuntimeError(f"ot.emd2 between groups {g} and {h}: {log['warning']}")
            worst = max(worst, float(cost))
    return worst, n_used


def score_distance_between_groups(scores: np.ndarray, group: np.ndarray, n_groups: int) -> float:
    """W1 between the groups' 1-D score distributions (scores (a,), group (a,)), the largest
    over pairs; exact (sorted quantiles, ``scipy.stats.wasserstein_distance``). NaN if
    G < 2 or a group has no row."""
    from scipy.stats import wasserstein_distance

    counts = _group_counts(group, n_groups)
    if n_groups < 2 or counts.min() == 0:
        return _NAN
    parts = [np.asarray(scores, dtype=np.float64)[np.asarray(group) == g] for g in range(n_groups)]
    return max(
        float(wasserstein_distance(parts[g], parts[h]))
        for g in range(n_groups)
        for h in range(g + 1, n_groups)
    )


# -- any candidate metric, per group ----------------------------------------------------
def split_by_group(
    table: pd.DataFrame, fn: Callable[[pd.DataFrame], Any], group_col: str = "group"
) -> dict[int, Any]:
    """§7.3: ``{g: fn(rows of group g)}`` over the group ids present, in ascending order."""
    if group_col not in table.columns:
        raise ConfigError(problem("group_col", group_col, "a column of the table"))
    return {int(g): fn(rows) for g, rows in table.groupby(group_col, sort=True)}
