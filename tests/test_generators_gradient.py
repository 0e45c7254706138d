"""ClaPROAR, Gravitational (Altmeyer et al. 2023) and PROBE (Pawelczyk et al. 2023):
known answers on small linear problems, and the recommender contract."""

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import norm

from abm.interfaces import LinearScorer, PolicyContext
from abm.registry import make_policy
from abm.validation import ConfigError
from policies.baselines.wachter import Wachter
from policies.generators.altmeyer import ClaPROAR, Gravitational
from policies.generators.probe import Probe

W, B = np.array([4.0, 4.0]), -4.0  # boundary x1 + x2 = 1 in the unit square
CENTRE = np.array([0.2, 0.9])  # the positive rows' mean, off the boundary's normal


def _ctx(w=W, b=B, immutable=None, X_train=None, y_train=None):
    z = len(w)
    if X_train is None:  # positives spread evenly around CENTRE, negatives near the origin
        offs = np.array([[0.05, 0.05], [-0.05, -0.05], [0.05, -0.05], [-0.05, 0.05]])
        X_train = np.vstack([CENTRE + offs, 0.1 + offs * 0.5])
        y_train = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=np.int8)
    return PolicyContext(
        decision_model=LinearScorer(w, b),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.zeros(z, bool) if immutable is None else np.asarray(immutable),
        difficulty=np.full(z, 0.5),
        k=10,
        m=10,
        validity=5,
        beta=1.0,
        ticks=10,
        X_train=X_train,
        y_train=y_train,
    )


def _ready(cls, ctx=None, **kw):
    rec = cls(**kw)
    rec.prepare(_ctx() if ctx is None else ctx)
    return rec


X0 = np.array([[0.3, 0.2], [0.1, 0.4], [0.45, 0.05]])
GOALS = np.full(3, 0.5)


# -- penalty gradients against autograd and finite differences ---------------------------------


@pytest.mark.parametrize("cls", [ClaPROAR, Gravitational])
def test_penalty_gradient_matches_hand_computation_and_finite_differences(cls):
    rec = _ready(cls, mu=2.5)
    x = np.array([[0.3, 0.2], [0.7, 0.6], [0.05, 0.95]])
    s = rec.score(x)
    grad = (s * (1 - s))[:, None] * W  # ∂M/∂x of the linear model
    got = rec._penalty_grad(x, s, grad, np.full(3, 0.5), np.full(3, rec.lam))[0]
    xn = x
    if cls is ClaPROAR:  # -log sigmoid(w.x + b): gradient -(1 - M) w
        hand = -2.5 * (1 - expit(xn @ W + B))[:, None] * W
    else:  # ||x - c||: gradient (x - c) / ||x - c||
        d = xn - CENTRE
        hand = 2.5 * d / np.linalg.norm(d, axis=1, keepdims=True)
    np.testing.assert_allclose(got, hand, rtol=1e-12, atol=1e-14)
    h = 1e-6  # central differences of mu * penalty, one coordinate at a time
    fd = np.empty_like(xn)
    for j in range(2):
        e = np.zeros_like(x)
        e[:, j] = h
        fd[:, j] = 2.5 * (rec.penalty(x + e) - rec.penalty(x - e)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_probe_penalty_gradient_matches_finite_differences():
    rec = _ready(Probe, sigma2=0.04, target_rate=0.1)
    x = np.array([[0.5, 0.52], [0.55, 0.5]])
    g = np.array([0.5, 0.55])
    s = rec.score(x)
    grad = (s * (1 - s))[:, None] * W
    got = rec._penalty_grad(x, s, grad, g, np.full(2, rec.lam))[0]

    def hinge(xx):
        return rec.mu * np.maximum(rec.invalidation_rate(xx, g) - 0.1, 0.0)

    h, fd = 1e-6, np.empty((2, 2))
    for j in range(2):
        e = np.zeros_like(x)
        e[:, j] = h
        fd[:, j] = (hinge(x + e) - hinge(x - e)) / (2 * h)
    assert (rec.invalidation_rate(x, g) > 0.1).all()  # the hinge is active here
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)


# -- where the counterfactuals land ---------------------------------------------------------


