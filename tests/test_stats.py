"""lab.study.stats: the interval chosen by coverage, the tests, the correction, the verdicts.

The coverage test simulates two-level data as studies produce them (a world effect, then
episode noise; 10 episodes per world) with a known mean and checks that nominal 95 %
intervals cover it often enough: it is what chose the interval (see the module docstring)
and what would catch a worse one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.weightstats import DescrStatsW

from lab.study.analysis import paired_rows
from lab.study.stats import (
    BOUNDS,
    MIN_WORLDS_FOR_VERDICT,
    add_verdicts,
    adjust,
    difference_p,
    judge,
    paired_interval,
    tost_p,
    verdict,
    world_interval,
    world_intervals,
    world_means,
)


def nested_bootstrap(values, resamples=2000, seed=0, level=0.95):
    """The percentile bootstrap the project used before (worlds, then episodes within them,
    resampled): kept here only to show that it fails the coverage bar."""
    v = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    n_w, n_e = v.shape
    w = rng.integers(0, n_w, (resamples, n_w))
    e = rng.integers(0, n_e, (resamples, n_w, n_e))
    boot = np.nanmean(world_means(v[w[:, :, None], e]), axis=1)
    lo, hi = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(np.nanmean(world_means(v))), float(lo), float(hi)


MU, WORLD_SD, EPISODE_SD, EPISODES = 0.7, 0.15, 0.05, 10
REPS = 20_000  # per setting: the coverage's standard error is 0.15 percentage points
# (worlds, world effects) -> the coverage a nominal 95 % interval must reach
BARS = {
    (10, "normal"): 0.94,
    (20, "normal"): 0.94,
    (10, "exponential"): 0.90,
    (20, "exponential"): 0.92,
}


def simulate(worlds: int, effects: str, reps: int, seed: int) -> np.ndarray:
    """(reps, worlds, EPISODES) studies of true mean MU: a world effect of SD WORLD_SD,
    normal or exponential (skewed, centred), plus episode noise of SD EPISODE_SD."""
    rng = np.random.default_rng(seed)
    if effects == "normal":
        world = rng.normal(0.0, WORLD_SD, (reps, worlds, 1))
    else:
        world = WORLD_SD * (rng.exponential(1.0, (reps, worlds, 1)) - 1.0)
    return MU + world + rng.normal(0.0, EPISODE_SD, (reps, worlds, EPISODES))


def covers(lo: np.ndarray, hi: np.ndarray) -> float:
    return float(np.mean((lo <= MU) & (MU <= hi)))


def t_candidate(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain Student-t interval on the world means, (reps,) each."""
    m = world_means(values)
    n = m.shape[-1]
    half = sps.t.ppf(0.975, n - 1) * m.std(axis=-1, ddof=1) / math.sqrt(n)
    return m.mean(axis=-1) - half, m.mean(axis=-1) + half


def bca_candidate(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's BCa cluster bootstrap on the world means, (reps,) each."""
    res = sps.bootstrap(
        (world_means(values),),
        np.mean,
        axis=-1,
        vectorized=True,
        method="BCa",
        n_resamples=999,
        rng=np.random.default_rng(1),
    )
    return res.confidence_interval


@pytest.fixture(scope="module")
def coverage() -> dict[tuple[int, str], dict[str, float]]:
    """(worlds, effects) -> method -> coverage of nominal 95 % (printed with -s)."""
    table = {}
    for i, (worlds, effects) in enumerate(
        (w, e) for w in (5, 10, 20) for e in ("normal", "exponential")
    ):
        v = simulate(worlds, effects, REPS, seed=100 + i)
        _, lo, hi, n = world_intervals(v)
        assert (n == worlds).all()
        table[(worlds, effects)] = {"chosen": covers(lo, hi), "t": covers(*t_candidate(v))}
    print("\ncoverage of nominal 95 % (chosen: Hall-corrected t; t: plain t on world means)")
    for key, row in table.items():
        print(key, {k: round(x, 3) for k, x in row.items()})
    return table


@pytest.mark.parametrize("setting", list(BARS))
def test_the_interval_covers_with_ten_or_more_worlds(coverage, setting, record_property):
    record_property(f"coverage {setting}", coverage[setting])
    assert coverage[setting]["chosen"] >= BARS[setting]


def test_five_worlds_coverage_is_recorded_not_required(coverage, record_property):
    five = {e: coverage[(5, e)]["chosen"] for e in ("normal", "exponential")}
    record_property("coverage 5 worlds", five)
    # only a sanity check: with 5 worlds no verdict is given (MIN_WORLDS_FOR_VERDICT)
    assert MIN_WORLDS_FOR_VERDICT > 5 and five["normal"] > 0.9


def test_plain_t_has_no_margin_for_skewed_worlds(coverage):
    # why plain t was not chosen: it passes with normal worlds but sits on the bars with
    # skewed ones (0.90 and 0.92 on average), well below the chosen interval
    for worlds in (10, 20):
        assert coverage[(worlds, "normal")]["t"] >= BARS[(worlds, "normal")]
        skewed = coverage[(worlds, "exponential")]
        assert skewed["t"] < skewed["chosen"] - 0.02


def test_bca_and_the_old_percentile_bootstrap_fail_the_bar_at_ten_worlds():
    v = simulate(10, "normal", 2000, seed=7)
    assert covers(*bca_candidate(v)) < 0.92
    # the old nested percentile bootstrap, one study at a time (slow: fewer studies)
    old = np.array([nested_bootstrap(x, resamples=1000, seed=i)[1:] for i, x in enumerate(v[:600])])
    assert covers(old[:, 0], old[:, 1]) < 0.93


# -- the interval: known answers and invariants -------------------------------------------


def test_symmetric_world_means_give_the_student_t_interval():
    # world means 1..5 have no skewness: Hall's correction leaves statsmodels' t interval
    v = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0], [5.0, 5.0]])
    mean, lo, hi, n = world_interval(v)
    assert (mean, n) == (3.0, 5)
    assert (lo, hi) == pytest.approx(DescrStatsW(np.arange(1.0, 6.0)).tconfint_mean())


