"""The card's figures of the zero-sum selection, each against a known answer rebuilt from
the candidate table (one row per application): who takes the places, time to acceptance
with censoring, advice that paid, validity on one scale, population-level h* and signed
group gaps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from abm import RecourseModel
from abm.card import Waits, cvar


def _previous(cand: pd.DataFrame) -> pd.DataFrame:
    """Each application beside the candidate's previous one (``prev_*``; NaN on a first)."""
    cand = cand.sort_values(["cid", "tick"]).copy()
    g = cand.groupby("cid", sort=False)
    for col in ("goal", "cf_score", "tick"):
        cand[f"prev_{col}"] = g[col].shift(1)
    return cand


@pytest.fixture(scope="module")
def paper():
    return RecourseModel("paper", "threshold", seed=2, ticks=40, agents=False).run()


@pytest.fixture(scope="module")
def margin():
    # advice above the threshold, so "valid now" and "valid at issue" differ from RR's view
    policy = "last-threshold:margin=0.05+exact-linear"
    return RecourseModel("paper", policy, seed=2, ticks=40, agents=False).run()


def test_the_places_are_split_between_newcomers_and_advised_and_unadvised_reapplicants(paper):
    card, cand = paper.outcome_card().values, _previous(paper.candidate_table())
    acc = cand[cand.accepted]
    new = (acc.application == 1).sum()
    advised = (acc.prev_goal.notna() & (acc.application > 1)).sum()
    assert card["accepted_new_share"] == new / len(acc)
    assert card["accepted_advised_share"] == advised / len(acc)
    assert 0 < card["accepted_advised_share"] < 1 - card["accepted_new_share"] + 1e-12
    ticks = paper.tick_table()
    assert (ticks.n_accepted_new + ticks.n_accepted_advised <= ticks.n_accepted).all()


def test_advice_paid_counts_advised_rejections_accepted_at_the_next_application(paper):
    card, cand = paper.outcome_card().values, _previous(paper.candidate_table())
    n_advice = cand.goal.notna().sum()
    paid = (cand.accepted & cand.prev_goal.notna()).sum()
    assert card["advice_paid"] == pytest.approx(paid / n_advice, rel=1e-12)
    effort = paper.tick_table()["effort"].sum()
    assert card["paid_per_effort"] == pytest.approx(paid / effort, rel=1e-12)


@pytest.mark.parametrize("run", ["paper", "margin"])
def test_validity_on_one_scale_against_the_thresholds_in_force(run, request):
    """Without refits the model in force scores x_cf as at issue (the candidate table's
    cf_score): valid at reapplication when it clears that tick's threshold, valid against
    issue when it clears the threshold of the tick the advice was given."""
    model = request.getfixturevalue(run)
    card, cand = model.outcome_card().values, _previous(model.candidate_table())
    threshold = model.tick_table().set_index("tick")["threshold"]
    carried = cand[cand.prev_goal.notna() & (cand.application > 1)]
    now = carried.prev_cf_score >= threshold.loc[carried.tick].to_numpy() - 1e-9
    issued = carried.prev_cf_score >= threshold.loc[carried.prev_tick].to_numpy() - 1e-9
    assert card["valid_at_reapply"] == pytest.approx(now.mean(), rel=1e-12)
    assert card["valid_vs_issued"] == pytest.approx(issued.mean(), rel=1e-12)
    if run == "paper":  # aimed at the issue threshold exactly: met there, not always later
        assert card["valid_vs_issued"] == 1.0 and card["valid_at_reapply"] < 1.0
    else:  # a margin of 0.05 above it clears a risen threshold more often
        assert (
            card["valid_at_reapply"]
            > request.getfixturevalue("paper").outcome_card().values["valid_at_reapply"]
        )


