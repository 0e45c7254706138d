"""One-hot groups in the exact recommenders (exact-linear, ustun): advice is a valid one-hot
with only allowed switches, at eq. 5's cost (a switch a -> b costs c(a, b)·w_b, not the
indicators' L1 of 2), the exact optimum (brute force over switches plus an LP, or HiGHS);
immutable groups stay; without groups the advice is the advice from before them."""

import dataclasses
import itertools

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import expit, logit

from abm.interfaces import Feedback, LinearScorer, PolicyContext
from abm.onehot import OneHot
from abm.testing import check_policy
from abm.validation import ConfigError
from policies.baselines.ustun import Ustun
from policies.composite import CompositePolicy
from policies.goals import LastThreshold
from policies.recommenders import ExactLinear, exact_linear_counterfactuals

INF = np.inf
#: features 0-2 numeric, 3-5 "housing", 6-7 "sector"
GROUPS = ((3, 4, 5), (6, 7))
COSTS = (
    ((0.0, 0.2, 0.6), (0.3, 0.0, INF), (0.4, 0.4, 0.0)),
    ((0.0, 0.3), (0.5, 0.0)),
)


def context(w, b, groups=GROUPS, costs=COSTS, immutable=(), difficulty=None, **extra):
    """A context over z = len(w) features in [0, 1] with the given one-hot groups (None:
    none)."""
    z = len(w)
    imm = np.zeros(z, bool)
    imm[list(immutable)] = True
    ctx = PolicyContext(
        decision_model=LinearScorer(w, b),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=imm,
        difficulty=np.full(z, 0.5) if difficulty is None else np.asarray(difficulty, float),
        k=1,
        m=1,
        validity=1,
        beta=0.05,
        ticks=1,
        **extra,
    )
    if groups is None:
        return ctx
    onehot = OneHot(
        groups=tuple(np.array(g) for g in groups),
        costs=tuple(np.array(c, float) for c in costs),
        names=tuple(f"g{g}" for g in range(len(groups))),
    )
    return dataclasses.replace(ctx, onehot=onehot)


def rows(rng, n, z=8, groups=GROUPS):
    """n valid rows: numeric features uniform, each group a uniform category."""
    X = rng.uniform(size=(n, z))
    for members in groups:
        X[:, members] = 0.0
        X[np.arange(n), np.asarray(members)[rng.integers(len(members), size=n)]] = 1.0
    return X


def model_weights(rng, z=8):
    """(z,) model weights, the indicators' larger: switches worth advising."""
    w = rng.normal(0, 1.5, size=z)
    w[3:] *= 2
    return w


def exercised(ctx, X, X_cf, both=True):
    """Whether advice ``X_cf`` (valid rows) switches somewhere and (``both``) somewhere both
    switches and moves a numeric feature: the random tests test switches."""
    switched = (ctx.onehot.moves(X, X_cf)[:, ctx.onehot.columns] != 0).any(axis=1)
    numeric = (X_cf[:, :3] != X[:, :3]).any(axis=1)
    return bool(switched.any() and (not both or (switched & numeric).any()))


def eq5_cost(ctx, X, X_cf, w):
    """(n,) eq. 5: |dx|·w on numeric features, c(a, b)·w_b per switch."""
    return ctx.onehot.moves(X, X_cf) @ w


def numeric_lp(x, goal, ctx, cost, free):
    """min cost·|δ| over the ``free`` features (z,) bool inside ctx's box so that the score
    reaches ``goal``; inf if it cannot (scipy's HiGHS LP: an oracle independent of ours)."""
    w, b = ctx.decision_model.weights, ctx.decision_model.intercept
    need = logit(goal) - b - w @ x
    if need <= 0:
        return 0.0
    lo, hi = ctx.box(x[None, :])
    bounds = [(0, (hi[0, i] - x[i]) if free[i] else 0) for i in range(x.size)]
    bounds += [(0, (x[i] - lo[0, i]) if free[i] else 0) for i in range(x.size)]
    res = linprog(
        np.concatenate([cost, cost]),
        A_ub=-np.concatenate([w, -w])[None, :],
        b_ub=[-need],
        bounds=bounds,
        method="highs",
    )
    return res.fun if res.status == 0 else INF


