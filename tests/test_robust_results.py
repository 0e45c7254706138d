"""The committed robust-recourse results: Table 1 (results/robust/) against the paper and
the code, and the retraining study's report (docs/studies/robust-retrain*)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lab.reproduce.robust import summarise_table1, table1_checks, table1_study
from lab.study import EXPERIMENTS, execute_run
from lab.study.trials.robust import (
    CELLS,
    METHODS,
    N_FOLDS,
    PAPER_TABLE1,
    TOLERANCE,
    table1_cell,
)

ROOT = Path(__file__).resolve().parents[1]
TABLE1 = ROOT / "results" / "robust" / "table1.csv"
STUDY = ROOT / "docs" / "studies" / "robust-retrain.csv"
PAIRED = ROOT / "docs" / "studies" / "robust-retrain-paired.csv"


@pytest.fixture(scope="module")
def table1():
    if not TABLE1.is_file():
        pytest.skip("results/robust/table1.csv not present")
    return pd.read_csv(TABLE1)


def test_every_cell_is_within_the_spec_tolerance_of_the_paper(table1):
    assert len(table1) == len(METHODS) * len(CELLS)
    for r in table1.itertuples():
        paper, _ = PAPER_TABLE1[(r.method, r.alpha, r.lam)]
        assert r.J_paper == paper
        assert abs(r.J - paper) <= TOLERANCE[r.method], (r.method, r.alpha, r.lam, r.J)


def test_the_papers_claims_hold_in_the_committed_table(table1):
    assert all(table1_checks(table1).values()), table1_checks(table1)
    assert (table1["n_rows"] == 68).all()  # 16 + 12 + 11 + 15 + 14 rows predicted 0


def test_the_committed_alg2_column_is_what_the_code_computes(table1):
    # Algorithm 2 is fast: recompute its whole column from the data
    for alpha, lam in CELLS:
        per_fold = [table1_cell("alg2", alpha, lam, f)["J"] for f in range(N_FOLDS)]
        row = table1[
            (table1["method"] == "alg2") & (table1["alpha"] == alpha) & (table1["lam"] == lam)
        ].iloc[0]
        assert row["J"] == pytest.approx(np.mean(per_fold), abs=1e-6)
        assert row["J_sd"] == pytest.approx(np.std(per_fold, ddof=1), abs=1e-6)


def test_table1_is_a_study_of_the_one_runner():
    study = table1_study()
    runs = study.runs()
    assert len(runs) == len(METHODS) * len(CELLS) * N_FOLDS
    assert "robust-table1" in EXPERIMENTS and study.experiment == "robust-table1"
    run = next(
        r for r in runs if r.params == {"method": "alg2", "alpha": 0.5, "lam": 0.01, "fold": 3}
    )
    out = execute_run(run.task(study.metrics))
    assert out["status"] == "ok", out["error"]
    row = out["rows"][0]
    expected = table1_cell("alg2", 0.5, 0.01, 3)
    assert {k: row[k] for k in ("J", "cost", "valid_wc")} == {
        k: expected[k] for k in ("J", "cost", "valid_wc")
    }


@pytest.mark.slow
def test_reproduction_rerun_matches_the_committed_table(table1, tmp_path):
    from lab.reproduce.robust import reproduce_german_lr

    ours = reproduce_german_lr(tmp_path, workers=1)
    assert {p.name for p in tmp_path.iterdir()} >= {"table1.csv", "table1.md", "price_bars.png"}
    merged = ours.merge(table1, on=["method", "alpha", "lam"], suffixes=("", "_committed"))
    assert len(merged) == len(table1)
    np.testing.assert_allclose(merged["J"], merged["J_committed"], atol=1e-6)


def test_summary_refuses_failed_runs():
    runs = pd.DataFrame(
        {"method": ["alg1"], "alpha": [0.1], "lam": [0.1], "status": ["error"], "error": ["boom"]}
    )
    with pytest.raises(RuntimeError, match="boom"):
        summarise_table1(runs)


# -- the retraining study (committed report) ---------------------------------------------
@pytest.fixture(scope="module")
def study():
    if not STUDY.is_file():
        pytest.skip("docs/studies/robust-retrain.csv not present")
    return pd.read_csv(STUDY).set_index(["retrain_every", "policy"])


def test_without_refits_validity_after_a_refit_is_undefined(study):
    fixed = study.loc[0]
    # a report made before the tick column valid_threshold judged all advice names
    # valid_threshold_refit (advice from an older model only) valid_threshold
    refit = "valid_threshold_refit" if "valid_threshold_refit" in study else "valid_threshold"
    assert fixed["valid_retrained"].isna().all() and fixed[refit].isna().all()
    assert (study.loc[10]["valid_retrained"].notna()).all()


def test_price_of_robustness_grows_with_alpha_and_is_zero_for_the_reference(study):
    for every in (0, 10):
        s = study.loc[every, "policy_price_of_robustness"]
        assert s["robust-l1:alpha=0,lam=2"] == 0
        assert 0 < s["robust-l1:alpha=0.1,lam=2"] < s["robust-l1:alpha=0.5,lam=2"]
        assert s["robust-linf:alpha=0.1,lam=2"] < s["robust-linf:alpha=0.5,lam=2"]


def test_robust_advice_stays_above_its_threshold_and_buys_rr_with_rf():
    if not PAIRED.is_file():
        pytest.skip("docs/studies/robust-retrain-paired.csv not present")
    paired = pd.read_csv(PAIRED).set_index(["retrain_every", "policy"])
    row = paired.loc[(10, "robust-l1:alpha=0.5,lam=2")]
    # paired over seeds against alpha = 0: RR up, RF down, both beyond their 95 % CI
    assert row["rr"] - row["rr_ci"] > 0 and row["rf"] + row["rf_ci"] < 0
    assert row["mean_cost"] - row["mean_cost_ci"] > 0


# -- the command --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, field",
    [
        (["--case", "sba"], "--case"),
        (["--case", "retrain", "--study", "no/such/study"], "no/such/study"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_reproduce_robust_bad_input_is_one_line_with_exit_2(args, field):
    from typer.testing import CliRunner

    from lab.cli import app

    result = CliRunner().invoke(app, ["reproduce", "robust", *args])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0]


def test_reproduce_robust_retrain_writes_the_report(tmp_path):
    from typer.testing import CliRunner

    from lab.cli import app

    study = ROOT / "results" / "robust-retrain"
    if not (study / "manifest.json").is_file():
        pytest.skip("results/robust-retrain (the study's runs) not present")
    result = CliRunner().invoke(
        app,
        ["reproduce", "robust", "--case", "retrain", "--study", str(study), "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    ours = pd.read_csv(tmp_path / "robust-retrain.csv")
    if STUDY.is_file():
        pd.testing.assert_frame_equal(ours, pd.read_csv(STUDY))
    assert (tmp_path / "robust-retrain-valid_vs_cost.png").stat().st_size > 0
