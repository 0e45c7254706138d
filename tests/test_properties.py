"""Property tests (hypothesis): top-k selection, population rows, behaviour probabilities
and the RL observation encodings (the scenario round trip: test_properties_config.py).

Each property is a statement of the model (equation numbers as in abm/behaviour.py), checked on
generated inputs rather than on a few hand-picked cases.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from abm.behaviour import (
    dropout_probability,
    reapply_probability,
    score_gap,
    success_probability,
)
from abm.interfaces import HistoryWindow, RecourseObs
from abm.population import SCHEMA, Population
from abm.selection import SCORE_TIE, select_top_k
from policies.rl.encoding import (
    N_APPS,
    N_BINS,
    encode_observation,
    recommender_observation,
    recommender_observation_bounds,
)

FAST = settings(max_examples=60, deadline=None)

unit = st.floats(0.0, 1.0, allow_nan=False)
# feature values on a 1e-6 grid: a product of two near-subnormal numbers would only test
# float overflow in 1 / (|x_cf - x| x_cf), not the model
feature = unit.map(lambda v: round(v, 6))
rate = st.floats(0.0, 50.0, allow_nan=False)
#: the RL encodings are checked through PopulationEnv, which needs the rl extra
HAS_GYMNASIUM = importlib.util.find_spec("gymnasium") is not None

seeds = st.integers(0, 2**32 - 1)

# scores drawn from a few values force ties at the threshold; free floats test the rest
score_lists = st.one_of(
    st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9]), max_size=30),
    st.lists(unit, max_size=30),
)


# -- top-k selection (abm.selection.select_top_k, what DecisionMaker.decide calls) ----------


@FAST
@given(scores=score_lists, k=st.integers(1, 12), seed=seeds)
def test_top_k_accepts_the_k_highest(scores, k, seed):
    s = np.array(scores, dtype=float)
    accepted, threshold = select_top_k(s, k, np.random.default_rng(seed))
    n = s.shape[0]
    assert accepted.dtype == np.bool_ and accepted.shape == (n,)
    assert accepted.sum() == min(k, n)
    if n == 0:
        assert np.isnan(threshold)
        return
    assert threshold == np.sort(s)[::-1][min(k, n) - 1]  # the k-th highest (lowest if n <= k)
    if accepted.all():
        return
    # scores within SCORE_TIE of the threshold are tied: either side may be admitted
    assert s[accepted].min() >= s[~accepted].max() - 2 * SCORE_TIE
    assert s[accepted].min() >= threshold - SCORE_TIE
    assert threshold + SCORE_TIE >= s[~accepted].max()
    assert (s[s > threshold + SCORE_TIE] == s[accepted & (s > threshold + SCORE_TIE)]).all()
    assert not accepted[s < threshold - SCORE_TIE].any()


@FAST
@given(scores=score_lists, k=st.integers(1, 12), seed=seeds)
def test_top_k_is_deterministic_for_a_seed(scores, k, seed):
    s = np.array(scores, dtype=float)
    a1, t1 = select_top_k(s, k, np.random.default_rng(seed))
    a2, t2 = select_top_k(s, k, np.random.default_rng(seed))
    np.testing.assert_array_equal(a1, a2)
    assert t1 == t2 or (np.isnan(t1) and np.isnan(t2))


@FAST
@given(scores=st.lists(unit, min_size=1, max_size=30, unique=True), k=st.integers(1, 12))
def test_top_k_leaves_the_generator_alone_without_ties(scores, k):
    # paired comparisons rely on it: the tie stream advances only when a tie is broken
    assume(np.diff(np.sort(scores)).min(initial=1.0) > SCORE_TIE)
    rng = np.random.default_rng(7)
    before = rng.bit_generator.state
    select_top_k(np.array(scores), k, rng)
    assert rng.bit_generator.state == before


@settings(max_examples=30, deadline=None)
@given(n_tied=st.integers(2, 12), k_tied=st.integers(1, 11), n_above=st.integers(0, 5))
def test_top_k_breaks_ties_with_the_given_generator(n_tied, k_tied, n_above):
    assume(k_tied < n_tied)
    s = np.concatenate([np.full(n_above, 0.9), np.full(n_tied, 0.5), np.full(3, 0.1)])
    k = n_above + k_tied
    chosen = set()
    for seed in range(40):
        accepted, threshold = select_top_k(s, k, np.random.default_rng(seed))
        assert threshold == 0.5
        assert accepted[:n_above].all() and not accepted[n_above + n_tied :].any()
        chosen.add(tuple(np.flatnonzero(accepted[n_above : n_above + n_tied])))
    # C(n_tied, k_tied) >= 2 subsets; 40 seeds all picking one of them has chance <= 2^-39
    assert len(chosen) > 1


@settings(max_examples=30, deadline=None)
@given(
    n_tied=st.integers(2, 12),
    k_tied=st.integers(1, 11),
    seed=seeds,
    noise=st.floats(1e-17, 1e-12),
)
def test_top_k_admits_the_same_candidates_whatever_the_last_digits(n_tied, k_tied, seed, noise):
    """Scores equal in exact arithmetic differ by round-off that depends on the CPU: the
    same candidates are admitted whichever way the last digits fall."""
    assume(k_tied < n_tied)
    base = np.concatenate([np.full(2, 0.9), np.full(n_tied, 0.5), np.full(3, 0.1)])
    jitter = np.random.default_rng(seed).standard_normal(base.shape[0]) * noise
    k = 2 + k_tied
    a, _ = select_top_k(base, k, np.random.default_rng(seed))
    b, _ = select_top_k(base * (1 + jitter), k, np.random.default_rng(seed))
    np.testing.assert_array_equal(a, b)


# -- Population take / concat ------------------------------------------------------------


def random_population(n: int, z: int, seed: int) -> Population:
    """n rows with every column of SCHEMA filled with distinct random values."""
    rng = np.random.default_rng(seed)
    data = {}
    for name, (dtype, feat) in SCHEMA.items():
        shape = (n, z) if feat else (n,)
        if dtype == np.bool_:
            data[name] = rng.random(shape) < 0.5
        elif dtype == np.int64:
            data[name] = rng.integers(0, 1000, shape)
        else:
            data[name] = rng.random(shape)
    data["ids"] = np.arange(n, dtype=np.int64) + 100
    return Population(data, z)


def assert_same_rows(a: Population, b: Population) -> None:
    assert a.n_features == b.n_features and set(a.data) == set(b.data)
    for name in a.data:
        assert a.data[name].dtype == b.data[name].dtype, name
        np.testing.assert_array_equal(a.data[name], b.data[name], err_msg=name)


@FAST
@given(n=st.integers(0, 25), z=st.integers(1, 4), seed=seeds, data=st.data())
def test_take_keeps_the_selected_rows_in_order(n, z, seed, data):
    pop = random_population(n, z, seed)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    part = pop.take(mask)
    assert len(part) == mask.sum() and part.n_features == z
    np.testing.assert_array_equal(part.ids, pop.ids[mask])
    for name, (_, feat) in SCHEMA.items():
        assert part.data[name].shape == ((len(part), z) if feat else (len(part),)), name
        np.testing.assert_array_equal(part.data[name], pop.data[name][mask], err_msg=name)
    index = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=10 if n else 0)))
    picked = pop.take(index.astype(np.int64))
    np.testing.assert_array_equal(picked.ids, pop.ids[index.astype(np.int64)])


@FAST
@given(n=st.integers(0, 25), z=st.integers(1, 4), seed=seeds, data=st.data())
def test_concat_of_a_split_is_the_population(n, z, seed, data):
    pop = random_population(n, z, seed)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    bounds = [0, *cuts, n]
    parts = [pop.take(np.arange(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    assert sum(len(p) for p in parts) == n
    assert_same_rows(Population.concat(parts, z), pop)
    # a mask and its complement, concatenated, hold every row once
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    both = Population.concat([pop.take(mask), pop.take(~mask)], z)
    assert len(both) == n
    assert sorted(both.ids.tolist()) == pop.ids.tolist()


@FAST
@given(n=st.integers(0, 10), z=st.integers(1, 4), seed=seeds)
def test_take_and_concat_never_write_into_the_source(n, z, seed):
    pop = random_population(n, z, seed)
    before = {k: v.copy() for k, v in pop.data.items()}
    out = Population.concat([pop.take(np.ones(n, dtype=bool)), pop.take(np.arange(n))], z)
    for v in out.data.values():
        if v.size and v.dtype.kind == "f":
            v += 1.0  # writing into the result ...
    for name, v in before.items():  # ... leaves the source as it was
        np.testing.assert_array_equal(pop.data[name], v, err_msg=name)


# -- behaviour probabilities (eqs. 6-11) --------------------------------------------------


def ordered(strategy):
    return st.tuples(strategy, strategy).map(sorted)


@FAST
@given(gaps=ordered(unit), apps=ordered(st.integers(0, 50)), rho=rate, chi=rate, omega=rate)
def test_dropout_is_a_probability_increasing_in_gap_and_applications(gaps, apps, rho, chi, omega):
    """Eq. 6: a wider gap or more applications never lowers the chance to drop out."""
    (b0, b1), (q0, q1) = gaps, apps
    p = dropout_probability(np.array([b0, b1, b0]), np.array([q0, q0, q1]), rho, chi, omega)
    assert np.all((p >= 0.0) & (p <= 1.0))
    assert p[1] >= p[0] and p[2] >= p[0]


@FAST
@given(goal=st.one_of(st.just(float("nan")), unit), score=unit)
def test_score_gap_is_the_shortfall(goal, score):
    b = score_gap(np.array([goal]), np.array([score]))[0]
    assert b == (0.0 if np.isnan(goal) else max(0.0, goal - score))


@FAST
@given(
    x=feature,
    x_cf=feature,
    far=unit,
    d=ordered(st.floats(0.01, 1.0)),
    beta=st.one_of(st.floats(1e-4, 10.0), st.just(np.inf)),
)
def test_success_is_a_probability_falling_with_difficulty_and_distance(x, x_cf, far, d, beta):
    """Eq. 8: harder features, and longer steps to the same target, succeed less often."""
    d_easy, d_hard = d
    p = success_probability(
        np.array([[x, x]]), np.array([[x_cf, x_cf]]), beta, np.array([d_easy, d_hard])
    )[0]
    assert np.all((p >= 0.0) & (p <= 1.0))
    assert p[0] >= p[1]
    if x == x_cf:
        assert np.all(p == 1.0)  # nothing to change
    # a start further from x_cf on the same side: a longer step
    x_far = x_cf + (x - x_cf) * (1.0 + far) if x != x_cf else x
    assume(0.0 <= x_far <= 1.0)
    near, longer = success_probability(
        np.array([[x, x_far]]), np.array([[x_cf, x_cf]]), beta, np.array([d_easy, d_easy])
    )[0]
    assert longer <= near


@FAST
@given(
    gaps=ordered(unit), elapsed=ordered(st.integers(0, 12)), validity=st.integers(1, 10), nu=rate
)
def test_reapplication_falls_with_gap_and_rises_with_time(gaps, elapsed, validity, nu):
    """Eqs. 9-11: a wider gap delays reapplying; by t - l = T everyone has reapplied."""
    (b0, b1), (e0, e1) = gaps, elapsed
    p = reapply_probability(np.array([b0, b1, b0]), np.array([e0, e0, e1]), validity, nu)
    assert np.all((p >= 0.0) & (p <= 1.0))
    assert p[1] <= p[0] <= p[2]
    if e1 >= validity:
        assert p[2] == 1.0
    at_zero = reapply_probability(np.array([b0]), np.array([0]), validity, nu)[0]
    assert at_zero == pytest.approx(np.exp(-nu * b0))


# -- RL observation encodings --------------------------------------------------------------


@st.composite
def population_observations(draw):
    """A scenario's PopulationEnv and an observation it could meet: tick in 1..ticks,
    scores and features in [0, 1], at most everyone who ever entered in each group."""
    preset = draw(st.sampled_from(["paper", "paper-T5", "motivating-example"]))
    ticks = draw(st.integers(1, 12))
    from lab.envs import PopulationEnv  # the rl extra (gymnasium)

    env = PopulationEnv(preset, ticks=ticks)
    c = env.config
    z, T, everyone = c.n_features, c.validity, c.n_initial + c.m * ticks
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    tick = draw(st.integers(1, ticks))
    a = draw(st.integers(0, min(everyone, 40)))
    w = draw(st.integers(0, min(everyone - a, 40)))
    scores = rng.random(a)
    accepted, threshold = select_top_k(scores, c.k, rng)
    rejected = ~accepted
    goal = np.where(rng.random(w) < 0.3, np.nan, rng.random(w))
    history = HistoryWindow(
        ids=np.arange(w),
        X=rng.random((w, z)),
        last_tick=np.maximum(tick - rng.integers(1, T + 1, w), 0),
        n_applications=rng.integers(1, 8, w),
        goal=goal,
        X_cf=rng.random((w, z)),
    )
    X = rng.random((a, z))
    obs = RecourseObs(
        tick=tick,
        threshold=threshold,
        applicant_ids=np.arange(a),
        applicant_X=X,
        applicant_scores=scores,
        accepted=accepted,
        ids=np.arange(a)[rejected],
        X=X[rejected],
        scores=scores[rejected],
        n_applications=np.ones(rejected.sum(), dtype=np.int64),
        history_fn=lambda: history,
    )
    return env, obs, rng.random(w)


def plain_encoding(obs: RecourseObs, window_scores, k: int, ticks: int, T: int) -> np.ndarray:
    """The population encoding written with np.clip, np.histogram and ndarray.mean."""
    h, z = obs.history, obs.applicant_X.shape[1]
    edges = np.linspace(0.0, 1.0, N_BINS + 1)

    def hist(v):
        v = np.clip(np.asarray(v, dtype=float), 0.0, 1.0)
        return np.histogram(v[~np.isnan(v)], bins=edges)[0] / k

    def means(X):
        return X.mean(axis=0) if X.shape[0] else np.zeros(z)

    has_goal = np.isfinite(h.goal)
    ages = np.bincount(np.clip(obs.tick - h.last_tick, 1, T) - 1, minlength=T)
    apps = np.bincount(np.clip(h.n_applications, 1, N_APPS) - 1, minlength=N_APPS)
    threshold = np.nan_to_num(obs.threshold)
    head = [obs.tick / ticks, threshold, obs.applicant_ids.shape[0] / k, h.ids.shape[0] / k]
    parts = [
        np.array(head),
        hist(obs.applicant_scores),
        hist(window_scores),
        hist(h.goal),
        np.array([np.count_nonzero(~has_goal) / k]),
        ages / k,
        apps / k,
        means(obs.applicant_X),
        means(h.X),
    ]
    return np.concatenate(parts).astype(np.float32)


@FAST
@pytest.mark.skipif(not HAS_GYMNASIUM, reason="needs the rl extra (gymnasium)")
@given(case=population_observations())
def test_population_encoding_lies_in_the_env_observation_space(case):
    """Inside the space, and bit for bit the plain NumPy layout (integer clips as
    minimum(maximum()) and means as sums / n change nothing)."""
    env, obs, window_scores = case
    c = env.config
    v = encode_observation(obs, window_scores, c.k, c.ticks, c.validity)
    assert v.dtype == np.float32 and v.shape == env.observation_space.shape
    assert np.all(np.isfinite(v))
    assert env.observation_space.contains(v)
    assert v.tobytes() == plain_encoding(obs, window_scores, c.k, c.ticks, c.validity).tobytes()


@FAST
@given(n=st.integers(1, 20), z=st.integers(1, 12), seed=seeds, goals_met=st.booleans())
def test_recommender_observation_lies_in_its_bounds(n, z, seed, goals_met):
    rng = np.random.default_rng(seed)
    X, scores = rng.random((n, z)), rng.random(n)
    # extremes included: the logit clips probabilities to [1e-6, 1 - 1e-6]
    scores[: n // 3] = rng.choice([0.0, 1.0], n // 3)
    goals = np.minimum(scores + rng.random(n), 1.0) if not goals_met else scores * rng.random(n)
    obs = recommender_observation(X, goals, scores, rng.random(z))
    low, high = recommender_observation_bounds(z)
    assert obs.dtype == np.float32 and obs.shape == (n, low.shape[0])
    assert np.all(np.isfinite(obs))
    assert np.all((obs >= low) & (obs <= high))
