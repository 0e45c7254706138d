"""Robust recourse (specs/robust-recourse.md): the exact price, the solvers' agreement
(§2), the four paper issues (§4), the policies (§5) and bad input (§6)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from abm import RecourseModel
from abm.config import ScenarioConfig
from abm.interfaces import LinearScorer, PolicyContext, RecourseObs
from abm.registry import REGISTRY, make_policy
from abm.validation import ConfigError
from policies.robust import policy as robust_policy
from policies.robust.policy import RobustPolicy
from policies.robust.price import (
    augmented_norm,
    nominal_logit,
    price,
    softplus_neg,
    worst_case_valid,
    worst_logit,
    worst_model,
)
from policies.robust.solvers import (
    _roar_adversary,
    alg1,
    alg2,
    alg2_rows,
    linearise,
    roar,
    robust_l2_batch,
    robust_lp,
)

INF = math.inf


def random_problem(rng, z, bounded):
    """(x0, w, b, lower, upper): a logistic model and a start, in [0, 1] when bounded."""
    w = rng.normal(0.0, 2.0, z)
    b = float(rng.normal(-2.0, 1.0))
    x0 = rng.uniform(0, 1, z) if bounded else rng.normal(0.0, 1.0, z)
    x0[rng.random(z) < 0.3] = 0.0  # zero features: the corner case of Algorithm 2
    lo, hi = (np.zeros(z), np.ones(z)) if bounded else (None, None)
    return x0, w, b, lo, hi


# -- §1: the exact worst-case price ---------------------------------------------------
def test_worst_logit_matches_the_vertices_of_the_l1_and_linf_balls():
    # a linear function is smallest on the ball at a vertex: ±α e_k (L1), α·signs (L-inf)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    w, b, alpha = rng.normal(size=3), 0.7, 0.3
    Xt = np.hstack([X, np.ones((20, 1))])
    theta0 = np.append(w, b)
    l1 = [theta0 + alpha * s * e for e in np.eye(4) for s in (1, -1)]
    linf = [theta0 + alpha * np.array(s) for s in itertools.product((1, -1), repeat=4)]
    for p, models in ((1, l1), (INF, linf)):
        brute = np.min([Xt @ m for m in models], axis=0)
        np.testing.assert_allclose(worst_logit(X, w, b, alpha, p), brute, atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, INF])
def test_worst_model_lies_in_the_ball_and_attains_the_closed_form(p):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    w, b, alpha = rng.normal(size=4), -0.2, 0.4
    theta = worst_model(X, w, b, alpha, p)
    dist = np.linalg.norm(theta - np.append(w, b), ord=p, axis=1)
    assert (dist <= alpha * (1 + 1e-12)).all()
    Xt = np.hstack([X, np.ones((30, 1))])
    np.testing.assert_allclose((theta * Xt).sum(axis=1), worst_logit(X, w, b, alpha, p))
    # no random model of the ball does better than the closed form
    U = rng.normal(size=(2000, 5))
    U *= alpha / np.linalg.norm(U, ord=p, axis=1, keepdims=True)
    sampled = (Xt @ (np.append(w, b) + U).T).min(axis=1)
    assert (sampled >= worst_logit(X, w, b, alpha, p) - 1e-12).all()


def test_price_is_cross_entropy_of_the_worst_logit_plus_l1_cost():
    x, x0 = np.array([[0.5, -1.0]]), np.array([[0.0, 0.0]])
    w, b, alpha, lam = np.array([1.0, 2.0]), 0.5, 0.2, 0.1
    s = 0.5 - 2.0 + 0.5 - 0.2 * math.sqrt(0.25 + 1 + 1)  # p = 2: ‖x̃‖₂
    assert price(x, x0, w, b, alpha, lam, 2)[0] == pytest.approx(math.log1p(math.exp(-s)) + 0.15)


# -- §2: the solvers agree --------------------------------------------------------------
@pytest.mark.parametrize("bounded", [False, True])
def test_alg1_equals_the_convex_program_for_p1(bounded):
    rng = np.random.default_rng(2 + bounded)
    for trial in range(12):
        x0, w, b, lo, hi = random_problem(rng, int(rng.integers(2, 6)), bounded)
        imm = rng.random(x0.size) < 0.25 if trial % 3 == 0 else None
        alpha, lam = rng.choice([0.1, 0.5, 1.0]), rng.choice([0.01, 0.1])
        lp = robust_lp(x0, w, b, alpha, lam, 1, lo, hi, imm, warm_start=False)
        a1 = alg1(x0, w, b, alpha, lam, 1, lo, hi, imm)
        assert lp.ok and a1.ok
        assert abs(lp.J - a1.J) <= 1e-6, (trial, lp.J, a1.J)


@pytest.mark.parametrize("bounded", [False, True])
def test_alg2_equals_the_convex_program_for_pinf(bounded):
    rng = np.random.default_rng(5 + bounded)
    for trial in range(25):
        x0, w, b, lo, hi = random_problem(rng, int(rng.integers(2, 8)), bounded)
        imm = rng.random(x0.size) < 0.25 if trial % 3 == 0 else None
        alpha, lam = rng.choice([0.0, 0.1, 0.5, 1.0]), rng.choice([0.01, 0.1, 0.5])
        lp = robust_lp(x0, w, b, alpha, lam, INF, lo, hi, imm, warm_start=False)
        a2 = alg2(x0, w, b, alpha, lam, lo, hi, imm)
        assert lp.ok
        assert abs(lp.J - a2.J) <= 1e-6, (trial, lp.J, a2.J)
        if imm is not None:
            assert (a2.x[imm] == x0[imm]).all() and (lp.x[imm] == x0[imm]).all()


def test_robust_lp_never_beats_its_own_lower_bound_and_alpha0_is_the_nominal_problem():
    rng = np.random.default_rng(7)
    x0, w, b, lo, hi = random_problem(rng, 5, True)
    nominal = alg2(x0, w, b, 0.0, 0.05, lo, hi)
    for p in (1, 2, INF):
        assert robust_lp(x0, w, b, 0.0, 0.05, p, lo, hi).J == pytest.approx(nominal.J, abs=1e-9)
        # a larger ball never lowers the optimal price
        js = [robust_lp(x0, w, b, a, 0.05, p, lo, hi).J for a in (0.0, 0.2, 0.8)]
        assert js == sorted(js)


def test_alg1_and_alg2_advice_is_worst_case_valid_on_german_fold():
    from lab.study.trials.robust import german_lr_fold

    w, b, X0 = german_lr_fold(2)
    for alpha, lam in ((0.1, 0.1), (0.5, 0.01)):
        X1 = np.stack([robust_lp(x, w, b, alpha, lam, 1).x for x in X0])  # = Alg.1 (above)
        X2 = np.stack([alg2(x, w, b, alpha, lam).x for x in X0])
        assert worst_case_valid(X1, w, b, alpha, 1).all()
        assert worst_case_valid(X2, w, b, alpha, INF).all()


# -- the identities inside [0, 1] (spec §5, note for users) ---------------------------
def test_l1_robustness_in_the_unit_box_is_a_logit_margin_of_alpha():
    rng = np.random.default_rng(8)
    X = rng.uniform(0, 1, (50, 6))
    w, b, alpha = rng.normal(size=6), -1.0, 0.3
    assert (augmented_norm(X, INF) == 1.0).all()
    np.testing.assert_allclose(worst_logit(X, w, b, alpha, 1), nominal_logit(X, w, b) - alpha)
    x0 = X[0]
    robust = robust_lp(x0, w, b, alpha, 0.05, 1, np.zeros(6), np.ones(6), warm_start=False)
    margin = alg2(x0, w, b - alpha, 0.0, 0.05, np.zeros(6), np.ones(6))
    assert robust.J == pytest.approx(margin.J, abs=1e-7)


def test_linf_robustness_in_the_unit_box_is_a_linear_model_with_weights_w_minus_alpha():
    rng = np.random.default_rng(9)
    X = rng.uniform(0, 1, (50, 6))
    w, b, alpha = rng.normal(size=6), -1.0, 0.3
    np.testing.assert_allclose(
        worst_logit(X, w, b, alpha, INF), nominal_logit(X, w - alpha, b - alpha)
    )
    x0 = X[1]
    robust = robust_lp(x0, w, b, alpha, 0.05, INF, np.zeros(6), np.ones(6), warm_start=False)
    shifted = alg2(x0, w - alpha, b - alpha, 0.0, 0.05, np.zeros(6), np.ones(6))
    assert robust.J == pytest.approx(shifted.J, abs=1e-7)


# -- §4: the paper's issues ---------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 3, INF])
def test_issue1_the_robust_price_is_convex_for_every_p(p):
    # Prop. 1 claims non-convexity; with BCE the worst-case price is convex (midpoints)
    rng = np.random.default_rng(10)
    w, b, alpha, lam = rng.normal(size=4), -0.5, 0.5, 0.1
    x0 = rng.normal(size=(1, 4))
    A, B = rng.normal(0, 2, (500, 4)), rng.normal(0, 2, (500, 4))
    f = lambda X: price(X, x0, w, b, alpha, lam, p)  # noqa: E731
    assert (f((A + B) / 2) <= (f(A) + f(B)) / 2 + 1e-12).all()


def test_issue1_the_proofs_worst_model_raises_the_score():
    # Prop. 1's example: θ₀ = 0, α = 0.5, x̃ = (x, 1); its "worst" model [0.5 sgn x, 0]
    x = np.array([[2.0], [-1.5]])
    theta_paper = np.hstack([0.5 * np.sign(x), np.zeros((2, 1))])
    paper_logit = (theta_paper * np.hstack([x, np.ones((2, 1))])).sum(axis=1)
    assert (paper_logit > 0).all()  # above θ₀'s logit 0: a helpful change
    assert (worst_logit(x, np.zeros(1), 0.0, 0.5, 1) < 0).all()


def test_issue2_alg1_underestimates_the_adversary_for_p2():
    rng = np.random.default_rng(11)
    x0, w, b, _, _ = random_problem(rng, 4, False)
    a1 = alg1(x0, w, b, 0.5, 0.05)  # Θ± is the same set whatever p is
    x = a1.x[None]
    # the price Alg. 1 optimises is the p = 1 price; the L2 adversary does better
    assert price(x, x0[None], w, b, 0.5, 0.05, 2)[0] > a1.J + 1e-3
    assert robust_lp(x0, w, b, 0.5, 0.05, 2).J > a1.J + 1e-3
    with pytest.raises(ConfigError, match=r"^p = 2 is not allowed"):
        alg1(x0, w, b, 0.5, 0.05, p=2)


def printed_alg2(x0, w, b, alpha, lam, cap):
    """Algorithm 2 as printed (sgn 0 = 0), with an iteration cap: (x, iterations)."""
    x, theta = x0.copy(), w - alpha * np.sign(x0)
    active, it = set(range(x0.size)), 0
    while active and it < cap:
        it += 1
        i = max(active, key=lambda j: abs(theta[j]))
        s, r = theta @ x + b - alpha, abs(theta[i])
        delta = (math.log(r / lam - 1) - s) / theta[i] if r > lam else 0.0
        if delta == 0 or (r > lam and s >= math.log(r / lam - 1)):
            break
        if np.sign(x[i] + delta) == np.sign(x[i]):
            x[i] += delta
            break
        x[i] = 0.0
        if abs(w[i]) > alpha:
            theta[i] = w[i] + alpha * np.sign(x0[i])
        else:
            active.discard(i)
    return x, it


def test_issue3_alg2_terminates_where_the_printed_algorithm_loops():
    x0, w, b, alpha, lam = np.array([0.0, 0.5]), np.array([3.0, 0.5]), -2.0, 0.1, 0.05
    _, iterations = printed_alg2(x0, w, b, alpha, lam, cap=1000)
    assert iterations == 1000  # x_0 = 0: line 14 sets it to 0, line 16 changes nothing
    ours = alg2(x0, w, b, alpha, lam)
    assert ours.J == pytest.approx(
        robust_lp(x0, w, b, alpha, lam, INF, warm_start=False).J, abs=1e-7
    )
    assert ours.x[0] > 0


@pytest.mark.parametrize(
    "x0, w",
    [
        (np.zeros(3), np.array([0.05, -0.05, 0.0])),  # every weight within α of 0 at x = 0
        (np.zeros(3), np.zeros(3)),  # nothing to gain anywhere
        (np.array([0.0, 1.0, -1.0]), np.array([0.0, 0.0, 0.0])),
        (np.array([0.0, 0.0, 2.0]), np.array([0.3, -0.4, 0.05])),
    ],
)
def test_issue3_alg2_terminates_on_zero_feature_cases(x0, w):
    a2 = alg2(x0, w, -1.0, 0.1, 0.01)
    assert a2.J == pytest.approx(
        robust_lp(x0, w, -1.0, 0.1, 0.01, INF, warm_start=False).J, abs=1e-7
    )


def test_issue3_alg2_with_everything_immutable_returns_x0():
    x0 = np.array([0.0, 0.3])
    a2 = alg2(x0, np.array([2.0, 1.0]), -1.0, 0.1, 0.01, immutable=np.array([True, True]))
    assert (a2.x == x0).all()


def test_issue4_roar_l1_adversary_lowers_the_score():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 3))
    w, b, alpha = rng.normal(size=3), 0.2, 0.5
    Xt = np.hstack([X, np.ones((40, 1))])
    k = np.argmax(np.abs(Xt), axis=1)
    public = np.tile(np.append(w, b), (40, 1))
    public[np.arange(40), k] += alpha * np.where(Xt[np.arange(40), k] >= 0, 1.0, -1.0)
    assert ((public * Xt).sum(axis=1) >= nominal_logit(X, w, b)).all()  # helpful, not adverse
    ours = worst_model(X, w, b, alpha, 1, zero_sign=1.0)
    np.testing.assert_allclose((ours * Xt).sum(axis=1), worst_logit(X, w, b, alpha, 1))


# -- ROAR -------------------------------------------------------------------------------
def test_roar_is_deterministic_and_keeps_bounds_and_immutables():
    rng = np.random.default_rng(13)
    X0 = rng.uniform(0, 1, (6, 4))
    w, b = np.array([3.0, -2.0, 1.0, 0.5]), -1.0
    imm = np.array([False, False, True, False])
    X1, s1 = roar(X0, w, b, 0.1, 0.1, INF, np.zeros(4), np.ones(4), imm, max_steps=3000)
    X2, s2 = roar(X0, w, b, 0.1, 0.1, INF, np.zeros(4), np.ones(4), imm, max_steps=3000)
    assert (X1 == X2).all() and (s1 == s2).all()
    assert (X1 >= 0).all() and (X1 <= 1).all() and (X1[:, 2] == X0[:, 2]).all()
    # it lowers the robust price it descends
    assert (price(X1, X0, w, b, 0.1, 0.1, INF) < price(X0, X0, w, b, 0.1, 0.1, INF)).all()


# -- linearisation --------------------------------------------------------------------
class Quadratic:
    """A non-linear Scorer: σ(x₀² + 2x₁ − 1); its logit's gradient is (2x₀, 2)."""

    is_linear = False
    weights = intercept = None

    def score(self, X):
        return 1 / (1 + np.exp(-(X[:, 0] ** 2 + 2 * X[:, 1] - 1)))


