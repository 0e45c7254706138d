"""One leaderboard: the benchmark's full cards measure what the five-families study did.

The full tier is the study's design (8 presets, 20 worlds x 2 paired episodes, the same
fronts); its entries run with the shift figures off, which leaves RR and RF bit for bit.
So every distance to a front that a shipped card shares with the study's
results/five-families/fronts.csv is the same number, with the same interval and worlds;
only the verdicts may differ, as each card is its own Holm family.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FRONTS = ROOT / "results" / "five-families" / "fronts.csv"
CARDS = sorted((ROOT / "results" / "benchmark" / "cards").glob("*-full.json"))
#: the policies of the study's 20 x 2 design (its generators run 10 x 1: other worlds)
STUDY_POLICIES = {
    "threshold",
    "last-threshold:margin=0.05+exact-linear:weights=estimated",
    "safear",
    "robust-l1",
    "roar-l1",
    "improve-linucb",
    "scarf-mlp",
}
KEY = ["preset", "front", "figure"]
SAME = ["vs_front", "vs_front_lo", "vs_front_hi", "vs_front_worlds", "outside_below"]


def _same(a: object, b: object) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or a != a) and (b is None or b != b)
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-15)


def test_every_shared_distance_is_the_study_s():
    study = pd.read_csv(FRONTS)
    compared = 0
    for path in CARDS:
        doc = json.loads(path.read_text())
        policy = doc["policy"]["spec"]
        if policy not in STUDY_POLICIES:
            continue
        mine = pd.DataFrame(doc["fronts"]).set_index(KEY)
        theirs = study[study["policy"] == policy].set_index(KEY)
        assert set(mine.index) == set(theirs.index), path.name
        for key, row in mine.iterrows():
            other = theirs.loc[key]
            for col in SAME:
                mine_v = None if pd.isna(row[col]) else row[col]
                their_v = None if pd.isna(other[col]) else other[col]
                assert _same(mine_v, their_v), (path.name, key, col, mine_v, their_v)
            compared += 1
    # every policy of the study has its card: 5 run in every preset (8 x 3 fronts x 2
    # figures), improve-linucb and scarf-mlp in the 3 presets whose world they need
    assert compared == 5 * 48 + 2 * 18
