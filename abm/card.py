"""The outcome card: one set of figures for every run, whatever the policy and the world.

Every family is judged by the same card: reliability and feasibility, how often and how
fast candidates are accepted, what advice costs and what it asks of the worst-off, why
rejections go unadvised, whether advice reaches its own goal, and where the world's
mechanisms are on, true improvement, validity after refits, the gap between groups and
the budget. A figure whose mechanism is off is NaN with the reason "needs <mechanism>";
one that is undefined in this run (nobody accepted, no advice given) is NaN with that
reason. The card is computed from the record (the tick table, and each candidate's total
effort), so the command line, the studies and the dashboard read the same figures.
Comparisons with "no advice" are made against the policy ``none`` on the same seeds, in
the reports (never by a hidden twin inside a run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from abm.metrics import nanmean

if TYPE_CHECKING:
    import pandas as pd

#: CVaR of the effort each candidate spent: the mean of the costliest (1 - CVAR_LEVEL)
CVAR_LEVEL = 0.95


@dataclass(frozen=True)
class Figure:
    """One figure of the card: what it is, the mechanism it needs ("" for none)."""

    name: str
    label: str
    needs: str = ""


#: The card's figures in order; studies keep every one as a column of each run, so no
#: name may be a scenario field (a swept field is a column too).
FIGURES: tuple[Figure, ...] = (
    Figure("rr", "recourse reliability RR (eq. 2, mean over defined ticks)"),
    Figure("rf", "recourse feasibility RF (eq. 3, mean over defined ticks)"),
    Figure("accept_rate", "acceptances per application"),
    Figure("time_to_accept", "mean ticks from entry to acceptance, among the accepted only"),
    Figure(
        "median_time_to_accept",
        "of those rejected on entry: median ticks to acceptance (Kaplan-Meier, dropout and "
        "episode end censor)",
    ),
    Figure("never_accepted_share", "of those rejected on entry: not accepted by the end"),
    Figure("accepted_new_share", "acceptances that went to first-time applicants"),
    Figure("accepted_advised_share", "acceptances that went to reapplicants carrying advice"),
    Figure("advice_paid", "advised rejections accepted at the next application, per advised one"),
    Figure("paid_per_effort", "acceptances of advised reapplicants per unit of effort spent"),
    Figure(
        "valid_at_reapply",
        "advice whose counterfactual clears the threshold in force when its holder reapplies",
    ),
    Figure(
        "valid_vs_issued",
        "advice whose counterfactual, scored at reapplication, clears its issue tick's threshold",
    ),
    Figure("cost_recommended", "mean cost of the advice given (true d, eq. 18; advised only)"),
    Figure("cost_incurred", "effort spent per advised application (sum |dx| d of changes made)"),
    Figure("effort", "effort spent in all"),
    Figure("wasted_share", "share of the effort spent by candidates who dropped out"),
    Figure("cvar95_effort", "CVaR95 of the effort of candidates who spent any (top 5 % mean)"),
    Figure("unadvised_share", "rejections without advice"),
    Figure("unreached_share", "rejections without advice: goal out of reach"),
    Figure("withheld_share", "rejections without advice: withheld (a budget)"),
    Figure("no_change_share", "rejections without advice: the advice changed nothing"),
    Figure("short_of_goal_share", "advice whose counterfactual falls short of its own goal"),
    Figure("h_accepted", "mean h*(x) of the accepted", "outcomes"),
    Figure("h_applicants", "mean h*(x) of the applicants", "outcomes"),
    Figure("true_gain", "mean gain in h*(x) per candidate who carried out all advice", "outcomes"),
    Figure("noncausal_share", "share of advised change on non-causal features", "outcomes"),
    Figure("qualified_rate", "acceptances that truly qualify, h*(x) >= 1/2", "outcomes"),
    Figure(
        "valid_outstanding",
        "outstanding advice clearing its issue threshold under the model in force",
        "retraining",
    ),
    Figure(
        "valid_after_refit",
        "advice from an older model clearing its issue threshold under the model in force",
        "retraining",
    ),
    Figure(
        "own_goal_outstanding", "outstanding advice reaching the policy's own goal", "retraining"
    ),
    Figure(
        "own_goal_after_refit",
        "advice from an older model reaching the policy's own goal",
        "retraining",
    ),
    Figure(
        "domain_shift",
        "MMD² between the first positive class and the rows added since",
        "retraining",
    ),
    Figure(
        "domain_shift_p", "permutation p-value of the domain shift (the last refit)", "retraining"
    ),
    Figure(
        "model_shift", "MMD² between successive models' scores (mean over refits)", "retraining"
    ),
    Figure("model_shift_p", "share of refits whose model shift has p < 0.05", "retraining"),
    Figure("disagreement", "share whose predicted class a refit changed (mean)", "retraining"),
    Figure("param_shift", "L2 distance between successive models' (w, b) (mean)", "retraining"),
    Figure("dp_gap", "demographic-parity gap in acceptance (mean over ticks)", "groups"),
    Figure("w_dist", "W1 between the groups' features in the pool (mean over ticks)", "groups"),
    Figure("accept_gap", "acceptance rate of group 1 minus group 0 (signed)", "groups"),
    Figure("rr_gap", "RR of group 1 minus group 0 (signed)", "groups"),
    Figure("rf_gap", "RF of group 1 minus group 0 (signed)", "groups"),
    Figure("budget_spent", "intervention budget spent", "budget"),
    Figure("paid_per_budget", "acceptances of advised reapplicants per unit of budget", "budget"),
)
NAMES = tuple(f.name for f in FIGURES)


@dataclass(frozen=True)
class Card:
    """Figure name -> value (NaN where undefined) and -> reason ("" where defined); the
    groups' own RR and RF (``rr_g0``, ``rf_g0``, ...) follow the fixed figures when on."""

    values: dict[str, float]
    reasons: dict[str, str]

    def rows(self) -> list[tuple[str, str, float, str]]:
        """(name, label, value, reason) in card order."""
        labels = {f.name: f.label for f in FIGURES}
        return [
            (k, labels[k] if k in labels else _group_label(k), v, self.reasons.get(k, ""))
            for k, v in self.values.items()
        ]


