"""RecourseModel: the competitive top-k recourse world as a Mesa model.

One tick (durable-recourse-rl §3.1, App. B):
reapplications -> arrivals -> scores -> top-k -> recommendations -> dropout ->
implementation -> tick record. Every stage is vectorised over the population arrays.
"""

from __future__ import annotations

import functools
import zlib
from collections import deque
from pathlib import Path
from typing import Any

import mesa
import numpy as np
import pandas as pd
from mesa.agent import AgentSet

from abm import behaviour, metrics
from abm.agents import Candidate, DecisionMaker
from abm.config import ScenarioConfig
from abm.interfaces import (
    Feedback,
    HistoryWindow,
    PolicyContext,
    RecourseObs,
    RecoursePolicy,
)
from abm.population import Population
from abm.registry import make_policy
from abm.rng import Streams
from abm.scenarios import resolve_scenario
from abm.world import build_world

# tolerance for a policy's counterfactual leaving the [0, 1] box (then clipped)
_BOUND_TOL = 1e-9
# a recommendation "reaches" its goal when M(x_cf) >= g - _GOAL_TOL
_GOAL_TOL = 1e-6

TICK_COLUMNS = (
    "tick", "threshold", "n_applicants", "n_new", "n_reapplied", "n_accepted", "n_rejected",
    "n_dropped", "n_waiting", "n_succ", "n_succ_accepted", "n_rejected_window", "rr", "rf",
    "gini", "mean_goal", "mean_cf_score", "mean_error", "n_unadvised", "n_unreached", "mean_cost", "effort",
    "wasted_effort", "n_implemented", "mean_time_to_accept",
)  # fmt: skip