def test_linearise_is_exact_for_linear_and_central_differences_otherwise():
    s = LinearScorer([1.0, -2.0], 0.5)
    w, b = linearise(s, np.zeros((3, 2)))
    assert (w == [1.0, -2.0]).all() and b == 0.5
    X = np.array([[0.3, 0.2], [0.7, 0.9]])
    W, B = linearise(Quadratic(), X)
    np.testing.assert_allclose(W, np.column_stack([2 * X[:, 0], [2.0, 2.0]]), atol=1e-6)
    np.testing.assert_allclose((W * X).sum(axis=1) + B, X[:, 0] ** 2 + 2 * X[:, 1] - 1, atol=1e-9)


# -- §6: bad input ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": math.nan}, "alpha"),
        ({"alpha": math.inf}, "alpha"),
        ({"lam": 0.0}, "lam"),
        ({"lam": -1.0}, "lam"),
        ({"p": 0.5}, "p"),
    ],
)
def test_solver_bad_input_is_one_line_naming_the_field(kwargs, field):
    args = {"alpha": 0.1, "lam": 0.1, "p": 1, **kwargs}
    with pytest.raises(ConfigError) as err:
        robust_lp(np.zeros(2), np.ones(2), 0.0, args["alpha"], args["lam"], args["p"])
    assert str(err.value).startswith(f"{field} = ") and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "spec, field",
    [
        ("robust-l1:alpha=-1", "alpha"),
        ("robust-l1:alpha=nan", "alpha"),
        ("robust-linf:lam=0", "lam"),
        ("robust-l1:p=2", "p"),
        ("robust-l2:p=inf", "p"),
        ("roar-linf:p=1", "p"),
        ("robust-l1:target=median", "target"),
    ],
)
def test_policy_bad_input_is_one_line_naming_the_field(spec, field):
    with pytest.raises(ConfigError) as err:
        REGISTRY.make_policy(spec)
    text = str(err.value)
    assert f"{field} = " in text and "\n" not in text


