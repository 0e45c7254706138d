"""Baseline recommenders (Ustun, Wachter, DiCE) and the mlp decision model."""

import itertools

import numpy as np
import pytest

from abm.interfaces import PolicyContext
from abm.model import RecourseModel
from abm.registry import make_policy
from abm.validation import ConfigError
from policies.baselines.ustun import Ustun, cheapest_mix
from policies.baselines.wachter import Wachter, autograd_score_grad, score_grad, torch_scorer
from policies.recommenders import ExactLinear, exact_linear_counterfactuals

try:  # the rl extra: the mlp model and autograd's gradients
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs the rl extra (torch)")


def _context(decision_model="logistic", immutable=(2, 5)):
    m = RecourseModel(
        "paper",
        "none",
        seed=0,
        agents=False,
        decision_model=decision_model,
        immutable=list(immutable),
    )
    return m.context, m.world


def _draws(ctx, world, n, seed, goal_max=0.9):
    rng = np.random.default_rng(seed)
    X = world.generator.sample(4 * n, rng)
    X = X[ctx.decision_model.score(X) < goal_max][:n]
    s = ctx.decision_model.score(X)
    return X, s + rng.uniform(0.05, 1.0, X.shape[0]) * (goal_max - s)


def _check_valid(ctx, X, X_cf, goals, tol):
    ok = ~np.isnan(X_cf).any(axis=1)
    assert ok.any()
    assert (X_cf[ok] >= ctx.lower).all() and (X_cf[ok] <= ctx.upper).all()
    assert (X_cf[ok][:, ctx.immutable] == X[ok][:, ctx.immutable]).all()
    err = ctx.decision_model.score(X_cf[ok]) - goals[ok]
    return ok, err


@pytest.fixture(scope="module")
def linear():
    return _context()


@pytest.mark.slow
def test_ustun_reaches_goal_exactly_and_beats_other_feasible_points(linear):
    ctx, world = linear
    X, goals = _draws(ctx, world, 30, 1)
    ust = Ustun()
    ust.prepare(ctx)
    X_cf = ust.recommend(X, goals, np.random.default_rng(0))
    ok, err = _check_valid(ctx, X, X_cf, goals, 0)
    assert ok.all() and np.abs(err).max() < 1e-12
    # any other point reaching the goal costs at least as much in percentile shift: try
    # the cheapest points under many other cost weightings (each reaches g exactly)
    mine = ust.percentile_cost(X, X_cf)
    wrng = np.random.default_rng(7)
    for _ in range(40):
        cost = wrng.uniform(0.01, 1.0, ctx.n_features)
        other = exact_linear_counterfactuals(
            X, goals, ctx.decision_model.weights, ctx.decision_model.intercept, cost, ctx.mutable
        )
        assert (mine <= ust.percentile_cost(X, other) + 1e-7).all()
    el = ExactLinear("true")
    el.prepare(ctx)
    assert (mine <= ust.percentile_cost(X, el.recommend(X, goals, None)) + 1e-7).all()
    # the MILP, one program per candidate or one per tick, finds the same optimum; the
    # same input gives the same output
    for milp in (Ustun(solver="milp"), Ustun(solver="milp", batch=1)):
        milp.prepare(ctx)
        np.testing.assert_allclose(
            ust.percentile_cost(X, milp.recommend(X, goals, None)), mine, atol=1e-7
        )
    assert np.array_equal(X_cf, ust.recommend(X, goals, np.random.default_rng(9)))