def resolve_policy(policy: RecoursePolicy | str) -> RecoursePolicy:
    """A policy object from an object or a registry name (see ``policies``)."""
    if isinstance(policy, str):
        return make_policy(policy)
    if not isinstance(policy, RecoursePolicy):
        raise TypeError(f"policy must be a registry name or a RecoursePolicy, got {policy!r}")
    return policy


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
        **overrides: Any,
    ) -> None:
        config = resolve_scenario(scenario)
        if seed is not None:
            overrides["seed"] = seed
        if overrides:
            config = config.replace(**overrides)
        self.config = config
        self.streams = Streams(config.seed)
        super().__init__(rng=self.streams.mesa)
        self.world = build_world(config, estimator)
        self.policy_name = policy if isinstance(policy, str) else type(policy).__name__
        self.policy = resolve_policy(policy)
        self.use_agents = agents
        self.record_events = record_events
        z = config.n_features
        self.difficulty = np.asarray(config.difficulty, dtype=float)
        self.immutable = np.zeros(z, dtype=bool)
        self.immutable[list(config.immutable)] = True
        self.decision_maker = DecisionMaker(self, self.world.decision_model, config.k)
        self.context = PolicyContext(
            decision_model=self.world.decision_model,
            lower=np.zeros(z),
            upper=np.ones(z),
            immutable=self.immutable,
            difficulty=self.difficulty,
            k=config.k,
            m=config.m,
            validity=config.validity,
            beta=config.beta,
            ticks=config.ticks,
            X_train=self.world.X_train,
            # privileged: rollouts of this model (planning references only; see _simulate)
            extra={"simulator": self._simulate},
        )
        self._decided: _Decided | None = None  # set while the policy recommends
        self._simulating = False
        self._rollout_streams: dict[tuple[int, int], _RolloutStreams] = {}  # this tick's
        self.policy.prepare(self.context)

        self.tick = 0
        self.population = Population.empty(z)
        self._next_id = 0
        # rejected-and-dropped rows of the last T ticks: they stay in the window (eq. 3)
        self._dropped_window: deque[tuple[int, Population]] = deque()
        self._handles: dict[int, Candidate] = {}
        self._rows: dict[int, int] = {}
        self._events: list[dict[str, np.ndarray]] = []
        self.last_row: dict[str, float] = {}
        self.last_tick: TickState | None = None
        self.datacollector = TickCollector(model_reporters={c: _reporter(c) for c in TICK_COLUMNS})
        self.running = True

    # -- the tick -----------------------------------------------------------------
    def step(self) -> None:
        """Advance one tick: who applies and who is accepted, then advice and response."""
        self._respond(self._decide(self.tick))

    def _decide(self, t: int) -> _Decided:
        """Reapplications, arrivals, scores and the top-k selection of tick ``t``."""
        c = self.config
        reapplying = self._reapplications(t)
        returning = self.population.take(reapplying)
        self.population = self.population.take(~reapplying)
        n_window = len(returning) + len(self.population) + self._dropped_in_window(t)
        feedback = self._feedback_before(t, returning)
        entrants = self._arrivals(t)

        applicants = Population.concat([returning, entrants], c.n_features)
        applicants.data["X_obs"] = applicants.X  # hidden changes become visible now
        scores = self.decision_maker.score(applicants.X_obs)
        accepted, threshold = self.decision_maker.select(scores, self.streams.ties)
        if feedback is not None:
            self.policy.observe(feedback(accepted[: len(returning)]))
        return _Decided(t, threshold, applicants, scores, accepted, len(returning), n_window)

    def _respond(self, d: _Decided, record: bool = True) -> None:
        """Advice to the rejected of ``d``, dropout, implementation, the tick record."""
        t, c, applicants = d.t, self.config, d.applicants
        rej = np.flatnonzero(~d.accepted)
        advice = self._recommend(d, rej)
        dropped = self._dropout(applicants, rej, d.scores[rej], advice)
        leaving = applicants.take(rej[dropped])
        stayers = applicants.take(rej[~dropped])
        for part, mask in ((leaving, dropped), (stayers, ~dropped)):
            part.X_cf[:] = advice.X_cf[mask]
            part.goal[:] = advice.goal[mask]
            part.advised[:] = advice.advised[mask]
            part.n_apps[:] += 1
            part.last_tick[:] = t
        outcome = self._implement(stayers)

        self._dropped_window.append((t, leaving))
        self.population = Population.concat([self.population, stayers], c.n_features)
        if record:
            if self.use_agents:  # before recording, so agent reporters read the new rows
                self._sync_handles(applicants.ids[d.accepted], leaving.ids, stayers.ids)
            self._record(d, rej, advice, dropped, leaving, outcome)
        self.tick += 1
        if self.tick >= c.ticks:
            self.running = False

    def run(self, ticks: int | None = None, progress: Any | None = None) -> RecourseModel:
        """Run ``ticks`` more ticks (default: up to the scenario's tick count)."""
        target = self.config.ticks if ticks is None else self.tick + ticks
        while self.tick < target:
            self.step()
            if progress is not None:
                progress()
        return self

    # -- stages -------------------------------------------------------------------
    def _reapplications(self, t: int) -> np.ndarray:
        """(n_waiting,) bool: who reapplies now; everyone does at the latest T ticks on."""
        pop = self.population
        elapsed = t - pop.last_tick
        due = elapsed >= self.config.validity
        if due.all():  # always so at T = 1: no draw is needed
            return due
        gap = behaviour.score_gap(pop.goal, pop.score_now)
        p = behaviour.reapply_probability(gap, elapsed, self.config.validity, self.config.nu)
        return self.streams.reapply.random(len(pop)) < p

    def _dropped_in_window(self, t: int) -> int:
        window = self._dropped_window
        while window and window[0][0] < t - self.config.validity:
            window.popleft()
        return sum(len(p) for _, p in window)

    def _arrivals(self, t: int) -> Population:
        n = self.config.n_initial if t == 0 else self.config.m
        X = self.world.generator.sample(n, self.streams.arrivals)
        ids = np.arange(self._next_id, self._next_id + n)
        self._next_id += n
        lo, hi = self.config.risk_aversion
        # a stream of its own: traits never shift the arrivals of other runs
        risk = np.full(n, lo) if lo == hi else self.streams.get("traits").uniform(lo, hi, n)
        return Population.entrants(ids, X, t, risk)

    def _feedback_before(self, t: int, returning: Population):
        """What the policy may learn from the reapplicants, once decisions are known.

        Captured before their new features overwrite what was seen at the last
        application; returns a function of the reapplicants' decisions, or None.
        """
        if getattr(self.policy, "observe", None) is None or not returning.advised.any():
            return None
        adv = returning.advised
        if adv.all():  # stored arrays are never written in place: no copies needed
            ids, before, cf, after = returning.ids, returning.X_obs, returning.X_cf, returning.X
            return lambda accepted: Feedback(t, ids, before, cf, after, accepted)
        ids, before = returning.ids[adv], returning.X_obs[adv]
        cf, after = returning.X_cf[adv], returning.X[adv]
        return lambda accepted: Feedback(t, ids, before, cf, after, accepted[adv])

    def _recommend(self, d: _Decided, rej: np.ndarray) -> _Advice:
        """Ask the policy for advice to every rejected applicant; validate what comes back."""
        t, threshold, applicants, scores = d.t, d.threshold, d.applicants, d.scores
        accepted = d.accepted
        n, z = rej.shape[0], self.config.n_features
        X = applicants.X_obs[rej]
        if n == 0:
            return _Advice(np.empty(0), X, X.copy(), np.zeros(0, bool), {}, True)
        obs = RecourseObs(
            tick=t,
            threshold=threshold,
            applicant_ids=applicants.ids,
            applicant_X=applicants.X_obs,
            applicant_scores=scores,
            accepted=accepted,
            ids=applicants.ids[rej],
            X=X,
            scores=scores[rej],
            n_applications=applicants.n_apps[rej] + 1,
            history_fn=functools.partial(
                self._history, self.population, tuple(self._dropped_window)
            ),
            extra={"risk_aversion": applicants.risk_aversion[rej]},
        )
        self._decided = d  # the point the simulator forks from (see _simulate)
        try:
            rec = self.policy.recommend(obs, self.streams.policy)
        finally:
            self._decided = None
        goal = np.asarray(rec.goal, dtype=float).reshape(-1)
        X_cf = np.asarray(rec.X_cf, dtype=float)
        name = self.policy_name
        if goal.shape != (n,) or X_cf.shape != (n, z):
            raise RuntimeError(
                f"policy {name!r} returned goal {goal.shape} and X_cf {X_cf.shape}; "
                f"expected ({n},) and ({n}, {z})"
            )
        all_advised = rec.advised is None or bool(rec.advised.all())
        advised = (
            np.ones(n, dtype=bool) if rec.advised is None else np.asarray(rec.advised, dtype=bool)
        )
        if not all_advised:
            X_cf = np.where(advised[:, None], X_cf, X)
            goal = np.where(advised, goal, np.nan)
        lo, hi = X_cf.min(), X_cf.max()
        # NaN fails both comparisons, so this also catches non-finite advice
        if not (lo >= -_BOUND_TOL and hi <= 1 + _BOUND_TOL):
            raise RuntimeError(f"policy {name!r} returned counterfactuals outside [0, 1] (or NaN)")
        if self.immutable.any() and (X_cf[:, self.immutable] != X[:, self.immutable]).any():
            raise RuntimeError(f"policy {name!r} changed an immutable feature")
        if lo < 0 or hi > 1:
            X_cf = np.clip(X_cf, 0.0, 1.0)
        info = {key: np.asarray(v) for key, v in rec.info.items()}
        return _Advice(goal, X, X_cf, advised, info, all_advised)

    def _dropout(self, applicants, rej, scores, advice) -> np.ndarray:
        """(n,) bool: rejected applicants who give up now (eq. 6)."""
        c = self.config
        gap = behaviour.score_gap(advice.goal, scores)
        p = behaviour.dropout_probability(gap, applicants.n_apps[rej], c.rho, c.chi, c.omega)
        return self.streams.dropout.random(rej.shape[0]) < p

    def _implement(self, stayers: Population) -> _Outcome:
        """Each recommended change succeeds with eq. 8's probability; updates ``stayers``.

        Only changed entries are drawn (one uniform each, row-major order): advice
        usually touches one or two of the z features.
        """
        X, X_cf = stayers.X_obs, stayers.X_cf
        rows, cols = np.nonzero(X_cf != X)
        x, x_cf = X[rows, cols], X_cf[rows, cols]
        d = self.difficulty[cols]
        p = behaviour.change_success_probability(x, x_cf, self.config.beta, d)
        ok = self.streams.implementation.random(rows.shape[0]) < p
        X_new = X.copy()
        X_new[rows[ok], cols[ok]] = x_cf[ok]
        n = len(stayers)
        effort = np.bincount(rows[ok], weights=np.abs(x_cf[ok] - x[ok]) * d[ok], minlength=n)
        failed = np.zeros(n, dtype=bool)
        failed[rows[~ok]] = True
        stayers.X[:] = X_new
        stayers.implemented[:] = stayers.advised & ~failed
        stayers.effort[:] += effort
        stayers.score_now[:] = self.decision_maker.score(X_new)
        return _Outcome(rows, cols, ok, effort, stayers.implemented)

    def _history(self, waiting: Population, dropped: tuple) -> HistoryWindow:
        """Rejected candidates still inside the validity window, as last seen.

        Called lazily with the pool as it stood at recommendation time (populations are
        never modified in place once stored, so holding references is a snapshot).
        """
        h = Population.concat([waiting] + [p for _, p in dropped], self.config.n_features)
        return HistoryWindow(
            ids=h.ids,
            X=h.X_obs,
            last_tick=h.last_tick,
            n_applications=h.n_apps,
            goal=h.goal,
            X_cf=h.X_cf,
        )

    # -- records ------------------------------------------------------------------
    def _record(self, d: _Decided, rej, advice, dropped, leaving, outcome) -> None:
        t, threshold, applicants, scores = d.t, d.threshold, d.applicants, d.scores
        accepted, n_ret, n_window = d.accepted, d.n_ret, d.n_window
        n_succ, n_succ_acc = d.success_counts()
        adv = advice.advised
        all_advised = advice.all_advised
        cf_scores = np.full(rej.shape[0], np.nan)
        cf_adv = self.decision_maker.score(advice.X_cf if all_advised else advice.X_cf[adv])
        cf_scores[adv] = cf_adv
        goal_adv = advice.goal if all_advised else advice.goal[adv]
        cost = metrics.recommendation_cost(advice.X, advice.X_cf, self.difficulty)
        implemented = np.zeros(rej.shape[0], dtype=bool)
        implemented[~dropped] = outcome.implemented
        has_goal = np.isfinite(goal_adv)
        err = metrics.recommendation_error(cf_adv[has_goal], goal_adv[has_goal])
        tta = t - applicants.entered[accepted]
        row = {
            "tick": t,
            "threshold": threshold,
            "n_applicants": len(applicants),
            "n_new": len(applicants) - n_ret,
            "n_reapplied": n_ret,
            "n_accepted": np.count_nonzero(accepted),
            "n_rejected": int(rej.shape[0]),
            "n_dropped": np.count_nonzero(dropped),
            "n_waiting": len(self.population),
            "n_succ": n_succ,
            "n_succ_accepted": n_succ_acc,
            "n_rejected_window": n_window,
            "rr": metrics.recourse_reliability(n_succ_acc, n_succ),
            "rf": metrics.recourse_feasibility(n_succ, n_window),
            "gini": metrics.gini(cf_adv),
            "mean_goal": metrics.nanmean(goal_adv),
            "mean_cf_score": metrics.nanmean(cf_adv),
            "mean_error": metrics.nanmean(err),
            "n_unadvised": int(rej.shape[0]) - np.count_nonzero(adv),
            "n_unreached": np.count_nonzero(cf_adv[has_goal] < goal_adv[has_goal] - _GOAL_TOL),
            "mean_cost": metrics.nanmean(cost[adv]),
            "effort": float(np.add.reduce(outcome.effort)),
            "wasted_effort": float(np.add.reduce(leaving.effort)),
            "n_implemented": np.count_nonzero(implemented),
            "mean_time_to_accept": metrics.nanmean(tta),
        }
        self.last_row = row
        self.last_tick = TickState(
            tick=t,
            threshold=threshold,
            ids=applicants.ids,
            scores=scores,
            accepted=accepted,
            n_reapplied=n_ret,
            rejected_ids=applicants.ids[rej],
            goal=advice.goal,
            cf_scores=cf_scores,
            dropped=dropped,
            implemented=implemented,
        )
        self.datacollector.collect(self)
        if self.record_events:
            self._record_events(t, applicants, scores, accepted, n_ret, rej, advice, cf_scores,
                                cost, dropped, implemented, outcome)  # fmt: skip

    def _record_events(self, t, applicants, scores, accepted, n_ret, rej, advice, cf_scores,
                       cost, dropped, implemented, outcome) -> None:  # fmt: skip
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
        self._events.append(chunk)

    def _sync_handles(self, accepted_ids, dropped_ids, waiting_ids) -> None:
        for cid in np.concatenate([accepted_ids, dropped_ids]).tolist():
            handle = self._handles.pop(cid, None)
            if handle is not None:
                handle.remove()
        for cid in waiting_ids.tolist():
            if cid not in self._handles:
                self._handles[cid] = Candidate(self, cid)
        self._rows = {cid: i for i, cid in enumerate(self.population.ids.tolist())}

    # -- simulation (privileged planning) ----------------------------------------------
    def _simulate(self, ticks: int, key: int = 0) -> list[dict[str, float]]:
        """Roll a detached copy of this model ``ticks`` ticks ahead from the advice stage.

        Offered to policies as ``PolicyContext.extra["simulator"]`` (see
        :class:`abm.interfaces.Simulator`); callable only while the policy is recommending
        at tick t. The copy finishes tick t with the same policy object (its ``observe``
        is never called), then runs ticks t+1, ..., t+ticks, the last one up to its
        selection. Its random streams derive from (seed, t, key), never from this model's
        streams, so the real run is unchanged and equal keys give equal draws (common
        random numbers across the plans a caller compares). Populations are never written
        in place once stored, so the copy shares their arrays: forking costs no copies.

        Returns one dict per tick t+1, ..., t+ticks: ``tick``, ``n_succ``,
        ``n_succ_accepted``, ``n_rejected_window``, ``rr`` and ``rf`` (NaN when undefined).
        """
        d = self._decided
        if d is None:
            raise RuntimeError("the simulator can only be called while the policy recommends")
        if self._simulating:
            raise RuntimeError("simulations cannot be nested")
        if not (isinstance(ticks, int | np.integer) and ticks >= 1):
            raise ValueError(f"ticks must be an integer >= 1, got {ticks!r}")
        self._simulating = True
        try:
            fork = self._fork(d.t, int(key))
            fork._respond(d, record=False)
            rows = []
            for i in range(ticks):
                nxt = fork._decide(fork.tick)
                n_succ, n_acc = nxt.success_counts()
                rows.append({
                    "tick": nxt.t,
                    "n_succ": n_succ,
                    "n_succ_accepted": n_acc,
                    "n_rejected_window": nxt.n_window,
                    "rr": metrics.recourse_reliability(n_acc, n_succ),
                    "rf": metrics.recourse_feasibility(n_succ, nxt.n_window),
                })  # fmt: skip
                if i + 1 < ticks:
                    fork._respond(nxt, record=False)
            return rows
        finally:
            self._simulating = False

    def _fork(self, t: int, key: int) -> RecourseModel:
        """A detached copy for :meth:`_simulate`: no agents, records or feedback, own streams."""
        fork = object.__new__(type(self))
        state = dict(self.__dict__)
        for name in ("step", "_user_step"):  # Mesa's step wrapper, bound to this model
            state.pop(name, None)
        fork.__dict__.update(state)
        cache = self._rollout_streams
        streams = cache.get((t, key))
        if streams is None:
            if any(tk[0] != t for tk in cache):
                cache.clear()  # a new tick: earlier rollouts' streams are never used again
            streams = cache[t, key] = _RolloutStreams(self.config.seed, t, key)
        else:
            streams.rewind()  # seeding costs ~30 us a stream; rewinding ~2
        fork.streams = streams
        fork.policy = _WithoutFeedback(self.policy)
        fork.use_agents = False
        fork.record_events = False
        fork._dropped_window = deque(self._dropped_window)
        fork._handles, fork._rows, fork._events = {}, {}, []
        fork._decided, fork._simulating = None, True
        return fork

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
            return pd.DataFrame(columns=list(TICK_COLUMNS))
        df = df.reset_index(drop=True)
        for col in ("tick", "n_applicants", "n_new", "n_reapplied", "n_accepted", "n_rejected",
                    "n_dropped", "n_waiting", "n_succ", "n_succ_accepted", "n_rejected_window",
                    "n_unadvised", "n_unreached", "n_implemented"):  # fmt: skip
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
        out.update(metrics.episode_summary(self.tick_table()))
        return out


