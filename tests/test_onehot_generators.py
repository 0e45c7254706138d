"""One-hot groups in the relaxed/gradient generators (wachter, claproar, gravitational,
probe, dice): advice always valid one-hot, no switch that is not allowed, immutable groups
untouched, one-way features kept, deterministic; a switch taken exactly when it is the
cheaper way to the goal, two at once when one is not enough; without groups the one-hot
path is never taken."""

import dataclasses

import numpy as np
import pytest
from test_robust import context

from abm.interfaces import LinearScorer
from abm.onehot import OneHot
from policies.baselines.dice import Dice
from policies.baselines.wachter import Wachter
from policies.generators.altmeyer import ClaPROAR, Gravitational
from policies.generators.probe import Probe

Z = 5  # features 0, 1 numeric; 2..4 the group "housing"
GROUP = np.array([2, 3, 4])
W, B = np.array([2.0, 1.0, -1.0, 0.0, 1.5]), -2.0
# switching costs c(a, b); 1 -> 2 is not allowed
SWITCH = np.array([[0.0, 0.3, 0.6], [0.4, 0.0, np.inf], [0.5, 0.2, 0.0]])

GENERATORS = [
    (Wachter, {}),
    (ClaPROAR, {}),
    (Gravitational, {}),
    (Probe, {}),
    (Dice, {"cfs": 2, "samples": 30, "n_data": 60}),
]
IDS = [cls.__name__ for cls, _ in GENERATORS]


def _rows(n, rng):
    """n valid rows (n, Z): numeric part in [0, 0.6), a random category."""
    X = np.zeros((n, Z))
    X[:, :2] = rng.uniform(0.0, 0.6, (n, 2))
    X[np.arange(n), GROUP[rng.integers(0, 3, n)]] = 1.0
    return X


def _ctx(immutable=(), increase=None, costs=SWITCH, w=W, b=B):
    X_train = _rows(60, np.random.default_rng(7))
    scorer = LinearScorer(w, b)
    return dataclasses.replace(
        context(scorer, Z, immutable),  # test_robust's: the box, d = 0.5, k = m = T = 1
        X_train=X_train,
        y_train=(scorer.score(X_train) > 0.5).astype(np.int8),
        increase=increase,
        decrease=None if increase is None else np.zeros(Z, bool),
        onehot=OneHot(groups=(GROUP,), costs=(np.asarray(costs, float),), names=("housing",)),
    )


def _advise(cls, kw, ctx, n=12, seed=0, goal=0.6):
    rec = cls(**kw)
    rec.prepare(ctx)
    X = _rows(n, np.random.default_rng(seed))
    goals = np.full(n, goal)
    return X, goals, rec.recommend(X, goals, np.random.default_rng(seed + 1))


def _check_valid(ctx, X, goals, X_cf, dice=False):
    """Advised rows (NaN: unreached) valid one-hot, allowed switches, at their goal."""
    oh = ctx.onehot
    reached = ~np.isnan(X_cf).any(axis=1)
    assert not np.isnan(X_cf[reached]).any()
    assert oh.problem(X[reached], X_cf[reached]) is None
    a, b = oh.category(X[reached], 0), oh.category(X_cf[reached], 0)
    assert np.isfinite(SWITCH[a, b]).all()
    met = ctx.decision_model.score(X) >= goals
    np.testing.assert_array_equal(X_cf[met], X[met])  # goals already met: no change
    s = ctx.decision_model.score(X_cf)
    assert (s[reached] >= goals[reached] - 1e-12).all()
    if dice:  # DiCE's score range
        assert (s[reached & ~met] <= goals[reached & ~met] + 0.04 + 1e-12).all()
    return reached & ~met