def test_skewed_world_means_solve_halls_equation():
    m = np.array([0.0, 0.0, 0.0, 0.1, 0.5, 0.0, 0.2, 0.0, 0.0, 1.0])
    mean, lo, hi, n = world_interval(m[:, None])
    s = m.std(ddof=1)
    gamma = np.mean((m - m.mean()) ** 3) / s**3

    def g(w):  # Hall's transformation of (mean - mu) / s
        return w + gamma * w**2 / 3 + gamma**2 * w**3 / 27 + gamma / (6 * n)

    q = sps.t.ppf(0.975, n - 1)
    assert math.sqrt(n) * g((mean - lo) / s) == pytest.approx(q)
    assert math.sqrt(n) * g((mean - hi) / s) == pytest.approx(-q)
    # right skew: the interval reaches further up than t's, less far down
    t_lo, t_hi = DescrStatsW(m).tconfint_mean()
    assert hi - mean > t_hi - mean and mean - lo < mean - t_lo and lo <= mean <= hi


def test_the_mean_is_the_mean_of_world_means_with_nan_skipped_and_empty_worlds_dropped():
    v = np.array([[1.0, np.nan, 3.0], [10.0, 10.0, 10.0], [np.nan] * 3, [4.0, 4.0, np.nan]])
    mean, lo, hi, n = world_interval(v)
    assert n == 3 and mean == pytest.approx((2.0 + 10.0 + 4.0) / 3) and lo < mean < hi
    assert world_means(v)[2] != world_means(v)[2]
    # the same as dropping the empty world by hand
    assert world_interval(v[[0, 1, 3]]) == (mean, lo, hi, 3)


def test_degenerate_inputs():
    assert world_interval(np.full((4, 3), 0.25)) == (0.25, 0.25, 0.25, 4)
    mean, lo, hi, n = world_interval(np.full((2, 2), np.nan))
    assert n == 0 and all(math.isnan(x) for x in (mean, lo, hi))
    # one world: the interval is over its episodes, about that world alone
    one = np.array([[np.nan] * 4, [0.1, 0.2, 0.3, 0.4]])
    mean, lo, hi, n = world_interval(one)
    assert n == 1 and mean == pytest.approx(0.25)
    assert (lo, hi) == pytest.approx(DescrStatsW(one[1]).tconfint_mean())
    with pytest.raises(ValueError, match="worlds, episodes"):
        world_interval(np.zeros(3))


def test_the_interval_is_equivariant_and_vectorised_alike():
    v = simulate(12, "exponential", 3, seed=3)
    batch = world_intervals(v)
    for r in range(3):
        one = world_interval(v[r])
        assert one == pytest.approx(tuple(x[r] for x in batch))
        shifted = world_interval(2.0 * v[r] + 1.0)
        assert shifted[:3] == pytest.approx((2 * one.mean + 1, 2 * one.lo + 1, 2 * one.hi + 1))
    # a narrower level gives a nested interval
    _, lo90, hi90, _ = world_interval(v[0], level=0.9)
    assert batch[1][0] < lo90 < hi90 < batch[2][0]


# -- paired differences and tests -----------------------------------------------------


