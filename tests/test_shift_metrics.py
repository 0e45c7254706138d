"""The shifts recourse causes (Altmeyer et al. 2023): the unbiased MMD² and its bandwidth
against known answers, and the retraining world's columns and card figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abm import RecourseModel
from abm.config import ScenarioConfig
from abm.metrics_ext import (
    PERM_TOL,
    disagreement,
    kernel_mean,
    median_gamma,
    mmd2,
    mmd2_test,
    permutation_p,
    subsample,
)
from abm.validation import ConfigError


def gaussian_mmd2(gamma: float, s: float, mu: np.ndarray) -> float:
    """MMD² between N(0, s²I) and N(mu, s²I) in d dimensions under exp(−γ‖x − y‖²):
    E k over a pair of one sample is (1 + 4γs²)^(−d/2), across the two it has the extra
    factor exp(−γ‖mu‖² / (1 + 4γs²)) (a Gaussian integral)."""
    c = 1.0 + 4.0 * gamma * s * s
    return 2.0 * c ** (-mu.size / 2) * (1.0 - math.exp(-gamma * float(mu @ mu) / c))


def test_one_distribution_gives_zero_in_expectation():
    rng = np.random.default_rng(1)
    est = [mmd2(rng.normal(size=(200, 3)), rng.normal(size=(200, 3)), gamma=0.2) for _ in range(60)]
    mean, se = np.mean(est), np.std(est, ddof=1) / math.sqrt(len(est))
    assert abs(mean) < 4 * se  # unbiased: no offset, unlike the biased V-statistic
    assert min(est) < 0 < max(est)


@pytest.mark.parametrize("mu", [(1.0, 0.0), (1.0, -1.0, 0.5)])
def test_a_mean_shift_gives_the_known_value(mu):
    mu = np.asarray(mu)
    rng = np.random.default_rng(2)
    truth = gaussian_mmd2(0.5, 1.0, mu)
    est = [
        mmd2(rng.normal(size=(800, mu.size)), rng.normal(size=(800, mu.size)) + mu, gamma=0.5)
        for _ in range(5)
    ]
    assert np.mean(est) == pytest.approx(truth, rel=0.1)
    assert truth > 0.05  # the shift is far from the estimator's noise


def test_kernel_means_and_the_median_heuristic_by_hand():
    X = np.array([[0.0], [1.0], [3.0]])  # distances 1, 3, 2: median 2
    assert median_gamma(X) == pytest.approx(1 / 8)
    g = 0.3
    pairs = [math.exp(-g * d * d) for d in (1, 3, 2)]
    assert kernel_mean(X, None, g) == pytest.approx(sum(pairs) / 3)  # distinct pairs only
    Y = np.array([[2.0]])
    assert kernel_mean(X, Y, g) == pytest.approx(np.mean([math.exp(-g * d * d) for d in (2, 1, 1)]))
    # the estimator is the three means: MMD² = k_xx + k_yy − 2 k_xy
    Z = np.array([[0.5], [2.5]])
    want = kernel_mean(X, None, g) + kernel_mean(Z, None, g) - 2 * kernel_mean(X, Z, g)
    assert mmd2(X, Z, gamma=g) == pytest.approx(want)
    assert math.isnan(mmd2(X, Y, gamma=g))  # one row: no within-sample pair


def test_subsampling_needs_a_stream_and_is_reproducible():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(300, 2)), rng.normal(size=(250, 2)) + 0.3
    with pytest.raises(ValueError, match="rng"):
        mmd2(X, Y, max_points=100)
    a = mmd2(X, Y, rng=np.random.default_rng(7), max_points=100)
    b = mmd2(X, Y, rng=np.random.default_rng(7), max_points=100)
    assert a == b and a != mmd2(X, Y, max_points=300)
    idx = subsample(300, 100, np.random.default_rng(0))
    assert idx.shape == (100,) and np.all(np.diff(idx) > 0)
    assert np.array_equal(subsample(50, 100, None), np.arange(50))


def test_disagreement_counts_changed_classes():
    assert disagreement([0.2, 0.6, 0.5, 0.9], [0.4, 0.4, 0.6, 0.49]) == 0.5
    assert math.isnan(disagreement([], []))


# -- significance: permutation p-values -------------------------------------------------------
def test_permutation_p_counts_the_observed_labelling_and_ties():
    # 0.5 − 1e-13 ties with 0.5 (within PERM_TOL), 0.4 does not: (1 + 3) / (1 + 5)
    null = np.array([0.1, 0.5, 0.7, 0.5 - PERM_TOL / 10, 0.4])
    assert permutation_p(0.5, null) == 4 / 6
    assert permutation_p(0.0, -np.ones(99)) == 1 / 100  # never 0
    assert math.isnan(permutation_p(math.nan, null)) and math.isnan(permutation_p(0.5, []))


def _splits(rng, N, m, B):
    """The splits mmd2_test draws for B permutations of N pooled rows (one batch)."""
    return [np.sort(rng.permutation(N)[:m]) for _ in range(B)]


def test_pooled_null_is_mmd2_of_each_permuted_split():
    rng = np.random.default_rng(11)
    X, Y = rng.normal(size=(13, 2)), rng.normal(size=(9, 2)) + 0.3
    obs, p = mmd2_test(X, Y, np.random.default_rng(5), 60, gamma=0.4)
    assert obs == pytest.approx(mmd2(X, Y, gamma=0.4), abs=1e-14)
    Z = np.concatenate([X, Y])
    null = []
    for rows in _splits(np.random.default_rng(5), 22, 13, 60):
        a = np.zeros(22, dtype=bool)
        a[rows] = True
        null.append(mmd2(Z[a], Z[~a], gamma=0.4))
    assert p == permutation_p(obs, np.array(null))


def test_paired_null_swaps_within_pairs():
    rng = np.random.default_rng(12)
    s = rng.random(40)
    t = s + rng.normal(scale=0.02, size=40) + 0.004
    obs, p = mmd2_test(s, t, np.random.default_rng(6), 50, gamma=4.0, paired=True)
    assert obs == pytest.approx(mmd2(s, t, gamma=4.0, paired=True), abs=1e-14)
    swap = np.random.default_rng(6).integers(0, 2, size=(40, 50)) == 1  # as drawn, (m, B)
    null = [mmd2(np.where(e, t, s), np.where(e, s, t), gamma=4.0, paired=True) for e in swap.T]
    assert p == permutation_p(obs, np.array(null))


def test_one_distribution_gives_uniform_p_and_a_shift_the_smallest_p():
    rng = np.random.default_rng(13)
    ps = [
        mmd2_test(rng.normal(size=(30, 2)), rng.normal(size=(25, 2)), rng, 99)[1] for _ in range(60)
    ]
    # uniform on {1/100, ..., 1}: mean 0.505, sd of the mean 0.037
    assert 0.38 < np.mean(ps) < 0.63 and np.mean(np.array(ps) <= 0.1) < 0.25
    X, Y = rng.normal(size=(200, 3)), rng.normal(size=(150, 3)) + 1.0
    assert mmd2_test(X, Y, rng, 199, gamma=0.3)[1] == 1 / 200
    s = rng.random(300)
    assert mmd2_test(s, s + 0.01, rng, 199, gamma=4.0, paired=True)[1] == 1 / 200
    # paired, a unit's two rows exchangeable: the same score, each with its own noise
    noisy = [s + rng.normal(scale=0.05, size=(2, 300)) for _ in range(30)]
    ps = [mmd2_test(a, b, rng, 99, gamma=4.0, paired=True)[1] for a, b in noisy]
    assert 0.3 < np.mean(ps) < 0.7


def test_exact_ties_count_whatever_the_rounding():
    # equal scores: every swap leaves the statistic at 0, so p = 1 exactly
    s = np.random.default_rng(14).random(50)
    assert mmd2_test(s, s.copy(), np.random.default_rng(0), 99, gamma=4.0, paired=True) == (0, 1)
    # 2 + 2 rows: 2 of the 6 splits (the observed one and its mirror) are the observed
    # labelling, computed along another path; they count as >= it, the others by value
    X, Y = np.array([[0.0], [0.3]]), np.array([[1.0], [1.6]])
    obs, p = mmd2_test(X, Y, np.random.default_rng(1), 300, gamma=1.0)
    Z = np.concatenate([X, Y])
    count = 0
    for rows in _splits(np.random.default_rng(1), 4, 2, 300):
        if rows.tolist() in ([0, 1], [2, 3]):
            count += 1
            continue
        other = mmd2(Z[rows], np.delete(Z, rows, axis=0), gamma=1.0)
        assert abs(other - obs) > 1e-6  # no near-tie but the exact ones
        count += other > obs
    assert p == (1 + count) / 301 and count > 50


def test_p_values_survive_last_bit_changes_of_the_kernel(monkeypatch):
    # another BLAS changes the kernel's last bits: ties and clear gaps must not flip
    import sklearn.metrics.pairwise as pairwise

    rng = np.random.default_rng(16)
    s, X = rng.random(60), rng.normal(size=(40, 2))
    cases = [
        ((s, s.copy()), dict(gamma=4.0, paired=True)),  # every swap ties
        ((np.array([[0.0], [0.3]]), np.array([[1.0], [1.6]])), dict(gamma=1.0)),  # exact ties
        ((X[:20], X[20:]), dict(gamma=0.5)),  # one distribution
        ((s, s + rng.normal(scale=0.05, size=60)), dict(gamma=4.0, paired=True)),
    ]

    def ps():
        return [mmd2_test(*xy, np.random.default_rng(2), 199, **kw)[1] for xy, kw in cases]

    want = ps()
    exact = pairwise.rbf_kernel

    def jittered(*args, **kwargs):
        K = exact(*args, **kwargs)
        u = np.random.default_rng(K.shape[0]).uniform(-4e-16, 4e-16, K.shape)
        return K * (1.0 + (u + u.T) / 2)  # a few ulps, symmetric

    monkeypatch.setattr(pairwise, "rbf_kernel", jittered)
    assert ps() == want and want[0] == 1.0


def test_permutation_tests_are_reproducible_and_capped():
    rng = np.random.default_rng(15)
    X, Y = rng.normal(size=(120, 2)), rng.normal(size=(90, 2)) + 0.2
    a = mmd2_test(X, Y, np.random.default_rng(3), 300, max_points=50)
    assert a == mmd2_test(X, Y, np.random.default_rng(3), 300, max_points=50)
    # the subsample is drawn first, from the same stream, as mmd2 draws it
    assert a[0] == pytest.approx(mmd2(X, Y, rng=np.random.default_rng(3), max_points=50))
    assert math.isnan(mmd2_test(X, Y, rng, 0)[1])  # no permutations, no p
    assert all(math.isnan(v) for v in mmd2_test(X[:1], Y, rng, 10))


# -- in the retraining world -------------------------------------------------------------------
@pytest.fixture(scope="module")
def drifting():
    return RecourseModel("retraining", "threshold", seed=0, ticks=60, agents=False).run()


def test_shift_columns_at_refits_only_and_the_drift_moves_the_domain(drifting):
    tt = drifting.tick_table()
    refit = tt["tick"] % 10 == 0
    refit &= tt["tick"] > 0
    for col in ("domain_mmd", "model_mmd", "disagreement"):
        assert tt.loc[~refit, col].isna().all(), col
        assert tt.loc[refit, col].notna().all(), col
    # the shifted data moves 0.1 further per refit: the domain shift grows with each
    dom = tt.loc[refit, "domain_mmd"].to_numpy()
    assert np.all(np.diff(dom) > 0) and dom[0] > 0.05
    assert tt.loc[refit, "disagreement"].between(0, 1).all()
    # the shifts are far beyond chance: no permutation reaches them
    for col in ("domain_p", "model_p"):
        assert tt.loc[~refit, col].isna().all(), col
        assert (tt.loc[refit, col] == 1 / 201).all(), col
    card = drifting.outcome_card().values
    assert card["domain_shift"] == dom[-1]
    assert card["model_shift"] == pytest.approx(tt.loc[refit, "model_mmd"].mean())
    assert card["param_shift"] == pytest.approx(tt.loc[refit, "shift_l2"].mean())


def test_shifts_are_reproducible_and_switch_off():
    kw = dict(seed=4, ticks=21, agents=False)
    a = RecourseModel("retraining", "threshold", **kw).run().tick_table()
    b = RecourseModel("retraining", "threshold", **kw).run().tick_table()
    cols = ["domain_mmd", "model_mmd", "disagreement", "domain_p", "model_p"]
    assert a[cols].equals(b[cols])
    off = RecourseModel("retraining", "threshold", shift_points=0, **kw).run()
    tt = off.tick_table()
    assert not set(cols) & set(tt.columns)
    # the metrics draw from their own stream: everything else is as with them on
    same = [c for c in tt.columns if c in a.columns]
    assert tt[same].equals(a[same])
    card = off.outcome_card()
    assert card.reasons["domain_shift"] == "shift_points = 0"
    assert not math.isnan(card.values["param_shift"])


def test_permutations_draw_from_their_own_stream():
    kw = dict(seed=4, ticks=21, agents=False)
    on = RecourseModel("retraining", "threshold", shift_permutations=50, **kw).run().tick_table()
    off = RecourseModel("retraining", "threshold", shift_permutations=0, **kw).run().tick_table()
    assert {"domain_p", "model_p"} <= set(on.columns)
    assert not {"domain_p", "model_p"} & set(off.columns)
    # every other column, the shifts' MMD² included, is bitwise as without them
    assert off.equals(on.drop(columns=["domain_p", "model_p"]))


def test_outcome_refits_barely_move_the_domain_but_significantly_the_model():
    kw = dict(retrain_data="outcomes", retrain_drift=(), outcome_delay=2, agents=False)
    tt = RecourseModel("retraining", "threshold", seed=0, ticks=21, **kw).run().tick_table()
    refit = tt.loc[tt["model_version"].diff() > 0]
    assert len(refit) == 2
    # revealed outcomes come from the first data's distribution: no domain shift ...
    assert (refit["domain_p"] > 0.2).all() and (refit["domain_mmd"].abs() < 0.01).all()
    # ... yet every score moves the same way: the paired test sees a tiny model shift
    assert (refit["model_mmd"] < 1e-5).all() and (refit["model_p"] == 1 / 201).all()


def test_shift_points_is_validated():
    with pytest.raises(ConfigError, match="shift_points"):
        ScenarioConfig(shift_points=1)
    with pytest.raises(ConfigError, match="shift_points"):
        ScenarioConfig(shift_points=-5)
    assert ScenarioConfig(shift_points=2000).to_dict() == ScenarioConfig().to_dict()
    for bad in (-1, 100_001, 2.5):
        with pytest.raises(ConfigError, match="shift_permutations"):
            ScenarioConfig(shift_permutations=bad)
    assert ScenarioConfig(shift_permutations=200).to_dict() == ScenarioConfig().to_dict()
    assert ScenarioConfig(shift_permutations=0).to_dict()["shift_permutations"] == 0


def test_paired_rows_leave_their_own_pairs_out():
    rng = np.random.default_rng(5)
    s = rng.random(300)
    # the same scores twice: no shift, exactly, once the pairs i = i are left out
    assert mmd2(s, s, gamma=4.0, paired=True) == pytest.approx(0.0, abs=1e-15)
    assert mmd2(s, s, gamma=4.0) < -1e-3  # as independent samples: biased below 0
    # a shift of every score is seen either way
    assert mmd2(s, s + 0.3, gamma=4.0, paired=True) > 0.05
    with pytest.raises(ConfigError, match="paired"):
        mmd2(s, s[:10], paired=True)


def test_the_kernels_run_on_one_blas_thread_and_put_the_threads_back():
    """The shifts' kernels run with every BLAS library loaded at one thread (their bits do
    not depend on the thread count), through one controller made once."""
    from threadpoolctl import threadpool_info

    from abm import metrics_ext

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    assert before
    with metrics_ext._one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before
    assert metrics_ext._blas_libraries() is metrics_ext._blas_libraries()