def brute_force(x, goal, ctx, cost, max_changes=None):
    """The exact optimum of eq. 5 for row x (z,): every combination of (stay or one allowed
    switch) per group, each with the LP over the numeric features (with a cap, over every
    set of them the cap leaves)."""
    onehot = ctx.onehot
    numeric = ctx.mutable.copy()
    numeric[onehot.columns] = False
    per_group = []
    for g, members in enumerate(onehot.groups):
        opts = [None] + [s for s in onehot.switches(x) if s.g == g]
        if not ctx.mutable[members].all():
            opts = [None]
        per_group.append(opts)
    best = INF
    for combo in itertools.product(*per_group):
        y, spent = x.copy(), 0.0
        made = [s for s in combo if s is not None]
        for s in made:
            y = onehot.apply(y, s)
            spent += s.cost * cost[s.column]
        if max_changes is None:
            best = min(best, spent + numeric_lp(y, goal, ctx, cost, numeric))
            continue
        left = max_changes - len(made)
        if left < 0:
            continue
        for k in range(left + 1):
            for chosen in itertools.combinations(np.flatnonzero(numeric), k):
                free = np.zeros_like(numeric)
                free[list(chosen)] = True
                best = min(best, spent + numeric_lp(y, goal, ctx, cost, free))
    return best


def recommend(policy, ctx, X, goals, seed=0):
    policy.prepare(ctx)
    return policy.recommend(X, goals, np.random.default_rng(seed))


def known_context(c02, c01=0.3, difficulty=None):
    """x = (0.2, 0.5 | cat 0 of 3) with w = (1, 0 | 0, 1, 2): score logit 0 at x; feature 0
    reaches 0.8, a switch to category 1 adds 1 (cost c01), to category 2 adds 2 (c02)."""
    costs = (((0.0, c01, c02), (0.3, 0.0, 0.3), (0.3, 0.3, 0.0)),)
    ctx = context([1.0, 0.0, 0.0, 1.0, 2.0], -0.2, ((2, 3, 4),), costs, difficulty=difficulty)
    return ctx, np.array([[0.2, 0.5, 1.0, 0.0, 0.0]])


# -- exact-linear --------------------------------------------------------------------------
@pytest.mark.parametrize("c02", [0.2, 0.45, 0.55, 0.9])
@pytest.mark.parametrize("solver", ["exact-linear", "ustun", "ustun-milp"])
def test_a_switch_is_taken_exactly_when_cheaper(c02, solver):
    # need 0.5 logit: feature 0 by 0.5 (cost 0.5) or the switch to category 2 (cost c02)
    ctx, X = known_context(c02, c01=0.9)
    policy = {
        "exact-linear": ExactLinear(),
        "ustun": Ustun(),
        "ustun-milp": Ustun(solver="milp"),
    }[solver]
    X_cf = recommend(policy, ctx, X, np.array([expit(0.5)]))
    want = [0.2, 0.5, 0.0, 0.0, 1.0] if c02 < 0.5 else [0.7, 0.5, 1.0, 0.0, 0.0]
    np.testing.assert_allclose(X_cf[0], want, atol=1e-9)
    assert ctx.onehot.problem(X, X_cf) is None


def test_true_weights_price_a_switch_at_its_target_indicator():
    # d_0 = 0.8: feature 0 costs 0.5·0.8 = 0.4; the switch 0.6·d_4, cheaper iff d_4 < 2/3
    # (to category 1: 0.9·0.5, never)
    for d4, switched in ((0.6, True), (0.7, False)):
        ctx, X = known_context(0.6, c01=0.9, difficulty=[0.8, 0.5, 0.5, 0.5, d4])
        X_cf = recommend(ExactLinear("true"), ctx, X, np.array([expit(0.5)]))
        assert (X_cf[0, 4] == 1.0) == switched
        assert X_cf[0, 0] == pytest.approx(0.2 if switched else 0.7, abs=1e-12)


@pytest.mark.parametrize("c02, want", [(0.6, [0.2, 0.5, 0, 0, 1]), (0.9, [0.7, 0.5, 0, 1, 0])])
@pytest.mark.parametrize("policy", [ExactLinear, Ustun])
def test_switch_and_fill_known_answer(c02, want, policy):
    # need 1.5 > 0.8, the most feature 0 adds: category 1 (0.3) + 0.5 of feature 0, or
    # category 2 (c02) alone
    ctx, X = known_context(c02)
    X_cf = recommend(policy(), ctx, X, np.array([expit(1.5)]))
    np.testing.assert_allclose(X_cf[0], want, atol=1e-9)
    np.testing.assert_allclose(eq5_cost(ctx, X, X_cf, np.ones(5)), min(0.8, c02), atol=1e-9)