def test_direct_construction_checks_too():
    with pytest.raises(ConfigError, match=r"^roar: p = 2 is not allowed"):
        RobustPolicy("roar", 0.1, 0.1, 2, name="roar")
    with pytest.raises(ConfigError, match="target"):
        RobustPolicy("lp", 0.1, 0.1, 1, "median")


@pytest.mark.parametrize("value", [-1, 2.5])
def test_retrain_every_must_be_a_nonnegative_integer(value):
    with pytest.raises(ConfigError, match="retrain_every"):
        ScenarioConfig(retrain_every=value)


def test_scorer_with_nan_weights_is_refused():
    with pytest.raises(ConfigError, match=r"^decision_model.weights = nan"):
        linearise(LinearScorer([1.0, math.nan], 0.0), np.zeros((1, 2)))


# -- §5: the policies ---------------------------------------------------------------------
def context(scorer, z=3, immutable=()):
    imm = np.zeros(z, bool)
    imm[list(immutable)] = True
    return PolicyContext(
        decision_model=scorer,
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=imm,
        difficulty=np.full(z, 0.5),
        k=1,
        m=1,
        validity=1,
        beta=0.05,
        ticks=1,
    )


def observation(X, scorer, threshold):
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    s = scorer.score(X)
    return RecourseObs(
        tick=0,
        threshold=threshold,
        applicant_ids=np.arange(n),
        applicant_X=X,
        applicant_scores=s,
        accepted=np.zeros(n, bool),
        ids=np.arange(n),
        X=X,
        scores=s,
        n_applications=np.ones(n, np.int64),
        decision_model=scorer,
    )