def test_gravitational_moves_towards_the_positive_centre_compared_with_wachter():
    wa = _ready(Wachter).recommend(X0, GOALS, np.random.default_rng(0))
    gr = _ready(Gravitational).recommend(X0, GOALS, np.random.default_rng(0))
    assert not np.isnan(gr).any()
    assert (expit(gr @ W + B) >= GOALS).all()
    d_wa = np.linalg.norm(wa - CENTRE, axis=1)
    d_gr = np.linalg.norm(gr - CENTRE, axis=1)
    assert (d_gr < d_wa - 0.05).all(), (d_gr, d_wa)
    # the centroid came from the positive training rows only
    np.testing.assert_allclose(_ready(Gravitational).centre, CENTRE, atol=1e-15)


def test_claproar_lands_deeper_in_the_positive_region_than_wachter():
    wa = _ready(Wachter).recommend(X0, GOALS, np.random.default_rng(0))
    cl = _ready(ClaPROAR).recommend(X0, GOALS, np.random.default_rng(0))
    assert not np.isnan(cl).any()
    s_wa, s_cl = expit(wa @ W + B), expit(cl @ W + B)
    assert (s_wa >= 0.5).all() and (s_wa < 0.5 + 3e-3).all()  # Wachter stops just past g
    assert (s_cl > s_wa + 0.05).all(), (s_cl, s_wa)
    # a larger mu pushes further: the penalty, not chance, moved it
    cl2 = _ready(ClaPROAR, mu=20.0).recommend(X0, GOALS, np.random.default_rng(0))
    assert (expit(cl2 @ W + B) > s_cl).all()


def test_probe_rate_matches_monte_carlo_and_meets_its_target():
    rec = _ready(Probe, target_rate=0.1)
    sigma = 0.1  # sigma2 = 0.01, the default
    goals = np.array([0.5, 0.6, 0.7])
    X_cf = rec.recommend(X0, goals, np.random.default_rng(0))
    assert not np.isnan(X_cf).any()
    s = expit(X_cf @ W + B)
    assert (s >= goals).all()
    # closed form (exact for a linear logit) against sampling x' + N(0, sigma^2 I)
    closed = rec.invalidation_rate(X_cf, goals)
    rng = np.random.default_rng(1)
    n = 200_000
    for i in range(3):
        noisy = X_cf[i] + rng.normal(0.0, sigma, (n, 2))
        mc = np.mean(expit(noisy @ W + B) < goals[i])
        # 5e-3 is > 7 binomial standard errors at n = 200000
        assert abs(mc - closed[i]) < 5e-3, (i, mc, closed[i])
        assert mc <= 0.1 + 0.005 + 5e-3
    assert (closed <= 0.1 + 0.005).all()
    # the hand formula Phi(-(f(x') - logit g) / (sigma ||w||))
    hand = norm.cdf(-(X_cf @ W + B - logit(goals)) / (sigma * np.linalg.norm(W)))
    np.testing.assert_allclose(closed, hand, rtol=1e-10)
    # Wachter's advice sits on the goal: invalidated about half the time
    wa = _ready(Wachter).recommend(X0, goals, np.random.default_rng(0))
    assert (rec.invalidation_rate(wa, goals) > 0.4).all()


def test_probe_unreachable_target_rate_gives_nan():
    # max logit in the box is 4; goal 0.95 (logit 2.94) plus z_{0.99} sigma ||w|| = 1.32
    # exceeds it, so a rate of 0.01 cannot be met, while a rate of 0.3 can
    goals = np.full(3, 0.95)
    strict = _ready(Probe, target_rate=0.01, max_iter=200).recommend(
        X0, goals, np.random.default_rng(0)
    )
    assert np.isnan(strict).all()
    loose = _ready(Probe, target_rate=0.3).recommend(X0, goals, np.random.default_rng(0))
    assert not np.isnan(loose).any()


# -- the recommender contract ------------------------------------------------------------------

ALL = [ClaPROAR, Gravitational, Probe]


