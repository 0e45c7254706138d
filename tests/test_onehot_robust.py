"""One-hot groups in the robust recourse policies (issue 53, item 1): valid advice, a
switch as one move at its cost, forbidden switches and immutable groups kept."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.special import logit
from test_robust import context, observation

import policies.robust.policy as robust_policy
import policies.robust.solvers as solvers
from abm.interfaces import LinearScorer
from abm.onehot import OneHot
from abm.registry import REGISTRY
from policies.robust.price import price, softplus_neg, worst_logit
from policies.robust.solvers import robust_lp

NAMES = ("robust-l1", "robust-l2", "robust-linf", "roar-l1", "roar-linf")
P = {"robust-l1": 1, "robust-l2": 2, "robust-linf": math.inf, "roar-l1": 1, "roar-linf": math.inf}
Z = 8
HOUSING, JOB = np.array([2, 3, 4]), np.array([5, 6, 7])  # two groups; features 0, 1 numeric


def costs(rng, m, barred=()):
    """(m, m) switching costs in (0.1, 0.9), 0 on the diagonal, inf on ``barred`` pairs."""
    c = rng.uniform(0.1, 0.9, (m, m))
    np.fill_diagonal(c, 0.0)
    for a, b in barred:
        c[a, b] = np.inf
    return c


def grouped(scorer, groups, cost, immutable=(), z=Z, **extra):
    """test_robust's context with one-hot ``groups`` switched at ``cost``."""
    onehot = OneHot(groups=groups, costs=cost, names=tuple(f"g{g}" for g in range(len(groups))))
    return dataclasses.replace(context(scorer, z=z, immutable=immutable), onehot=onehot, **extra)


def rows(rng, n, onehot, z=Z):
    """(n, z) valid rows: uniform draws, each group one-hot of its largest."""
    X = rng.uniform(0.0, 1.0, (n, z))
    return onehot.encode(X)


def recommend(name, ctx, X, threshold, spec=""):
    pol = REGISTRY.make_policy(name + spec)
    pol.prepare(ctx)
    return pol, pol.recommend(
        observation(X, ctx.decision_model, threshold), np.random.default_rng(0)
    )


@pytest.mark.parametrize("name", NAMES)
def test_advice_is_valid_one_hot_and_keeps_the_rest(name):
    """Random rows, weights and goals: every group one-hot, no barred switch, the immutable
    and one-way numeric features kept, and some advice switches."""
    rng = np.random.default_rng(7)
    switched = 0
    for _ in range(3):
        c = (costs(rng, 3, barred=[(0, 2), (1, 0)]), costs(rng, 3, barred=[(2, 1)]))
        scorer = LinearScorer(rng.normal(0.0, 2.0, Z), -2.0)
        up = np.zeros(Z, bool)
        up[1] = True  # feature 1 may only rise
        ctx = grouped(scorer, (HOUSING, JOB), c, immutable=(0,), increase=up)
        X = rows(rng, 20, ctx.onehot)
        threshold = float(np.quantile(scorer.score(X), rng.uniform(0.5, 0.9)))
        pol, rec = recommend(name, ctx, X, threshold)
        assert ctx.onehot.problem(X, rec.X_cf) is None
        assert (rec.X_cf[:, 0] == X[:, 0]).all() and (rec.X_cf[:, 1] >= X[:, 1]).all()
        for g in range(2):
            switched += int((ctx.onehot.category(rec.X_cf, g) != ctx.onehot.category(X, g)).sum())
        assert np.isfinite(pol.tick_stats()["price_of_robustness"])
    assert switched > 0
    assert type(pol).keeps_onehot and type(pol).keeps_one_way


