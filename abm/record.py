"""The record of a run: one tick-table row per tick (SPEC §2 and the mechanisms' columns),
one candidate-table row per application, the dashboards' view of the last tick, and the
episode summary, all built from the arrays the model hands over (abm/tick.py).

Shapes: a applicants (reapplicants first), n rejected, s stayers, z features.
"""

from __future__ import annotations

import functools
import math
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import mesa
import numpy as np
import pandas as pd

from abm import mechanisms as extensions
from abm import metrics, segments
from abm.advice import AdviceRows
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


class Journal:
    """The plain ticks of a batch (:mod:`abm.batch`), kept once for all its episodes: an
    episode's recorder notes them when it is next read (:meth:`Recorder.follow`), so a
    tick costs the batch one append, not one note an episode. ``blocks``: every tick's
    ``abm.batch.TickBlock``; ``last``: the last tick's decisions (one an episode), advice
    and responses, which the dashboards' arrays of an episode's last tick read."""

    __slots__ = ("blocks", "last")

    def __init__(self) -> None:
        self.blocks: list[Any] = []
        self.last: tuple | None = None

    def add(self, block: Any, ds: Any, advices: Any, responses: Any) -> None:
        """Tick ``block`` of every episode, with its decisions, advice and responses."""
        self.blocks.append(block)
        self.last = (ds, advices, responses)


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
        self._collector: TickCollector | None = None  # made when first read (collector)
        self.events: list[dict[str, np.ndarray]] = []
        # each tick's exits: (effort of the accepted, of those who dropped out, their ticks
        # from entry to exit), or a batch's (block, episode) that cuts them out when read
        # (the card's time to acceptance: dropout is censoring, not failure)
        self._exits: list[tuple] = []
        # the acceptance threshold of every recorded tick (NaN before recording began):
        # advice is judged against the threshold in force when it was issued as well as
        # the one when it is used
        self._thresholds = np.full(config.ticks, np.nan)
        # the last tick's row: a dict, or a batch's (block, episode) made one when read
        self._row: dict[str, float] | tuple = {}
        self._last: tuple | None = None
        self._tick_state: TickState | None = None
        # the tick table as of the last record(): the summary, the card and write_run all
        # read it, and building it is most of what they cost
        self._tick_table: pd.DataFrame | None = None
        # [journal, episode, ticks of it noted]: a batch's plain ticks not noted yet
        # (:class:`Journal`), noted when the record is next read (:meth:`_sync`)
        self._journal: list | None = None

    @property
    def collector(self) -> TickCollector:
        """Mesa's DataCollector over the tick table (``model.datacollector``), made when
        first read: an RL environment's episodes never read it."""
        got = self._collector
        if got is None:
            got = self._collector = TickCollector(
                model_reporters={c: _reporter(c) for c in self.columns}
            )
            # read directly, it notes the journal's ticks as the record does; a weak
            # reference: a strong one would make every record a cycle for the collector
            got._owner = weakref.ref(self)
        return got

    def __getstate__(self) -> dict[str, Any]:
        self._sync()  # a copy holds every tick noted, no journal
        state = dict(self.__dict__)
        state["_journal"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._collector is not None:
            self._collector._owner = weakref.ref(self)

    def follow(self, journal: Journal, b: int) -> None:
        """Note the plain ticks of ``journal`` as its episode ``b`` from now on (the
        ticks of any journal followed before are noted first)."""
        self._sync()
        self._journal = [journal, b, len(journal.blocks)]

    def _sync(self) -> None:
        """:meth:`record` of episode b of every tick of the followed journal not noted yet
        (ticks nothing reads as they are recorded: no candidate events, extensions, policy
        figures or agents, :attr:`plain`): the row and the exits of each are cut out of its
        block (abm.batch.TickBlock) when first read, the dashboards' arrays of the last
        out of its responses (abm.batch.Responses) and advice."""
        j = self._journal
        if j is None:
            return
        journal, b, seen = j
        blocks = journal.blocks
        if len(blocks) == seen:
            return
        j[2] = len(blocks)
        exits, keep = self._exits, self.collector.keep
        for block in blocks[seen:]:
            ref = (block, b)
            exits.append(ref)
            keep(ref)
        ds, advices, responses = journal.last
        self._row = (blocks[-1], b)
        self._last, self._tick_state = (ds[b], (advices, b), None, (responses, b)), None
        self._tick_table = None

    def record(
        self,
        model: Any,
        d: Decision,
        advice: Advice,
        dropped: np.ndarray,
        outcome: Outcome | Any,
        policy_stats: dict[str, float] | None,
        row: dict[str, Any],
        exits: tuple[np.ndarray, ...],
    ) -> None:
        """Keep tick ``d``'s ``row`` (from :func:`tick_rows`), the dashboards' arrays and
        the candidate events. ``outcome`` may be a function giving it (a batch cuts an
        episode's out of the flat one only when something reads it); ``exits`` holds the
        effort of the accepted and of those who dropped out, and their waits (entry to
        exit), each (a,) or (l,) (the batch takes them from its flat rows at once).

        ``model`` is what Mesa's collector reads (``last_row`` and the agents); the record
        reads its ``pool``, ``streams`` and ``mechanisms``.
        """
        self._sync()
        mechanisms = self.mechanisms
        view = None
        if self.record_events or mechanisms.on:
            pool, rej, a = model.pool, d.rej, len(d.applicants)

            def per_applicant(values, fill):  # accepted applicants got no advice: ``fill``
                values = np.asarray(values)
                out = np.full((a,) + values.shape[1:], fill, dtype=values.dtype)
                out[rej] = values
                return out

            view = RecordView(
                lambda: pool.waiting, model.streams, per_applicant, mechanisms.true_counterfactual
            )
        if callable(outcome):
            outcome = outcome() if self.record_events or mechanisms.on else outcome
        self._row = row
        self._exits.append(exits)
        if mechanisms.on:
            self.mechanisms.row(d, advice, outcome, self.last_row, view)
        if policy_stats is not None:  # the policy's own figures (abm.interfaces.ReportsStats)
            self.last_row.update({f"policy_{k}": float(v) for k, v in policy_stats.items()})
        # the dashboards' arrays, built when first read: stored arrays are never written
        self._last, self._tick_state = (d, advice, dropped, outcome), None
        self.collector.collect(model)
        self._tick_table = None
        if self.record_events:
            r = _responses(d, advice, dropped, outcome, self.difficulty, self.onehot)
            self.events.append(self._events(d, advice, r, outcome, view))

    @property
    def plain(self) -> bool:
        """Whether a tick's record reads nothing but its row and exits (a batch's journal,
        :meth:`follow`)."""
        collector = self._collector
        return not (
            self.record_events
            or self.mechanisms.on
            or (collector is not None and collector.reads_agents)
        )

    @property
    def last_row(self) -> dict[str, float]:
        """The last tick's row of the tick table (a batch's made a dict when first read)."""
        self._sync()
        row = self._row
        if type(row) is tuple:
            row = self._row = row[0].row(row[1])
        return row

    @last_row.setter
    def last_row(self, row: dict[str, float]) -> None:
        self._row = row

    @property
    def tick_state(self) -> TickState | None:
        """The last tick's arrays, for dashboards (None before the first tick)."""
        self._sync()
        if self._tick_state is None and self._last is not None:
            d, advice, dropped, outcome = self._last
            if dropped is None:  # a batch's tick (note): this episode's part of it
                responses, b = outcome
                dropped, outcome = responses.of(b)
                advices, b = advice
                advice = advices[b]
            if callable(outcome):
                outcome = outcome()
            r = _responses(d, advice, dropped, outcome, self.difficulty, self.onehot)
            self._tick_state = TickState(
                tick=d.t,
                threshold=d.threshold,
                ids=d.applicants.ids,
                scores=d.scores,
                accepted=d.accepted,
                n_reapplied=d.n_ret,
                rejected_ids=d.applicants.ids.take(d.rej),
                goal=advice.goal,
                cf_scores=r.cf_scores,
                dropped=dropped,
                implemented=r.implemented,
            )
        return self._tick_state

    def threshold_at(self, t: int, threshold: float) -> np.ndarray:
        """Note tick ``t``'s threshold; returns the thresholds of every recorded tick so
        far (NaN before recording began): advice is judged against the threshold in force
        when it was issued as well as the one when it is used."""
        if t >= self._thresholds.shape[0]:  # a run on past the scenario's ticks
            grown = np.full(2 * t + 1, np.nan)
            grown[: self._thresholds.shape[0]] = self._thresholds
            self._thresholds = grown
        self._thresholds[t] = threshold
        return self._thresholds

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
        self._sync()
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
        self._sync()
        exits = self._each_exit()
        spent = _spent(exits, waiting)
        last = self._last[0].t if self._last is not None else 0
        accepted = np.concatenate([np.zeros(0, dtype=np.int64)] + [e[2] for e in exits])
        waits = np.concatenate([accepted] + [e[3] for e in exits] + [last - waiting.entered])
        is_accepted = np.arange(waits.shape[0]) < accepted.shape[0]
        return outcome_card(
            self.tick_table(),
            spent,
            self.config,
            Waits(waits, is_accepted),
            extensions.registered(),
        )

    def spent(self, waiting: Population) -> np.ndarray:
        """Every candidate's total effort (c,): those who left (each tick's accepted, then
        its dropped out), then those still ``waiting``, as the card counts it."""
        return _spent(self._each_exit(), waiting)

    def _each_exit(self) -> list[tuple[np.ndarray, ...]]:
        """Each recorded tick's exits (:meth:`record`), a batch's cut out of its block."""
        self._sync()
        return [e if type(e[0]) is np.ndarray else e[0].exits(e[1]) for e in self._exits]

    def summary(self, head: dict[str, Any]) -> dict[str, Any]:
        """``head`` followed by the episode means over defined ticks and the totals."""
        ticks = self.tick_table()
        out = dict(head)
        out.update(metrics.episode_summary(ticks))
        out.update(extensions.episode_summary(ticks))
        return out


def _spent(exits: list[tuple[np.ndarray, ...]], waiting: Population) -> np.ndarray:
    """Each candidate's total effort: ``exits``' accepted and dropped out, tick by tick,
    then the ``waiting``."""
    return np.concatenate([x for e in exits for x in e[:2]] + [waiting.effort])


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
    cost = advice.cost
    if cost is None:
        cost = metrics.recommendation_cost(advice.X, advice.X_cf, difficulty, onehot)
    implemented = np.zeros(d.rej.shape[0], dtype=bool)
    implemented[~dropped] = outcome.implemented
    return _Responses(cf_scores, cf_adv, goal_adv, cost, dropped, implemented)


class TickArrays:
    """One tick of B episodes, flat (:mod:`abm.batch`): ``sizes`` applicants, ``n_ret``
    reapplicants (first in each episode), ``n_rej`` rejected, ``n_stay`` stayers,
    ``n_leave`` dropped out, ``n_waiting`` waiting after the tick and ``n_window`` rejected
    in the RF window, each (B,); the ``applicants`` (a rows) and their ``accepted`` flags
    (a,); the rejected's ``advised`` flags (n,) and counterfactuals ``X_cf`` (n, z); the
    stayers' ``effort`` and ``implemented`` (s,) and the dropped-out's ``wasted`` effort;
    ``X`` (n, z) the rejected's features seen (None: each advice's own are read);
    ``thresholds`` (B,) each episode's (None: each decision's is read)."""

    __slots__ = (
        "t",
        "sizes",
        "n_ret",
        "n_rej",
        "n_stay",
        "n_leave",
        "n_waiting",
        "n_window",
        "applicants",
        "accepted",
        "advised",
        "X_cf",
        "effort",
        "implemented",
        "wasted",
        "X",
        "thresholds",
    )

    def __init__(self, **values: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, values[name])


def tick_rows(
    models: list[Any], ds: list[Decision], advices: list[Advice], f: TickArrays, episodes: Any
) -> dict[str, list]:
    """The tick-table columns (SPEC §2) of B episodes, each a list of B values, computed
    once over their flat rows; each episode's row is what its run alone records
    (:mod:`abm.segments`). :class:`TickFigures` says what each column counts."""
    return TickFigures(models, ds, advices, f, episodes).columns()


class TickFigures:
    """The tick-table columns of B episodes (:func:`tick_rows`) in two halves.

    Made, it reads what the next tick changes: each episode's threshold (noted in its
    history), M(x_cf) of the advised and of the reapplicants' counterfactuals under the
    models in force. :meth:`columns` then reduces the tick's rows (per-episode sums, Gini
    coefficients and means: most of a tick's record) from arrays nothing writes again,
    so the columns have the same bits whenever they are made; :meth:`ratios` gives eqs.
    2-3 alone from counts. A batch may keep the figures of its ticks and make the columns
    only when a table is read (:attr:`abm.batch.Batch.defer_record`).

    ``n_accepted_new`` and ``n_accepted_advised``: acceptances of first-time applicants and
    of reapplicants carrying advice (the rest went to unadvised reapplicants);
    ``n_advised_reapplied``: reapplicants carrying advice, of whom ``n_valid_reapply`` have a
    counterfactual that the model in force scores at or above this tick's threshold and
    ``n_valid_issued`` at or above the threshold of the tick it was issued (both within
    :data:`abm.metrics.CLEAR_TOL`). Every policy's advice is judged on this one scale,
    whatever goal the policy set itself.
    """

    __slots__ = (
        "_models",
        "_advices",
        "_f",
        "_thresholds",
        "_cf_scores",
        "_goal",
        "_returned",
        "_carried",
        "_n_carried",
        "_succ",
        "_entered",
        "_cf_now",
        "_issued_th",
        "_ratios",
        "_moved",
        "_unadvised",
    )

    def __init__(
        self,
        models: list[Any],
        ds: list[Decision],
        advices: list[Advice],
        f: TickArrays,
        episodes: Any,
        compact: bool = False,
    ) -> None:
        """``compact``: keep only the arrays :meth:`columns` reads (|x_cf - x| of the
        rejected, flags and counts; not the applicants' rows, nor the advice), for figures
        that wait (a batch's deferred record): memory held is memory a later tick cannot
        reuse, and fresh pages cost more than the arithmetic. ``f`` is then the figures'
        own: its rows are let go (the batch makes one a tick for them)."""
        B, t = len(ds), f.t
        self._models, self._advices, self._f = models, advices, f
        thresholds = f.thresholds
        if thresholds is None:
            thresholds = np.array([d.threshold for d in ds])
        self._thresholds = thresholds
        # every episode's thresholds so far, (B, ticks) where the batch holds them as one
        noted = None if B == 1 else episodes.history(t)
        if noted is None:
            history = [
                m.recorder.threshold_at(t, d.threshold) for m, d in zip(models, ds, strict=True)
            ]
        else:
            noted[:, t] = thresholds
        # M(x_cf) of the advised under each episode's model in force, once a tick
        fill_cf_scores(models, advices, episodes, (f.X_cf, f.advised, f.n_rej))
        if B == 1:
            self._cf_scores, self._goal = advices[0].scores[0], advices[0].goal
        elif type(advices) is AdviceRows and advices.cf is not None:
            self._cf_scores, self._goal = advices.cf[0], advices.goal
        else:
            self._cf_scores = np.concatenate([a.scores[0] for a in advices])
            self._goal = np.concatenate([a.goal for a in advices])
        # the reapplicants (first among each episode's applicants) and what their advice
        # does now, under the model in force and against the threshold it was issued at
        a = f.applicants
        self._returned = returned = segments.first(f.n_ret, f.sizes)
        self._carried = carried = returned & a.advised
        self._succ = carried & a.implemented
        self._entered = a.entered
        self._n_carried = n_carried = segments.count(carried, f.sizes)
        self._cf_now = episodes.score(a.X_cf[carried], n_carried)
        issued_at = a.last_tick[carried]
        if B == 1:
            self._issued_th = history[0].take(issued_at)
        elif noted is not None:
            self._issued_th = noted[segments.episode_of(n_carried), issued_at]
        else:  # each episode's history, one after another: entry (e, i) at offset[e] + i
            offset = np.cumsum([0] + [h.shape[0] for h in history[:-1]])
            self._issued_th = np.concatenate(history).take(
                offset.take(segments.episode_of(n_carried)) + issued_at
            )
        self._ratios: tuple | None = None
        self._moved: np.ndarray | None = None
        self._unadvised: list[list[int]] | None = None
        if compact and B > 1 and f.X is not None and models[0].recorder.onehot is None:
            # eq. 18's |x_cf - x| now (elementwise: each value's own bits), then only what
            # the columns read: neither the applicants' rows nor the advice are kept
            moved = np.subtract(f.X_cf, f.X)
            np.abs(moved, out=moved)
            self._moved, self._unadvised = moved, _unadvised(advices)
            self._advices = None
            f.applicants = f.X = f.X_cf = None  # f is the figures' own from here

    def ratios(self) -> tuple[np.ndarray, np.ndarray, list[float], list[float]]:
        """(|I^succ|, |I^succ and accepted|, each (B,)), then RR (eq. 2) and RF (eq. 3) of
        each episode (NaN where undefined)."""
        if self._ratios is None:
            f, succ = self._f, self._succ
            n_succ = segments.count(succ, f.sizes)
            n_succ_acc = segments.count(succ & f.accepted, f.sizes)
            rr, rf = _ratios(n_succ_acc, n_succ), _ratios(n_succ, f.n_window)
            self._ratios = (n_succ, n_succ_acc, rr, rf)
        return self._ratios

    def columns(self) -> dict[str, list]:
        """The tick-table columns, each a list of B values."""
        models, advices, f = self._models, self._advices, self._f
        B, t, thresholds = len(models), f.t, self._thresholds
        n_rej, sizes = f.n_rej, f.sizes
        cf_scores, goal = self._cf_scores, self._goal
        flat = type(advices) is AdviceRows and advices.cf is not None
        adv = f.advised
        n_adv = segments.count(adv, n_rej)
        onehot = models[0].recorder.onehot
        if B == 1 or (self._moved is None and (f.X is None or onehot is not None)):
            for m, a in zip(models, advices, strict=True):
                # a matrix-vector product: one per episode, its bits are the episode's own
                a.cost = metrics.recommendation_cost(
                    a.X, a.X_cf, m.recorder.difficulty, m.recorder.onehot
                )
            cost = advices[0].cost if B == 1 else np.concatenate([a.cost for a in advices])
        else:
            # eq. 18: |x_cf - x| elementwise for all rows at once (each value's own bits;
            # kept at the tick where compact), then the matrix-vector product episode by
            # episode, each over its own rows
            moved = self._moved
            if moved is None:
                moved = np.subtract(f.X_cf, f.X)
                np.abs(moved, out=moved)
            at = segments.offsets(n_rej)
            parts = [moved[at[b] : at[b + 1]] @ m.recorder.difficulty for b, m in enumerate(models)]
            cost = np.concatenate(parts)
            if flat:  # each Advice cuts its own out when it is made (abm.advice.AdviceRows)
                advices.cost = cost
                advices.refresh()
            elif advices is not None:
                for a, part in zip(advices, parts, strict=True):
                    a.cost = part
        if n_adv.sum() == adv.shape[0]:  # the usual case: everyone rejected was advised
            cf_adv, goal_adv, cost_adv = cf_scores, goal, cost
        else:
            cf_adv, goal_adv, cost_adv = cf_scores[adv], goal[adv], cost[adv]
        has_goal = np.isfinite(goal_adv)
        n_goal = segments.count(has_goal, n_adv)
        all_goals = n_goal.sum() == has_goal.shape[0]
        if all_goals:
            error = metrics.recommendation_error(cf_adv, goal_adv)
        else:
            error = metrics.recommendation_error(cf_adv[has_goal], goal_adv[has_goal])
        below = cf_adv < segments.per_row(thresholds - GOAL_TOL, n_adv)
        accepted = f.accepted
        returned, carried, n_carried = self._returned, self._carried, self._n_carried
        cf_now = self._cf_now
        n_succ, n_succ_acc, rr, rf = self.ratios()
        n_acc = sizes - n_rej
        entered = segments.sums(self._entered[accepted], n_acc)  # integers: exact in any order
        tol = metrics.CLEAR_TOL
        unadvised = self._unadvised if self._unadvised is not None else _unadvised(advices)
        if B == 1:
            gini, gini_cost = segments.ginis(cf_adv, n_adv), segments.ginis(cost_adv, n_adv)
            mean_goal = segments.nanmeans(goal_adv, n_adv)
            mean_cf = segments.nanmeans(cf_adv, n_adv)
            mean_cost = segments.nanmeans(cost_adv, n_adv)
            mean_error = segments.nanmeans(error, n_goal)
        else:  # reductions over the advised's rows, several arrays in one pass (abm.segments)
            gini, gini_cost = segments.ginis(np.stack([cf_adv, cost_adv]), n_adv)
            means = [goal_adv, cf_adv, cost_adv] + ([error] if all_goals else [])
            mean_goal, mean_cf, mean_cost, *rest = segments.nanmeans(np.stack(means), n_adv)
            mean_error = rest[0] if all_goals else segments.nanmeans(error, n_goal)
        return {
            "tick": [t] * B,
            "threshold": thresholds.tolist(),
            "n_applicants": sizes.tolist(),
            "n_new": (sizes - f.n_ret).tolist(),
            "n_reapplied": f.n_ret.tolist(),
            "n_accepted": n_acc.tolist(),
            "n_rejected": n_rej.tolist(),
            "n_dropped": f.n_leave.tolist(),
            "n_waiting": f.n_waiting.tolist(),
            "n_succ": n_succ.tolist(),
            "n_succ_accepted": n_succ_acc.tolist(),
            "n_rejected_window": f.n_window.tolist(),
            "rr": rr,
            "rf": rf,
            "gini": gini.tolist(),
            "gini_cost": gini_cost.tolist(),
            "mean_goal": mean_goal.tolist(),
            "mean_cf_score": mean_cf.tolist(),
            "mean_error": mean_error.tolist(),
            "n_unadvised": (n_rej - n_adv).tolist(),
            "n_unreached": unadvised[0],
            "n_withheld": unadvised[1],
            "n_no_change": unadvised[2],
            "n_below_threshold": segments.count(below, n_adv).tolist(),
            "n_short_of_goal": segments.count(cf_adv < goal_adv - GOAL_TOL, n_adv).tolist(),
            "mean_cost": mean_cost.tolist(),
            "effort": segments.sums(f.effort, f.n_stay).tolist(),
            "wasted_effort": segments.sums(f.wasted, f.n_leave).tolist(),
            "n_implemented": segments.count(f.implemented, f.n_stay).tolist(),
            "mean_time_to_accept": _mean_waits(t, n_acc, entered),
            "n_accepted_new": segments.count(accepted & ~returned, sizes).tolist(),
            "n_accepted_advised": segments.count(accepted & carried, sizes).tolist(),
            "n_advised_reapplied": n_carried.tolist(),
            "n_valid_reapply": segments.count(
                cf_now >= segments.per_row(thresholds - tol, n_carried), n_carried
            ).tolist(),
            "n_valid_issued": segments.count(cf_now >= self._issued_th - tol, n_carried).tolist(),
        }


def _unadvised(advices: Any) -> list[list[int]]:
    """Each episode's rejected left unadvised: (unreached, withheld, no change), (3, B)."""
    if type(advices) is AdviceRows:
        return [c.tolist() for c in (advices.unreached, advices.withheld, advices.no_change)]
    return [[a.counts[i] for a in advices] for i in range(3)]


def fill_cf_scores(
    models: list[Any], advices: list[Advice], episodes: Any, flat: tuple | None = None
) -> None:
    """Fill each advice's M(x_cf) cache (:meth:`Advice.cf_scores`) under its episode's model
    in force, scoring the advised rows of every episode not cached yet in one pass.
    ``flat``: the advice of all episodes as the batch holds it, (X_cf (n, z), advised (n,),
    rejected per episode (B,)), read instead of each advice's own arrays."""
    if type(advices) is AdviceRows and advices.cf is not None:
        return  # filled for all in one pass already (each Advice made cuts its own)
    if type(advices) is AdviceRows and not advices.any_scored():
        # a row-wise answer, flat: every advised row of every episode scored in one pass
        X_adv = advices.X_cf[advices.advised]
        got = episodes.score_of(X_adv, segments.episode_of(advices.n_advised))
        if got.shape[0] == advices.advised.shape[0]:
            advices.cf = (got, got)
        else:
            cf_scores = np.full(advices.advised.shape[0], np.nan)
            cf_scores[advices.advised] = got
            advices.cf = (cf_scores, got)
        advices.refresh()
        return
    todo = [b for b, a in enumerate(advices) if a.scores is None]
    if not todo:
        return
    if len(advices) == 1:
        advices[0].cf_scores(models[0].scorer)
        return
    if flat is not None and len(todo) == len(advices):
        X_cf, advised, n_rej = flat
        n = segments.count(advised, n_rej)
        got = episodes.score_of(X_cf[advised], segments.episode_of(n))
    else:
        rows = [advices[b].X_cf[advices[b].advised] for b in todo]
        n = np.array([r.shape[0] for r in rows])
        got = episodes.score_of(np.concatenate(rows), np.repeat(np.array(todo), n))
    at = 0
    for b, m in zip(todo, n.tolist(), strict=True):
        advice = advices[b]
        cf_adv = got[at : at + m]
        at += m
        if advice.all_advised:
            advice.scores = (cf_adv, cf_adv)
        else:
            cf_scores = np.full(advice.advised.shape[0], np.nan)
            cf_scores[advice.advised] = cf_adv
            advice.scores = (cf_scores, cf_adv)


def _ratios(numerator: np.ndarray, denominator: np.ndarray) -> list[float]:
    """:func:`abm.metrics.ratio` of each episode (integer counts, exact as doubles: one
    correctly rounded division each, as Python's)."""
    out = np.full(numerator.shape[0], np.nan)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out.tolist()


def _mean_waits(t: int, n_accepted: np.ndarray, entered_sums: np.ndarray) -> list[float]:
    """:func:`_mean_wait` of each episode, from its count and sum of entry ticks (float
    sums of integers below 2^53 are exact)."""
    # t n - total and n are integers below 2^53: exact as doubles, so one division each
    # gives Python's correctly rounded int / int
    out = np.full(n_accepted.shape[0], np.nan)
    np.divide(t * n_accepted - entered_sums, n_accepted, out=out, where=n_accepted > 0)
    return out.tolist()


def _mean_wait(t: int, entered: np.ndarray) -> float:
    """Mean of t - entered over the accepted (NaN if none), in integer arithmetic.

    Equal to the mean of the float differences: every partial sum of integers below 2^53
    is exact in floating point, so both sums are the same integer.
    """
    return _wait_from_sum(t, entered.shape[0], int(np.add.reduce(entered)))


def _wait_from_sum(t: int, n: int, total: int) -> float:
    """(t n - total) / n: :func:`_mean_wait` from the count and the sum of entry ticks."""
    return (t * n - total) / n if n else float("nan")


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


@functools.cache  # one function a column, shared by every model's collector
def _reporter(column: str):
    def report(model: Any):
        return model.last_row[column]

    report.__name__ = f"report_{column}"
    return report


class TickCollector(mesa.DataCollector):
    """Mesa's DataCollector over the tick record (the model's ``last_row``).

    The record holds immutable scalars only, so the deep copy Mesa makes of every
    reported value (a tenth of a paper-scale tick) is skipped, and rows are kept as they
    come and put into ``model_vars`` column by column when it is read (a batch records
    many episodes a tick: one append per row instead of one per value).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._rows: list[dict] = []
        self._owner: Callable[[], Any] | None = None  # its Recorder (a weak reference)
        super().__init__(*args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_owner"] = None  # a copied Recorder links its copy again
        return state

    @property
    def model_vars(self) -> dict[str, list]:
        """Mesa's column lists, every collected row in them."""
        owner = None if self._owner is None else self._owner()
        if owner is not None:
            owner._sync()
        if self._rows:
            self._flush()
        return self._vars

    @model_vars.setter
    def model_vars(self, value: dict[str, list]) -> None:
        self._vars = value

    def collect(self, model: Any) -> None:
        self._rows.append(model.last_row)  # a tick's row is never written after this
        if self.reads_agents:
            self._flush()
            # Mesa collects agent data; hide the model reporters already handled above
            reporters, self.model_reporters = self.model_reporters, {}
            try:
                super().collect(model)
            finally:
                self.model_reporters = reporters

    @property
    def reads_agents(self) -> bool:
        """Whether a tick's collection reads the agents (agent reporters)."""
        return bool(self.agent_reporters or self.agenttype_reporters)

    def keep(self, ref: tuple) -> None:
        """Collect the row ``ref`` = (block, episode) of a batch's tick (abm.batch.TickBlock),
        read out of the block when the columns are (no agent reporters)."""
        self._rows.append(ref)

    def _flush(self) -> None:
        rows, self._rows = self._rows, []
        columns = self._vars
        if all(type(row) is tuple for row in rows):
            # a batch's ticks: each tick's values in one C loop, then a transpose
            blocks = {id(block): block for block, _ in rows}.values()
            names = next(iter(blocks)).names
            if set(names) == set(self.model_reporters) and all(
                block.names == names for block in blocks
            ):
                values = zip(*[block.values_at(b) for block, b in rows], strict=True)
                for var, column in zip(names, values, strict=True):
                    columns[var].extend(column)
                return
        rows = [row if type(row) is dict else row[0].row(row[1]) for row in rows]
        width = len(self.model_reporters)
        if all(len(row) == width for row in rows):  # the usual case: one extend a column
            for var in self.model_reporters:
                columns[var].extend([row[var] for row in rows])
            return
        for row in rows:
            if len(row) != len(self.model_reporters):
                self._align(row)
                row = {var: row.get(var, math.nan) for var in self.model_reporters}
            for var in self.model_reporters:
                columns[var].append(row[var])

    def _align(self, row: dict) -> None:
        """Columns first reported now (a policy's ``policy_*``): NaN on the earlier ticks."""
        done = len(next(iter(self._vars.values()), []))
        for var in row:
            if var not in self.model_reporters:
                self.model_reporters[var] = _reporter(var)
                self._vars[var] = [math.nan] * done
