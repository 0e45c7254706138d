"""The shifts recourse causes (Altmeyer et al. 2023): the unbiased MMD² and its bandwidth
against known answers, and the retraining world's columns and card figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from abm import RecourseModel
from abm.config import ScenarioConfig
from abm.metrics_ext import disagreement, kernel_mean, median_gamma, mmd2, subsample
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
    card = drifting.outcome_card().values
    assert card["domain_shift"] == dom[-1]
    assert card["model_shift"] == pytest.approx(tt.loc[refit, "model_mmd"].mean())
    assert card["param_shift"] == pytest.approx(tt.loc[refit, "shift_l2"].mean())


def test_shifts_are_reproducible_and_switch_off():
    kw = dict(seed=4, ticks=21, agents=False)
    a = RecourseModel("retraining", "threshold", **kw).run().tick_table()
    b = RecourseModel("retraining", "threshold", **kw).run().tick_table()
    cols = ["domain_mmd", "model_mmd", "disagreement"]
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


def test_shift_points_is_validated():
    with pytest.raises(ConfigError, match="shift_points"):
        ScenarioConfig(shift_points=1)
    with pytest.raises(ConfigError, match="shift_points"):
        ScenarioConfig(shift_points=-5)
    assert ScenarioConfig(shift_points=2000).to_dict() == ScenarioConfig().to_dict()


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
