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
from pathlib import Path
from typing import Any

import mesa
import numpy as np
from mesa.agent import AgentSet

from abm import stages
from abm.advice import BOUND_TOL, CHANGE_TOL, checked_advice, refuse_one_way, refuse_onehot
from abm.agents import Candidate, CandidateHandles, DecisionMaker
from abm.config import ScenarioConfig
from abm.interfaces import Recommendation, RecourseObs, RecoursePolicy
from abm.mechanisms import Mechanisms
from abm.planning import Simulator, Snapshot
from abm.pool import Pool, advised_rows
from abm.population import Population, filled
from abm.record import NullRecorder, RecordAccess, Recorder
from abm.registry import resolve_policy
from abm.rng import Streams
from abm.scenarios import configure
from abm.tick import Advice, Decision, reapplicant_feedback
from abm.validation import ConfigError, problem, require_int
from abm.world import build_world

__all__ = ["BOUND_TOL", "CHANGE_TOL", "RecourseModel", "resolve_policy"]
# from this many stayers, scores of rows ending at x_cf or at x are reused, not recomputed
_REUSE_FROM = 1024
# the applicants' columns a decision read only for its counts needs (Decision.success_counts;
# ids keep len() working)
_COUNTED = ("ids", "X_obs", "X", "advised", "implemented")