class _Decided:
    """Tick ``t`` up to the selection: applicants (returning first, ``n_ret`` of them),
    their scores and decisions, the threshold, and the size of the RF window."""

    __slots__ = ("t", "threshold", "applicants", "scores", "accepted", "n_ret", "n_window")

    def __init__(self, t, threshold, applicants, scores, accepted, n_ret, n_window) -> None:
        self.t, self.threshold, self.applicants = t, threshold, applicants
        self.scores, self.accepted, self.n_ret, self.n_window = scores, accepted, n_ret, n_window

    def success_counts(self) -> tuple[int, int]:
        """(|I^succ|, |I^succ and accepted|): reapplicants who did everything asked."""
        returned = slice(0, self.n_ret)
        succ = self.applicants.advised[returned] & self.applicants.implemented[returned]
        return int(np.count_nonzero(succ)), int(np.count_nonzero(succ & self.accepted[returned]))


class _RolloutStreams:
    """Random streams of a simulation, created on first use.

    Stream ``name`` of the rollout with ``key`` forked at tick ``t`` is
    ``SeedSequence(seed, spawn_key=(crc32("simulator"), t, key, crc32(name)))``: disjoint
    from the episode's own streams (whose spawn keys have one element) and reproducible.
    """

    def __init__(self, seed: int, t: int, key: int) -> None:
        self.seed = seed
        self._key = (zlib.crc32(b"simulator"), t, key)
        self._gens: dict[str, np.random.Generator] = {}
        self._start: dict[str, dict] = {}

    def get(self, name: str) -> np.random.Generator:
        gen = self._gens.get(name)
        if gen is None:
            key = self._key + (zlib.crc32(name.encode()),)
            seq = np.random.SeedSequence(self.seed, spawn_key=key)
            gen = self._gens[name] = np.random.Generator(np.random.PCG64(seq))
            self._start[name] = gen.bit_generator.state
        return gen

    def rewind(self) -> None:
        """Every stream back to its first draw (the next rollout with this key)."""
        for name, gen in self._gens.items():
            gen.bit_generator.state = self._start[name]

    def __getattr__(self, name: str) -> np.random.Generator:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)


