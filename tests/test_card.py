"""The outcome card (abm/card.py): known answers from the candidate table, NaN with reasons,
and the evaluation's intervals with worlds as a random effect."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from abm import RecourseModel
from abm.card import cvar
from abm.mechanisms import FIGURES, NAMES
from lab.study.stats import adjust, world_interval


@pytest.fixture(scope="module")
def paper():
    return RecourseModel("paper", "threshold", seed=3, ticks=40, agents=False).run()


def test_every_figure_is_there_in_order_with_a_reason_where_undefined(paper):
    card = paper.outcome_card()
    assert list(card.values)[: len(NAMES)] == list(NAMES)
    for name, value in card.values.items():
        assert (value != value) == (name in card.reasons), name
    off = {f.name for f in FIGURES if f.needs}
    assert {k for k, why in card.reasons.items() if why.startswith("needs ")} == off


def test_figures_agree_with_the_candidate_table(paper):
    card, cand = paper.outcome_card().values, paper.candidate_table()
    acc = cand[cand.accepted]
    assert card["accept_rate"] == pytest.approx(len(acc) / len(cand), rel=1e-12)
    assert card["time_to_accept"] == pytest.approx((acc.tick - acc.entered).mean(), rel=1e-12)
    advised = cand[cand.goal.notna()]
    assert card["cost_recommended"] == pytest.approx(advised.cost.mean(), rel=1e-9)
    short = advised.cf_score < advised.goal - 1e-6
    assert card["short_of_goal_share"] == short.mean() == 0.0
    rejected = cand[~cand.accepted]
    assert card["unadvised_share"] == pytest.approx(rejected.goal.isna().mean(), abs=1e-12)


def test_the_effort_of_every_candidate_adds_up_to_the_effort_spent(paper):
    """Each candidate's total effort (accepted, dropped out or waiting) sums to the effort
    of every tick: the CVaR is taken over the same effort the tick table counts."""
    rec = paper.recorder
    spent = rec.spent(paper.population)
    assert len(spent) == paper.tick_table()["n_new"].sum()
    assert spent.sum() == pytest.approx(paper.tick_table()["effort"].sum(), rel=1e-12)
    assert paper.outcome_card().values["cvar95_effort"] == cvar(spent[spent > 0])


def test_cvar_is_the_mean_of_the_costliest_five_percent():
    assert cvar(np.arange(100.0)) == np.mean([95, 96, 97, 98, 99])
    assert cvar(np.array([3.0])) == 3.0 and math.isnan(cvar(np.zeros(0)))
    assert cvar(np.arange(21.0)) == pytest.approx((20 + 19) / 2)


def test_no_advice_leaves_the_cost_figures_undefined_with_a_reason():
    card = RecourseModel("paper", "none", seed=0, ticks=10, agents=False).run().outcome_card()
    assert card.values["unadvised_share"] == 1.0 and card.values["effort"] == 0.0
    assert card.reasons["cost_recommended"] == "no advice was given"
    assert card.reasons["rr"] == "no candidate reapplied having carried out advice"


def test_advice_on_proxies_gains_nothing_true_and_advice_on_causes_does():
    """improvement: exact-linear with uniform costs moves the feature the model weighs most,
    a proxy there (all of its change non-causal, no gain in h*); without proxies the
    same advice moves causal features and h* rises."""
    proxies = RecourseModel("improvement", "threshold", seed=0, ticks=30, agents=False).run()
    card = proxies.outcome_card().values
    # all of the change is on the proxy; the two sums differ in rounding on some CPUs
    assert card["noncausal_share"] == pytest.approx(1.0, abs=1e-12) and card["true_gain"] == 0.0
    causal = RecourseModel(
        "paper", "threshold", seed=0, ticks=30, agents=False, outcome_delay=2
    ).run()
    c2 = causal.outcome_card()
    assert c2.values["true_gain"] > 0.01
    assert c2.reasons["noncausal_share"] == "the world has no non-causal features"


def test_group_and_budget_figures_appear_where_their_mechanisms_are_on():
    groups = RecourseModel("groups", "threshold", seed=0, ticks=20, agents=False).run()
    card = groups.outcome_card().values
    assert {"rr_g0", "rr_g1", "rf_g0", "rf_g1"} <= set(card)
    assert card["rr_gap"] == card["rr_g1"] - card["rr_g0"]
    budget = RecourseModel("budget", "threshold", seed=0, ticks=20, agents=False).run()
    spent = budget.tick_table()["budget_spent"].sum()
    assert budget.outcome_card().values["budget_spent"] == pytest.approx(spent)


# -- intervals with worlds as a random effect ------------------------------------------------


def test_constant_values_give_a_point_interval():
    assert world_interval(np.full((4, 3), 0.25)) == (0.25, 0.25, 0.25, 4)


def test_worlds_that_differ_widen_the_interval_beyond_one_worlds():
    rng = np.random.default_rng(1)
    v = rng.normal(0.0, 1.0, (10, 1)) + rng.normal(0.0, 0.05, (10, 8))
    _, lo, hi, n = world_interval(v)
    _, lo1, hi1, n1 = world_interval(v[:1])  # one world: over its episodes, about it alone
    assert hi - lo > 10 * (hi1 - lo1) and (n, n1) == (10, 1)


def test_worlds_weigh_alike_and_undefined_entries_are_skipped():
    v = np.array([[1.0, np.nan, np.nan], [3.0, 3.0, 3.0]])
    assert world_interval(v)[0] == 2.0  # the mean of world means, not of entries
    mean, lo, hi, n = world_interval(np.full((2, 2), np.nan))
    assert n == 0 and all(math.isnan(x) for x in (mean, lo, hi))


def test_the_evaluations_differences_are_one_family_with_verdicts():
    """lab.evaluation: each policy's paired differences to the baseline, worlds as the unit,
    corrected together by Holm; no verdict below 10 worlds."""
    from lab.evaluation import _add_verdicts, _card, _paired

    rng = np.random.default_rng(3)
    world = rng.normal(0.5, 0.1, (12, 1)) + rng.normal(0.0, 0.01, (12, 3))
    shift = {"rr": 0.05, "accept_rate": -0.05, "time_to_accept": -1.0}
    per, cells = {}, {}
    for p in ("base", "new"):
        cells[p] = [[f"{p}{w}-{e}" for e in range(3)] for w in range(12)]
        for w, e in np.ndindex(world.shape):
            card = {k: world[w, e] + (shift.get(k, 0.0) if p == "new" else 0.0) for k in NAMES}
            per[f"{p}{w}-{e}"] = {"card": card}
    results = [{"policy": "base"}]
    for name, worlds in (("new", 12), ("few", 5)):
        diff = _paired(per, cells["new"][:worlds], cells["base"][:worlds])
        results.append({"policy": name, "vs_baseline": {"policy": "base", "card": diff}})
    _add_verdicts(results)
    new, few = (r["vs_baseline"] for r in results[1:])
    said = {k: d["verdict"] for k, d in new["card"].items()}
    # RR up, acceptance down, waiting shorter (lower is better); RF the same on every
    # episode: level within ±0.02; cost has no bound, so the same cost is no verdict
    figures = ("rr", "accept_rate", "time_to_accept")
    assert [said[k] for k in figures] == ["better", "worse", "better"]
    assert (said["rf"], said["cost_recommended"]) == ("level", "inconclusive")
    assert new["card"]["rr"]["worlds"] == 12 and new["card"]["rr"]["bound"] == 0.02
    assert new["card"]["rr"]["mean"] == pytest.approx(0.05)
    # the family: every figure of "new" (12 worlds); "few" (5 worlds) stays out of it
    assert new["correction"] == "holm" and new["family"] == len(NAMES)
    p = [d["p"] for d in new["card"].values()]
    assert [d["p_adj"] for d in new["card"].values()] == pytest.approx(adjust(p)[0])
    assert {d["verdict"] for d in few["card"].values()} == {"inconclusive (5 worlds)"}
    assert all(math.isnan(d["p_adj"]) for d in few["card"].values())
    # the card of one policy: world intervals with the worlds they rest on
    card = _card(per, cells["new"])["rr"]
    assert tuple(card.values()) == world_interval(world + 0.05)


@pytest.mark.slow
def test_evaluate_runs_every_episode_seed_in_every_world_and_pairs_with_the_baseline():
    from lab.evaluation import evaluate_many

    res = evaluate_many("paper", ["none", "threshold"], seeds="0-1", world_seeds="3,7", ticks=8)
    none, thr = res
    assert none["worlds"] == [3, 7] and len(thr["per_episode"]) == 4
    assert "vs_baseline" not in none and thr["vs_baseline"]["policy"] == "none"
    diff = thr["vs_baseline"]["card"]["accept_rate"]["mean"]
    assert diff == pytest.approx(
        thr["card"]["accept_rate"]["mean"] - none["card"]["accept_rate"]["mean"]
    )
    one_world = evaluate_many("paper", ["threshold"], seeds="0-1", world_seed=7, ticks=8)[0]
    assert json.dumps(one_world["per_episode"]) == json.dumps(thr["per_episode"][2:])


def test_the_docs_figure_table_is_the_codes():
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "card_table.py"
    res = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
