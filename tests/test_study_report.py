"""Study analysis: confidence intervals, Pareto fronts, the report command, its plots and
its self-contained HTML page."""

import base64
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.study import pareto_front, summarize

PNG = b"\x89PNG\r\n\x1a\n"


def test_summarize_gives_mean_and_student_t_interval():
    runs = pd.DataFrame(
        {
            "policy": ["a"] * 3 + ["b"] * 2 + ["c"],
            "x": [1.0, 2.0, 3.0, 5.0, np.nan, 4.0],
            "status": ["ok"] * 6,
        }
    )
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
    path.write_text(
        'name = "small"\nscenario = "paper"\nticks = 6\nseeds = 3\n'
        'metrics = ["rr", "rf", "threshold"]\nreport_metrics = ["rr", "rf", "threshold"]\n'
        '[sweep]\nbeta = [0.02, 0.05]\nvalidity = [1, 3]\npolicy = ["threshold", "threshold-true"]\n'
    )
    out = tmp / "out"
    result = CliRunner().invoke(
        app, ["study", "run", str(path), "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    # `study run` ends by writing the report and printing where
    assert (out / "report.html").is_file() and "report.html" in result.output
    return out


def test_report_prints_intervals_and_writes_plots(study_dir, tmp_path):
    result = CliRunner().invoke(
        app, ["study", "report", str(study_dir), "--plots", str(tmp_path / "p")]
    )
    assert result.exit_code == 0, result.output
    assert "mean ± 95 % CI" in result.output and "±" in result.output
    names = sorted(p.name for p in (tmp_path / "p").glob("*.png"))
    assert names == sorted(
        [f"{m}_vs_{x}.png" for m in ("rr", "rf", "threshold") for x in ("beta", "validity")]
        + ["rr_rf_pareto.png", "policies.png"]
    )
    assert all((tmp_path / "p" / n).read_bytes()[:8] == PNG for n in names)
    table = pd.read_csv(tmp_path / "p" / "summary.csv")
    assert len(table) == 2 * 2 * 2 and set(table["n"]) == {3}
    # threshold per run is the mean over ticks of the kept column
    from lab.study import load_study

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


# -- the HTML page ------------------------------------------------------------------------
def _status_counts(page: str) -> list[int]:
    """runs, completed, errors, missing from the page's status table."""
    table = re.search(r"<table class=status>(.*?)</table>", page, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
    return [int(re.sub(r"<[^>]+>", "", c)) for c in cells]


def _assert_self_contained(page: str) -> None:
    assert "http:" not in page and "https:" not in page
    assert "<script" not in page and "<link" not in page and "url(" not in page
    sources = re.findall(r'src="([^"]*)"', page)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    for s in sources:  # every embedded image decodes to a PNG
        assert base64.b64decode(s.split(",", 1)[1])[:8] == PNG


@pytest.mark.slow  # renders every plot of the report
def test_html_report_is_one_self_contained_page(study_dir, tmp_path):
    page_path = tmp_path / "page" / "small.html"
    result = CliRunner().invoke(
        app,
        [
            "study",
            "report",
            str(study_dir),
            "--html",
            str(page_path),
            "--plots",
            str(tmp_path / "p"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert str(page_path) in result.output.replace("\n", "")
    assert [p.name for p in page_path.parent.iterdir()] == ["small.html"]
    page = page_path.read_text()
    _assert_self_contained(page)
    # what the study is, its swept parameters and metrics, and its runs: 2 x 2 x 2 x 3 seeds
    assert "<h1>Study report: small</h1>" in page
    for name in ("beta", "validity", "threshold-true", "rr", "rf", "threshold"):
        assert f">{name}<" in page, name
    assert _status_counts(page) == [24, 24, 0, 0]
    # the outcome card per policy; the figures of mechanisms that are off are left out
    assert "<h2>Outcome card" in page and "CVaR95 of the effort" in page
    assert "demographic-parity" not in page
    # one plot per metric and swept parameter, the policy comparison and the Pareto plot
    assert len(re.findall(r"<img ", page)) == 3 * 2 + 2
    manifest = json.loads((study_dir / "manifest.json").read_text())
    from abm.provenance import RESULTS_SCHEMA

    assert manifest["results_schema"] == RESULTS_SCHEMA
    assert manifest["git"]["commit"] is None or manifest["git"]["commit"] in page
    assert f"<dt>results schema</dt><dd>{RESULTS_SCHEMA}</dd>" in page
    assert "validity = [1, 3]" in page  # the study file, verbatim


@pytest.mark.slow  # copies and re-reports the whole study
def test_html_report_counts_errors_and_missing_runs(study_dir, tmp_path):
    import shutil

    from lab.study import Study
    from lab.study.analysis import build_report
    from lab.study.page import html_report
    from lab.study.runner import store_result

    out = tmp_path / "partial"
    shutil.copytree(study_dir, out)
    study = Study.from_toml(study_dir.parent / "s.toml")
    runs = study.runs()
    # one run failed, one never finished (both seeds of the first sweep point)
    assert runs[0].params == runs[1].params and runs[0].seed != runs[1].seed
    store_result(
        out,
        study,
        runs[0],
        {"status": "error", "error": "RuntimeError: boom", "traceback": "", "elapsed_s": math.nan},
    )
    (out / "runs" / f"{runs[1].run_id}.parquet").unlink()
    page = html_report(out).read_text()
    assert _status_counts(page) == [24, 22, 1, 1]
    assert "RuntimeError: boom" in page and runs[0].run_id in page
    assert "Missing runs have not finished yet" in page
    # means and intervals use the completed runs only: the first point keeps one seed
    rep = build_report(out)
    assert sorted(rep.table["n"]) == [1] + [3] * 7 and math.isnan(rep.table["rr_ci"].iloc[0])


def test_a_study_over_worlds_reports_the_card_with_worlds_as_a_random_effect(tmp_path):
    path = tmp_path / "ws.toml"
    path.write_text(
        'name = "ws"\nscenario = "groups"\nticks = 6\nseeds = 2\nworld_seeds = 3\n'
        'metrics = ["rr", "rf"]\n[sweep]\npolicy = ["none", "threshold"]\n'
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["study", "run", str(path), "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "Outcome card: mean [95 % interval] over 3 worlds" in page
    assert "demographic-parity" in page  # groups on
