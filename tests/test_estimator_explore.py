"""exact-linear's exploration options (optimism, explore_share): docs/exploration.md."""

import numpy as np
import pytest
from scipy.special import expit

from abm.interfaces import Feedback, LinearScorer, PolicyContext
from abm.model import RecourseModel
from abm.registry import make_policy
from abm.validation import ConfigError
from policies.recommenders import (
    OPTIMISM_FLOOR,
    ExactLinear,
    exact_linear_counterfactuals,
    fill_order,
    least_tried_first,
    optimistic_difficulty,
)


def _context(weights, intercept=0.0, immutable=None, beta=0.05):
    z = len(weights)
    imm = np.zeros(z, dtype=bool) if immutable is None else np.asarray(immutable)
    return PolicyContext(
        decision_model=LinearScorer(weights, intercept),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=imm,
        difficulty=np.full(z, 0.5),
        k=1,
        m=1,
        validity=1,
        beta=beta,
        ticks=10,
    )


def _recommender(ctx, **params):
    rec = ExactLinear(weights="estimated", **params)
    rec.prepare(ctx)
    return rec


# -- hand-computed small case ---------------------------------------------------------------
# w = (1, 2, 2), b = 0; d_hat = (0.5, 0.3, 0.4) after V = (0, 24, 24) attempts.
# greedy |w|/d_hat = (2, 6.67, 5): feature 1 first. Optimistic (c = 0.5): d~ = (floor,
# 0.3 - 0.5/5, 0.4 - 0.5/5) = (0.001, 0.2, 0.3): feature 0 first. Least tried: feature 0.
W = np.array([1.0, 2.0, 2.0])
X0 = np.array([[0.2, 0.2, 0.2]])  # logit 1.0
GOAL = np.array([expit(1.3)])  # 0.3 logit units short


def _hand(**params):
    rec = _recommender(_context(W), **params)
    rec.estimator.d[:] = [0.5, 0.3, 0.4]
    rec.estimator.updates[:] = [0, 24, 24]
    return rec


def test_optimistic_difficulty_known_values():
    got = optimistic_difficulty(np.array([0.5, 0.3, 0.4, 0.9]), np.array([0, 24, 24, 3]), 0.5)
    np.testing.assert_allclose(got, [OPTIMISM_FLOOR, 0.2, 0.3, 0.65], rtol=0, atol=1e-15)
    # a larger c or fewer attempts never raises the bound
    wider = optimistic_difficulty(np.array([0.5, 0.3, 0.4, 0.9]), np.array([0, 24, 24, 3]), 0.8)
    assert (wider <= got).all()


def test_least_tried_first_is_a_stable_sort_by_attempts():
    order = np.array([1, 2, 0, 4])  # attempts of these: 3, 3, 5, 3
    got = least_tried_first(order, np.array([5, 3, 3, 0, 3]))
    np.testing.assert_array_equal(got, [1, 2, 4, 0])


def test_hand_case_greedy_optimistic_and_explored_advice():
    rng = np.random.default_rng(0)
    greedy = _hand().recommend(X0, GOAL, rng)
    np.testing.assert_allclose(greedy, [[0.2, 0.35, 0.2]], rtol=0, atol=1e-12)  # 0.3 / 2 on f1
    optimistic = _hand(optimism=0.5).recommend(X0, GOAL, rng)
    np.testing.assert_allclose(optimistic, [[0.5, 0.2, 0.2]], rtol=0, atol=1e-12)  # 0.3 / 1 on f0
    explored = _hand(explore_share=1.0).recommend(X0, GOAL, rng)
    np.testing.assert_allclose(explored, [[0.5, 0.2, 0.2]], rtol=0, atol=1e-12)
    # the cheap-looking feature runs out: f0 can add 0.8 logit units, then f1 (greedy next)
    far = np.array([expit(2.0)])
    optimistic = _hand(optimism=0.5).recommend(X0, far, rng)
    np.testing.assert_allclose(optimistic, [[1.0, 0.3, 0.2]], rtol=0, atol=1e-12)


def test_planning_weights_are_the_estimate_when_optimism_is_off():
    rec = _hand()
    assert rec.planning_weights() is rec.estimator.d
    np.testing.assert_allclose(_hand(optimism=0.5).planning_weights(), [OPTIMISM_FLOOR, 0.2, 0.3])


# -- contracts ------------------------------------------------------------------------------
def _population(z=8, n=400, seed=1):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 3, size=z)
    X = rng.uniform(size=(n, z))
    goals = expit(w @ X.T - 1.0 + rng.uniform(0, 4, n))  # some reachable, some not
    imm = np.zeros(z, dtype=bool)
    imm[[2, 5]] = True
    return _context(w, -1.0, imm), X, goals, rng


def _observe_some(rec, ctx, X, rng):
    """Feed one round of outcomes so d_hat and V differ between features."""
    goals = expit(ctx.decision_model.logit(X) + 0.5)
    X_cf = rec.recommend(X, goals, np.random.default_rng(99))
    ok = np.isfinite(X_cf).all(axis=1)
    X, X_cf = X[ok], X_cf[ok]
    X_after = np.where(rng.uniform(size=X.shape) < 0.7, X_cf, X)
    rec.observe(
        Feedback(
            tick=0,
            ids=np.arange(X.shape[0]),
            X_before=X,
            X_cf=X_cf,
            X_after=X_after,
            accepted=np.zeros(X.shape[0], dtype=bool),
        )
    )