@pytest.mark.parametrize("cls", ALL)
def test_unreachable_goals_are_nan_and_met_goals_unchanged(cls):
    X = np.vstack([X0, [[0.9, 0.9]]])  # the last row already scores 0.99
    goals = np.array([0.5, 0.999, 0.6, 0.9])  # 0.999 > sigmoid(4): out of the box
    out = _ready(cls, max_iter=200).recommend(X, goals, np.random.default_rng(0))
    assert np.isnan(out[1]).all() and not np.isnan(out[[0, 2]]).any()
    np.testing.assert_array_equal(out[3], X[3])


@pytest.mark.parametrize("cls", ALL)
def test_deterministic_bounds_and_immutables(cls):
    w = np.array([3.0, 2.0, 1.5])
    pos = np.array([[0.6, 0.7, 0.2], [0.7, 0.8, 0.9], [0.8, 0.6, 0.5]])
    ctx = _ctx(
        w=w,
        b=-4.0,
        immutable=[False, True, False],
        X_train=np.vstack([pos, pos * 0.2]),
        y_train=np.array([1, 1, 1, 0, 0, 0], dtype=np.int8),
    )
    X = np.random.default_rng(3).uniform(0.0, 0.5, (12, 3))
    goals = np.full(12, 0.55)
    a = _ready(cls, ctx).recommend(X, goals, np.random.default_rng(5))
    b = _ready(cls, ctx).recommend(X, goals, np.random.default_rng(5))
    assert a.tobytes() == b.tobytes()
    ok = ~np.isnan(a).any(axis=1)
    assert ok.sum() >= 10
    assert (a[ok] >= 0).all() and (a[ok] <= 1).all()
    np.testing.assert_array_equal(a[ok, 1], X[ok, 1])
    assert (expit(a[ok] @ w - 4.0) >= goals[ok]).all()


@pytest.mark.parametrize("cls", ALL)
def test_retraining_uses_the_model_in_force(cls):
    rec = _ready(cls)
    rec.use_model(LinearScorer(np.array([1.0, 6.0]), -4.0))  # a refit: feature 2 counts more
    out = rec.recommend(X0, GOALS, np.random.default_rng(0))
    assert not np.isnan(out).any()
    assert (expit(out @ np.array([1.0, 6.0]) - 4.0) >= 0.5).all()
    before = _ready(cls).recommend(X0, GOALS, np.random.default_rng(0))
    assert not np.allclose(out, before)


def test_gravitational_refuses_a_world_without_positive_training_rows():
    ctx = _ctx(X_train=np.zeros((3, 2)), y_train=np.zeros(3, np.int8))
    with pytest.raises(ConfigError, match="allowed"):
        _ready(Gravitational, ctx)


@pytest.mark.parametrize("name", ["claproar", "gravitational", "probe"])
def test_registered_with_validated_parameters(name):
    assert make_policy(f"threshold-{name}") is not None
    with pytest.raises((ConfigError, ValueError)):
        make_policy(f"last-threshold+{name}:lam=-1")


@pytest.fixture(scope="module")
def mlp_world():
    from abm.model import RecourseModel

    m = RecourseModel("paper", "none", seed=0, agents=False, decision_model="mlp")
    return m.context, m.world


@pytest.mark.parametrize("cls", ALL)
def test_mlp_decision_model_advice_reaches_its_goal(cls, mlp_world):
    ctx, world = mlp_world
    rng = np.random.default_rng(2)
    X = world.generator.sample(200, rng)
    s = ctx.decision_model.score(X)
    X = X[s < 0.4][:15]
    goals = np.full(X.shape[0], 0.5)
    rec = cls()
    rec.prepare(ctx)
    out = rec.recommend(X, goals, np.random.default_rng(0))
    ok = ~np.isnan(out).any(axis=1)
    assert ok.sum() >= 0.8 * X.shape[0]
    assert (ctx.decision_model.score(out[ok]) >= goals[ok]).all()
    assert (out[ok] >= ctx.lower).all() and (out[ok] <= ctx.upper).all()
    if cls is Probe:  # the closed-form rate at the advice meets the target band
        rate = rec.invalidation_rate(out[ok], goals[ok])
        assert (rate <= rec.target_rate + rec.rate_eps).all()
