"""The robust policies over α (issue 48, item 1): the study's file, the report's family of
contrasts, and the docs block that is written from the shipped table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
from scripts_loader import load_script

from lab.study.spec import Study

ROOT = Path(__file__).resolve().parents[1]


def test_the_study_sweeps_every_robust_policy_over_the_six_radii_in_two_worlds_with_refits():
    study = Study.from_toml(ROOT / "studies" / "robust-alpha.toml")
    runs = study.runs()
    policies = {r.policy for r in runs}
    for family in ("robust-l1", "robust-l2", "robust-linf", "roar-l1", "roar-linf"):
        radii = {p.split("alpha=")[1] for p in policies if p.startswith(family + ":")}
        assert radii == {"0", "0.01", "0.02", "0.05", "0.1", "0.2"}, family
    assert {"none", "threshold"} <= policies
    assert {r.params["scenario"] for r in runs} == {"retraining", "lending"}
    assert {r.params["world_seed"] for r in runs} == set(range(10))
    assert all(r.config["shift_points"] == 0 for r in runs)


def test_only_the_contrasts_the_report_reads_join_its_family():
    script = load_script("robust_alpha")
    board = pd.read_csv(ROOT / "results" / "robust-alpha" / "table.csv")
    judged = board[board["vs_threshold_p_adj"].notna()]
    assert set(judged["figure"]) <= set(script.CONTRASTS)
    assert (board["results_schema"] == board["results_schema"].iloc[0]).all()
    # a policy's paired difference to threshold is its mean minus threshold's, world by world
    at = board.set_index(["preset", "policy", "figure"])
    diff = at.loc[("retraining", "roar-l1:alpha=0.1", "rr"), "vs_threshold"]
    assert (
        abs(
            diff
            - (
                at.loc[("retraining", "roar-l1:alpha=0.1", "rr"), "mean"]
                - at.loc[("retraining", "threshold", "rr"), "mean"]
            )
        )
        < 1e-12
    )


def test_docs_robust_alpha_table_matches_the_shipped_table():
    script = ROOT / "scripts" / "robust_alpha.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