def test_all_five_policies_are_registered():
    names = set(REGISTRY.describe())
    assert {"robust-l1", "robust-l2", "robust-linf", "roar-l1", "roar-linf"} <= names


def test_threshold_target_aims_past_the_cut_by_the_bce_optimum():
    scorer = LinearScorer([6.0, 1.0, 0.5], -4.0)
    pol = REGISTRY.make_policy("robust-l1:alpha=0.2,lam=1")
    pol.prepare(context(scorer, immutable=(2,)))
    obs = observation([[0.2, 0.1, 0.3]], scorer, threshold=0.3)
    rec = pol.recommend(obs, np.random.default_rng(0))
    # the best feature (w = 6) moves until σ(−(s_wc − logit th))·6 = λ: s_wc − logit th = log 5
    s_wc = worst_logit(rec.X_cf, scorer.weights, scorer.intercept, 0.2, 1)[0]
    assert s_wc - math.log(0.3 / 0.7) == pytest.approx(math.log(5.0), abs=1e-6)
    assert 0.2 < rec.X_cf[0, 0] < 1 and rec.X_cf[0, 1] == 0.1  # inside the box, one feature
    assert rec.X_cf[0, 2] == 0.3 and rec.advised[0]
    assert rec.goal[0] == pytest.approx(scorer.score(rec.X_cf)[0])
    assert rec.info["wc_score"][0] == pytest.approx(1 / (1 + math.exp(-s_wc)))
    half = REGISTRY.make_policy("robust-l1:alpha=0.2,lam=1,target=half")
    half.prepare(context(scorer, immutable=(2,)))
    s_half = worst_logit(
        half.recommend(obs, np.random.default_rng(0)).X_cf, scorer.weights, scorer.intercept, 0.2, 1
    )[0]
    assert s_half == pytest.approx(math.log(5.0), abs=1e-6)


