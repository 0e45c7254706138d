"""Named random streams derived from one integer seed.

Each stream is ``SeedSequence(seed, spawn_key=(crc32(name),))``: adding a stream
never shifts the others, and switching the policy leaves the arrival and behaviour
draws untouched, so runs of different policies on one seed are paired.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from abm.compiled import compiled

STREAMS = ("arrivals", "ties", "policy", "dropout", "implementation", "reapply", "mesa")

# SeedSequence's hash constants (O'Neill's seed_seq, as numpy.random.bit_generator has
# them), for seeding many streams in one pass (:func:`seed_states`)
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4  # SeedSequence's default pool size, in 32-bit words
_MASK = 0xFFFFFFFF


def stream_seed(seed: int, name: str) -> np.random.SeedSequence:
    """The SeedSequence of stream ``name`` under ``seed``."""
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),))


def _words(value: int) -> list[int]:
    """A non-negative integer as SeedSequence reads it: 32-bit words, lowest first."""
    words = [value & 0xFFFFFFFF]
    value >>= 32
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return words


def seed_states(seed: int, spawn_keys: Sequence[tuple[int, ...]], loop: bool = False) -> np.ndarray:
    """(K, 4) uint64: the words ``SeedSequence(seed, spawn_key=k).generate_state(4,
    np.uint64)`` gives for each of ``spawn_keys`` (what ``PCG64`` seeds itself from),
    bit for bit, for all K keys at once.

    One SeedSequence costs 15-30 us of Python-level hashing; a forecast seeds about a
    thousand streams a request. Here the part of the hash that reads the seed alone is
    done once, and each later word of entropy is mixed into every key's pool as one
    uint32 array operation (:func:`_mix_words`). ``loop``: where the keys are words, the
    mixing is one compiled loop (:func:`abm.kernels.seed_rows`, for a batch's callers,
    which have Numba loaded), the same words.
    """
    if int(seed) < 0:
        raise _negative()
    run = _words(int(seed))
    # with a spawn key, the seed's words are padded to the pool's size (numpy >= 1.19)
    head = run + [0] * (_POOL - len(run))
    pool, const = _seed_pool(tuple(head[:_POOL]))
    lengths = {len(key) for key in spawn_keys}
    if len(lengths) == 1 and 0 not in lengths and not head[_POOL:]:
        try:  # one word each (the usual keys)?
            keys = np.array(spawn_keys, dtype=np.int64)
        except OverflowError:  # a part past 63 bits: word by word below
            keys = None
        if keys is not None:
            if keys.min() < 0:
                raise _negative()
            if keys.max() <= _MASK:
                return _states(pool, const, keys.astype(np.uint32), loop)
    if any(min(key, default=0) < 0 for key in spawn_keys):
        raise _negative()
    out = np.empty((len(spawn_keys), _POOL), dtype=np.uint64)
    groups: dict[int, list[int]] = {}
    tails = []
    for i, key in enumerate(spawn_keys):
        tail = head[_POOL:] + [w for part in key for w in _words(int(part))]
        tails.append(tail)
        groups.setdefault(len(tail) if key else -1, []).append(i)
    for length, members in groups.items():
        if length < 0:  # no spawn key: the seed unpadded, as numpy takes it
            for i in members:
                seq = np.random.SeedSequence(int(seed))
                out[i] = seq.generate_state(_POOL, np.uint64)
            continue
        words = np.array([tails[i] for i in members], dtype=np.uint32).reshape(-1, length)
        out[members] = _generate(_mix_words(pool, const, words))
    return out


def _negative() -> ValueError:
    return ValueError("seed_states: seeds and spawn keys are non-negative integers")


def seed_states_many(seeds: Sequence[int], spawn_keys: Sequence[tuple[int, ...]]) -> np.ndarray:
    """(S, K, 4) uint64: :func:`seed_states` ``(seeds[s], spawn_keys)`` for every seed.

    Where every seed fits in one 32-bit word and every key is one word (an episode's
    streams), the seeds' own hashing is one pass too (:func:`_seed_pools`): a batch of
    new episodes is seeded for about the cost of four. Otherwise (or for fewer than 8
    seeds, where the pass's 130 array operations cost more) seed by seed."""
    S, K = len(seeds), len(spawn_keys)
    plain = all(len(key) == 1 for key in spawn_keys) and S >= 8 and K > 0
    if plain:
        heads = np.array([int(x) for x in seeds], dtype=np.int64)
        keys = np.array(spawn_keys, dtype=np.int64).reshape(K)
        plain = heads.min() >= 0 and heads.max() <= _MASK and keys.min() >= 0
        plain = plain and keys.max() <= _MASK
    if not plain:
        return np.stack([seed_states(x, spawn_keys) for x in seeds]) if S else _none(K)
    # each seed's words padded to the pool's size, as with a spawn key (seed_states)
    head = np.zeros((S, _POOL), dtype=np.uint32)
    head[:, 0] = heads
    pools, const = _seed_pools(head)
    words = np.tile(keys.astype(np.uint32), S)[:, None]  # (S K, 1): seed-major
    return _generate(_mix_words(pools.repeat(K, axis=1), const, words)).reshape(S, K, _POOL)


def _none(k: int) -> np.ndarray:
    return np.empty((0, k, _POOL), dtype=np.uint64)


def _seed_pools(heads: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_seed_pool` of S heads (S, 4) uint32 at once: the pools (4, S) uint32 and
    the hash constant then (the same for every head: constants never read the data)."""
    consts = _hash_consts(_INIT_A, _MULT_A, _POOL * _POOL)
    pool = [_hashed(heads[:, j], consts, j) for j in range(_POOL)]
    step = _POOL
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                value = _hashed(pool[src], consts, step)
                out = np.uint32(_MIX_L) * pool[dst] - np.uint32(_MIX_R) * value
                pool[dst] = out ^ (out >> np.uint32(16))
                step += 1
    return np.stack(pool), int(consts[step])


def _hashed(values: np.ndarray, consts: np.ndarray, step: int) -> np.ndarray:
    """:func:`_hashmix` of uint32 ``values`` as hash step ``step`` (uint32: wraps)."""
    out = (values ^ consts[step]) * consts[step + 1]
    return out ^ (out >> np.uint32(16))


@functools.lru_cache(maxsize=64)
def _hash_consts(const: int, mult: int, n: int) -> np.ndarray:
    """(n + 1,) uint32: the hash constant before each of n steps and after the last."""
    out = [const]
    for _ in range(n):
        const = (const * mult) & _MASK
        out.append(const)
    consts = np.array(out, dtype=np.uint32)
    consts.flags.writeable = False
    return consts


def _hashmix(value: int, const: int) -> tuple[int, int]:
    """SeedSequence's hashmix on Python ints: (hashed value, the next constant)."""
    value ^= const
    const = (const * _MULT_A) & _MASK
    value = (value * const) & _MASK
    return value ^ (value >> 16), const


def _mix(x, y):
    out = (_MIX_L * x - _MIX_R * y) & _MASK
    return out ^ (out >> 16)


@functools.lru_cache(maxsize=64)
def _seed_pool(head: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """The pool after SeedSequence.mix_entropy has read the first 4 words of entropy
    ``head`` (the seed's, padded), and the hash constant then."""
    const, pool = _INIT_A, []
    for word in head:
        value, const = _hashmix(word, const)
        pool.append(value)
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                value, const = _hashmix(pool[src], const)
                pool[dst] = _mix(pool[dst], value)
    return tuple(pool), const


def _mix_words(pool: tuple[int, ...] | np.ndarray, const: int, words: np.ndarray) -> np.ndarray:
    """The rest of mix_entropy for K keys: each later word (K, n) mixed into every word
    of the pool (4, K), in numpy's order; ``pool`` one for all (4 words) or each key's
    (4, K) uint32. The constants do not depend on the data, so a word's four hashes are
    one (4, K) operation."""
    k, n = words.shape
    if isinstance(pool, tuple):
        pools = np.repeat(np.array(pool, dtype=np.uint32)[:, None], k, axis=1)
    else:
        pools = pool
    consts = _hash_consts(const, _MULT_A, _POOL * n)
    for j in range(n):
        xor, mult = consts[_POOL * j : _POOL * j + _POOL], consts[_POOL * j + 1 : _POOL * j + 5]
        hashed = (words[:, j] ^ xor[:, None]) * mult[:, None]  # uint32: wraps, never warns
        hashed ^= hashed >> np.uint32(16)
        pools = np.uint32(_MIX_L) * pools - np.uint32(_MIX_R) * hashed
        pools ^= pools >> np.uint32(16)
    return pools


def _states(pool: tuple[int, ...], const: int, words: np.ndarray, loop: bool) -> np.ndarray:
    """(K, 4) uint64: ``_generate(_mix_words(pool, const, words))``, with ``loop`` in one
    compiled loop."""
    if not loop:
        return _generate(_mix_words(pool, const, words))
    mix = _hash_consts(const, _MULT_A, _POOL * words.shape[1])
    gen = _hash_consts(_INIT_B, _MULT_B, 2 * _POOL)
    return compiled("seed_rows")(_column(pool), words, mix, gen)


@functools.lru_cache(maxsize=64)
def _column(pool: tuple[int, ...]) -> np.ndarray:
    """A pool's words as a (4, 1) uint32 column (read only)."""
    out = np.array(pool, dtype=np.uint32)[:, None]
    out.flags.writeable = False
    return out


def _generate(pools: np.ndarray) -> np.ndarray:
    """SeedSequence.generate_state(4, np.uint64) of pools (4, K): (K, 4) uint64."""
    consts = _hash_consts(_INIT_B, _MULT_B, 2 * _POOL)
    words = (pools[[0, 1, 2, 3, 0, 1, 2, 3]] ^ consts[:-1, None]) * consts[1:, None]
    words ^= words >> np.uint32(16)
    # little-endian word pairs, as SeedSequence assembles them
    return np.ascontiguousarray(words.T).astype("<u4").view("<u8").astype(np.uint64)


def stream(seed: int, name: str) -> np.random.Generator:
    """A fresh PCG64 generator for stream ``name`` under ``seed``."""
    return np.random.Generator(np.random.PCG64(stream_seed(seed, name)))


@functools.lru_cache(maxsize=64)
def _spawn_keys(names: tuple[str, ...]) -> tuple[tuple[int], ...]:
    return tuple((zlib.crc32(name.encode()),) for name in names)


class KnownSeed(ISeedSequence):
    """``SeedSequence(seed, spawn_key=key)`` whose generated words are kept: a generator
    seeded from it again (another rollout of the key) starts at the same state without
    hashing anew. ``pcg64``: PCG64's words, hashed already (:func:`seed_states`); the
    SeedSequence itself is made only if other words are asked for."""

    __slots__ = ("_entropy", "_words")

    def __init__(self, seed: int, key: tuple[int, ...], pcg64: np.ndarray | None = None) -> None:
        self._entropy = (seed, key)
        # keyed as the bit generator passes them (PCG64 asks for 4 words of np.uint64)
        self._words = {} if pcg64 is None else {(4, np.uint64): pcg64}

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        key = (n_words, dtype)
        words = self._words.get(key)
        if words is None:
            seed, spawn_key = self._entropy
            seq = np.random.SeedSequence(seed, spawn_key=spawn_key)
            words = self._words[key] = seq.generate_state(n_words, dtype)
        return words.copy()


class Streams:
    """The generators of one episode, one attribute per name in :data:`STREAMS`.

    A batch may read a stream's uniforms ahead (:class:`BatchTape`): the stream is then
    lent, and any other read of it (``uniform``, ``get``, the attribute) first gives it
    back, the generator put where the draws taken so far leave it."""

    def __init__(
        self, seed: int, names: tuple[str, ...] = STREAMS, _words: np.ndarray | None = None
    ) -> None:
        self.seed = seed
        keys = _spawn_keys(tuple(names))
        # each stream's seed, hashed for all at once (seed_states, or given by many());
        # its generator is made when the stream is first read (an episode of an RL
        # environment reads five of its seven)
        words = seed_states(seed, keys) if _words is None else _words
        # name -> (spawn key, PCG64's words): a KnownSeed is made with the generator
        self._seeds = dict(zip(names, zip(keys, words, strict=True), strict=True))
        self._gens: dict[str, np.random.Generator] = {}
        self._lent: dict[str, tuple[BatchTape, int]] = {}

    @classmethod
    def many(cls, seeds: Sequence[int], names: tuple[str, ...] = STREAMS) -> list[Streams]:
        """``[Streams(seed) for seed in seeds]``, every stream of every seed hashed in one
        pass (:func:`seed_states_many`): the generators are the same."""
        words = seed_states_many(seeds, _spawn_keys(tuple(names)))
        return [cls(seed, names, words[s]) for s, seed in enumerate(seeds)]

    def _gen(self, name: str) -> np.random.Generator:
        """Stream ``name``'s generator, made now if it was never read (KeyError: none)."""
        gen = self._gens.get(name)
        if gen is None:
            key, words = self._seeds[name]
            seq = KnownSeed(self.seed, key, words)
            gen = self._gens[name] = np.random.Generator(np.random.PCG64(seq))
            self._expose(name)
        return gen

    def reuse(self, key: Any, draw: Callable[[], Any]) -> Any:
        """``draw()``: an episode's draws are its own (a planner's rollout streams keep
        what rollouts with one key draw alike, :meth:`abm.planning.RolloutStreams.reuse`)."""
        return draw()

    def uniform(self, name: str, n: int) -> np.ndarray:
        """``n`` uniforms from stream ``name`` (the engine's draws of one count a row)."""
        if name in self._lent:
            self.give_back(name)
        return self._gen(name).random(n)

    def __getattr__(self, name: str) -> np.random.Generator:
        if name.startswith("_"):  # not a stream (e.g. copy's probes before __init__ ran)
            raise AttributeError(name)
        if name in self._lent:
            return self.give_back(name)
        try:
            return self._gen(name)
        except KeyError:
            raise AttributeError(f"no random stream named {name!r}") from None

    def get(self, name: str) -> np.random.Generator:
        """The named stream, created on first use (for policies' own extra streams)."""
        if name in self._lent:
            return self.give_back(name)
        if name not in self._gens and name not in self._seeds:
            self._gens[name] = stream(self.seed, name)
            self._expose(name)
        return self._gen(name)

    def lend(self, name: str, tape: BatchTape, b: int) -> np.random.Generator:
        """Stream ``name`` read ahead by ``tape`` as its episode ``b`` (given back by any
        other read); returns the generator. A stream lent elsewhere is given back first."""
        if name in self._lent:
            self.give_back(name)
        gen = self._gen(name)
        self._lent[name] = (tape, b)
        self.__dict__.pop(name, None)  # attribute reads now go through __getattr__
        return gen

    def give_back(self, name: str) -> np.random.Generator:
        """Stream ``name`` where the draws taken from its tape leave it (not lent after)."""
        tape, b = self._lent.pop(name)
        tape.release(b)
        self._expose(name)
        return self._gens[name]

    def settle(self) -> None:
        """Every lent stream given back (before the generators are read or copied)."""
        for name in list(self._lent):
            self.give_back(name)

    def __getstate__(self) -> dict[str, Any]:
        self.settle()  # a copy holds generators in place, never a tape
        return self.__dict__

    def _expose(self, name: str) -> None:
        """Make stream ``name`` a plain attribute (read several times a tick) where it is
        free; other names stay reachable through ``__getattr__`` and :meth:`get`."""
        if name.isidentifier() and not name.startswith("_") and name not in self.__dict__:
            if not hasattr(type(self), name):
                self.__dict__[name] = self._gens[name]


class BatchTape:
    """The draws of one stream of B episodes read ahead: ``block`` (B, L) holds each
    episode's next draws, of which ``used[b]`` are taken, so a batch's draws of a tick are
    one gather instead of B generator calls. ``kind`` names the generator's method:
    ``random`` (uniforms) or ``standard_normal``.

    Bit for bit the generators' own draws: both fill their output one value after another
    from the bit stream, so ``f(n)`` then ``f(m)`` is ``f(n + m)``. A lent generator
    stands after its block; given back (:meth:`release`), it is put after the draws
    taken: a uniform is one 64-bit step of PCG64, so it steps back by those not taken; a
    normal may take more than one, so it starts again where it was lent and draws as
    many as were taken."""

    def __init__(
        self, streams: Sequence[Streams], name: str, length: int = 512, kind: str = "random"
    ) -> None:
        if kind not in ("random", "standard_normal"):
            raise ValueError(f"kind = {kind!r}: allowed: 'random', 'standard_normal'")
        self.streams, self.name, self.length, self.kind = list(streams), name, length, kind
        B = len(self.streams)
        self.block = np.empty((B, length))
        self.used = np.zeros(B, dtype=np.int64)
        self.lent = np.zeros(B, dtype=bool)
        # normals only: each generator's state when lent and the draws taken since
        self._origin: list[Any] = [None] * B
        self._taken = np.zeros(B, dtype=np.int64)

    def draw(self, counts: np.ndarray) -> np.ndarray:
        """(counts.sum(),) draws: episode b's next ``counts[b]``, episode after episode."""
        short, top = compiled("tape_short")(self.lent, self.used, counts, self.length)
        if top > self.length:  # a larger draw than a block: blocks of twice its size
            for b in self.lent.nonzero()[0].tolist():
                self.streams[b].give_back(self.name)
            self.length = 2 * top
            self.block = np.empty((len(self.streams), self.length))
            short = np.arange(counts.shape[0])
        for b in short.tolist():
            self._refill(b)
        self._taken += counts
        # each episode's next draws from its row of the block, in one compiled gather
        return compiled("tape_take")(self.block, self.used, counts)

    def _refill(self, b: int) -> None:
        """Episode b's block topped up: the draws not taken move to its front, the
        generator's next ones fill the rest (lending the stream first if need be)."""
        row, used = self.block[b], int(self.used[b])
        if self.lent[b]:
            gen = self.streams[b]._gens[self.name]
            row[: self.length - used] = row[used:].copy()
            row[self.length - used :] = getattr(gen, self.kind)(used)
        else:
            gen = self.streams[b].lend(self.name, self, b)
            if self.kind != "random":
                self._origin[b], self._taken[b] = gen.bit_generator.state, 0
            row[:] = getattr(gen, self.kind)(self.length)
        self.used[b], self.lent[b] = 0, True

    def release(self, b: int) -> None:
        """Episode ``b``'s generator put after the draws taken (called by its Streams)."""
        gen = self.streams[b]._gens[self.name]
        if self.kind == "random":
            ahead = self.length - int(self.used[b])
            if ahead:  # PCG64 advances modulo 2**128: a step of 2**128 - n goes back n
                gen.bit_generator.advance(2**128 - ahead)
        else:
            gen.bit_generator.state = self._origin[b]
            gen.standard_normal(int(self._taken[b]))
            self._origin[b] = None
        self.lent[b] = False
