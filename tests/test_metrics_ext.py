"""World-extension metrics (specs/world-extensions.md §7) against known answers."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abm import metrics_ext as mx
from abm.validation import ConfigError


def phi(u: float) -> float:
    return 0.5 * (1.0 + math.erf(u / math.sqrt(2.0)))


# -- §1: true outcome -------------------------------------------------------------------
def test_true_outcome_probability_at_a_hand_point():
    w = np.array([0.5, 0.3, 0.2])
    X = np.array([[0.8, 0.4, 0.1], [0.2, 0.2, 0.2]])
    p = mx.true_outcome_probability(X, w, c_star=0.5, sigma_star=0.1)
    # w·x = 0.4 + 0.12 + 0.02 = 0.54 and 0.2
    assert p.shape == (2,) and p.dtype == np.float64
    assert p[0] == pytest.approx(phi((0.54 - 0.5) / 0.1), abs=1e-15)
    assert p[1] == pytest.approx(phi((0.2 - 0.5) / 0.1), abs=1e-15)


def test_true_outcome_probability_without_noise_is_a_strict_step():
    w = np.array([1.0, 0.0])
    X = np.array([[0.6, 0.9], [0.5, 0.9], [0.4, 0.0]])
    p = mx.true_outcome_probability(X, w, c_star=0.5, sigma_star=0.0)
    np.testing.assert_array_equal(p, [1.0, 0.0, 0.0])  # w·x = c* is not above c*
    assert p.dtype == np.float64


def test_non_causal_feature_never_moves_h_star():
    w = np.array([0.7, 0.0, 0.3])  # feature 1 non-causal: w*_1 = 0
    X = np.array([[0.3, 0.0, 0.6]])
    moved = X.copy()
    moved[0, 1] = 1.0
    p0 = mx.true_outcome_probability(X, w, 0.5, 0.2)
    assert mx.true_outcome_probability(moved, w, 0.5, 0.2)[0] == p0[0]


def test_true_outcome_probability_rejects_bad_noise_and_shapes():
    X = np.zeros((2, 3))
    with pytest.raises(ConfigError, match="outcome_noise"):
        mx.true_outcome_probability(X, np.ones(3) / 3, 0.5, -0.1)
    with pytest.raises(ConfigError, match="w_star"):
        mx.true_outcome_probability(X, np.ones(2) / 2, 0.5, 0.1)


def test_outcome_frequency_matches_h_star_within_4_se():
    w = np.array([0.6, 0.4])
    x = np.array([[0.55, 0.45]])
    h = mx.true_outcome_probability(x, w, 0.5, 0.1)[0]  # Φ(0.1) ~ 0.54: far from 0 and 1
    n = 20000
    y = (np.random.default_rng(7).random(n) < h).astype(np.int8)
    se = math.sqrt(h * (1 - h) / n)
    assert abs(mx.true_positive_rate(y) - h) < 4 * se


def test_true_positive_rate_known_answer_and_rules():
    assert mx.true_positive_rate(np.array([1, 0, 1, 1], dtype=np.int8)) == 0.75
    assert math.isnan(mx.true_positive_rate(np.array([], dtype=np.int8)))
    with pytest.raises(ConfigError, match="y"):  # unrevealed (-1) rows belong elsewhere
        mx.true_positive_rate(np.array([1, -1], dtype=np.int8))


def test_improvement_rate_counts_advised_rows_at_or_above_c_star():
    w = np.array([0.5, 0.5])
    X_cf = np.array([[0.6, 0.4], [0.2, 0.2], [0.9, 0.9], [0.5, 0.6]])
    # w·x_cf = 0.5 (exactly c*: counts), 0.2, 0.9 (not advised), 0.55
    advised = np.array([True, True, False, True])
    assert mx.improvement_rate(X_cf, w, 0.5, advised) == pytest.approx(2 / 3)
    assert math.isnan(mx.improvement_rate(X_cf, w, 0.5, np.zeros(4, dtype=bool)))


def test_mean_true_gain_over_advised_rows():
    p = np.array([0.1, 0.2, 0.3])
    p_cf = np.array([0.5, 0.2, 0.9])
    advised = np.array([True, True, False])
    assert mx.mean_true_gain(p_cf, p, advised) == pytest.approx(0.2)
    assert math.isnan(mx.mean_true_gain(p_cf, p, np.zeros(3, dtype=bool)))


# -- §2: validity -----------------------------------------------------------------------
def test_validity_known_answer_with_tolerance():
    goals = np.array([0.6, 0.6, 0.7, 0.8])
    cf = np.array([0.6 - 5e-7, 0.59, 0.75, 0.8])  # within tol, below, above, equal
    assert mx.validity(cf, goals) == 0.75
    assert mx.validity(cf, goals, tol=0.0) == 0.5
    assert math.isnan(mx.validity(np.array([]), np.array([])))
    with pytest.raises(ConfigError, match="goals"):
        mx.validity(cf, goals[:3])


# -- §3: groups -------------------------------------------------------------------------
def test_dp_gap_of_a_hand_table():
    # group 0: 2 of 4 accepted, group 1: 3 of 4
    accepted = np.array([1, 1, 0, 0, 1, 1, 1, 0], dtype=bool)
    group = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert mx.demographic_parity_gap(accepted, group, 2) == 0.25
    # a third group without applicants is left out, not counted as rate 0
    assert mx.demographic_parity_gap(accepted, group, 3) == 0.25


def test_dp_gap_is_nan_below_two_groups_with_applicants():
    accepted = np.array([True, False])
    assert math.isnan(mx.demographic_parity_gap(accepted, np.array([1, 1]), 2))
    assert math.isnan(mx.demographic_parity_gap(accepted, np.array([0, 0]), 1))
    assert math.isnan(mx.demographic_parity_gap(np.array([], bool), np.array([], int), 2))


def test_group_ids_out_of_range_are_rejected():
    with pytest.raises(ConfigError, match="group"):
        mx.demographic_parity_gap(np.array([True]), np.array([2]), 2)
    with pytest.raises(ConfigError, match="n_groups"):
        mx.per_group_rates(np.array([True]), np.array([0]), 0)
    with pytest.raises(ConfigError, match="accepted"):
        mx.per_group_rates(np.array([True, False]), np.array([0]), 1)


def test_per_group_rates_known_answer():
    accepted = np.array([1, 0, 0, 1, 1], dtype=bool)
    group = np.array([0, 0, 0, 2, 2])
    out = mx.per_group_rates(accepted, group, 3)
    assert list(out) == [
        "n_applicants_g0",
        "n_applicants_g1",
        "n_applicants_g2",
        "accept_rate_g0",
        "accept_rate_g1",
        "accept_rate_g2",
    ]
    assert [out[f"n_applicants_g{g}"] for g in range(3)] == [3, 0, 2]
    assert sum(out[f"n_applicants_g{g}"] for g in range(3)) == accepted.size
    assert out["accept_rate_g0"] == pytest.approx(1 / 3)
    assert math.isnan(out["accept_rate_g1"])
    assert out["accept_rate_g2"] == 1.0


def test_per_group_ratio_counts_numerator_and_denominator_per_group():
    group = np.array([0, 0, 0, 1, 1, 2])
    succ = np.array([1, 1, 0, 1, 0, 0], dtype=bool)
    accepted_succ = np.array([1, 0, 0, 0, 0, 0], dtype=bool)
    out = mx.per_group_ratio(accepted_succ, succ, group, 3, "rr")
    assert list(out) == ["rr_g0", "rr_g1", "rr_g2"]
    assert out["rr_g0"] == 0.5 and out["rr_g1"] == 0.0
    assert math.isnan(out["rr_g2"])  # no successful implementer in group 2
    # the numerator need not lie inside the denominator (rf: reapplicants / past rejected)
    rejected = np.array([1, 0, 0, 0, 0, 0], dtype=bool)
    assert mx.per_group_ratio(succ, rejected, group, 3, "rf")["rf_g0"] == 2.0


def test_per_group_mean_known_answer():
    out = mx.per_group_mean(np.array([1.0, 3.0, 4.0]), np.array([1, 1, 0]), 3, "mtta")
    assert out["mtta_g0"] == 4.0 and out["mtta_g1"] == 2.0
    assert math.isnan(out["mtta_g2"])


def test_w1_between_a_cloud_and_its_shift_is_the_shift_length():
    X = np.random.default_rng(3).random((60, 4))
    v = np.array([0.3, -0.1, 0.2, 0.05])
    both = np.vstack([X, X + v])
    group = np.repeat([0, 1], 60)
    dist, n_used = mx.wasserstein_between_groups(both, group, 2)
    assert dist == pytest.approx(np.linalg.norm(v), abs=1e-9)
    assert n_used == 60


def test_w1_is_zero_for_equal_clouds_and_the_max_over_pairs():
    X = np.random.default_rng(4).random((30, 2))
    v = np.array([0.0, 0.4])
    rows = np.vstack([X, X, X + v])  # groups 0 and 1 equal, group 2 shifted
    group = np.repeat([0, 1, 2], 30)
    assert mx.wasserstein_between_groups(rows[:60], group[:60], 2)[0] == 0.0
    assert mx.wasserstein_between_groups(rows, group, 3)[0] == pytest.approx(0.4, abs=1e-9)


def test_w1_nan_rules():
    X = np.random.default_rng(5).random((6, 2))
    dist, n_used = mx.wasserstein_between_groups(X, np.zeros(6, int), 1)
    assert math.isnan(dist) and n_used == 0  # one group: nothing to compare
    dist, n_used = mx.wasserstein_between_groups(X, np.array([0, 0, 0, 2, 2, 2]), 3)
    assert math.isnan(dist) and n_used == 0  # group 1 is empty


def test_w1_subsample_is_seeded_and_capped():
    rng = np.random.default_rng(6)
    X = rng.random((230, 3))
    group = np.concatenate([np.zeros(150, int), np.ones(80, int)])
    a = mx.wasserstein_between_groups(X, group, 2, np.random.default_rng(11), max_points=50)
    b = mx.wasserstein_between_groups(X, group, 2, np.random.default_rng(11), max_points=50)
    c = mx.wasserstein_between_groups(X, group, 2, np.random.default_rng(12), max_points=50)
    assert a == b and a[1] == 50  # same seed, same bits; n_used = max_points
    assert c[0] != a[0]  # the seed chooses the rows
    full = mx.wasserstein_between_groups(X, group, 2, max_points=150)
    assert full[1] == 150 and full[0] != a[0]  # no group above the cap: every row, no rng


def test_w1_subsample_draws_exactly_as_documented():
    # the documented draw: per oversized group in ascending order, sorted choice
    rng = np.random.default_rng(8)
    X = rng.random((40, 2))
    group = np.array([0, 1] * 20)
    got = mx.wasserstein_between_groups(X, group, 2, np.random.default_rng(9), max_points=7)
    draw = np.random.default_rng(9)
    picks = [np.flatnonzero(group == g)[np.sort(draw.choice(20, 7, replace=False))] for g in (0, 1)]
    want = mx.wasserstein_between_groups(
        np.vstack([X[picks[0]], X[picks[1]]]), np.repeat([0, 1], 7), 2
    )
    assert got == want


def test_w1_needs_rng_only_when_subsampling():
    X = np.zeros((5, 2))
    group = np.array([0, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="rng"):
        mx.wasserstein_between_groups(X, group, 2, max_points=2)
    with pytest.raises(ConfigError, match="max_points"):
        mx.wasserstein_between_groups(X, group, 2, max_points=0)


# -- any candidate metric, per group ----------------------------------------------------
def test_split_by_group_applies_fn_per_group_in_order():
    table = pd.DataFrame({"group": [2, 0, 2, 0, 0], "cost": [1.0, 2.0, 3.0, 4.0, 6.0]})
    out = mx.split_by_group(table, lambda rows: rows["cost"].mean())
    assert list(out) == [0, 2]
    assert out == {0: 4.0, 2: 2.0}
    assert all(isinstance(g, int) for g in out)
    assert mx.split_by_group(table.iloc[:0], len) == {}
    with pytest.raises(ConfigError, match="group_col"):
        mx.split_by_group(table, len, group_col="g")


def test_importing_the_module_loads_neither_pandas_nor_pot():
    code = "import sys, abm.metrics_ext; print('pandas' in sys.modules, 'ot' in sys.modules)"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "False"]
