"""One-way features and ``max_changes`` in the baselines (ustun, wachter, dice) and the
generators (claproar, gravitational, probe, face, rbr): each keeps the directions in the
world "one-way", Ustun's cap is exact, and without one-way features the advice is the
advice from before they existed."""

import dataclasses

import numpy as np
import pytest
from scipy.special import expit
from test_generators_gradient import _ctx as gradient_ctx

from abm.interfaces import LinearScorer
from abm.model import RecourseModel
from abm.registry import make_policy
from abm.testing import check_policy
from policies.baselines.ustun import Ustun, cheapest_mix
from policies.baselines.wachter import Wachter
from policies.generators.altmeyer import ClaPROAR, Gravitational
from policies.generators.face import Face
from policies.generators.probe import Probe
from policies.generators.rbr import RBR

#: policies cheap enough for every rule of check_policy
FULL = [
    "threshold-ustun",
    "last-threshold+ustun:max_changes=2",
    "last-threshold+ustun:solver=milp,max_changes=1",
    "threshold-wachter",
    "threshold-claproar",
    "threshold-gravitational",
    "threshold-probe",
]
#: slower ones (smaller settings where they have them): one instance each, so without
#: determinism and fork-safe (their own tests check those)
ONE_RUN = [
    "threshold-face",
    "threshold-rbr:max_iter=100,num_samples=50",
    "threshold-dice:cfs=2,samples=50",
]


@pytest.mark.parametrize("spec", FULL)
def test_check_policy_passes_one_way(spec):
    report = check_policy(spec, scenarios=["one-way"], ticks=4)
    assert not report.not_run
    assert report.status("one-way", "one-way") == "passed"
    assert report.result("one-way", "one-way").checked > 0


@pytest.mark.parametrize("spec", ONE_RUN)
def test_check_policy_passes_one_way_single_instance(spec):
    report = check_policy(spec, scenarios=["one-way"], ticks=3, skip=("determinism", "fork-safe"))
    assert not report.not_run
    assert report.status("one-way", "one-way") == "passed"
    assert report.result("one-way", "one-way").checked > 0


@pytest.mark.parametrize(
    "spec", ["threshold-" + n for n in ("ustun", "wachter", "dice", "claproar", "face", "rbr")]
)
def test_declared_through_the_composite(spec):
    assert make_policy(spec).keeps_one_way


# -- known answers on a small linear problem ---------------------------------------------

W, B = np.array([4.0, 4.0]), -4.0  # boundary x1 + x2 = 1 in the unit square
X_TRAIN = np.vstack(
    [np.array([0.2, 0.9]) + np.array([[0.05, 0.05], [-0.05, -0.05], [0.05, -0.05]]), [[0.1, 0.1]]]
)
Y_TRAIN = np.array([1, 1, 1, 0], dtype=np.int8)


def _ctx(w=W, b=B, increase=(), decrease=(), X_train=X_TRAIN, y_train=Y_TRAIN):
    """test_generators_gradient's context with one-way features."""
    z = len(w)
    inc, dec = np.zeros(z, bool), np.zeros(z, bool)
    inc[list(increase)], dec[list(decrease)] = True, True
    base = gradient_ctx(np.asarray(w, float), b, X_train=X_train, y_train=y_train)
    if X_train is None:  # no training data: none (the gradient tests' default has some)
        base = dataclasses.replace(base, X_train=None, y_train=None)
    return dataclasses.replace(base, increase=inc, decrease=dec)


def _advise(rec, ctx, X, goals):
    rec.prepare(ctx)
    return rec.recommend(X, goals, np.random.default_rng(0))


@pytest.mark.parametrize(
    "make",
    [Ustun, lambda: Ustun(solver="milp"), Wachter, ClaPROAR, Gravitational, Probe],
    ids=["ustun", "ustun-milp", "wachter", "claproar", "gravitational", "probe"],
)
def test_a_feature_moved_the_other_way_unconstrained_stays_put(make):
    # the unconstrained advice moves feature 0 (up the score; gravitational down, to
    # the centroid); made one-way the other way, only feature 1 may carry the advice
    X, goals = np.array([[0.3, 0.2]]), np.array([0.5])
    free = _advise(make(), _ctx(), X, goals)
    way = np.sign(free[0, 0] - X[0, 0])
    assert way != 0
    ctx = _ctx(decrease=(0,)) if way > 0 else _ctx(increase=(0,))
    kept = _advise(make(), ctx, X, goals)
    assert kept[0, 0] == X[0, 0]
    assert kept[0, 1] > X[0, 1]
    assert LinearScorer(W, B).score(kept)[0] >= goals[0]


def test_ustun_max_changes_one_changes_one_feature_and_reaches_the_goal():
    # uniform cost (no training data): per logit, feature 0 is cheaper but has room for
    # 0.6 of the 1.0 needed; feature 1 alone has room for 1.8
    w, b = np.array([3.0, 2.0]), -3.0
    x = np.array([[0.8, 0.1]])
    goal = np.array([expit(w @ x[0] + b + 1.0)])
    free = _advise(Ustun(), _ctx(w, b, X_train=None, y_train=None), x, goal)
    np.testing.assert_allclose(free[0], [1.0, 0.3], atol=1e-12)  # both change
    for solver in ("exact", "milp"):
        rec = Ustun(solver=solver, max_changes=1)
        cf = _advise(rec, _ctx(w, b, X_train=None, y_train=None), x, goal)
        assert (cf != x).sum() == 1
        np.testing.assert_allclose(cf[0], [0.8, 0.6], atol=1e-9)
        assert abs(LinearScorer(w, b).score(cf)[0] - goal[0]) < 1e-12