@pytest.mark.parametrize("held", [(5, 6, 7), (6,)])
@pytest.mark.parametrize("name", NAMES)
def test_a_barred_switch_is_never_taken_and_an_immutable_group_never_switches(name, held):
    """Category 2 of each group is worth 6 on the logit: taken where allowed (in one group
    only), never from a barred pair or in an immutable group (one immutable indicator
    holds its group, even where ROAR's relaxation raises another)."""
    w = np.array([0.3, 0.3, 0.0, 0.0, 6.0, 0.0, 0.0, 6.0])
    scorer = LinearScorer(w, -3.0)
    cheap = np.full((3, 3), 0.2)
    np.fill_diagonal(cheap, 0.0)
    barred = cheap.copy()
    barred[0, 2] = np.inf
    X = np.tile([0.5, 0.5, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0], (4, 1))  # category 0 of both
    X[2:, [2, 3]] = [0.0, 1.0]  # category 1 of the first group: its switch to 2 is allowed
    ctx = grouped(scorer, (HOUSING, JOB), (barred, cheap), immutable=held)
    _, rec = recommend(name, ctx, X, 0.5)
    assert ctx.onehot.problem(X, rec.X_cf) is None
    np.testing.assert_array_equal(rec.X_cf[:, JOB], X[:, JOB])  # immutable group
    first = ctx.onehot.category(rec.X_cf, 0)
    assert (first[:2] != 2).all() and (first[2:] == 2).all()
    free = grouped(scorer, (HOUSING, JOB), (cheap, cheap), immutable=(5, 6, 7))
    _, rec = recommend(name, free, X, 0.5)
    assert (free.onehot.category(rec.X_cf, 0) == 2).all()
    # both groups open: one switch to 2 is enough, a second costs more than it gains
    both = grouped(scorer, (HOUSING, JOB), (cheap, cheap))
    _, rec = recommend(name, both, X, 0.5)
    top = [both.onehot.category(rec.X_cf, g) == 2 for g in range(2)]
    assert (top[0] ^ top[1]).all()


@pytest.mark.parametrize("name", NAMES)
def test_a_switch_is_taken_exactly_when_it_lowers_the_price(name):
    """Numeric features held: the price stays ℓ(s_wc(x)) or becomes ℓ(s_wc(x_b)) + λ·c
    (the norm in s_wc is the same: the group holds one 1 either way), so the switch to b
    is taken exactly when c is below c* = ℓ(s_wc(x)) − ℓ(s_wc(x_b))."""
    alpha = 0.1
    w = np.array([1.0, 1.0, -1.0, 0.0, 0.3])
    scorer = LinearScorer(w, -1.0)
    x = np.array([[0.5, 0.5, 1.0, 0.0, 0.0]])
    x_b = np.array([[0.5, 0.5, 0.0, 0.0, 1.0]])
    s, s_b = (worst_logit(v, w, -1.0, alpha, P[name])[0] for v in (x, x_b))
    c_star = float(softplus_neg(s) - softplus_neg(s_b))  # λ = 1
    assert 0.1 < c_star < 0.9
    for c_b, taken in ((c_star - 0.05, True), (c_star + 0.05, False)):
        c = np.full((3, 3), 0.95)
        np.fill_diagonal(c, 0.0)
        c[0, 2] = c_b
        ctx = grouped(scorer, (np.array([2, 3, 4]),), (c,), immutable=(0, 1), z=5)
        _, rec = recommend(name, ctx, x, 0.01, f":alpha={alpha},lam=1,target=half")
        np.testing.assert_array_equal(rec.X_cf, x_b if taken else x)
        assert rec.advised[0] == taken
        if taken:
            J = softplus_neg(s_b) + c_b
            assert rec.info["price_J"][0] == pytest.approx(J, rel=1e-12)


@pytest.mark.parametrize("name", ("robust-l1", "robust-l2", "robust-linf"))
def test_the_exact_solvers_find_the_cheapest_valid_point(name):
    """Against the convex program (SLSQP) from each allowed category with the indicators
    held, plus λ·c: the policy's price is the lowest, and a cheap switch beats the numeric
    move on some rows."""
    rng = np.random.default_rng(3)
    alpha, lam = 0.1, 1.0
    w = np.array([1.5, 1.0, -1.0, 0.5, 2.0])
    c = np.array([[0.0, 0.3, 0.2], [0.4, 0.0, np.inf], [0.9, 0.5, 0.0]])
    group = np.array([2, 3, 4])
    ctx = grouped(LinearScorer(w, -2.0), (group,), (c,), z=5)
    X = rows(rng, 8, ctx.onehot, z=5)
    pol = REGISTRY.make_policy(f"{name}:alpha={alpha},lam={lam}")
    pol.prepare(ctx)
    X_cf, _ = pol.solve(X, w, -2.0, lam)
    assert ctx.onehot.problem(X, X_cf) is None
    got = pol._price(X_cf, X, w, -2.0, lam)
    held = np.zeros(5, bool)
    held[group] = True
    for i, x in enumerate(X):
        a = int(x[group].argmax())
        best = math.inf
        for b in np.flatnonzero(np.isfinite(c[a])):
            start = x.copy()
            start[group] = np.eye(3)[b]
            sol = robust_lp(start, w, -2.0, alpha, lam, P[name], np.zeros(5), np.ones(5), held)
            best = min(best, sol.J + lam * c[a, b])
        assert got[i] <= best + 1e-7 and got[i] == pytest.approx(best, abs=1e-5)
    assert (ctx.onehot.category(X_cf, 0) != ctx.onehot.category(X, 0)).any()