class RecourseModel(RecordAccess, mesa.Model):
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
        config = configure(scenario, seed, overrides)
        self.config, self.allow_mismatch = config, allow_mismatch
        self.streams = Streams(config.seed)
        super().__init__(rng=self.streams.mesa)
        self.world = build_world(config, estimator)
        self.policy_name = policy if isinstance(policy, str) else type(policy).__name__
        self.policy = resolve_policy(policy)
        self._set_feature_facts(config)
        # the extensions on; capacity shocks are drawn here, once for the episode
        self.mechanisms = Mechanisms.build(config, self.world, self.streams)
        self.decision_maker = DecisionMaker(self, config.k)
        # an episode ends after the scenario's ticks; planning forks may roll on
        self.horizon: float = config.ticks
        # privileged: rollouts of this model (planning references only, see abm.planning)
        self.simulator = Simulator(self, type(self).from_snapshot)
        # the scenario lets trained policies check what they were trained for;
        # allow_mismatch lets them run anyway (recorded in their provenance)
        extra = {"simulator": self.simulator, "scenario": config, "allow_mismatch": allow_mismatch}
        self.context = self.world.policy_context(
            config, self.immutable, self.difficulty, extra, self._direction
        )
        refuse_one_way(self.policy, self.context, self.policy_name)
        refuse_onehot(self.policy, self.context, self.policy_name)
        self.policy.prepare(self.context)
        self.tick, self._next_id = 0, 0
        self.pool = Pool(config.n_features, config.validity)
        self._pending: Decision | None = None  # set between decide() and respond()
        self._handles = CandidateHandles(self, agents)
        self.recorder = Recorder(
            config, self.mechanisms, self.difficulty, record_events, self.world.structure.onehot
        )
        self.datacollector = self.recorder.collector
        self.running = True

    def _set_feature_facts(self, config: ScenarioConfig) -> None:
        """True difficulties d (z,) and the immutable mask (z,)."""
        self.difficulty = np.asarray(config.difficulty, dtype=float)
        self.immutable = np.zeros(config.n_features, dtype=bool)
        self.immutable[list(config.immutable)] = True
        self._any_immutable = bool(self.immutable.any())
        # (z,) int8, +1 only up, -1 only down; None without one-way features
        direction = np.zeros(config.n_features, dtype=np.int8)
        direction[list(config.increase)] = 1
        direction[list(config.decrease)] = -1
        self._direction = direction if direction.any() else None

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
            mechanisms=self.mechanisms.fork(),
            features=(self.difficulty, self.immutable, self._any_immutable, self._direction),
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
        fork.recorder, fork.horizon = NullRecorder(), math.inf
        if snap.features is None:
            fork._set_feature_facts(c)
        else:  # the model's own arrays: nothing writes them
            fork.difficulty, fork.immutable, fork._any_immutable, fork._direction = snap.features
        # the real run's extensions, capacity shocks included (drawn once for the episode)
        fork.mechanisms = snap.mechanisms.fork()
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
        if self.tick >= self.horizon:
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
        left = self.horizon - self.tick
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
        self.decision_maker.k_t = mech.capacity_at(t)[0]
        states = mech.start_tick(t, pool.waiting, self.streams)
        returning = pool.split(stages.reapplications(pool, t, c, self.streams.reapply))
        n_window = len(returning) + pool.n_waiting + pool.dropped_in_window(t)
        feedback = None
        if getattr(self.policy, "observe", None) is not None:  # captured before X changes
            feedback = reapplicant_feedback(t, returning, mech.feedback(states))
        # hidden changes become visible now: what is seen (X_obs) is the true X. A fork's
        # last tick (observe False) is read only for its counts: the selection needs the
        # features and the counts the reapplicants' flags, so no other column is joined
        # unless an extension reads the applicants
        counted = not observe and not mech.on
        if counted:  # a planner's rollouts with one key draw the same entrants here
            key = ("arrivals", t, self._next_id)
            arrivals = self.streams.reuse(key, lambda: self._arrivals(t))
        else:
            arrivals = self._arrivals(t)
        self._next_id += len(arrivals)
        applicants = Population.concat(
            [returning, arrivals], c.n_features, {"X_obs": "X"}, _COUNTED if counted else None
        )
        scores, accepted, threshold = self.decision_maker.decide(
            applicants.X_obs, self.streams.ties
        )
        d = Decision(t, threshold, applicants, scores, accepted, len(returning), n_window)
        d.states = states
        mech.on_selected(d, pool, self.streams, self.recorder.record_events)
        if feedback is not None:
            self.policy.observe(feedback(accepted[: len(returning)]))
        d.obs = self._observation(d) if observe else None
        self._pending = d
        return d.obs

    def _arrivals(self, t: int) -> Population:
        """The entrants of tick ``t`` (N₀ at tick 0, m_t later), with ids from the next."""
        c, streams = self.config, self.streams
        n = c.n_initial if t == 0 else self.mechanisms.capacity_at(t)[1]
        X, group = self.world.entrants(n, streams)
        ids = np.arange(self._next_id, self._next_id + n)
        lo, hi = c.risk_aversion
        # a stream of its own: traits never shift the arrivals of other runs
        risk = filled(n, lo, np.float64) if lo == hi else streams.get("traits").uniform(lo, hi, n)
        extra = self.mechanisms.entrant_columns(n)
        return Population.entrants(ids, X, t, risk, group, extra)

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
            k_t=self.decision_maker.k_t,
            m_t=self.mechanisms.capacity_at(d.t)[1],
            **self.mechanisms.observation(d),
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
        mech = self.mechanisms
        mech.on_advice(d, advice, self.policy_name)
        self._pending = None
        t, applicants, rej = d.t, d.applicants, d.rej
        dropped = stages.dropout(d, advice, self.config, self.streams.dropout)
        # under which model, threshold and score the advice was given
        issued = mech.issued(advice.advised, lambda: advice.cf_scores(self.scorer)[0], d.threshold)
        stayers, leaving, order = advised_rows(
            applicants, rej, dropped, advice.goal, advice.X_cf, advice.advised, t, issued
        )
        known = None
        if (
            len(stayers) >= _REUSE_FROM
            and self.recorder.on
            and not mech.propagates
            and self.scorer.is_linear
        ):
            # M(x_cf) is needed for the record anyway; a linear score is a function of the
            # row alone, so rows that end at x_cf (or where they were) need no new score
            stay = order[: len(stayers)]
            known = (advice.cf_scores(self.scorer)[0].take(stay), d.obs.scores.take(stay))
        outcome = stages.implement(
            stayers,
            self.difficulty,
            self.config.beta,
            self.streams.implementation,
            mech,
            known,
            self.world.structure.onehot,
        )
        self.pool.add(t, stayers, leaving)
        if self.recorder.on:
            # the agents first, so that agent reporters read the new rows
            handles, ids = self._handles, applicants.ids
            handles.sync(ids[d.accepted], leaving.ids, stayers.ids, self.population.ids)
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
        return checked_advice(
            d.obs.X, rec, immutable, self.policy_name, self._direction, self.world.structure.onehot
        )

    # -- the record and the agents --------------------------------------------------------
    def row_of(self, cid: int) -> int:
        """Row of candidate ``cid`` in :attr:`population` (waiting candidates only)."""
        return self._handles.row_of(cid)

    @property
    def candidates(self) -> mesa.AgentSet:
        """The waiting candidates' Mesa agents (empty when built with ``agents=False``)."""
        return self.agents_by_type.get(Candidate, AgentSet([], random=self.random))

    def summary(self) -> dict[str, Any]:
        """Episode means over defined ticks (rr, rf, gini, mean_cost) and totals."""
        c = self.config
        head = {"scenario": c.name, "policy": self.policy_name, "seed": c.seed, "ticks": self.tick}
        return self.recorder.summary(head)