@pytest.mark.parametrize("policy", [ExactLinear, Ustun])
def test_forbidden_switch_is_never_taken(policy):
    ctx, X = known_context(INF, c01=0.9)
    X_cf = recommend(policy(), ctx, X, np.array([expit(0.5)]))
    np.testing.assert_allclose(X_cf[0], [0.7, 0.5, 1.0, 0.0, 0.0], atol=1e-9)
    # 2.5 needs category 2 (via 1 would take two switches of one group): out of reach
    X_cf = recommend(policy(), ctx, X, np.array([expit(2.5)]))
    assert np.isnan(X_cf).all()


@pytest.mark.parametrize("weights", ["uniform", "true"])
@pytest.mark.parametrize("one_way", [False, True])
def test_exact_linear_is_the_brute_force_optimum_and_valid(weights, one_way):
    rng = np.random.default_rng(3)
    w = model_weights(rng)
    extra = {}
    if one_way:  # feature 0 may only rise, 1 only fall
        extra = {"increase": np.eye(8, dtype=bool)[0], "decrease": np.eye(8, dtype=bool)[1]}
    ctx = context(w, -0.5, difficulty=rng.uniform(0.1, 1.0, 8), **extra)
    X = rows(rng, 40)
    goals = rng.uniform(0.4, 0.95, 40)
    X_cf = recommend(ExactLinear(weights), ctx, X, goals)
    cost = ctx.difficulty if weights == "true" else np.ones(8)
    ok = ~np.isnan(X_cf).any(axis=1)
    assert ok.sum() > 20
    assert ctx.onehot.problem(X[ok], X_cf[ok]) is None and exercised(ctx, X[ok], X_cf[ok])
    assert (ctx.decision_model.score(X_cf[ok]) >= goals[ok] - 1e-9).all()
    if one_way:
        assert (X_cf[ok, 0] >= X[ok, 0]).all() and (X_cf[ok, 1] <= X[ok, 1]).all()
    spent = eq5_cost(ctx, X[ok], X_cf[ok], cost)
    oracle = np.array([brute_force(X[i], goals[i], ctx, cost) for i in range(40)])
    np.testing.assert_array_equal(np.isfinite(oracle), ok)
    np.testing.assert_allclose(spent, oracle[ok], rtol=1e-7, atol=1e-9)


def test_exact_linear_counts_a_switch_as_one_change():
    # cap 1: category 1 + feature 0 (0.8) is two changes; category 2 alone (0.9) is one
    ctx, X = known_context(0.9)
    X_cf = recommend(ExactLinear(max_changes=1), ctx, X, np.array([expit(1.5)]))
    np.testing.assert_allclose(X_cf[0], [0.2, 0.5, 0, 0, 1], atol=1e-12)
    rng = np.random.default_rng(5)
    w = model_weights(rng)
    ctx = context(w, -0.5)
    X, goals = rows(rng, 25), rng.uniform(0.4, 0.95, 25)
    for k in (1, 2):
        X_cf = recommend(ExactLinear(max_changes=k), ctx, X, goals)
        ok = ~np.isnan(X_cf).any(axis=1)
        assert ok.any() and ctx.onehot.problem(X[ok], X_cf[ok]) is None
        assert exercised(ctx, X[ok], X_cf[ok], both=k > 1)
        changes = (ctx.onehot.moves(X[ok], X_cf[ok]) != 0).sum(axis=1)
        assert (changes <= k).all()
        oracle = np.array([brute_force(X[i], goals[i], ctx, np.ones(8), k) for i in range(25)])
        np.testing.assert_array_equal(np.isfinite(oracle), ok)
        np.testing.assert_allclose(
            eq5_cost(ctx, X[ok], X_cf[ok], np.ones(8)), oracle[ok], rtol=1e-7, atol=1e-9
        )


@pytest.mark.parametrize("policy", [ExactLinear, Ustun])
def test_an_immutable_group_is_held_and_the_rest_is_as_without_it(policy):
    rng = np.random.default_rng(11)
    w = model_weights(rng)
    held = context(w, -0.5, immutable=(3, 4, 5), X_train=rng.uniform(size=(200, 8)))
    X, goals = rows(rng, 30), rng.uniform(0.4, 0.95, 30)
    X_cf = recommend(policy(), held, X, goals)
    ok = ~np.isnan(X_cf).any(axis=1)
    assert ok.any() and held.onehot.problem(X[ok], X_cf[ok]) is None
    np.testing.assert_array_equal(X_cf[ok][:, [3, 4, 5]], X[ok][:, [3, 4, 5]])
    # with the other group immutable too, the advice is the numeric advice bit for bit
    both = dataclasses.replace(held, immutable=np.arange(8) >= 3)
    plain = dataclasses.replace(both, onehot=None)
    np.testing.assert_array_equal(
        recommend(policy(), both, X, goals), recommend(policy(), plain, X, goals)
    )