def test_paired_interval_is_the_interval_of_differences_on_shared_seeds():
    rng = np.random.default_rng(4)
    base = simulate(10, "normal", 1, seed=5)[0]
    pol = base + 0.03 + rng.normal(0, 0.01, base.shape)
    pol[0, 0] = np.nan  # that episode's pair leaves the difference
    d = paired_interval(pol, base)
    assert d == world_interval(pol - base) and d.lo < 0.03 < d.hi
    # pairing removes the world effect: far narrower than the levels' intervals
    assert d.hi - d.lo < (world_interval(base).hi - world_interval(base).lo) / 5
    with pytest.raises(ValueError, match="pair up"):
        paired_interval(pol, base[:5])


def test_the_difference_test_is_a_t_test_on_world_means():
    rng = np.random.default_rng(6)
    d = rng.normal(0.01, 0.02, (12, 5))
    m = d.mean(axis=1)
    assert difference_p(d) == pytest.approx(sps.ttest_1samp(m, 0.0).pvalue)
    assert difference_p(d + 1.0, np.ones_like(d)) == pytest.approx(difference_p(d))
    assert math.isnan(difference_p(d[:1]))
    assert difference_p(np.full((10, 2), 0.1)) == 0.0 and difference_p(np.zeros((10, 2))) == 1.0


def test_tost_known_answers():
    rng = np.random.default_rng(8)
    base = rng.normal(0.6, 0.15, (20, 10))
    # the same policy twice: level at once
    assert tost_p(base, base.copy(), 0.02) == 0.0
    near = base + rng.normal(0.0, 0.005, base.shape)
    assert tost_p(near, base, 0.02) < 1e-6
    # a shift of 0.1: not level, whatever the noise
    assert tost_p(base + 0.1 + rng.normal(0.0, 0.005, base.shape), base, 0.02) > 0.99
    # by hand: the larger of the two one-sided t-test p-values
    m = (near - base).mean(axis=1)
    se = m.std(ddof=1) / math.sqrt(m.size)
    by_hand = max(
        sps.t.sf((m.mean() + 0.02) / se, m.size - 1), sps.t.cdf((m.mean() - 0.02) / se, m.size - 1)
    )
    assert tost_p(near, base, 0.02) == pytest.approx(by_hand, rel=1e-9)
    # no bound stated: no equivalence test
    assert math.isnan(tost_p(near, base)) and math.isnan(tost_p(near, base, 0.0))


# -- multiplicity ---------------------------------------------------------------------


def test_holm_and_bh_against_hand_computed_values():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04,
    # then running maxima 0.02, 0.03, 0.06, 0.06
    adj, ok = adjust(p)
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02]) and ok.tolist() == [1, 0, 0, 1]
    # BH: times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04, then running minima from the top
    adj, ok = adjust(p, method="bh")
    assert adj == pytest.approx([0.02, 0.04, 0.04, 0.02]) and ok.all()
    # an untested contrast (NaN) stays out of the family
    adj, ok = adjust([0.01, math.nan, 0.04, 0.03, 0.005])
    assert math.isnan(adj[1]) and not ok[1]
    assert adj[[0, 2, 3, 4]] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    with pytest.raises(ValueError, match="method"):
        adjust(p, method="bonferroni-ish")


# -- verdicts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("diff", "p", "tost", "n", "direction", "expected"),
    [
        (0.05, 0.001, math.nan, 10, True, "better"),
        (0.05, 0.001, math.nan, 10, False, "worse"),
        (-0.05, 0.001, math.nan, 10, False, "better"),
        (-0.05, 0.001, math.nan, 10, None, "lower"),
        (0.05, 0.001, 0.001, 10, None, "higher"),  # a surviving difference wins
        (0.001, 0.6, 0.01, 10, True, "level"),
        (0.001, 0.6, math.nan, 10, True, "inconclusive"),  # no bound stated
        (0.01, 0.06, 0.2, 20, True, "inconclusive"),
        (0.05, 0.001, 0.001, 5, True, "inconclusive (5 worlds)"),
        (0.05, 0.001, 0.001, 1, True, "inconclusive (1 world)"),
    ],
)
def test_verdict_logic(diff, p, tost, n, direction, expected):
    assert verdict(diff, p, tost, n, direction) == expected