def _group_label(name: str) -> str:
    metric, group = name.split("_g")
    return f"{metric.upper()} of group {group}"


def cvar(values: np.ndarray, level: float = CVAR_LEVEL) -> float:
    """Mean of the largest ceil((1 - level) n) of ``values`` (n,); NaN when n = 0."""
    v = np.sort(np.asarray(values, dtype=float))
    if v.shape[0] == 0:
        return math.nan
    tail = max(1, math.ceil((1.0 - level) * v.shape[0] - 1e-9))
    return float(np.add.reduce(v[-tail:]) / tail)


@dataclass(frozen=True)
class Waits:
    """Each entrant's ticks from entry to exit or to the episode's last tick (c,) and
    whether that exit was an acceptance (c,); dropout and the episode's end censor."""

    ticks: np.ndarray
    accepted: np.ndarray

    def rejected_on_entry(self) -> Waits:
        """The entrants not accepted on the tick they entered (every other exit is later,
        or a dropout or the episode's end on that tick, which censor at 0)."""
        keep = ~(self.accepted & (self.ticks == 0))
        return Waits(self.ticks[keep], self.accepted[keep])

    def kaplan_meier(self):
        """lifelines' Kaplan-Meier fit of time to acceptance (its ``survival_function_``
        is the share not yet accepted after each number of ticks)."""
        from lifelines import KaplanMeierFitter  # ~1 s to import: only when a card is made

        return KaplanMeierFitter().fit(self.ticks, self.accepted, label="not yet accepted")