def test_many_groups_search_one_group_at_a_time():
    """Past ONEHOT_PROFILES combinations the search goes group by group: still valid, and
    it switches where a switch is worth more than it costs."""
    rng = np.random.default_rng(5)
    groups = tuple(np.arange(2 + 4 * g, 6 + 4 * g) for g in range(4))  # 4^4 = 256 > 64
    z = 18
    w = rng.normal(0.0, 2.0, z)
    scorer = LinearScorer(w, -2.0)
    ctx = grouped(scorer, groups, tuple(costs(rng, 4, [(0, 3)]) for _ in groups), z=z)
    X = rows(rng, 15, ctx.onehot, z=z)
    for name in ("robust-linf", "roar-l1"):
        _, rec = recommend(name, ctx, X, float(np.quantile(scorer.score(X), 0.8)))
        assert ctx.onehot.problem(X, rec.X_cf) is None
        assert any(
            (ctx.onehot.category(rec.X_cf, g) != ctx.onehot.category(X, g)).any() for g in range(4)
        )


@pytest.mark.parametrize("name", NAMES)
def test_advice_with_groups_is_deterministic(name):
    rng = np.random.default_rng(11)
    c = (costs(rng, 3, [(0, 1)]), costs(rng, 3))
    scorer = LinearScorer(rng.normal(0.0, 2.0, Z), -2.0)
    ctx = grouped(scorer, (HOUSING, JOB), c)
    X = rows(rng, 12, ctx.onehot)
    threshold = float(np.quantile(scorer.score(X), 0.8))
    recs = [recommend(name, ctx, X, threshold)[1] for _ in range(2)]
    np.testing.assert_array_equal(recs[0].X_cf, recs[1].X_cf)
    np.testing.assert_array_equal(recs[0].info["price_J"], recs[1].info["price_J"])


@pytest.mark.parametrize("name", NAMES)
def test_without_groups_the_one_hot_paths_are_never_taken(name, monkeypatch):
    """No groups: the advice is the numeric solvers' (the golden cases hold its bits)."""

    def refuse(*args, **kwargs):
        raise AssertionError("one-hot path taken without groups")

    monkeypatch.setattr(robust_policy, "switch_search", refuse)
    rng = np.random.default_rng(2)
    scorer = LinearScorer(rng.normal(0.0, 2.0, Z), -2.0)
    X = rng.uniform(0.0, 1.0, (10, Z))
    threshold = float(np.quantile(scorer.score(X), 0.8))
    pol, rec = recommend(name, context(scorer, z=Z, immutable=(0,)), X, threshold)
    assert rec.advised.any()
    # the price recorded is the plain L1 one
    B = scorer.intercept - float(logit(threshold))
    J = price(rec.X_cf, X, scorer.weights, B, pol.alpha, rec.info["lam"], P[name])
    np.testing.assert_array_equal(rec.info["price_J"][rec.advised], J[rec.advised])


@pytest.mark.parametrize("mode", ["combinations", "one group at a time", "proposals"])
def test_switch_search_keeps_held_groups_and_barred_pairs(mode, monkeypatch):
    """Whatever proposes it, a switch in a group not open, or from a barred pair, is never
    tried; the rest are, and the cheapest wins."""
    if mode == "one group at a time":
        monkeypatch.setattr(solvers, "ONEHOT_PROFILES", 1)
    c3 = np.array([[0.0, 0.5, np.inf], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    c2 = np.array([[0.0, 0.5], [0.5, 0.0]])
    oh = OneHot(groups=(np.array([0, 1, 2]), np.array([3, 4])), costs=(c3, c2), names=("a", "b"))
    X = np.array([[1.0, 0, 0, 1, 0], [0, 1, 0, 1, 0], [0, 0, 1, 1, 0]])
    reward = np.array([0.0, 0.0, 1.0, 0.0, 1.0])  # category 2 of a, 1 of b

    def solve(X_start, rows):
        return X_start.copy(), 0

    def objective(X_cf, rows):
        return -(X_cf @ reward)

    proposals = [np.tile([2, 1], (3, 1))] if mode == "proposals" else None
    X_cf, fallbacks, chosen = solvers.switch_search(X, oh, [0], solve, objective, proposals)
    assert oh.problem(X, X_cf) is None and fallbacks == 0
    np.testing.assert_array_equal(X_cf[:, 3:], X[:, 3:])  # b is not open
    np.testing.assert_array_equal(oh.category(X_cf, 0), [0, 2, 2])  # 0 -> 2 barred
    np.testing.assert_array_equal(chosen, [[0, 0], [2, 0], [2, 0]])
