"""RecourseModel: the competitive top-k recourse world as a Mesa model.

One tick (durable-recourse-rl §3.1, App. B) in two public halves:
``decide()``: reapplications -> arrivals -> scores -> top-k -> the observation;
the policy's ``recommend``; ``respond(recommendation)``: validation -> dropout ->
implementation -> the record. ``step()`` is the three in a row; the RL environment calls
the halves itself and planners fork the model through :mod:`abm.planning`.

The model keeps the stages and the state. The record (tables, summary, the dashboards'
view) is built by :class:`abm.record.Recorder` from the arrays each stage hands over
(:mod:`abm.tick`); the world extensions a scenario switches on are stage objects
(:mod:`abm.mechanisms`); the waiting pool and its speed paths are :class:`abm.pool.Pool`.
Every stage is vectorised over the population arrays. Shapes: a applicants, n rejected,
s stayers, z features.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.agent import AgentSet

from abm import behaviour
from abm.agents import Candidate, CandidateHandles, DecisionMaker
from abm.capacity import Capacity
from abm.card import Card
from abm.config import ScenarioConfig
from abm.interfaces import Recommendation, RecourseObs, RecoursePolicy
from abm.mechanisms import Mechanisms
from abm.planning import RolloutStreams, Simulator, Snapshot
from abm.pool import Pool, advised_rows
from abm.population import Population, filled
from abm.record import Recorder, TickState
from abm.registry import make_policy
from abm.rng import Streams
from abm.scenarios import resolve_scenario
from abm.tick import Advice, Decision, Outcome, reapplicant_feedback
from abm.validation import ConfigError, problem, require_int
from abm.world import build_world

#: tolerance for a policy's counterfactual leaving the [0, 1] box (then clipped)
BOUND_TOL = 1e-9
#: a recommended change smaller than this (feature units) is round-off, not advice: solvers
#: leave residues of about 1e-16 where a need is exactly met, and whether one appears
#: depends on the CPU's kernels; each would be asked of the candidate and drawn for
CHANGE_TOL = 1e-9
# from this many stayers, scores of rows ending at x_cf or at x are reused, not recomputed
_REUSE_FROM = 1024
# the applicants' columns a decision read only for its counts needs (Decision.success_counts;
# ids keep len() working)
_COUNTED = ("ids", "X_obs", "X", "advised", "implemented")


def resolve_policy(policy: RecoursePolicy | str) -> RecoursePolicy:
    """A policy object from an object or a registry name (see ``policies``)."""
    if isinstance(policy, str):
        return make_policy(policy)
    if not isinstance(policy, RecoursePolicy):
        raise TypeError(f"policy must be a registry name or a RecoursePolicy, got {policy!r}")
    return policy


def _configure(scenario: ScenarioConfig | str | Path, seed: int | None, overrides: dict):
    """The scenario with ``seed`` and the keyword ``overrides`` applied (validated)."""
    config = resolve_scenario(scenario)
    if seed is not None:
        overrides = {**overrides, "seed": seed}
    return config.replace(**overrides) if overrides else config


class RecourseModel(mesa.Model):
    """Candidates compete for ``k`` places per tick and receive recourse from a policy.

    Args:
        scenario: a :class:`ScenarioConfig`, a preset name or a TOML path.
        policy: a registry name (``recourse-abm policies``) or a policy object.
        seed: episode seed (overrides the scenario's).
        agents: create a Mesa ``Candidate`` handle per waiting candidate. Off for RL and
            sweeps; results are identical either way.
        record_events: keep the per-application candidate table.
        estimator: a scikit-learn classifier with ``predict_proba`` to use as M.
        allow_mismatch: let trained policies use artefacts trained for another scenario
            (otherwise an error); the mismatch is recorded in their provenance.
        **overrides: scenario fields to change (e.g. ``k=5, beta=0.01``), so the
            keyword signature serves scripts, ``mesa.batch_run`` and the dashboard.
    """

    # an episode ends after the scenario's ticks; planning forks (from_snapshot) may roll on
    _bounded = True

    def __init__(
        self,
        scenario: ScenarioConfig | str | Path = "paper",
        policy: RecoursePolicy | str = "threshold",
        *,
        seed: int | None = None,
        agents: bool = True,
        record_events: bool = True,
        estimator: Any | None = None,
        allow_mismatch: bool = False,
        **overrides: Any,
    ) -> None:
        flags = {"agents": agents, "record_events": record_events, "allow_mismatch": allow_mismatch}
        for name, flag in flags.items():  # "yes" or 0 would pass as truthy
            if not isinstance(flag, bool | np.bool_):
                raise ConfigError(problem(name, flag, "true or false"))
        agents, record_events, allow_mismatch = (bool(flag) for flag in flags.values())
        config = _configure(scenario, seed, overrides)
        self.config, self.allow_mismatch = config, allow_mismatch
        self.streams = Streams(config.seed)
        super().__init__(rng=self.streams.mesa)
        self.world = build_world(config, estimator)
        self.policy_name = policy if isinstance(policy, str) else type(policy).__name__
        self.policy = resolve_policy(policy)
        self.use_agents, self.record_events, self._recording = agents, record_events, True
        self._set_feature_facts(config)
        self.mechanisms = Mechanisms.build(config, self.world)
        # k_t and m_t (constant unless a schedule is on); shocks are drawn here, once
        self.capacity = Capacity.build(config, self.streams)
        self.decision_maker = DecisionMaker(self, config.k)
        # privileged: rollouts of this model (planning references only, see abm.planning)
        self.simulator = Simulator(self, type(self).from_snapshot)
        # the scenario lets trained policies check what they were trained for;
        # allow_mismatch lets them run anyway (recorded in their provenance)
        extra = {"simulator": self.simulator, "scenario": config, "allow_mismatch": allow_mismatch}
        self.context = self.world.policy_context(config, self.immutable, self.difficulty, extra)
        self.policy.prepare(self.context)
        self.tick, self._next_id = 0, 0
        self.pool = Pool(config.n_features, config.validity)
        self._pending: Decision | None = None  # set between decide() and respond()
        self._handles = CandidateHandles(self)
        self.recorder = Recorder(config, self.mechanisms, self.difficulty, record_events)
        self.datacollector = self.recorder.collector
        self.running = True

    def _set_feature_facts(self, config: ScenarioConfig) -> None:
        """True difficulties d (z,) and the immutable mask (z,)."""
        self.difficulty = np.asarray(config.difficulty, dtype=float)
        self.immutable = np.zeros(config.n_features, dtype=bool)
        self.immutable[list(config.immutable)] = True
        self._any_immutable = bool(self.immutable.any())

    @property
    def scorer(self):
        """The decision model in force (a refitted one under retraining)."""
        return self.mechanisms.scorer

    @property
    def model_version(self) -> int:
        """How many times the decision model was refitted (0 without retraining)."""
        return self.mechanisms.version

    @property
    def population(self) -> Population:
        """The candidates waiting to reapply, one row each (:class:`Population`)."""
        return self.pool.waiting

    # -- planning: snapshots and forks (see abm.planning) ------------------------------
    def snapshot(self) -> Snapshot:
        """The model's own state now (shares arrays: populations are never written in place)."""
        return Snapshot(
            config=self.config,
            world=self.world,
            tick=self.tick,
            next_id=self._next_id,
            population=self.population,
            dropped=tuple(self.pool.dropped),
            pending=self._pending,
            mechanisms=self.mechanisms.fork() if self.mechanisms.on else self.mechanisms,
            capacity=self.capacity,
            features=(self.difficulty, self.immutable, self._any_immutable),
        )

    @classmethod
    def from_snapshot(cls, snap: Snapshot, streams: Any, policy: Any) -> RecourseModel:
        """A fork: a model at ``snap`` drawing from ``streams``, advised by ``policy``.

        Mesa's constructor is not run: the fork has no agents, no record and no Mesa
        registration (its decision-maker is unregistered); ``decide``/``respond``/``step``
        work as in the model. ``policy`` is used as given (``prepare`` is not called).
        """
        fork = object.__new__(cls)
        c = fork.config = snap.config
        fork.world, fork.streams, fork.policy = snap.world, streams, policy
        fork.policy_name = f"fork of {type(policy).__name__}"
        fork.use_agents = fork.record_events = fork._recording = fork._bounded = False
        if snap.features is None:
            fork._set_feature_facts(c)
        else:  # the model's own arrays: nothing writes them
            fork.difficulty, fork.immutable, fork._any_immutable = snap.features
        fork.mechanisms = snap.mechanisms.fork()
        # the real run's schedule, shocks included (drawn once for the whole episode)
        fork.capacity = snap.capacity if snap.capacity is not None else Capacity(c)
        fork.decision_maker = DecisionMaker.unregistered(fork, c.k)
        fork.tick, fork._next_id = snap.tick, snap.next_id
        fork.pool = Pool(c.n_features, c.validity, snap.population, snap.dropped)
        # the fork's respond() writes its own figures into the decided tick: not into ours
        fork._pending = None if snap.pending is None else snap.pending.copy()
        fork.running = snap.tick < c.ticks
        return fork

    def pending_observation(self) -> RecourseObs:
        """The observation returned by the pending ``decide()``."""
        return self._require_pending().obs

    def pending_success(self) -> tuple[int, int, int]:
        """(|I^succ|, |I^succ and accepted|, |I^rej window|) of the pending decision (eqs. 2-3)."""
        d = self._require_pending()
        return (*d.success_counts(), d.n_window)

    def _require_pending(self) -> Decision:
        if self._pending is None:
            raise RuntimeError("no decision is pending: call decide() first")
        return self._pending

    # -- the tick -----------------------------------------------------------------
    def step(self) -> None:
        """Advance one tick: decide, ask the policy, respond (a pending decision is kept).

        Past the scenario's last tick there is no episode left: a :class:`RuntimeError`
        names the tick (a planning fork may roll on past it: its horizon is its own).
        """
        if self._bounded and self.tick >= self.config.ticks:
            raise RuntimeError(
                f"the episode is over: step() at tick {self.tick}, but the scenario has "
                f"ticks = {self.config.ticks} (ticks 0..{self.config.ticks - 1}); "
                "start a new model for another episode"
            )
        obs = self.decide() if self._pending is None else self._pending.obs
        # nobody rejected: the policy is not asked
        rec = self.policy.recommend(obs, self.streams.policy) if obs.n_rejected else None
        self.respond(rec)

    def run(self, ticks: int | None = None, progress: Any | None = None) -> RecourseModel:
        """Run ``ticks`` more ticks (default: up to the scenario's tick count).

        ``ticks`` is an integer in [0, ticks left]; anything else is a :class:`ConfigError`.
        """
        left = self.config.ticks - self.tick if self._bounded else math.inf
        if ticks is not None:
            require_int("ticks", ticks, 0, left)
        target = self.config.ticks if ticks is None else self.tick + int(ticks)
        while self.tick < target:
            self.step()
            if progress is not None:
                progress()
        return self

    def decide(self, observe: bool = True) -> RecourseObs | None:
        """First half of a tick: reapplications, arrivals, scores and the top-k selection.

        Feedback on the reapplicants goes to ``policy.observe`` here, once the decisions
        are known. Returns what the decision-maker sees; :meth:`respond` must follow.
        ``observe=False`` builds no observation and returns None (a planning fork's last
        tick, read only by :meth:`pending_success`); :meth:`respond` then cannot follow,
        and without mechanisms the applicants keep only the columns the counts read.
        """
        if self._pending is not None:
            raise RuntimeError(f"tick {self.tick} is already decided: call respond() first")
        t, c, pool, mech = self.tick, self.config, self.pool, self.mechanisms
        if self.capacity.on:
            self.decision_maker.k = self.capacity.at(t)[0]
        states = mech.start_tick(t, pool.waiting, self.streams) if mech.on else ()
        returning = pool.split(self._reapplications(t))
        n_window = len(returning) + pool.n_waiting + pool.dropped_in_window(t)
        feedback = None
        if getattr(self.policy, "observe", None) is not None:  # captured before X changes
            feedback = reapplicant_feedback(t, returning, mech.feedback(states) if mech.on else {})
        # hidden changes become visible now: what is seen (X_obs) is the true X. A fork's
        # last tick (observe False) is read only for its counts: the selection needs the
        # features and the counts the reapplicants' flags, so no other column is joined
        counted = not observe and not mech.on
        arrivals = self._last_arrivals(t) if counted else self._arrivals(t)
        applicants = Population.concat(
            [returning, arrivals], c.n_features, {"X_obs": "X"}, _COUNTED if counted else None
        )
        scores, accepted, threshold = self.decision_maker.decide(
            applicants.X_obs, self.streams.ties
        )
        d = Decision(t, threshold, applicants, scores, accepted, len(returning), n_window)
        d.states = states
        if mech.on:
            mech.on_selected(d, pool, self.streams, self.record_events)
        if feedback is not None:
            self.policy.observe(feedback(accepted[: len(returning)]))
        d.obs = self._observation(d) if observe else None
        self._pending = d
        return d.obs

    def _reapplications(self, t: int) -> np.ndarray:
        """(n_waiting,) bool: who reapplies now; everyone does at the latest T ticks on."""
        column, c = self.pool.column, self.config
        elapsed = t - column("last_tick")
        due = elapsed >= c.validity
        if np.count_nonzero(due) == due.shape[0]:  # always so at T = 1: no draw is needed
            return due
        gap = behaviour.score_gap(column("goal"), column("score_now"))
        p = behaviour.reapply_probability(gap, elapsed, c.validity, c.nu)
        return self.streams.reapply.random(due.shape[0]) < p

    def _arrivals(self, t: int) -> Population:
        """The entrants of tick ``t`` (N₀ at tick 0, m later), each with fresh ids."""
        c, streams = self.config, self.streams
        n = c.n_initial if t == 0 else self.capacity.at(t)[1]
        X, group = self.world.entrants(n, streams)
        ids = np.arange(self._next_id, self._next_id + n)
        self._next_id += n
        lo, hi = c.risk_aversion
        # a stream of its own: traits never shift the arrivals of other runs
        risk = filled(n, lo, np.float64) if lo == hi else streams.get("traits").uniform(lo, hi, n)
        extra = self.mechanisms.entrant_columns(n) if self.mechanisms.on else None
        return Population.entrants(ids, X, t, risk, group, extra)

    def _last_arrivals(self, t: int) -> Population:
        """The entrants of a fork's last tick, the one read only for its counts.

        A planner's rollouts with one key draw the same entrants there whatever their plan
        (the arrival streams serve nothing else, and nothing draws after this tick): a
        rollout's streams (:class:`abm.planning.RolloutStreams`) keep them in their
        ``memo`` for the next rollout, keyed by the tick and the first id."""
        if not isinstance(self.streams, RolloutStreams):
            return self._arrivals(t)
        memo = self.streams.memo
        key = ("arrivals", t, self._next_id)
        got = memo.get(key)
        if got is None:
            got = memo[key] = self._arrivals(t)
        else:
            self._next_id += len(got)
        return got

    def _observation(self, d: Decision) -> RecourseObs:
        """What the decision-maker sees of tick ``d.t`` after the selection."""
        applicants, scores, rej = d.applicants, d.scores, d.rej
        return RecourseObs(
            tick=d.t,
            threshold=d.threshold,
            applicant_ids=applicants.ids,
            applicant_X=applicants.X_obs,
            applicant_scores=scores,
            accepted=d.accepted,
            ids=applicants.ids.take(rej),
            X=applicants.X_obs.take(rej, axis=0),
            scores=scores.take(rej),
            n_applications=applicants.n_apps.take(rej) + 1,
            history_fn=self.pool.history_fn(),
            extra={"risk_aversion": applicants.risk_aversion.take(rej)},
            decision_model=self.scorer,
            model_version=self.model_version,
            k=self.decision_maker.k,
            m=self.capacity.at(d.t)[1],
            **(self.mechanisms.observation(d) if self.mechanisms.on else {}),
        )

    def respond(self, recommendation: Recommendation | Advice | None) -> None:
        """Second half of a tick: advice, dropout, implementation, the tick record.

        ``recommendation`` covers the rejected of the last :meth:`decide` (None, or an
        empty one, when nobody was rejected); it is validated before anything changes. An
        :class:`~abm.tick.Advice` from :meth:`advice_for` is this decision's, validated
        already (a planner's forks of one decision share it).
        """
        d = self._require_pending()
        advice = (
            recommendation
            if isinstance(recommendation, Advice)
            else self._validate(d, recommendation)
        )
        if self.mechanisms.on:
            self.mechanisms.on_advice(d, advice, self.policy_name)
        self._pending = None
        t, applicants, rej, mech = d.t, d.applicants, d.rej, self.mechanisms
        dropped = self._dropout(d, advice)
        issued = None
        if mech.on:  # under which model, threshold and score the advice was given
            issued = mech.issued(
                advice.advised, lambda: advice.cf_scores(self.scorer)[0], d.threshold
            )
        stayers, leaving, order = advised_rows(
            applicants, rej, dropped, advice.goal, advice.X_cf, advice.advised, t, issued
        )
        known = None
        if (
            len(stayers) >= _REUSE_FROM
            and self._recording
            and not mech.on
            and self.scorer.is_linear
        ):
            # M(x_cf) is needed for the record anyway; a linear score is a function of the
            # row alone, so rows that end at x_cf (or where they were) need no new score
            stay = order[: len(stayers)]
            known = (advice.cf_scores(self.scorer)[0].take(stay), d.obs.scores.take(stay))
        outcome = self._implement(stayers, known)
        self.pool.add(t, stayers, leaving)
        if self._recording:
            if self.use_agents:  # before recording, so agent reporters read the new rows
                gone = np.concatenate([applicants.ids[d.accepted], leaving.ids])
                self._handles.sync(gone, stayers.ids, self.population.ids)
            stats = getattr(self.policy, "tick_stats", None)
            self.recorder.record(
                self, d, advice, dropped, leaving, outcome, None if stats is None else stats()
            )
        self.tick += 1
        if self.tick >= self.config.ticks:
            self.running = False

    def advice_for(self, recommendation: Recommendation | None) -> Advice:
        """``recommendation`` to the pending decision's rejected, validated as
        :meth:`respond` would (it raises the same errors); :meth:`respond` takes the result.
        An Advice is never written in place, so forks of one decision may share it."""
        return self._validate(self._require_pending(), recommendation)

    def _validate(self, d: Decision, rec: Recommendation | None) -> Advice:
        """The policy's advice to the rejected of ``d``, checked: shapes, [0, 1], immutables."""
        immutable = self.immutable if self._any_immutable else None
        return _checked_advice(d.obs.X, rec, immutable, self.policy_name)

    def _dropout(self, d: Decision, advice: Advice) -> np.ndarray:
        """(n,) bool: rejected applicants who give up now (eq. 6)."""
        c, rej = self.config, d.rej
        gap = behaviour.score_gap(advice.goal, d.scores.take(rej))
        p = behaviour.dropout_probability(gap, d.applicants.n_apps.take(rej), c.rho, c.chi, c.omega)
        return self.streams.dropout.random(rej.shape[0]) < p

    def _implement(self, stayers: Population, known: tuple | None = None) -> Outcome:
        """Each recommended change succeeds with eq. 8's probability; updates ``stayers``.

        Only changed entries are drawn (one uniform each, row-major order): advice
        usually touches one or two of the z features. ``known`` = (M(x_cf), M(x)), each
        (s,), spares scoring the rows that end at x_cf or at x.
        """
        X, X_cf = stayers.X_obs, stayers.X_cf
        n, z = X.shape
        # flat positions of the changed entries (row-major, as np.nonzero orders them);
        # X and X_cf are contiguous (see advised_rows), so ravel() makes no copy
        flat, flat_cf = X.ravel(), X_cf.ravel()
        changed = (flat_cf != flat).nonzero()[0]
        rows, cols = np.divmod(changed, z)
        x, x_cf = flat.take(changed), flat_cf.take(changed)
        d = self.difficulty.take(cols)
        p = behaviour.change_success_probability(x, x_cf, self.config.beta, d)
        ok = self.streams.implementation.random(changed.shape[0]) < p
        rows_ok, x_cf_ok = rows[ok], x_cf[ok]
        X_new = X.copy()
        X_new.ravel()[changed[ok]] = x_cf_ok
        dprop = None
        if self.mechanisms.on:  # the world may carry changes on (a causal graph, §4)
            intervened = np.zeros(X.shape, dtype=bool)
            intervened.ravel()[changed[ok]] = True
            carried = self.mechanisms.propagate(X, X_new, intervened)
            if carried is not None:
                dprop, X_new = carried - X_new, carried
        effort = np.bincount(rows_ok, weights=np.abs(x_cf_ok - x[ok]) * d[ok], minlength=n)
        implemented = stayers.advised.copy()
        implemented[rows[~ok]] = False  # a failed change
        # stayers' arrays are fresh (see advised_rows): new columns replace them
        data = stayers.data
        data["X"], data["implemented"] = X_new, implemented
        data["effort"] = data["effort"] + effort
        if known is None:
            data["score_now"] = self.scorer.score(X_new)
        else:  # rows where some changes failed and others held are the only new points
            cf_score, before = known
            score_now = np.where(implemented, cf_score, before)
            partial = np.bincount(rows_ok, minlength=n).astype(bool) & ~implemented
            if partial.any():
                score_now[partial] = self.scorer.score(X_new[partial])
            data["score_now"] = score_now
        return Outcome(rows, cols, ok, effort, implemented, X, X_new, dprop)

    # -- the record and the agents --------------------------------------------------------
    def row_of(self, cid: int) -> int:
        """Row of candidate ``cid`` in :attr:`population` (waiting candidates only)."""
        return self._handles.row_of(cid)

    @property
    def candidates(self) -> mesa.AgentSet:
        """The waiting candidates' Mesa agents (empty when built with ``agents=False``)."""
        return self.agents_by_type.get(Candidate, AgentSet([], random=self.random))

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

    def summary(self) -> dict[str, Any]:
        """Episode means over defined ticks (rr, rf, gini, mean_cost) and totals."""
        c = self.config
        head = {"scenario": c.name, "policy": self.policy_name, "seed": c.seed, "ticks": self.tick}
        return self.recorder.summary(head)


def _checked_advice(
    X: np.ndarray, rec: Recommendation | None, immutable: np.ndarray | None, name: str
) -> Advice:
    """Policy ``name``'s advice ``rec`` to the rejected, whose features are X (n, z): shapes
    checked, changes below CHANGE_TOL dropped, a change of nothing no advice (SPEC §2), the
    [0, 1] box and the ``immutable`` features (z,) bool (None: none) kept."""
    n, z = X.shape
    if n == 0:
        if rec is not None and np.asarray(rec.goal).size:
            raise RuntimeError(f"policy {name!r} advised candidates although none was rejected")
        return Advice(np.empty(0), X, X.copy(), np.zeros(0, bool), {}, True, (0, 0, 0))
    if not isinstance(rec, Recommendation):
        raise TypeError(f"respond() needs a Recommendation for {n} rejected, got {rec!r}")
    goal = np.asarray(rec.goal, dtype=float).reshape(-1)
    X_cf = np.asarray(rec.X_cf, dtype=float)
    if goal.shape != (n,) or X_cf.shape != (n, z):
        raise RuntimeError(
            f"policy {name!r} returned goal {goal.shape} and X_cf "
            f"{X_cf.shape}; expected ({n},) and ({n}, {z})"
        )
    advised = filled(n, True, np.bool_) if rec.advised is None else np.asarray(rec.advised, bool)
    residue = np.abs(X_cf - X) < CHANGE_TOL
    if residue.any():
        X_cf = np.where(residue, X, X_cf)
    # SPEC §2: a recommendation that changes nothing is no advice, whatever its goal
    no_change = advised & residue.all(axis=1)
    n_no_change = int(np.count_nonzero(no_change))
    if n_no_change:
        advised = advised & ~no_change
    all_advised = np.count_nonzero(advised) == n
    if not all_advised:
        X_cf = np.where(advised[:, None], X_cf, X)
        goal = np.where(advised, goal, np.nan)
    n_unreached, n_withheld = (
        0 if flags is None else int(np.count_nonzero(np.asarray(flags, dtype=bool) & ~advised))
        for flags in (rec.unreached, rec.withheld)
    )
    lo, hi = np.minimum.reduce(X_cf, axis=None), np.maximum.reduce(X_cf, axis=None)
    # NaN fails both comparisons, so this also catches non-finite advice
    if not (lo >= -BOUND_TOL and hi <= 1 + BOUND_TOL):
        raise RuntimeError(f"policy {name!r} returned counterfactuals outside [0, 1] (or NaN)")
    if immutable is not None and (X_cf[:, immutable] != X[:, immutable]).any():
        raise RuntimeError(f"policy {name!r} changed an immutable feature")
    if lo < 0 or hi > 1:
        X_cf = np.clip(X_cf, 0.0, 1.0)
    info = {key: np.asarray(v) for key, v in rec.info.items()}
    counts = (n_unreached, n_withheld, n_no_change)
    return Advice(goal, X, X_cf, advised, info, all_advised, counts)