def test_price_of_robustness_is_the_cost_ratio_to_the_alpha0_optimum():
    scorer = LinearScorer([4.0, 1.0, 0.5], -4.0)
    obs = observation([[0.2, 0.1, 0.3], [0.4, 0.5, 0.1]], scorer, threshold=0.3)
    costs = {}
    for alpha in (0.0, 0.3):
        pol = REGISTRY.make_policy(f"robust-linf:alpha={alpha},lam=1")
        pol.prepare(context(scorer))
        rec = pol.recommend(obs, np.random.default_rng(0))
        costs[alpha] = np.abs(rec.X_cf - obs.X).sum(axis=1).mean()
        stats = pol.tick_stats()
        assert stats["n_clipped"] == 0 and stats["solver_fallbacks"] == 0
        expected = costs[alpha] / costs[0.0] - 1
        assert stats["price_of_robustness"] == pytest.approx(expected, abs=1e-12)
        assert math.isnan(pol.tick_stats()["price_of_robustness"])  # reset once read
    assert costs[0.3] > costs[0.0]


def test_rows_outside_the_box_are_clipped_and_counted():
    scorer = LinearScorer([4.0, 1.0, 0.5], -4.0)
    pol = REGISTRY.make_policy("robust-linf")
    pol.prepare(context(scorer))
    obs = observation([[1.2, 0.1, 0.3], [0.4, -0.5, 0.1], [0.1, 0.1, 0.1]], scorer, 0.3)
    rec = pol.recommend(obs, np.random.default_rng(0))
    assert pol.tick_stats()["n_clipped"] == 2
    assert (rec.X_cf[rec.advised] >= 0).all() and (rec.X_cf[rec.advised] <= 1).all()


def test_solver_failure_falls_back_and_warns_once(monkeypatch):
    from policies.robust.solvers import Solution

    def failing(x0, *args, **kwargs):
        return Solution(np.asarray(x0, dtype=float), math.inf, False)

    monkeypatch.setattr(robust_policy, "robust_lp", failing)
    scorer = LinearScorer([4.0, 1.0, 0.5], -4.0)
    obs = observation([[0.2, 0.1, 0.3], [0.4, 0.5, 0.1]], scorer, threshold=0.3)
    for name, p in (("robust-l1", 1), ("robust-linf", INF)):
        pol = REGISTRY.make_policy(f"{name}:alpha=0.2,lam=1")
        pol.prepare(context(scorer))
        pol.exact = False  # the convex program's path, where SLSQP can fail
        with pytest.warns(RuntimeWarning, match="SLSQP failed"):
            rec = pol.recommend(obs, np.random.default_rng(0))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pol.recommend(obs, np.random.default_rng(0))  # warned once
        assert pol.tick_stats()["solver_fallbacks"] == 2
        ref = np.stack(
            [
                robust_lp(
                    x,
                    scorer.weights,
                    scorer.intercept - math.log(0.3 / 0.7),
                    0.2,
                    1.0,
                    p,
                    np.zeros(3),
                    np.ones(3),
                ).x
                for x in obs.X
            ]
        )
        np.testing.assert_allclose(rec.X_cf, ref, atol=1e-6)


SMALL = dict(n_initial=8, m=5, k=3, ticks=12, retrain_every=4)


def test_episode_under_retraining_records_robust_columns_and_is_deterministic():
    runs = [
        RecourseModel(
            "retraining", "robust-linf:alpha=0.3,lam=2", seed=3, agents=False, **SMALL
        ).run()
        for _ in range(2)
    ]
    ticks = [m.tick_table() for m in runs]
    assert ticks[0].equals(ticks[1])
    t = ticks[0]
    assert {"policy_price_of_robustness", "policy_solver_fallbacks", "valid_retrained"} <= set(t)
    assert (t["policy_price_of_robustness"].dropna() >= 0).all()
    assert t["model_version"].iloc[-1] == 2
    ev = runs[0].candidate_table()
    adv = ev["goal"].notna()
    assert adv.any() and ev.loc[adv, ["wc_score", "price_J"]].notna().all().all()
    # L-inf in [0, 1]: the worst case is a linear model with weights w - alpha
    assert (ev.loc[adv, "wc_score"] <= ev.loc[adv, "goal"] + 1e-12).all()


