"""Invariants of the tick that must hold for every scenario and policy."""

import numpy as np
import pytest

from abm import RecourseModel
from abm.registry import make_policy

POLICIES = ["threshold", "threshold-true", "threshold-estimated", "none"]


def _step_all(model):
    """Yield the model after every tick."""
    while model.running:
        model.step()
        yield model


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("scenario", ["paper", "paper-T5-hard"])
def test_conservation_and_top_k(scenario, policy):
    model = RecourseModel(scenario, policy, seed=3, ticks=60)
    c = model.config
    entered = accepted = dropped = 0
    for m in _step_all(model):
        row = m.last_row
        entered += row["n_new"]
        accepted += row["n_accepted"]
        dropped += row["n_dropped"]
        # conservation: everyone who ever entered is accepted, dropped or still waiting
        assert entered == accepted + dropped + len(m.population)
        assert row["n_accepted"] == min(c.k, row["n_applicants"])
        assert row["n_applicants"] == row["n_new"] + row["n_reapplied"]
        assert row["n_rejected"] == row["n_applicants"] - row["n_accepted"]
        assert row["n_waiting"] == len(m.population) == len(m.candidates)


@pytest.mark.parametrize("policy", POLICIES)
def test_features_stay_in_unit_box(policy):
    model = RecourseModel("paper-T5", policy, seed=1, ticks=50)
    for m in _step_all(model):
        for col in ("X", "X_obs", "X_cf"):
            values = m.population.data[col]
            assert values.min(initial=0.0) >= 0.0 and values.max(initial=1.0) <= 1.0


def test_immutable_features_never_change():
    model = RecourseModel("paper-T5", "threshold", seed=2, ticks=60, immutable=(1, 4, 9))
    first_seen = {}
    for m in _step_all(model):
        for cid, x in zip(m.population.ids.tolist(), m.population.X, strict=True):
            first_seen.setdefault(cid, x[[1, 4, 9]].copy())
            np.testing.assert_array_equal(x[[1, 4, 9]], first_seen[cid])
    events = model.candidate_table()
    for i in (1, 4, 9):
        assert (events[f"dx_{i}"] == 0).all()
        assert (events[f"ok_{i}"] == -1).all()
    # the other features were changed, so the test would notice a leak
    assert (events["dx_0"] != 0).any() or (events["dx_2"] != 0).any()


@pytest.mark.parametrize("scenario", ["paper", "paper-T5", "paper-T5-hard"])
def test_nobody_waits_longer_than_validity(scenario):
    model = RecourseModel(scenario, "threshold", seed=5)
    T = model.config.validity
    for m in _step_all(model):
        # after tick t everyone waiting applied at most T-1 ticks ago, so reapplies by t + T
        assert (m.tick - m.population.last_tick <= T).all()
    events = model.candidate_table()
    gaps = events.sort_values(["cid", "tick"]).groupby("cid")["tick"].diff().dropna()
    assert gaps.max() <= T
    if T > 1:
        assert gaps.min() >= 1 and gaps.nunique() > 1  # reapplication timing does vary


def test_hidden_changes_are_invisible_until_reapplication(spy_policy):
    # goals above the threshold need several features, so partial successes (which leave a
    # gap and keep the candidate waiting with hidden changes) occur
    spy = spy_policy(make_policy("last-threshold:margin=0.1+exact-linear"))
    model = RecourseModel("paper-T5", spy, seed=0, ticks=60)
    hidden_seen = 0
    while model.running:
        truth = {
            cid: x.copy() for cid, x in zip(model.population.ids, model.population.X, strict=True)
        }
        seen_obs = {
            cid: x.copy()
            for cid, x in zip(model.population.ids, model.population.X_obs, strict=True)
        }
        model.step()
        obs = spy.seen[-1]
        hist = obs.history
        returned = set(obs.applicant_ids.tolist()) & set(truth)
        for cid, x in zip(hist.ids.tolist(), hist.X, strict=True):
            if cid in seen_obs:  # waiting candidates are shown as last seen, not as they are
                np.testing.assert_array_equal(x, seen_obs[cid])
                hidden_seen += int(not np.array_equal(truth[cid], seen_obs[cid]))
        for cid, x in zip(obs.applicant_ids.tolist(), obs.applicant_X, strict=True):
            if cid in returned:  # on reapplication the decision-maker sees the true features
                np.testing.assert_array_equal(x, truth[cid])
    assert hidden_seen > 0  # some waiting candidates really had hidden changes


def test_rf_window_for_T1_is_last_ticks_rejections(paper_run):
    ticks = paper_run.tick_table()
    np.testing.assert_array_equal(
        ticks["n_rejected_window"].to_numpy()[1:], ticks["n_rejected"].to_numpy()[:-1]
    )


