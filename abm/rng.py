"""Named random streams derived from one integer seed.

Each stream is ``SeedSequence(seed, spawn_key=(crc32(name),))``: adding a stream
never shifts the others, and switching the policy leaves the arrival and behaviour
draws untouched, so runs of different policies on one seed are paired.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

STREAMS = ("arrivals", "ties", "policy", "dropout", "implementation", "reapply", "mesa")


def stream_seed(seed: int, name: str) -> np.random.SeedSequence:
    """The SeedSequence of stream ``name`` under ``seed``."""
    return np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),))


def stream(seed: int, name: str) -> np.random.Generator:
    """A fresh PCG64 generator for stream ``name`` under ``seed``."""
    return np.random.Generator(np.random.PCG64(stream_seed(seed, name)))


class Streams:
    """The generators of one episode, one attribute per name in :data:`STREAMS`."""

    def __init__(self, seed: int, names: tuple[str, ...] = STREAMS) -> None:
        self.seed = seed
        self._gens = {name: stream(seed, name) for name in names}
        for name in names:
            self._expose(name)

    def reuse(self, key: Any, draw: Callable[[], Any]) -> Any:
        """``draw()``: an episode's draws are its own (a planner's rollout streams keep
        what rollouts with one key draw alike, :meth:`abm.planning.RolloutStreams.reuse`)."""
        return draw()

    def __getattr__(self, name: str) -> np.random.Generator:
        if name.startswith("_"):  # not a stream (e.g. copy's probes before __init__ ran)
            raise AttributeError(name)
        try:
            return self._gens[name]
        except KeyError:
            raise AttributeError(f"no random stream named {name!r}") from None

    def get(self, name: str) -> np.random.Generator:
        """The named stream, created on first use (for policies' own extra streams)."""
        if name not in self._gens:
            self._gens[name] = stream(self.seed, name)
            self._expose(name)
        return self._gens[name]

    def _expose(self, name: str) -> None:
        """Make stream ``name`` a plain attribute (read several times a tick) where it is
        free; other names stay reachable through ``__getattr__`` and :meth:`get`."""
        if name.isidentifier() and not name.startswith("_") and name not in self.__dict__:
            if not hasattr(type(self), name):
                self.__dict__[name] = self._gens[name]
