"""The ``safear`` policy inside the population model."""

import numpy as np
import pandas as pd
import pytest

from abm import RecourseModel
from abm.interfaces import LinearScorer, PolicyContext, RecourseObs
from abm.registry import make_policy
from policies.safear import SafeARPolicy


def context(w=(2.0, 2.0, 2.0), b=-3.0, d=(0.9, 0.3, 0.6), beta=0.05, immutable=None):
    z = len(w)
    imm = np.zeros(z, bool) if immutable is None else np.asarray(immutable, bool)
    return PolicyContext(
        decision_model=LinearScorer(w, b),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=imm,
        difficulty=np.asarray(d, float),
        k=1,
        m=1,
        validity=1,
        beta=beta,
        ticks=1,
    )


def plan(beta_risk, X, goal=0.5, ctx=None, **kw):
    pol = SafeARPolicy(beta_risk=beta_risk, **kw)
    pol.prepare(ctx or context())
    n = X.shape[0]
    return pol.plan(X, np.full(n, goal), np.full(n, float(beta_risk)), np.random.default_rng(1))


def obs(X, threshold, risk=None):
    n = X.shape[0]
    ids = np.arange(n)
    extra = {} if risk is None else {"risk_aversion": np.asarray(risk, float)}
    return RecourseObs(
        tick=0,
        threshold=threshold,
        applicant_ids=ids,
        applicant_X=X,
        applicant_scores=np.zeros(n),
        accepted=np.zeros(n, bool),
        ids=ids,
        X=X,
        scores=np.zeros(n),
        n_applications=np.ones(n, int),
        extra=extra,
    )


X0 = np.random.default_rng(0).uniform(0.2, 0.5, (120, 3))


def test_recommendations_reach_goal_and_respect_bounds_and_immutables():
    ctx = context(w=(2.0, 3.0, 2.0), d=(0.5, 0.2, 0.6), immutable=(False, True, False))
    rec = plan(0.5, X0, ctx=ctx)
    assert np.all((rec.X_cf >= 0) & (rec.X_cf <= 1))
    assert np.array_equal(rec.X_cf[:, 1], X0[:, 1])  # immutable (and the most useful) feature
    ok = np.isfinite(rec.info["exp_cost"])
    assert ok.mean() > 0.9
    # where the plan can succeed, its target reaches the goal; moves only go up (w > 0)
    assert np.all(ctx.decision_model.score(rec.X_cf[ok]) >= 0.5 - 1e-9)
    assert np.all(rec.X_cf >= X0 - 1e-15)
    assert np.all((rec.info["plan_rho"][ok] > 0) & (rec.info["plan_rho"][ok] <= 1))


def test_already_at_goal_gets_no_advice():
    X = np.array([[0.9, 0.9, 0.9], [0.2, 0.3, 0.4]])
    rec = plan(0.0, X)
    assert np.array_equal(rec.X_cf[0], X[0])
    assert rec.advised.tolist() == [False, True] and not rec.unreached.any()
    assert np.isnan(rec.goal[0]) and np.isnan(rec.info["exp_cost"][0])
    assert rec.info["exp_cost"][1] > 0


def test_goal_out_of_reach_is_no_advice_not_a_bound_push():
    X = np.array([[0.1, 0.1, 0.1], [0.2, 0.3, 0.4]])
    rec = plan(0.0, X, goal=0.9999)  # above the score of the box's best corner
    assert not rec.advised.any() and rec.unreached.all()
    assert np.array_equal(rec.X_cf, X) and np.isnan(rec.goal).all()


def test_higher_risk_aversion_lowers_cost_variance():
    var = [np.nanmean(plan(b, X0).info["cost_var"]) for b in (0.0, 1.0, 3.0)]
    assert var[0] > var[1] > var[2]
    # beta = 0 is the risk-neutral optimum of the planning criterion: its expected effort
    # (plus fail_cost times the failure probability) is the smallest
    crit = []
    for b in (0.0, 3.0):
        i = plan(b, X0).info
        crit.append(np.nanmean(i["exp_cost"] + 1.0 * (1 - i["plan_rho"])))
    assert crit[0] <= crit[1] + 1e-12


def test_one_level_moves_and_retries_are_options():
    rec = plan(0.5, X0, max_jump=1, retry=1, horizon=12)
    ok = np.isfinite(rec.info["exp_cost"])
    assert ok.any() and np.all(context().decision_model.score(rec.X_cf[ok]) >= 0.5 - 1e-9)


def test_per_candidate_risk_aversion_is_used_and_parameter_overrides_it():
    ctx = context()
    X = X0[:40]
    risk = np.r_[np.zeros(20), np.full(20, 3.0)]
    own = SafeARPolicy()
    own.prepare(ctx)
    mixed = own.recommend(obs(X, 0.5, risk), np.random.default_rng(1))
    assert np.array_equal(mixed.info["beta_risk"], risk)
    for lo, b in ((slice(0, 20), 0.0), (slice(20, 40), 3.0)):
        alone = plan(b, X[lo])
        np.testing.assert_array_equal(mixed.X_cf[lo], alone.X_cf)
        np.testing.assert_allclose(mixed.info["cost_var"][lo], alone.info["cost_var"])
    fixed = SafeARPolicy(beta_risk=0.0)
    fixed.prepare(ctx)
    rec = fixed.recommend(obs(X, 0.5, risk), np.random.default_rng(1))
    assert np.all(rec.info["beta_risk"] == 0.0)
    np.testing.assert_array_equal(rec.X_cf[20:], plan(0.0, X[20:]).X_cf)
    assert not np.array_equal(rec.X_cf[20:], mixed.X_cf[20:])


def test_in_model_info_columns_determinism_and_immutables():
    kw = dict(seed=3, ticks=15, agents=False, immutable=[0, 2], risk_aversion=[0.0, 2.0])
    a = RecourseModel("paper", "safear", **kw).run()
    b = RecourseModel("paper", "safear", **kw).run()
    ta, tb = a.candidate_table(), b.candidate_table()
    pd.testing.assert_frame_equal(ta, tb)
    pd.testing.assert_frame_equal(a.tick_table(), b.tick_table())
    for col in ("exp_cost", "var95", "cvar95", "cost_var", "plan_rho", "beta_risk"):
        assert col in ta.columns
    rej = ta[~ta["accepted"].astype(bool)]
    assert rej["exp_cost"].notna().mean() > 0.9
    assert rej["beta_risk"].between(0, 2).all() and rej["beta_risk"].nunique() > 10
    assert (ta[["dx_0", "dx_2"]] == 0).all().all()
    # plans that can succeed reach their goal
    ok = rej["exp_cost"].notna()
    assert (rej.loc[ok, "cf_score"] >= rej.loc[ok, "goal"] - 1e-6).all()
    assert a.tick_table()["n_unreached"].sum() <= (~ok).sum()


def test_bad_parameters_are_rejected():
    for spec in (
        "safear:beta_risk=-1",
        "safear:levels=1",
        "safear:n_features=9",
        "safear:risk=cvar",
        "safear:max_jump=7",
        "safear:retry=2",
        "safear:fail_cost=-1",
    ):
        with pytest.raises(ValueError, match="safear"):
            make_policy(spec)
    pol = SafeARPolicy()
    pol.prepare(context())
    with pytest.raises(ValueError, match="risk_aversion"):
        pol.recommend(obs(X0[:3], 0.5, risk=[0.0, 1.0]), np.random.default_rng(0))
