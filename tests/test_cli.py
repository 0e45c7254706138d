"""The command line end to end."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from abm.app.cli import app

runner = CliRunner()

TICK_COLUMNS = ["tick", "threshold", "n_applicants", "n_accepted", "n_rejected", "n_dropped",
                "n_reapplied", "n_succ", "rr", "rf", "gini", "mean_cost"]  # fmt: skip
SUMMARY_KEYS = ["scenario", "policy", "seed", "ticks", "rr", "rf", "gini", "mean_cost",
                "n_accepted", "n_dropped", "versions"]  # fmt: skip


def test_run_writes_everything(tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", "--scenario", "paper-T5", "--policy", "threshold", "--ticks", "30",
                                 "--seed", "2", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "recourse reliability" in result.output
    ticks = pd.read_parquet(out / "ticks.parquet")
    assert list(ticks.columns[: len(TICK_COLUMNS)]) != [] and set(TICK_COLUMNS) <= set(
        ticks.columns
    )
    assert len(ticks) == 30
    cands = pd.read_parquet(out / "candidates.parquet")
    assert {"cid", "tick", "score", "accepted", "goal", "dx_0", "ok_0", "exit"} <= set(
        cands.columns
    )
    summary = json.loads((out / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(summary)
    assert summary["ticks"] == 30 and summary["seed"] == 2 and summary["scenario"] == "paper-T5"
    assert summary["rr"] == pytest.approx(ticks["rr"].mean(skipna=True))
    assert (out / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_with_overrides_and_toml(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text('base = "paper"\nk = 4\n')
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", "--scenario", str(scen), "--set", "beta=0.01", "--ticks", "5",
                                 "--no-events", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["k"] == 4 and summary["config"]["beta"] == 0.01
    assert not (out / "candidates.parquet").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--policy", "bogus"], "unknown policy 'bogus'"),
        (["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["run", "--set", "beta=-1"], "beta must be a number in (0, inf]"),
        (["run", "--set", "kk=3"], "unknown scenario field(s): kk"),
        (["run", "--set", "k"], "--set expects KEY=VALUE"),
        (["run", "--ticks", "0"], "ticks must be an integer in [1, 1000000]"),
        (
            ["run", "--policy", "last-threshold+exact-linear:weights=wrong"],
            "weights must be one of",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message, tmp_path):
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert message in text
    assert "Traceback" not in result.output


def test_listings():
    result = runner.invoke(app, ["scenarios"])
    assert (
        result.exit_code == 0
        and "motivating-example" in result.output
        and "paper-T5-hard" in result.output
    )
    result = runner.invoke(app, ["policies"])
    assert result.exit_code == 0 and "threshold" in result.output and "none" in result.output