def test_undefined_ratios_are_nan_not_zero(paper_run):
    ticks = paper_run.tick_table()
    assert np.isnan(ticks.loc[0, "rr"]) and np.isnan(
        ticks.loc[0, "rf"]
    )  # nobody can reapply at t=0
    no_succ = ticks["n_succ"] == 0
    assert ticks.loc[no_succ, "rr"].isna().all()
    defined = ~no_succ
    np.testing.assert_allclose(
        ticks.loc[defined, "rr"],
        ticks.loc[defined, "n_succ_accepted"] / ticks.loc[defined, "n_succ"],
    )


def test_none_policy_gives_no_advice():
    model = RecourseModel("paper", "none", seed=0, ticks=30).run()
    ticks = model.tick_table()
    assert ticks["n_succ"].sum() == 0 and ticks["rr"].isna().all()
    assert ticks["gini"].isna().all() and ticks["mean_goal"].isna().all()
    assert (ticks["rf"].dropna() == 0).all()
    events = model.candidate_table()
    assert events["goal"].isna().all() and (events[[f"dx_{i}" for i in range(10)]] == 0).all().all()


def test_limit_beta_infinite_every_change_succeeds():
    model = RecourseModel("paper", "threshold", seed=4, ticks=40, beta=float("inf")).run()
    events = model.candidate_table()
    stayed = events[(~events["accepted"]) & (~events["dropped"])]
    ok = stayed[[f"ok_{i}" for i in range(10)]].to_numpy()
    assert (ok == 0).sum() == 0 and (ok == 1).sum() > 0
    assert stayed["implemented"].all()


def test_limit_no_dropout_when_coefficients_zero():
    model = RecourseModel(
        "paper-hard", "threshold", seed=4, ticks=50, rho=0.0, chi=0.0, omega=0.0
    ).run()
    assert model.tick_table()["n_dropped"].sum() == 0


def test_events_table_is_consistent(paper_run):
    events = paper_run.candidate_table()
    ticks = paper_run.tick_table()
    per_tick = events.groupby("tick").agg(
        n=("cid", "size"), acc=("accepted", "sum"), drop=("dropped", "sum"), re=("reapplied", "sum")
    )
    np.testing.assert_array_equal(per_tick["n"], ticks["n_applicants"])
    np.testing.assert_array_equal(per_tick["acc"], ticks["n_accepted"])
    np.testing.assert_array_equal(per_tick["drop"], ticks["n_dropped"])
    np.testing.assert_array_equal(per_tick["re"], ticks["n_reapplied"])
    # each candidate exits at most once, and its application numbers count up from 1
    assert events.loc[events["exit"] != ""].groupby("cid").size().max() == 1
    apps = events.sort_values(["cid", "tick"]).groupby("cid")["application"]
    assert (apps.first() == 1).all() and (apps.diff().dropna() == 1).all()
    rejected = events[~events["accepted"]]
    assert rejected["goal"].notna().all() and events.loc[events["accepted"], "goal"].isna().all()


def test_agent_handles_read_population_rows():
    model = RecourseModel("paper-T5", "threshold", seed=0, ticks=10).run()
    assert len(model.candidates) == len(model.population) > 0
    for agent in model.candidates:
        row = model.row_of(agent.cid)
        np.testing.assert_array_equal(agent.features, model.population.X[row])
        np.testing.assert_array_equal(agent.observed_features, model.population.X_obs[row])
        assert agent.last_application == model.population.last_tick[row]
        p = agent.reapply_probability()
        assert 0.0 <= p <= 1.0
    assert model.decision_maker in model.agents


def test_risk_aversion_trait_is_drawn_per_candidate_and_keeps_arrivals(spy_policy):
    spy = spy_policy(make_policy("threshold"))
    model = RecourseModel("paper", spy, seed=2, ticks=10, risk_aversion=(0.2, 0.8)).run()
    traits = np.concatenate([obs.extra["risk_aversion"] for obs in spy.seen])
    assert traits.min() >= 0.2 and traits.max() <= 0.8 and np.unique(traits).size > 10
    fixed = RecourseModel("paper", "threshold", seed=2, ticks=10, risk_aversion=(0.5, 0.5)).run()
    plain = RecourseModel("paper", "threshold", seed=2, ticks=10).run()
    assert (fixed.population.risk_aversion == 0.5).all()
    for a, b in ((model, plain), (fixed, plain)):
        np.testing.assert_array_equal(a.tick_table()["threshold"], b.tick_table()["threshold"])


def test_recommender_failures_become_explicit_no_advice():
    from policies.composite import CompositePolicy
    from policies.goals import LastThreshold

    class FailsOnOddRows:
        def prepare(self, ctx):
            pass

        def recommend(self, X, goals, rng):
            out = np.clip(X + 0.05, 0, 1)
            out[1::2] = np.nan
            return out

    model = RecourseModel(
        "paper", CompositePolicy(LastThreshold(), FailsOnOddRows()), seed=0, ticks=20
    ).run()
    ticks = model.tick_table()
    assert (ticks["n_unadvised"] == ticks["n_rejected"] // 2).all()
    events = model.candidate_table()
    rejected = events[~events["accepted"]]
    assert rejected["goal"].isna().sum() == ticks["n_unadvised"].sum()
