"""Policies advise under the decision model in force (specs/world-extensions.md §2).

Every built-in policy is prepared on a linear model M0, then shown an observation whose
``decision_model`` is M1: M0 with the weight of the feature the advice leaned on flipped in
sign. The advice must follow M1 (the feature now moves down, M1(X_cf) reaches the goal,
where advice computed under M0 falls short), equal that of a policy prepared on M1, and
return bit for bit to the old advice once the old model object is back in force.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest

from abm.interfaces import HistoryWindow, LinearScorer, PolicyContext, RecourseObs
from abm.registry import make_policy
from abm.validation import ConfigError
from policies.composite import CompositePolicy
from policies.lookahead import Lookahead
from policies.recommenders import ExactLinear

FLIP = 1  # the feature with the largest |w|: every policy's advice leans on it
W0 = np.array([0.8, 2.0, 0.5, 1.0])
B0 = -2.2


def flipped(w, b, j=FLIP):
    """(M0, M1): M1 is M0 with weight j flipped in sign."""
    w1 = np.array(w, dtype=float)
    w1[j] = -w1[j]
    return LinearScorer(w, b), LinearScorer(w1, b)


def context(model, z, **extra) -> PolicyContext:
    return PolicyContext(
        decision_model=model,
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.zeros(z, bool),
        difficulty=np.full(z, 0.5),
        k=4,
        m=12,
        validity=1,
        beta=0.05,
        ticks=10,
        extra=extra,
    )


def observation(model, X, k=4, tick=3, window=None) -> RecourseObs:
    """Applicants X (a, z) scored by ``model`` (the model in force); the top k are accepted.

    ``window``: features (w, z) of an optional history window (no goals yet).
    """
    scores = model.score(X)
    order = np.argsort(-scores, kind="stable")
    accepted = np.zeros(len(X), bool)
    accepted[order[:k]] = True
    rej = np.flatnonzero(~accepted)
    ids = np.arange(len(X))
    history_fn = None
    if window is not None:
        w = len(window)
        history = HistoryWindow(
            ids=np.arange(100, 100 + w),
            X=window,
            last_tick=np.full(w, tick - 1),
            n_applications=np.ones(w, np.int64),
            goal=np.full(w, np.nan),
            X_cf=np.full(window.shape, np.nan),
        )
        history_fn = lambda: history  # noqa: E731
    return RecourseObs(
        tick=tick,
        threshold=float(scores[order[k - 1]]),
        applicant_ids=ids,
        applicant_X=X,
        applicant_scores=scores,
        accepted=accepted,
        ids=ids[rej],
        X=X[rej],
        scores=scores[rej],
        n_applications=np.ones(rej.size, np.int64),
        history_fn=history_fn,
        decision_model=model,
    )


def stale(obs: RecourseObs) -> RecourseObs:
    """``obs`` without its model: the policy falls back on the model of ``prepare``, i.e.
    what a policy that ignores the model in force would advise."""
    return dataclasses.replace(obs, decision_model=None)


def advise(policy, obs, seed=0):
    return policy.recommend(obs, np.random.default_rng(seed))


def assert_same(a, b):
    np.testing.assert_array_equal(a.X_cf, b.X_cf)
    np.testing.assert_array_equal(a.goal, b.goal)
    np.testing.assert_array_equal(a.advised_mask(), b.advised_mask())


def applicants(z, n=12, seed=7):
    return np.random.default_rng(seed).uniform(0.25, 0.75, (n, z))


def check_follows(spec, tol=1e-6, moves_flip=True, z=4, w=W0, b=B0):
    """The checks of the module docstring for policy ``spec``; returns the policy."""
    m0, m1 = flipped(w, b)
    ctx = context(m0, z)
    X = applicants(z)
    obs0, obs1 = observation(m0, X), observation(m1, X)
    policy = make_policy(spec)
    policy.prepare(ctx)
    rec0 = advise(policy, obs0)
    a0 = rec0.advised_mask()
    assert a0.sum() >= 3
    d0 = rec0.X_cf[a0, FLIP] - obs0.X[a0, FLIP]
    if moves_flip:
        assert (d0 >= 0).all() and (d0 > 0).any()  # under M0 the feature goes up

    rec1 = advise(policy, obs1)
    a1 = rec1.advised_mask()
    assert a1.sum() >= 3
    assert (m1.score(rec1.X_cf[a1]) >= rec1.goal[a1] - tol).all()
    if moves_flip:
        d1 = rec1.X_cf[a1, FLIP] - obs1.X[a1, FLIP]
        assert (d1 <= 0).all() and (d1 < 0).any()  # ... and down under M1
    # advice still computed under M0 is none (M0 deems the goal met) or misses it under M1
    old = make_policy(spec)
    old.prepare(ctx)
    rec_stale = advise(old, stale(obs1))
    valid = rec_stale.advised_mask() & (m1.score(rec_stale.X_cf) >= rec_stale.goal - tol)
    assert not valid.any()
    # the same advice as a policy prepared on M1
    fresh = make_policy(spec)
    fresh.prepare(ctx.with_model(m1))
    assert_same(rec1, advise(fresh, obs1))
    # the old model object in force again: the old advice, bit for bit
    assert_same(rec0, advise(policy, obs0))
    return policy


@pytest.mark.parametrize(
    "spec, tol",
    [
        ("threshold", 1e-6),
        ("threshold-true", 1e-6),
        ("threshold-estimated", 1e-6),
        ("threshold-ustun", 1e-6),
        ("threshold-wachter", 1.1e-3),  # Wachter stops within tol = 1e-3 of the goal
        ("safear:beta_risk=0.5,rollouts=20", 1e-6),
    ],
)
def test_advice_follows_the_model_in_force(spec, tol):
    check_follows(spec, tol)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("dice_ml") is None, reason="dice-ml missing")
def test_dice_follows_the_model_in_force():
    # DiCE's random draws move every feature: only the score criterion applies
    check_follows("threshold-dice:samples=100", moves_flip=False)


def test_unchanged_model_is_a_no_op():
    m0 = LinearScorer(W0, B0)
    ctx = context(m0, 4)
    obs = observation(m0, applicants(4))
    for spec in ("threshold-estimated", "threshold-ustun", "safear:rollouts=20"):
        policy = make_policy(spec)
        policy.prepare(ctx)
        parts = [policy] if not isinstance(policy, CompositePolicy) else [policy.recommender]
        ctxs = [p.ctx for p in parts]
        a, b = advise(policy, obs), advise(policy, stale(obs))  # M0 given, and implied
        assert_same(a, b)
        assert all(p.ctx is c for p, c in zip(parts, ctxs, strict=True))  # nothing rebuilt


def test_a_new_model_keeps_what_was_learned():
    # prepare is not re-run: the difficulties estimated from feedback survive a refit
    m0, m1 = flipped(W0, B0)
    policy = make_policy("threshold-estimated")
    policy.prepare(context(m0, 4))
    est = policy.recommender.estimator
    est.d[:] = [0.2, 0.9, 0.4, 0.6]
    advise(policy, observation(m1, applicants(4)))
    assert policy.recommender.estimator is est
    np.testing.assert_array_equal(est.d, [0.2, 0.9, 0.4, 0.6])
    assert policy.recommender.ctx.decision_model is m1


def test_exact_linear_reranks_features_under_a_new_model():
    # a refit that changes which feature pays best: the cached fill order must go too
    m0, m2 = LinearScorer(W0, B0), LinearScorer([0.8, 0.5, 0.6, 2.0], B0)
    X = applicants(4)
    obs2 = observation(m2, X)
    policy = make_policy("threshold")
    policy.prepare(context(m0, 4))
    advise(policy, observation(m0, X))
    rec2 = advise(policy, obs2)
    fresh = make_policy("threshold")
    fresh.prepare(context(m2, 4))
    assert_same(rec2, advise(fresh, obs2))
    a = rec2.advised_mask()
    assert a.any() and (rec2.X_cf[a, 3] > obs2.X[a, 3]).all()  # the new best feature first


def test_exact_linear_refuses_a_nonlinear_model_in_force():
    class Curved(LinearScorer):
        is_linear = False

    rec = ExactLinear()
    rec.prepare(context(LinearScorer(W0, B0), 4))
    with pytest.raises(ConfigError, match="exact-linear needs a linear decision model"):
        rec.use_model(Curved(W0, B0))


class ReentrantSimulator:
    """Stands in for the model's simulator: each rollout calls the policy again on an
    observation under ``inner_model`` (as a fork after a refit would) and scores it."""

    def __init__(self, inner_obs):
        self.inner_obs = inner_obs
        self.policy = None
        self.calls = 0

    def __call__(self, ticks, key=0, plan=None):
        self.calls += 1
        self.policy.recommend(self.inner_obs, np.random.default_rng(key))
        return [{"tick": 0, "rr": 0.5, "rf": 0.5} for _ in range(ticks)]


def test_lookahead_rollouts_under_another_model_do_not_leak():
    # the rollouts advise under M0; the real tick, under M1, must still use M1
    m0, m1 = flipped(W0, B0)
    X = applicants(4)
    obs0, obs1 = observation(m0, X), observation(m1, X)
    sim = ReentrantSimulator(obs0)
    policy = CompositePolicy(Lookahead(goals=2, rollouts=1, max_margin=0.0), ExactLinear())
    sim.policy = policy
    policy.prepare(context(m0, 4, simulator=sim))
    rec1 = advise(policy, obs1)
    assert sim.calls == 2
    plain = make_policy("threshold")
    plain.prepare(context(m1, 4))
    assert_same(rec1, advise(plain, obs1))  # max_margin 0: the threshold policy under M1
    a = rec1.advised_mask()
    assert (rec1.X_cf[a, FLIP] <= obs1.X[a, FLIP]).all()
    assert (m1.score(rec1.X_cf[a]) >= rec1.goal[a] - 1e-6).all()


# -- the learned parts, from the shipped artefacts (10 features, T = 1) --------------------
W10 = np.array([0.2, 0.9, 0.6, 0.4, 0.3, 0.8, 0.5, 0.7, 0.35, 0.45])
B10 = -2.7


def test_learned_recommender_follows_the_model_in_force():
    # φ moves every feature up (its direction action), so only the goal criterion applies
    phi = check_follows("rl-recommender", moves_flip=False, z=10, w=W10, b=B10)
    assert phi.recommender.ctx.decision_model.weights[FLIP] == W10[FLIP]  # back on M0


def test_learned_goal_scores_the_window_with_the_model_in_force():
    m0, m1 = flipped(W10, B10)
    X, window = applicants(10), applicants(10, n=15, seed=8)
    obs1 = observation(m1, X, window=window)
    policy = make_policy("hybrid-exact-linear")
    policy.prepare(context(m0, 10))
    goal = policy.goal
    g0 = goal.select(obs1, np.random.default_rng(0))  # still on M0
    rec1 = advise(policy, obs1)
    assert goal.ctx.decision_model is m1
    g1 = goal.select(obs1, np.random.default_rng(0))
    fresh = make_policy("hybrid-exact-linear")
    fresh.prepare(context(m1, 10))
    assert g1 == fresh.goal.select(obs1, np.random.default_rng(0)) != g0
    assert_same(rec1, advise(fresh, obs1))
    a = rec1.advised_mask()
    assert a.any() and (m1.score(rec1.X_cf[a]) >= rec1.goal[a] - 1e-6).all()