def test_time_to_acceptance_treats_dropout_and_the_episode_end_as_censoring(paper):
    """Among those rejected on entry (over every entrant the share never accepted is fixed
    by the capacity): the Kaplan-Meier median rebuilt by hand from the candidate table."""
    card, cand = paper.outcome_card().values, paper.candidate_table()
    first = cand.sort_values(["cid", "tick"]).groupby("cid").first()
    rejected = first.index[~first.accepted]
    accepted = set(cand.loc[cand.accepted, "cid"])
    assert card["never_accepted_share"] == pytest.approx(
        1 - len(accepted & set(rejected)) / len(rejected), rel=1e-12
    )
    last = cand.groupby("cid").tick.max().loc[rejected]
    t = (last - first.loc[rejected, "entered"]).to_numpy()
    event = rejected.isin(list(accepted))
    surv, median = 1.0, math.nan
    for u in np.unique(t[event]):
        at_risk, d = np.count_nonzero(t >= u), np.count_nonzero(event & (t == u))
        surv *= 1 - d / at_risk
        if surv <= 0.5:
            median = float(u)
            break
    assert card["median_time_to_accept"] == median > 0


def test_kaplan_meier_known_answers():
    # all accepted at 1..4: S(1) = .75, S(2) = .5, so the median is 2
    w = Waits(np.array([1, 2, 3, 4]), np.ones(4, dtype=bool))
    assert w.kaplan_meier().median_survival_time_ == 2
    # one censored at 2: S(1) = .75, S(2) = .75 * 2/3 = .5 (the event at 2 comes first)
    w = Waits(np.array([1, 2, 2, 3]), np.array([True, False, True, True]))
    assert w.kaplan_meier().survival_function_.loc[2.0].iloc[0] == pytest.approx(0.5)
    # nobody accepted: the median is never reached
    w = Waits(np.array([5, 5, 6]), np.zeros(3, dtype=bool))
    assert math.isinf(w.kaplan_meier().median_survival_time_)


def test_fewer_than_half_accepted_gives_an_undefined_median_with_a_reason():
    card = RecourseModel("paper", "none", seed=0, ticks=30, agents=False).run().outcome_card()
    assert math.isnan(card.values["median_time_to_accept"])
    assert card.reasons["median_time_to_accept"] == (
        "fewer than half of those rejected on entry were accepted"
    )


def test_no_advice_pays_nothing_and_its_validity_is_undefined():
    card = RecourseModel("paper", "none", seed=0, ticks=10, agents=False).run().outcome_card()
    assert card.reasons["advice_paid"] == "no advice was given"
    assert card.reasons["valid_at_reapply"] == "nobody reapplied carrying advice"
    assert card.values["accepted_advised_share"] == 0.0


def test_cvar_is_taken_over_the_candidates_who_spent_effort(paper):
    rec = paper.recorder
    spent = rec.spent(paper.population)
    assert paper.outcome_card().values["cvar95_effort"] == cvar(spent[spent > 0])


def test_population_level_true_qualification_of_the_accepted_and_the_applicants():
    model = RecourseModel("improvement", "threshold", seed=0, ticks=20, agents=False).run()
    card, cand = model.outcome_card().values, model.candidate_table()
    assert card["h_accepted"] == pytest.approx(cand.loc[cand.accepted, "p_true"].mean(), rel=1e-9)
    assert card["h_applicants"] == pytest.approx(cand["p_true"].mean(), rel=1e-9)


def test_group_gaps_are_signed_group_one_minus_group_zero():
    model = RecourseModel("groups", "threshold", seed=0, ticks=20, agents=False).run()
    card, cand = model.outcome_card().values, model.candidate_table()
    rate = cand.groupby("group").accepted.mean()
    assert card["accept_gap"] == pytest.approx(rate[1] - rate[0], rel=1e-9)
    for metric in ("rr", "rf"):
        assert card[f"{metric}_gap"] == card[f"{metric}_g1"] - card[f"{metric}_g0"]


def test_acceptances_per_unit_of_budget():
    model = RecourseModel("budget", "threshold", seed=0, ticks=20, agents=False).run()
    ticks, card = model.tick_table(), model.outcome_card().values
    assert card["paid_per_budget"] == pytest.approx(
        ticks.n_accepted_advised.sum() / ticks.budget_spent.sum(), rel=1e-12
    )
