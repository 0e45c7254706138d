"""Many episodes of one scenario in lockstep: the one engine every run goes through.

Layout (docs/architecture.md, "One engine for a batch of episodes"): the rows of B
episodes sit in flat column arrays, episode b's rows together and in the order its run
alone keeps them, ``counts`` (B,) giving how many each has. Row-wise work runs once over
all rows; each draw comes from its episode's own stream, over that episode's rows in their
own order, so every episode of a batch is bit for bit the run made alone. A run alone
(:class:`abm.model.RecourseModel`) is a batch of one; each model of a batch keeps its
own state (streams, world, extensions, policy, record, Mesa agents) and is the view of
its episode.

Shapes: B episodes, a applicants, n rejected, s stayers, z features (all episodes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from abm import stages
from abm.pool import Pool, advised_rows
from abm.population import Population
from abm.tick import Advice, Decision, Outcome, reapplicant_feedback
from abm.validation import ConfigError, problem

# from this many stayers, scores of rows ending at x_cf or at x are reused, not recomputed
REUSE_FROM = 1024
# the applicants' columns a decision read only for its counts needs (Decision.success_counts;
# ids keep len() working)
_COUNTED = ("ids", "X_obs", "X", "advised", "implemented")


class Episodes:
    """What a stage needs of each episode of a batch: its streams, its decision model in
    force and its extensions (``models``, one per episode, in batch order)."""

    __slots__ = ("models", "B")

    def __init__(self, models: list[Any]) -> None:
        self.models, self.B = models, len(models)

    def uniform(self, stream: str, counts: np.ndarray, skip: np.ndarray | None = None):
        """(counts.sum(),) uniforms: episode b's ``counts[b]`` from its stream ``stream``,
        episode after episode (none where ``skip[b]``; those rows are left at 1)."""
        if self.B == 1:
            return getattr(self.models[0].streams, stream).random(int(counts[0]))
        parts = []
        for b, m in enumerate(self.models):
            n = int(counts[b])
            if skip is not None and skip[b]:
                parts.append(np.ones(n))
            else:
                parts.append(getattr(m.streams, stream).random(n))
        return np.concatenate(parts)

    def score(self, X: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """M(x) (n,) of flat rows X (n, z), episode b's ``counts[b]`` rows under its model
        in force."""
        if self.B == 1:
            return self.models[0].scorer.score(X)
        return self.score_of(X, np.repeat(np.arange(self.B), counts))

    def score_of(self, X: np.ndarray, episode: np.ndarray) -> np.ndarray:
        """M(x) (n,) of rows X (n, z) of any episodes, ``episode`` (n,) naming each one's."""
        scorers = [m.scorer for m in self.models]
        first = scorers[0]
        if self.B == 1 or all(s is first for s in scorers):
            return first.score(X)
        if all(s.is_linear for s in scorers):
            # w . x + b row by row, as abm.summation.linear_logit adds each row alone: the
            # products and each row's sum are those of the episode's own call
            W = np.stack([s.weights for s in scorers])
            b = np.array([s.intercept for s in scorers])
            logit = np.add.reduce(X * W.take(episode, axis=0), axis=1)
            logit += b.take(episode)
            return expit(logit)
        # any other model (an MLP, a model from a file) scores one episode's rows at a time
        out = np.empty(X.shape[0])
        for e in np.unique(episode).tolist():
            rows = (episode == e).nonzero()[0]
            out[rows] = scorers[e].score(X.take(rows, axis=0))
        return out

    @property
    def propagates(self) -> bool:
        """Whether an extension of some episode carries implemented changes on."""
        return any(m.mechanisms.propagates for m in self.models)

    def propagate(self, X_old, X_new, intervened, counts) -> np.ndarray | None:
        """X_new (s, z) as each episode's world carries its changes on, or None."""
        if self.B == 1:
            return self.models[0].mechanisms.propagate(X_old, X_new, intervened)
        if not self.propagates:
            return None
        mask = intervened()
        out, lo = X_new.copy(), 0
        for b, m in enumerate(self.models):
            hi = lo + int(counts[b])
            got = m.mechanisms.propagate(X_old[lo:hi], X_new[lo:hi], mask[lo:hi])
            if got is not None:
                out[lo:hi] = got
            lo = hi
        return out


