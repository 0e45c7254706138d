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

from abm import segments
from abm.interfaces import HistoryWindow
from abm.population import Population, filled, join_columns

#: from this many waiting rows, the pool is kept in parts between ticks
GATHER_FROM = 50_000
# the Population columns of a HistoryWindow
_HISTORY_COLUMNS = ("ids", "X_obs", "last_tick", "n_apps", "goal", "X_cf")


class Pool:
    """The waiting candidates of B episodes of one scenario (one flat :class:`Population`,
    each episode's rows together and in its own order: :class:`abm.batch.Segments`), and
    the rows that dropped out in the last T ticks, as (tick, rows, rows per episode).

    One episode (``B = 1``) is the case of a run made alone; :meth:`episode` is the view a
    model of a batch keeps (``model.pool``).
    """

    def __init__(
        self,
        n_features: int,
        validity: int,
        waiting: Population | None = None,
        dropped: Iterable[tuple] = (),
        counts: np.ndarray | None = None,
    ) -> None:
        self.n_features, self.validity = n_features, validity
        pop = Population.empty(n_features) if waiting is None else waiting
        self._parts = [pop]
        #: waiting rows per episode (B,)
        self.counts = np.array([len(pop)], dtype=np.int64) if counts is None else counts
        self.B = self.counts.shape[0]
        # (tick, rows, rows per episode); a run alone's (tick, rows) pairs are one episode's
        self.dropped: deque[tuple[int, Population, np.ndarray]] = deque(
            entry if len(entry) == 3 else (*entry, np.array([len(entry[1])], dtype=np.int64))
            for entry in dropped
        )

    def fork(self) -> Pool:
        """A pool whose changes leave this one alone (populations are never written in place)."""
        return Pool(self.n_features, self.validity, self.waiting, self.dropped, self.counts)

    def episode(self, b: int) -> EpisodePool:
        """What episode ``b`` sees of the pool (a live view)."""
        return EpisodePool(self, b)

    @property
    def waiting(self) -> Population:
        """The waiting candidates, one row each (parts left by the last tick joined once)."""
        parts = self._parts
        if len(parts) > 1:
            parts[:] = [Population.concat(parts, self.n_features)]
        return parts[0]

    @property
    def n_waiting(self) -> int:
        return sum(map(len, self._parts))

    def column(self, name: str) -> np.ndarray:
        """One column of the waiting pool, (w,), without joining its parts."""
        parts = self._parts
        if len(parts) == 1:
            return parts[0].data[name]
        return np.concatenate([p.data[name] for p in parts])

    def split(self, reapplying: np.ndarray) -> tuple[Population, np.ndarray]:
        """Take out the rows where ``reapplying`` (w,) holds; returns them, in pool order,
        and how many of them each episode has (B,)."""
        parts = self._parts
        if self.B == 1:
            n = np.count_nonzero(reapplying)
            back = np.array([n], dtype=np.int64)
            self.counts = np.array([reapplying.shape[0] - n], dtype=np.int64)
        else:
            back = segments.count(reapplying, self.counts)
            self.counts = self.counts - back
        if len(parts) == 1:
            pool = parts[0]
            returning, self._parts = pool.take(reapplying), [pool.take(~reapplying)]
            return returning, back
        bounds = np.cumsum([0] + [len(p) for p in parts])
        masks = [reapplying[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        z = self.n_features
        self._parts = [Population.gather(parts, [(~m).nonzero()[0] for m in masks], z)]
        return Population.gather(parts, [m.nonzero()[0] for m in masks], z), back

    def dropped_in_window(self, t: int) -> np.ndarray:
        """Rows per episode (B,) that dropped out at ticks t - T .. t - 1 (older ones leave
        the window)."""
        window = self.dropped
        while window and window[0][0] < t - self.validity:
            window.popleft()
        out = np.zeros(self.B, dtype=np.int64)
        for _, _, counts in window:
            out += counts
        return out

    def add(
        self,
        t: int,
        stayers: Population,
        leaving: Population,
        stay_counts: np.ndarray,
        leave_counts: np.ndarray,
    ) -> None:
        """Tick ``t``'s rejected: ``stayers`` join the waiting, ``leaving`` the window; both
        flat, with their rows per episode (B,)."""
        self.dropped.append((t, leaving, leave_counts))
        if self.B > 1:  # each episode's stayers after its own waiting rows
            waiting = self.waiting
            order = interleave(self.counts, stay_counts)
            both = Population.concat([waiting, stayers], self.n_features)
            self._parts = [both.take(order) if len(stayers) else waiting]
            self.counts = self.counts + stay_counts
            return
        self.counts = self.counts + stay_counts
        parts = [*self._parts, stayers]
        if sum(map(len, parts)) < GATHER_FROM:
            self._parts = [Population.concat(parts, self.n_features)]
        else:  # joined by the next tick's split (or a first look)
            self._parts = [p for p in parts if len(p)]

    def windows(self, columns: tuple[str, ...]) -> tuple[Population, np.ndarray]:
        """Every episode's :class:`HistoryWindow` rows at once: ``columns`` of the waiting
        and the dropped-out window, episode b's rows together in the order its window has
        them (waiting, then each tick's dropped), and their number per episode (B,)."""
        parts = [self.waiting] + [rows for _, rows, _ in self.dropped]
        counts = [self.counts] + [per for _, _, per in self.dropped]
        rows = Population.concat(parts, self.n_features, only=columns)
        total = np.add.reduce(counts)  # elementwise over the parts: (B,)
        if self.B == 1 or len(parts) == 1:
            return rows, total
        return rows.take(interleave(*counts)), total

    def history_fn(self, b: int = 0):
        """A function giving episode ``b``'s HistoryWindow as the pool stands now (a
        snapshot: stored populations are never modified in place, so holding them is
        enough)."""
        if self.B == 1:
            dropped = tuple((t, rows) for t, rows, _ in self.dropped)
            return functools.partial(_history, self.waiting, dropped, self.n_features)
        # the batch's arrays as they stand (never written in place): cut out when asked
        return functools.partial(
            _episode_history, self.waiting, self.counts, tuple(self.dropped), b, self.n_features
        )


class EpisodePool:
    """Episode ``b`` of a :class:`Pool`: its waiting rows and its dropped-out window, as a
    run of that episode alone would hold them (views, no copies)."""

    __slots__ = ("_pool", "_b")

    def __init__(self, pool: Pool, b: int) -> None:
        self._pool, self._b = pool, b

    @property
    def n_features(self) -> int:
        return self._pool.n_features

    @property
    def waiting(self) -> Population:
        pool = self._pool
        if pool.B == 1:
            return pool.waiting
        return _rows_of(pool.waiting, pool.counts, self._b)

    @property
    def n_waiting(self) -> int:
        return int(self._pool.counts[self._b])

    @property
    def dropped(self) -> tuple[tuple[int, Population], ...]:
        pool, b = self._pool, self._b
        if pool.B == 1:
            return tuple((t, rows) for t, rows, _ in pool.dropped)
        return tuple((t, _rows_of(rows, counts, b)) for t, rows, counts in pool.dropped)

    def history_fn(self):
        return self._pool.history_fn(self._b)

    def fork(self) -> Pool:
        """A pool of this episode alone whose changes leave the batch alone."""
        pool = self._pool
        return Pool(pool.n_features, pool.validity, self.waiting, self.dropped)


def _rows_of(pop: Population, counts: np.ndarray, b: int) -> Population:
    """Episode ``b``'s rows of the flat ``pop`` (rows per episode ``counts``), as views."""
    lo = int(counts[:b].sum())
    hi = lo + int(counts[b])
    return pop.rows(lo, hi)


def interleave(*counts: np.ndarray) -> np.ndarray:
    """The order that turns ``concat(a, b, ...)`` of flat arrays, with ``counts`` (B,) rows
    per episode each, into each episode's a-rows, then b-rows, ..., episode by episode: an
    index array of length sum(c.sum() for c in counts)."""
    B = counts[0].shape[0]
    each = np.arange(B)
    index = np.concatenate([each.repeat(c) for c in counts])
    return index.argsort(kind="stable")


def _episode_history(waiting, counts, dropped, b: int, n_features: int) -> HistoryWindow:
    """Episode ``b``'s :func:`_history` from the batch's flat pool."""
    mine = tuple((t, _rows_of(rows, per, b)) for t, rows, per in dropped)
    return _history(_rows_of(waiting, counts, b), mine, n_features)


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
