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

from abm.advice import BOUND_TOL, CHANGE_TOL, checked_advice, refuse_one_way, refuse_onehot
from abm.agents import Candidate, CandidateHandles, DecisionMaker
from abm.batch import Batch, Decisions
from abm.config import ScenarioConfig
from abm.interfaces import Recommendation, RecourseObs, RecoursePolicy
from abm.mechanisms import Mechanisms
from abm.planning import Simulator, Snapshot
from abm.pool import EpisodePool, Pool
from abm.population import Population, filled
from abm.record import NullRecorder, RecordAccess, Recorder, TickCollector
from abm.registry import resolve_policy
from abm.rng import Streams
from abm.scenarios import configure
from abm.tick import Advice, Decision
from abm.validation import ConfigError, problem, require_int
from abm.world import build_world

#: every fork's record: a NullRecorder keeps nothing, so one serves them all
_NOTHING_RECORDED = NullRecorder()

__all__ = ["BOUND_TOL", "CHANGE_TOL", "RecourseModel", "resolve_policy"]


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
        streams: the episode's random streams made already, ``Streams(seed)`` of the
            episode's seed (:meth:`abm.rng.Streams.many` seeds many new episodes at once);
            None: made here.
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
        streams: Streams | None = None,
        **overrides: Any,
    ) -> None:
        flags = {"agents": agents, "record_events": record_events, "allow_mismatch": allow_mismatch}
        for name, flag in flags.items():  # "yes" or 0 would pass as truthy
            if not isinstance(flag, bool | np.bool_):
                raise ConfigError(problem(name, flag, "true or false"))
        agents, record_events, allow_mismatch = (bool(flag) for flag in flags.values())
        config = configure(scenario, seed, overrides)
        self.config, self.allow_mismatch = config, allow_mismatch
        if streams is None:
            streams = Streams(config.seed)
        elif not isinstance(streams, Streams) or streams.seed != config.seed:
            got = streams.seed if isinstance(streams, Streams) else type(streams).__name__
            raise ConfigError(
                f"streams: {got!r} are not the episode's streams (allowed: Streams({config.seed}))"
            )
        self.streams = streams
        super().__init__(rng=self.streams.mesa)
        self.world = build_world(config, estimator)
        self.policy_name = policy if isinstance(policy, str) else type(policy).__name__
        #: the registry spec the policy was built from (None: an object was given); equal
        #: specs build equal policies, which a batch may ask as one (abm.batch)
        self.policy_spec = policy if isinstance(policy, str) else None
        self.policy = resolve_policy(policy)
        self._set_feature_facts(config)
        # the extensions on; capacity shocks are drawn here, once for the episode
        self.mechanisms = Mechanisms.build(config, self.world, self.streams)
        self.decision_maker = DecisionMaker(self, config.k)
        # an episode ends after the scenario's ticks; planning forks may roll on
        self.horizon: float = config.ticks
        # privileged: rollouts of this model (planning references only, see abm.planning)
        self.simulator = Simulator(self, type(self).from_snapshot, type(self).forks)
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
        self._pending: Decision | None = None  # set between decide() and respond()
        # a run alone is a batch of one (abm.batch); Batch.of puts fresh models in a larger one
        Batch([self], Pool(config.n_features, config.validity))
        self._handles = CandidateHandles(self, agents)
        self.recorder = Recorder(
            config, self.mechanisms, self.difficulty, record_events, self.world.structure.onehot
        )
        self.running = True

    @property
    def datacollector(self) -> TickCollector:
        """Mesa's DataCollector of the tick table (one row a tick)."""
        return self.recorder.collector

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
    def pool(self) -> EpisodePool:
        """This episode's waiting pool and dropped-out window (a view of its batch's pool)."""
        return self._batch.pool.episode(self._episode)

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
            pending=None if self._pending is None else self._require_pending(),
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
        fork = cls._bare_fork(snap, streams, policy)
        c = snap.config
        Batch([fork], Pool(c.n_features, c.validity, snap.population, snap.dropped))
        return fork

    @classmethod
    def forks(cls, snaps: list[Snapshot], streams: list[Any], policy: Any) -> Batch:
        """``Batch.join([from_snapshot(s, st, policy)._batch ...])`` built in one pass
        (:meth:`abm.batch.Batch.of_snapshots`): fork b of ``snaps[b]`` with ``streams[b]``,
        all at one tick. The forks are the batch's ``models``."""
        forks: list[RecourseModel] = []
        made: dict[int, RecourseModel] = {}  # the first fork of each snapshot
        for s, st in zip(snaps, streams, strict=True):
            first = made.get(id(s))
            if first is None:
                made[id(s)] = first = cls._bare_fork(s, st, policy)
                forks.append(first)
            else:  # what _bare_fork would set again: the first fork's, but what it owns
                fork = object.__new__(cls)
                fork.__dict__.update(first.__dict__)
                fork._own(s, st)
                forks.append(fork)
        return Batch.of_snapshots(forks, snaps)

    @classmethod
    def _bare_fork(cls, snap: Snapshot, streams: Any, policy: Any) -> RecourseModel:
        """A fork of :meth:`from_snapshot` before it is put in a batch."""
        fork = object.__new__(cls)
        c = fork.config = snap.config
        fork.world, fork.streams, fork.policy = snap.world, streams, policy
        fork.policy_name = f"fork of {type(policy).__name__}"
        fork.policy_spec = None
        fork.recorder, fork.horizon = _NOTHING_RECORDED, math.inf
        if snap.features is None:
            fork._set_feature_facts(c)
        else:  # the model's own arrays: nothing writes them
            fork.difficulty, fork.immutable, fork._any_immutable, fork._direction = snap.features
        fork.tick, fork._next_id = snap.tick, snap.next_id
        fork.running = snap.tick < c.ticks
        fork._own(snap, streams)
        return fork

    def _own(self, snap: Snapshot, streams: Any) -> None:
        """What a fork of ``snap`` holds of its own: its streams, extensions, decision-maker
        and pending decision (the rest a fork of one snapshot shares with the others)."""
        self.streams = streams
        # the real run's extensions, capacity shocks included (drawn once for the episode);
        # the fork records nothing, so they may skip the figures only a record reads
        self.mechanisms = snap.mechanisms.fork(recorded=False)
        self.decision_maker = DecisionMaker.unregistered(self, snap.config.k)
        # the fork's respond() writes its own figures into the decided tick: not into ours
        self._pending = None if snap.pending is None else snap.pending.copy()

    def pending_observation(self) -> RecourseObs:
        """The observation returned by the pending ``decide()``."""
        d = self._require_pending()
        if d.obs is None:  # a batch's decision made without one (abm.batch)
            d.obs = self._observation(d)
        return d.obs

    def pending_success(self) -> tuple[int, int, int]:
        """(|I^succ|, |I^succ and accepted|, |I^rej window|) of the pending decision (eqs. 2-3)."""
        d = self._require_pending()
        return (*d.success_counts(), d.n_window)

    def _require_pending(self) -> Decision:
        d = self._pending
        if d is None:
            raise RuntimeError("no decision is pending: call decide() first")
        if type(d) is Decisions:  # its batch's decisions of the tick: this one's made now
            d = self._pending = d.of(self)
        return d

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
        self._alone().step()  # nobody rejected: the policy is not asked

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
        return self._alone().decide(observe)[0]

    def _alone(self) -> Batch:
        """The batch of this run alone (a model of a larger batch steps with its batch)."""
        batch = self._batch
        if batch.B != 1:
            raise RuntimeError(
                f"this model is episode {self._episode} of a batch of {batch.B}: step the batch"
            )
        return batch

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
            history_fn=self._batch.pool.history_fn(self._episode),
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
        self._alone().respond([recommendation])

    def advice_for(self, recommendation: Recommendation | None) -> Advice:
        """``recommendation`` to the pending decision's rejected, validated as
        :meth:`respond` would (it raises the same errors); :meth:`respond` takes the result.
        An Advice is never written in place, so forks of one decision may share it."""
        return self._validate(self._require_pending(), recommendation)

    def _validate(self, d: Decision, rec: Recommendation | None) -> Advice:
        """The policy's advice to the rejected of ``d``, checked: shapes, [0, 1], immutables."""
        immutable = self.immutable if self._any_immutable else None
        return checked_advice(
            d.rejected_X(),
            rec,
            immutable,
            self.policy_name,
            self._direction,
            self.world.structure.onehot,
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