def test_policies_follow_the_model_in_force():
    scorer0 = LinearScorer([4.0, 1.0, 0.5], -4.0)
    scorer1 = LinearScorer([0.5, 1.0, 4.0], -4.0)
    pol = REGISTRY.make_policy("robust-l2:alpha=0.1,lam=1")
    pol.prepare(context(scorer0))
    obs = observation([[0.2, 0.1, 0.3]], scorer1, threshold=0.3)
    rec = pol.recommend(obs, np.random.default_rng(0))
    moved = np.abs(rec.X_cf - obs.X)[0]
    assert moved.argmax() == 2  # the refitted model's strongest feature
    assert rec.goal[0] == pytest.approx(scorer1.score(rec.X_cf)[0])


def test_a_policy_refuses_a_scorer_with_nan_weights():
    pol = REGISTRY.make_policy("robust-l1")
    with pytest.raises(ConfigError, match=r"^decision_model.weights = nan"):
        pol.prepare(context(LinearScorer([1.0, math.nan, 0.0], 0.0)))


def test_kappa_sets_lam_from_the_largest_mutable_weight():
    """λ_t = κ · max_j |w_j| over mutable features: the same κ whatever the weights' scale."""
    for preset in ("paper", "german-credit"):
        model = RecourseModel(
            preset, "robust-l1:kappa=0.4", seed=0, ticks=3, agents=False, record_events=False
        )
        W, _ = linearise(model.context.decision_model, np.zeros((1, model.config.n_features)))
        w = np.abs(np.ravel(W))[~np.asarray(model.context.immutable)]
        lam = model.run().tick_table()["policy_lam"].dropna().to_numpy()
        assert lam.size and np.all(lam == 0.4 * w.max())
    explicit = (
        RecourseModel(
            "paper", "robust-l1:lam=2", seed=0, ticks=2, agents=False, record_events=False
        )
        .run()
        .tick_table()["policy_lam"]
    )
    assert set(explicit.dropna()) == {2.0}  # an explicit lam is absolute


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("robust-l1:lam=2,kappa=0.4", "give lam (absolute) or kappa"),
        ("roar-l1:kappa=1.5", "kappa"),
        ("robust-l2:kappa=0", "kappa"),
    ],
)
def test_lam_and_kappa_errors_name_the_field(spec, words):
    with pytest.raises(ConfigError) as info:
        make_policy(spec)
    message = str(info.value)
    assert words in message and "\n" not in message


def test_backoff_halves_lam_until_a_row_bound_at_its_best_feature_reaches_the_cut():
    """w = (4, 1, 0.5), x0 = (0.9, 0, 0), cut 0.6: the best feature meets its bound at
    ℓ = s − logit 0.6 = −0.405; feature 1 pays only while σ(−ℓ)·1 > λ, so neither λ = 1.5
    nor λ/2 moves it (σ(0.405) = 0.6), and λ/4 = 0.375 stops it at ℓ = log(5/3)."""
    scorer = LinearScorer([4.0, 1.0, 0.5], -4.0)
    obs = observation([[0.9, 0.0, 0.0]], scorer, threshold=0.6)
    stuck = REGISTRY.make_policy("robust-l1:alpha=0,lam=1.5,backoff=0")
    stuck.prepare(context(scorer))
    rec = stuck.recommend(obs, np.random.default_rng(0))
    assert not rec.advised[0] and rec.unreached[0]
    assert stuck.tick_stats()["backed_off"] == 0.0
    pol = REGISTRY.make_policy("robust-l1:alpha=0,lam=1.5,backoff=6")
    pol.prepare(context(scorer))
    rec = pol.recommend(obs, np.random.default_rng(0))
    assert rec.advised[0] and rec.goal[0] >= 0.6
    assert rec.info["lam"][0] == pytest.approx(1.5 / 4)
    assert rec.X_cf[0, 0] == 1.0 and 0.0 < rec.X_cf[0, 1] < 1.0 and rec.X_cf[0, 2] == 0.0
    s = scorer.weights @ rec.X_cf[0] + scorer.intercept
    assert s - math.log(0.6 / 0.4) == pytest.approx(math.log(5 / 3), abs=1e-6)
    assert pol.tick_stats() == pytest.approx(
        {
            "lam": 1.5,
            "backed_off": 1.0,
            "price_of_robustness": 0.0,
            "solver_fallbacks": 0.0,
            "n_clipped": 0.0,
        }
    )
    one = REGISTRY.make_policy("robust-l1:alpha=0,lam=1.5,backoff=1")
    one.prepare(context(scorer))
    assert not one.recommend(obs, np.random.default_rng(0)).advised[0]  # λ/2 is not enough


@pytest.mark.parametrize("value", ["-1", "21", "1.5"])
def test_backoff_must_be_a_small_nonnegative_integer(value):
    with pytest.raises(ConfigError) as info:
        make_policy(f"roar-l1:backoff={value}")
    assert "backoff" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["robust-l1", "robust-linf"])