def test_off_is_todays_advice_bitwise_and_draws_nothing():
    ctx, X, goals, rng = _population()
    rec = _recommender(ctx, optimism=0.0, explore_share=0.0)
    _observe_some(rec, ctx, X[:50], rng)
    stream = np.random.default_rng(5)
    before = stream.bit_generator.state
    got = rec.recommend(X, goals, stream)
    assert stream.bit_generator.state == before  # the policy's stream is left as it was
    m = ctx.decision_model
    order = fill_order(m.weights, rec.estimator.d, ctx.mutable)
    want = exact_linear_counterfactuals(
        X, goals, m.weights, m.intercept, rec.estimator.d, ctx.mutable, order
    )
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "params", [{"optimism": 0.5}, {"explore_share": 1.0}, {"optimism": 2.0, "explore_share": 0.3}]
)
def test_exploring_advice_reaches_the_goal_and_keeps_immutables(params):
    ctx, X, goals, rng = _population()
    plain, explorer = _recommender(ctx), _recommender(ctx, **params)
    for rec in (plain, explorer):
        _observe_some(rec, ctx, X[:50], np.random.default_rng(3))
    base = plain.recommend(X, goals, np.random.default_rng(7))
    X_cf = explorer.recommend(X, goals, np.random.default_rng(7))
    failed = np.isnan(X_cf).any(axis=1)
    # reachability does not depend on the fill order: the same rows get no advice
    np.testing.assert_array_equal(failed, np.isnan(base).any(axis=1))
    assert 0 < failed.sum() < failed.size
    ok = ~failed
    np.testing.assert_array_equal(X_cf[ok][:, ~ctx.mutable], X[ok][:, ~ctx.mutable])
    assert ((X_cf[ok] >= 0) & (X_cf[ok] <= 1)).all()
    score, s0 = ctx.decision_model.score(X_cf[ok]), ctx.decision_model.score(X[ok])
    short = s0 < goals[ok]
    np.testing.assert_allclose(score[short], goals[ok][short], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(X_cf[ok][~short], X[ok][~short])  # goal met: no change
    assert not np.array_equal(X_cf[ok], base[ok])  # exploration did move some advice


def test_explored_rows_are_exactly_the_rng_draws_below_the_share():
    ctx, X, goals, rng = _population()
    plain, explorer = _recommender(ctx), _recommender(ctx, explore_share=0.3)
    for rec in (plain, explorer):
        rec.estimator.updates[:] = np.arange(ctx.n_features)[::-1]  # least tried: the last
    base = plain.recommend(X, goals, np.random.default_rng(11))
    X_cf = explorer.recommend(X, goals, np.random.default_rng(11))
    picked = np.random.default_rng(11).random(X.shape[0]) < 0.3
    m = ctx.decision_model
    order = least_tried_first(
        fill_order(m.weights, explorer.estimator.d, ctx.mutable), explorer.estimator.updates
    )
    want = exact_linear_counterfactuals(
        X[picked], goals[picked], m.weights, m.intercept, explorer.estimator.d, ctx.mutable, order
    )
    np.testing.assert_array_equal(X_cf[picked], want)
    np.testing.assert_array_equal(X_cf[~picked], base[~picked])
    assert 0.2 < picked.mean() < 0.4


# -- in the model ---------------------------------------------------------------------------
def _updates_after(policy, ticks, seed=0):
    m = RecourseModel(
        "paper", policy, seed=seed, agents=False, record_events=False, ticks=ticks, immutable=[2, 5]
    )
    m.run()
    est = m.policy.recommender.estimator
    return est.updates, est.d, m


def test_exploration_updates_every_mutable_feature_within_ten_ticks():
    updates, d_hat, _ = _updates_after("threshold-explore", 10)
    mutable = np.ones(10, dtype=bool)
    mutable[[2, 5]] = False
    assert (updates[mutable] > 0).all()
    assert (updates[~mutable] == 0).all() and (d_hat[~mutable] == 0.5).all()
    # without exploration the same seed leaves most features at the prior
    plain, _, _ = _updates_after("threshold-estimated", 10)
    assert (plain[mutable] == 0).sum() >= 4


def test_same_seed_same_bits():
    u1, d1, m1 = _updates_after("threshold-explore", 25, seed=3)
    u2, d2, m2 = _updates_after("threshold-explore", 25, seed=3)
    assert d1.tobytes() == d2.tobytes() and u1.tobytes() == u2.tobytes()
    assert m1.tick_table().equals(m2.tick_table())
    _, d3, _ = _updates_after("threshold-explore", 25, seed=4)
    assert d3.tobytes() != d1.tobytes()


# -- bad parameters -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, name",
    [
        ("last-threshold+exact-linear:weights=estimated,optimism=-1", "optimism"),
        ("last-threshold+exact-linear:weights=estimated,optimism=nan", "optimism"),
        ("last-threshold+exact-linear:weights=estimated,explore_share=1.5", "explore_share"),
        ("last-threshold+exact-linear:weights=estimated,explore_share=x", "explore_share"),
        ("threshold-explore:explore_share=-0.1", "explore_share"),
        ("last-threshold+exact-linear:weights=uniform,explore_share=0.1", "explore_share"),
        ("last-threshold+exact-linear:weights=true,optimism=0.5", "optimism"),
    ],
)
def test_bad_parameters_are_one_line_config_errors(spec, name):
    with pytest.raises(ConfigError) as err:
        make_policy(spec)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"{name} = " in msg and ("exact-linear" in msg or "threshold-explore" in msg)
    assert "allowed:" in msg


def test_direct_construction_checks_too():
    with pytest.raises(ConfigError, match=r"^exact-linear: optimism = inf is not allowed"):
        ExactLinear(weights="estimated", optimism=float("inf"))
    with pytest.raises(ConfigError, match=r"explore_share = 0.2 is not allowed; allowed: 0 unless"):
        ExactLinear(weights="uniform", explore_share=0.2)
