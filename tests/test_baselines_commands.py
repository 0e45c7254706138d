"""evaluate / bench-recommenders / calibrate end to end."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.evaluation import evaluate, evaluate_many

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def test_evaluate_is_paired_and_reproducible():
    a = evaluate("paper", "threshold", episodes=3, seed=5, ticks=20)
    b = evaluate("paper", "threshold", episodes=3, seed=5, ticks=20)
    # NaN != NaN: the card's undefined figures compare as text
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    one = evaluate("paper", "threshold", episodes=1, seed=5, ticks=20)["per_episode"][0]
    assert json.dumps(a["per_episode"][0]) == json.dumps(one)
    assert {"rr_mean", "rr_std", "rf_mean", "rf_std", "gini_mean", "cost_mean"} <= set(a)
    with pytest.raises(ValueError, match="episodes = 0 is not allowed"):
        evaluate("paper", "threshold", episodes=0)


def test_evaluate_pairs_episode_i_with_seed_s_plus_i_for_every_policy(tmp_path):
    from abm.model import RecourseModel

    results = evaluate_many(
        "paper", ["threshold", "none"], episodes=2, seed=7, ticks=6, store=tmp_path / "store"
    )
    for r in results:
        assert r["seeds"] == [7, 8]
        for i, ep in enumerate(r["per_episode"]):
            model = RecourseModel(
                "paper", r["policy"], seed=7 + i, ticks=6, agents=False, record_events=False
            ).run()
            s = model.summary()
            assert ep["rr"] == s["rr"] or (ep["rr"] != ep["rr"] and s["rr"] != s["rr"])
            assert ep["n_unadvised"] == int(model.tick_table()["n_unadvised"].sum())
    # the same policies on the same store: nothing runs again, the numbers are the same
    again = evaluate_many(
        "paper", ["threshold", "none"], seeds="7-8", ticks=6, store=tmp_path / "store"
    )
    assert json.dumps(again) == json.dumps(results)  # NaN (policy none: no RR) compares as text


@pytest.mark.slow
def test_evaluate_on_local_workers_matches_serial():
    serial = evaluate_many("paper", ["threshold", "threshold-true"], seeds="7-8", ticks=6)
    local = evaluate_many(
        "paper", ["threshold", "threshold-true"], seeds=[7, 8], workers=2, ticks=6
    )
    assert json.dumps(local, sort_keys=True) == json.dumps(serial, sort_keys=True)


@pytest.mark.slow
def test_evaluate_command_writes_json(tmp_path):
    out = tmp_path / "ev"
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--policy",
            "threshold",
            "--policy",
            "threshold-ustun",
            "--episodes",
            "2",
            "--seed",
            "3",
            "--set",
            "ticks=10",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "RR" in res.output and "RF" in res.output
    data = json.loads((out / "evaluation.json").read_text())
    for key in (
        "scenario",
        "policy",
        "episodes",
        "seed",
        "rr_mean",
        "rr_std",
        "rf_mean",
        "rf_std",
        "gini_mean",
        "cost_mean",
    ):
        assert key in data
    assert data["episodes"] == 2 and data["seed"] == 3
    assert [r["policy"] for r in data["results"]] == ["threshold", "threshold-ustun"]
    assert (out / "evaluation.png").read_bytes()[:8] == PNG
    bad = runner.invoke(app, ["evaluate", "--policy", "bogus", "--episodes", "1"])
    assert bad.exit_code == 2 and "policy = 'bogus' is not registered" in bad.output
    seeds = runner.invoke(
        app, ["evaluate", "--seeds", "3-4", "--set", "ticks=10", "--out", str(out)]
    )
    assert seeds.exit_code == 0, seeds.output
    again = json.loads((out / "evaluation.json").read_text())
    assert again["seeds"] == [3, 4] and again["rr_mean"] == data["rr_mean"]


@pytest.mark.slow
def test_bench_recommenders_command(tmp_path):
    res = runner.invoke(
        app,
        [
            "bench-recommenders",
            "--n",
            "12",
            "--seed",
            "1",
            "--out",
            str(tmp_path),
            "-r",
            "exact-linear",
            "-r",
            "ustun",
            "-r",
            "wachter",
        ],
    )
    assert res.exit_code == 0, res.output
    df = pd.read_csv(tmp_path / "recommenders.csv").set_index("recommender")
    assert list(df.columns[:3]) == ["error", "cost", "seconds_per_recommendation"]
    assert df.loc["ustun", "error"] < 1e-12 and df.loc["wachter", "error"] <= 1e-3
    # with the true difficulties the exact-linear solution is the cheapest that reaches g
    floor = df.loc["exact-linear (true d)", "cost"]
    assert (df["cost"] >= floor - 1e-12).all()
    assert (tmp_path / "recommenders.png").read_bytes()[:8] == PNG


def test_calibrate_command(tmp_path):
    res = runner.invoke(
        app,
        [
            "calibrate",
            "--policy",
            "threshold",
            "--episodes",
            "1",
            "--workers",
            "1",
            "--grid",
            '{"rho": [1.0, 4.0]}',
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    df = pd.read_csv(tmp_path / "calibration.csv")
    assert sorted(df["rho"]) == [1.0, 4.0] and df["distance"].is_monotonic_increasing
    assert (tmp_path / "calibration.png").read_bytes()[:8] == PNG
    bad = runner.invoke(app, ["calibrate", "--grid", '{"rho": [-1]}', "--episodes", "1"])
    assert bad.exit_code == 2 and "rho = -1" in bad.output


def test_calibrate_is_a_function_that_raises_on_a_bad_grid():
    """Called from Python the command raises the one-line error; the CLI prints it (exit 2)."""
    from abm.validation import ConfigError
    from lab.commands.recommenders import calibrate

    with pytest.raises(ConfigError, match=r"--grid = '\[1\]' is not allowed; allowed: a JSON"):
        calibrate(grid="[1]")
    bad = runner.invoke(app, ["calibrate", "--grid", "{nope", "--episodes", "1"])
    assert bad.exit_code == 2 and bad.output.startswith("error: --grid = '{nope'"), bad.output
    assert len(bad.output.strip().splitlines()) == 1