def _brute_mix(G, C, need):
    """min sum c_j(g_j), sum g_j >= need, by listing every breakpoint of every feature and
    letting each feature in turn fill the rest continuously (the vertices of the LP)."""
    best = np.inf
    for picks in itertools.product(*(range(g.size) for g in G)):
        for j in range(len(G)):
            got = sum(G[q][k] for q, k in enumerate(picks) if q != j)
            cost = sum(C[q][k] for q, k in enumerate(picks) if q != j)
            rest = need - got
            if rest > G[j][-1]:
                continue
            best = min(best, cost + (np.interp(rest, G[j], C[j]) if rest > 0 else 0.0))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_cheapest_mix_is_the_brute_force_optimum(seed):
    # nonconvex, nondecreasing piecewise-linear costs (densities that rise and fall)
    rng = np.random.default_rng(seed)
    f = int(rng.integers(1, 5))
    G = [
        np.concatenate([[0.0], np.cumsum(rng.uniform(0.01, 1.0, rng.integers(1, 5)))])
        for _ in range(f)
    ]
    C = [np.concatenate([[0.0], np.cumsum(rng.uniform(0.0, 1.0, g.size - 1))]) for g in G]
    need = rng.uniform(0.05, 1.0) * sum(g[-1] for g in G)
    cost, pick, frac, rest = cheapest_mix(G, C, need)
    assert cost == pytest.approx(_brute_mix(G, C, need), abs=1e-12)
    # the returned point is what it costs and reaches the need exactly (or more, on
    # breakpoints only)
    gains = [G[q][k] if q != frac else rest for q, k in enumerate(pick)]
    costs = [C[q][k] if q != frac else np.interp(rest, G[q], C[q]) for q, k in enumerate(pick)]
    assert sum(costs) == pytest.approx(cost, abs=1e-12)
    assert sum(gains) >= need * (1 - 1e-12)
    if frac >= 0 and rest > 0:
        assert sum(gains) == pytest.approx(need, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow)])
def test_ustun_exact_solver_matches_the_milp(seed):
    ctx, world = _context(immutable=(2, 5) if seed != 1 else ())
    X, goals = _draws(ctx, world, 25, 10 + seed)
    exact, milp = Ustun(), Ustun(solver="milp")
    exact.prepare(ctx)
    milp.prepare(ctx)
    a, b = exact.recommend(X, goals, None), milp.recommend(X, goals, None)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a).any(axis=1)
    np.testing.assert_allclose(
        exact.percentile_cost(X[ok], a[ok]), exact.percentile_cost(X[ok], b[ok]), atol=1e-9
    )
    assert np.abs(ctx.decision_model.score(a[ok]) - goals[ok]).max() < 1e-12
    assert (a[ok] >= ctx.lower).all() and (a[ok] <= ctx.upper).all()


def test_ustun_marks_unreachable_goals_and_leaves_met_goals(linear):
    ctx, world = linear
    X, goals = _draws(ctx, world, 3, 2)
    goals = goals.copy()
    goals[0] = 1.0 - 1e-15  # beyond the box
    goals[1] = 0.0  # already met
    ust = Ustun()
    ust.prepare(ctx)
    X_cf = ust.recommend(X, goals, None)
    assert np.isnan(X_cf[0]).all()
    assert np.array_equal(X_cf[1], X[1])
    assert abs(ctx.decision_model.score(X_cf[2:])[0] - goals[2]) < 1e-12


@pytest.mark.slow
def test_ustun_needs_linear_model():
    ctx, _ = _context("mlp", ())
    with pytest.raises(ConfigError, match="linear decision model"):
        Ustun().prepare(ctx)


@needs_torch
@pytest.mark.parametrize("kind", ["logistic", pytest.param("mlp", marks=pytest.mark.slow)])
def test_wachter_within_tolerance_and_deterministic(kind):
    ctx, world = _context(kind)
    X, goals = _draws(ctx, world, 25, 3)
    w = Wachter(tol=1e-3)
    w.prepare(ctx)
    X_cf = w.recommend(X, goals, np.random.default_rng(0))
    ok, err = _check_valid(ctx, X, X_cf, goals, 1e-3)
    assert ok.mean() > 0.9 and np.abs(err).max() <= 1e-3
    assert np.array_equal(X_cf, w.recommend(X, goals, np.random.default_rng(1)), equal_nan=True)
    assert torch.get_num_threads() >= 1  # thread setting restored, not left at a library value