@pytest.mark.parametrize(("cls", "kw"), GENERATORS, ids=IDS)
def test_advice_is_valid_onehot_and_deterministic(cls, kw):
    assert cls.keeps_onehot
    ctx = _ctx()
    X, goals, X_cf = _advise(cls, kw, ctx)
    reached = _check_valid(ctx, X, goals, X_cf, dice=cls is Dice)
    need = int((ctx.decision_model.score(X) < goals).sum())
    assert reached.sum() >= (need // 2 if cls is Dice else need) > 0
    _, _, again = _advise(cls, kw, ctx)
    np.testing.assert_array_equal(again, X_cf)


@pytest.mark.parametrize(("cls", "kw"), GENERATORS, ids=IDS)
def test_many_rows_and_goals(cls, kw):
    ctx = _ctx()
    rng = np.random.default_rng(11)
    n = 10 if cls is Dice else 40
    X, goals = _rows(n, rng), rng.uniform(0.3, 0.95, n)
    rec = cls(**kw)
    rec.prepare(ctx)
    X_cf = rec.recommend(X, goals, rng)
    reached = _check_valid(ctx, X, goals, X_cf, dice=cls is Dice)
    assert reached.any()


@pytest.mark.parametrize(("cls", "kw"), GENERATORS[:4], ids=IDS[:4])
def test_gradient_generators_switch_some_rows(cls, kw):
    ctx = _ctx()
    X, goals, X_cf = _advise(cls, kw, ctx, n=12, seed=3)
    reached = _check_valid(ctx, X, goals, X_cf)
    switched = ctx.onehot.category(X, 0) != ctx.onehot.category(X_cf, 0)
    assert reached.sum() == (ctx.decision_model.score(X) < goals).sum()
    assert switched.any() and not switched[reached].all()


@pytest.mark.parametrize(("cls", "kw"), GENERATORS, ids=IDS)
def test_immutable_group_is_never_switched(cls, kw):
    ctx = _ctx(immutable=GROUP)
    X, goals, X_cf = _advise(cls, kw, ctx, n=8)
    reached = _check_valid(ctx, X, goals, X_cf, dice=cls is Dice)
    assert reached.any()
    np.testing.assert_array_equal(X_cf[reached][:, GROUP], X[reached][:, GROUP])


@pytest.mark.parametrize(("cls", "kw"), GENERATORS, ids=IDS)
def test_one_way_features_kept(cls, kw):
    up = np.zeros(Z, bool)
    up[1] = True  # only raised; feature 0 free both ways
    ctx = _ctx(increase=up)
    X, goals, X_cf = _advise(cls, kw, ctx, n=8)
    reached = _check_valid(ctx, X, goals, X_cf, dice=cls is Dice)
    assert reached.any()
    assert (X_cf[reached][:, 1] >= X[reached][:, 1]).all()


def test_forbidden_switch_never_taken_even_where_it_alone_would_reach():
    # from category 1 only 1 -> 0 (which lowers the score) is allowed: a numeric move
    w = np.array([2.0, 0.0, 0.0, 0.0, 4.0])
    ctx = _ctx(w=w, b=-1.5)
    X = np.array([[0.2, 0.5, 0.0, 1.0, 0.0]])
    for cls, kw in GENERATORS:
        rec = cls(**kw)
        rec.prepare(ctx)
        X_cf = rec.recommend(X, np.array([0.6]), np.random.default_rng(0))
        if not np.isnan(X_cf).any():
            np.testing.assert_array_equal(X_cf[0, GROUP], [0.0, 1.0, 0.0])
            assert X_cf[0, 0] > X[0, 0]


@pytest.mark.parametrize(("cls", "kw"), GENERATORS[:4], ids=IDS[:4])
def test_two_switches_at_once_when_one_is_not_enough(cls, kw):
    # feature 0 can add at most 0.5 to the logit, each group's switch 0 -> 1 adds 1.5: the
    # goal (logit 3.2 above x) needs both switches
    z = 7
    w = np.array([0.5, 0.0, 1.5, -1.0, 0.0, 1.5, -1.0])
    groups = (np.array([1, 2, 3]), np.array([4, 5, 6]))
    c = np.full((3, 3), 0.3)
    np.fill_diagonal(c, 0.0)
    oh = OneHot(groups=groups, costs=(c, c), names=("a", "b"))
    ctx = dataclasses.replace(
        _ctx(),
        decision_model=LinearScorer(w, -2.0),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.zeros(z, bool),
        difficulty=np.full(z, 0.5),
        X_train=np.eye(z)[[0, 2, 5]] + np.eye(z)[[1, 4, 4]],
        y_train=np.array([0, 1, 1], np.int8),
        onehot=oh,
    )
    X = np.array([[0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]])
    goal = 1.0 / (1.0 + np.exp(-(w @ X[0] - 2.0 + 3.2)))
    rec = cls(**kw)
    rec.prepare(ctx)
    X_cf = rec.recommend(X, np.array([goal]), np.random.default_rng(0))
    assert oh.problem(X, X_cf) is None
    np.testing.assert_array_equal(X_cf[0, 1:], [0, 1, 0, 0, 1, 0])
    assert ctx.decision_model.score(X_cf)[0] >= goal


@pytest.mark.parametrize(("c", "switch"), [(0.2, True), (0.6, False)])
def test_wachter_takes_the_switch_exactly_when_it_is_cheaper(c, switch):
    # the goal's logit lies 0.8 above x: feature 0 (w = 2) costs 0.4, the switch 0 -> 1
    # (w 0 -> 1, enough alone) costs c; 0 -> 2 (w = 3) is not allowed
    w = np.array([2.0, 0.0, 0.0, 1.0, 3.0])
    costs = np.array([[0.0, c, np.inf], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    ctx = _ctx(w=w, b=0.0, costs=costs)
    x = np.array([[0.2, 0.3, 1.0, 0.0, 0.0]])
    goal = 1.0 / (1.0 + np.exp(-(w @ x[0] + 0.8)))
    rec = Wachter()
    rec.prepare(ctx)
    X_cf = rec.recommend(x, np.array([goal]), np.random.default_rng(0))
    assert ctx.onehot.problem(x, X_cf) is None
    assert bool(ctx.onehot.category(X_cf, 0)[0] == 1) is switch
    cost = ctx.onehot.moves(x, X_cf).sum()
    assert cost == pytest.approx(c if switch else 0.4, abs=0.01)


@pytest.mark.parametrize(("cls", "kw"), GENERATORS, ids=IDS)
def test_without_groups_the_onehot_path_is_not_taken(cls, kw, monkeypatch):
    ctx = dataclasses.replace(_ctx(), onehot=None)

    def boom(*args, **kwargs):
        raise AssertionError("one-hot path taken without groups")

    monkeypatch.setattr(OneHot, "snap", boom)
    monkeypatch.setattr(OneHot, "moves", boom)
    X, goals, X_cf = _advise(cls, kw, ctx, n=4)
    assert X_cf.shape == X.shape


def test_face_ends_on_a_node_it_may_switch_to():
    """FACE's advice is a training row (so one-hot) whose categories the row may switch to:
    rows in category 1, whose only targets are in category 2 (1 -> 2 not allowed), get no
    advice, where without groups FACE sends all of them there; an immutable group keeps
    its own. (k = 150: with few neighbours the graph splits by category, a switch being a
    long edge.)"""
    from policies.generators.face import Face

    rng = np.random.default_rng(9)
    base = _ctx()
    X_train = _rows(400, rng)
    X = _rows(40, rng)
    X[:, 2:5] = (0.0, 1.0, 0.0)  # every row in category 1
    goals = np.full(40, 0.45)  # only category 2 (+1.5) lifts a row this far
    out = {}
    for groups in (None, base.onehot):
        face = Face(k=150)
        face.prepare(dataclasses.replace(base, X_train=X_train, onehot=groups))
        out[groups is None] = face.recommend(X, goals, np.random.default_rng(0))
    assert (out[True][:, 4] == 1).all()  # without groups: every row through the barred switch
    assert np.isnan(out[False]).all()
    for imm in ((), (2, 3, 4)):
        ctx = dataclasses.replace(_ctx(immutable=imm), X_train=X_train)
        X, goals, X_cf = _advise(Face, {"k": 150}, ctx, n=60, goal=0.65)
        reached = _check_valid(ctx, X, goals, X_cf)
        assert reached.any()
        if imm:
            np.testing.assert_array_equal(X_cf[reached][:, GROUP], X[reached][:, GROUP])