class Batch:
    """B episodes of one scenario advanced tick by tick together.

    ``models`` hold each episode's own state (built by :class:`abm.model.RecourseModel`,
    all at the same tick with nothing pending); the batch holds their waiting pools as one
    flat :class:`abm.pool.Pool` and runs each stage once over all their rows.
    """

    def __init__(self, models: list[Any], pool: Pool | None = None) -> None:
        if not models:
            raise ValueError("a batch needs at least one episode")
        first = models[0]
        for m in models[1:]:
            if m.tick != first.tick:
                raise ValueError(
                    f"a batch holds episodes at one tick: tick {m.tick} beside {first.tick}"
                )
            _check_shared(first.config, m.config)
        #: every episode, and those still running (an episode past its last tick leaves)
        self.all, self.models, self.B = list(models), list(models), len(models)
        self.episodes = Episodes(self.models)
        c = first.config
        if pool is None:
            pool = Pool(c.n_features, c.validity, counts=np.zeros(self.B, dtype=np.int64))
        self.pool = pool
        self._flat: tuple | None = None  # the decided tick's flat arrays, for respond()
        for b, m in enumerate(models):
            m._batch, m._episode = self, b

    @classmethod
    def of(cls, models: list[Any]) -> Batch:
        """Fresh models (tick 0, nothing waiting) advanced together from now on."""
        for m in models:
            if m.tick != 0 or m.pool.n_waiting or m._batch.B != 1:
                raise ValueError("only fresh models (tick 0, alone) can be put in a batch")
        return cls(list(models))

    # -- the tick -----------------------------------------------------------------------
    def step(self) -> None:
        """One tick of every running episode: decide, ask each episode's policy, respond.

        An episode past its last tick leaves the batch first (it keeps its own pool); when
        none is left, a :class:`RuntimeError` says so."""
        if any(m.tick >= m.horizon for m in self.models):
            self._release()
        models = self.models
        if not models:
            raise RuntimeError("every episode of this batch is over")
        obs = self.decide() if models[0]._pending is None else [m._pending.obs for m in models]
        recs = [
            m.policy.recommend(o, m.streams.policy) if o.n_rejected else None
            for m, o in zip(models, obs, strict=True)
        ]
        self.respond(recs)

    def run(self, ticks: int | None = None, progress: Any | None = None) -> Batch:
        """Run ``ticks`` more ticks (default: every episode to its scenario's last tick);
        ``progress()`` is called after each."""
        start = self.models[0].tick if self.models else 0
        stop = max(m.horizon for m in self.models) if ticks is None else start + int(ticks)
        while any(m.tick < min(stop, m.horizon) for m in self.models):
            self.step()
            if progress is not None:
                progress()
        return self

    def _release(self) -> None:
        """Episodes past their last tick leave: each gets a pool of its own (views of its
        rows), and the batch keeps the others' rows."""
        pool, models = self.pool, self.models
        done = np.array([m.tick >= m.horizon for m in models])
        for b in np.flatnonzero(done).tolist():
            view = pool.episode(b)
            own = Pool(pool.n_features, pool.validity, view.waiting, view.dropped)
            Batch([models[b]], own)
        keep = ~done
        rows = np.repeat(keep, pool.counts)
        dropped = [(t, part.take(np.repeat(keep, per)), per[keep]) for t, part, per in pool.dropped]
        self.pool = Pool(
            pool.n_features, pool.validity, pool.waiting.take(rows), dropped, pool.counts[keep]
        )
        self.models = [m for m, k in zip(models, keep.tolist(), strict=True) if k]
        self.B = len(self.models)
        self.episodes = Episodes(self.models)
        for b, m in enumerate(self.models):
            m._batch, m._episode = self, b

    def decide(self, observe: bool = True) -> list[Any]:
        """First half of the tick of every episode (see :meth:`RecourseModel.decide`):
        reapplications, arrivals, scores and the top-k selection; one observation each."""
        models, pool, ep, B = self.models, self.pool, self.episodes, self.B
        for m in models:
            if m._pending is not None:
                raise RuntimeError(f"tick {m.tick} is already decided: call respond() first")
        m0 = models[0]
        t, c = m0.tick, m0.config
        states = []
        for b, m in enumerate(models):
            mech = m.mechanisms
            m.decision_maker.k_t = mech.capacity_at(t)[0]
            states.append(mech.start_tick(t, pool.episode(b).waiting, m.streams) if mech.on else ())
        returning, back = pool.split(stages.reapplications(pool, t, c, ep))
        n_window = back + pool.counts + pool.dropped_in_window(t)
        returned = [returning] if B == 1 else _parts(returning, back)
        feedback = [None] * B
        for b, m in enumerate(models):
            if getattr(m.policy, "observe", None) is not None:  # captured before X changes
                fb = m.mechanisms.feedback(states[b])
                feedback[b] = reapplicant_feedback(t, returned[b], fb)
        # hidden changes become visible now: what is seen (X_obs) is the true X. A fork's
        # last tick (observe False) is read only for its counts: the selection needs the
        # features and the counts the reapplicants' flags, so no other column is joined
        # unless an extension reads the applicants
        counted = not observe and not any(m.mechanisms.on for m in models)
        parts, sizes = [], np.empty(B, dtype=np.int64)
        for b, m in enumerate(models):
            if counted:  # a planner's rollouts with one key draw the same entrants here
                key = ("arrivals", t, m._next_id)
                arrivals = m.streams.reuse(key, lambda m=m: m._arrivals(t))
            else:
                arrivals = m._arrivals(t)
            m._next_id += len(arrivals)
            parts += [returned[b], arrivals]
            sizes[b] = back[b] + len(arrivals)
        applicants = Population.concat(
            parts, c.n_features, {"X_obs": "X"}, _COUNTED if counted else None
        )
        scores = ep.score(applicants.X_obs, sizes)
        accepted = np.empty(scores.shape[0], dtype=bool)
        out, lo = [], 0
        for b, m in enumerate(models):
            hi = lo + int(sizes[b])
            mine = applicants if B == 1 else _slice(applicants, lo, hi)
            s = scores[lo:hi]
            accepted[lo:hi], threshold = m.decision_maker.select(s, m.streams.ties)
            d = Decision(t, threshold, mine, s, accepted[lo:hi], int(back[b]), int(n_window[b]))
            d.states = states[b]
            m.mechanisms.on_selected(d, pool.episode(b), m.streams, m.recorder.record_events)
            if feedback[b] is not None:
                m.policy.observe(feedback[b](d.accepted[: d.n_ret]))
            d.obs = m._observation(d) if observe else None
            m._pending = d
            out.append(d.obs)
            lo = hi
        self._flat = (applicants, sizes, scores, accepted)
        return out

    def respond(self, recommendations: list[Any]) -> None:
        """Second half of the tick of every episode (see :meth:`RecourseModel.respond`):
        advice, dropout, implementation, the record; ``recommendations`` one per episode."""
        models, ep, B = self.models, self.episodes, self.B
        ds = [m._require_pending() for m in models]
        advices = [
            rec if isinstance(rec, Advice) else m._validate(d, rec)
            for m, d, rec in zip(models, ds, recommendations, strict=True)
        ]
        for m, d, advice in zip(models, ds, advices, strict=True):
            m.mechanisms.on_advice(d, advice, m.policy_name)
            m._pending = None
        m0, d0 = models[0], ds[0]
        t, c = d0.t, m0.config
        if B == 1:
            applicants, scores, accepted = d0.applicants, d0.scores, d0.accepted
        else:
            if self._flat is None:
                raise RuntimeError("respond() of a batch follows the batch's own decide()")
            applicants, _, scores, accepted = self._flat
        n_rej = np.array([d.rej.shape[0] for d in ds], dtype=np.int64)
        if B == 1:
            rej, advice = d0.rej, advices[0]
            goal, X_cf, advised = advice.goal, advice.X_cf, advice.advised
        else:
            rej = (~accepted).nonzero()[0]
            goal = np.concatenate([a.goal for a in advices])
            X_cf = np.concatenate([a.X_cf for a in advices])
            advised = np.concatenate([a.advised for a in advices])
        rej_scores = scores.take(rej)
        dropped = stages.dropout(goal, rej_scores, applicants.n_apps.take(rej), c, ep, n_rej)
        # under which model, threshold and score the advice was given
        issued_parts = [
            m.mechanisms.issued(a.advised, lambda m=m, a=a: a.cf_scores(m.scorer)[0], d.threshold)
            for m, d, a in zip(models, ds, advices, strict=True)
        ]
        issued = issued_parts[0]
        if B > 1 and issued is not None:
            issued = {k: np.concatenate([p[k] for p in issued_parts]) for k in issued}
        stayers, leaving, order = advised_rows(
            applicants, rej, dropped, goal, X_cf, advised, t, issued
        )
        n_leave = _count_by(dropped, n_rej)
        n_stay = n_rej - n_leave
        known = None
        if (
            len(stayers) >= REUSE_FROM
            and all(m.recorder.on for m in models)
            and not ep.propagates
            and all(m.scorer.is_linear for m in models)
        ):
            # M(x_cf) is needed for the record anyway; a linear score is a function of the
            # row alone, so rows that end at x_cf (or where they were) need no new score
            stay = order[: len(stayers)]
            cf = [a.cf_scores(m.scorer)[0] for m, a in zip(models, advices, strict=True)]
            known = (np.concatenate(cf).take(stay), rej_scores.take(stay))
        outcome = stages.implement(
            stayers,
            n_stay,
            m0.difficulty,
            c.beta,
            ep,
            known,
            m0.world.structure.onehot,
        )
        self.pool.add(t, stayers, leaving, n_stay, n_leave)
        self._flat = None
        if B == 1:
            per = [(dropped, stayers, leaving, outcome)]
        else:
            per = _per_episode(dropped, n_rej, stayers, n_stay, leaving, n_leave, outcome)
        for m, d, advice, (drop, stay_b, leave_b, outcome_b) in zip(
            models, ds, advices, per, strict=True
        ):
            if m.recorder.on:
                if m._handles.on:  # the agents first, so that agent reporters read the new rows
                    ids = d.applicants.ids
                    m._handles.sync(ids[d.accepted], leave_b.ids, stay_b.ids, m.population.ids)
                stats = getattr(m.policy, "tick_stats", None)
                m.recorder.record(
                    m, d, advice, drop, leave_b, outcome_b, None if stats is None else stats()
                )
            m.tick += 1
            if m.tick >= m.config.ticks:
                m.running = False


