"""Metric functions against known answers."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from abm import metrics


def test_gini_known_values():
    assert metrics.gini(np.array([0.5, 0.5, 0.5])) == 0.0
    # two values 0 and 1: sum |gi-gj| = 2, 2 n sum = 4 -> 0.5
    assert metrics.gini(np.array([0.0, 1.0])) == 0.5
    np.testing.assert_allclose(metrics.gini(np.array([1.0, 2.0, 3.0])), 8 / (2 * 3 * 6))


@settings(max_examples=200, deadline=None)
@given(
    value=st.floats(1e-12, 1.0),
    n=st.integers(1, 300),
    jitter=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=300),
)
def test_gini_of_equal_values_is_exactly_zero_and_never_negative(value, n, jitter):
    # equal goal scores in any count: exactly 0, not round-off of either sign
    assert metrics.gini(np.full(n, value)) == 0.0
    # a tie group plus scattered values: never below 0 whatever the rounding
    g = np.concatenate([np.full(n, value), value * (1.0 + 1e-15 * np.asarray(jitter))])
    assert metrics.gini(g) >= 0.0


def test_gini_undefined_cases_are_nan():
    assert np.isnan(metrics.gini(np.array([])))
    assert np.isnan(metrics.gini(np.array([0.0, 0.0])))
    assert np.isnan(metrics.gini(np.array([np.nan])))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=30))
def test_gini_matches_pairwise_definition(values):
    g = np.array(values)
    brute = np.abs(g[:, None] - g[None, :]).sum() / (2 * len(g) * g.sum())
    np.testing.assert_allclose(metrics.gini(g), brute, rtol=1e-9, atol=1e-12)


def test_ratios_nan_on_empty_denominator():
    assert np.isnan(metrics.recourse_reliability(0, 0))
    assert np.isnan(metrics.recourse_feasibility(0, 0))
    assert metrics.recourse_reliability(0, 4) == 0.0
    assert metrics.recourse_feasibility(3, 4) == 0.75


def test_cost_and_error():
    X = np.array([[0.1, 0.5], [0.2, 0.2]])
    X_cf = np.array([[0.3, 0.5], [0.0, 0.6]])
    d = np.array([0.5, 0.25])
    np.testing.assert_allclose(metrics.recommendation_cost(X, X_cf, d), [0.1, 0.2])
    np.testing.assert_allclose(metrics.recommendation_error([0.5, 0.7], [0.6, 0.7]), [0.1, 0.0])


def test_episode_means_skip_undefined_ticks():
    ticks = pd.DataFrame(
        {
            "rr": [np.nan, 1.0, 0.0],
            "rf": [np.nan, 0.5, np.nan],
            "gini": [0.1, 0.1, 0.1],
            "mean_cost": [1.0, 2.0, 3.0],
            "n_accepted": [1, 2, 3],
            "n_dropped": [0, 1, 0],
            "n_reapplied": [0, 1, 1],
            "n_succ": [0, 1, 1],
            "wasted_effort": [0.0, 0.5, 0.0],
            "effort": [0.1, 0.2, 0.3],
            "mean_time_to_accept": [0.0, 1.0, np.nan],
            "gini_cost": [np.nan, 0.2, 0.4],
            "n_unadvised": [0, 2, 1],
            "n_unreached": [0, 1, 0],
            "n_withheld": [0, 0, 1],
            "n_no_change": [0, 1, 0],
            "n_below_threshold": [0, 0, 0],
        }
    )
    s = metrics.episode_summary(ticks)
    assert s["rr"] == 0.5 and s["rf"] == 0.5 and s["n_accepted"] == 6
    assert s["mean_time_to_accept"] == 0.5
    assert np.isclose(s["gini_cost"], 0.3) and s["n_unadvised"] == 3 and s["n_withheld"] == 1


def test_no_card_figure_is_named_like_a_scenario_field():
    """A study keeps every card figure as a column beside the swept fields."""
    from abm.config import field_names
    from abm.mechanisms import NAMES

    assert not set(NAMES) & set(field_names())
