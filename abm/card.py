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
    Figure("time_to_accept", "mean ticks from entry to acceptance"),
    Figure("cost_recommended", "mean cost of the advice given (true d, eq. 18)"),
    Figure("cost_incurred", "effort spent per advised application (sum |dx| d of changes made)"),
    Figure("effort", "effort spent in all"),
    Figure("wasted_share", "share of the effort spent by candidates who dropped out"),
    Figure("cvar95_effort", "CVaR95 of the effort each candidate spent (mean of the top 5 %)"),
    Figure("unadvised_share", "rejections without advice"),
    Figure("unreached_share", "rejections without advice: goal out of reach"),
    Figure("withheld_share", "rejections without advice: withheld (a budget)"),
    Figure("no_change_share", "rejections without advice: the advice changed nothing"),
    Figure("short_of_goal_share", "advice whose counterfactual falls short of its own goal"),
    Figure("true_gain", "mean gain in h*(x) of advice carried out in full", "outcomes"),
    Figure("noncausal_share", "share of advised change on non-causal features", "outcomes"),
    Figure("qualified_rate", "acceptances that truly qualify, h*(x) >= 1/2", "outcomes"),
    Figure("still_valid", "outstanding advice still valid under the model in force", "retraining"),
    Figure("valid_after_refit", "advice issued under an older model, still valid", "retraining"),
    Figure(
        "domain_shift",
        "MMD² between the first positive class and the rows added since",
        "retraining",
    ),
    Figure(
        "model_shift", "MMD² between successive models' scores (mean over refits)", "retraining"
    ),
    Figure("disagreement", "share whose predicted class a refit changed (mean)", "retraining"),
    Figure("param_shift", "L2 distance between successive models' (w, b) (mean)", "retraining"),
    Figure("dp_gap", "demographic-parity gap in acceptance (mean over ticks)", "groups"),
    Figure("w_dist", "W1 between the groups' features in the pool (mean over ticks)", "groups"),
    Figure("rr_gap", "largest minus smallest RR between groups", "groups"),
    Figure("rf_gap", "largest minus smallest RF between groups", "groups"),
    Figure("budget_spent", "intervention budget spent", "budget"),
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
        return [(k, labels[k] if k in labels else _group_label(k), v, self.reasons.get(k, ""))
                for k, v in self.values.items()]  # fmt: skip


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


def outcome_card(ticks: pd.DataFrame, effort_by_candidate: np.ndarray, config: Any) -> Card:
    """The card of one run: ``ticks`` its tick table, ``effort_by_candidate`` (c,) the
    total effort each candidate who entered spent, ``config`` its scenario."""
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

    n_acc, n_rej = total("n_accepted"), total("n_rejected")
    n_adv_tick = ticks["n_rejected"] - ticks["n_unadvised"]
    n_adv = float(n_adv_tick.sum())
    put("rr", nanmean(ticks["rr"]), "no candidate reapplied having carried out advice")
    put("rf", nanmean(ticks["rf"]), "nobody was rejected within the validity window")
    put("accept_rate", share(n_acc, total("n_applicants")), "no application")
    waits = (ticks["mean_time_to_accept"] * ticks["n_accepted"]).where(ticks["n_accepted"] > 0)
    put("time_to_accept", share(float(waits.sum()), n_acc), "nobody was accepted")
    costs = (ticks["mean_cost"] * n_adv_tick).where(n_adv_tick > 0)
    put("cost_recommended", share(float(costs.sum()), n_adv), "no advice was given")
    put("cost_incurred", share(total("effort"), n_adv), "no advice was given")
    put("effort", total("effort"), "")
    put("wasted_share", share(total("wasted_effort"), total("effort")), "no effort was spent")
    put("cvar95_effort", cvar(effort_by_candidate), "no candidate entered")
    for name, col in (("unadvised_share", "n_unadvised"), ("unreached_share", "n_unreached"),
                      ("withheld_share", "n_withheld"), ("no_change_share", "n_no_change")):  # fmt: skip
        put(name, share(total(col), n_rej), "nobody was rejected")
    put("short_of_goal_share", share(total("n_short_of_goal"), n_adv), "no advice was given")

    def needs(name: str, mechanism: str) -> bool:
        if mechanism in on:
            return True
        put(name, math.nan, f"needs {mechanism}")
        return False

    if needs("true_gain", "outcomes"):
        put("true_gain", share(total("true_gain_sum"), total("n_implemented")),
            "no advice was carried out in full")  # fmt: skip
    if needs("noncausal_share", "outcomes"):
        if config.noncausal_features:
            put("noncausal_share", share(total("noncausal_change"), total("advised_change")),
                "no change was advised")  # fmt: skip
        else:
            put("noncausal_share", math.nan, "the world has no non-causal features")
    if needs("qualified_rate", "outcomes"):
        put("qualified_rate", share(total("n_qualified_accepted"), n_acc), "nobody was accepted")
    if needs("still_valid", "retraining"):
        put("still_valid", nanmean(ticks["validity"]), "no advice was outstanding")
    if needs("valid_after_refit", "retraining"):
        put("valid_after_refit", nanmean(ticks["valid_retrained"]),
            "no advice outlived a refit")  # fmt: skip
    shifts = ("domain_shift", "model_shift", "disagreement", "param_shift")
    if all([needs(name, "retraining") for name in shifts]):  # a list: needs() puts NaNs
        refits = "" if ticks["model_version"].iloc[-1:].gt(0).any() else "no refit"
        if "domain_mmd" in ticks:
            last = ticks["domain_mmd"].dropna()
            put("domain_shift", last.iloc[-1] if len(last) else math.nan,
                refits or "the positive class had under two rows")  # fmt: skip
            put("model_shift", nanmean(ticks["model_mmd"]), refits or "undefined at every refit")
            put(
                "disagreement", nanmean(ticks["disagreement"]), refits or "undefined at every refit"
            )
        else:
            for name in shifts[:3]:
                put(name, math.nan, "shift_points = 0")
        put("param_shift", nanmean(ticks["shift_l2"]), refits or "a non-linear model")
    groups = range(config.n_groups)
    if needs("dp_gap", "groups"):
        put("dp_gap", nanmean(ticks["dp_gap"]), "no tick with applicants of every group")
    if needs("w_dist", "groups"):
        put("w_dist", nanmean(ticks["w_dist"]), "no tick with a pool of every group")
    for metric in ("rr", "rf"):
        if needs(f"{metric}_gap", "groups"):
            per = [nanmean(ticks[f"{metric}_g{g}"]) for g in groups]
            gap = max(per) - min(per) if all(p == p for p in per) else math.nan
            put(f"{metric}_gap", gap, f"the {metric.upper()} of a group is undefined")
    if needs("budget_spent", "budget"):
        put("budget_spent", total("budget_spent"), "")
    if "groups" in on:
        for metric in ("rr", "rf"):
            for g in groups:
                put(f"{metric}_g{g}", nanmean(ticks[f"{metric}_g{g}"]), "undefined in every tick")
    return Card(values, reasons)
