"""The shipped report of scripts/estimator_exploration.py (results/exploration/,
docs/exploration.md) follows issue 48's protocol: current results schema in every file,
every interval on at least 10 worlds, one Holm-corrected family whose verdicts follow from
its adjusted p-values, and bold exactly where a verdict survives."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scripts_loader import load_script

from abm.provenance import RESULTS_SCHEMA
from lab.study.stats import ALPHA, MIN_WORLDS_FOR_VERDICT, adjust

ex = load_script("estimator_exploration")
OUT = Path(__file__).resolve().parents[1] / "results" / "exploration"
CSVS = ("error_by_tick", "final_estimates", "episodes", "paired", "estimator_replay")


@pytest.fixture(scope="module")
def paired() -> pd.DataFrame:
    return pd.read_csv(OUT / "paired.csv")


@pytest.mark.parametrize("name", CSVS)
def test_every_csv_records_the_current_results_schema(name):
    table = pd.read_csv(OUT / f"{name}.csv")
    assert len(table) and set(table["results_schema"]) == {RESULTS_SCHEMA}


def test_the_summary_records_the_schema_and_no_machine_path():
    text = (OUT / "summary.md").read_text()
    assert f"results schema {RESULTS_SCHEMA}" in text
    assert not re.search(r"(?<![\w.])/(?:work|home|root|tmp|Users)/", text)


def test_every_interval_rests_on_at_least_ten_worlds(paired):
    for name in ("error_by_tick", "paired", "estimator_replay"):
        worlds = pd.read_csv(OUT / f"{name}.csv")["worlds"]
        assert worlds.min() >= MIN_WORLDS_FOR_VERDICT, name
    episodes = pd.read_csv(OUT / "episodes.csv")
    assert episodes["world_seed"].nunique() >= MIN_WORLDS_FOR_VERDICT
    # every policy on the same (world, episode) pairs: common random numbers
    pairs = episodes.groupby(["beta", "policy", "horizon"])[["world_seed", "seed"]]
    keys = {k: set(map(tuple, g.to_numpy())) for k, g in pairs}
    assert len(set(map(frozenset, keys.values()))) == 1
    text = (OUT / "summary.md").read_text()
    number = r"[-+]?\d+\.\d+"
    interval = rf"\[{number}, {number}\]"
    intervals = re.findall(rf"{interval} \((\d+) worlds\)", text)
    assert intervals and min(map(int, intervals)) >= MIN_WORLDS_FOR_VERDICT
    # no interval printed without its worlds
    assert len(re.findall(interval, text)) == len(intervals)


def test_paired_verdicts_follow_their_holm_adjusted_p_values(paired):
    assert (
        len(paired)
        == paired[["beta", "horizon", "method", "reference", "metric"]].drop_duplicates().shape[0]
    )
    # one family: the adjusted p-values are Holm's over every row
    p_adj, _ = adjust(paired["p"], "holm")
    tost_adj, _ = adjust(paired["tost_p"], "holm")
    assert np.allclose(paired["p_adj"], p_adj, equal_nan=True)
    assert np.allclose(paired["tost_p_adj"], tost_adj, equal_nan=True)
    assert set(paired["bound"][paired["metric"] != "error"]) == {0.02}
    for r in paired.itertuples():
        up = ex.HIGHER_IS_BETTER[r.metric]
        if r.verdict in ("better", "worse"):
            assert r.p_adj <= ALPHA and not r.lo <= 0 <= r.hi
            assert (r.mean_diff > 0) == up if r.verdict == "better" else (r.mean_diff > 0) != up
        elif r.verdict == "level":
            assert r.tost_p_adj <= ALPHA and not (r.p_adj <= ALPHA and not r.lo <= 0 <= r.hi)
        else:
            assert r.verdict == "inconclusive"
            assert r.tost_p_adj > ALPHA and (r.p_adj > ALPHA or r.lo <= 0 <= r.hi)


def test_bold_marks_exactly_the_surviving_verdicts(paired):
    text = (OUT / "summary.md").read_text()
    bold = re.findall(r"\*\*(better|worse|level|inconclusive)\*\*", text)
    assert "inconclusive" not in bold
    assert len(bold) == int(paired["verdict"].isin(["better", "worse", "level"]).sum())
    assert f"{len(paired)} contrasts" in text and "Holm" in text


def test_add_verdicts_corrects_one_family_and_reads_directions():
    rng = np.random.default_rng(0)
    base = rng.normal(0.5, 0.1, (12, 4))
    rows = [
        # RF clearly higher: better; error clearly higher: worse (lower is better)
        {"metric": "rf", **ex.contrast(base + 0.1, base, "rf")},
        {"metric": "error", **ex.contrast(base + 0.5, base, "error")},
        # a tiny RR difference, well inside ±0.02: level
        {"metric": "rr", **ex.contrast(base + rng.normal(0, 1e-4, base.shape), base, "rr")},
    ]
    out = ex.add_verdicts(pd.DataFrame(rows))
    assert list(out["verdict"]) == ["better", "worse", "level"]
    assert out["p_adj"].min() >= pd.Series([r["p"] for r in rows]).min()
    few = ex.add_verdicts(
        pd.DataFrame([{"metric": "rf", **ex.contrast(base[:5] + 0.1, base[:5], "rf")}])
    )
    assert few["verdict"].iloc[0] == "inconclusive (5 worlds)"