def test_without_groups_exact_linear_is_unchanged():
    rng = np.random.default_rng(2)
    w = model_weights(rng)
    ctx = context(w, -0.5, groups=None)
    X, goals = rng.uniform(size=(30, 8)), rng.uniform(0.4, 0.95, 30)
    want = exact_linear_counterfactuals(X, goals, w, -0.5, np.ones(8), ctx.useful(w))
    np.testing.assert_array_equal(recommend(ExactLinear(), ctx, X, goals), want)


@pytest.mark.parametrize(
    "make",
    [
        lambda: ExactLinear("true"),
        lambda: ExactLinear("estimated", explore_share=0.5),
        lambda: ExactLinear(max_changes=2),
        Ustun,
        lambda: Ustun(solver="milp"),
    ],
)
def test_advice_is_deterministic(make):
    rng = np.random.default_rng(4)
    ctx = context(model_weights(rng), -0.5, X_train=rng.uniform(size=(200, 8)))
    X, goals = rows(rng, 30), rng.uniform(0.4, 0.95, 30)
    a, b = (recommend(make(), ctx, X, goals, seed=9) for _ in range(2))
    np.testing.assert_array_equal(a, b)
    ok = ~np.isnan(a).any(axis=1)
    assert ok.any() and ctx.onehot.problem(X[ok], a[ok]) is None


def test_exploring_advice_is_valid_and_reaches_the_goal():
    rng = np.random.default_rng(8)
    ctx = context(model_weights(rng), -0.5)
    X, goals = rows(rng, 60), rng.uniform(0.4, 0.95, 60)
    policy = ExactLinear("estimated", explore_share=1.0)
    policy.prepare(ctx)
    policy.estimator.updates[:] = [5, 0, 9, 0, 0, 0, 0, 0]  # feature 1 least tried
    X_cf = policy.recommend(X, goals, np.random.default_rng(0))
    ok = ~np.isnan(X_cf).any(axis=1)
    assert ok.any() and ctx.onehot.problem(X[ok], X_cf[ok]) is None
    assert exercised(ctx, X[ok], X_cf[ok])
    assert (ctx.decision_model.score(X_cf[ok]) >= goals[ok] - 1e-9).all()
    np.testing.assert_array_equal(ok, ~np.isnan(recommend(ExactLinear(), ctx, X, goals)).any(1))


def test_too_many_switch_combinations_are_refused_in_one_line():
    big = tuple(tuple(range(13 * g, 13 * g + 13)) for g in range(3))
    costs = tuple(np.where(np.eye(13), 0.0, 0.5) for _ in big)
    ctx = context(np.ones(40), 0.0, groups=big, costs=costs)
    with pytest.raises(ConfigError, match="g0 .*g1 .*g2") as err:
        ExactLinear().prepare(ctx)
    assert "\n" not in str(err.value) and "2197" in str(err.value)
    # held immutable, a group needs no combination
    ExactLinear().prepare(dataclasses.replace(ctx, immutable=np.arange(40) < 13))


def test_the_estimator_learns_a_switch_on_its_target_indicator():
    ctx, X = known_context(0.6)
    X_cf = np.array([[0.5, 0.5, 0.0, 0.0, 1.0]])  # feature 0 by 0.3 and category 0 -> 2
    for ok in (True, False):
        policy = ExactLinear("estimated")
        policy.prepare(ctx)
        after = X_cf.copy() if ok else X.copy()
        fb = Feedback(0, np.arange(1), X, X_cf, after, np.zeros(1, bool))
        policy.observe(fb)
        est = policy.estimator
        # one attempt each of feature 0 and indicator 4; indicator 2 (1 -> 0) is none
        np.testing.assert_array_equal(est.updates, [1, 0, 0, 0, 1])
        a = 1 / 0.6 - 1  # eq. 7 at |dx|·x_cf = c(0, 2)
        p = -np.expm1(-ctx.beta * a / 0.5)
        assert est.d[4] == pytest.approx(np.clip(0.5 + 0.05 * (p - ok) * a, 0, 1))
        assert est.d[2] == est.d[3] == 0.5