class _WithoutFeedback:
    """A policy seen by a simulation: it recommends, but learns nothing from the rollout."""

    def __init__(self, policy: RecoursePolicy) -> None:
        self.recommend = policy.recommend
        self.observe = None  # the model then builds no feedback


class _Advice:
    """Validated advice of one tick: goal (n,), features seen X (n, z), X_cf (n, z), advised (n,)."""

    __slots__ = ("goal", "X", "X_cf", "advised", "info", "all_advised")

    def __init__(self, goal, X, X_cf, advised, info, all_advised) -> None:
        self.goal, self.X, self.X_cf, self.advised, self.info = goal, X, X_cf, advised, info
        self.all_advised = all_advised


class _Outcome:
    """Implementation draws of the stayers: changed entries (rows, cols), their success
    ``ok`` (e,), realised effort (s,) and whether each stayer did everything asked (s,)."""

    __slots__ = ("rows", "cols", "ok", "effort", "implemented")

    def __init__(self, rows, cols, ok, effort, implemented) -> None:
        self.rows, self.cols, self.ok = rows, cols, ok
        self.effort, self.implemented = effort, implemented


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
        for var in self.model_reporters:
            self.model_vars[var].append(row[var])
        if self.agent_reporters or self.agenttype_reporters:
            # Mesa collects agent data; hide the model reporters already handled above
            reporters, self.model_reporters = self.model_reporters, {}
            try:
                super().collect(model)
            finally:
                self.model_reporters = reporters
