"""One-way actionability in the robust, SafeAR, improvement, fairness and RL families:
declared policies keep increase-only and decrease-only features (check_policy's rule
``one-way``), the rest are refused, and advice without one-way features is unchanged."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from test_robust import context, observation

from abm.advice import keeps_one_way
from abm.interfaces import LinearScorer
from abm.registry import make_policy
from abm.testing import WORLDS, check_policy
from policies.known_breaks import KNOWN_BREAKS
from policies.robust.solvers import alg2, alg2_rows, roar, robust_l2_batch, robust_lp

ROBUST = ("robust-l1", "robust-l2", "robust-linf", "roar-l1", "roar-linf")
ONE_WAY = {"immutable": (9,), "increase": (0, 1, 2), "decrease": (5, 7)}


def _passes(spec: str, scenario="one-way", ticks: int = 4, status: str = "passed") -> None:
    report = check_policy(spec, scenarios=[scenario], ticks=ticks, allow=KNOWN_BREAKS.get(spec, {}))
    assert not report.not_run, report.not_run
    assert report.status("one-way") == status


@pytest.mark.parametrize("spec", [*ROBUST, "safear", "lookahead", "hybrid-exact-linear"])
def test_declared_policies_keep_one_way_features(spec):
    _passes(spec)
    assert keeps_one_way(make_policy(spec))


@pytest.mark.parametrize("spec", ["improve-proto", "improve-linucb", "improve-bwo"])
def test_improvement_bandits_keep_one_way_features(spec):
    world = WORLDS["improvement"]
    _passes(spec, world.config(5, 0).replace(**{**world.overrides, **ONE_WAY}), ticks=5)


def test_ei_keeps_one_way_features():
    world = WORLDS["ei"]
    # no advice at all: the rule has nothing to check, but the world runs
    _passes("ei", world.config(4, 0).replace(**{**world.overrides, **ONE_WAY}), status="skipped")


@pytest.mark.parametrize("spec", ["scarf", "scarf-mlp", "rl", "rl-recommender"])
def test_learned_and_scarf_policies_stay_refused(spec):
    # trained without directions (SCARF's generator in prepare, the SAC artefacts)
    assert not keeps_one_way(make_policy(spec))


# -- a known case: a feature whose weight is negative may only rise -----------------------
def _context(scorer, z=3, increase=(), decrease=()):
    """test_robust's context with one-way features."""

    def mask(idx):
        m = np.zeros(z, bool)
        m[list(idx)] = True
        return m

    return dataclasses.replace(context(scorer, z), increase=mask(increase), decrease=mask(decrease))


# feature 0 (w = 4) is near its bound, so feature 1 (w = -3) must fall to reach the cut
SCORER = LinearScorer([4.0, -3.0, 0.5], -3.0)
ROWS = [[0.95, 0.9, 0.2], [0.9, 0.7, 0.5], [0.98, 0.6, 0.1]]


@pytest.mark.parametrize("spec", ROBUST)
def test_robust_solvers_no_longer_lower_an_increase_only_feature(spec):
    obs = observation(ROWS, SCORER, threshold=0.6)
    free = make_policy(spec)
    free.prepare(_context(SCORER))
    before = free.recommend(obs, np.random.default_rng(0))
    assert (before.X_cf[:, 1] < obs.X[:, 1] - 1e-6).any()  # the unconstrained way
    kept = make_policy(spec)
    kept.prepare(_context(SCORER, increase=(1,)))
    after = kept.recommend(obs, np.random.default_rng(0))
    assert (after.X_cf[:, 1] >= obs.X[:, 1]).all()
    # feature 0 and 2 still carry advice where they can
    assert (after.X_cf[:, [0, 2]] >= obs.X[:, [0, 2]]).all()


def test_safear_no_longer_lowers_an_increase_only_feature():
    obs = observation(ROWS, SCORER, threshold=0.6)
    before = make_policy("safear:beta_risk=0")
    before.prepare(_context(SCORER))
    rec = before.recommend(obs, np.random.default_rng(0))
    assert (rec.X_cf[:, 1] < obs.X[:, 1] - 1e-6).any()
    after = make_policy("safear:beta_risk=0")
    after.prepare(_context(SCORER, increase=(1,)))
    rec = after.recommend(obs, np.random.default_rng(0))
    assert (rec.X_cf[:, 1] >= obs.X[:, 1]).all()


# -- the batched solvers with one box per row ---------------------------------------------
def _problem(n=12, z=4, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, z))
    w = rng.uniform(-2.0, 4.0, z)
    lo, hi = np.zeros(z), np.ones(z)
    Lo, Hi = np.broadcast_to(lo, (n, z)).copy(), np.broadcast_to(hi, (n, z)).copy()
    # rows' own boxes: feature 0 increase-only, feature 1 decrease-only
    Lo[:, 0], Hi[:, 1] = X[:, 0], X[:, 1]
    return X, w, -2.0, lo, hi, Lo, Hi


def test_per_row_boxes_broadcast_from_one_give_the_old_bits():
    X, w, b, lo, hi, _, _ = _problem()
    n, z = X.shape
    Lo, Hi = np.broadcast_to(lo, (n, z)).copy(), np.broadcast_to(hi, (n, z)).copy()
    np.testing.assert_array_equal(
        alg2_rows(X, w, b, 0.1, 0.05, Lo, Hi), alg2_rows(X, w, b, 0.1, 0.05, lo, hi)
    )
    new, ok_new = robust_l2_batch(X, w, b, 0.1, 0.05, Lo, Hi)
    old, ok_old = robust_l2_batch(X, w, b, 0.1, 0.05, lo, hi)
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(ok_new, ok_old)
    for p in (1.0, math.inf):
        np.testing.assert_array_equal(
            roar(X, w, b, 0.1, 0.05, p, Lo, Hi, max_steps=400)[0],
            roar(X, w, b, 0.1, 0.05, p, lo, hi, max_steps=400)[0],
        )


def test_per_row_boxes_match_row_by_row_solves():
    X, w, b, _, _, Lo, Hi = _problem()
    rows = alg2_rows(X, w, b, 0.1, 0.05, Lo, Hi)
    for i in range(X.shape[0]):
        np.testing.assert_array_equal(rows[i], alg2(X[i], w, b, 0.1, 0.05, Lo[i], Hi[i]).x)
    l2, ok = robust_l2_batch(X, w, b, 0.1, 0.05, Lo, Hi)
    assert ok.all()
    for i in range(X.shape[0]):
        ref = robust_lp(X[i], w, b, 0.1, 0.05, 2.0, Lo[i], Hi[i])
        np.testing.assert_allclose(l2[i], ref.x, atol=1e-5)
    for out in (rows, l2, roar(X, w, b, 0.1, 0.05, 1.0, Lo, Hi, max_steps=400)[0]):
        assert (out[:, 0] >= X[:, 0]).all() and (out[:, 1] <= X[:, 1]).all()


def test_improvement_arms_moving_a_one_way_feature_the_wrong_way_are_left_out():
    pol = make_policy("improve-proto")
    ctx = _context(SCORER, increase=(1,))
    pol.ctx = dataclasses.replace(ctx)
    pol.arms = np.array([[1.0, 0.95, 0.5], [1.0, 0.5, 0.5], [0.2, 0.9, 0.0]])
    X = np.array([[0.5, 0.9, 0.2], [0.5, 0.4, 0.2]])
    np.testing.assert_array_equal(pol._one_way_arms(X), [[True, False, True], [True, True, True]])