def test_the_greedy_fast_path_reaches_the_convex_programs_optimum(name):
    """On random linear models and rows in [0, 1]^4 (one feature immutable), the greedy
    advice's price is never above SLSQP's on the same rows (equal to 1e-6 where both are
    optimal), and its worst-case logit reaches the same target."""
    rng = np.random.default_rng(7)
    p = 1.0 if name == "robust-l1" else math.inf
    for trial in range(6):
        scorer = LinearScorer(rng.uniform(-1.0, 5.0, 4), float(rng.uniform(-6.0, -2.0)))
        X = rng.uniform(0.0, 0.6, (12, 4))
        alpha, lam = float(rng.uniform(0.0, 0.4)), float(rng.uniform(0.3, 2.0))
        prices = {}
        for exact in (True, False):
            pol = REGISTRY.make_policy(f"{name}:alpha={alpha},lam={lam},backoff=0")
            pol.prepare(context(scorer, z=4, immutable=(3,)))
            pol.exact = exact
            assert pol._greedy_exact() is exact
            X_cf, _ = pol.solve(X, scorer.weights, scorer.intercept)
            assert (X_cf[:, 3] == X[:, 3]).all() and (X_cf >= 0).all() and (X_cf <= 1).all()
            prices[exact] = price(X_cf, X, scorer.weights, scorer.intercept, alpha, lam, p)
        assert (prices[True] <= prices[False] + 1e-9).all(), trial
        np.testing.assert_allclose(prices[True], prices[False], atol=1e-6)


def test_the_batched_l2_solver_reaches_the_convex_programs_optimum():
    """robust_l2_batch against SLSQP's robust_lp (p = 2) on random boxes (some straddling
    0), weights of both signs, immutable features, balls from 0.02 to 1 and λ from 0.01 to
    2: its price is never above SLSQP's by more than 1e-12 and equal within 1e-8; the
    points agree within 1e-4 (SLSQP's own accuracy)."""
    rng = np.random.default_rng(34)
    for trial in range(24):
        z, n = int(rng.integers(2, 11)), 5
        w = rng.normal(0.0, 2.0, z) if trial % 2 else rng.uniform(0.0, 5.0, z)
        b = rng.normal(-4.0, 2.0, n)
        if trial % 3 == 0:
            lo, hi = np.zeros(z), np.ones(z)
        else:
            lo = rng.uniform(-2.0, 0.0, z)
            hi = lo + rng.uniform(0.5, 3.0, z)
        X0 = rng.uniform(lo, hi, (n, z))
        X0[rng.random((n, z)) < 0.2] = 0.0
        X0 = np.clip(X0, lo, hi)
        imm = rng.random(z) < 0.25 if trial % 4 == 0 else None
        alpha, lam = float(rng.choice([0.02, 0.1, 0.5, 1.0])), float(rng.choice([0.01, 0.1, 2.0]))
        X, ok = robust_l2_batch(X0, w, b, alpha, lam, lo, hi, imm)
        assert ok.all(), trial
        fast = price(X, X0, w, b, alpha, lam, 2)
        for i in range(n):
            ref = robust_lp(X0[i], w, b[i], alpha, lam, 2, lo, hi, imm)
            assert ref.ok
            assert fast[i] <= ref.J + 1e-12, (trial, i, fast[i], ref.J)
            assert fast[i] == pytest.approx(ref.J, abs=1e-8), (trial, i)
            np.testing.assert_allclose(X[i], ref.x, atol=1e-4)
        if imm is not None:
            assert (X[:, imm] == X0[:, imm]).all()
        assert (X >= lo).all() and (X <= hi).all()


def test_robust_l2_uses_the_batched_solver_and_matches_slsqp():
    """The registered robust-l2 (exact on) gives SLSQP's prices within 1e-8 on the same
    rows; unbounded boxes and α = 0 are refused by the batched solver (SLSQP's job)."""
    rng = np.random.default_rng(35)
    scorer = LinearScorer(rng.uniform(-1.0, 5.0, 4), -4.0)
    X = rng.uniform(0.0, 0.6, (10, 4))
    prices = {}
    for exact in (True, False):
        pol = REGISTRY.make_policy("robust-l2:alpha=0.1,lam=0.5,backoff=0")
        pol.prepare(context(scorer, z=4, immutable=(3,)))
        pol.exact = exact
        assert pol._l2_exact() is exact
        X_cf, fallbacks = pol.solve(X, scorer.weights, scorer.intercept)
        assert fallbacks == 0 and (X_cf[:, 3] == X[:, 3]).all()
        prices[exact] = price(X_cf, X, scorer.weights, scorer.intercept, 0.1, 0.5, 2)
    np.testing.assert_allclose(prices[True], prices[False], atol=1e-8)
    assert (prices[True] <= prices[False] + 1e-12).all()
    for kwargs in ({"lower": None, "upper": None}, {"alpha": 0.0}):
        args = {"alpha": 0.1, "lower": np.zeros(4), "upper": np.ones(4), **kwargs}
        with pytest.raises(ConfigError):
            robust_l2_batch(
                X, scorer.weights, -4.0, args["alpha"], 0.5, args["lower"], args["upper"]
            )


