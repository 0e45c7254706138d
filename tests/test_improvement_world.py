"""The improvement policies in the population world (specs/improvement-bandits.md §5-§6):
the reward bookkeeping on hand-built feedback, segment advice, model episodes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from abm.interfaces import Feedback, LinearScorer, PolicyContext, RecourseObs
from abm.model import RecourseModel
from abm.registry import make_policy
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError
from policies.improvement.population import ImproveLinUCB, ImproveProto, segment_steps

SCORER = LinearScorer([2.0, 2.0, 0.0], -2.0)  # M = σ(2 x0 + 2 x1 - 2); x2 immutable


def context(delay=2, validity=1):
    # 20 rows; the two best (rows 18, 19) are the arm pool at the 0.9-quantile
    X_train = np.column_stack([np.linspace(0, 0.9, 20), np.linspace(0, 0.95, 20), np.full(20, 0.5)])
    return PolicyContext(
        decision_model=SCORER,
        lower=np.zeros(3),
        upper=np.ones(3),
        immutable=np.array([False, False, True]),
        difficulty=np.ones(3),
        k=1,
        m=1,
        validity=validity,
        beta=0.05,
        ticks=20,
        X_train=X_train,
        extra={"scenario": SimpleNamespace(outcome_delay=delay)},
    )


def observation(tick, ids, X, threshold=0.5):
    X = np.asarray(X, float)
    n = X.shape[0]
    s = SCORER.score(X)
    return RecourseObs(
        tick=tick,
        threshold=threshold,
        applicant_ids=np.asarray(ids),
        applicant_X=X,
        applicant_scores=s,
        accepted=np.zeros(n, bool),
        ids=np.asarray(ids),
        X=X,
        scores=s,
        n_applications=np.ones(n, int),
    )


def feedback(tick, ids=(), X=None, cf=None, after=None, accepted=(), out_ids=(), out_y=()):
    z = 3
    empty = np.zeros((0, z))
    return Feedback(
        tick=tick,
        ids=np.asarray(ids, np.int64),
        X_before=empty if X is None else X,
        X_cf=empty if cf is None else cf,
        X_after=empty if after is None else after,
        accepted=np.asarray(accepted, bool),
        outcome_ids=np.asarray(out_ids, np.int64),
        outcome_y=np.asarray(out_y, np.int8),
    )


def test_reward_needs_implementation_acceptance_and_a_good_outcome():
    pol = ImproveLinUCB(n_arms=2, window=10, advice="arm")
    pol.prepare(context())
    X = np.array([[0.1, 0.1, 0.3], [0.2, 0.0, 0.7], [0.0, 0.2, 0.1]])
    rec = pol.recommend(observation(0, [7, 8, 9], X), np.random.default_rng(0))
    assert rec.advised.tolist() == [True] * 3
    k = rec.info["arm"]
    assert (k >= 0).all()
    # x_cf = the arm on mutable features, the candidate's own immutable value
    np.testing.assert_array_equal(rec.X_cf[:, :2], pol.arms[k][:, :2])
    np.testing.assert_array_equal(rec.X_cf[:, 2], X[:, 2])
    np.testing.assert_allclose(rec.goal, SCORER.score(rec.X_cf))
    np.testing.assert_allclose(rec.info["arm_E"], np.exp(-np.abs(rec.X_cf - X).sum(1) / 3))
    assert pol.tick_stats() == {"picks": 3.0, "rewards": 0.0, "censored": 0.0}
    # 7 implemented and was accepted; 8 was accepted without implementing; 9 rejected
    after = rec.X_cf.copy()
    after[1] = X[1]
    pol.observe(feedback(1, [7, 8, 9], X, rec.X_cf, after, [True, True, False]))
    assert pol.tick_stats()["censored"] == 1.0  # 8 closes at 0 at once
    b_before = pol.agent.b.copy()
    pol.observe(feedback(3, out_ids=[7, 8], out_y=[1, 1]))  # 8's outcome earns nothing
    assert pol.tick_stats() == {"picks": 0.0, "rewards": 1.0, "censored": 0.0}
    gained = pol.agent.b - b_before
    assert gained[k[0]] == pytest.approx(rec.info["arm_E"][0])
    assert np.count_nonzero(gained) == 1
    # 9 is advised again: its old pick closes at 0 and a new one opens
    pol.recommend(observation(3, [9], X[2:]), np.random.default_rng(1))
    assert pol.tick_stats() == {"picks": 1.0, "rewards": 0.0, "censored": 1.0}
    assert set(pol.open) == {9}


def test_bad_outcome_and_window_close_at_zero():
    pol = ImproveProto(n_arms=2, window=3, advice="arm")
    pol.prepare(context())
    X = np.array([[0.1, 0.1, 0.3], [0.2, 0.0, 0.7]])
    rec = pol.recommend(observation(0, [1, 2], X), np.random.default_rng(0))
    pol.observe(feedback(1, [1], X[:1], rec.X_cf[:1], rec.X_cf[:1], [True]))
    pol.observe(feedback(2, out_ids=[1], out_y=[0]))
    assert pol.tick_stats() == {"picks": 2.0, "rewards": 0.0, "censored": 1.0}
    pol.recommend(observation(3, [], np.zeros((0, 3))), np.random.default_rng(0))
    assert pol.tick_stats()["censored"] == 1.0 and not pol.open  # 2's pick expired


def test_default_window_is_validity_plus_delay_and_bad_parameters():
    pol = ImproveProto(advice="arm")
    pol.prepare(context(delay=4, validity=5))
    assert pol.window == 9
    with pytest.raises(ConfigError, match=r"window = '?0'? is not allowed"):
        make_policy("improve-linucb:window=0")
    with pytest.raises(ConfigError, match=r"lam"):
        make_policy("improve-linucb:lam=0")
    with pytest.raises(ConfigError, match=r"max_samples"):
        make_policy("improve-bwo:max_samples=1.5")
    with pytest.raises(ConfigError, match=r"advice"):
        make_policy("improve-proto:advice=half")
    few = ImproveProto(n_arms=5, advice="arm")
    few.prepare(context())
    with pytest.warns(UserWarning, match="using all of them"):
        few.recommend(observation(0, [1], [[0.1, 0.1, 0.3]]), np.random.default_rng(0))
    assert few.arms.shape[0] == 2


@pytest.mark.parametrize("name", ["improve-proto", "improve-linucb", "improve-bwo"])
def test_outcomes_off_is_an_error(name):
    with pytest.raises(ConfigError, match=rf"^{name} needs outcome_delay \(1..10000\)$"):
        RecourseModel("paper", name, agents=False)


class _Curved:
    """A non-linear scorer: the bisection path."""

    is_linear = False

    def score(self, X):
        return SCORER.score(X) ** 1.5


def test_segment_steps_reach_the_threshold_at_the_first_point():
    X = np.array([[0.1, 0.1, 0.3], [0.3, 0.2, 0.5]])
    arms = np.array([[0.9, 0.8, 0.0], [0.2, 0.1, 0.0], [1.0, 1.0, 1.0]])
    mut = np.array([True, True, False])
    C = np.where(mut, arms[None], X[:, None])
    for scorer, th in ((SCORER, 0.6), (_Curved(), 0.5)):
        full = scorer.score(C.reshape(-1, 3)).reshape(2, 3)
        logit = SCORER.logit(C.reshape(-1, 3)).reshape(2, 3) if scorer is SCORER else None
        s, score = segment_steps(scorer, X, arms, mut, full, np.full(2, th), logit)
        reach = full >= th
        assert not reach[:, 1].any() and (s[:, 1] == 1.0).all()  # arm 1 never reaches
        pts = X[:, None] + s[..., None] * (C - X[:, None])
        at = scorer.score(pts.reshape(-1, 3)).reshape(2, 3)
        np.testing.assert_allclose(at[reach], th, atol=1e-9)
        np.testing.assert_allclose(score[reach], at[reach], atol=1e-12)
        before = X[:, None] + (s[..., None] - 1e-6) * (C - X[:, None])
        assert (scorer.score(before.reshape(-1, 3)).reshape(2, 3)[reach] < th).all()


def test_episode_records_picks_and_arms_and_is_deterministic():
    cfg = resolve_scenario("improvement").replace(ticks=15, seed=3)
    runs = [
        RecourseModel(cfg, "improve-linucb:advice=segment", agents=False).run() for _ in range(2)
    ]
    ticks, events = runs[0].tick_table(), runs[0].candidate_table()
    assert ticks.equals(runs[1].tick_table())
    for col in (
        "policy_picks",
        "policy_rewards",
        "policy_censored",
        "impl_improvement_rate",
        "gaming_rate",
    ):
        assert col in ticks
    advised = np.isfinite(events["goal"].to_numpy())
    assert int(ticks["policy_picks"].sum()) == int(advised.sum()) > 0
    arm = events["arm"].to_numpy()
    assert (arm[advised] >= 0).all()
    told = np.isfinite(arm)  # the rejected (the accepted have no recommendation row)
    assert (arm[told & ~advised] == -1).all() and told[~events["accepted"].to_numpy()].all()
    e = events["arm_E"].to_numpy()[advised]
    assert ((e > 0) & (e <= 1)).all()
    closed = ticks["policy_rewards"].sum() + ticks["policy_censored"].sum()
    assert closed <= ticks["policy_picks"].sum()


def test_bwo_episode_runs():
    cfg = resolve_scenario("improvement").replace(ticks=8, seed=1)
    a = RecourseModel(cfg, "improve-bwo:advice=segment", agents=False, record_events=False).run()
    b = RecourseModel(cfg, "improve-bwo:advice=segment", agents=False, record_events=False).run()
    assert a.tick_table().equals(b.tick_table())
    assert a.tick_table()["policy_picks"].sum() > 0


def test_costs_and_proto_rows_equal_the_plain_expressions_bit_for_bit():
    # the buffered, feature-major L1 costs and ImproveProto's one-shot argmax are speed-ups:
    # the same numbers as the plain (n, K, m) expression and the row-by-row pick
    rng = np.random.default_rng(5)
    z, K = 10, 40  # 400 rows: the top 10 % are exactly 40
    X_train = rng.random((400, z))
    scorer = LinearScorer(rng.normal(size=z), 0.0)
    mutable = np.ones(z, dtype=bool)
    mutable[[2, 7]] = False
    ctx = PolicyContext(
        decision_model=scorer,
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=~mutable,
        difficulty=np.ones(z),
        k=1,
        m=1,
        validity=1,
        beta=0.05,
        ticks=5,
        X_train=X_train,
        extra={"scenario": SimpleNamespace(outcome_delay=1)},
    )
    pol = ImproveProto(n_arms=K, advice="arm")
    pol.prepare(ctx)
    pol._draw_arms(np.random.default_rng(0))
    for n in (1, 7, 33, 5):  # the buffer grows, then is reused smaller
        X = rng.random((n, z)) * rng.uniform(0.5, 3.0)
        plain = np.add.reduce(np.abs(pol.arms[None, :, mutable] - X[:, None, mutable]), axis=2)
        np.testing.assert_array_equal(pol._costs(X[:, mutable]), plain)
        E = np.exp(-plain / z)
        eligible = rng.random((n, pol.arms.shape[0])) < 0.3
        eligible[np.arange(n), rng.integers(0, pol.arms.shape[0], n)] = True
        rows = [pol._choose(X[i], None, E[i], eligible[i]) for i in range(n)]
        np.testing.assert_array_equal(pol._choose_rows(X, None, E, eligible), rows)
