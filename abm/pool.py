"""The waiting pool: candidates rejected and still trying, and those who dropped out
inside the validity window (they still count in RF's window, eq. 3).

Large pools stay in parts between ticks (from :data:`GATHER_FROM` rows) and are split by
one gather per column (:meth:`Population.gather`) instead of a concatenation and two
takes; the bits are the same either way. Shapes: w waiting, a applicants, n rejected,
z features.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable

import numpy as np

from abm.interfaces import HistoryWindow
from abm.population import Population, filled, join_columns

#: from this many waiting rows, the pool is kept in parts between ticks
GATHER_FROM = 50_000
# the Population columns of a HistoryWindow
_HISTORY_COLUMNS = ("ids", "X_obs", "last_tick", "n_apps", "goal", "X_cf")


class Pool:
    """Waiting candidates (one :class:`Population`, or parts of one) and the dropped-out
    rows of the last T ticks, as (tick, rows) pairs."""

    def __init__(
        self,
        n_features: int,
        validity: int,
        waiting: Population | None = None,
        dropped: Iterable[tuple[int, Population]] = (),
    ) -> None:
        self.n_features, self.validity = n_features, validity
        self._parts = [Population.empty(n_features) if waiting is None else waiting]
        self.dropped: deque[tuple[int, Population]] = deque(dropped)

    def fork(self) -> Pool:
        """A pool whose changes leave this one alone (populations are never written in place)."""
        return Pool(self.n_features, self.validity, self.waiting, self.dropped)

    @property
    def waiting(self) -> Population:
        """The waiting candidates, one row each (parts left by the last tick joined once)."""
        parts = self._parts
        if len(parts) > 1:
            parts[:] = [Population.concat(parts, self.n_features)]
        return parts[0]

    @waiting.setter
    def waiting(self, pop: Population) -> None:
        self._parts = [pop]

    @property
    def n_waiting(self) -> int:
        return sum(map(len, self._parts))

    def column(self, name: str) -> np.ndarray:
        """One column of the waiting pool, (w,), without joining its parts."""
        parts = self._parts
        if len(parts) == 1:
            return parts[0].data[name]
        return np.concatenate([p.data[name] for p in parts])

    def split(self, reapplying: np.ndarray) -> Population:
        """Take out the rows where ``reapplying`` (w,) holds; returns them, in pool order."""
        parts = self._parts
        if len(parts) == 1:
            pool = parts[0]
            returning, self.waiting = pool.take(reapplying), pool.take(~reapplying)
            return returning
        bounds = np.cumsum([0] + [len(p) for p in parts])
        masks = [reapplying[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        z = self.n_features
        self.waiting = Population.gather(parts, [(~m).nonzero()[0] for m in masks], z)
        return Population.gather(parts, [m.nonzero()[0] for m in masks], z)

    def dropped_in_window(self, t: int) -> int:
        """Rows that dropped out at ticks t - T .. t - 1 (older ones leave the window)."""
        window = self.dropped
        while window and window[0][0] < t - self.validity:
            window.popleft()
        return sum(len(p) for _, p in window)

    def add(self, t: int, stayers: Population, leaving: Population) -> None:
        """Tick ``t``'s rejected: ``stayers`` join the waiting, ``leaving`` the window."""
        self.dropped.append((t, leaving))
        parts = [*self._parts, stayers]
        if sum(map(len, parts)) < GATHER_FROM:
            self.waiting = Population.concat(parts, self.n_features)
        else:  # joined by the next tick's split (or a first look)
            self._parts = [p for p in parts if len(p)]

    def history_fn(self):
        """A function giving the HistoryWindow of the pool as it stands now (a snapshot:
        stored populations are never modified in place, so holding them is enough)."""
        return functools.partial(_history, self.waiting, tuple(self.dropped), self.n_features)


def _history(waiting: Population, dropped: tuple, n_features: int) -> HistoryWindow:
    """Rejected candidates still inside the validity window, as last seen."""
    parts = [p.data for p in (waiting, *(p for _, p in dropped)) if len(p)]
    h = join_columns(parts or [Population.empty(n_features).data], _HISTORY_COLUMNS)
    return HistoryWindow(
        ids=h["ids"],
        X=h["X_obs"],
        last_tick=h["last_tick"],
        n_applications=h["n_apps"],
        goal=h["goal"],
        X_cf=h["X_cf"],
    )


def advised_rows(
    applicants: Population,
    rej: np.ndarray,
    dropped: np.ndarray,
    goal: np.ndarray,
    X_cf: np.ndarray,
    advised: np.ndarray,
    t: int,
    issued: dict[str, np.ndarray] | None = None,
) -> tuple[Population, Population, np.ndarray]:
    """(stayers, leaving, order): the rejected rows (``rej``, n) with this tick's advice
    (goal (n,), X_cf (n, z), advised (n,)) and application, split by ``dropped`` (n,).

    One take of every column for both parts (stayers first, then the dropped, each in
    applicant order), split into views; ``issued`` holds extra columns (n,) over the
    rejected. ``order`` (n,) holds each row's position among the rejected.
    """
    stay, leave = (~dropped).nonzero()[0], dropped.nonzero()[0]
    order = np.concatenate([stay, leave])
    rows = rej.take(order)
    X_obs = applicants.X_obs.take(rows, axis=0)
    replace = {
        "X_obs": X_obs,
        "X": X_obs,  # seen at this application; implementation gives stayers a new X
        "X_cf": X_cf.take(order, axis=0),
        "goal": goal.take(order),
        "advised": advised.take(order),
        "n_apps": applicants.n_apps.take(rows) + 1,
        "last_tick": filled(rows.shape[0], t, np.int64),
    }
    if issued:
        replace.update({k: v.take(order) for k, v in issued.items()})
    return (*applicants.take(rows, replace).split(stay.shape[0]), order)
