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
from dataclasses import dataclass, field
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


#: The figures every run has, in card order; each world extension adds its own after them
#: (:attr:`abm.mechanisms.Mechanism.figures`, the whole catalogue in
#: :data:`abm.mechanisms.FIGURES`). Studies keep every figure as a column of each run, so
#: no name may be a scenario field (a swept field is a column too).
CORE: tuple[Figure, ...] = (
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
)


@dataclass(frozen=True)
class Card:
    """Figure name -> value (NaN where undefined) and -> reason ("" where defined); the
    groups' own RR and RF (``rr_g0``, ``rf_g0``, ...) follow the fixed figures when on.
    ``labels`` names the figures (the catalogue :data:`abm.mechanisms.FIGURES`)."""

    values: dict[str, float]
    reasons: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, str, float, str]]:
        """(name, label, value, reason) in card order."""
        labels = self.labels
        return [
            (k, labels[k] if k in labels else _group_label(k), v, self.reasons.get(k, ""))
            for k, v in self.values.items()
        ]


def _group_label(name: str) -> str:
    metric, _, group = name.rpartition("_g")
    return f"{metric.upper()} of group {group}" if metric else name


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


class Sheet:
    """The card of one run as it is filled: the run's tick table ``ticks`` and scenario
    ``config``, :meth:`put` for each figure, and the sums the figures share. A world
    extension fills its own figures from it (:meth:`abm.mechanisms.Mechanism.fill_card`)."""

    def __init__(self, ticks: pd.DataFrame, config: Any) -> None:
        self.ticks, self.config = ticks, config
        self.values: dict[str, float] = {}
        self.reasons: dict[str, str] = {}
        #: figures beyond the catalogue (the groups' own RR and RF), after it in the card
        self.extra: dict[str, float] = {}
        self.n_accepted = self.total("n_accepted")
        self.n_rejected = self.total("n_rejected")
        #: advised rejections per tick (T,)
        self.n_advised_tick = ticks["n_rejected"] - ticks["n_unadvised"]
        self.n_advised = float(self.n_advised_tick.sum())
        #: acceptances of reapplicants carrying advice
        self.n_paid = self.total("n_accepted_advised")

    def put(self, name: str, value: float, why: str, extra: bool = False) -> None:
        """Figure ``name`` is ``value``; ``why`` it is undefined when it is NaN."""
        (self.extra if extra else self.values)[name] = float(value)
        if value != value:
            self.reasons[name] = why

    def total(self, col: str) -> float:
        """The column's sum over ticks (NaN without the column)."""
        return float(self.ticks[col].sum()) if col in self.ticks else math.nan

    @staticmethod
    def share(num: float, den: float) -> float:
        return num / den if den > 0 else math.nan

    def weighted(self, mean: pd.Series, count: pd.Series) -> float:
        """A per-tick mean pooled over the episode, each tick weighed by its count."""
        w = count.where(count > 0)
        return self.share(float((mean * w).sum()), float(w.sum()))


def outcome_card(
    ticks: pd.DataFrame,
    effort_by_candidate: np.ndarray,
    config: Any,
    waits: Waits,
    extensions: tuple[Any, ...] = (),
) -> Card:
    """The card of one run: ``ticks`` its tick table, ``effort_by_candidate`` (c,) the
    total effort each candidate who entered spent, ``config`` its scenario, ``waits`` each
    entrant's time to acceptance or censoring, ``extensions`` the world extensions' classes
    (:func:`abm.mechanisms.registered`): those off give NaN "needs <name>" figures."""
    sheet = Sheet(ticks, config)
    put, total, share, weighted = sheet.put, sheet.total, sheet.share, sheet.weighted
    n_acc, n_rej, n_adv, n_paid = sheet.n_accepted, sheet.n_rejected, sheet.n_advised, sheet.n_paid
    n_adv_tick = sheet.n_advised_tick
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

    on = config.mechanisms
    labels = {f.name: f.label for f in CORE}
    for ext in extensions:
        labels.update((f.name, f.label) for f in ext.figures)
        if ext.name in on:
            ext.fill_card(sheet)
        else:
            for f in ext.figures:
                put(f.name, math.nan, f"needs {ext.name}")
    return Card({**sheet.values, **sheet.extra}, sheet.reasons, labels)