def test_a_difference_is_called_only_where_its_printed_interval_excludes_zero():
    # the t-test survives, but Hall's skew-corrected interval covers 0 (a skewed world)
    assert verdict(-0.15, 0.01, math.nan, 10, True, lo=-0.19, hi=0.05) == "inconclusive"
    assert verdict(-0.15, 0.01, 0.01, 10, True, lo=-0.19, hi=0.05) == "level"
    assert verdict(-0.15, 0.01, math.nan, 10, True, lo=-0.19, hi=-0.02) == "worse"
    assert verdict(0.15, 0.01, math.nan, 10, None, lo=0.0, hi=0.2) == "inconclusive"
    # judge passes each contrast's interval; without intervals the test alone decides
    args = ([-0.15, -0.15], [0.001, 0.001], [1, 1], [10, 10], True)
    _, _, said = judge(*args, lo=[-0.19, -0.19], hi=[0.05, -0.1])
    assert said == ["inconclusive", "worse"]
    assert judge([-0.15], [0.001], [1], [10], True)[2] == ["worse"]


# a figure with a direction (lower is better) and no stated bound
COST = "cost_recommended"


def _cells(rng, worlds: int, shift: dict[str, float]) -> dict[str, dict[str, np.ndarray]]:
    base = simulate(worlds, "normal", 2, seed=int(rng.integers(1000)))
    cells = {"base": {"rr": base[0], COST: base[1]}}
    for name, s in shift.items():
        noise = rng.normal(0.0, 0.004, (2, worlds, EPISODES))
        cells[name] = {"rr": base[0] + s + noise[0], COST: base[1] + s + noise[1]}
    return cells


def test_paired_rows_report_intervals_p_values_and_bounds():
    rng = np.random.default_rng(9)
    cells = _cells(rng, 12, {"up": 0.05, "same": 0.0})
    rows = pd.DataFrame(paired_rows(cells, ("rr", COST), {"b": "base"}, head={"study": "s"}))
    at = rows.set_index(["policy", "figure"])
    for (policy, fig), r in at.iterrows():
        assert (r["mean"], r["lo"], r["hi"], r["worlds"]) == world_interval(cells[policy][fig])
        assert r["episodes"] == EPISODES and r["study"] == "s"
        assert r["bound"] == BOUNDS["rr"] if fig == "rr" else math.isnan(r["bound"])
    up = at.loc[("up", "rr")]
    d = paired_interval(cells["up"]["rr"], cells["base"]["rr"])
    assert (up["vs_b"], up["vs_b_lo"], up["vs_b_hi"], up["vs_b_worlds"]) == d
    assert up["vs_b_p"] == difference_p(cells["up"]["rr"], cells["base"]["rr"]) < 1e-6
    assert up["vs_b_tost_p"] > 0.99
    assert at.loc[("same", "rr"), "vs_b_tost_p"] < 1e-6
    assert math.isnan(at.loc[("same", COST), "vs_b_tost_p"])  # cost has no stated bound
    assert at.loc["base"][["vs_b", "vs_b_p", "vs_b_tost_p"]].isna().all().all()


def test_add_verdicts_corrects_one_family_and_reads_directions():
    rng = np.random.default_rng(10)
    cells = _cells(rng, 12, {"up": 0.05, "same": 0.0, "down": -0.05})
    rows = pd.DataFrame(paired_rows(cells, ("rr", COST), {"b": "base"}))
    out = add_verdicts(rows, ["b"])
    v = out.set_index(["policy", "figure"])["vs_b_verdict"]
    assert v[("up", "rr")] == "better" and v[("down", "rr")] == "worse"
    assert v[("up", COST)] == "worse" and v[("down", COST)] == "better"  # lower is better
    assert v[("same", "rr")] == "level" and v[("same", COST)] == "inconclusive"  # no bound
    assert v[("base", "rr")] == ""
    # one family: Holm over the 6 contrasts with a baseline, TOST p-values likewise
    tested = out.dropna(subset=["vs_b"])
    assert len(tested) == 6
    assert tested["vs_b_p_adj"].to_numpy() == pytest.approx(adjust(tested["vs_b_p"])[0])
    tost = adjust(tested["vs_b_tost_p"])[0]
    assert tested["vs_b_tost_p_adj"].to_numpy() == pytest.approx(tost, nan_ok=True)
    # no direction given for any figure: higher / lower
    v = add_verdicts(rows, ["b"], higher_is_better={}).set_index(["policy", "figure"])
    assert v.loc[("up", COST), "vs_b_verdict"] == "higher"
    # 5 worlds: intervals and p-values, but no verdict
    few = paired_rows(_cells(rng, 5, {"up": 0.05}), ("rr",), {"b": "base"})
    few = add_verdicts(pd.DataFrame(few), ["b"])
    row = few[few.policy == "up"].iloc[0]
    assert row["vs_b_verdict"] == "inconclusive (5 worlds)" and row["vs_b_p"] < 0.05
    assert math.isnan(row["vs_b_p_adj"])