def test_wachter_iteration_cap_marks_unreached(linear):
    ctx, world = linear
    X, goals = _draws(ctx, world, 10, 4)
    w = Wachter(max_iter=1, check=1)
    w.prepare(ctx)
    X_cf = w.recommend(X, goals, None)
    reached = ctx.decision_model.score(np.where(np.isnan(X_cf), X, X_cf)) >= goals - 1e-3
    assert np.isnan(X_cf).any(axis=1).tolist() == (~reached).tolist()


@pytest.mark.slow
def test_policies_run_in_the_simulation():
    for name in ("threshold-ustun", "threshold-wachter", "last-threshold+wachter:lam=50"):
        model = RecourseModel("paper", name, seed=1, ticks=8, agents=False)
        ticks = model.run().tick_table()
        adv = ticks["n_rejected"] - ticks["n_unadvised"]
        assert (adv > 0).all()
        tol = 1e-6 if "ustun" in name else 1e-3
        assert (ticks["mean_error"] <= tol).all()
    # goals out of reach (threshold + 0.99, capped at 1) become "no advice", counted per tick
    ticks = (
        RecourseModel("paper", "last-threshold:margin=0.99+ustun", seed=1, ticks=5, agents=False)
        .run()
        .tick_table()
    )
    assert (ticks["n_unadvised"] == ticks["n_rejected"]).all() and ticks["mean_goal"].isna().all()
    with pytest.raises(ValueError, match=r"recommender 'ustun': levels = '0' .* \[1, 1000\]"):
        make_policy("last-threshold+ustun:levels=0")


def test_dice_valid_deterministic_and_leaves_global_state():
    pytest.importorskip("dice_ml")
    from policies.baselines.dice import Dice

    ctx, world = _context("logistic", (0,))
    X, goals = _draws(ctx, world, 3, 5, goal_max=0.8)
    d = Dice(cfs=2, samples=100)
    d.prepare(ctx)
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    X_cf = d.recommend(X, goals, np.random.default_rng(0))
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002
    ok, err = _check_valid(ctx, X, X_cf, goals, 0)
    assert (err[ok] >= 0).all()  # DiCE's desired range starts at g
    assert np.array_equal(X_cf, d.recommend(X, goals, np.random.default_rng(0)), equal_nan=True)
    impossible = d.recommend(X[:1], np.array([1.0 + 1e-9]), np.random.default_rng(0))
    assert np.isnan(impossible).all()


