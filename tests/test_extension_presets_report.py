"""The extension presets' report (scripts/extension_presets.py, results/extensions/) follows
issue 48's protocol: worlds are the unit, every interval rests on enough worlds, the whole
report is one Holm family, and only its survivors are bold."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scripts_loader import load_script

from abm.provenance import RESULTS_SCHEMA
from lab.study.stats import ALPHA, MIN_WORLDS_FOR_VERDICT, adjust

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "extensions"
ext = load_script("extension_presets")


@pytest.fixture(scope="module")
def board() -> pd.DataFrame:
    return pd.read_csv(OUT / "figures.csv")


def test_every_row_records_the_schema_and_every_interval_enough_worlds(board):
    assert set(board["results_schema"]) == {RESULTS_SCHEMA}
    assert f"results schema {RESULTS_SCHEMA}" in (OUT / "figures.md").read_text()
    shown = board[board["lo"].notna()]
    assert len(shown) > 0.8 * len(board)
    assert (shown["worlds"] >= MIN_WORLDS_FOR_VERDICT).all(), shown[["preset", "figure", "arm"]]
    assert set(board["preset"]) == set(ext.COMPARISONS)


def test_the_whole_report_is_one_holm_family(board):
    d = board[board["arm"] == "B-A"]
    for p, p_adj in (("p", "p_adj"), ("tost_p", "tost_p_adj")):
        expected, _ = adjust(d[p], "holm")
        assert np.allclose(d[p_adj], expected, equal_nan=True), p
    n_diff, n_tost = ext.family(board)
    assert n_diff == d["p"].notna().sum() and n_diff >= 25
    text = (OUT / "figures.md").read_text()
    assert f"Holm ({n_diff} difference tests; {n_tost} TOST tests" in text
    # TOST only where the script states a bound
    bounded = d["figure"].map(lambda f: ext.BOUNDS.get(f) is not None)
    assert d.loc[~bounded, "tost_p"].isna().all()


def test_verdicts_follow_the_adjusted_p_values(board):
    d = board[(board["arm"] == "B-A") & board["mean"].notna()]
    for _, r in d.iterrows():
        covers = r["lo"] <= 0 <= r["hi"]
        if r["p_adj"] <= ALPHA and not covers:
            assert r["verdict"] == ("higher" if r["mean"] > 0 else "lower"), r.to_dict()
        elif r["tost_p_adj"] <= ALPHA:
            assert r["verdict"] == "level", r.to_dict()
        else:
            assert r["verdict"] == "inconclusive", r.to_dict()


def test_only_survivors_are_bold_in_the_markdown(board):
    verdicts = {(r.preset, r.figure): r.verdict for r in board[board["arm"] == "B-A"].itertuples()}
    preset, seen = None, 0
    for line in (OUT / "figures.md").read_text().splitlines():
        if m := re.match(r"### `(\w+)`", line):
            preset = m.group(1)
        cells = [c.strip() for c in line.strip("|").split("|")]
        if preset is None or not line.startswith("| ") or cells[0] in ("figure", "---"):
            continue
        survives = verdicts[preset, cells[0]] in ext.SURVIVES
        assert ("**" in cells[3]) == survives == ("**" in cells[8]), line
        assert "**" not in "".join(cells[:3] + cells[4:8]), line
        assert re.fullmatch(r"\d+( / \d+ / \d+)?", cells[4]), line  # the worlds
        seen += 1
    assert seen == len(verdicts)


def _fake(worlds: int, rng: np.random.Generator) -> dict:
    """Episodes of a toy comparison: rr clearly higher in B, rf the same in both, mean_cost
    noisy around the same mean, budget_spent undefined in A."""
    a, b = {}, {}
    for w in range(worlds):
        base = rng.normal(0.5, 0.1)
        for s in range(2):
            a[w, s] = {"rr": base, "rf": base, "mean_cost": base + rng.normal(0, 0.5)}
            b[w, s] = {
                "rr": base + 0.1 + rng.normal(0, 0.01),
                "rf": base + rng.normal(0, 0.001),
                "mean_cost": base + rng.normal(0, 0.5),
                "budget_spent": 0.8,
            }
    return {("toy", "a"): a, ("toy", "b"): b}


def test_table_gives_verdicts_only_with_enough_worlds():
    figures = ["rr", "rf", "mean_cost", "budget_spent"]
    comparisons = {"toy": ("a vs b", ("a", {}, "x"), ("b", {}, "y"), figures)}
    rng = np.random.default_rng(4)
    t = ext.table(_fake(20, rng), 20, 2, 100, comparisons)
    said = t[t["arm"] == "B-A"].set_index("figure")["verdict"].to_dict()
    assert said == {
        "rr": "higher",
        "rf": "level",
        "mean_cost": "inconclusive",
        "budget_spent": "not tested",
    }
    assert (t["worlds"][t["arm"] != "B-A"] >= 20).sum() == 7  # budget_spent: B only
    few = ext.table(_fake(5, rng), 5, 2, 100, comparisons)
    diff = few[few["arm"] == "B-A"]
    assert set(diff["verdict"]) == {"inconclusive (5 worlds)", "not tested"}
    assert diff["p_adj"].isna().all() and ext.family(few) == (0, 0)
    assert not math.isnan(diff.set_index("figure").at["rr", "lo"])  # intervals still given
