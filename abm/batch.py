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

import collections
import functools
from typing import Any, NamedTuple

import numpy as np
from scipy.special import expit

from abm import collector, segments, stages
from abm.advice import AdviceRows, checked_rows
from abm.interfaces import RejectedRows, rows_ready
from abm.pool import Pool, advised_rows, interleave
from abm.population import Population, filled
from abm.record import Journal, TickArrays, TickFigures, fill_cf_scores
from abm.rng import BatchTape, Streams
from abm.selection import select_each
from abm.tick import Advice, Decision, Outcome, reapplicant_feedback
from abm.validation import ConfigError, problem

# from this many stayers, scores of rows ending at x_cf or at x are reused, not recomputed
REUSE_FROM = 1024
# a batch that defers its record (Batch.defer_record) makes the columns of its oldest
# ticks once more applicants' ticks than this wait (about 55 MB of their arrays: 52 bytes
# an applicant's tick in paper, traced; 64 environments' 100-tick episodes hold 124,000)
DEFER_ROWS = 2**20
# the applicants' columns a decision read only for its counts needs (Decision.success_counts;
# ids keep len() working)
_COUNTED = ("ids", "X_obs", "X", "advised", "implemented")


class Episodes:
    """What a stage needs of each episode of a batch: its streams, its decision model in
    force and its extensions (``models``, one per episode, in batch order)."""

    __slots__ = (
        "models",
        "B",
        "_scorers",
        "_tapes",
        "_linear",
        "_propagates",
        "_kind",
        "_history",
        "_fixed",
        "together",
    )

    def __init__(self, models: list[Any]) -> None:
        self.models, self.B = models, len(models)
        self._scorers: list[Any] | None = None
        # the scorers' weights (B, z) and intercepts (B,) stacked, with the scorers read
        self._linear: tuple[list, np.ndarray, np.ndarray] | None = None
        self._kind: str | None = None  # the scorers': score_rows' "one", "linear" or "other"
        # an episode's carriers are fixed when its model is made
        self._propagates = any(m.mechanisms.propagates for m in models)
        self._history: np.ndarray | None = None  # (B, ticks): :meth:`history`
        # without retraining an episode's decision model stays the world's all along
        self._fixed = not any(getattr(m.mechanisms, "refits", False) for m in models)
        # each engine stream's uniforms read ahead for all episodes (abm.rng.BatchTape),
        # where every episode draws from its own plain Streams (a planner's rollouts share
        # their draws another way)
        plain = self.B > 1 and all(type(m.streams) is Streams for m in models)
        self._tapes: dict[str, BatchTape] | None = {} if plain else None
        # what reads every episode's uniforms at once where their streams are not plain (a
        # planner's twins: abm.planning.TwinDraws, set by the planner), else None
        self.together: Any = None

    @property
    def scorers(self) -> list[Any]:
        """Each episode's decision model in force, read once per stage (:meth:`fresh`)."""
        if self._scorers is None:
            self._scorers = [m.scorer for m in self.models]
            self._kind = None
        return self._scorers

    @property
    def fixed(self) -> bool:
        """Whether every episode's decision model in force is its world's all along (no
        retraining)."""
        return self._fixed

    def fresh(self) -> None:
        """Read the models in force again (an extension may have replaced one)."""
        if not self._fixed:
            self._scorers = None

    def uniform(self, stream: str, counts: np.ndarray, skip: np.ndarray | None = None):
        """(counts.sum(),) uniforms: episode b's ``counts[b]`` from its stream ``stream``,
        episode after episode (none where ``skip[b]``; those rows are left at 1)."""
        if self.B == 1:
            return _uniform(self.models[0].streams, stream, int(counts[0]))
        if self._tapes is not None:
            tape = self._tapes.get(stream)
            if tape is None:
                tape = self._tapes[stream] = BatchTape([m.streams for m in self.models], stream)
            return _skipping(tape.draw, counts, skip)
        if self.together is not None:
            got = _skipping(lambda n: self.together.uniform(stream, n), counts, skip)
            if got is not None:  # else the stream is read episode by episode
                return got
        parts = []
        skipped = [False] * self.B if skip is None else skip.tolist()
        for m, n, out in zip(self.models, counts.tolist(), skipped, strict=True):
            if out:
                parts.append(np.ones(n))
            else:
                parts.append(_uniform(m.streams, stream, n))
        return np.concatenate(parts)

    def normals(self, stream: str, rows: np.ndarray, z: int) -> np.ndarray:
        """(rows.sum(), z) standard normals: episode b's ``rows[b]`` rows of z from its
        stream ``stream`` (each ``standard_normal((rows[b], z))``), episode after episode."""
        if self._tapes is None:
            return np.concatenate(
                [
                    m.streams.get(stream).standard_normal((k, z))
                    for m, k in zip(self.models, rows.tolist(), strict=True)
                ]
            )
        key = f"{stream} normals"
        tape = self._tapes.get(key)
        if tape is None:
            streams = [m.streams for m in self.models]
            tape = self._tapes[key] = BatchTape(streams, stream, 2048, "standard_normal")
        return tape.draw(rows * z).reshape(-1, z)

    def score(self, X: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """M(x) (n,) of flat rows X (n, z), episode b's ``counts[b]`` rows under its model
        in force."""
        if self.B == 1:
            return self.models[0].scorer.score(X)
        return self.score_of(X, segments.episode_of(counts))

    def score_of(self, X: np.ndarray, episode: np.ndarray) -> np.ndarray:
        """M(x) (n,) of rows X (n, z) of any episodes, ``episode`` (n,) naming each one's."""
        scorers = self.scorers
        if self._kind is None:
            self._kind = kind_of(scorers)
        return score_rows(scorers, X, episode, self._stacked, self._kind)

    def _stacked(self, scorers: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """(W (B, z), b (B,)) of linear ``scorers``, stacked again only when one changed
        (a refit): a tick scores several times under the same models."""
        got = self._linear
        if got is None or (
            got[0] is not scorers
            and (
                len(got[0]) != len(scorers)
                or not all(a is b for a, b in zip(got[0], scorers, strict=True))
            )
        ):
            W = np.stack([s.weights for s in scorers])
            got = self._linear = (scorers, W, np.array([s.intercept for s in scorers]))
        return got[1], got[2]

    def history(self, t: int) -> np.ndarray | None:
        """(B, ticks) every episode's thresholds of its recorded ticks (NaN before), its
        recorder's own array a row of it, so that a tick notes all of them at once; None
        where some episode's record ends before tick ``t`` (each grows its own)."""
        H = self._history
        if H is None or H.shape[1] <= t:
            recorders = [m.recorder for m in self.models]
            width = recorders[0]._thresholds.shape[0]
            if width <= t or any(r._thresholds.shape[0] != width for r in recorders):
                return None
            H = self._history = np.stack([r._thresholds for r in recorders])
            for b, r in enumerate(recorders):
                r._thresholds = H[b]  # a view: what it notes, the batch reads
        return H

    @property
    def propagates(self) -> bool:
        """Whether an extension of some episode carries implemented changes on."""
        return self._propagates

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


def _skipping(draw: Any, counts: np.ndarray, skip: np.ndarray | None) -> np.ndarray | None:
    """``draw(counts)`` of all episodes at once, none drawn where ``skip[b]``: their rows
    left at 1 (None where ``draw`` gives None)."""
    if skip is None or not skip.any():
        return draw(counts)
    got = draw(np.where(skip, 0, counts))
    if got is None:
        return None
    out = np.ones(int(counts.sum()))
    out[(~skip).repeat(counts)] = got
    return out


def _uniform(streams: Any, name: str, n: int) -> np.ndarray:
    """``n`` uniforms of stream ``name``: the streams' own ``uniform`` where they have one
    (a planner's rollouts share theirs, abm.planning.RolloutStreams.uniform), else the
    generator's."""
    draw = getattr(streams, "uniform", None)
    return getattr(streams, name).random(n) if draw is None else draw(name, n)


class Batch:
    """B episodes of one scenario advanced tick by tick together.

    ``models`` hold each episode's own state (built by :class:`abm.model.RecourseModel`,
    all at the same tick with nothing pending); the batch holds their waiting pools as one
    flat :class:`abm.pool.Pool` and runs each stage once over all their rows.
    """

    #: the last tick's record as one block where the batch kept it so (respond's plain
    #: path), for a reader of all episodes' rows at once; else None
    last_block: TickBlock | None = None
    #: keep each plain tick's figures and make its tick-table columns when first read
    #: (eqs. 2-3 at once): for a reader of RR and RF alone, such as an RL environment
    #: (lab.envs.PopulationVectorEnv); at most DEFER_ROWS applicants' ticks wait
    defer_record = False

    def __init__(self, models: list[Any], pool: Pool | None = None) -> None:
        if not models:
            raise ValueError("a batch needs at least one episode")
        first = models[0]
        for m in models[1:]:
            if m.tick != first.tick:
                raise ValueError(
                    f"a batch holds episodes at one tick: tick {m.tick} beside {first.tick}"
                )
            if m.config is not first.config:  # forks of one snapshot share theirs
                _check_shared(first.config, m.config)
        #: every episode, and those still running (an episode past its last tick leaves)
        self.all, self.models, self.B = list(models), list(models), len(models)
        self.episodes = Episodes(self.models)
        c = first.config
        if pool is None:
            pool = Pool(c.n_features, c.validity, counts=np.zeros(self.B, dtype=np.int64))
        self.pool = pool
        self._flat: Flat | None = None  # the decided tick's flat arrays, for respond()
        self._maps: tuple | None = None  # (its episodes' ids, _affine_maps' answer)
        self._stats: list[dict[str, float]] | None = None  # advise_rows' tick figures
        self._one: tuple[list, bool] | None = None  # (its episodes, _one_policy's answer)
        self._plain_of: tuple[list, bool] | None = None  # (its episodes, _plain's answer)
        self._observing: tuple[list, list] | None = None  # (its episodes, _observers')
        self._settled_of: tuple[list, Any] | None = None  # (its episodes, _settled's answer)
        #: a planner's forks, many to a key (abm.planning.Simulator.many): each tick's
        #: entrants are drawn once a key (abm.planning.RolloutStreams.reuse), not by each
        self.share_entrants = False
        # the deferred ticks (defer_record), oldest first, with their applicants' number
        self._waiting_blocks: collections.deque[tuple[TickBlock, int]] = collections.deque()
        self._waiting_rows = 0
        # the plain ticks its episodes' records note when read (abm.record.Journal), from
        # the first such tick while the batch holds the same episodes
        self._journal: Journal | None = None
        # the decided tick's Decisions while its episodes are the batch's (decide's, for
        # respond; None once respond read it or the batch was parted)
        self._decisions: Decisions | None = None
        for b, m in enumerate(models):
            m._batch, m._episode = self, b

    @classmethod
    def of(cls, models: list[Any]) -> Batch:
        """Fresh models (tick 0, nothing waiting) advanced together from now on."""
        for m in models:
            if m.tick != 0 or m.pool.n_waiting or m._batch.B != 1:
                raise ValueError("only fresh models (tick 0, alone) can be put in a batch")
        return cls(list(models))

    @classmethod
    def join(cls, batches: list[Batch]) -> Batch:
        """The episodes of ``batches`` (one scenario, all at one tick, e.g. forks of one
        snapshot) as one batch, in order; each episode goes on bit for bit as it would
        have alone. Either none has a decided tick pending, or every one has and each is
        a batch of one (forks at a pending decision, :meth:`abm.planning.Simulator.many`)."""
        models = [m for b in batches for m in b.models]
        pending = [m._pending is not None for m in models]
        if any(pending) and not (all(pending) and all(b.B == 1 for b in batches)):
            raise ValueError(
                "only batches with nothing pending, or single episodes all decided, can be joined"
            )
        pools = [b.pool for b in batches]
        for p in pools:  # entries past the window leave (as the next decide() has them)
            p.dropped_in_window(models[0].tick)
        p0 = pools[0]
        z = p0.n_features
        dropped = _joined_windows([p.dropped for p in pools], z, "batches to join")
        waiting = Population.concat([p.waiting for p in pools], z)
        counts = np.concatenate([p.counts for p in pools])
        joined = cls(models, Pool(z, p0.validity, waiting, dropped, counts))
        if any(pending):
            joined._flat = _flat_of([m._require_pending() for m in models], z)
        return joined

    @classmethod
    def of_snapshots(cls, forks: list[Any], snaps: list[Any]) -> Batch:
        """Forks of snapshots (``forks[b]`` of ``snaps[b]``, not in a batch yet: what
        :meth:`abm.model.RecourseModel.forks` makes) as one batch: what :meth:`join` of
        each alone gives, built from the snapshots at once (a snapshot repeated is copied
        by one broadcast, :func:`abm.population.join_columns`). All are at one tick, with
        a decided tick pending in all or none."""
        s0 = snaps[0]
        c, t = s0.config, s0.tick
        z, validity = c.n_features, c.validity
        if any(s.tick != t for s in snaps):
            raise ValueError("the snapshots to fork in one batch are at different ticks")
        pending = [f._pending is not None for f in forks]
        if any(pending) and not all(pending):
            raise ValueError("forks in one batch have a decided tick pending in all or none")
        # each snapshot's dropped-out window as its next decide() has it (older rows left)
        windows: dict[int, list[tuple[int, Population, np.ndarray]]] = {}
        for s in snaps:
            if id(s) not in windows:
                windows[id(s)] = [
                    (u, rows, np.array([len(rows)], dtype=np.int64))
                    for u, rows in s.dropped
                    if u >= t - validity
                ]
        per = [windows[id(s)] for s in snaps]
        dropped = _joined_windows(per, z, "snapshots to fork in one batch")
        waiting = Population.concat([s.population for s in snaps], z)
        counts = np.array([len(s.population) for s in snaps], dtype=np.int64)
        batch = cls(forks, Pool(z, validity, waiting, dropped, counts))
        if pending[0]:
            batch._flat = _flat_of([f._pending for f in forks], z)
        return batch

    def decided(self) -> Decided:
        """The decided tick of every episode, flat (:class:`Decided`)."""
        if self._flat is None:
            raise RuntimeError("decided() follows the batch's own decide()")
        f = self._flat
        return Decided(f.applicants, f.sizes, f.scores, self._thresholds(), f.n_rej)

    def _thresholds(self) -> np.ndarray:
        """(B,) each episode's threshold of the decided tick."""
        got = self._flat.thresholds
        if got is None:
            got = np.array([m._require_pending().threshold for m in self.models])
        return got

    def success_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(|I^succ|, |I^succ and accepted|, |I^rej window|), each (B,), of the decided
        tick (eqs. 2-3): every episode's :meth:`RecourseModel.pending_success` at once."""
        if self._flat is None:
            raise RuntimeError("success_counts() follows the batch's own decide()")
        f = self._flat
        flat = self._decisions  # decided flat: the counts as they are
        if flat is not None:
            n_ret = flat.n_ret
        else:
            n_ret = np.array([m._require_pending().n_ret for m in self.models], dtype=np.int64)
        a = f.applicants
        succ = segments.first(n_ret, f.sizes) & a.advised & a.implemented
        return segments.count(succ, f.sizes), segments.count(succ & f.accepted, f.sizes), f.n_window

    def accepts(self, cid: int) -> np.ndarray:
        """(B,) bool: whether each episode accepted candidate ``cid`` in the decided tick."""
        if self._flat is None:
            raise RuntimeError("accepts() follows the batch's own decide()")
        f = self._flat
        return segments.count(f.accepted & (f.applicants.ids == cid), f.sizes) > 0

    def accepted_ids(self) -> list[np.ndarray]:
        """Each episode's accepted ids (a,) of the decided tick."""
        if self._flat is None:
            raise RuntimeError("accepted_ids() follows the batch's own decide()")
        f = self._flat
        ids = f.applicants.ids[f.accepted]
        bounds = segments.offsets(segments.count(f.accepted, f.sizes))
        return [ids[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]

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
        with collector.paused():  # a tick's objects die young (abm.collector)
            obs = None
            if models[0]._pending is None:
                # one row-wise policy reads the flat rows: no episode needs an observation
                obs = self.decide(lazy=self._one_policy())
            self.respond(self.advise(observations=obs))

    def advise(self, policy: Any = None, observations: list | None = None) -> list:
        """Every episode's recommendation for the decided tick, for :meth:`respond`: one
        row-wise call for all (:meth:`advise_rows`) where the policy answers rows
        (abm.interfaces.rows_ready), else each episode's observation answered in turn
        with the episode's own policy stream (None where nobody was rejected).

        ``policy``: one policy for every episode (a planner's, the forecast's); None: each
        episode's own, asked once for all when they share one row-wise registry spec.
        ``observations``: what :meth:`decide` returned (default: built now, if needed)."""
        if policy is None:
            if self._one_policy() and self._flat is not None:
                return self._advise_rows()
        elif rows_ready(policy):
            return self.advise_rows(policy.recommend_rows)
        models = self.models
        if observations is None:
            observations = [m.pending_observation() for m in models]
        return [
            (m.policy if policy is None else policy).recommend(o, m.streams.policy)
            if o.n_rejected
            else None
            for m, o in zip(models, observations, strict=True)
        ]

    def _one_policy(self) -> bool:
        """Whether every episode runs one row-wise policy (one registry spec), which then
        answers all their rejected in one call (abm.interfaces.rows_ready); kept while the
        batch holds the same episodes (a model's policy is fixed when it is made)."""
        models = self.models
        if self._one is not None and self._one[0] is models:
            return self._one[1]
        first = models[0]
        spec = first.policy_spec
        one = (
            spec is not None
            and rows_ready(first.policy)
            and all(m.policy_spec == spec for m in models)
        )
        self._one = (models, one)
        return one

    def _settled(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(k (B,), m (B,)) of the scenario where no episode has an extension on (each
        tick's capacity is then the scenario's and no extension keeps tick state), else
        None; kept while the batch holds the same episodes."""
        models = self.models
        got = self._settled_of
        if got is not None and got[0] is models:
            return got[1]
        settled = None
        if not any(m.mechanisms.on for m in models):  # capacity is an extension too
            settled = (
                np.array([m.config.k for m in models]),
                np.array([m.config.m for m in models], dtype=np.int64),
            )
        self._settled_of = (models, settled)
        return settled

    def _observers(self) -> list[int]:
        """The episodes whose policy learns from its reapplicants' feedback (``observe``);
        a row-wise policy keeps nothing to learn into (one for all episodes: none is
        asked). Kept while the batch holds the same episodes."""
        models = self.models
        if self._observing is not None and self._observing[0] is models:
            return self._observing[1]
        observers = []
        if not self._one_policy():
            for b, m in enumerate(models):
                if getattr(m.policy, "observe", None) is not None and not rows_ready(m.policy):
                    observers.append(b)
        self._observing = (models, observers)
        return observers

    def _advise_rows(self) -> list[Advice | None]:
        """The first episode's policy, asked for the rejected of every episode at once."""
        return self.advise_rows(self.models[0].policy.recommend_rows)

    def advise_rows(self, answer) -> list[Advice | None]:
        """``answer(rows)`` (a row-wise policy's ``recommend_rows``) for the rejected of
        every episode of the decided tick at once (:class:`abm.interfaces.RejectedRows`);
        its flat Recommendation validated (:func:`abm.advice.checked_rows`) into each
        episode's Advice, for :meth:`respond` (None for all when nobody was rejected)."""
        models = self.models
        if self._flat is None:
            raise RuntimeError("advise_rows() follows the batch's own decide()")
        f = self._flat
        if f.rej.shape[0] == 0:
            return [None] * self.B
        m0 = models[0]
        X = f.applicants.X_obs.take(f.rej, axis=0)
        rows = RejectedRows(
            X,
            f.scores.take(f.rej),
            f.n_rej,
            self._thresholds(),
            list(self.episodes.scorers),
            m0.tick,
        )
        rec = answer(rows)
        # a row-wise policy's tick figures, one per episode (abm.interfaces.rows_ready)
        figures = getattr(getattr(answer, "__self__", None), "tick_stats_rows", None)
        self._stats = None if figures is None else figures()
        immutable = m0.immutable if m0._any_immutable else None
        onehot = m0.world.structure.onehot
        return checked_rows(X, rec, f.n_rej, immutable, m0.policy_name, m0._direction, onehot)

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
        """Episodes past their last tick leave, each alone with its own pool (views of its
        rows); the batch is cut once, however many leave."""
        done = np.array([m.tick >= m.horizon for m in self.models])
        gone = self if done.all() else self.part(done)
        pool = gone.pool
        for b, m in enumerate(gone.models):
            view = pool.episode(b)
            Batch([m], Pool(pool.n_features, pool.validity, view.waiting, view.dropped))
        if gone is self:
            self.models, self.B = [], 0

    def part(self, leave: np.ndarray) -> Batch:
        """Episodes where ``leave`` (B,) holds leave this batch for a batch of their own
        (returned), taking their rows, and their decided tick if one is pending; the rest
        stay. Each goes on bit for bit as it would have here (an environment that must
        finish a tick nobody waits on, :class:`lab.envs.PopulationVectorEnv`)."""
        leave = np.asarray(leave, dtype=bool)
        if leave.shape != (self.B,) or not leave.any() or leave.all():
            raise ValueError(f"part() needs a mask (B = {self.B},) with some, not all, set")
        keep, pool, models = ~leave, self.pool, self.models
        flat = self._flat
        out = Batch(
            [m for m, x in zip(models, leave.tolist(), strict=True) if x], _cut(pool, leave)
        )
        out.defer_record = self.defer_record
        self.pool = _cut(pool, keep)
        self.models = [m for m, k in zip(models, keep.tolist(), strict=True) if k]
        self.B = len(self.models)
        self.episodes = Episodes(self.models)
        self._journal = None  # its episodes are numbered anew: a new journal from here
        self._decisions = None  # each episode's is made from its own index (Decisions.of)
        for b, m in enumerate(self.models):
            m._batch, m._episode = self, b
        if flat is not None:
            out._flat, self._flat = _cut_flat(flat, leave), _cut_flat(flat, keep)
        if self._stats is not None:  # advised already: each part keeps its episodes' figures
            stats, self._stats = (
                self._stats,
                [s for s, k in zip(self._stats, keep, strict=True) if k],
            )
            out._stats = [s for s, x in zip(stats, leave, strict=True) if x]
        return out

    def decide(self, observe: bool = True, lazy: bool = False) -> list[Any]:
        """First half of the tick of every episode (see :meth:`RecourseModel.decide`):
        reapplications, arrivals, scores and the top-k selection; one observation each
        (``lazy``: none is built until asked, :meth:`RecourseModel.pending_observation`)."""
        models, pool, ep, B = self.models, self.pool, self.episodes, self.B
        for m in models:
            if m._pending is not None:
                raise RuntimeError(f"tick {m.tick} is already decided: call respond() first")
        m0 = models[0]
        t, c = m0.tick, m0.config
        settled = self._settled()
        if settled is not None:  # no extension: the scenario's k and m, no tick state
            ks, capacity = settled
            states = None
        else:
            states, capacity = [], []
            for b, m in enumerate(models):
                mech = m.mechanisms
                k_m = mech.capacity_at(t)
                m.decision_maker.k_t = k_m[0]
                capacity.append(k_m[1])
                states.append(
                    mech.start_tick(t, pool.episode(b).waiting, m.streams) if mech.on else ()
                )
            ks = None  # read once the tick's draws are made, as extensions leave it
        ep.fresh()  # the models in force of this tick
        returning, back = pool.split(stages.reapplications(pool, t, c, ep))
        n_window = back + pool.counts + pool.dropped_in_window(t)
        feedback, returned = [None] * B, None
        # captured before X changes, for the episodes whose policy learns from it
        for b in self._observers():
            if returned is None:
                returned = [returning] if B == 1 else _parts(returning, back)
            fb = models[b].mechanisms.feedback(() if states is None else states[b])
            feedback[b] = reapplicant_feedback(t, returned[b], fb)
        # hidden changes become visible now: what is seen (X_obs) is the true X. A fork's
        # last tick (observe False) is read only for its counts: the selection needs the
        # features and the counts the reapplicants' flags, so no other column is joined
        # unless an extension reads the applicants
        plain = settled is not None or not any(m.mechanisms.on for m in models)
        counted = not observe and plain
        # a planner's rollouts with one key draw the same entrants whatever their plan (no
        # extension reads or writes them): drawn once a key, abm.planning.RolloutStreams.reuse
        # (on a fork's last tick, read only for its counts, always)
        shared = plain and (counted or self.share_entrants)
        only = _COUNTED if counted else None
        arrivals, n_new, rows = self._arrivals(t, shared, capacity, only)
        sizes = back + n_new
        applicants = Population.concat([returning, arrivals], c.n_features, {"X_obs": "X"}, only)
        if B > 1:  # each episode's reapplicants, then its entrants, episode by episode
            order = interleave(back, n_new)
            if rows is not None:  # entrants shared by forks: each entrant's row, once taken
                late = order >= len(returning)
                order[late] = rows.take(order[late] - len(returning)) + len(returning)
            applicants = applicants.take(order)
            applicants.data["X_obs"] = applicants.data["X"]
        scores = ep.score(applicants.X_obs, sizes)
        if ks is None:
            ks = np.array([m.decision_maker.k_t for m in models])
        accepted, thresholds = select_each(scores, sizes, ks, _Ties(models))
        out, lo = [], 0
        if states is None and B > 1 and not (observe and not lazy) and not self._observers():
            # nothing to do per episode: each one's decision is made from the flat rows
            # when read (most ticks of a study or an environment never do)
            arrays = (applicants, sizes, scores, accepted, thresholds, back, n_window)
            decisions = self._decisions = Decisions(t, models, *arrays)
            for m in models:
                m._pending = decisions
            out = [None] * B
        else:
            each = zip(
                sizes.tolist(), thresholds.tolist(), back.tolist(), n_window.tolist(), strict=True
            )
            for b, (m, (size, threshold, n_ret, window)) in enumerate(
                zip(models, each, strict=True)
            ):
                hi = lo + size
                mine = applicants if B == 1 else (applicants, lo, hi)  # views once read
                d = Decision(t, threshold, mine, scores[lo:hi], accepted[lo:hi], n_ret, window)
                d.states = () if states is None else states[b]
                if m.mechanisms.on:
                    m.mechanisms.on_selected(
                        d, pool.episode(b), m.streams, m.recorder.record_events
                    )
                if feedback[b] is not None:
                    m.policy.observe(feedback[b](d.accepted[: d.n_ret]))
                d.obs = m._observation(d) if observe and not lazy else None
                m._pending = d
                out.append(d.obs)
                lo = hi
        rej = (~accepted).nonzero()[0]
        n_rej = sizes - segments.count(accepted, sizes)
        self._flat = Flat(
            applicants,
            sizes,
            scores,
            accepted,
            n_window,
            rej,
            n_rej,
            thresholds if states is None else None,  # no extension: the selection's
        )
        return out

    def _arrivals(
        self,
        t: int,
        shared: bool,
        m_t: list[int] | np.ndarray,
        only: tuple[str, ...] | None = None,
    ) -> tuple[Population, np.ndarray, np.ndarray | None]:
        """Every episode's entrants of tick ``t`` (flat), their number per episode (B,) and
        None, each episode's draws from its own streams with ids from its next; ``m_t``
        each episode's arrivals in force (the first tick brings ``n_initial`` instead).
        ``shared`` (forks read their key's entrants, RolloutStreams.reuse): each distinct
        draw once, and the row of each episode's entrants among them in place of None."""
        models = self.models
        n = np.array([m.config.n_initial for m in models] if t == 0 else m_t, dtype=np.int64)
        maps = None if self.B == 1 or shared else self._affine_maps()
        if maps is None:  # each episode alone, then joined
            parts = []
            for m in models:
                if shared:
                    key = ("arrivals", t, m._next_id)
                    got = m.streams.reuse(key, lambda m=m: m._arrivals(t))
                else:
                    got = m._arrivals(t)
                m._next_id += len(got)
                parts.append(got)
            z = models[0].config.n_features
            if shared:  # the distinct draws joined on the columns ``only`` (default all)
                joined, rows = _distinct(parts, z, only)
                return joined, n, rows
            return Population.concat(parts, z), n, None
        # independent features: standard normals from each episode's arrivals stream, put
        # through each episode's affine map at once (elementwise: the episode's own bits)
        X = self.episodes.normals("arrivals", n, models[0].config.n_features)
        episode = segments.episode_of(n)
        X *= maps[0].take(episode, axis=0)
        X += maps[1].take(episode, axis=0)
        X.clip(0.0, 1.0, out=X)
        first = np.array([m._next_id for m in models], dtype=np.int64)
        ids = np.arange(X.shape[0]) - segments.starts_of(n).take(episode) + first.take(episode)
        for m, k in zip(models, n.tolist(), strict=True):
            m._next_id += k
        c = models[0].config
        lo, hi = c.risk_aversion
        if lo == hi:
            risk = filled(X.shape[0], lo, np.float64)
        else:  # a stream of its own: traits never shift the arrivals of other runs
            risk = np.concatenate(
                [
                    m.streams.get("traits").uniform(lo, hi, k)
                    for m, k in zip(models, n.tolist(), strict=True)
                ]
            )
        return Population.entrants(ids, X, t, risk), n, None

    def _affine_maps(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Each episode's affine map of standard normals to entrants, stacked ((B, z) scale
        and offset), where every episode draws its entrants so (independent normal
        features, no extension, one range of risk aversion); else None. Kept while the
        batch holds the same episodes."""
        models = self.models
        key = tuple(map(id, models))
        if self._maps is not None and self._maps[0] == key:
            return self._maps[1]
        plain = (
            all(
                m.world.structure.plain
                and not m.mechanisms.on
                and hasattr(m.world.generator, "affine")  # independent normal features
                for m in models
            )
            and len({m.config.risk_aversion for m in models}) == 1
        )
        maps = None
        if plain:
            affine = [m.world.generator.affine for m in models]
            maps = (np.stack([a[0] for a in affine]), np.stack([a[1] for a in affine]))
        self._maps = (key, maps)
        return maps

    def respond(self, recommendations: list[Any]) -> None:
        """Second half of the tick of every episode (see :meth:`RecourseModel.respond`):
        advice, dropout, implementation, the record; ``recommendations`` one per episode."""
        models, ep, B = self.models, self.episodes, self.B
        ds = [m._pending for m in models]
        flat, self._decisions = self._decisions, None
        if flat is not None and all(d is flat for d in ds):
            ds = flat  # each episode's decision made only if read
        else:  # what the first episode with no decided tick says
            ds = [m._require_pending() for m in models]
        self.last_block = None
        # a row-wise answer stays flat: an episode's Advice is made only if read
        flat_advice = type(recommendations) is AdviceRows
        if flat_advice:
            if len(recommendations) != B:
                raise ValueError(f"{len(recommendations)} episodes' advice for a batch of {B}")
            advices = recommendations
        else:
            advices = [
                rec if isinstance(rec, Advice) else m._validate(d, rec)
                for m, d, rec in zip(models, ds, recommendations, strict=True)
            ]
        extended = self._settled() is None and any(m.mechanisms.on for m in models)
        if extended:
            for m, d, advice in zip(models, ds, advices, strict=True):
                if m.mechanisms.on:
                    m.mechanisms.on_advice(d, advice, m.policy_name)
        for m in models:
            m._pending = None
        if extended:  # an extension may have replaced a model in force
            ep.fresh()
        m0 = models[0]
        d0 = ds[0] if B == 1 else None  # (a batch of one's decision is made in decide())
        t, c = (ds.t if type(ds) is Decisions else ds[0].t), m0.config
        if B == 1:
            applicants, scores, accepted = d0.applicants, d0.scores, d0.accepted
            rej, advice = d0.rej, advices[0]
            n_rej = np.array([rej.shape[0]], dtype=np.int64)
            goal, X_cf, advised = advice.goal, advice.X_cf, advice.advised
        else:
            f = self._flat
            if f is None:
                raise RuntimeError("respond() of a batch follows the batch's own decide()")
            applicants, scores, accepted, rej, n_rej = (
                f.applicants,
                f.scores,
                f.accepted,
                f.rej,
                f.n_rej,
            )
            if flat_advice:
                goal, X_cf, advised = advices.goal, advices.X_cf, advices.advised
            else:
                goal = np.concatenate([a.goal for a in advices])
                X_cf = np.concatenate([a.X_cf for a in advices])
                advised = np.concatenate([a.advised for a in advices])
        rej_scores = scores.take(rej)
        dropped = stages.dropout(goal, rej_scores, applicants.n_apps.take(rej), c, ep, n_rej)
        # under which model, threshold and score the advice was given
        issued = None
        if extended:
            issued_parts = [
                m.mechanisms.issued(
                    a.advised, lambda m=m, a=a: a.cf_scores(m.scorer)[0], d.threshold
                )
                if m.mechanisms.on
                else None
                for m, d, a in zip(models, ds, advices, strict=True)
            ]
            issued = issued_parts[0]
            if B > 1 and issued is not None:
                issued = {k: np.concatenate([p[k] for p in issued_parts]) for k in issued}
        stayers, leaving, order = advised_rows(
            applicants, rej, dropped, goal, X_cf, advised, t, issued
        )
        n_leave = segments.count(dropped, n_rej)
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
            fill_cf_scores(models, advices, ep, (X_cf, advised, n_rej))  # in one pass
            if flat_advice and advices.cf is not None:
                cf_flat = advices.cf[0]
            else:
                cf_flat = np.concatenate([a.scores[0] for a in advices])
            known = (cf_flat.take(stay), rej_scores.take(stay))
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
        sizes, n_window = (
            (np.array([len(d0.applicants)]), np.array([d0.n_window]))
            if B == 1
            else (self._flat.sizes, self._flat.n_window)
        )
        decided_at = None if B == 1 else self._flat.thresholds  # (B,) or None: each one's
        self._flat, figures, self._stats = None, self._stats, None
        # a batch's episodes are all recorded, or none are (a planner's forks)
        recorded = models[0].recorder.on
        if recorded:
            arrays = TickArrays(
                t=t,
                sizes=sizes,
                n_ret=ds.n_ret
                if type(ds) is Decisions
                else np.array([d.n_ret for d in ds], dtype=np.int64),
                n_rej=n_rej,
                n_stay=n_stay,
                n_leave=n_leave,
                n_waiting=self.pool.counts,
                n_window=n_window,
                applicants=applicants,
                accepted=accepted,
                advised=advised,
                X_cf=X_cf,
                effort=outcome.effort,
                implemented=outcome.implemented,
                wasted=leaving.effort,
                X=None if B == 1 else applicants.X_obs.take(rej, axis=0),
                thresholds=decided_at,
            )
            blocked = (B > 1 or self.defer_record) and figures is None and self._plain()
            deferred = blocked and self.defer_record
            tick = TickFigures(models, ds, advices, arrays, ep, compact=deferred)
            exits = Exits(t, applicants, accepted, sizes - n_rej, leaving, n_leave)
            if blocked:
                # nothing reads the tick as it is recorded: each episode keeps its part of
                # one block, cut out when read (abm.record.Journal)
                if deferred:
                    block = TickBlock(t, tick, exits)
                    self._defer(block, int(sizes.sum()))
                else:
                    block = TickBlock(t, tick.columns(), exits)
                self.last_block = block
                # the dashboards' view of this tick only: dropped by the next
                responses = Responses(dropped, n_rej, n_stay, outcome)
                journal = self._journal
                if journal is None:  # each episode's record notes the batch's ticks when read
                    journal = self._journal = Journal()
                    for b, m in enumerate(models):
                        m.recorder.follow(journal, b)
                journal.add(block, ds, advices, responses)
                for m in models:
                    m.tick += 1
                    if m.tick >= m.config.ticks:
                        m.running = False
                return
            columns = tick.columns()
            names = list(columns)
            rows = [
                dict(zip(names, row, strict=True)) for row in zip(*columns.values(), strict=True)
            ]
        if not recorded:  # a planner's forks: nothing of the tick is kept
            for m in models:
                m.tick += 1
                if m.tick >= m.config.ticks:
                    m.running = False
            return
        if B == 1:
            per = [(dropped, stayers, leaving, outcome)]
        else:
            agents = any(m._handles.on for m in models)
            per = _per_episode(
                dropped,
                n_rej,
                stayers if agents else None,
                n_stay,
                leaving if agents else None,
                n_leave,
                outcome,
            )
        for b, (m, d, advice, (drop, stay_b, leave_b, outcome_b)) in enumerate(
            zip(models, ds, advices, per, strict=True)
        ):
            if m._handles.on:  # the agents first, so that agent reporters read the new rows
                ids = d.applicants.ids
                m._handles.sync(ids[d.accepted], leave_b.ids, stay_b.ids, m.population.ids)
            if figures is not None:  # a row-wise policy answered for every episode
                stats = figures[b]
            else:
                stats = getattr(m.policy, "tick_stats", None)
                stats = None if stats is None else stats()
            m.recorder.record(m, d, advice, drop, outcome_b, stats, rows[b], exits.of(b))
            m.tick += 1
            if m.tick >= m.config.ticks:
                m.running = False

    def _defer(self, block: TickBlock, rows: int) -> None:
        """Keep ``block``'s columns to be made when read; the oldest are made now while
        more than :data:`DEFER_ROWS` applicants' ticks wait."""
        waiting = self._waiting_blocks
        waiting.append((block, rows))
        self._waiting_rows += rows
        while self._waiting_rows > DEFER_ROWS:
            old, n = waiting.popleft()
            old.make()
            self._waiting_rows -= n

    def _plain(self) -> bool:
        """Whether every episode's record reads nothing of a tick but its row and exits
        (abm.record.Recorder.plain, no agents, no policy figures): kept while the batch
        holds the same episodes."""
        models = self.models
        if self._plain_of is not None and self._plain_of[0] is models:
            return self._plain_of[1]
        plain = all(
            m.recorder.plain and not m._handles.on and getattr(m.policy, "tick_stats", None) is None
            for m in models
        )
        self._plain_of = (models, plain)
        return plain


class TickBlock:
    """One recorded tick of a batch, kept once for all its episodes by its journal
    (abm.record.Journal): the tick-table columns (each a list of B values,
    :func:`abm.record.tick_rows`), or the :class:`abm.record.TickFigures` that make them
    when first read (RR and RF alone from counts, :meth:`column`), and the tick's
    :class:`Exits`, cut out when read."""

    __slots__ = ("t", "_names", "_values", "_figures", "_exits")

    def __init__(self, t: int, columns: dict[str, list] | TickFigures, exits: Exits) -> None:
        self.t, self._exits = t, exits
        self._figures: TickFigures | None = None
        if isinstance(columns, TickFigures):
            self._figures = columns
        else:
            self._keep(columns)

    def _keep(self, columns: dict[str, list]) -> None:
        self._names, self._values = tuple(columns), list(columns.values())

    def make(self) -> None:
        """Make the columns now, if they wait (the figures' arrays are then let go)."""
        figures = self._figures
        if figures is not None:
            self._keep(figures.columns())
            self._figures = None

    @property
    def names(self) -> tuple[str, ...]:
        """The tick table's column names, in its order."""
        self.make()
        return self._names

    @property
    def values(self) -> list[list]:
        """The columns, in :attr:`names` order (each a list of B values)."""
        self.make()
        return self._values

    def column(self, name: str) -> list:
        """Column ``name`` of the tick table, one value per episode (B,)."""
        figures = self._figures
        if figures is not None and name in ("rr", "rf"):
            return figures.ratios()[2 if name == "rr" else 3]
        return self.values[self.names.index(name)]

    def values_at(self, b: int) -> list:
        """Episode ``b``'s row values, in :attr:`names` order."""
        return [column[b] for column in self.values]

    def row(self, b: int) -> dict[str, Any]:
        """Episode ``b``'s tick-table row."""
        return dict(zip(self.names, self.values_at(b), strict=True))

    def exits(self, b: int) -> tuple[np.ndarray, ...]:
        """Episode ``b``'s exits (:meth:`Exits.of`)."""
        return self._exits.of(b)


class Exits:
    """The exits of a batch's tick, flat: the effort of the accepted (a,) and of those who
    dropped out (l,), and their ticks from entry to exit; ``n_acc`` and ``n_leave`` (B,)
    per episode. :meth:`of` cuts an episode's out (the offsets found once)."""

    __slots__ = ("_flat", "_counts", "_at")

    def __init__(self, t, applicants, accepted, n_acc, leaving, n_leave) -> None:
        effort, wait = applicants.effort[accepted], t - applicants.entered[accepted]
        self._flat = (effort, leaving.effort, wait, t - leaving.entered)
        self._counts = (n_acc, n_leave)
        self._at: tuple[list, list] | None = None

    def of(self, b: int) -> tuple[np.ndarray, ...]:
        """Episode ``b``'s (effort of the accepted, of those who dropped out, the
        accepted's waits, the dropped-out's waits)."""
        if self._at is None:
            self._at = tuple(segments.offsets(c) for c in self._counts)
        acc_at, leave_at = self._at
        effort, gone, wait, gone_wait = self._flat
        a0, a1, l0, l1 = acc_at[b], acc_at[b + 1], leave_at[b], leave_at[b + 1]
        return effort[a0:a1], gone[l0:l1], wait[a0:a1], gone_wait[l0:l1]


class Responses:
    """A batch's responses of one tick, flat: dropout flags (n,) of the rejected (B,) per
    episode, stayers (B,) per episode, the Outcome; each episode's part cut out when read
    (:func:`_per_episode`, a dashboard's :attr:`abm.record.Recorder.tick_state`)."""

    __slots__ = ("_dropped", "_n_rej", "_n_stay", "_outcome", "_at")

    def __init__(self, dropped, n_rej, n_stay, outcome: Outcome) -> None:
        self._dropped, self._n_rej, self._n_stay, self._outcome = dropped, n_rej, n_stay, outcome
        self._at: tuple[list, list, list] | None = None

    def offsets(self) -> tuple[list, list, list]:
        """Each episode's first rejected, first stayer and first changed entry (B + 1,)
        each (changed entries are in row order: each episode's are one run of them)."""
        if self._at is None:
            stay_at = segments.offsets(self._n_stay)
            self._at = (
                segments.offsets(self._n_rej),
                stay_at,
                np.searchsorted(self._outcome.rows, stay_at).tolist(),
            )
        return self._at

    def dropped(self, b: int) -> np.ndarray:
        """Episode ``b``'s dropout flags (n_b,)."""
        rej_at = self.offsets()[0]
        return self._dropped[rej_at[b] : rej_at[b + 1]]

    def outcome(self, b: int) -> Outcome:
        """Episode ``b``'s Outcome, its rows numbered as in its own arrays."""
        _, stay_at, entry_at = self.offsets()
        return _outcome_of(self._outcome, stay_at[b], stay_at[b + 1], entry_at[b], entry_at[b + 1])

    def of(self, b: int) -> tuple[np.ndarray, Outcome]:
        """Episode ``b``'s (dropout flags, Outcome)."""
        return self.dropped(b), self.outcome(b)


class Decisions:
    """Every episode's decision of a batch's tick, each made from the flat rows when first
    read (``decisions[b]``, or :meth:`of` a model): the :class:`abm.tick.Decision` that
    :meth:`Batch.decide` makes of episode b, from the flat applicants (a rows), their
    number (B,), scores and accepted flags (a,), and each episode's threshold, number of
    reapplicants ``n_ret`` and RF window ``n_window`` (B,).
    Each model of the batch holds it as its pending decision until it is made its own
    (:meth:`abm.model.RecourseModel._require_pending`); it names the models by ``id``
    alone, so that it makes no cycle with them (a planner's forks die by reference
    count)."""

    __slots__ = (
        "t",
        "_ids",
        "applicants",
        "sizes",
        "scores",
        "accepted",
        "thresholds",
        "n_ret",
        "n_window",
        "_made",
        "_bounds",
    )

    def __init__(
        self, t, models, applicants, sizes, scores, accepted, thresholds, n_ret, n_window
    ) -> None:
        self.t, self.applicants, self.sizes = t, applicants, sizes
        self._ids = [id(m) for m in models]  # the models, alive while they hold this
        self.scores, self.accepted, self.thresholds = scores, accepted, thresholds
        self.n_ret, self.n_window = n_ret, n_window
        self._made: list[Decision | None] = [None] * len(models)
        self._bounds: list[int] | None = None  # each episode's first row, then the rows

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, b: int) -> Decision:
        d = self._made[b]
        if d is None:
            if self._bounds is None:
                self._bounds = segments.offsets(self.sizes)
            lo, hi = self._bounds[b], self._bounds[b + 1]
            d = self._made[b] = Decision(
                self.t,
                self.thresholds[b].item(),
                (self.applicants, lo, hi),
                self.scores[lo:hi],
                self.accepted[lo:hi],
                self.n_ret[b].item(),
                self.n_window[b].item(),
            )
        return d

    def __iter__(self):
        return (self[b] for b in range(len(self._made)))

    def of(self, model: Any) -> Decision:
        """``model``'s decision (the episode it was in the batch at the tick)."""
        mine, ids = id(model), self._ids
        b = model._episode  # its place in the batch, unless the batch was parted since
        if b < len(ids) and ids[b] == mine:
            return self[b]
        for b, i in enumerate(ids):
            if i == mine:
                return self[b]
        raise ValueError("the model is not one of the decisions' episodes")


class Flat(NamedTuple):
    """A batch's decided tick as :meth:`Batch.decide` leaves it for :meth:`Batch.respond`:
    the applicants (flat, episode after episode), their number (B,), scores M(x) (a,) and
    accepted flags (a,), each episode's RF window (B,), the rejected's rows (r,) and their
    number per episode (B,); each episode's threshold (B,) where no extension may move it
    (else None: each decision's own is read)."""

    applicants: Population
    sizes: np.ndarray
    scores: np.ndarray
    accepted: np.ndarray
    n_window: np.ndarray
    rej: np.ndarray
    n_rej: np.ndarray
    thresholds: np.ndarray | None = None


class Decided(NamedTuple):
    """A batch's decided tick: the applicants (flat, episode after episode), their number
    (B,), their scores M(x) (a,), each episode's threshold (B,) and rejected (B,)."""

    applicants: Population
    sizes: np.ndarray
    scores: np.ndarray
    thresholds: np.ndarray
    n_rejected: np.ndarray


#: the scenario fields a batch applies to all its rows at once: equal in every episode
SHARED = ("n_features", "validity", "nu", "rho", "chi", "omega", "beta", "difficulty")


def _check_shared(first: Any, other: Any) -> None:
    for name in SHARED:
        a, b = getattr(first, name), getattr(other, name)
        if a is not b and np.asarray(a).tolist() != np.asarray(b).tolist():
            raise ConfigError(
                problem(name, b, f"{a!r}, as in the batch's first episode (one scenario)")
            )


def kind_of(scorers: list[Any]) -> str:
    """How :func:`score_rows` scores under ``scorers``: "one" (one model for all),
    "linear" (each w . x + b) or "other" (each episode's rows by its own call)."""
    first = scorers[0]
    if len(scorers) == 1 or all(s is first for s in scorers):
        return "one"
    return "linear" if all(s.is_linear for s in scorers) else "other"


def score_rows(
    scorers: list[Any],
    X: np.ndarray,
    episode: np.ndarray,
    stacked: Any = None,
    kind: str | None = None,
) -> np.ndarray:
    """M(x) (n,) of rows X (n, z) of many episodes, row i under ``scorers[episode[i]]``,
    each row's score the bits of its episode's own call. ``stacked(scorers)``: their
    weights and intercepts, if kept (:meth:`Episodes._stacked`); ``kind``:
    :func:`kind_of` the scorers, if known."""
    kind = kind_of(scorers) if kind is None else kind
    if kind == "one":
        return scorers[0].score(X)
    if kind == "linear":
        # w . x + b row by row, as abm.summation.linear_logit adds each row alone: the
        # products and each row's sum are those of the episode's own call
        if stacked is None:
            W = np.stack([s.weights for s in scorers])
            b = np.array([s.intercept for s in scorers])
        else:
            W, b = stacked(scorers)
        logit = np.add.reduce(X * W.take(episode, axis=0), axis=1)
        logit += b.take(episode)
        return expit(logit)
    # any other model (an MLP, a model from a file) scores one episode's rows at a time
    out = np.empty(X.shape[0])
    for e in np.unique(episode).tolist():
        rows = (episode == e).nonzero()[0]
        out[rows] = scorers[e].score(X.take(rows, axis=0))
    return out


def _cut(pool: Pool, keep: np.ndarray) -> Pool:
    """The episodes of ``pool`` where ``keep`` (B,) holds, as a pool of their own."""
    if keep.all():
        return pool
    rows = np.repeat(keep, pool.counts)
    dropped = [(t, part.take(np.repeat(keep, per)), per[keep]) for t, part, per in pool.dropped]
    return Pool(pool.n_features, pool.validity, pool.waiting.take(rows), dropped, pool.counts[keep])


def _cut_flat(flat: Flat, keep: np.ndarray) -> Flat:
    """A decided tick's flat arrays (:meth:`Batch.decide`) of the episodes ``keep`` (B,)."""
    rows = np.repeat(keep, flat.sizes)
    accepted = flat.accepted[rows]
    return Flat(
        flat.applicants.take(rows),
        flat.sizes[keep],
        flat.scores[rows],
        accepted,
        flat.n_window[keep],
        (~accepted).nonzero()[0],
        flat.n_rej[keep],
        None if flat.thresholds is None else flat.thresholds[keep],
    )


class _Ties:
    """Each episode's ``ties`` stream, looked up when :func:`abm.selection.select_each`
    draws from it: a planner's forks make their streams on first use, and most ticks break
    no tie."""

    __slots__ = ("_models",)

    def __init__(self, models: list[Any]) -> None:
        self._models = models

    def __getitem__(self, b: int) -> np.random.Generator:
        return self._models[b].streams.ties


def _joined_windows(windows: list, n_features: int, what: str) -> list[tuple]:
    """The dropped-out windows of batches or forks (each a list of (tick, rows, rows per
    episode)) as one window of all their episodes, in order; they must cover one set of
    ticks (``what`` names them in the error)."""
    ticks = [t for t, _, _ in windows[0]]
    first = windows[0]
    if len(set(map(id, windows))) == 1:  # one window over and over (forks of one snapshot)
        n = len(windows)
        # a rollout mostly only counts the window's rows: each column copied when read
        return [(t, rows.repeated(n), np.tile(per, n)) for t, rows, per in first]
    if any([t for t, _, _ in w] != ticks for w in windows[1:]):
        raise ValueError(f"the {what} have other dropped-out windows")
    return [
        (
            t,
            Population.concat([w[i][1] for w in windows], n_features),
            np.concatenate([w[i][2] for w in windows]),
        )
        for i, t in enumerate(ticks)
    ]


def _distinct(
    parts: list[Population], n_features: int, only: tuple[str, ...] | None = None
) -> tuple[Population, np.ndarray | None]:
    """(the distinct ``parts`` joined on columns ``only`` (default all), each row of
    ``Population.concat(parts)`` as a row of it): parts repeat where a planner's forks of
    one key share their entrants. The rows are None where no part repeats."""
    index: dict[int, int] = {}
    which = [index.setdefault(id(p), len(index)) for p in parts]
    if len(index) == len(parts):
        return Population.concat(parts, n_features, only=only), None
    distinct = list({id(p): p for p in parts}.values())
    sizes = np.array([len(p) for p in distinct], dtype=np.int64)
    lens = sizes.take(which)
    # row j of part i is row starts[which[i]] + j of the distinct parts joined
    shift = (np.cumsum(sizes) - sizes).take(which) - (np.cumsum(lens) - lens)
    rows = np.repeat(shift, lens) + np.arange(int(lens.sum()))
    return Population.concat(distinct, n_features, only=only), rows


def _flat_of(ds: list[Decision], n_features: int) -> Flat:
    """The flat arrays of decided ticks ``ds`` (one an episode), as :meth:`Batch.decide`
    would have made them."""
    d0 = ds[0]
    if len(ds) > 1 and all(d.accepted is d0.accepted and d.scores is d0.scores for d in ds):
        # copies of one decision (forks of one snapshot): each array tiled at once
        applicants, times = d0.applicants, len(ds)
        accepted = np.tile(d0.accepted, times)
        return Flat(
            Population.concat([applicants] * times, n_features),
            filled(times, len(applicants), np.int64),
            np.tile(d0.scores, times),
            accepted,
            filled(times, d0.n_window, np.int64),
            (~accepted).nonzero()[0],
            filled(times, d0.rej.shape[0], np.int64),
            # the selection's, as decide() keeps them where no extension holds tick state
            None if d0.states else filled(times, d0.threshold, np.float64),
        )
    sizes = np.array([len(d.applicants) for d in ds], dtype=np.int64)
    accepted = np.concatenate([d.accepted for d in ds])
    return Flat(
        Population.concat([d.applicants for d in ds], n_features),
        sizes,
        np.concatenate([d.scores for d in ds]),
        accepted,
        np.array([d.n_window for d in ds], dtype=np.int64),
        (~accepted).nonzero()[0],
        np.array([d.rej.shape[0] for d in ds], dtype=np.int64),
    )


def _slice(pop: Population, lo: int, hi: int) -> Population:
    """Rows [lo, hi) of ``pop`` as views."""
    return pop.rows(lo, hi)


def _parts(pop: Population, counts: np.ndarray) -> list[Population]:
    """``pop`` cut into its episodes' rows (``counts`` (B,)), as views."""
    bounds = segments.offsets(counts)
    return [_slice(pop, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _per_episode(dropped, n_rej, stayers, n_stay, leaving, n_leave, outcome: Outcome) -> list:
    """Each episode's (dropped (n_b,), stayers, leaving, Outcome) of a flat respond, its
    rows numbered as in the episode's own arrays; the Outcome as a function giving it (cut
    out only when read), stayers and leaving None where they are (only the Mesa agents
    read them)."""
    responses = Responses(dropped, n_rej, n_stay, outcome)
    _, stay_at, _ = responses.offsets()
    leave_at = segments.offsets(n_leave)
    return [
        (
            responses.dropped(b),
            None if stayers is None else _slice(stayers, stay_at[b], stay_at[b + 1]),
            None if leaving is None else _slice(leaving, leave_at[b], leave_at[b + 1]),
            functools.partial(responses.outcome, b),
        )
        for b in range(n_rej.shape[0])
    ]


def _outcome_of(outcome: Outcome, s0: int, s1: int, e0: int, e1: int) -> Outcome:
    """Stayers [s0, s1) and changed entries [e0, e1) of a flat Outcome, rows renumbered."""
    dprop = None if outcome.dprop is None else outcome.dprop[s0:s1]
    return Outcome(
        outcome.rows[e0:e1] - s0,
        outcome.cols[e0:e1],
        outcome.ok[e0:e1],
        outcome.effort[s0:s1],
        outcome.implemented[s0:s1],
        outcome.X_before[s0:s1],
        outcome.X_after[s0:s1],
        dprop,
    )
