"""RecourseModel: the competitive top-k recourse world as a Mesa model.

One tick (durable-recourse-rl §3.1, App. B) in two public halves:
``decide()``: reapplications -> arrivals -> scores -> top-k -> the observation;
the policy's ``recommend``; ``respond(recommendation)``: validation -> dropout ->
implementation -> tick record. ``step()`` is the three in a row; the RL environment
calls the halves itself and planners fork the model through :mod:`abm.planning`.
Every stage is vectorised over the population arrays.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from pathlib import Path
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.agent import AgentSet

from abm import behaviour, metrics, metrics_ext
from abm.agents import Candidate, DecisionMaker, select_top_k
from abm.config import ScenarioConfig
from abm.extensions import VALID_TOL, Mechanisms
from abm.interfaces import (
    Feedback,
    HistoryWindow,
    PolicyContext,
    Recommendation,
    RecourseObs,
    RecoursePolicy,
)
from abm.planning import Simulator, Snapshot
from abm.population import Population, filled, join_columns
from abm.registry import make_policy
from abm.rng import Streams
from abm.scenarios import resolve_scenario
from abm.validation import require_int
from abm.world import build_world

# tolerance for a policy's counterfactual leaving the [0, 1] box (then clipped)
_BOUND_TOL = 1e-9
# advice "falls short of the threshold" when M(x_cf) < threshold - _GOAL_TOL
_GOAL_TOL = 1e-6
# a recommended change smaller than this (feature units) is round-off, not advice: solvers
# leave residues of about 1e-16 where a need is exactly met, and whether one appears
# depends on the CPU's kernels; each would be asked of the candidate and drawn for
_CHANGE_TOL = 1e-9
# from this many waiting rows, the pool is kept in parts between ticks and split by one
# gather per column (Population.gather) instead of a concatenation and two takes
_GATHER_FROM = 50_000
# from this many stayers, scores of rows ending at x_cf or at x are reused, not recomputed
_REUSE_FROM = 1024
# the Population columns of a HistoryWindow
_HISTORY_COLUMNS = ("ids", "X_obs", "last_tick", "n_apps", "goal", "X_cf")

TICK_COLUMNS = (
    "tick", "threshold", "n_applicants", "n_new", "n_reapplied", "n_accepted", "n_rejected",
    "n_dropped", "n_waiting", "n_succ", "n_succ_accepted", "n_rejected_window", "rr", "rf",
    "gini", "gini_cost", "mean_goal", "mean_cf_score", "mean_error", "n_unadvised", "n_unreached",
    "n_withheld", "n_no_change", "n_below_threshold", "mean_cost", "effort",
    "wasted_effort", "n_implemented", "mean_time_to_accept",
)  # fmt: skip
# the integer columns: the tick and every count
_COUNT_COLUMNS = tuple(c for c in TICK_COLUMNS if c == "tick" or c.startswith("n_"))


def extension_columns(config: ScenarioConfig) -> tuple[str, ...]:
    """The tick-table columns the scenario's world extensions add, after :data:`TICK_COLUMNS`
    (specs/world-extensions.md §7); none while every extension is off."""
    on = config.extensions
    cols: list[str] = []
    if "outcomes" in on:
        cols += ["n_revealed", "n_revealed_pos", "tp_rate", "mean_p_true_accepted",
                 "improvement_rate", "mean_true_gain", "impl_improvement_rate",
                 "gaming_rate"]  # fmt: skip
    if "retraining" in on:
        cols += list(_RETRAINING_COLUMNS)
    if "groups" in on:
        cols += ["dp_gap", "w_dist", "w_dist_n", "w_score", "decision_accuracy"]
        for name in ("rr", "rf", "n_applicants", "accept_rate", "mean_time_to_accept"):
            cols += [f"{name}_g{g}" for g in range(config.n_groups)]
    if "budget" in on:
        cols += ["budget_spent", "budget_left"]
    return tuple(cols)


_EXTENSION_COUNTS = ("model_version", "w_dist_n")
# retraining (§7.2, and the robust-recourse spec's §5 columns)
_RETRAINING_COLUMNS = ("model_version", "n_outstanding", "validity", "shift_l1", "shift_l2",
                       "shift_linf", "valid_retrained", "valid_threshold", "score_drop")  # fmt: skip


def resolve_policy(policy: RecoursePolicy | str) -> RecoursePolicy:
    """A policy object from an object or a registry name (see ``policies``)."""
    if isinstance(policy, str):
        return make_policy(policy)
    if not isinstance(policy, RecoursePolicy):
        raise TypeError(f"policy must be a registry name or a RecoursePolicy, got {policy!r}")
    return policy


def _configure(
    scenario: ScenarioConfig | str | Path, seed: int | None, overrides: dict
) -> ScenarioConfig:
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
        config = _configure(scenario, seed, overrides)
        self.allow_mismatch = allow_mismatch
        self.config = config
        self.streams = Streams(config.seed)
        super().__init__(rng=self.streams.mesa)
        self.world = build_world(config, estimator)
        self.policy_name = policy if isinstance(policy, str) else type(policy).__name__
        self.policy = resolve_policy(policy)
        self.use_agents = agents
        self.record_events = record_events
        self._recording = True
        self._set_feature_facts(config)
        # the extensions' state (specs/world-extensions.md); None while all are off
        self.mech = Mechanisms(config, self.world) if config.extensions else None
        self.decision_maker = DecisionMaker(self, config.k)
        # privileged: rollouts of this model (planning references only, see abm.planning)
        self.simulator = Simulator(self, type(self).from_snapshot)
        self.context = self._policy_context()
        self.policy.prepare(self.context)
        self._start_episode()
        self._handles: dict[int, Candidate] = {}
        self._rows: dict[int, int] = {}
        self._events: list[dict[str, np.ndarray]] = []
        self.last_row: dict[str, float] = {}
        self.last_tick: TickState | None = None
        self.tick_columns = TICK_COLUMNS + extension_columns(config)
        self.datacollector = TickCollector(
            model_reporters={c: _reporter(c) for c in self.tick_columns}
        )
        self.running = True

    def _set_feature_facts(self, config: ScenarioConfig) -> None:
        """True difficulties d (z,) and the immutable mask (z,)."""
        self.difficulty = np.asarray(config.difficulty, dtype=float)
        self.immutable = np.zeros(config.n_features, dtype=bool)
        self.immutable[list(config.immutable)] = True
        self._any_immutable = bool(self.immutable.any())

    @property
    def scorer(self):
        """The decision model in force (a retrained one once the world refits, §2)."""
        return self.world.decision_model if self.mech is None else self.mech.scorer

    @property
    def model_version(self) -> int:
        """How many times the decision model was refitted (0 without retraining)."""
        return 0 if self.mech is None else self.mech.version

    def _policy_context(self) -> PolicyContext:
        c, z = self.config, self.config.n_features
        return PolicyContext(
            decision_model=self.world.decision_model,
            lower=np.zeros(z),
            upper=np.ones(z),
            immutable=self.immutable,
            difficulty=self.difficulty,
            k=c.k,
            m=c.m,
            validity=c.validity,
            beta=c.beta,
            ticks=c.ticks,
            X_train=self.world.X_train,
            # the scenario lets trained policies check what they were trained for;
            # allow_mismatch lets them run anyway (recorded in their provenance)
            extra={
                "simulator": self.simulator,
                "scenario": c,
                "allow_mismatch": self.allow_mismatch,
            },
            y_train=self.world.y_train,
            group_train=self.world.group_train,
            n_groups=c.n_groups,
            causal_graph=self.world.ext.graph,
            budget=c.budget,
            budget_scope=c.budget_scope,
        )

    def _start_episode(self) -> None:
        """The model's own state before tick 0: nobody waiting, nothing decided."""
        self.tick = 0
        self.population = Population.empty(self.config.n_features)
        self._next_id = 0
        # rejected-and-dropped rows of the last T ticks: they stay in the window (eq. 3)
        self._dropped_window: deque[tuple[int, Population]] = deque()
        self._pending: _Decided | None = None  # set between decide() and respond()

    @property
    def population(self) -> Population:
        """The candidates waiting to reapply, one row each (:class:`Population`)."""
        parts = self._waiting
        if len(parts) > 1:  # a large pool left in parts by the last tick: joined once
            parts[:] = [Population.concat(parts, self.config.n_features)]
        return parts[0]

    @population.setter
    def population(self, pop: Population) -> None:
        self._waiting = [pop]

    # -- planning: snapshots and forks (see abm.planning) ------------------------------
    def snapshot(self) -> Snapshot:
        """The model's own state now (shares arrays: populations are never written in place)."""
        return Snapshot(
            config=self.config,
            world=self.world,
            tick=self.tick,
            next_id=self._next_id,
            population=self.population,
            dropped=tuple(self._dropped_window),
            pending=self._pending,
            mechanisms=None if self.mech is None else self.mech.fork(),
        )

    @classmethod
    def from_snapshot(cls, snap: Snapshot, streams: Any, policy: Any) -> RecourseModel:
        """A fork: a model at ``snap`` drawing from ``streams``, advised by ``policy``.

        Mesa's constructor is not run: the fork has no agents, no data collector and no
        Mesa registration, and records nothing; ``decide``/``respond``/``step`` work as
        in the model. ``policy`` is used as given (``prepare`` is not called).
        """
        fork = object.__new__(cls)
        fork.config, fork.world = snap.config, snap.world
        fork.streams, fork.policy = streams, policy
        fork.policy_name = f"fork of {type(policy).__name__}"
        fork.use_agents = fork.record_events = fork._recording = fork._bounded = False
        fork._set_feature_facts(snap.config)
        fork.mech = None if snap.mechanisms is None else snap.mechanisms.fork()
        fork.tick, fork._next_id, fork.population = snap.tick, snap.next_id, snap.population
        fork._dropped_window = deque(snap.dropped)
        # the fork's respond() writes its own figures into the decided tick: not into ours
        fork._pending = None if snap.pending is None else snap.pending.copy()
        fork.running = snap.tick < snap.config.ticks
        return fork

    def pending_observation(self) -> RecourseObs:
        """The observation returned by the pending ``decide()``."""
        return self._require_pending().obs

    def pending_success(self) -> tuple[int, int, int]:
        """(|I^succ|, |I^succ and accepted|, |I^rej window|) of the pending decision (eqs. 2-3)."""
        d = self._require_pending()
        return (*d.success_counts(), d.n_window)

    def _require_pending(self) -> _Decided:
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

    def decide(self) -> RecourseObs:
        """First half of a tick: reapplications, arrivals, scores and the top-k selection.

        Feedback on the reapplicants goes to ``policy.observe`` here, once the decisions
        are known. Returns what the decision-maker sees; :meth:`respond` must follow.
        """
        if self._pending is not None:
            raise RuntimeError(f"tick {self.tick} is already decided: call respond() first")
        d = self._decide(self.tick)
        d.obs = self._observation(d)
        self._pending = d
        return d.obs

    def respond(self, recommendation: Recommendation | None) -> None:
        """Second half of a tick: advice, dropout, implementation, the tick record.

        ``recommendation`` covers the rejected of the last :meth:`decide` (None, or an
        empty one, when nobody was rejected); it is validated before anything changes.
        """
        d = self._require_pending()
        advice = self._validate(d, recommendation)
        if self.mech is not None and self.mech.budgeted:
            cost = np.add.reduce(np.abs(advice.X_cf - advice.X), axis=1)
            d.ext["budget_spent"] = self.mech.charge(cost, advice.advised, self.policy_name)
            d.ext["budget_cost"] = np.where(advice.advised, cost, 0.0)
        self._pending = None
        self._respond(d, advice)

    def _decide(self, t: int) -> _Decided:
        """Reapplications, arrivals, scores and the top-k selection of tick ``t``."""
        c, mech = self.config, self.mech
        ext = None if mech is None else mech.start_tick(t, self.population, self.streams)
        reapplying = self._reapplications(t)
        returning, self.population = self._split_pool(reapplying)
        n_window = len(returning) + len(self.population) + self._dropped_in_window(t)
        if ext is not None and mech.groups:  # the RF window of each group (eq. 3)
            window = [returning.group, self.population.group]
            window += [p.group for _, p in self._dropped_window]
            ext["window_groups"] = np.bincount(np.concatenate(window), minlength=c.n_groups)
        feedback = self._feedback_before(t, returning, ext)
        entrants = self._arrivals(t)

        # hidden changes become visible now: what is seen (X_obs) is the true X
        applicants = Population.concat([returning, entrants], c.n_features, {"X_obs": "X"})
        scorer = self.scorer
        scores = scorer.score(applicants.X_obs)
        accepted, threshold = select_top_k(scores, c.k, self.streams.ties)
        if ext is not None:
            if mech.outcomes or mech.groups:  # h*(x) of every applicant, once a tick
                ext["p_app"] = mech.true_probability(applicants.X_obs)
            if mech.outcomes:
                ext["y"] = mech.draw_outcomes(t, applicants, accepted, ext["p_app"], self.streams)
            if mech.retraining and self.record_events:
                # the advice reapplicants carry, scored by the model that now decides
                adv = returning.advised
                cf_now = filled(len(returning), np.nan, np.float64)
                cf_now[adv] = scorer.score(returning.X_cf[adv])
                ext["cf_score_now"] = cf_now
        if feedback is not None:
            self.policy.observe(feedback(accepted[: len(returning)]))
        d = _Decided(t, threshold, applicants, scores, accepted, len(returning), n_window)
        d.ext = ext
        return d

    def _respond(self, d: _Decided, advice: _Advice) -> None:
        """Dropout, implementation, the waiting pool and the tick record of ``d``."""
        t, c, applicants, rej = d.t, self.config, d.applicants, d.rej
        dropped = self._dropout(applicants, rej, d.scores.take(rej), advice)
        issued = None
        if self.mech is not None and self.mech.retraining:
            # §2 and robust-recourse §5: under which model, threshold and score advice was given
            issued = self.mech.issued(advice.advised, self._cf_scores(advice)[0], d.threshold)
        stayers, leaving, order = self._advised_rows(applicants, rej, dropped, advice, t, issued)
        known = None
        if (
            len(stayers) >= _REUSE_FROM
            and self._recording
            and self.mech is None
            and self.scorer.is_linear
        ):
            # M(x_cf) is needed for the record anyway; a linear score is a function of the
            # row alone, so rows that end at x_cf (or where they were) need no new score
            stay = order[: len(stayers)]
            known = (self._cf_scores(advice)[0].take(stay), d.obs.scores.take(stay))
        outcome = self._implement(stayers, known)

        self._dropped_window.append((t, leaving))
        waiting = [*self._waiting, stayers]
        if sum(map(len, waiting)) < _GATHER_FROM:
            self.population = Population.concat(waiting, c.n_features)
        else:  # joined by the next tick's split (or a first look)
            self._waiting = [p for p in waiting if len(p)]
        if self._recording:
            if self.use_agents:  # before recording, so agent reporters read the new rows
                self._sync_handles(applicants.ids[d.accepted], leaving.ids, stayers.ids)
            self._record(d, advice, dropped, leaving, outcome)
        self.tick += 1
        if self.tick >= c.ticks:
            self.running = False

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

    # -- stages -------------------------------------------------------------------
    def _reapplications(self, t: int) -> np.ndarray:
        """(n_waiting,) bool: who reapplies now; everyone does at the latest T ticks on."""
        column = self._pool_column
        elapsed = t - column("last_tick")
        due = elapsed >= self.config.validity
        if np.count_nonzero(due) == due.shape[0]:  # always so at T = 1: no draw is needed
            return due
        gap = behaviour.score_gap(column("goal"), column("score_now"))
        p = behaviour.reapply_probability(gap, elapsed, self.config.validity, self.config.nu)
        return self.streams.reapply.random(due.shape[0]) < p

    def _pool_column(self, name: str) -> np.ndarray:
        """One column of the waiting pool, (n_waiting,), without joining its parts."""
        parts = self._waiting
        if len(parts) == 1:
            return parts[0].data[name]
        return np.concatenate([p.data[name] for p in parts])

    def _split_pool(self, reapplying: np.ndarray) -> tuple[Population, Population]:
        """(the reapplying rows, the others) of the waiting pool, each in pool order."""
        parts = self._waiting
        if len(parts) == 1:
            pool = parts[0]
            return pool.take(reapplying), pool.take(~reapplying)
        bounds = np.cumsum([0] + [len(p) for p in parts])
        masks = [reapplying[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        z = self.config.n_features
        return (
            Population.gather(parts, [m.nonzero()[0] for m in masks], z),
            Population.gather(parts, [(~m).nonzero()[0] for m in masks], z),
        )

    def _dropped_in_window(self, t: int) -> int:
        window = self._dropped_window
        while window and window[0][0] < t - self.config.validity:
            window.popleft()
        return sum(len(p) for _, p in window)

    def _arrivals(self, t: int) -> Population:
        n = self.config.n_initial if t == 0 else self.config.m
        if self.mech is None:
            X, group = self.world.generator.sample(n, self.streams.arrivals), None
        else:  # groups, SEM and proxies each draw from their own stream (§0)
            get = self.streams.get
            X, group = self.world.draw(n, self.streams.arrivals, get("groups"), get("noncausal"))
        ids = np.arange(self._next_id, self._next_id + n)
        self._next_id += n
        lo, hi = self.config.risk_aversion
        # a stream of its own: traits never shift the arrivals of other runs
        risk = (
            filled(n, lo, np.float64) if lo == hi else self.streams.get("traits").uniform(lo, hi, n)
        )
        extra = None
        if self.mech is not None and self.mech.retraining:
            extra = self.mech.issued(
                np.zeros(n, dtype=bool), filled(n, np.nan, np.float64), math.nan
            )
        return Population.entrants(ids, X, t, risk, group, extra)

    def _feedback_before(self, t: int, returning: Population, ext: dict | None = None):
        """What the policy may learn from the reapplicants, once decisions are known.

        Captured before their new features overwrite what was seen at the last
        application; returns a function of the reapplicants' decisions, or None. Outcomes
        revealed this tick (§1) come with it.
        """
        adv = returning.advised
        n_adv = np.count_nonzero(adv)
        if getattr(self.policy, "observe", None) is None:
            return None
        revealed = None if ext is None else ext.get("revealed")
        if revealed is not None and revealed.n:
            ids, before = returning.ids[adv], returning.X_obs[adv]
            cf, after = returning.X_cf[adv], returning.X[adv]
            return lambda accepted: Feedback(
                t, ids, before, cf, after, accepted[adv], revealed.ids, revealed.X,
                revealed.tick, revealed.y,
            )  # fmt: skip
        if n_adv == 0:
            return None
        if n_adv == adv.shape[0]:  # stored arrays are never written in place: no copies needed
            ids, before, cf, after = returning.ids, returning.X_obs, returning.X_cf, returning.X
            return lambda accepted: Feedback(t, ids, before, cf, after, accepted)
        ids, before = returning.ids[adv], returning.X_obs[adv]
        cf, after = returning.X_cf[adv], returning.X[adv]
        return lambda accepted: Feedback(t, ids, before, cf, after, accepted[adv])

    def _observation(self, d: _Decided) -> RecourseObs:
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
            history_fn=functools.partial(
                self._history, self.population, tuple(self._dropped_window)
            ),
            extra={"risk_aversion": applicants.risk_aversion.take(rej)},
            decision_model=self.scorer,
            model_version=self.model_version,
            group=None if self.mech is None or not self.mech.groups else applicants.group.take(rej),
            applicant_group=(
                None if self.mech is None or not self.mech.groups else applicants.group
            ),
            budget_left=math.inf if self.mech is None else self.mech.budget_left,
        )

    def _validate(self, d: _Decided, rec: Recommendation | None) -> _Advice:
        """The policy's advice to the rejected of ``d``, checked: shapes, [0, 1], immutables."""
        X = d.obs.X
        n, z = X.shape
        name = self.policy_name
        if n == 0:
            if rec is not None and np.asarray(rec.goal).size:
                raise RuntimeError(f"policy {name!r} advised candidates although none was rejected")
            return _Advice(np.empty(0), X, X.copy(), np.zeros(0, bool), {}, True, (0, 0, 0))
        if not isinstance(rec, Recommendation):
            raise TypeError(f"respond() needs a Recommendation for {n} rejected, got {rec!r}")
        goal = np.asarray(rec.goal, dtype=float).reshape(-1)
        X_cf = np.asarray(rec.X_cf, dtype=float)
        if goal.shape != (n,) or X_cf.shape != (n, z):
            raise RuntimeError(
                f"policy {name!r} returned goal {goal.shape} and X_cf {X_cf.shape}; "
                f"expected ({n},) and ({n}, {z})"
            )
        advised = (
            filled(n, True, np.bool_)
            if rec.advised is None
            else np.asarray(rec.advised, dtype=bool)
        )
        residue = np.abs(X_cf - X) < _CHANGE_TOL
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
        if not (lo >= -_BOUND_TOL and hi <= 1 + _BOUND_TOL):
            raise RuntimeError(f"policy {name!r} returned counterfactuals outside [0, 1] (or NaN)")
        if self._any_immutable and (X_cf[:, self.immutable] != X[:, self.immutable]).any():
            raise RuntimeError(f"policy {name!r} changed an immutable feature")
        if lo < 0 or hi > 1:
            X_cf = np.clip(X_cf, 0.0, 1.0)
        info = {key: np.asarray(v) for key, v in rec.info.items()}
        return _Advice(
            goal, X, X_cf, advised, info, all_advised, (n_unreached, n_withheld, n_no_change)
        )

    @staticmethod
    def _advised_rows(
        applicants, rej, dropped, advice, t, issued=None
    ) -> tuple[Population, Population, np.ndarray]:
        """(stayers, leaving, order): the rejected rows with this tick's advice and application.

        One take of every column for both parts (stayers first, then the dropped, each in
        applicant order), split into views; the advice columns come from ``advice``, and
        ``issued`` holds the retraining extension's columns (n,) over the rejected.
        ``order`` (n,) holds each row's position among the rejected.
        """
        stay, leave = (~dropped).nonzero()[0], dropped.nonzero()[0]
        order = np.concatenate([stay, leave])  # positions among the rejected
        rows = rej.take(order)
        X_obs = applicants.X_obs.take(rows, axis=0)
        replace = {
            "X_obs": X_obs,
            "X": X_obs,  # seen at this application; _implement gives stayers a new X
            "X_cf": advice.X_cf.take(order, axis=0),
            "goal": advice.goal.take(order),
            "advised": advice.advised.take(order),
            "n_apps": applicants.n_apps.take(rows) + 1,
            "last_tick": filled(rows.shape[0], t, np.int64),
        }
        if issued:
            replace.update({k: v.take(order) for k, v in issued.items()})
        return (*applicants.take(rows, replace).split(stay.shape[0]), order)

    def _dropout(self, applicants, rej, scores, advice) -> np.ndarray:
        """(n,) bool: rejected applicants who give up now (eq. 6)."""
        c = self.config
        gap = behaviour.score_gap(advice.goal, scores)
        p = behaviour.dropout_probability(gap, applicants.n_apps.take(rej), c.rho, c.chi, c.omega)
        return self.streams.dropout.random(rej.shape[0]) < p

    def _implement(self, stayers: Population, known: tuple | None = None) -> _Outcome:
        """Each recommended change succeeds with eq. 8's probability; updates ``stayers``.

        Only changed entries are drawn (one uniform each, row-major order): advice
        usually touches one or two of the z features. ``known`` = (M(x_cf), M(x)), each
        (n,) over the stayers, spares scoring the rows that end at x_cf or at x.
        """
        X, X_cf = stayers.X_obs, stayers.X_cf
        n, z = X.shape
        # flat positions of the changed entries (row-major, as np.nonzero orders them);
        # X and X_cf are contiguous (see _advised_rows), so ravel() makes no copy
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
        X_direct = None
        if self.mech is not None and self.mech.causal:  # §4: changes flow to descendants
            intervened = np.zeros(X.shape, dtype=bool)
            intervened.ravel()[changed[ok]] = True
            X_direct, X_new = X_new, self.mech.propagate(X, X_new, intervened)
        effort = np.bincount(rows_ok, weights=np.abs(x_cf_ok - x[ok]) * d[ok], minlength=n)
        implemented = stayers.advised.copy()
        implemented[rows[~ok]] = False  # a failed change
        # stayers' arrays are fresh (see _advised_rows): new columns replace them
        data = stayers.data
        data["X"] = X_new
        data["implemented"] = implemented
        data["effort"] = data["effort"] + effort
        if known is None:
            data["score_now"] = self.scorer.score(X_new)
        else:  # rows where some changes failed and others held are the only new points
            cf_score, before = known
            score_now = np.where(implemented, cf_score, before)
            partial = np.bincount(rows_ok, minlength=n).astype(bool)
            partial &= ~implemented
            if partial.any():
                score_now[partial] = self.scorer.score(X_new[partial])
            data["score_now"] = score_now
        out = _Outcome(rows, cols, ok, effort, implemented)
        out.dprop = None if X_direct is None else X_new - X_direct
        return out

    def _history(self, waiting: Population, dropped: tuple) -> HistoryWindow:
        """Rejected candidates still inside the validity window, as last seen.

        Called lazily with the pool as it stood at recommendation time (populations are
        never modified in place once stored, so holding references is a snapshot).
        """
        parts = [p.data for p in (waiting, *(p for _, p in dropped)) if len(p)]
        # only the columns a window holds are joined
        h = join_columns(parts or [Population.empty(self.config.n_features).data],
                         _HISTORY_COLUMNS)  # fmt: skip
        return HistoryWindow(
            ids=h["ids"],
            X=h["X_obs"],
            last_tick=h["last_tick"],
            n_applications=h["n_apps"],
            goal=h["goal"],
            X_cf=h["X_cf"],
        )

    # -- records ------------------------------------------------------------------
    def _record(self, d: _Decided, advice: _Advice, dropped, leaving, outcome) -> None:
        """The tick's row (:data:`TICK_COLUMNS`), dashboard arrays and candidate events."""
        r = self._responses(d, advice, dropped, outcome)
        self.last_row = self._tick_row(d, advice, r, leaving, outcome)
        if d.ext is not None:
            self._extension_row(d, advice, self.last_row)
        stats = getattr(self.policy, "tick_stats", None)
        if stats is not None:  # the policy's own figures (abm.interfaces.ReportsStats)
            self.last_row.update({f"policy_{k}": float(v) for k, v in stats().items()})
        self.last_tick = TickState(
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
        self.datacollector.collect(self)
        if self.record_events:
            self._record_events(d, advice, r, outcome)

    def _cf_scores(self, advice: _Advice) -> tuple[np.ndarray, np.ndarray]:
        """(M(x_cf) (n,) with NaN where unadvised, M(x_cf) of the advised (a,)) under the
        model in force; computed once a tick, for the record and the retraining columns."""
        if advice.scores is None:
            scorer = self.scorer
            if advice.all_advised:  # the advised are the rejected: one array serves both
                cf_scores = cf_adv = scorer.score(advice.X_cf)
            else:
                cf_scores = filled(advice.advised.shape[0], np.nan, np.float64)
                cf_adv = scorer.score(advice.X_cf[advice.advised])
                cf_scores[advice.advised] = cf_adv
            advice.scores = (cf_scores, cf_adv)
        return advice.scores

    def _responses(self, d: _Decided, advice: _Advice, dropped, outcome) -> _Responses:
        """Per-rejected figures of the advice and of what the candidates made of it."""
        n = d.rej.shape[0]
        cf_scores, cf_adv = self._cf_scores(advice)
        goal_adv = advice.goal if advice.all_advised else advice.goal[advice.advised]
        cost = metrics.recommendation_cost(advice.X, advice.X_cf, self.difficulty)
        implemented = np.zeros(n, dtype=bool)
        implemented[~dropped] = outcome.implemented
        return _Responses(cf_scores, cf_adv, goal_adv, cost, dropped, implemented)

    def _tick_row(self, d: _Decided, advice: _Advice, r: _Responses, leaving, outcome) -> dict:
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
            "n_waiting": sum(map(len, self._waiting)),
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
            "n_below_threshold": np.count_nonzero(r.cf_adv < d.threshold - _GOAL_TOL),
            "mean_cost": metrics.nanmean(cost_adv),
            "effort": float(np.add.reduce(outcome.effort)),
            "wasted_effort": float(np.add.reduce(leaving.effort)),
            "n_implemented": np.count_nonzero(outcome.implemented),
            "mean_time_to_accept": _mean_wait(d.t, applicants.entered[d.accepted]),
        }

    def _record_events(self, d: _Decided, advice: _Advice, r: _Responses, outcome) -> None:
        """One candidate-table row per applicant of the tick (see :meth:`candidate_table`)."""
        t, applicants, scores, accepted, n_ret, rej = (
            d.t, d.applicants, d.scores, d.accepted, d.n_ret, d.rej
        )  # fmt: skip
        cf_scores, cost, dropped, implemented = r.cf_scores, r.cost, r.dropped, r.implemented
        a, z = len(applicants), self.config.n_features

        def per_applicant(values, fill):
            # accepted applicants got no advice: their rows hold ``fill``
            values = np.asarray(values)
            out = np.full((a,) + values.shape[1:], fill, dtype=values.dtype)
            out[rej] = values
            return out

        # per-feature outcome of each rejected applicant (see candidate_table)
        ok = np.where(advice.X_cf != advice.X, np.int8(-2), np.int8(-1))
        stay = np.flatnonzero(~dropped)
        ok[stay[outcome.rows], outcome.cols] = outcome.ok
        dx = per_applicant((advice.X_cf - advice.X).astype(np.float32), 0.0)
        ok = per_applicant(ok, -1)
        chunk: dict[str, np.ndarray] = {
            "cid": applicants.ids.copy(),
            "tick": np.full(a, t, dtype=np.int64),
            "entered": applicants.entered.copy(),
            "application": applicants.n_apps + 1,
            "reapplied": np.arange(a) < n_ret,
            "score": scores,
            "accepted": accepted,
            "goal": per_applicant(advice.goal, np.nan),
            "cf_score": per_applicant(cf_scores, np.nan),
            "cost": per_applicant(cost, np.nan),
            "dropped": per_applicant(dropped, False),
            "implemented": per_applicant(implemented, False),
        }
        for i in range(z):
            chunk[f"dx_{i}"] = dx[:, i]
        for i in range(z):
            chunk[f"ok_{i}"] = ok[:, i]
        for key, values in advice.info.items():
            chunk[key] = per_applicant(np.asarray(values, dtype=float), np.nan)
        exit_ = np.full(a, "", dtype=object)
        exit_[accepted] = "accepted"
        exit_[rej[dropped]] = "dropped"
        chunk["exit"] = exit_
        if d.ext is not None:
            self._extension_events(d, advice, outcome, dropped, chunk, per_applicant)
        self._events.append(chunk)

    # -- records of the world extensions (specs/world-extensions.md §7) ---------------------
    def _counterfactual_true(self, advice: _Advice) -> np.ndarray:
        """x̃_cf (n, z): the advice with its changes propagated down the causal graph (§4)."""
        if not self.mech.causal:
            return advice.X_cf
        return self.mech.propagate(advice.X, advice.X_cf, advice.X_cf != advice.X)

    def _extension_row(self, d: _Decided, advice: _Advice, row: dict) -> None:
        """The tick's extension columns (:func:`extension_columns`), added to ``row``."""
        mech, ext, c = self.mech, d.ext, self.config
        applicants, accepted = d.applicants, d.accepted
        if mech.outcomes:
            adv = advice.advised
            p_app = ext["p_app"]
            s_cf = mech.true_score(self._counterfactual_true(advice)[adv])
            p_cf = mech.probability_of_score(s_cf)
            gain = p_cf - p_app.take(d.rej)[adv]
            row["n_revealed"] = ext["n_revealed"]
            row["n_revealed_pos"] = ext["n_revealed_pos"]
            row["tp_rate"] = ext["tp_rate"]
            row["mean_p_true_accepted"] = metrics.nanmean(p_app[accepted])
            n_adv = s_cf.shape[0]
            row["improvement_rate"] = metrics.ratio(
                np.count_nonzero(s_cf >= c.outcome_threshold), n_adv
            )
            row["mean_true_gain"] = float(np.add.reduce(gain) / n_adv) if n_adv else math.nan
            # improvement-bandits §5: did those who did everything asked truly qualify?
            ret = slice(0, d.n_ret)
            succ = applicants.advised[ret] & applicants.implemented[ret]
            good = p_app[ret][succ] >= 0.5
            acc = accepted[ret][succ]
            row["impl_improvement_rate"] = metrics.ratio(np.count_nonzero(good), good.shape[0])
            row["gaming_rate"] = metrics.ratio(np.count_nonzero(acc & ~good), np.count_nonzero(acc))
        if mech.retraining:
            for key in _RETRAINING_COLUMNS:
                row[key] = ext[key]
        if mech.groups:
            self._group_row(d, row)
        if mech.budgeted:
            row["budget_spent"] = ext.get("budget_spent", 0.0)
            row["budget_left"] = mech.budget_left

    def _group_row(self, d: _Decided, row: dict) -> None:
        """§7.3: the DP gap, W1 between groups in the pool, and per-group rates."""
        G, applicants, accepted = self.config.n_groups, d.applicants, d.accepted
        group = applicants.group
        row["dp_gap"] = metrics_ext.demographic_parity_gap(accepted, group, G)
        pool = self.population
        big = np.bincount(pool.group, minlength=G).max(initial=0)
        rng = self.streams.get("metrics") if big > metrics_ext.W_DIST_MAX_POINTS else None
        row["w_dist"], row["w_dist_n"] = metrics_ext.wasserstein_between_groups(
            pool.X, pool.group, G, rng
        )
        # long-term-fairness §4 (ours): W1 of the groups' scores among this tick's
        # applicants, and how often the decision agrees with h*(x) >= 1/2
        row["w_score"] = metrics_ext.score_distance_between_groups(d.scores, group, G)
        row["decision_accuracy"] = metrics.ratio(
            np.count_nonzero(accepted == (d.ext["p_app"] >= 0.5)), accepted.shape[0]
        )
        ret = slice(0, d.n_ret)
        succ = applicants.advised[ret] & applicants.implemented[ret]
        g_ret = group[ret]
        n_succ = np.bincount(g_ret[succ], minlength=G)
        n_succ_acc = np.bincount(g_ret[succ & accepted[ret]], minlength=G)
        window = d.ext["window_groups"]
        for g in range(G):
            row[f"rr_g{g}"] = metrics.recourse_reliability(int(n_succ_acc[g]), int(n_succ[g]))
        for g in range(G):
            row[f"rf_g{g}"] = metrics.recourse_feasibility(int(n_succ[g]), int(window[g]))
        row.update(metrics_ext.per_group_rates(accepted, group, G))
        wait = (d.t - applicants.entered[accepted]).astype(np.float64)
        row.update(metrics_ext.per_group_mean(wait, group[accepted], G, "mean_time_to_accept"))

    def _extension_events(self, d, advice, outcome, dropped, chunk, per_applicant) -> None:
        """The candidate table's extension columns (§7), added to ``chunk``."""
        mech, ext, c = self.mech, d.ext, self.config
        applicants = d.applicants
        a, z = len(applicants), c.n_features
        if mech.outcomes:
            chunk["p_true"] = ext["p_app"]
            chunk["y"] = ext["y"]
            X_cf = self._counterfactual_true(advice)
            p_cf = np.where(advice.advised, mech.true_probability(X_cf), np.nan)
            chunk["cf_p_true"] = per_applicant(p_cf, np.nan)
            improving = advice.advised & (mech.true_score(X_cf) >= c.outcome_threshold)
            chunk["improving"] = per_applicant(improving, False)
        if mech.retraining:
            chunk["model_version"] = filled(a, mech.version, np.int64)
            cf_now = np.full(a, np.nan)
            cf_now[: d.n_ret] = ext["cf_score_now"]
            chunk["cf_score_now"] = cf_now
            valid = np.full(a, -1, dtype=np.int8)
            seen = ~np.isnan(cf_now)
            goal = applicants.goal
            valid[seen] = cf_now[seen] >= goal[seen] - VALID_TOL
            chunk["valid_now"] = valid
        if mech.groups:
            chunk["group"] = applicants.group.copy()
        if mech.causal:
            dprop = np.zeros((d.rej.shape[0], z), dtype=np.float32)
            if outcome.dprop is not None:
                dprop[~dropped] = outcome.dprop
            dprop = per_applicant(dprop, 0.0)
            for i in range(z):
                chunk[f"dprop_{i}"] = dprop[:, i]
        if mech.budgeted:
            chunk["budget_cost"] = per_applicant(ext.get("budget_cost", np.zeros(0)), np.nan)

    def _sync_handles(self, accepted_ids, dropped_ids, waiting_ids) -> None:
        for cid in np.concatenate([accepted_ids, dropped_ids]).tolist():
            handle = self._handles.pop(cid, None)
            if handle is not None:
                handle.remove()
        for cid in waiting_ids.tolist():
            if cid not in self._handles:
                self._handles[cid] = Candidate(self, cid)
        self._rows = {cid: i for i, cid in enumerate(self.population.ids.tolist())}

    # -- public views ---------------------------------------------------------------
    def row_of(self, cid: int) -> int:
        """Row of candidate ``cid`` in :attr:`population` (waiting candidates only)."""
        try:
            return self._rows[cid]
        except KeyError:
            raise KeyError(f"candidate {cid} is not waiting in the pool") from None

    @property
    def candidates(self) -> mesa.AgentSet:
        """The waiting candidates' Mesa agents (empty when built with ``agents=False``)."""
        return self.agents_by_type.get(Candidate, AgentSet([], random=self.random))

    def tick_table(self) -> pd.DataFrame:
        """One row per tick with every metric of SPEC §2 (columns: :data:`TICK_COLUMNS`)."""
        df = self.datacollector.get_model_vars_dataframe()
        if df.empty:
            return pd.DataFrame(columns=list(self.tick_columns))
        df = df.reset_index(drop=True)
        for col in df.columns:
            if col in _COUNT_COLUMNS or (
                col not in TICK_COLUMNS and (col.startswith("n_") or col in _EXTENSION_COUNTS)
            ):
                df[col] = df[col].astype(np.int64)
        return df

    def candidate_table(self) -> pd.DataFrame:
        """One row per application: decision, recommendation, per-feature outcome, exit.

        ``dx_i`` is the recommended change of feature i; ``ok_i`` is 1 (done), 0 (failed),
        -1 (not asked) or -2 (asked, but the candidate dropped out); ``exit`` is
        ``accepted``, ``dropped`` or empty (still waiting after that application).
        """
        if not self._events:
            return pd.DataFrame()
        # policies may add info columns on some ticks only: fill the others with NaN
        cols = list(dict.fromkeys(c for e in self._events for c in e))
        return pd.DataFrame(
            {
                c: np.concatenate([e.get(c, np.full(len(e["cid"]), np.nan)) for e in self._events])
                for c in cols
            }
        )

    def summary(self) -> dict[str, Any]:
        """Episode means over defined ticks (rr, rf, gini, mean_cost) and totals."""
        out: dict[str, Any] = {
            "scenario": self.config.name,
            "policy": self.policy_name,
            "seed": self.config.seed,
            "ticks": self.tick,
        }
        ticks = self.tick_table()
        out.update(metrics.episode_summary(ticks))
        out.update(metrics.extension_summary(ticks))
        return out


def _mean_wait(t: int, entered: np.ndarray) -> float:
    """Mean of t - entered over the accepted (NaN if none), in integer arithmetic.

    Equal to the mean of the float differences: every partial sum of integers below 2^53
    is exact in floating point, so both sums are the same integer.
    """
    n = entered.shape[0]
    return (t * n - int(np.add.reduce(entered))) / n if n else float("nan")


class _Decided:
    """Tick ``t`` up to the selection: applicants (returning first, ``n_ret`` of them),
    their scores and decisions, the rows ``rej`` of the rejected, the threshold, the size
    of the RF window and (set by ``decide``) the observation handed out."""

    __slots__ = ("t", "threshold", "applicants", "scores", "accepted", "rej", "n_ret",
                 "n_window", "obs", "ext")  # fmt: skip

    def __init__(self, t, threshold, applicants, scores, accepted, n_ret, n_window) -> None:
        self.t, self.threshold, self.applicants = t, threshold, applicants
        self.scores, self.accepted, self.n_ret, self.n_window = scores, accepted, n_ret, n_window
        self.rej = (~accepted).nonzero()[0]
        self.obs: RecourseObs | None = None
        self.ext: dict[str, Any] | None = None  # the world extensions' figures (§7), if on

    def copy(self) -> _Decided:
        """A copy whose extension figures (a dict) are its own; arrays are shared."""
        other = object.__new__(_Decided)
        for name in self.__slots__:
            setattr(other, name, getattr(self, name))
        other.ext = None if self.ext is None else dict(self.ext)
        return other

    def success_counts(self) -> tuple[int, int]:
        """(|I^succ|, |I^succ and accepted|): reapplicants who did everything asked."""
        returned = slice(0, self.n_ret)
        succ = self.applicants.advised[returned] & self.applicants.implemented[returned]
        return int(np.count_nonzero(succ)), int(np.count_nonzero(succ & self.accepted[returned]))


class _Advice:
    """Validated advice of one tick: goal (n,), features seen X (n, z), X_cf (n, z), advised (n,)."""

    __slots__ = ("goal", "X", "X_cf", "advised", "info", "all_advised", "counts", "scores")

    def __init__(self, goal, X, X_cf, advised, info, all_advised, counts) -> None:
        self.goal, self.X, self.X_cf, self.advised, self.info = goal, X, X_cf, advised, info
        self.all_advised = all_advised
        self.counts = counts  # (n_unreached, n_withheld, n_no_change) among the unadvised
        self.scores = None  # (M(x_cf) (n,), of the advised (a,)): see RecourseModel._cf_scores


class _Responses:
    """Per-rejected figures of one tick: M(x_cf) (n,) with NaN where unadvised, the advised
    ones' M(x_cf) and goals (a,), cost (n,), dropped (n,) and implemented (n,)."""

    __slots__ = ("cf_scores", "cf_adv", "goal_adv", "cost", "dropped", "implemented")

    def __init__(self, cf_scores, cf_adv, goal_adv, cost, dropped, implemented) -> None:
        self.cf_scores, self.cf_adv, self.goal_adv = cf_scores, cf_adv, goal_adv
        self.cost, self.dropped, self.implemented = cost, dropped, implemented


class _Outcome:
    """Implementation draws of the stayers: changed entries (rows, cols), their success
    ``ok`` (e,), realised effort (s,) and whether each stayer did everything asked (s,)."""

    __slots__ = ("rows", "cols", "ok", "effort", "implemented", "dprop")

    def __init__(self, rows, cols, ok, effort, implemented) -> None:
        self.rows, self.cols, self.ok = rows, cols, ok
        self.effort, self.implemented = effort, implemented
        self.dprop = None  # (s, z) changes propagated down the causal graph (§4), if any


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
    def report(model: RecourseModel):
        return model.last_row[column]

    report.__name__ = f"report_{column}"
    return report


class TickCollector(mesa.DataCollector):
    """Mesa's DataCollector over the tick record.

    The record holds immutable scalars only, so the deep copy Mesa makes of every
    reported value (a tenth of a paper-scale tick) is skipped.
    """

    def collect(self, model: RecourseModel) -> None:
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