def _roar_plain(X0, w, b, alpha, lam, p, lo, hi, imm, max_steps, lr=1e-3, tol=1e-4):
    """ROAR as 0.8.2 wrote it, one row set per step and the stopping test every step: the
    reference the blocked, in-place loop of :func:`roar` must match bit for bit."""
    from scipy.special import expit

    z = X0.shape[1]
    lo = np.full(z, -np.inf) if lo is None else lo
    hi = np.full(z, np.inf) if hi is None else hi
    fixed = np.zeros(z, bool) if imm is None else imm
    X0 = np.clip(X0, lo, hi)
    n = X0.shape[0]
    X, steps = X0.copy(), np.zeros(n, dtype=np.int64)
    live, Xl, X0l = np.arange(n), X0.copy(), X0.copy()
    Wl = np.array(np.broadcast_to(np.asarray(w, dtype=float), (n, z)))
    Bl = np.array(np.broadcast_to(np.asarray(b, dtype=float), (n,)))
    ml, vl, prev = np.zeros((n, z)), np.zeros((n, z)), np.full(n, np.inf)
    t = 0
    for t in range(1, max_steps + 1):
        if live.size == 0:
            break
        wa, ba = _roar_adversary(Xl, Wl, Bl, alpha, p)
        s = np.add.reduce(wa * Xl, axis=1) + ba
        moved = Xl - X0l
        J = softplus_neg(s) + lam * np.add.reduce(np.abs(moved), axis=1)
        grad = -expit(-s)[:, None] * wa + lam * np.sign(moved)
        if fixed.any():
            grad = grad * (~fixed).astype(float)
        ml = 0.9 * ml + (1 - 0.9) * grad
        vl = 0.999 * vl + (1 - 0.999) * grad * grad
        step = lr * (ml / (1 - 0.9**t)) / (np.sqrt(vl / (1 - 0.999**t)) + 1e-8)
        Xl = np.minimum(np.maximum(Xl - step, lo), hi)
        done = np.abs(J - prev) <= tol
        prev = J
        if done.any():
            X[live[done]], steps[live[done]] = Xl[done], t
            keep = ~done
            live, Xl, X0l, Wl, Bl = live[keep], Xl[keep], X0l[keep], Wl[keep], Bl[keep]
            ml, vl, prev = ml[keep], vl[keep], prev[keep]
    X[live], steps[live] = Xl, t
    return X, steps


def test_roar_is_bit_for_bit_the_plain_adam_loop():
    """The blocked loop (stopping test once per block, in-place arrays, the adversary's
    weights precomputed) gives every point and step count of the plain loop, bit for bit:
    p = 1, inf and 2, boxes [0, 1], straddling 0 and none, immutable features, one model
    per row, step caps inside and at the edges of a block."""
    rng = np.random.default_rng(34)
    for trial in range(30):
        z, n = int(rng.integers(1, 12)), int(rng.integers(1, 9))
        p = (1.0, INF, 2.0)[trial % 3]
        w = rng.normal(0, 2, z) if trial % 4 else rng.normal(0, 2, (n, z))
        b = float(rng.normal(-2, 1)) if trial % 5 else rng.normal(-2, 1, n)
        lo, hi = [
            (np.zeros(z), np.ones(z)),
            (None, None),
            (rng.uniform(-2, 0, z), rng.uniform(0, 2, z)),
        ][trial % 3 if trial % 2 else 0]
        X0 = rng.normal(0.3, 1, (n, z))
        X0[rng.random((n, z)) < 0.2] = 0.0
        imm = rng.random(z) < 0.3 if trial % 6 == 0 else None
        alpha = float(rng.choice([0.0, 0.05, 0.5, 1.0]))
        lam = float(rng.choice([0.01, 0.1, 1.0]))
        cap = int(rng.choice([1, 16, 17, 37, 200_000]))
        X1, s1 = roar(X0, w, b, alpha, lam, p, lo, hi, imm, max_steps=cap)
        X2, s2 = _roar_plain(X0, w, b, alpha, lam, p, lo, hi, imm, cap)
        assert (X1.view(np.int64) == X2.view(np.int64)).all(), trial
        assert (s1 == s2).all(), trial


def test_alg2_rows_is_alg2_row_by_row_bit_for_bit():
    rng = np.random.default_rng(35)
    for trial in range(60):
        z, n = int(rng.integers(1, 12)), int(rng.integers(1, 10))
        w = rng.normal(0, 2, z) if trial % 3 else rng.normal(0, 2, (n, z))
        b = rng.normal(-2, 2) if trial % 2 else rng.normal(-2, 2, n)
        lo, hi = [
            (np.zeros(z), np.ones(z)),
            (None, None),
            (rng.uniform(-2, 0, z), rng.uniform(0, 2, z)),
        ][trial % 3]
        X0 = rng.normal(0, 1, (n, z))
        X0[rng.random((n, z)) < 0.3] = 0.0
        imm = rng.random(z) < 0.3 if trial % 5 == 0 else None
        alpha = float(rng.choice([0.0, 0.05, 0.5, 3.0]))
        lam = float(rng.choice([0.01, 0.1, 1.0, 5.0]))
        W, B = np.broadcast_to(w, (n, z)), np.broadcast_to(b, (n,))
        rows = np.stack(
            [alg2(X0[i], W[i], float(B[i]), alpha, lam, lo, hi, imm).x for i in range(n)]
        )
        both = alg2_rows(X0, w, b, alpha, lam, lo, hi, imm)
        assert (rows.view(np.int64) == both.view(np.int64)).all(), trial