def outcome_card(
    ticks: pd.DataFrame, effort_by_candidate: np.ndarray, config: Any, waits: Waits
) -> Card:
    """The card of one run: ``ticks`` its tick table, ``effort_by_candidate`` (c,) the
    total effort each candidate who entered spent, ``config`` its scenario, ``waits`` each
    entrant's time to acceptance or censoring."""
    on = config.mechanisms
    values: dict[str, float] = {}
    reasons: dict[str, str] = {}

    def put(name: str, value: float, why: str) -> None:
        values[name] = float(value)
        if value != value:
            reasons[name] = why

    def total(col: str) -> float:
        return float(ticks[col].sum()) if col in ticks else math.nan

    def share(num: float, den: float) -> float:
        return num / den if den > 0 else math.nan

    def weighted(mean: pd.Series, count: pd.Series) -> float:
        """A per-tick mean pooled over the episode, each tick weighed by its count."""
        w = count.where(count > 0)
        return share(float((mean * w).sum()), float(w.sum()))

    n_acc, n_rej = total("n_accepted"), total("n_rejected")
    n_adv_tick = ticks["n_rejected"] - ticks["n_unadvised"]
    n_adv = float(n_adv_tick.sum())
    n_paid = total("n_accepted_advised")
    put("rr", nanmean(ticks["rr"]), "no candidate reapplied having carried out advice")
    put("rf", nanmean(ticks["rf"]), "nobody was rejected within the validity window")
    put("accept_rate", share(n_acc, total("n_applicants")), "no application")
    put(
        "time_to_accept",
        weighted(ticks["mean_time_to_accept"], ticks["n_accepted"]),
        "nobody was accepted",
    )
    # the places are fixed, so over every entrant the share never accepted is k T / N for
    # any policy; who waits, and how long, differs among those rejected on entry
    rejected = waits.rejected_on_entry()
    median = math.nan
    if rejected.ticks.shape[0]:
        median = float(rejected.kaplan_meier().median_survival_time_)
    why = "nobody was rejected on entry"
    put(
        "median_time_to_accept",
        median if math.isfinite(median) else math.nan,
        "fewer than half of those rejected on entry were accepted"
        if rejected.ticks.shape[0]
        else why,
    )
    n_in = rejected.accepted.shape[0]
    put("never_accepted_share", share(n_in - np.count_nonzero(rejected.accepted), n_in), why)
    put("accepted_new_share", share(total("n_accepted_new"), n_acc), "nobody was accepted")
    put("accepted_advised_share", share(n_paid, n_acc), "nobody was accepted")
    put("advice_paid", share(n_paid, n_adv), "no advice was given")
    put("paid_per_effort", share(n_paid, total("effort")), "no effort was spent")
    n_carried = total("n_advised_reapplied")
    put(
        "valid_at_reapply",
        share(total("n_valid_reapply"), n_carried),
        "nobody reapplied carrying advice",
    )
    put(
        "valid_vs_issued",
        share(total("n_valid_issued"), n_carried),
        "nobody reapplied carrying advice",
    )
    put("cost_recommended", weighted(ticks["mean_cost"], n_adv_tick), "no advice was given")
    put("cost_incurred", share(total("effort"), n_adv), "no advice was given")
    put("effort", total("effort"), "")
    put("wasted_share", share(total("wasted_effort"), total("effort")), "no effort was spent")
    # over those who spent effort: over every entrant, the figure would mix how many were
    # advised with how costly advice turned out
    put(
        "cvar95_effort",
        cvar(effort_by_candidate[effort_by_candidate > 0]),
        "no candidate spent effort",
    )
    for name, col in (
        ("unadvised_share", "n_unadvised"),
        ("unreached_share", "n_unreached"),
        ("withheld_share", "n_withheld"),
        ("no_change_share", "n_no_change"),
    ):
        put(name, share(total(col), n_rej), "nobody was rejected")
    put("short_of_goal_share", share(total("n_short_of_goal"), n_adv), "no advice was given")

    def needs(name: str, mechanism: str) -> bool:
        if mechanism in on:
            return True
        put(name, math.nan, f"needs {mechanism}")
        return False

    if needs("h_accepted", "outcomes"):
        put(
            "h_accepted",
            weighted(ticks["mean_p_true_accepted"], ticks["n_accepted"]),
            "nobody was accepted",
        )
    if needs("h_applicants", "outcomes"):
        put(
            "h_applicants",
            weighted(ticks["mean_p_true_applicants"], ticks["n_applicants"]),
            "no application",
        )
    if needs("true_gain", "outcomes"):
        put(
            "true_gain",
            share(total("true_gain_sum"), total("n_implemented")),
            "no advice was carried out in full",
        )
    if needs("noncausal_share", "outcomes"):
        if config.noncausal_features:
            put(
                "noncausal_share",
                share(total("noncausal_change"), total("advised_change")),
                "no change was advised",
            )
        else:
            put("noncausal_share", math.nan, "the world has no non-causal features")
    if needs("qualified_rate", "outcomes"):
        put("qualified_rate", share(total("n_qualified_accepted"), n_acc), "nobody was accepted")
    for name, col, why in (
        ("valid_outstanding", "valid_threshold", "no advice was outstanding"),
        ("valid_after_refit", "valid_threshold_refit", "no advice outlived a refit"),
        ("own_goal_outstanding", "validity", "no advice was outstanding"),
        ("own_goal_after_refit", "valid_retrained", "no advice outlived a refit"),
    ):
        if needs(name, "retraining"):
            put(name, nanmean(ticks[col]), why)
    shifts = (
        "domain_shift",
        "domain_shift_p",
        "model_shift",
        "model_shift_p",
        "disagreement",
        "param_shift",
    )
    if all([needs(name, "retraining") for name in shifts]):  # a list: needs() puts NaNs
        refits = "" if ticks["model_version"].iloc[-1:].gt(0).any() else "no refit"
        got = {"param_shift": (nanmean(ticks["shift_l2"]), refits or "a non-linear model")}
        if "domain_mmd" in ticks:
            last = ticks["domain_mmd"].dropna()
            got["domain_shift"] = (
                last.iloc[-1] if len(last) else math.nan,
                refits or "the positive class had under two rows",
            )
            got["model_shift"] = (nanmean(ticks["model_mmd"]), refits or "undefined at every refit")
            got["disagreement"] = (
                nanmean(ticks["disagreement"]),
                refits or "undefined at every refit",
            )
        else:
            for name in ("domain_shift", "model_shift", "disagreement"):
                got[name] = (math.nan, "shift_points = 0")
        if "domain_p" in ticks:
            # the domain shift is against the first data: its last test says whether the
            # data moved since; the model shift is tested at each refit on its own
            last = ticks["domain_p"].where(ticks["domain_mmd"].notna()).dropna()
            got["domain_shift_p"] = (
                last.iloc[-1] if len(last) else math.nan,
                refits or "the positive class had under two rows",
            )
            p = ticks["model_p"].dropna()
            few = config.shift_permutations < 19  # then no p can fall below 0.05
            got["model_shift_p"] = (
                math.nan if few or p.empty else float((p < 0.05).mean()),
                "fewer than 19 permutations" if few else refits or "undefined at every refit",
            )
        else:
            why = "shift_points = 0" if "domain_mmd" not in ticks else "shift_permutations = 0"
            got["domain_shift_p"] = got["model_shift_p"] = (math.nan, why)
        for name in shifts:  # in the card's order
            put(name, *got[name])
    groups = range(config.n_groups)
    if needs("dp_gap", "groups"):
        put("dp_gap", nanmean(ticks["dp_gap"]), "no tick with applicants of every group")
    if needs("w_dist", "groups"):
        put("w_dist", nanmean(ticks["w_dist"]), "no tick with a pool of every group")
    if needs("accept_gap", "groups"):
        rate = [weighted(ticks[f"accept_rate_g{g}"], ticks[f"n_applicants_g{g}"]) for g in (0, 1)]
        put("accept_gap", rate[1] - rate[0], "a group had no applicant")
    for metric in ("rr", "rf"):
        if needs(f"{metric}_gap", "groups"):
            per = [nanmean(ticks[f"{metric}_g{g}"]) for g in (0, 1)]
            put(f"{metric}_gap", per[1] - per[0], f"the {metric.upper()} of a group is undefined")
    if needs("budget_spent", "budget"):
        put("budget_spent", total("budget_spent"), "")
    if needs("paid_per_budget", "budget"):
        put("paid_per_budget", share(n_paid, total("budget_spent")), "no budget was spent")
    if "groups" in on:
        for metric in ("rr", "rf"):
            for g in groups:
                put(f"{metric}_g{g}", nanmean(ticks[f"{metric}_g{g}"]), "undefined in every tick")
    return Card(values, reasons)
