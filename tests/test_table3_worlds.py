"""scripts/table3_worlds.py: Table 3's fronts read off world by world, intervals with worlds
as the unit and the Holm-corrected verdicts of its orderings."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scripts_loader import load_script

from lab.study.stats import adjust, difference_p, world_interval

t3 = load_script("table3_worlds")


def test_every_front_point_and_baseline_is_a_registered_policy():
    from abm.registry import REGISTRY

    pols = t3.policies()
    assert len(pols) == len(t3.BASELINES) + len(t3.FRONTS) * 12 and len(set(pols)) == len(pols)
    for p in pols:
        REGISTRY.validate(p)


def test_a_front_is_read_off_at_rr_095_from_its_episode_means():
    # three margins: RR rises, RF falls; RR 0.95 lies half way between the last two
    rr = np.array([[0.8, 0.8], [0.9, 0.9], [1.0, 1.0]])
    rf = np.array([[0.6, 0.6], [0.4, 0.4], [0.2, 0.2]])
    assert t3._read(rr, rf) == pytest.approx(0.3)
    worlds_rr, worlds_rf = np.stack([rr, rr]), np.stack([rf, rf - 0.1])
    assert t3.per_world(worlds_rr, worlds_rf) == pytest.approx([0.3, 0.2])


def run(world: int, policy: str, seed: int, rr: float, rf: float) -> dict:
    return {"world_seed": world, "policy": policy, "seed": seed, "rr": rr, "rf": rf}


def runs(worlds: int, shift: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Constructed runs of every policy: in world w each front is the line RF = top − (RR −
    0.8) over the 12 margins (RR 0.8 .. 0.998), so RF at RR 0.95 is top − 0.15; top varies
    by world, margin-estimated's equals margin-exact-linear's and margin-true's is ``shift``
    above with a little noise per world. Two episodes per world; baselines at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for w in range(worlds):
        top = 0.5 + rng.normal(0, 0.1)
        true = top + shift + rng.normal(0, 0.01)
        tops = {"margin-exact-linear": top, "margin-estimated": top, "margin-true": true}
        for m, t in tops.items():
            for i, policy in enumerate(t3.front_policies(m)):
                rr = 0.8 + 0.018 * i
                rows += [run(w, policy, e, rr, t - (rr - 0.8)) for e in range(2)]
        for b in t3.BASELINES:
            rows += [run(w, b, e, rng.uniform(0.3, 0.5), rng.uniform(0.5, 0.9)) for e in range(2)]
    return pd.DataFrame(rows)


def test_intervals_are_world_intervals_of_each_worlds_value():
    data = runs(10)
    table = pd.DataFrame(t3.summarise(data, "T1-b005", "calibrated")).set_index("method")
    worlds = list(range(10))
    reads = t3.per_world(*t3.arrays(data, worlds, t3.front_policies("margin-true")))
    row = table.loc["margin-true"]
    assert (row["mean"], row["lo"], row["hi"], row["worlds"]) == world_interval(reads[:, None])
    assert json.loads(row["per_world"]) == pytest.approx(reads, abs=1e-4)
    rr = t3.arrays(data, worlds, ["threshold"])[0][:, 0]
    base = table[table["figure"] == "rr"].loc["threshold"]
    assert (base["mean"], base["lo"], base["hi"], base["worlds"]) == world_interval(rr)
    diff = table.loc["margin-true - margin-estimated"]
    d = reads - t3.per_world(*t3.arrays(data, worlds, t3.front_policies("margin-estimated")))
    assert diff["mean"] == pytest.approx(d.mean()) and diff["holds_in"] == 10
    assert diff["p"] == difference_p(d[:, None]) and diff["bound"] == 0.02


def test_the_orderings_are_one_family_corrected_by_holm():
    rows = t3.summarise(runs(10), "T1-b005", "calibrated")
    rows += t3.summarise(runs(5, seed=1), "T1-b001", "calibrated")
    table = t3.add_verdicts(pd.DataFrame(rows))
    diffs = table[table["p"].notna()].set_index(["setting", "method"])
    true_est = ("T1-b005", "margin-true - margin-estimated")
    est_uni = ("T1-b005", "margin-estimated - margin-exact-linear")
    # 0.05 more RF in every world: higher; the same front twice: level (TOST within ±0.02)
    assert diffs.loc[true_est, "verdict"] == "higher"
    assert diffs.loc[est_uni, "verdict"] == "level"
    # the family: the two orderings with 10 worlds; those of 5 worlds get no verdict
    ten = diffs.loc["T1-b005"]
    assert ten["p_adj"].to_numpy() == pytest.approx(adjust(ten["p"])[0])
    five = diffs.loc["T1-b001"]
    assert five["p_adj"].isna().all() and set(five["verdict"]) == {"inconclusive (5 worlds)"}
    assert table.loc[table["p"].isna(), "verdict"].eq("").all()  # levels have no verdict
    text = t3.markdown(table)
    assert "(2 with at least 10 worlds)" in text and "**higher**" in text
    assert "] (10 worlds) |" in text and "| inconclusive (5 worlds) (–, –) |" in text
