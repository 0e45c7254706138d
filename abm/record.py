"""The record of a run: one tick-table row per tick (SPEC §2 and the mechanisms' columns),
one candidate-table row per application, the dashboards' view of the last tick, and the
episode summary, all built from the arrays the model hands over (abm/tick.py).

Shapes: a applicants (reapplicants first), n rejected, s stayers, z features.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import mesa
import numpy as np
import pandas as pd

from abm import mechanisms as extensions
from abm import metrics
from abm.card import Card, Waits, outcome_card
from abm.config import ScenarioConfig
from abm.mechanisms import Mechanisms, RecordView
from abm.onehot import OneHot
from abm.population import Population
from abm.tick import Advice, Decision, Outcome

TICK_COLUMNS = (
    "tick",
    "threshold",
    "n_applicants",
    "n_new",
    "n_reapplied",
    "n_accepted",
    "n_rejected",
    "n_dropped",
    "n_waiting",
    "n_succ",
    "n_succ_accepted",
    "n_rejected_window",
    "rr",
    "rf",
    "gini",
    "gini_cost",
    "mean_goal",
    "mean_cf_score",
    "mean_error",
    "n_unadvised",
    "n_unreached",
    "n_withheld",
    "n_no_change",
    "n_below_threshold",
    "n_short_of_goal",
    "mean_cost",
    "effort",
    "wasted_effort",
    "n_implemented",
    "mean_time_to_accept",
    "n_accepted_new",
    "n_accepted_advised",
    "n_advised_reapplied",
    "n_valid_reapply",
    "n_valid_issued",
)
# the integer columns: the tick and every count (the extensions declare their own dtypes)
_COUNT_COLUMNS = tuple(c for c in TICK_COLUMNS if c == "tick" or c.startswith("n_"))
#: advice "falls short of the threshold" (of its goal) when M(x_cf) < threshold - GOAL_TOL
#: (goal - GOAL_TOL)
GOAL_TOL = 1e-6


class Recorder:
    """Builds and keeps the record of one run (planning forks have a :class:`NullRecorder`)."""

    #: whether ticks are recorded (a NullRecorder's is False)
    on = True

    def __init__(
        self,
        config: ScenarioConfig,
        mechanisms: Mechanisms,
        difficulty: np.ndarray,
        record_events: bool,
        onehot: OneHot | None = None,
    ) -> None:
        self.config, self.mechanisms, self.difficulty = config, mechanisms, difficulty
        self.onehot = onehot  # the world's groups: a switch's cost is c(a, b) d_b, not L1
        self.record_events = record_events
        own = mechanisms.tick_columns()
        self.columns = TICK_COLUMNS + tuple(own)
        self._counts = _COUNT_COLUMNS + tuple(c for c, kind in own.items() if kind is np.int64)
        self.collector = TickCollector(model_reporters={c: _reporter(c) for c in self.columns})
        self.events: list[dict[str, np.ndarray]] = []
        # each candidate's total effort, as they leave (accepted or dropped out)
        self._exit_effort: list[np.ndarray] = []
        # ticks from entry to exit of the accepted and of those who dropped out (the card's
        # time to acceptance: dropout is censoring, not failure)
        self._accepted_wait: list[np.ndarray] = []
        self._dropped_wait: list[np.ndarray] = []
        # the acceptance threshold of every recorded tick (NaN before recording began):
        # advice is judged against the threshold in force when it was issued as well as
        # the one when it is used
        self._thresholds = np.full(config.ticks, np.nan)
        self.last_row: dict[str, float] = {}
        self.tick_state: TickState | None = None
        # the tick table as of the last record(): the summary, the card and write_run all
        # read it, and building it is most of what they cost
        self._tick_table: pd.DataFrame | None = None

    def record(
        self,
        model: Any,
        d: Decision,
        advice: Advice,
        dropped: np.ndarray,
        leaving: Population,
        outcome: Outcome,
        policy_stats: dict[str, float] | None,
    ) -> None:
        """The tick's row, the dashboards' arrays and the candidate events of ``d``.

        ``model`` is what Mesa's collector reads (``last_row`` and the agents); the record
        reads its ``scorer``, ``pool``, ``streams`` and ``mechanisms``.
        """
        advice.cf_scores(model.scorer)
        pool, mechanisms = model.pool, self.mechanisms
        view = None
        if self.record_events or mechanisms.on:
            rej, a = d.rej, len(d.applicants)

            def per_applicant(values, fill):  # accepted applicants got no advice: ``fill``
                values = np.asarray(values)
                out = np.full((a,) + values.shape[1:], fill, dtype=values.dtype)
                out[rej] = values
                return out

            view = RecordView(
                lambda: pool.waiting, model.streams, per_applicant, mechanisms.true_counterfactual
            )
        r = _responses(d, advice, dropped, outcome, self.difficulty, self.onehot)
        if d.t >= self._thresholds.shape[0]:  # a run on past the scenario's ticks
            grown = np.full(2 * d.t + 1, np.nan)
            grown[: self._thresholds.shape[0]] = self._thresholds
            self._thresholds = grown
        self._thresholds[d.t] = d.threshold
        self.last_row = _tick_row(d, advice, r, leaving, outcome, pool.n_waiting)
        self.last_row.update(self._reapplied_advice(d, model.scorer))
        self._exit_effort += [d.applicants.effort[d.accepted], leaving.effort]
        self._accepted_wait.append(d.t - d.applicants.entered[d.accepted])
        self._dropped_wait.append(d.t - leaving.entered)
        if mechanisms.on:
            self.mechanisms.row(d, advice, outcome, self.last_row, view)
        if policy_stats is not None:  # the policy's own figures (abm.interfaces.ReportsStats)
            self.last_row.update({f"policy_{k}": float(v) for k, v in policy_stats.items()})
        self.tick_state = TickState(
            tick=d.t,
            threshold=d.threshold,
            ids=d.applicants.ids,
            scores=d.scores,
            accepted=d.accepted,
            n_reapplied=d.n_ret,
            rejected_ids=d.obs.ids,
            goal=advice.goal,
            cf_scores=r.cf_scores,
            dropped=dropped,
            implemented=r.implemented,
        )
        self.collector.collect(model)
        self._tick_table = None
        if self.record_events:
            self.events.append(self._events(d, advice, r, outcome, view))

    def _reapplied_advice(self, d: Decision, scorer: Any) -> dict[str, int]:
        """Who takes the places, and whether the advice the reapplicants carry works now.

        ``n_accepted_new`` and ``n_accepted_advised``: acceptances of first-time applicants
        and of reapplicants carrying advice (the rest went to unadvised reapplicants);
        ``n_advised_reapplied``: reapplicants carrying advice, of whom ``n_valid_reapply`` have
        a counterfactual that the model in force scores at or above this tick's threshold
        and ``n_valid_issued`` at or above the threshold of the tick it was issued (both
        within :data:`abm.metrics.CLEAR_TOL`). Every policy's advice is judged on this one
        scale, whatever goal the policy set itself.
        """
        n_ret, accepted = d.n_ret, d.accepted
        adv = d.applicants.advised[:n_ret]
        n_adv = int(np.count_nonzero(adv))
        out = {
            "n_accepted_new": int(np.count_nonzero(accepted[n_ret:])),
            "n_accepted_advised": int(np.count_nonzero(accepted[:n_ret] & adv)),
            "n_advised_reapplied": n_adv,
            "n_valid_reapply": 0,
            "n_valid_issued": 0,
        }
        if n_adv:
            cf_now = scorer.score(d.applicants.X_cf[:n_ret][adv])
            issued_at = d.applicants.last_tick[:n_ret][adv]
            th = self._thresholds[issued_at]  # issued at an earlier tick: in range
            tol = metrics.CLEAR_TOL
            out["n_valid_reapply"] = int(np.count_nonzero(cf_now >= d.threshold - tol))
            out["n_valid_issued"] = int(np.count_nonzero(cf_now >= th - tol))
        return out

    def _events(
        self, d: Decision, advice: Advice, r: _Responses, outcome: Outcome, view: RecordView
    ) -> dict[str, np.ndarray]:
        """One candidate-table row per applicant of the tick (see :meth:`candidate_table`)."""
        applicants, accepted, rej = d.applicants, d.accepted, d.rej
        a, z = len(applicants), self.config.n_features
        per_applicant = view.per_applicant
        # per-feature outcome of each rejected applicant (see candidate_table)
        ok = np.where(advice.X_cf != advice.X, np.int8(-2), np.int8(-1))
        stay = np.flatnonzero(~r.dropped)
        ok[stay[outcome.rows], outcome.cols] = outcome.ok
        dx = per_applicant((advice.X_cf - advice.X).astype(np.float32), 0.0)
        ok = per_applicant(ok, -1)
        chunk: dict[str, np.ndarray] = {
            "cid": applicants.ids.copy(),
            "tick": np.full(a, d.t, dtype=np.int64),
            "entered": applicants.entered.copy(),
            "application": applicants.n_apps + 1,
            "reapplied": np.arange(a) < d.n_ret,
            "score": d.scores,
            "accepted": accepted,
            "goal": per_applicant(advice.goal, np.nan),
            "cf_score": per_applicant(r.cf_scores, np.nan),
            "cost": per_applicant(r.cost, np.nan),
            "dropped": per_applicant(r.dropped, False),
            "implemented": per_applicant(r.implemented, False),
        }
        for i in range(z):
            chunk[f"dx_{i}"] = dx[:, i]
        for i in range(z):
            chunk[f"ok_{i}"] = ok[:, i]
        for key, values in advice.info.items():
            chunk[key] = per_applicant(np.asarray(values, dtype=float), np.nan)
        exit_ = np.full(a, "", dtype=object)
        exit_[accepted] = "accepted"
        exit_[rej[r.dropped]] = "dropped"
        chunk["exit"] = exit_
        if self.mechanisms.on:
            self.mechanisms.events(d, advice, outcome, r.dropped, chunk, view)
        return chunk

    # -- the tables ------------------------------------------------------------------------
    def tick_table(self) -> pd.DataFrame:
        """One row per tick (columns: :data:`TICK_COLUMNS`, then the mechanisms' and the
        policy's own): built once a recorded tick, a copy to each caller."""
        if self._tick_table is None:
            self._tick_table = self._build_tick_table()
        return self._tick_table.copy()

    def _build_tick_table(self) -> pd.DataFrame:
        df = self.collector.get_model_vars_dataframe()
        if df.empty:
            return pd.DataFrame(columns=list(self.columns))
        df = df.reset_index(drop=True)
        declared = self._counts
        counts = [col for col, dtype in df.dtypes.items() if dtype != np.int64 and col in declared]
        # only the columns that are not int64 yet, in one astype: casting every count column
        # one at a time took 3 of the 4 ms a tick table costs (the dashboard builds one a Step)
        return df.astype(dict.fromkeys(counts, np.int64)) if counts else df

    def candidate_table(self) -> pd.DataFrame:
        """One row per application: decision, recommendation, per-feature outcome, exit.

        ``dx_i`` is the recommended change of feature i; ``ok_i`` is 1 (done), 0 (failed),
        -1 (not asked) or -2 (asked, but the candidate dropped out); ``exit`` is
        ``accepted``, ``dropped`` or empty (still waiting after that application);
        mechanisms and policies add their own columns.
        """
        if not self.events:
            return pd.DataFrame()
        # policies may add info columns on some ticks only: fill the others with NaN
        cols = list(dict.fromkeys(c for e in self.events for c in e))
        return pd.DataFrame(
            {
                c: np.concatenate([e.get(c, np.full(len(e["cid"]), np.nan)) for e in self.events])
                for c in cols
            }
        )

    def card(self, waiting: Population) -> Card:
        """The outcome card (:mod:`abm.card`) of the run so far; ``waiting`` is the pool
        (its candidates' effort counts as spent so far)."""
        spent = np.concatenate([*self._exit_effort, waiting.effort])
        last = self.tick_state.tick if self.tick_state is not None else 0
        accepted = np.concatenate([np.zeros(0, dtype=np.int64), *self._accepted_wait])
        waits = np.concatenate([accepted, *self._dropped_wait, last - waiting.entered])
        is_accepted = np.arange(waits.shape[0]) < accepted.shape[0]
        return outcome_card(
            self.tick_table(),
            spent,
            self.config,
            Waits(waits, is_accepted),
            extensions.registered(),
        )

    def summary(self, head: dict[str, Any]) -> dict[str, Any]:
        """``head`` followed by the episode means over defined ticks and the totals."""
        ticks = self.tick_table()
        out = dict(head)
        out.update(metrics.episode_summary(ticks))
        out.update(extensions.episode_summary(ticks))
        return out


class RecordAccess:
    """What a model shows of its record (:attr:`recorder`): the tables, the card, the last
    tick; mixed into :class:`abm.model.RecourseModel`."""

    recorder: Recorder
    population: Population

    @property
    def last_row(self) -> dict[str, float]:
        """The last tick's row of the tick table."""
        return self.recorder.last_row

    @property
    def tick_state(self) -> TickState | None:
        """The last tick's arrays, for dashboards (None before the first tick)."""
        return self.recorder.tick_state

    @property
    def last_tick(self) -> TickState | None:
        """Deprecated since 0.9 (removed in 0.10): :attr:`tick_state`; ``last_tick`` is a
        candidate's column (the tick of their last application)."""
        warnings.warn(
            "RecourseModel.last_tick is deprecated: use RecourseModel.tick_state",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.tick_state

    @property
    def record_events(self) -> bool:
        """Whether the per-application candidate table is kept."""
        return self.recorder.record_events

    @property
    def tick_columns(self) -> tuple[str, ...]:
        """The tick table's columns: SPEC §2's, then the mechanisms'."""
        return self.recorder.columns

    def tick_table(self) -> pd.DataFrame:
        """One row per tick with every metric of SPEC §2 and of the mechanisms on."""
        return self.recorder.tick_table()

    def candidate_table(self) -> pd.DataFrame:
        """One row per application (:meth:`abm.record.Recorder.candidate_table`)."""
        return self.recorder.candidate_table()

    def outcome_card(self) -> Card:
        """The outcome card of the run so far (:mod:`abm.card`): the same figures for every
        policy, NaN with a reason where a figure's mechanism is off or it is undefined."""
        return self.recorder.card(self.population)


class NullRecorder:
    """The record of a planning fork: nothing is kept."""

    on = False
    record_events = False


class _Responses:
    """Per-rejected figures of one tick: M(x_cf) (n,) with NaN where unadvised, the advised
    ones' M(x_cf) and goals (a,), cost (n,), dropped (n,) and implemented (n,)."""

    __slots__ = ("cf_scores", "cf_adv", "goal_adv", "cost", "dropped", "implemented")

    def __init__(self, cf_scores, cf_adv, goal_adv, cost, dropped, implemented) -> None:
        self.cf_scores, self.cf_adv, self.goal_adv = cf_scores, cf_adv, goal_adv
        self.cost, self.dropped, self.implemented = cost, dropped, implemented


def _responses(
    d: Decision, advice: Advice, dropped, outcome: Outcome, difficulty, onehot=None
) -> _Responses:
    cf_scores, cf_adv = advice.scores
    goal_adv = advice.goal if advice.all_advised else advice.goal[advice.advised]
    cost = metrics.recommendation_cost(advice.X, advice.X_cf, difficulty, onehot)
    implemented = np.zeros(d.rej.shape[0], dtype=bool)
    implemented[~dropped] = outcome.implemented
    return _Responses(cf_scores, cf_adv, goal_adv, cost, dropped, implemented)


def _tick_row(
    d: Decision,
    advice: Advice,
    r: _Responses,
    leaving: Population,
    outcome: Outcome,
    n_waiting: int,
) -> dict:
    """One row of the tick table (SPEC §2)."""
    applicants, n_ret, n_rej = d.applicants, d.n_ret, int(d.rej.shape[0])
    n_app = len(applicants)
    n_succ, n_succ_acc = d.success_counts()
    has_goal = np.isfinite(r.goal_adv)
    if np.count_nonzero(has_goal) == has_goal.shape[0]:
        cf_goal, goal = r.cf_adv, r.goal_adv
    else:
        cf_goal, goal = r.cf_adv[has_goal], r.goal_adv[has_goal]
    n_advised = n_rej if advice.all_advised else np.count_nonzero(advice.advised)
    cost_adv = r.cost if advice.all_advised else r.cost[advice.advised]
    n_unreached, n_withheld, n_no_change = advice.counts
    return {
        "tick": d.t,
        "threshold": d.threshold,
        "n_applicants": n_app,
        "n_new": n_app - n_ret,
        "n_reapplied": n_ret,
        "n_accepted": n_app - n_rej,
        "n_rejected": n_rej,
        "n_dropped": len(leaving),
        "n_waiting": n_waiting,
        "n_succ": n_succ,
        "n_succ_accepted": n_succ_acc,
        "n_rejected_window": d.n_window,
        "rr": metrics.recourse_reliability(n_succ_acc, n_succ),
        "rf": metrics.recourse_feasibility(n_succ, d.n_window),
        "gini": metrics.gini(r.cf_adv),
        "gini_cost": metrics.gini(cost_adv),
        "mean_goal": metrics.nanmean(r.goal_adv),
        "mean_cf_score": metrics.nanmean(r.cf_adv),
        "mean_error": metrics.nanmean(metrics.recommendation_error(cf_goal, goal)),
        "n_unadvised": n_rej - n_advised,
        "n_unreached": n_unreached,
        "n_withheld": n_withheld,
        "n_no_change": n_no_change,
        "n_below_threshold": np.count_nonzero(r.cf_adv < d.threshold - GOAL_TOL),
        "n_short_of_goal": np.count_nonzero(r.cf_adv < r.goal_adv - GOAL_TOL),
        "mean_cost": metrics.nanmean(cost_adv),
        "effort": float(np.add.reduce(outcome.effort)),
        "wasted_effort": float(np.add.reduce(leaving.effort)),
        "n_implemented": np.count_nonzero(outcome.implemented),
        "mean_time_to_accept": _mean_wait(d.t, applicants.entered[d.accepted]),
    }


def _mean_wait(t: int, entered: np.ndarray) -> float:
    """Mean of t - entered over the accepted (NaN if none), in integer arithmetic.

    Equal to the mean of the float differences: every partial sum of integers below 2^53
    is exact in floating point, so both sums are the same integer.
    """
    n = entered.shape[0]
    return (t * n - int(np.add.reduce(entered))) / n if n else float("nan")


class TickState:
    """Arrays of the last tick for dashboards: applicants' ids, scores and decisions (a,),
    and the rejected's goals, achieved goal scores and responses (n,). Reapplicants come
    first among the applicants."""

    def __init__(self, **arrays: Any) -> None:
        self.__dict__.update(arrays)

    @property
    def reapplied(self) -> np.ndarray:
        """(a,) bool: applicants who were reapplying."""
        return np.arange(self.ids.shape[0]) < self.n_reapplied


def _reporter(column: str):
    def report(model: Any):
        return model.last_row[column]

    report.__name__ = f"report_{column}"
    return report


class TickCollector(mesa.DataCollector):
    """Mesa's DataCollector over the tick record (the model's ``last_row``).

    The record holds immutable scalars only, so the deep copy Mesa makes of every
    reported value (a tenth of a paper-scale tick) is skipped.
    """

    def collect(self, model: Any) -> None:
        row = model.last_row
        if len(row) != len(self.model_reporters):
            self._align(row)
            row = {var: row.get(var, math.nan) for var in self.model_reporters}
        for var in self.model_reporters:
            self.model_vars[var].append(row[var])
        if self.agent_reporters or self.agenttype_reporters:
            # Mesa collects agent data; hide the model reporters already handled above
            reporters, self.model_reporters = self.model_reporters, {}
            try:
                super().collect(model)
            finally:
                self.model_reporters = reporters

    def _align(self, row: dict) -> None:
        """Columns first reported now (a policy's ``policy_*``): NaN on the earlier ticks."""
        done = len(next(iter(self.model_vars.values()), []))
        for var in row:
            if var not in self.model_reporters:
                self.model_reporters[var] = _reporter(var)
                self.model_vars[var] = [math.nan] * done
