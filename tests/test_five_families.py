"""The five-families study (issue 33, item 6): its files, and the quick variant end to end
(2 worlds x 2 episodes of 8 ticks: a check that every piece runs, not a result)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scripts_loader import load_script

from abm.scenarios import PRESETS
from lab.experiments import five_families as ff


def test_the_study_files_pair_each_family_with_every_world_it_runs_in():
    main, rl, generators = ff.studies()
    runs = main.runs()
    pairs = {(r.params["scenario"], r.policy) for r in runs}
    assert {p for p, _ in pairs} == {"lending", "improvement", "retraining", "groups", "causal",
                                     "budget", "fair-scarf", "paper"}  # fmt: skip
    for preset in {p for p, _ in pairs}:
        mine = {pol for p, pol in pairs if p == preset}
        assert {"none", "threshold", ff.MARGIN, "safear", "robust-l1", "roar-l1"} <= mine
        assert ("improve-linucb" in mine) == ("outcomes" in PRESETS[preset].mechanisms)
        assert ("scarf-mlp" in mine) == ("budget" in PRESETS[preset].mechanisms)
    worlds = {r.params["world_seed"] for r in runs}
    assert worlds == set(range(10)) and {r.seed for r in runs} == set(range(5))
    assert len(runs) == len(pairs) * 10 * 5
    assert {r.config["world_seed"] for r in rl.runs()} == {0} and "rl" in rl.policy + "".join(
        r.policy for r in rl.runs()
    )
    # the generators family: the four cheap ones everywhere, RBR in paper and retraining,
    # each beside the baselines it is paired with, 5 worlds x 2 episodes
    gen = {(r.params["scenario"], r.policy) for r in generators.runs()}
    assert {p for p, _ in gen} == {p for p, _ in pairs}
    for preset in {p for p, _ in gen}:
        mine = {pol for p, pol in gen if p == preset}
        assert {"none", "threshold", ff.MARGIN, "threshold-claproar", "threshold-gravitational",
                "threshold-probe", "threshold-face"} <= mine  # fmt: skip
        assert (ff.RBR in mine) == (preset in ("paper", "retraining"))
    assert {r.params["world_seed"] for r in generators.runs()} == set(range(5))
    assert len(generators.runs()) == len(gen) * 5 * 2


@pytest.mark.slow
def test_the_quick_variant_runs_every_piece_and_writes_the_report(tmp_path):
    res = ff.run(tmp_path, quick=True, workers=1, log=lambda *_: None)
    board = pd.read_csv(res["leaderboard"])
    # 3 presets + the rl world + the generators' 3 presets
    assert (tmp_path / "report.html").read_text().count("<h2>") == 7
    gen = board[board.study == "five-families-generators-quick"]
    assert {"threshold-claproar", "threshold-gravitational"} <= set(gen.policy)
    lending = board[(board.preset == "lending") & (board.study == "five-families-quick")]
    assert set(lending.policy) >= {"none", "threshold", "improve-linucb", "scarf-mlp"}
    # every mechanism is on in lending: its figures are there; off in paper: left out
    assert {"true_gain", "still_valid", "dp_gap", "budget_spent"} <= set(lending.figure)
    paper = board[(board.preset == "paper") & (board.study == "five-families-quick")]
    assert not {"true_gain", "dp_gap"} & set(paper.figure)
    defined = board.dropna(subset=["mean"])
    assert (
        (defined["lo"] <= defined["mean"] + 1e-12) & (defined["mean"] <= defined["hi"] + 1e-12)
    ).all()
    self_diff = board[board.policy == "threshold"]["vs_threshold"]
    assert self_diff.isna().all()
    rr = lending[(lending.policy == "threshold") & (lending.figure == "rf")].iloc[0]
    none = lending[(lending.policy == "none") & (lending.figure == "rf")].iloc[0]
    assert math.isclose(rr["vs_none"], rr["mean"] - none["mean"], abs_tol=1e-12)
    margin = lending[(lending.policy == ff.MARGIN) & (lending.figure == "rf")].iloc[0]
    assert math.isclose(rr["vs_margin"], rr["mean"] - margin["mean"], abs_tol=1e-12)
    assert board[board.policy == ff.MARGIN]["vs_margin"].isna().all()
    again = ff.write_report(ff.read_runs(tmp_path, quick=True), tmp_path / "again", quick=True)
    assert pd.read_csv(again["leaderboard"]).equals(board)


def _doc_script():
    return load_script("five_families_doc")


def test_the_goal_tables_pick_the_best_advising_policy_and_bold_what_excludes_zero():
    doc = _doc_script()
    rows = []
    for policy, rr, rf, vs_margin in (("none", math.nan, 0.0, (math.nan,) * 3),
                                      ("threshold", 0.5, 0.6, (0.01, -0.02, 0.04)),
                                      (ff.MARGIN, 0.9, 0.3, (math.nan,) * 3),
                                      ("safear", 0.4, 0.8, (0.5, 0.4, 0.6))):  # fmt: skip
        for fig, value in (("rr", rr), ("rf", rf)):
            rows.append({"study": "five-families", "preset": "paper", "policy": policy,
                         "figure": fig, "worlds": 10, "episodes": 5, "mean": value,
                         "lo": value - 0.1, "hi": value + 0.1, "vs_margin": vs_margin[0],
                         "vs_margin_lo": vs_margin[1], "vs_margin_hi": vs_margin[2],
                         "vs_threshold": 0.0, "vs_threshold_lo": -0.1, "vs_threshold_hi": 0.1,
                         "vs_none": 0.2, "vs_none_lo": 0.1, "vs_none_hi": 0.3})  # fmt: skip
    text = doc.tables(pd.DataFrame(rows))
    lines = text.splitlines()
    rr_row = lines[lines.index("**reliability** (`rr`, higher is better)") + 4]
    rf_row = lines[lines.index("**feasibility** (`rf`, higher is better)") + 4]
    assert "`margin 0.05` | 0.900 [0.800, 1.000] | – |" in rr_row  # none is never "best"
    assert "`safear` | 0.800" in rf_row and "**+0.500 [+0.400, +0.600]**" in rf_row
    assert "| 0.000 [−0.100, 0.100] | 0.400, 0.800 |" in rf_row  # the control, its RR and RF
    assert "**+0.200 [+0.100, +0.300]**" in rf_row and "+0.000 [−0.100, +0.100]" in rf_row
    assert "low cost" not in text  # a figure the board lacks gets no table


def test_docs_five_families_tables_match_the_shipped_leaderboard():
    import subprocess
    import sys

    script = ff.ROOT / "scripts" / "five_families_doc.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                          text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    page = (ff.ROOT / "docs" / "five-families.md").read_text()
    goals = page.split("<!-- goals -->")[1].split("<!-- /goals -->")[0]
    assert "**reliability**" in goals and "| lending | 10 × 5 |" in goals  # not left empty
