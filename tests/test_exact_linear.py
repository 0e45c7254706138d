"""exact-linear: reaches the goal and equals the LP optimum (scipy HiGHS)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.special import expit, logit

from policies.recommenders import DifficultyEstimator, exact_linear_counterfactuals


def lp_optimum(x, goal, w, b, cost, mutable):
    """min sum cost |delta| s.t. w.(x + delta) + b >= logit(goal), 0 <= x + delta <= 1."""
    z = x.shape[0]
    # delta = p - q with p, q >= 0; variables [p, q]
    c = np.concatenate([cost, cost])
    A_ub = -np.concatenate([w, -w])[None, :]
    b_ub = [-(logit(goal) - b - w @ x)]
    bounds = [(0, (1 - x[i]) if mutable[i] else 0) for i in range(z)]
    bounds += [(0, x[i] if mutable[i] else 0) for i in range(z)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    return res


@settings(max_examples=120, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    z=st.integers(1, 12),
    goal=st.floats(0.05, 0.95),
    cost_kind=st.sampled_from(["uniform", "random"]),
)
def test_matches_lp_optimum_and_reaches_goal(seed, z, goal, cost_kind):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 3, size=z)
    b = rng.normal(0, 1)
    x = rng.uniform(0, 1, size=z)
    cost = np.ones(z) if cost_kind == "uniform" else rng.uniform(0.05, 1.0, size=z)
    mutable = rng.uniform(size=z) > 0.2
    x_cf = exact_linear_counterfactuals(x[None, :], np.array([goal]), w, b, cost, mutable)[0]
    res = lp_optimum(x, goal, w, b, cost, mutable)
    if res.status == 0:
        assert (x_cf >= 0).all() and (x_cf <= 1).all()
        np.testing.assert_array_equal(x_cf[~mutable], x[~mutable])
        ours = float(np.abs(x_cf - x) @ cost)
        assert expit(w @ x_cf + b) >= goal - 1e-6
        if expit(w @ x + b) < goal:  # goal reached exactly, not overshot
            assert abs(expit(w @ x_cf + b) - goal) < 1e-6
        np.testing.assert_allclose(ours, res.fun, rtol=1e-7, atol=1e-9)
    else:  # infeasible goal: no advice (a NaN row), never features pushed to their bounds
        assert np.isnan(x_cf).all()


def test_batch_equals_rows():
    rng = np.random.default_rng(7)
    n, z = 50, 10
    X = rng.uniform(size=(n, z))
    w, b = rng.normal(0, 3, size=z), -1.0
    goals = rng.uniform(0.2, 0.9, size=n)
    mutable = np.ones(z, dtype=bool)
    cost = rng.uniform(0.1, 1, size=z)
    batch = exact_linear_counterfactuals(X, goals, w, b, cost, mutable)
    rows = np.vstack(
        [
            exact_linear_counterfactuals(X[i : i + 1], goals[i : i + 1], w, b, cost, mutable)
            for i in range(n)
        ]
    )
    np.testing.assert_array_equal(batch, rows)


def test_goal_already_met_changes_nothing():
    x = np.array([[0.9, 0.9]])
    out = exact_linear_counterfactuals(
        x, np.array([0.5]), np.array([1.0, 1.0]), 0.0, np.ones(2), np.ones(2, bool)
    )
    np.testing.assert_array_equal(out, x)


def test_difficulty_estimator_learns_true_difficulties():
    from abm.behaviour import success_probability

    rng = np.random.default_rng(0)
    d_true = np.array([0.84, 0.15, 0.85, 0.78, 0.25, 0.18, 0.29, 0.83, 0.91, 0.10])
    est = DifficultyEstimator(10, beta=0.05)
    err0 = np.abs(est.d - d_true).sum()
    for _ in range(3000):
        x = rng.uniform(0, 0.6, size=(1, 10))
        x_cf = np.clip(x + rng.uniform(0.05, 0.4, size=(1, 10)), 0, 1)
        ok = rng.uniform(size=(1, 10)) < success_probability(x, x_cf, 0.05, d_true)
        est.update(x, x_cf, np.ones((1, 10), bool), ok)
    err = np.abs(est.d - d_true).sum()
    assert err < 0.5 * err0, (err0, err)


@pytest.mark.parametrize("weights", ["uniform", "true", "estimated"])
def test_policy_reaches_threshold_in_simulation(weights):
    from abm import RecourseModel

    m = RecourseModel(
        "paper", f"last-threshold+exact-linear:weights={weights}", seed=1, ticks=40
    ).run()
    ticks = m.tick_table()
    assert ticks["n_unreached"].sum() == 0 and ticks["n_no_change"].sum() == 0
    assert ticks["mean_error"].max() < 1e-6
    # every goal is the threshold, or GOAL_GAP above a score tied with it
    assert ticks["gini"].max() < 2e-6
    events = m.candidate_table().merge(ticks[["tick", "threshold"]], on="tick")
    advised = events[events["goal"].notna()]
    assert len(advised) > 100
    assert (advised["goal"] >= advised["threshold"]).all()
    assert (advised["goal"] > advised["score"]).all()