#: the scenario fields a batch applies to all its rows at once: equal in every episode
SHARED = ("n_features", "validity", "nu", "rho", "chi", "omega", "beta", "difficulty")


def _check_shared(first: Any, other: Any) -> None:
    for name in SHARED:
        a, b = getattr(first, name), getattr(other, name)
        if np.asarray(a).tolist() != np.asarray(b).tolist():
            raise ConfigError(
                problem(name, b, f"{a!r}, as in the batch's first episode (one scenario)")
            )


def _slice(pop: Population, lo: int, hi: int) -> Population:
    """Rows [lo, hi) of ``pop`` as views."""
    return Population({k: v[lo:hi] for k, v in pop.data.items()}, pop.n_features)


def _parts(pop: Population, counts: np.ndarray) -> list[Population]:
    """``pop`` cut into its episodes' rows (``counts`` (B,)), as views."""
    bounds = np.concatenate([[0], np.cumsum(counts)]).tolist()
    return [_slice(pop, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _count_by(mask: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B,) how many of each episode's rows (``counts``) ``mask`` holds."""
    if counts.shape[0] == 1:
        return np.array([np.count_nonzero(mask)], dtype=np.int64)
    index = np.repeat(np.arange(counts.shape[0]), counts)
    return np.bincount(index[mask], minlength=counts.shape[0]).astype(np.int64)


def _per_episode(dropped, n_rej, stayers, n_stay, leaving, n_leave, outcome: Outcome) -> list:
    """Each episode's (dropped (n_b,), stayers, leaving, Outcome) of a flat respond, its
    rows numbered as in the episode's own arrays."""
    rej_at = np.concatenate([[0], np.cumsum(n_rej)]).tolist()
    stay_at = np.concatenate([[0], np.cumsum(n_stay)])
    leave_at = np.concatenate([[0], np.cumsum(n_leave)]).tolist()
    # changed entries are in row order: each episode's are one run of them
    entry_at = np.searchsorted(outcome.rows, stay_at).tolist()
    stay_at = stay_at.tolist()
    out = []
    for b in range(n_rej.shape[0]):
        s0, s1 = stay_at[b], stay_at[b + 1]
        e0, e1 = entry_at[b], entry_at[b + 1]
        dprop = None if outcome.dprop is None else outcome.dprop[s0:s1]
        mine = Outcome(
            outcome.rows[e0:e1] - s0,
            outcome.cols[e0:e1],
            outcome.ok[e0:e1],
            outcome.effort[s0:s1],
            outcome.implemented[s0:s1],
            outcome.X_before[s0:s1],
            outcome.X_after[s0:s1],
            dprop,
        )
        out.append(
            (
                dropped[rej_at[b] : rej_at[b + 1]],
                _slice(stayers, s0, s1),
                _slice(leaving, leave_at[b], leave_at[b + 1]),
                mine,
            )
        )
    return out
