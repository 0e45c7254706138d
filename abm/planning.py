"""Snapshots and forks of a running model, for planners that look ahead.

A :class:`Snapshot` holds the model's own state at one point of a tick: the scenario, the
world (shared, read only), the tick, the next candidate id, the waiting population, the
rejected-and-dropped window and, between ``decide()`` and ``respond()``, the decided part
of the tick (applicants, scores, selection, observation). Populations are never written
in place once stored (see :class:`abm.population.Population`), so a snapshot shares
their arrays: taking one copies nothing.

A fork is a :class:`~abm.model.RecourseModel` rebuilt from a snapshot by
``RecourseModel.from_snapshot``: it runs the same ``decide``/``respond`` stages, but
Mesa's constructor is not run (no agents, no data collector, no Mesa registration) and it
records nothing. It draws from :class:`RolloutStreams`, never from the model's streams,
and its policy is wrapped by :class:`WithoutFeedback`, so forking leaves the real run
unchanged.

:class:`Simulator` is what ``PolicyContext.extra["simulator"]`` offers policies (see
:class:`abm.interfaces.Simulator`): rollouts of the true model from the current decision.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from abm import metrics
from abm.config import ScenarioConfig
from abm.interfaces import Recommendation, RecourseObs, RecoursePolicy, rows_ready
from abm.population import Population
from abm.rng import STREAMS, KnownSeed, seed_states


@dataclass(frozen=True)
class Snapshot:
    """The model's own state at one point of tick ``tick``.

    ``dropped`` holds ``(tick, rejected-and-dropped rows)`` of the last T ticks (they stay
    in the RF window, eq. 3). ``pending`` is the decided part of the tick while the model
    waits for ``respond()`` (an opaque object of the model), else None. ``world`` is
    shared with the model and only read; the decision model in force is part of
    ``mechanisms`` (a fork scores with its own copy).
    """

    config: ScenarioConfig
    world: Any
    tick: int
    next_id: int
    population: Population
    dropped: tuple[tuple[int, Population], ...]
    pending: Any = None
    # the extensions' state (abm.mechanisms.Mechanisms, capacity shocks included), a
    # private copy
    mechanisms: Any = None
    # the model's true difficulties (z,), immutable mask (z,) and whether any is set: shared,
    # only read
    features: Any = field(default=None, compare=False)


class Forkable(Protocol):
    """What :class:`Simulator` needs of a model (``RecourseModel`` satisfies it)."""

    policy: RecoursePolicy
    streams: Any

    def snapshot(self) -> Snapshot: ...

    def decide(self, observe: bool = True) -> RecourseObs | None: ...

    def respond(self, recommendation: Recommendation | Any | None) -> None:
        """Finish the pending tick with a Recommendation or an :meth:`advice_for` result."""
        ...

    def advice_for(self, recommendation: Recommendation | None) -> Any:
        """``recommendation`` validated for the pending decision (:meth:`respond` takes it)."""
        ...

    def pending_observation(self) -> RecourseObs: ...

    def pending_success(self) -> tuple[int, int, int]:
        """(|I^succ|, |I^succ and accepted|, |I^rej window|) of the pending decision."""
        ...


#: the streams a fork draws from as a tick runs (a fork has no Mesa scheduler), seeded
#: together by :meth:`RolloutStreams.many`
ROLLOUT_STREAMS = tuple(name for name in STREAMS if name != "mesa")

#: the streams a tick's entrants are drawn from (abm.world.World.entrants and the risk
#: aversion of abm.model.RecourseModel._arrivals), and nothing else where no extension runs
ENTRANT_STREAMS = ("arrivals", "traits", "groups", "noncausal")


class RolloutStreams:
    """Random streams of one rollout, created on first use.

    Stream ``name`` of the rollout with ``key`` forked at tick ``t`` is
    ``SeedSequence(seed, spawn_key=(crc32("simulator"), t, key, crc32(name)))``: disjoint
    from the episode's own streams (whose spawn keys have one element) and reproducible.
    Attribute access (``streams.dropout``) and :meth:`get` give the same generator, like
    :class:`abm.rng.Streams`.
    """

    def __init__(self, seed: int, t: int, key: int) -> None:
        self.seed = seed
        self._key = (zlib.crc32(b"simulator"), t, key)
        self._gens: dict[str, np.random.Generator] = {}
        self._start: dict[str, dict] | None = {}  # None: never rewound (a twin)
        # each stream's seed sequence, shared with this key's twins (it is pure: every
        # generator made from it starts at the same state)
        self._seqs: dict[str, KnownSeed] = {}
        # what the rollouts with this key draw alike whatever their plan (kept over rewinds:
        # the same draws come again), e.g. a fork's entrants (:meth:`reuse`)
        self.memo: dict[Any, Any] = {}
        # each stream's uniforms drawn so far by any rollout of this key (shared with its
        # twins), and how far this rollout has read each (:meth:`uniform`)
        self._tapes: dict[str, _Tape] = {}
        self._pos: dict[str, int] = {}
        # the entrant streams' states after the draws this rollout read from the memo
        # instead of making them (:meth:`reuse`)
        self._owed: dict[str, dict] = {}
        # the batch of twins that reads this rollout's uniforms with theirs (TwinDraws)
        self._twins: TwinDraws | None = None

    @classmethod
    def many(
        cls, seed: int, t: int, keys: Sequence[int], names: Sequence[str] = ROLLOUT_STREAMS
    ) -> list[RolloutStreams]:
        """``[RolloutStreams(seed, t, key) for key in keys]``, the seeds of their streams
        ``names`` hashed in one pass (:func:`abm.rng.seed_states`) instead of one
        SeedSequence each; the generators are the same. Other names are seeded on first
        use, as always."""
        out = [cls(seed, t, key) for key in keys]
        crcs = [zlib.crc32(name.encode()) for name in names]
        spawn = [s._key + (crc,) for s in out for crc in crcs]
        states = seed_states(seed, spawn, loop=True)  # for batches of rollouts: Numba is in
        at = 0
        for s in out:
            for name in names:
                s._seqs[name] = KnownSeed(seed, spawn[at], states[at])
                at += 1
        return out

    def twin(self) -> RolloutStreams:
        """Streams of another rollout with this key, advanced beside this one's (a batch
        of rollouts, :meth:`Simulator.many`): each stream starts at its first draw, and
        what :meth:`reuse` keeps is shared."""
        other = object.__new__(RolloutStreams)
        other.seed, other._key, other._gens, other._start = self.seed, self._key, {}, None
        other._seqs, other.memo = self._seqs, self.memo
        other._tapes, other._pos, other._owed, other._twins = self._tapes, {}, {}, None
        return other

    def uniform(self, name: str, n: int) -> np.ndarray:
        """``self.get(name).random(n)``, bit for bit: read from the uniforms that rollouts
        with this key have drawn from the stream (each draws them alike from one start),
        so that twins share one draw and make no generator until another kind of draw
        asks for one (:meth:`get`, which then starts where this rollout's reading ends)."""
        gen = self._gens.get(name)
        if gen is not None:
            return gen.random(n)
        if self._twins is not None:
            self._twins.release(name)
        at = self._pos.get(name, 0)
        self._pos[name] = at + n
        return self._tape(name).read(at, n)

    def _tape(self, name: str) -> _Tape:
        """Stream ``name``'s uniforms drawn so far by the rollouts with this key."""
        tape = self._tapes.get(name)
        if tape is None:
            tape = self._tapes[name] = _Tape(self._seed(name))
        return tape

    def reuse(self, key: Any, draw: Callable[[], Any]) -> Any:
        """What ``draw()`` gave the first rollout that asked for ``key``: a tick's entrants
        (the draws of :data:`ENTRANT_STREAMS` only).

        A fork's entrants are the same in every rollout with this key whatever the plan,
        where no extension runs (those streams serve nothing else): they are drawn once,
        keyed by the tick and the first id, and kept for the next rollout. A rollout that
        reads them leaves its own entrant streams where they are; if it must draw a later
        tick's itself (the others stopped earlier), they are first put where the draws it
        read left the rollout that made them, so every draw is the one it would make alone.
        """
        got = self.memo.get(key)
        if got is not None:
            self._owed.update(got[1])
            return got[0]
        for name, state in self._owed.items():  # catch up with the draws read, then draw
            self.get(name).bit_generator.state = state
        self._owed.clear()
        value = draw()
        gens = self._gens
        after = {name: gens[name].bit_generator.state for name in ENTRANT_STREAMS if name in gens}
        self.memo[key] = (value, after)
        return value

    def _seed(self, name: str) -> KnownSeed:
        seq = self._seqs.get(name)
        if seq is None:
            key = self._key + (zlib.crc32(name.encode()),)
            seq = self._seqs[name] = KnownSeed(self.seed, key)
        return seq

    def get(self, name: str) -> np.random.Generator:
        gen = self._gens.get(name)
        if gen is None:
            if self._twins is not None:
                self._twins.release(name)
            gen = self._gens[name] = np.random.Generator(np.random.PCG64(self._seed(name)))
            if self._start is not None:
                self._start[name] = gen.bit_generator.state
            read = self._pos.pop(name, 0)
            if read:  # uniforms read from the tape already: one 64-bit step each
                gen.bit_generator.advance(read)
            if _as_attribute(name) and name not in self.__dict__:
                # later attribute reads find it without __getattr__ (a fork reads its
                # streams as attributes a few times a tick, every rollout)
                self.__dict__[name] = gen
        return gen

    def rewind(self) -> None:
        """Every stream back to its first draw (the next rollout with this key)."""
        if self._start is None:
            raise RuntimeError("a twin's streams are not rewound: make another twin")
        for name, gen in self._gens.items():
            gen.bit_generator.state = self._start[name]
        self._pos.clear()
        self._owed.clear()

    def __getattr__(self, name: str) -> np.random.Generator:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(name)


class TwinDraws:
    """Twins of rollouts' streams (``parents``: one a fork, in batch order, a few keys'
    repeated) whose uniforms are read together: :meth:`uniform` is ``[s.uniform(name, n)
    for s, n in zip(streams, counts)]`` joined, bit for bit, as one gather from the keys'
    tapes. ``streams`` holds the twins (:meth:`RolloutStreams.twin`).

    While a stream is read so, each twin's place in it is kept here, not in the twin; a
    twin that reads that stream alone first has every twin's place given back
    (:meth:`release`), and the batch reads it twin by twin from then on."""

    __slots__ = ("streams", "_which", "_keys", "_at", "_alone")

    def __init__(self, parents: list[RolloutStreams]) -> None:
        index: dict[int, int] = {}
        which, streams = [], []
        for parent in parents:
            which.append(index.setdefault(id(parent), len(index)))
            twin = parent.twin()
            twin._twins = self
            streams.append(twin)
        self.streams = streams
        self._which = np.array(which, dtype=np.int64)
        # one stream of each key, in index's order: its tapes are every twin's of the key
        self._keys = list({id(p): p for p in parents}.values())
        self._at: dict[str, np.ndarray] = {}  # stream -> each twin's uniforms read (B,)
        self._alone: set[str] = set()  # streams read twin by twin

    def uniform(self, name: str, counts: np.ndarray) -> np.ndarray | None:
        """(counts.sum(),) twin b's next ``counts[b]`` uniforms of stream ``name``, twin
        after twin; None where the stream is read twin by twin (the caller does)."""
        at = self._at.get(name)
        if at is None:
            if name in self._alone:
                return None
            # every twin at its first draw (made fresh here): one that read the stream
            # alone since would have released it (RolloutStreams.uniform, get)
            at = np.zeros(len(self.streams), dtype=np.int64)
        end = at + counts
        top = np.zeros(len(self._keys), dtype=np.int64)
        np.maximum.at(top, self._which, end)
        tapes = [s._tape(name) for s in self._keys]
        values = [tape.read(0, e) for tape, e in zip(tapes, top.tolist(), strict=True)]
        # each twin's next uniform in the keys' tapes joined, less its first output row
        first = at - (counts.cumsum() - counts)
        if len(values) == 1:
            flat = values[0]
        else:
            flat = np.concatenate(values)
            first += (top.cumsum() - top).take(self._which)
        self._at[name] = end
        return flat.take(first.repeat(counts) + np.arange(int(counts.sum())))

    def release(self, name: str) -> None:
        """Stream ``name`` read twin by twin from now on: each twin's place given back."""
        at = self._at.pop(name, None)
        self._alone.add(name)
        if at is not None:
            for s, n in zip(self.streams, at.tolist(), strict=True):
                s._pos[name] = n


@functools.cache
def _as_attribute(name: str) -> bool:
    """Whether stream ``name`` can be kept as an attribute of :class:`RolloutStreams`."""
    return name.isidentifier() and not hasattr(RolloutStreams, name)


class _Tape:
    """The uniforms of one stream in the order it gives them: ``read(at, n)`` is what
    ``random(n)`` gives after ``at`` uniforms were drawn (PCG64 makes a double of each
    64-bit step, so draws of any sizes are slices of one sequence). Drawn as asked, the
    array at least doubling, so a tick's twins share one draw."""

    __slots__ = ("_gen", "_values")

    def __init__(self, seed: KnownSeed) -> None:
        self._gen = np.random.Generator(np.random.PCG64(seed))
        self._values = np.empty(0)

    def read(self, at: int, n: int) -> np.ndarray:
        end, drawn = at + n, self._values.shape[0]
        if end > drawn:
            more = self._gen.random(max(end - drawn, drawn, 16))
            self._values = np.concatenate([self._values, more]) if drawn else more
            self._values.flags.writeable = False  # twins read one array: nobody writes it
        return self._values[at:end]


class WithoutFeedback:
    """A policy as a fork sees it: it recommends, but learns nothing from the rollout.

    ``observe`` is None, so the fork builds no feedback at all.
    """

    def __init__(self, policy: RecoursePolicy) -> None:
        self.recommend = policy.recommend
        self.observe = None
        # a row-wise policy answers many forks' rows at once (abm.interfaces.rows_ready)
        self.rows_ready = rows_ready(policy)
        if self.rows_ready:
            self.recommend_rows = policy.recommend_rows


class Simulator:
    """Rollouts of ``model`` from its pending decision (``PolicyContext.extra["simulator"]``).

    ``fork(snapshot, streams, policy)`` rebuilds a model from a snapshot (for a
    ``RecourseModel``: ``RecourseModel.from_snapshot``). A call ``simulator(ticks, key)``
    between the model's ``decide()`` and ``respond()`` at tick t forks the model, finishes
    tick t on the fork with the model's policy (its ``observe`` is not called; a policy
    recognises its own re-entrant calls and answers them), then runs ticks t+1, ...,
    t+ticks, the last up to its selection. Streams derive from (seed, t, key) only: the
    real run is untouched and equal keys replay equal draws (common random numbers across
    the plans a caller compares).

    ``plan`` (any hashable, optional) names the caller's plan, e.g. a candidate margin:
    where the model's policy is ``deterministic`` (its answer to an observation draws
    nothing from its random stream and changes no state of its own), the rollouts of one
    decision under one plan share the first tick's validated advice, asked for once. The
    caller passes a plan only where the policy's first answer depends on nothing else
    (``Lookahead`` does: its margin).

    Returns one dict per simulated tick: ``tick``, ``n_succ``, ``n_succ_accepted``,
    ``n_rejected_window``, ``rr`` and ``rf`` (eqs. 2-3, NaN when undefined).
    """

    def __init__(
        self,
        model: Forkable,
        fork: Callable[..., Forkable],
        forks: Callable[[list[Snapshot], list[Any], Any], Any] | None = None,
    ) -> None:
        self._model = model
        self._fork = fork
        # (snapshots, streams, policy) -> one batch of a fork of each (its ``models``, the
        # forks: abm.model.RecourseModel.forks); None: many() runs its rollouts one after
        # another
        self._forks = forks
        self._streams: dict[tuple[int, int], RolloutStreams] = {}  # this tick's only
        self._running = False
        self._snap: tuple[RecourseObs, Snapshot] | None = None  # (pending obs, its snapshot)
        # the first tick's advice of each plan, for the snapshot it was given at
        self._advice: dict[Any, Any] = {}
        self._advice_of: Snapshot | None = None

    @property
    def running(self) -> bool:
        """True while a rollout runs (a policy called from inside its own rollout)."""
        return self._running

    def streams(self, seed: int, t: int, key: int) -> RolloutStreams:
        """The (rewound) streams of rollout ``key`` forked at tick ``t`` of episode ``seed``.

        Kept for the current tick: seeding costs ~30 us a stream, rewinding ~2.
        """
        streams = self._streams.get((t, key))
        if streams is None:
            self._prepare(seed, t, [key])
            return self._streams[t, key]
        streams.rewind()
        return streams

    def _prepare(self, seed: int, t: int, keys: list[int]) -> None:
        """Streams for the rollouts ``keys`` at tick ``t`` not kept yet, seeded together."""
        if any(tk[0] != t for tk in self._streams):
            self._streams.clear()  # a new tick: earlier rollouts' streams are done with
        new = [key for key in dict.fromkeys(keys) if (t, key) not in self._streams]
        if len(new) == 1:  # one rollout: its streams are seeded as they are first drawn
            self._streams[t, new[0]] = RolloutStreams(seed, t, new[0])
        elif new:
            for key, streams in zip(new, RolloutStreams.many(seed, t, new), strict=True):
                self._streams[t, key] = streams

    def fork(self, key: int = 0) -> Forkable:
        """A fork of the model at its pending decision, with rollout ``key``'s streams."""
        snap = self._snapshot()
        if snap.pending is None:
            raise RuntimeError("the simulator can only be called between decide() and respond()")
        streams = self.streams(snap.config.seed, snap.tick, key)
        return self._fork(snap, streams, WithoutFeedback(self._model.policy))

    def _snapshot(self) -> Snapshot:
        """The model's snapshot at its pending decision, taken once for all its rollouts:
        the model stands still while its policy plans, and forks write only their own
        copies (a snapshot shares populations, which are never written in place)."""
        try:
            obs = self._model.pending_observation()
        except RuntimeError:  # nothing pending: fork() says so
            return self._model.snapshot()
        if obs is None:  # decided without an observation: nothing tells decisions apart
            return self._model.snapshot()
        if self._snap is None or self._snap[0] is not obs:
            self._snap = (obs, self._model.snapshot())
        return self._snap[1]

    def _first_advice(self, fork: Forkable, plan: Any) -> Any:
        """The policy's validated answer to the pending decision under ``plan``: asked on
        the first rollout of the plan, kept for the others of this decision."""
        snap = self._snapshot()
        if self._advice_of is not snap:
            self._advice, self._advice_of = {}, snap
        if plan not in self._advice:
            self._advice[plan] = fork.advice_for(_recommend(fork, fork.pending_observation()))
        return self._advice[plan]

    def _check(self, ticks: int) -> None:
        if self._running:
            raise RuntimeError("simulations cannot be nested")
        if not (isinstance(ticks, int | np.integer) and ticks >= 1):
            raise ValueError(f"ticks must be an integer >= 1, got {ticks!r}")

    def __call__(self, ticks: int, key: int = 0, plan: Any = None) -> list[dict[str, float]]:
        self._check(ticks)
        # a deterministic policy answers the decision the same way under one plan, whatever
        # the rollout's streams: its first answer is asked for once a plan
        share = plan is not None and bool(getattr(self._model.policy, "deterministic", False))
        self._running = True
        try:
            fork = self.fork(int(key))
            rows = []
            for i in range(ticks):
                if i == 0 and share:
                    fork.respond(self._first_advice(fork, plan))
                else:
                    fork.respond(_recommend(fork, fork.pending_observation()))
                # the last tick is read only for its counts: no observation is built
                fork.decide(observe=i < ticks - 1)
                rows.append(_rates(fork.tick, *fork.pending_success()))
            return rows
        finally:
            self._running = False

    def many(
        self,
        ticks: int,
        runs: list[tuple[int, Any]],
        on_plan: Callable[[list[Any]], None] | None = None,
    ) -> list[list[dict[str, float]]]:
        """``[self(ticks, key, plan) for key, plan in runs]`` with the same rows, bit for
        bit, every fork advanced in one batch (:meth:`abm.batch.Batch.of_snapshots`). Each fork
        has streams of its own, which start where rollout ``key``'s do; forks of one key
        share what :meth:`RolloutStreams.reuse` keeps.

        ``on_plan(plans)`` is called right before the policy is asked: with ``[plan]``
        before it answers one fork, or with every fork's plan (in ``runs`` order) before
        one row-wise call for all (made when the policy is then
        :func:`~abm.interfaces.rows_ready`, as a planner answering its own rollouts by
        plan can be)."""
        runs = [(int(key), plan) for key, plan in runs]
        if self._forks is None or len(runs) < 2:
            rows = []
            for key, plan in runs:
                if on_plan is not None:
                    on_plan([plan])
                rows.append(self(ticks, key, plan))
            return rows
        first, counts = self._counts(ticks, runs, on_plan)
        each = [_rates_of(first + i, *tick) for i, tick in enumerate(counts)]
        return [list(rows) for rows in zip(*each, strict=True)]

    def rates(
        self,
        ticks: int,
        runs: list[tuple[int, Any]],
        on_plan: Callable[[list[Any]], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(RR, RF), each (len(runs), ticks): the ``rr`` and ``rf`` of :meth:`many`'s rows,
        bit for bit, as arrays (a planner reads these alone)."""
        runs = [(int(key), plan) for key, plan in runs]
        if self._forks is None or len(runs) < 2:
            return rates_of_rows(self.many(ticks, runs, on_plan), ticks)
        _, counts = self._counts(ticks, runs, on_plan)
        n_succ, n_succ_accepted, n_window = (np.stack(c, axis=1) for c in zip(*counts, strict=True))
        return metrics.ratios(n_succ_accepted, n_succ), metrics.ratios(n_succ, n_window)

    def _counts(
        self,
        ticks: int,
        runs: list[tuple[int, Any]],
        on_plan: Callable[[list[Any]], None] | None,
    ) -> tuple[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """Every fork of ``runs`` (two or more) in one batch: the first simulated tick and,
        for each tick, (|I^succ|, |I^succ and accepted|, |I^rej window|), each (B,)."""
        self._check(ticks)
        snap = self._snapshot()
        if snap.pending is None:
            raise RuntimeError("the simulator can only be called between decide() and respond()")
        share = bool(getattr(self._model.policy, "deterministic", False))
        self._prepare(snap.config.seed, snap.tick, [key for key, _ in runs])
        self._running = True
        try:
            # each fork's streams start at their key's first draws and keep what the key
            # keeps: a twin of the key's streams (which starts there without a rewind)
            kept, t = self._streams, snap.tick
            draws = TwinDraws([kept[t, key] for key, _ in runs])
            blind = WithoutFeedback(self._model.policy)
            batch = self._forks([snap] * len(runs), draws.streams, blind)
            batch.share_entrants = True
            batch.episodes.together = draws  # the forks' uniforms at once
            forks = list(batch.models)
            plans = [plan for _, plan in runs]
            policy = self._model.policy
            counts = []
            for i in range(ticks):
                first = i == 0 and share
                if on_plan is not None:
                    on_plan(plans)
                if rows_ready(policy):  # every fork's rows in one call, the first tick's too
                    batch.respond(batch.advise_rows(policy.recommend_rows))
                else:
                    recs = []
                    for fork, plan in zip(forks, plans, strict=True):
                        if on_plan is not None:
                            on_plan([plan])
                        if first and plan is not None:
                            recs.append(self._first_advice(fork, plan))
                        else:
                            recs.append(_recommend(fork, fork.pending_observation()))
                    batch.respond(recs)
                # the last tick is read only for its counts: no observation is built
                batch.decide(observe=i < ticks - 1, lazy=True)
                counts.append(batch.success_counts())
            for fork in forks:  # done with: no fork is left in a cycle with the batch
                fork._batch = None
            draws.streams = []  # nor a twin with the draws that hold it
            return t + 1, counts
        finally:
            self._running = False


def rates_of_rows(rows: list[list[dict[str, float]]], ticks: int) -> tuple[np.ndarray, np.ndarray]:
    """(RR, RF), each (len(rows), ticks): the ``rr`` and ``rf`` of rollouts' rows (a
    simulator's, one list of ``ticks`` rows a rollout), as :meth:`Simulator.rates` gives
    them."""
    rr = np.array([[row["rr"] for row in r] for r in rows], dtype=float)
    rf = np.array([[row["rf"] for row in r] for r in rows], dtype=float)
    return rr.reshape(len(rows), ticks), rf.reshape(len(rows), ticks)


def _recommend(fork: Forkable, obs: RecourseObs) -> Recommendation | None:
    if obs.n_rejected == 0:
        return None  # nobody to advise: the policy is not asked
    return fork.policy.recommend(obs, fork.streams.policy)


def _rates_of(
    tick: int, n_succ: np.ndarray, n_succ_accepted: np.ndarray, n_window: np.ndarray
) -> list[dict[str, float]]:
    """Each fork's :func:`_rates` (counts (B,) each), eqs. 2-3 of all at once."""
    rr = metrics.ratios(n_succ_accepted, n_succ).tolist()
    rf = metrics.ratios(n_succ, n_window).tolist()
    each = zip(n_succ.tolist(), n_succ_accepted.tolist(), n_window.tolist(), rr, rf, strict=True)
    return [
        {"tick": tick, "n_succ": s, "n_succ_accepted": a, "n_rejected_window": w, "rr": r, "rf": f}
        for s, a, w, r, f in each
    ]


def _rates(tick: int, n_succ: int, n_succ_accepted: int, n_window: int) -> dict[str, float]:
    """One rollout's row of tick ``tick``: its counts and eqs. 2-3."""
    counts = (np.array([n], dtype=np.int64) for n in (n_succ, n_succ_accepted, n_window))
    return _rates_of(tick, *counts)[0]
