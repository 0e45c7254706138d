"""Every built-in policy in every preset (issue 33, item 3): a short run, or a refusal in
one line naming what is missing. results/sensible/ holds what scripts/sensible.py measured
(each pair's ticks and seeds are in the table): it must agree on which pairs run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest
from scripts_loader import load_script

from abm import RecourseModel
from abm.registry import REGISTRY
from abm.scenarios import PRESETS
from abm.validation import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "results" / "sensible" / "sensible.csv"
EXEMPT_POLICIES, EXEMPT_PRESETS = ("none",), ("large",)
# a check of the fast tier takes well under a second: the others solve an optimisation per
# candidate, load torch models or train a generator
FAST = ("threshold", "threshold-true", "threshold-estimated", "threshold-explore",
        "improve-proto", "improve-linucb", "ei", "lookahead")  # fmt: skip
NEEDS = {"threshold-dice": "dice_ml", "hybrid-dice": "dice_ml"}
TICKS = {"threshold-dice": 5, "hybrid-dice": 5, "threshold-ustun": 10, "hybrid-ustun": 10,
         "threshold-rbr": 3}  # fmt: skip


def pairs() -> list:
    out = []
    for policy in REGISTRY.describe():
        if policy in EXEMPT_POLICIES:
            continue
        for preset in PRESETS:
            if preset in EXEMPT_PRESETS:
                continue
            marks = () if policy in FAST else (pytest.mark.slow,)
            out.append(pytest.param(policy, preset, marks=marks, id=f"{policy}-{preset}"))
    return out


@pytest.fixture(scope="module")
def shipped() -> dict[tuple[str, str], str]:
    table = pd.read_csv(SHIPPED)
    return {(r.policy, r.preset): r.status for r in table.itertuples()}


@pytest.mark.parametrize("policy,preset", pairs())
def test_every_policy_runs_in_every_preset_or_refuses_in_one_line(policy, preset, shipped):
    if policy in NEEDS and importlib.util.find_spec(NEEDS[policy]) is None:
        pytest.skip(f"{NEEDS[policy]} is not installed")
    ticks = TICKS.get(policy, 20)
    try:
        model = RecourseModel(preset, policy, seed=0, ticks=ticks, agents=False,
                              record_events=False)  # fmt: skip
    except ConfigError as exc:
        message = str(exc)
        # one line; an artefact trained for another world lists every field that differs
        assert "\n" not in message and len(message) < 500, message
        assert shipped[(policy, preset)] == "refused"
        return
    card = model.run().outcome_card()
    short = card.values["short_of_goal_share"]
    assert short == 0 or short != short, f"{short} of the advice falls short of its goal"
    assert shipped[(policy, preset)] == "ran"


def test_the_shipped_table_covers_every_pair():
    table = pd.read_csv(SHIPPED)
    expected = {(p.values[0], p.values[1]) for p in pairs()}
    shipped = set(zip(table.policy, table.preset, strict=True))
    assert shipped == expected


@pytest.mark.parametrize(
    ("rr", "rf", "short", "withheld", "expected"),
    [
        (0.7, 0.03, 0.0, 0.96, True),  # 0.03 / 0.04 = 0.75 of the advice given carried out
        (0.7, 0.001, 0.0, 0.96, False),  # 0.025 < 0.05: the policy, not the budget
        (0.7, 0.03, 0.0, 0.30, False),  # the budget withheld little
        (float("nan"), 0.03, 0.0, 0.96, False),  # RR undefined is a problem of its own
        (0.7, 0.03, 0.1, 0.96, False),  # advice short of its goal too
        (0.7, 0.08, 0.0, 0.96, False),  # sensible: nothing to explain
        (0.7, 0.0, 0.0, 1.0, False),  # everything withheld: nothing carried out
    ],
)
def test_budget_bound_only_when_the_budget_explains_a_low_rf(rr, rf, short, withheld, expected):
    sensible = load_script("sensible")
    assert sensible.budget_bound(rr, rf, short, withheld) is expected


def test_the_shipped_table_counts_budget_bound_pairs_apart():
    sensible = load_script("sensible")
    table = pd.read_csv(SHIPPED, keep_default_na=False, na_values=[""])
    table["problem"] = table["problem"].fillna("")
    bound = sensible.bound(table)
    ran = table.status == "ran"
    assert not (bound & ~ran).any() and (table.problem[bound] != "").all()
    text = (SHIPPED.parent / "sensible.md").read_text()
    assert f"{int(bound.sum())} of them budget-bound" in text
