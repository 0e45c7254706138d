"""Behaviour probabilities against values computed by hand from App. B."""

import math

import numpy as np
import pytest

from abm import behaviour


def test_dropout_probability_hand_values():
    # b = 0.2, q = 2, rho=2, chi=0.1, omega=1: exponent 0.4 + 0.2 + 0.4 = 1.0
    p = behaviour.dropout_probability(np.array([0.2, 0.0, 0.0]), np.array([2, 0, 3]), 2.0, 0.1, 1.0)
    np.testing.assert_allclose(p, [1 - math.exp(-1.0), 0.0, 1 - math.exp(-0.3)], rtol=1e-14)


def test_score_gap_clips_and_ignores_missing_goals():
    gap = behaviour.score_gap(np.array([0.6, 0.4, np.nan]), np.array([0.5, 0.5, 0.1]))
    np.testing.assert_allclose(gap, [0.1, 0.0, 0.0], atol=1e-15)


def test_success_probability_hand_values():
    X = np.array([[0.2, 0.5, 0.3, 0.0]])
    X_cf = np.array([[0.6, 0.5, 0.1, 1.0]])
    d = np.array([0.5, 0.5, 0.25, 0.9])
    p = behaviour.success_probability(X, X_cf, beta=0.05, d=d)
    a0 = 1 / (0.4 * 0.6) - 1  # eq. 7
    a2 = 1 / (0.2 * 0.1) - 1
    expected = [1 - math.exp(-0.05 * a0 / 0.5), 1.0, 1 - math.exp(-0.05 * a2 / 0.25), 0.0]
    np.testing.assert_allclose(p[0], expected, rtol=1e-12)


def test_success_probability_limits():
    X = np.array([[0.2, 0.4, 0.5]])
    X_cf = np.array([[0.7, 0.0, 0.5]])
    p_inf = behaviour.success_probability(X, X_cf, beta=math.inf, d=np.array([0.9, 0.9, 0.9]))
    np.testing.assert_array_equal(p_inf, [[1.0, 1.0, 1.0]])
    p_small = behaviour.success_probability(X, X_cf, beta=1e-9, d=np.array([0.9, 0.9, 0.9]))
    assert p_small[0, 0] < 1e-6  # a hard move is near impossible
    assert p_small[0, 1] == 1.0  # moving to 0 has infinite attainability


def test_success_probability_per_candidate_difficulty():
    X = np.array([[0.2], [0.2]])
    X_cf = np.array([[0.6], [0.6]])
    p = behaviour.success_probability(X, X_cf, 0.05, np.array([[0.2], [0.8]]))
    assert p[0, 0] > p[1, 0]


def test_reapply_probability_hand_values():
    gap = np.array([0.1, 0.1, 0.0, 0.3])
    elapsed = np.array([1, 5, 1, 2])
    p = behaviour.reapply_probability(gap, elapsed, validity=5, nu=10.0)
    base = math.exp(-1.0)
    expected = [0.8 * base + 0.2, 1.0, 1.0, 0.6 * math.exp(-3.0) + 0.4]
    np.testing.assert_allclose(p, expected, rtol=1e-14)


@pytest.mark.parametrize("validity", [1, 3, 7])
def test_reapply_is_certain_at_validity(validity):
    p = behaviour.reapply_probability(np.array([5.0]), np.array([validity]), validity, 10.0)
    assert p[0] == 1.0
