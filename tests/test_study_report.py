"""Study analysis: confidence intervals, Pareto fronts, the report command and its plots."""

import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from abm.app.cli import app
from abm.app.study import pareto_front, summarize

PNG = b"\x89PNG\r\n\x1a\n"


def test_summarize_gives_mean_and_student_t_interval():
    runs = pd.DataFrame({"policy": ["a"] * 3 + ["b"] * 2 + ["c"], "x": [1.0, 2.0, 3.0, 5.0, np.nan, 4.0],
                         "status": ["ok"] * 6})  # fmt: skip
    table = summarize(runs, ["policy"], ["x"]).set_index("policy")
    assert table.loc["a", "x"] == 2.0
    # t(0.975, df=2) = 4.302653; sd = 1; n = 3
    assert table.loc["a", "x_ci"] == pytest.approx(4.302652729911275 / math.sqrt(3))
    # NaN is left out: one defined value, so no interval
    assert table.loc["b", "x"] == 5.0 and math.isnan(table.loc["b", "x_ci"])
    assert list(table["n"]) == [3, 2, 1]


def test_summarize_skips_failed_runs():
    runs = pd.DataFrame({"policy": ["a", "a"], "x": [1.0, 100.0], "status": ["ok", "error"]})
    assert summarize(runs, ["policy"], ["x"])["x"].tolist() == [1.0]


def test_pareto_front_keeps_the_non_dominated_points():
    x = np.array([0.1, 0.2, 0.3, 0.25, 0.3, 0.05])
    y = np.array([0.9, 0.5, 0.6, 0.7, 0.2, 0.95])
    front = pareto_front(x, y)
    # (0.2, 0.5) is beaten by (0.25, 0.7); (0.3, 0.2) by (0.3, 0.6)
    assert sorted(front.tolist()) == [0, 2, 3, 5]
    assert np.all(np.diff(x[front]) >= 0) and np.all(np.diff(y[front]) <= 0)


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "s.toml"
    path.write_text('name = "small"\nscenario = "paper"\nticks = 6\nseeds = 3\n'
                    'metrics = ["rr", "rf", "threshold"]\nreport_metrics = ["rr", "rf", "threshold"]\n'
                    '[sweep]\nbeta = [0.02, 0.05]\nvalidity = [1, 3]\npolicy = ["threshold", "threshold-true"]\n')  # fmt: skip
    out = tmp / "out"
    result = CliRunner().invoke(
        app, ["study", "run", str(path), "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    return out


def test_report_prints_intervals_and_writes_plots(study_dir, tmp_path):
    result = CliRunner().invoke(
        app, ["study", "report", str(study_dir), "--plots", str(tmp_path / "p")]
    )
    assert result.exit_code == 0, result.output
    assert "mean ± 95 % CI" in result.output and "±" in result.output
    names = sorted(p.name for p in (tmp_path / "p").glob("*.png"))
    assert names == sorted([f"{m}_vs_{x}.png" for m in ("rr", "rf", "threshold") for x in ("beta", "validity")]
                           + ["rr_rf_pareto.png"])  # fmt: skip
    assert all((tmp_path / "p" / n).read_bytes()[:8] == PNG for n in names)
    table = pd.read_csv(tmp_path / "p" / "summary.csv")
    assert len(table) == 2 * 2 * 2 and set(table["n"]) == {3}
    # threshold per run is the mean over ticks of the kept column
    from abm.app.study import load_study

    ticks, runs = load_study(study_dir)
    first = runs.iloc[0]
    assert first.threshold == pytest.approx(ticks[ticks.run_id == first.run_id].threshold.mean())


def test_report_errors_are_one_line(study_dir, tmp_path):
    result = CliRunner().invoke(app, ["study", "report", str(study_dir), "--metrics", "nope"])
    assert result.exit_code == 2 and "metric(s) not in the results: nope" in result.output
    result = CliRunner().invoke(app, ["study", "report", str(tmp_path)])
    assert result.exit_code == 2 and "not a study directory" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('scenario = "paper"\n[sweep]\nk = {start = 5, stop = 1, step = 1}\n')
    result = CliRunner().invoke(app, ["study", "run", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "sweep.k: range stop (1) must be >= start (5)" in result.output
    assert "Traceback" not in result.output


def test_check_prints_the_plan(tmp_path):
    result = CliRunner().invoke(app, ["study", "check", "studies/threshold-trap.toml"])
    assert result.exit_code == 0, result.output
    assert "threshold-trap:" in result.output and "runs" in result.output
