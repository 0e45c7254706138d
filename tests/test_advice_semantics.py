"""SPEC §2 edge cases: ties at the threshold, "change nothing", unreachable goals, budgets."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abm import RecourseModel
from abm.interfaces import LinearScorer, PolicyContext, Recommendation, RecourseObs
from policies.composite import CompositePolicy
from policies.goals import GOAL_GAP, LastThreshold, admissible_goals
from policies.recommenders import ExactLinear


def context(w=(1.0, 2.0, 0.5), b=-2.0):
    z = len(w)
    return PolicyContext(
        decision_model=LinearScorer(w, b),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.zeros(z, bool),
        difficulty=np.full(z, 0.5),
        k=2,
        m=5,
        validity=1,
        beta=0.05,
        ticks=10,
    )


def tied_obs(ctx, X, k):
    """Applicants X (a, z) of which the top k (stable order) are accepted."""
    scores = ctx.decision_model.score(X)
    order = np.argsort(-scores, kind="stable")
    accepted = np.zeros(len(X), bool)
    accepted[order[:k]] = True
    rej = np.flatnonzero(~accepted)
    ids = np.arange(len(X))
    return RecourseObs(
        tick=3,
        threshold=float(scores[order[k - 1]]),
        applicant_ids=ids,
        applicant_X=X,
        applicant_scores=scores,
        accepted=accepted,
        ids=ids[rej],
        X=X[rej],
        scores=scores[rej],
        n_applications=np.ones(rej.size, np.int64),
    )


def test_candidates_tied_at_the_threshold_get_a_goal_strictly_above_their_score():
    ctx = context()
    x = np.array([0.3, 0.4, 0.5])
    X = np.vstack([np.tile(x, (5, 1)), [[0.1, 0.1, 0.1]]])  # five identical applicants
    obs = tied_obs(ctx, X, k=2)
    tied = obs.scores == obs.threshold
    assert tied.sum() == 3  # three rejected sit exactly on the threshold
    pol = CompositePolicy(LastThreshold(), ExactLinear())
    pol.prepare(ctx)
    rec = pol.recommend(obs, np.random.default_rng(0))
    assert rec.advised_mask().all()
    assert (rec.goal > obs.scores).all() and (rec.goal >= obs.threshold).all()
    assert np.array_equal(rec.goal[tied], obs.scores[tied] + GOAL_GAP)
    assert (rec.X_cf != obs.X).any(axis=1).all()  # a real change for every one of them
    np.testing.assert_allclose(ctx.decision_model.score(rec.X_cf), rec.goal, rtol=0, atol=1e-12)


def test_admissible_goals_lift_to_threshold_and_above_own_score():
    scores = np.array([0.2, 0.5, 0.5, 0.7])
    goals = admissible_goals(np.array([0.1, 0.5, np.nan, 0.9]), scores, threshold=0.5)
    assert goals[0] == 0.5 and goals[1] == 0.5 + GOAL_GAP and np.isnan(goals[2])
    assert goals[3] == 0.9
    ulp = admissible_goals(np.array([0.5]), np.array([0.5]), 0.5, gap=0.0)
    assert ulp[0] == np.nextafter(0.5, 1.0)


def test_unreachable_goal_gets_no_advice_and_counts_as_unreached():
    ctx = context()
    X = np.array([[0.9, 0.9, 0.9], [0.1, 0.2, 0.3], [0.0, 0.0, 0.0]])
    obs = tied_obs(ctx, X, k=1)
    best = float(ctx.decision_model.score(np.ones((1, 3)))[0])  # the box's best corner
    pol = CompositePolicy(LastThreshold(margin=best - obs.threshold + 1e-6), ExactLinear())
    pol.prepare(ctx)
    rec = pol.recommend(obs, np.random.default_rng(0))
    assert not rec.advised.any() and rec.unreached.all()
    assert np.isnan(rec.goal).all() and np.array_equal(rec.X_cf, obs.X)  # no bound push


class Scripted:
    """Advice chosen per test: ``kind`` says how the rejected are advised."""

    def __init__(self, kind):
        self.kind = kind

    def prepare(self, ctx):
        self.ctx = ctx

    def recommend(self, obs, rng):
        n = obs.n_rejected
        X_cf = obs.X.copy()
        goal = np.full(n, obs.threshold)
        if self.kind == "nothing":  # advised, but nothing to change
            return Recommendation(goal=goal, X_cf=X_cf)
        if self.kind == "withheld":  # a budget held everyone's advice back
            none = np.zeros(n, bool)
            return Recommendation(goal=np.full(n, np.nan), X_cf=X_cf, advised=none, withheld=~none)
        # "short": a small improvement that falls below the threshold, goal = M(x_cf)
        w = self.ctx.decision_model.weights
        X_cf = np.clip(X_cf + 1e-4 * np.sign(w), 0.0, 1.0)
        X_cf[:, self.ctx.immutable] = obs.X[:, self.ctx.immutable]
        return Recommendation(goal=self.ctx.decision_model.score(X_cf), X_cf=X_cf)

    def observe(self, feedback):
        pass


def test_change_nothing_is_no_advice_and_never_enters_succ():
    m = RecourseModel("paper", Scripted("nothing"), seed=0, ticks=20).run()
    ticks, events = m.tick_table(), m.candidate_table()
    assert (ticks["n_no_change"] == ticks["n_rejected"]).all()
    assert (ticks["n_unadvised"] == ticks["n_rejected"]).all()
    assert ticks["n_succ"].sum() == 0 and ticks["rr"].isna().all()
    assert (ticks["rf"].dropna() == 0).all()
    assert events.loc[~events["accepted"], "goal"].isna().all()
    assert not events["implemented"].fillna(False).astype(bool).any()


def test_withheld_and_below_threshold_advice_are_counted():
    t = RecourseModel("paper", Scripted("withheld"), seed=0, ticks=10).run().tick_table()
    assert (t["n_withheld"] == t["n_rejected"]).all() and t["n_unreached"].sum() == 0
    t = RecourseModel("paper", Scripted("short"), seed=0, ticks=10).run().tick_table()
    assert (t["n_below_threshold"] == t["n_rejected"]).all() and t["n_unadvised"].sum() == 0


def test_ties_arise_in_the_paper_world_and_are_advised(spy_policy):
    spy = spy_policy(CompositePolicy(LastThreshold(), ExactLinear()))
    m = RecourseModel("paper", spy, seed=0, ticks=40).run()
    n_tied = sum(int(np.count_nonzero(o.scores == o.threshold)) for o in spy.seen)
    assert n_tied > 10  # exact ties at the threshold are common under exact advice
    assert m.tick_table()["n_no_change"].sum() == 0


POLICIES = [
    "threshold",
    "threshold-true",
    "threshold-estimated",
    "last-threshold:margin=-0.2+exact-linear",
    "last-threshold:margin=0.05+exact-linear:weights=true",
    "safear:levels=3,rollouts=5",
]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**31 - 1),
    k=st.integers(1, 12),
    beta=st.sampled_from([0.01, 0.05, float("inf")]),
)
def test_no_advised_rejected_candidate_gets_a_goal_at_or_below_their_score(policy, seed, k, beta):
    m = RecourseModel("paper", policy, seed=seed, ticks=12, k=k, beta=beta).run()
    ev = m.candidate_table().merge(m.tick_table()[["tick", "threshold"]], on="tick")
    rej = ev[~ev["accepted"]]
    adv = rej[rej["goal"].notna()]
    assert (adv["goal"] > adv["score"]).all()
    assert (adv["goal"] >= adv["threshold"]).all()
    dx = adv[[c for c in adv.columns if c.startswith("dx_")]].to_numpy()
    assert (dx != 0).any(axis=1).all()  # advice always changes something
    assert m.tick_table()["n_no_change"].sum() == 0