def test_ustun_max_changes_out_of_reach_is_unreached():
    # each feature alone has room for 1.2 of logit, the two together 2.4
    w, b, x = np.array([2.0, 2.0]), -2.0, np.array([[0.4, 0.4]])
    goal = np.array([expit(w @ x[0] + b + 2.0)])
    ctx = _ctx(w, b, X_train=None, y_train=None)
    assert not np.isnan(_advise(Ustun(), ctx, x, goal)).any()
    for solver in ("exact", "milp"):
        assert np.isnan(_advise(Ustun(solver=solver, max_changes=1), ctx, x, goal)).all()


def _brute_capped(G, C, need, cap):
    """Capped cheapest mix by trying every subset of ``cap`` features uncapped."""
    import itertools

    best = np.inf
    for chosen in itertools.combinations(range(len(G)), cap):
        Gs, Cs = [G[j] for j in chosen], [C[j] for j in chosen]
        if sum(g[-1] for g in Gs) >= need:
            best = min(best, cheapest_mix(Gs, Cs, need)[0])
    return best


@pytest.mark.parametrize("seed", range(10))
def test_capped_mix_is_the_best_over_every_feature_set(seed):
    rng = np.random.default_rng(seed)
    f = int(rng.integers(2, 6))
    G = [
        np.concatenate([[0.0], np.cumsum(rng.uniform(0.01, 1.0, rng.integers(1, 5)))])
        for _ in range(f)
    ]
    C = [np.concatenate([[0.0], np.cumsum(rng.uniform(0.0, 1.0, g.size - 1))]) for g in G]
    cap = int(rng.integers(1, f))
    need = rng.uniform(0.05, 1.0) * np.sort([g[-1] for g in G])[::-1][:cap].sum()
    cost, pick, frac, rest = cheapest_mix(G, C, need, cap)
    assert cost == pytest.approx(_brute_capped(G, C, need, cap), abs=1e-12)
    moved = [q for q, k in enumerate(pick) if (k > 0 if q != frac else rest > 0)]
    assert len(moved) <= cap


@pytest.fixture(scope="module")
def one_way_world():
    m = RecourseModel(
        "paper", "none", seed=0, agents=False, immutable=[9], increase=[0, 1, 2], decrease=[5, 7]
    )
    return m.context, m.world


def test_ustun_exact_and_milp_agree_under_a_cap_in_the_one_way_world(one_way_world):
    ctx, world = one_way_world
    rng = np.random.default_rng(1)
    X = world.generator.sample(60, rng)
    X = X[ctx.decision_model.score(X) < 0.9][:12]
    s = ctx.decision_model.score(X)
    goals = s + rng.uniform(0.05, 1.0, len(X)) * (0.9 - s)
    for cap in (1, 2):
        exact, milp = Ustun(max_changes=cap), Ustun(solver="milp", max_changes=cap)
        a, b = _advise(exact, ctx, X, goals), _advise(milp, ctx, X, goals)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a).any(axis=1)
        assert ok.any()
        np.testing.assert_allclose(
            exact.percentile_cost(X[ok], a[ok]), exact.percentile_cost(X[ok], b[ok]), atol=1e-9
        )
        for cf in (a[ok], b[ok]):
            assert ((cf != X[ok]).sum(axis=1) <= cap).all()
            assert (np.sign(cf - X[ok]) * ctx.direction >= 0).all()


# -- without one-way features nothing changes ----------------------------------------------

#: row sums of the advice to three rows of the paper world (immutable 9), recorded with
#: the code from before one-way features
BEFORE = {
    "ustun": [4.98999044592678, 5.231374874721655, 4.580168922678866],
    "wachter": [4.979669829383582, 5.083074114130538, 4.581476420619282],
    "claproar": [5.229623049322592, 5.343046222488893, 4.8694336183587374],
    "gravitational": [5.162536928453002, 5.128020030770636, 4.945334806340078],
    "probe": [5.006033948256774, 5.108170573830917, 4.608507095288616],
    "face": [5.073742955075237, 5.180463693292202, 4.873439089345941],
    "rbr": [5.0812361747464685, 5.243707693613108, 4.75091910707867],
}
MAKE = {
    "ustun": Ustun,
    "wachter": Wachter,
    "claproar": ClaPROAR,
    "gravitational": Gravitational,
    "probe": Probe,
    "face": lambda: Face(k=10),
    "rbr": lambda: RBR(max_iter=20, num_samples=20, inner_iter=10),
}
ROWS = np.array(
    [
        [0.77916, 0.130721, 0.560045, 0.450866, 0.4304, 0.454721, 0.280658, 0.465534, 0.344044, 0.964365],
        [0.539202, 0.387315, 0.464469, 0.437074, 0.348363, 0.430361, 0.612966, 0.464659, 0.576946, 0.476033],
        [0.392166, 0.39441, 0.623514, 0.608787, 0.504493, 0.57787, 0.173315, 0.631155, 0.331979, 0.272425],
    ]
)  # fmt: skip
GOALS = np.array([0.5965364735243928, 0.5605933629801756, 0.3806911965016301])


@pytest.fixture(scope="module")
def paper_world():
    return RecourseModel("paper", "none", seed=0, agents=False, immutable=[9]).context


@pytest.mark.parametrize("name", list(BEFORE))
def test_advice_without_one_way_features_is_as_before(paper_world, name):
    assert not paper_world.one_way
    rec = MAKE[name]()
    rec.prepare(paper_world)
    cf = rec.recommend(ROWS, GOALS, np.random.default_rng(5))
    np.testing.assert_allclose(cf.sum(axis=1), BEFORE[name], rtol=1e-12, atol=0)
