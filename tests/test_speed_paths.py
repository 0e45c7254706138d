"""Fast paths of the core give bit-for-bit the results of the plain computations they skip.

Each test compares a shortcut (issue 12 item 10) with the straightforward numpy it
replaces, on inputs that take the shortcut and on inputs that must not.
"""

from __future__ import annotations

import numpy as np
import pytest

from abm import behaviour, metrics
from abm.population import SCHEMA, Population
from abm.record import _mean_wait
from abm.rng import Streams, stream
from policies.rl.encoding import N_BINS, histogram01


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def samples(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


# -- metrics -------------------------------------------------------------------------------


def plain_nanmean(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[v == v]
    return float(np.add.reduce(v) / v.size) if v.size else float("nan")


def plain_gini(g) -> float:
    g = np.asarray(g, dtype=float)
    g = g[np.isfinite(g)]
    n, total = g.shape[0], np.add.reduce(g)
    if n == 0 or total <= 0:
        return float("nan")
    g = np.sort(g)
    if g[0] == g[-1]:
        return 0.0
    pair_sum = 2.0 * np.add.reduce((2.0 * np.arange(1, n + 1) - n - 1) * g)
    return max(float(pair_sum / (2.0 * n * total)), 0.0)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf
@pytest.mark.parametrize("n", [0, 1, 2, 7, 9, 33, 1000])
def test_nanmean_and_gini_match_the_filtering_versions(n):
    v = samples(n, n)
    cases = [v, v[::2], v * 0.0, -v]
    if n:
        with_nan, with_inf = v.copy(), v.copy()
        with_nan[n // 2] = np.nan
        with_inf[0] = np.inf
        both = with_inf.copy()
        both[-1] = -np.inf
        cases += [with_nan, with_inf, both, np.full(n, np.nan)]
    for case in cases:
        assert same_bits(metrics.nanmean(case), plain_nanmean(case))
        assert same_bits(metrics.gini(case), plain_gini(case))
    assert same_bits(metrics.nanmean(list(v)), plain_nanmean(v))
    assert same_bits(metrics.nanmean(np.arange(n)), plain_nanmean(np.arange(n)))


def plain_reward(rr, rf, alpha, tau, floor) -> float:
    rr, rf = np.asarray(rr, dtype=float), np.asarray(rf, dtype=float)
    out = np.zeros(np.broadcast(rr, rf).shape)
    if alpha:
        out += alpha * (1.0 + 0.9 * np.log(np.fmax(rr, floor)))
    if tau:
        out += tau * (1.0 + 0.9 * np.log(np.fmax(rf, floor)))
    return float(np.where(rf == rf, out, 0.0))


def test_scalar_reward_matches_the_array_computation():
    values = [0.0, 1e-4, 0.5, 1.0, float("nan"), *samples(3, 20).tolist()]
    for rr in values:
        for rf in values:
            for alpha, tau in ((1.0, 1.0), (0.0, 1.0), (2.5, 0.0), (0.3, 1.7)):
                got = metrics.reward_eq16(rr, rf, alpha, tau, 1e-3)
                assert isinstance(got, float)
                assert same_bits(got, plain_reward(rr, rf, alpha, tau, 1e-3))
    # arrays still take the array path
    rr, rf = samples(4, 5), np.array([0.1, np.nan, 0.0, 1.0, 0.7])
    got = metrics.reward_eq16(rr, rf, 1.0, 1.0, 1e-3)
    assert same_bits(got, [plain_reward(a, b, 1.0, 1.0, 1e-3) for a, b in zip(rr, rf, strict=True)])


def test_mean_wait_equals_the_float_mean():
    entered = np.random.default_rng(5).integers(0, 10_000, 501)
    for n in (0, 1, 2, 17, 501):
        t = 12_345
        assert same_bits(_mean_wait(t, entered[:n]), plain_nanmean(t - entered[:n]))


# -- behaviour -----------------------------------------------------------------------------


def plain_change_success(x, x_cf, beta, d):
    denom = np.abs(x_cf - x) * x_cf
    a = np.divide(1.0, denom, out=np.full(np.shape(denom), np.inf), where=denom > 0) - 1.0
    rate = np.multiply(beta, a, out=np.zeros(np.shape(a)), where=a > 0) / d
    return -np.expm1(-rate)


@pytest.mark.parametrize("beta", [0.01, 0.05, 1.0, np.inf])
def test_change_success_probability_matches_the_masked_computation(beta):
    rng = np.random.default_rng(6)
    x, x_cf, d = rng.random(200), rng.random(200), rng.uniform(0.1, 1.0, 200)
    # usual entries (every factor positive), then zero targets and full 0 -> 1 jumps
    cases = [(x, x_cf), (x, np.where(rng.random(200) < 0.2, 0.0, x_cf))]
    cases.append((np.where(rng.random(200) < 0.2, 0.0, x), np.where(x > 0.8, 1.0, x_cf)))
    cases.append((np.zeros(3), np.ones(3)))
    for xs, cfs in cases:
        dd = d[: xs.shape[0]]
        got = behaviour.change_success_probability(xs, cfs, beta, dd)
        assert same_bits(got, plain_change_success(xs, cfs, beta, dd))


# -- histograms of the RL observation --------------------------------------------------------


def test_histogram01_matches_numpy_histogram():
    rng = np.random.default_rng(7)
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    near = np.concatenate([edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0)])
    cases = [
        np.zeros(0),
        rng.random(50),
        rng.uniform(-0.5, 1.5, 50),
        near,
        np.round(rng.random(80), 1),
    ]
    cases.append(np.array([np.nan, 0.3, 1.0, np.nan, -0.0]))
    for v in cases:
        got = histogram01(v)
        want = np.histogram(np.clip(v, 0.0, 1.0), bins=edges)[0]
        assert got.dtype == want.dtype and np.array_equal(got, want), v


# -- population: take with replacements, split, concat with shared columns ------------------


def random_population(n: int, z: int, seed: int) -> Population:
    rng = np.random.default_rng(seed)
    data = {}
    for name, (dtype, feat) in SCHEMA.items():
        shape = (n, z) if feat else (n,)
        data[name] = rng.random(shape) < 0.5 if dtype == np.bool_ else rng.random(shape)
        data[name] = data[name].astype(dtype)
    data["ids"] = np.arange(n, dtype=np.int64)
    return Population(data, z)


@pytest.mark.parametrize("z", [1, 2, 10])
@pytest.mark.parametrize("seed", range(4))
def test_column_means_of_many_episodes_are_each_episodes_own(z, seed):
    """encode_batch's column means of B episodes' rows, on one padded grid (z >= 2) or
    length by length (one column, or a grid mostly padding): each row has the bits of
    the episode's own rows' mean, -0.0 and empty episodes included."""
    from policies.rl.encoding import _column_means, _column_means_of

    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 40, 30)
    counts[[2, 5]] = 0  # episodes with no rows: zeros
    if seed == 3:  # one long episode beside short ones: mostly padding, by length
        counts[0] = 2_000
    X = rng.normal(size=(int(counts.sum()), z)) * 10.0 ** rng.integers(-3, 4, z)
    X[rng.random(X.shape) < 0.05] = -0.0
    starts = np.concatenate([[0], np.cumsum(counts)])
    X[starts[1] : starts[2], 0] = -0.0  # a column of -0.0 alone (numpy sums from +0.0)
    got = _column_means_of(X, counts)
    for b in range(counts.shape[0]):
        assert same_bits(got[b], _column_means(X[starts[b] : starts[b + 1]])), b


# an infinite threshold overflows float32 in both encodings alike
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize(("z", "validity", "m"), [(10, 1, None), (2, 3, 10), (1, 2, None)])
@pytest.mark.parametrize("seed", range(3))
def test_a_batch_of_observations_is_each_episodes_own(z, validity, m, seed):
    """encode_batch (its histograms, counts and z >= 2 means compiled in one loop) gives
    row b with the bits of encode_observation of episode b alone: scores that are NaN,
    below 0, above 1 or on a bin's edge, goals that are NaN, infinite or -0.0, ages and
    application counts out of range, -0.0 features, episodes with no rows, undefined
    thresholds, and the places and entrants in force."""
    from types import SimpleNamespace

    from policies.rl.encoding import encode_batch, encode_observation

    rng = np.random.default_rng(seed)
    B, k, ticks, tick = 12, 9, 100, 7
    app_counts, w_counts = rng.integers(0, 25, B), rng.integers(0, 15, B)
    app_counts[1], w_counts[[2, 3]] = 0, 0

    def values(n):
        v = rng.random(n) * 1.4 - 0.2
        pick = rng.random(n)
        v[pick < 0.1] = rng.integers(0, 11, n)[pick < 0.1] / 10  # on an edge
        v[(pick > 0.1) & (pick < 0.15)] = np.nan
        return v

    a, w = int(app_counts.sum()), int(w_counts.sum())
    app_X = rng.normal(size=(a, z)) * 10.0 ** rng.integers(-3, 4, z)
    app_X[rng.random(app_X.shape) < 0.05] = -0.0
    window = {
        "X_obs": rng.normal(size=(w, z)),
        "goal": values(w),
        "last_tick": rng.integers(0, tick + 2, w),
        "n_apps": rng.integers(0, 7, w),
    }
    window["goal"][rng.random(w) < 0.1] = rng.choice([np.inf, -np.inf, -0.0], w)[:1]
    app_scores, w_scores = values(a), values(w)
    thresholds = rng.random(B)
    thresholds[[0, 4]] = [np.nan, np.inf]
    k_t, m_t = rng.integers(1, 20, B), rng.integers(0, 30, B)
    capacity = {} if m is None else {"m": m, "k_t": k_t, "m_t": m_t}
    got = encode_batch(
        tick,
        thresholds,
        app_X,
        app_scores,
        app_counts,
        window,
        w_scores,
        w_counts,
        k,
        ticks,
        validity,
        **capacity,
    )
    a_at, w_at = (
        np.concatenate([[0], app_counts.cumsum()]),
        np.concatenate([[0], w_counts.cumsum()]),
    )
    for b in range(B):
        mine = slice(w_at[b], w_at[b + 1])
        obs = SimpleNamespace(
            tick=tick,
            threshold=thresholds[b],
            applicant_ids=np.arange(app_counts[b]),
            applicant_X=app_X[a_at[b] : a_at[b + 1]],
            applicant_scores=app_scores[a_at[b] : a_at[b + 1]],
            k_t=k_t[b] if m else None,
            m_t=m_t[b] if m else None,
            history=SimpleNamespace(
                ids=np.arange(w_counts[b]),
                goal=window["goal"][mine],
                last_tick=window["last_tick"][mine],
                n_applications=window["n_apps"][mine],
                X=window["X_obs"][mine],
            ),
        )
        want = encode_observation(obs, w_scores[mine], k, ticks, validity, m)
        assert same_bits(got[b], want), b


def test_compiled_loops_refuse_counts_that_miss_the_rows():
    """A compiled loop reads no bounds of its own: counts that do not add up to the flat
    rows (or a negative count) are an error, not a read past the end."""
    from abm import segments
    from abm.selection import select_each

    with pytest.raises(ValueError, match="do not add up"):
        segments.count(np.ones(5, dtype=bool), np.array([2, 2]))
    with pytest.raises(ValueError, match="negative"):
        segments.count(np.ones(3, dtype=bool), np.array([4, -1]))
    with pytest.raises(ValueError, match="do not add up"):
        select_each(np.ones(3), np.array([2, 2]), np.array([1, 1]), [None, None])


def test_take_with_replacements_and_split():
    pop = random_population(12, 3, 0)
    index = np.array([5, 0, 7, 11])
    goal = np.array([0.1, 0.2, 0.3, 0.4])
    part = pop.take(index, {"goal": goal})
    assert part.goal is goal
    for name in SCHEMA:
        if name != "goal":
            np.testing.assert_array_equal(part.data[name], pop.data[name][index], err_msg=name)
    head, tail = part.split(1)
    assert len(head) == 1 and len(tail) == 3
    np.testing.assert_array_equal(tail.ids, [0, 7, 11])
    tail.data["effort"][:] = -1.0  # the parts do not overlap
    assert (head.effort != -1.0).all() and (pop.effort != -1.0).all()
    # a bool mask gives the same rows as its indices; all-True with replacements copies
    mask = np.zeros(12, dtype=bool)
    mask[index] = True
    np.testing.assert_array_equal(pop.take(mask).ids, np.sort(index))
    every = pop.take(np.ones(12, dtype=bool), {"goal": np.zeros(12)})
    assert every.X is not pop.X and (every.goal == 0).all()
    np.testing.assert_array_equal(every.X, pop.X)


def test_concat_with_a_shared_column():
    a, b = random_population(4, 2, 1), random_population(3, 2, 2)
    both = Population.concat([a, b], 2, {"X_obs": "X"})
    assert list(both.data) == list(SCHEMA)
    assert both.X_obs is both.X
    np.testing.assert_array_equal(both.X, np.concatenate([a.X, b.X]))
    np.testing.assert_array_equal(both.ids, np.concatenate([a.ids, b.ids]))
    lone = Population.concat([a, Population.empty(2)], 2, {"X_obs": "X"})
    assert lone.X_obs is a.X and a.X_obs is not a.X  # the part itself is left alone


def test_concat_of_some_columns_is_those_of_the_whole_concat():
    a, b = random_population(4, 2, 1), random_population(3, 2, 2)
    only = ("ids", "X_obs", "X", "advised", "implemented")
    whole = Population.concat([a, b], 2, {"X_obs": "X"})
    for parts in ([a, b], [a, Population.empty(2)], [Population.empty(2)]):
        some = Population.concat(parts, 2, {"X_obs": "X"}, only)
        assert list(some.data) == list(only)
        assert some.X_obs is some.X or len(some) == 0
        if len(parts[0]) and len(parts) == 2 and len(parts[1]):
            for k in only:
                np.testing.assert_array_equal(some.data[k], whole.data[k])


def test_concat_of_repeated_parts_is_the_plain_concatenation():
    """Forks of one snapshot join the same populations over and over: the broadcast copy
    of a repeated block equals np.concatenate, column by column (values, dtype, shape),
    and owns its arrays; parts that do not repeat whole take the plain path."""
    a, b, c = (random_population(n, 3, s) for n, s in ((4, 1), (6, 2), (3, 5)))
    for parts in ([a] * 5, [a, b] * 4, [a, b, c] * 3, [a, b, a], [a, b, a, c], [a, a, b, b]):
        got = Population.concat(parts, 3)
        for k in SCHEMA:
            want = np.concatenate([p.data[k] for p in parts])
            assert got.data[k].dtype == want.dtype and np.array_equal(got.data[k], want)
            assert not np.shares_memory(got.data[k], a.data[k])


def test_a_repeated_population_is_the_concatenation_copied_when_read():
    """Population.repeated (a planner's forks repeat one snapshot's window): the columns
    of concat([p] * n), each made on first read, owned, and left unmade until then."""
    pop = random_population(4, 3, 7)
    for times in (1, 2, 5):
        got = pop.repeated(times)
        if times > 1:
            assert not dict.__contains__(got.data, "X")  # nothing made before a read
        assert len(got) == 4 * times and list(got.data) == list(SCHEMA)
        for k in SCHEMA:
            want = np.concatenate([pop.data[k]] * times)
            assert got.data[k].dtype == want.dtype and np.array_equal(got.data[k], want)
            assert times == 1 or not np.shares_memory(got.data[k], pop.data[k])
        taken = got.take(np.arange(len(got))[::-1])
        np.testing.assert_array_equal(taken.ids, np.concatenate([pop.ids] * times)[::-1])
    assert len(pop.repeated(0)) == 0 and len(Population.empty(3).repeated(4)) == 0


def test_gather_equals_concatenating_then_taking():
    parts = [random_population(9, 3, 3), Population.empty(3), random_population(5, 3, 4)]
    masks = [np.random.default_rng(5).random(len(p)) < 0.5 for p in parts]
    got = Population.gather(parts, [m.nonzero()[0] for m in masks], 3)
    expected = Population.concat(parts, 3).take(np.concatenate(masks))
    assert list(got.data) == list(expected.data)
    for name in got.data:
        assert got.data[name].dtype == expected.data[name].dtype
        np.testing.assert_array_equal(got.data[name], expected.data[name], err_msg=name)
    assert len(Population.gather(parts, [np.zeros(0, np.int64)] * 3, 3)) == 0


# -- large batches -------------------------------------------------------------------------


@pytest.mark.parametrize("z", [1, 3, 7, 8, 10, 16, 23, 128, 129, 300])
@pytest.mark.parametrize("n", [1, 1023, 8192 + 5])
def test_blocked_row_sums_match_numpy_bit_for_bit(z, n):
    """The blocked path's summation order is numpy's, for every z and block boundary."""
    from abm.summation import _blocked_row_sums, _feature_sums_match_numpy

    rng = np.random.default_rng(z * 7919 + n)
    X = rng.standard_normal((n, z)) * np.exp(3.0 * rng.standard_normal((n, z)))
    X[0] = -0.0  # products of -0.0 only: numpy's sum is +0.0
    w = rng.standard_normal(z)
    assert _feature_sums_match_numpy(z)  # numpy of constraints.txt: the path is in use
    assert same_bits(_blocked_row_sums(X, w), np.add.reduce(X * w, axis=1))


@pytest.mark.parametrize("z", [0, 1, 3, 7, 8, 10, 16, 23, 128])
@pytest.mark.parametrize("n", [64, 1023, 8192 + 5])
def test_compiled_row_sums_match_numpy_bit_for_bit(z, n):
    """linear_logit's compiled loop (from 64 rows) sums each row in numpy's order, from
    +0.0, for every z and intercept, signed zeros included."""
    from abm.summation import _compiled_sums_match_numpy, linear_logit

    rng = np.random.default_rng(z * 7919 + n)
    X = rng.standard_normal((n, z)) * np.exp(3.0 * rng.standard_normal((n, z)))
    X[0] = -0.0
    w = rng.standard_normal(z)
    assert _compiled_sums_match_numpy(z)  # numpy of constraints.txt: the loop is in use
    for b in (0.25, 0.0, -0.0):
        assert same_bits(linear_logit(X, w, b), np.add.reduce(X * w, axis=1) + b)


def test_a_compiled_loop_that_disagrees_with_numpy_is_not_used(monkeypatch):
    from abm import compiled, summation

    summation._compiled_sums_match_numpy.cache_clear()
    monkeypatch.setitem(compiled._LOOPS, "linear_rows", lambda X, w, b: np.zeros(len(X)))
    try:
        assert not summation._compiled_sums_match_numpy(10)
        _scores_as_numpy(summation, 500)
    finally:
        summation._compiled_sums_match_numpy.cache_clear()


def test_a_numpy_summing_in_another_order_keeps_the_plain_path(monkeypatch):
    from abm import summation

    summation._feature_sums_match_numpy.cache_clear()
    monkeypatch.setattr(summation, "_COMPILED_FROM", 10**9)  # the blocked path's check
    monkeypatch.setattr(summation, "_pairwise_into_first", _running_sum_into_first)
    try:
        assert not summation._feature_sums_match_numpy(10)
        _scores_as_numpy(summation, 5000)
    finally:
        summation._feature_sums_match_numpy.cache_clear()


def _scores_as_numpy(summation, n: int) -> None:
    """linear_logit of n rows of 10 features has NumPy's own bits (the path it took)."""
    X = np.random.default_rng(0).random((n, 10))
    w = np.linspace(-1.0, 1.0, 10)
    assert same_bits(summation.linear_logit(X, w, 0.5), np.add.reduce(X * w, axis=1) + 0.5)


def _running_sum_into_first(P, lo, n):
    for i in range(lo + 1, lo + n):
        P[lo] += P[i]


@pytest.mark.parametrize(
    ("policy", "scenario"),
    [
        ("threshold", "paper-T5"),
        ("last-threshold:margin=0.3+exact-linear", "paper-T5"),
        # an extension on that carries no change on (outcomes): scores are reused there too
        ("threshold", "improvement"),
    ],
)
def test_reused_scores_are_the_scores_of_the_new_features(policy, scenario, monkeypatch):
    """score_now is M(X) bit for bit on every waiting row, partly implemented ones included."""
    from abm import RecourseModel, batch, stages

    monkeypatch.setattr(batch, "REUSE_FROM", 0)
    implement, partial, reused = stages.implement, [], []

    def counting(stayers, counts, difficulty, beta, episodes, known=None, onehot=None):
        out = implement(stayers, counts, difficulty, beta, episodes, known, onehot)
        reused.append(known is not None)
        some_ok = np.bincount(out.rows[out.ok], minlength=len(stayers)) > 0
        partial.append(int(np.count_nonzero(some_ok & ~out.implemented)))
        return out

    monkeypatch.setattr(stages, "implement", counting)
    m = RecourseModel(scenario, policy, seed=0, ticks=30, agents=False)
    for _ in range(30):
        m.step()
        pop = m.population
        assert same_bits(pop.score_now, m.scorer.score(pop.X))
    assert all(reused)
    if scenario == "paper-T5":  # T = 5 leaves rows with some changes held, others failed
        assert sum(partial) > 0


def test_scores_are_not_reused_where_an_extension_carries_changes_on(monkeypatch):
    """A causal graph moves features beyond x_cf: every row is scored anew."""
    from abm import RecourseModel, batch, stages

    monkeypatch.setattr(batch, "REUSE_FROM", 0)
    implement, reused = stages.implement, []

    def counting(stayers, counts, difficulty, beta, episodes, known=None, onehot=None):
        reused.append(known is not None)
        return implement(stayers, counts, difficulty, beta, episodes, known, onehot)

    monkeypatch.setattr(stages, "implement", counting)
    m = RecourseModel("causal", "threshold", seed=0, ticks=10, agents=False).run()
    assert reused and not any(reused)
    assert same_bits(m.population.score_now, m.scorer.score(m.population.X))


FAST_CASES = [
    {"scenario": "paper", "policy": "threshold", "seed": 0},
    {"scenario": "paper-T5", "policy": "threshold-estimated", "seed": 1},
    {
        "scenario": "paper",
        "policy": "last-threshold:margin=0.05+exact-linear:weights=estimated",
        "seed": 3,
    },
    {
        "scenario": "paper",
        "policy": "hybrid-exact-linear",
        "seed": 1,
        "ticks": 20,
        "tol": (1e-5, 1e-7),
    },
    {"scenario": "paper-T5", "policy": "lookahead", "seed": 0, "ticks": 8},
    {"scenario": "improvement", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "retraining", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "groups", "policy": "threshold", "seed": 0, "ticks": 30},
]


@pytest.mark.parametrize("case", FAST_CASES, ids=lambda c: f"{c['scenario']}-{c['policy']}")
def test_large_pool_paths_reproduce_the_golden_runs(case, monkeypatch):
    """Pool kept in parts and gathered, scores reused, blocked row sums, at every size:
    bitwise the plain paths' run (one machine), which is a golden case."""
    import sys
    from pathlib import Path

    from abm import batch, pool, summation

    golden = Path(__file__).parent / "golden"
    sys.path.insert(0, str(golden))
    try:
        from cases import CASES, fingerprint, run_case
    finally:
        sys.path.remove(str(golden))
    assert case in CASES

    def fingerprints():
        summary, tables = run_case(case)
        return summary, {name: fingerprint(df) for name, df in tables.items()}

    plain = fingerprints()
    monkeypatch.setattr(pool, "GATHER_FROM", 0)
    monkeypatch.setattr(batch, "REUSE_FROM", 0)
    monkeypatch.setattr(summation, "_BLOCK_FROM", 0)
    assert fingerprints() == plain


# -- streams -------------------------------------------------------------------------------


def test_stream_attributes_are_the_named_generators():
    streams = Streams(3)
    assert streams.dropout is streams.get("dropout")
    extra = streams.get("traits")
    assert streams.traits is extra
    fresh = stream(3, "traits")
    assert same_bits(extra.random(4), fresh.random(4))
    with pytest.raises(AttributeError):
        _ = streams.not_a_stream
    odd = streams.get("seed")  # a name taken by an attribute stays reachable by get()
    assert streams.seed == 3 and odd is streams.get("seed")


def test_a_population_copies_and_pickles_with_its_own_arrays():
    """Copies go through __getattr__ before ``data`` is set: they must not recurse."""
    import copy
    import pickle

    X = np.arange(6.0).reshape(3, 2)
    pop = Population.entrants(np.arange(3), X, tick=4, risk_aversion=np.zeros(3))
    for other in (copy.deepcopy(pop), pickle.loads(pickle.dumps(pop))):
        assert other.n_features == 2 and len(other) == 3
        np.testing.assert_array_equal(other.X, X)
        assert other.X is not pop.X and set(other.data) == set(pop.data)
    with pytest.raises(AttributeError):
        _ = pop.no_such_column
