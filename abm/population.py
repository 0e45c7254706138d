"""The candidates' state as one struct of numpy arrays (one row per candidate).

Later extensions (a group label, a hidden true qualification) are new columns in
:data:`SCHEMA`; every operation below works column-wise and needs no change.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

# column -> (dtype, has a feature axis)
SCHEMA: dict[str, tuple[Any, bool]] = {
    "ids": (np.int64, False),
    "X_obs": (np.float64, True),  # features at last application: what the decision-maker saw
    "X": (np.float64, True),  # true current features, hidden until the next application
    "X_cf": (np.float64, True),  # last recommendation
    "goal": (np.float64, False),  # last goal score (NaN: no advice)
    "advised": (np.bool_, False),
    "implemented": (np.bool_, False),  # every recommended change succeeded
    "last_tick": (np.int64, False),
    "n_apps": (np.int64, False),
    "entered": (np.int64, False),
    "effort": (np.float64, False),  # cumulative realised effort sum |dx| d over successes
    "score_now": (np.float64, False),  # M(X): drives the reapplication gap
    "risk_aversion": (np.float64, False),  # the candidate's own trait (scenario risk_aversion)
    "group": (np.int64, False),  # group id (world extensions §3; 0 without groups)
}


class Population:
    """Rows of candidates; ``pop.X`` is shape (n, z), the other columns shape (n,).

    Stages that change a column either work on a fresh copy (``take`` with indices) or
    put a new array in its place; they never write into the arrays of a stored population.
    """

    __slots__ = ("data", "n_features")

    def __init__(self, data: dict[str, np.ndarray], n_features: int) -> None:
        self.data = data
        self.n_features = n_features

    @classmethod
    def empty(cls, n_features: int, n: int = 0) -> Population:
        """n rows of zeros (no rows by default)."""
        if n == 0:
            # zero-length arrays are immutable in effect, so one set serves every caller
            return cls(dict(_empty_columns(n_features)), n_features)
        data = {
            name: np.zeros((n, n_features) if feat else n, dtype=dtype)
            for name, (dtype, feat) in SCHEMA.items()
        }
        return cls(data, n_features)

    @classmethod
    def entrants(
        cls,
        ids: np.ndarray,
        X: np.ndarray,
        tick: int,
        risk_aversion: np.ndarray,
        group: np.ndarray | None = None,
        extra: dict[str, np.ndarray] | None = None,
    ) -> Population:
        """New candidates with ids (n,), features X (n, z), traits (n,) and groups (n,)
        (None: all 0), entering at ``tick``. ``extra`` holds columns (n,) beyond
        :data:`SCHEMA` that a world extension keeps; every row of a run must have them."""
        n, z = X.shape
        zeros_i = np.zeros(n, dtype=np.int64)
        zeros_b = np.zeros(n, dtype=np.bool_)
        data = {
            "ids": ids,
            "X_obs": X,
            "X": X,
            "X_cf": X,
            "goal": filled(n, np.nan, np.float64),
            "advised": zeros_b,
            "implemented": zeros_b,
            "last_tick": zeros_i,
            "n_apps": zeros_i,
            "entered": filled(n, tick, np.int64),
            "effort": np.zeros(n),
            "score_now": np.zeros(n),
            "risk_aversion": risk_aversion,
            "group": zeros_i if group is None else group,
        }
        if extra:
            data.update(extra)
        return cls(data, z)

    def __getattr__(self, name: str) -> np.ndarray:
        if name == "data":  # not set yet (copy, pickle): looking it up here would recurse
            raise AttributeError(name)
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return self.data["ids"].shape[0]

    def take(self, index: np.ndarray, replace: dict[str, np.ndarray] | None = None) -> Population:
        """Rows selected by a bool mask or an index array.

        Arrays of a stored population are never modified in place, so an all-True mask
        shares them instead of copying (at T = 1 everyone waiting reapplies every tick).
        ``replace`` holds new columns for the selected rows (already in their order):
        those columns are used as given instead of being taken.
        """
        if index.dtype == np.bool_:
            n = np.count_nonzero(index)
            if n == index.shape[0] and not replace:
                return Population(dict(self.data), self.n_features)
            if n == 0:
                return Population.empty(self.n_features)
            index = index.nonzero()[0]  # once, instead of once per column
        if replace:
            data = {
                k: replace[k] if k in replace else v.take(index, axis=0)
                for k, v in self.data.items()
            }
        else:
            data = {k: v.take(index, axis=0) for k, v in self.data.items()}
        return Population(data, self.n_features)

    def rows(self, lo: int, hi: int) -> Population:
        """Rows [lo, hi) as views, each column cut when first read (a batch's episode of
        a flat population, abm.batch)."""
        return Population(_RowsOf(self.data, lo, hi), self.n_features)

    def split(self, at: int) -> tuple[Population, Population]:
        """(rows [0, at), rows [at, n)): views, so no copy is made.

        For a population just taken (fresh arrays): the two parts are written or stored
        independently, as their rows do not overlap.
        """
        head = {k: v[:at] for k, v in self.data.items()}
        tail = {k: v[at:] for k, v in self.data.items()}
        return Population(head, self.n_features), Population(tail, self.n_features)

    @staticmethod
    def concat(
        parts: list[Population],
        n_features: int,
        same_as: dict[str, str] | None = None,
        only: tuple[str, ...] | None = None,
    ) -> Population:
        """Rows of all parts in order (a new Population; a lone part shares its arrays).

        ``same_as`` maps a column to another whose array it shares in the result (e.g.
        ``{"X_obs": "X"}``): the parts' own values of that column are not copied. ``only``
        names the columns to keep (default: all); the result has just those.
        """
        first_part = parts[0] if parts else None
        if len(parts) > 1 and len(set(map(id, parts))) == 1:
            # one part over and over (forks of one snapshot): checked once, not per part
            columns = [first_part.data] * len(parts) if len(first_part) else []
        else:
            columns = [p.data for p in parts if len(p)]
        if not columns:
            empty = Population.empty(n_features)
            return (
                empty if only is None else Population({k: empty.data[k] for k in only}, n_features)
            )
        first = columns[0]
        names = list(first) if only is None else [k for k in first if k in only]
        if len(columns) == 1:
            # every column at once: the common case of one part
            data = dict(first) if only is None else {k: first[k] for k in names}
        else:
            skip = same_as or {}
            data = join_columns(columns, [k for k in names if k not in skip])
        if same_as:
            for k, other in same_as.items():
                if k in names:
                    data[k] = data[other]
            data = {k: data[k] for k in names}  # the usual column order
        return Population(data, n_features)

    def repeated(self, times: int) -> Population:
        """``Population.concat([self] * times, z)``, each column copied when first read."""
        if times == 1 or not len(self):
            return Population.concat([self] * times, self.n_features)
        return Population(_Repeated(self.data, times), self.n_features)

    @staticmethod
    def gather(parts: list[Population], index: list[np.ndarray], n_features: int) -> Population:
        """Rows ``index[i]`` (an index array) of each ``parts[i]``, in order, as one Population.

        The same rows as concatenating the parts and then taking, in one pass over memory
        instead of two: each column is written once, straight into its place.
        """
        n = sum(i.shape[0] for i in index)
        if n == 0:
            return Population.empty(n_features)
        data = {}
        for k, first in parts[0].data.items():
            out = np.empty((n, *first.shape[1:]), dtype=first.dtype)
            at = 0
            for part, rows in zip(parts, index, strict=True):
                m = rows.shape[0]
                # indices are valid: "clip" only spares numpy the buffered copy of "raise"
                part.data[k].take(rows, axis=0, out=out[at : at + m], mode="clip")
                at += m
            data[k] = out
        return Population(data, n_features)


class _Lazy(dict):
    """Columns made from another population's ``data`` (``_src``) on first read: a dict
    whose values are made by :meth:`_made` as they are asked for. Iteration, length and
    membership are the source's."""

    __slots__ = ("_src",)

    def __missing__(self, key: str) -> np.ndarray:
        value = self[key] = self._made(self._src[key])
        return value

    def _made(self, column: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __iter__(self):
        return iter(self._src)

    def __len__(self) -> int:
        return len(self._src)

    def __contains__(self, key: object) -> bool:
        return key in self._src or dict.__contains__(self, key)

    def keys(self):
        return self._src.keys()

    def values(self):
        return [self[k] for k in self._src]

    def items(self):
        return [(k, self[k]) for k in self._src]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def copy(self) -> dict[str, np.ndarray]:
        return dict(self.items())


class _RowsOf(_Lazy):
    """Rows [lo, hi) of ``src``, each column sliced when first read (most of an episode's
    columns are never read in a tick)."""

    __slots__ = ("_lo", "_hi")

    def __init__(self, src: dict[str, np.ndarray], lo: int, hi: int) -> None:
        super().__init__()
        self._src, self._lo, self._hi = src, lo, hi

    def _made(self, column: np.ndarray) -> np.ndarray:
        return column[self._lo : self._hi]


class _Repeated(_Lazy):
    """The rows of ``src`` ``times`` over, each column copied when first read (a planner's
    forks of one snapshot repeat its dropped-out window, which a rollout mostly only
    counts)."""

    __slots__ = ("_times",)

    def __init__(self, src: dict[str, np.ndarray], times: int) -> None:
        super().__init__()
        self._src, self._times = src, times

    def _made(self, column: np.ndarray) -> np.ndarray:
        return _repeat(column, self._times)


def join_columns(parts: list[dict[str, np.ndarray]], names) -> dict[str, np.ndarray]:
    """Columns ``names`` of the column dicts ``parts`` (non-empty), their rows in order.

    A lone part's arrays are shared, not copied (stored arrays are never written in place).
    """
    if len(parts) == 1:
        return {k: parts[0][k] for k in names}
    period = _period(parts)
    if period is None:
        return {k: np.concatenate([p[k] for p in parts]) for k in names}
    # the same parts over and over (forks of one snapshot, abm.planning): one block,
    # copied into place by one broadcast assignment a column (a sixth of the cost)
    out, repeats = {}, len(parts) // period
    for k in names:
        block = parts[0][k] if period == 1 else np.concatenate([p[k] for p in parts[:period]])
        out[k] = _repeat(block, repeats)
    return out


def _repeat(block: np.ndarray, times: int) -> np.ndarray:
    """``np.concatenate([block] * times)``: one broadcast copy into place."""
    column = np.empty((times,) + block.shape, dtype=block.dtype)
    column[...] = block
    return column.reshape((-1,) + block.shape[1:])


def _period(parts: list) -> int | None:
    """P where ``parts`` is its first P objects repeated (``parts[i] is parts[i % P]``)
    at least twice, else None."""
    first, n = parts[0], len(parts)
    period = next((i for i in range(1, n // 2 + 1) if parts[i] is first), None)
    if period is None or n % period:
        return None
    if all(parts[i] is parts[i - period] for i in range(period, n)):
        return period
    return None


def filled(n: int, value: Any, dtype: Any) -> np.ndarray:
    """np.full(n, value, dtype) without its Python overhead (a few per tick)."""
    out = np.empty(n, dtype=dtype)
    out.fill(value)
    return out


@lru_cache(maxsize=8)
def _empty_columns(n_features: int) -> dict[str, np.ndarray]:
    return {
        name: np.zeros((0, n_features) if feat else 0, dtype=dtype)
        for name, (dtype, feat) in SCHEMA.items()
    }