# -- ustun ---------------------------------------------------------------------------------
def test_ustun_exact_matches_the_milp_and_a_brute_force_over_switches():
    rng = np.random.default_rng(7)
    w = model_weights(rng)
    ctx = context(w, -0.5, X_train=rows(rng, 300))
    X, goals = rows(rng, 30), rng.uniform(0.4, 0.95, 30)
    exact = Ustun()
    a = recommend(exact, ctx, X, goals)
    b = recommend(Ustun(solver="milp"), ctx, X, goals)
    ok = ~np.isnan(a).any(axis=1)
    assert ok.sum() > 10
    np.testing.assert_array_equal(ok, ~np.isnan(b).any(axis=1))
    for X_cf in (a, b):
        assert ctx.onehot.problem(X[ok], X_cf[ok]) is None and exercised(ctx, X[ok], X_cf[ok])
        assert (ctx.decision_model.score(X_cf[ok]) >= goals[ok] - 1e-9).all()
    cost = exact.percentile_cost(X[ok], a[ok])
    np.testing.assert_allclose(cost, exact.percentile_cost(X[ok], b[ok]), atol=1e-7)
    # brute force: every switch combination made first, then Ustun on the numeric
    # features alone (the indicators held) for what is left of the goal
    plain = dataclasses.replace(ctx, onehot=None, immutable=np.arange(8) >= 3)
    numeric = Ustun()
    numeric.prepare(plain)
    for i in np.flatnonzero(ok):
        best = INF
        per_group = [[None] + [s for s in ctx.onehot.switches(X[i]) if s.g == g] for g in (0, 1)]
        for combo in itertools.product(*per_group):
            y, spent = X[i : i + 1].copy(), 0.0
            for s in (s for s in combo if s is not None):
                y, spent = ctx.onehot.apply(y[0], s)[None, :], spent + s.cost
            y_cf = numeric.recommend(y, goals[i : i + 1], None)
            if not np.isnan(y_cf).any():
                best = min(best, spent + numeric.percentile_cost(y, y_cf)[0])
        assert cost[list(np.flatnonzero(ok)).index(i)] == pytest.approx(best, abs=1e-7)


@pytest.mark.parametrize("cap", [1, 2])
def test_ustun_capped_exact_matches_the_milp(cap):
    rng = np.random.default_rng(10)
    ctx = context(model_weights(rng), -0.5, X_train=rows(rng, 300))
    X, goals = rows(rng, 25), rng.uniform(0.4, 0.95, 25)
    exact = Ustun(max_changes=cap)
    a = recommend(exact, ctx, X, goals)
    b = recommend(Ustun(solver="milp", max_changes=cap), ctx, X, goals)
    ok = ~np.isnan(a).any(axis=1)
    assert ok.any()
    np.testing.assert_array_equal(ok, ~np.isnan(b).any(axis=1))
    for X_cf in (a, b):
        assert ctx.onehot.problem(X[ok], X_cf[ok]) is None
        assert exercised(ctx, X[ok], X_cf[ok], both=cap > 1)
        assert ((ctx.onehot.moves(X[ok], X_cf[ok]) != 0).sum(axis=1) <= cap).all()
    np.testing.assert_allclose(
        exact.percentile_cost(X[ok], a[ok]), exact.percentile_cost(X[ok], b[ok]), atol=1e-7
    )


# -- composite and the model ---------------------------------------------------------------
def test_composite_forwards_keeps_onehot():
    assert ExactLinear.keeps_onehot and Ustun.keeps_onehot
    assert CompositePolicy(LastThreshold(), ExactLinear()).keeps_onehot
    assert not CompositePolicy(LastThreshold(), object()).keeps_onehot


@pytest.mark.parametrize(
    "spec",
    [
        "threshold",
        "threshold-estimated",
        "last-threshold+exact-linear:weights=true,max_changes=2",
        "threshold-ustun",
        "last-threshold+ustun:solver=milp,max_changes=2",
    ],
)
def test_check_policy_passes_onehot(spec):
    report = check_policy(spec, scenarios=["onehot"], ticks=4, skip=("fork-safe",))
    assert not report.not_run
    assert report.status("onehot", "onehot") == "passed"
    assert report.result("onehot", "onehot").checked > 0
    if "max_changes" in spec:  # the checker counts a switch as one change, as the cap does
        assert report.status("one-way", "onehot") == "passed"