def test_dice_finding_no_counterfactual_leaves_the_row_unreached(monkeypatch):
    pytest.importorskip("dice_ml")
    from raiutils.exceptions import UserConfigValidationException

    from policies.baselines.dice import Dice

    ctx, world = _context("logistic", (0,))
    X, goals = _draws(ctx, world, 3, 5, goal_max=0.8)
    for method in ("random", "genetic"):
        d = Dice(method=method, cfs=2, samples=100)
        d.prepare(ctx)
        # DiCE raises (it does not return an empty set) when no counterfactual is found; it
        # did so in `lending` and ended the episode before 0.8.0. The random method on
        # arrays returns none (0, F) where dice-ml raises
        if method == "random":
            found, name = d.explainer.counterfactuals, "counterfactuals"
        else:
            found, name = d.explainer.generate_counterfactuals, "generate_counterfactuals"
        calls = []

        def none_for_the_second(*args, found=found, calls=calls, method=method, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                if method == "random":
                    return np.empty((0, X.shape[1]))
                raise UserConfigValidationException(
                    "No counterfactuals found for any of the query points!"
                )
            return found(*args, **kwargs)

        monkeypatch.setattr(d.explainer, name, none_for_the_second)
        below = np.flatnonzero(ctx.decision_model.score(X) < goals)
        assert len(below) >= 2
        X_cf = d.recommend(X, goals, np.random.default_rng(0))
        assert np.isnan(X_cf[below[1]]).all()
        assert not np.isnan(X_cf[below[0]]).any()


@needs_torch
@pytest.mark.slow
def test_mlp_decision_model():
    from abm.mlp import MLPClassifier

    ctx, world = _context("mlp", ())
    est = world.decision_model.estimator
    assert isinstance(est, MLPClassifier) and not ctx.decision_model.is_linear
    assert (est.predict(world.X_train) == world.y_train).mean() > 0.65
    # scores are row-independent and match the differentiable torch version
    X = world.X_train[:300]
    assert np.array_equal(ctx.decision_model.score(X[:7]), ctx.decision_model.score(X)[:7])
    t = est.torch_score(torch.from_numpy(np.array(X))).numpy()
    np.testing.assert_allclose(t, est.predict_proba(X)[:, 1], atol=1e-12)
    small = dict(hidden=(4,), epochs=2)
    a = MLPClassifier(**small, random_state=3).fit(X, world.y_train[:300])
    b = MLPClassifier(**small, random_state=3).fit(X, world.y_train[:300])
    c = MLPClassifier(**small, random_state=4).fit(X, world.y_train[:300])
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    assert isinstance(ctx, PolicyContext)


@needs_torch
def test_wachters_closed_form_gradient_is_autograds():
    """The linear model's score and gradient in closed form (NumPy) agree with autograd
    through the torch scorer (random models, rows inside and outside [0, 1])."""
    from abm.interfaces import LinearScorer

    rng = np.random.default_rng(3)
    for _ in range(20):
        z = int(rng.integers(2, 12))
        model = LinearScorer(rng.normal(0.0, 4.0, z), float(rng.normal(-2.0, 2.0)))
        X = rng.uniform(-0.5, 1.5, (int(rng.integers(1, 40)), z))
        s, grad = score_grad(model)(X)
        xv = torch.from_numpy(X).requires_grad_(True)
        s_ref = torch_scorer(model)(xv)
        (grad_ref,) = torch.autograd.grad(s_ref.sum(), xv)
        np.testing.assert_allclose(s, s_ref.detach().numpy(), rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(grad, grad_ref.numpy(), rtol=1e-13, atol=1e-300)


def test_wachter_takes_the_feature_of_largest_weight_first():
    """Wachter's L1 prox moves only the mutable feature of largest |w_j| while it has room:
    on a linear model with one dominant weight, every counterfactual changes that
    feature alone and lands within tol above its goal."""
    from abm.interfaces import LinearScorer

    w = np.array([0.5, 3.0, -1.0, 0.2])
    z = w.size
    ctx = PolicyContext(
        decision_model=LinearScorer(w, -1.0),
        lower=np.full(z, -5.0),
        upper=np.full(z, 5.0),
        immutable=np.zeros(z, bool),
        difficulty=np.full(z, 0.5),
        k=10,
        m=10,
        validity=5,
        beta=1.0,
        ticks=10,
    )
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.0, 0.0, (20, z))
    s = ctx.decision_model.score(X)
    goals = s + rng.uniform(0.05, 0.3, 20) * (1.0 - s)
    rec = Wachter()
    rec.prepare(ctx)
    out = rec.recommend(X, goals, None)
    assert not np.isnan(out).any()
    moved = out != X
    assert moved[:, 1].all() and not moved[:, [0, 2, 3]].any()
    after = ctx.decision_model.score(out)
    assert (after >= goals).all() and (after <= goals + 2e-3).all()


@needs_torch
@pytest.mark.parametrize("seed", range(4))
def test_wachters_closed_form_descent_is_the_autograd_descent(seed):
    """The logistic model's closed-form gradient is a fast path: the descent through
    autograd of the torch scorer (the general route, the mlp's) gives the same
    counterfactuals up to rounding and the same rows without advice."""
    ctx, world = _context(immutable=(2, 5) if seed % 2 else ())
    X, goals = _draws(ctx, world, 30, 40 + seed)
    fast = Wachter(lam=[10.0, 1.0][seed % 2], check=[20, 5][seed // 2])
    fast.prepare(ctx)
    general = Wachter(lam=fast.lam, check=fast.check)
    general.prepare(ctx)
    general.score_grad = autograd_score_grad(torch_scorer(ctx.decision_model))
    a, b = fast.recommend(X, goals, None), general.recommend(X, goals, None)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
