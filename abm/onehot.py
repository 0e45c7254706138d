"""One-hot groups: an unordered column held as indicator features, exactly one of them 1
(issue 53, item 1; docs/own-data.md, "Categories without an order").

A group of m indicator features is one categorical value. Advice may switch it from its
category a to another b at the declared switching cost c(a, b) in (0, 1) (``inf``: the
switch is not allowed); the candidate then attempts the switch as one change, which
succeeds with eq. 8's probability for a numeric move whose |Δ|·x_cf equals c, so
a = 1/c - 1, and with the target indicator's difficulty d_b. A switch enters eq. 18's cost
and the effort as c·d_b, where L1 on the indicators would charge 2 whatever the pair.
Shapes: n rows, z features, m_g categories of group g.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

#: the switching cost of a pair no cost was given for
DEFAULT_SWITCH_COST = 0.5


class Switch(NamedTuple):
    """A switch open to one row: group ``g``, to its category ``to`` (feature ``column``)
    from ``source`` (feature ``from_column``), at ``cost``."""

    g: int
    to: int
    column: int
    source: int
    from_column: int
    cost: float


@dataclass(frozen=True, eq=False)
class OneHot:
    """The world's one-hot groups: ``groups[g]`` (m_g,) feature indices and ``costs[g]``
    (m_g, m_g), the cost of switching from category a (row) to b (column); 0 on the
    diagonal, ``inf`` where a switch is not allowed. ``names[g]`` names group g in
    messages (the [data] column, or ``"onehot[g]"``)."""

    groups: tuple[np.ndarray, ...]
    costs: tuple[np.ndarray, ...]
    names: tuple[str, ...]

    @classmethod
    def of(cls, config) -> OneHot | None:
        """The groups of a scenario (``onehot``, ``switch_cost``; names from ``[data.onehot]``
        where the world is a table); None when it has none."""
        names = config.data.onehot_names if config.data is not None else ()
        return cls.build(config.onehot, config.switch_cost, names)

    @classmethod
    def build(cls, onehot: tuple, switch_cost: tuple = (), names: tuple = ()) -> OneHot | None:
        """From the scenario's validated tables: ``onehot`` groups of feature indices,
        ``switch_cost`` one m x m table per group (empty: DEFAULT_SWITCH_COST everywhere)."""
        if not onehot:
            return None
        groups = tuple(np.asarray(g, dtype=np.intp) for g in onehot)
        costs = []
        for g, members in enumerate(groups):
            m = members.shape[0]
            if switch_cost:
                c = np.array(switch_cost[g], dtype=float)
            else:
                c = np.full((m, m), DEFAULT_SWITCH_COST)
                np.fill_diagonal(c, 0.0)
            c.setflags(write=False)
            costs.append(c)
        names = tuple(names) or tuple(f"onehot[{g}]" for g in range(len(groups)))
        return cls(groups, tuple(costs), names)

    # -- structure ------------------------------------------------------------------------
    @cached_property
    def columns(self) -> np.ndarray:
        """(sum m_g,) every indicator feature, group by group."""
        return np.concatenate(self.groups)

    def group_of(self, z: int) -> np.ndarray:
        """(z,) int: the group of each feature, -1 for a feature in none."""
        out = np.full(z, -1, dtype=np.intp)
        for g, members in enumerate(self.groups):
            out[members] = g
        return out

    def describe(self, g: int) -> str:
        """Group ``g`` in words: its name and features."""
        return f"{self.names[g]} (features {self.groups[g].tolist()})"

    # -- rows -----------------------------------------------------------------------------
    def encode(self, X: np.ndarray) -> np.ndarray:
        """X (n, z) with each group's indicators set to one-hot of its largest value (ties:
        the first); in place, returned. How a synthetic world makes categories of its
        draws, and how a relaxed counterfactual is read as a category."""
        for g in range(len(self.groups)):
            self.assign(X, g, self.category(X, g))
        return X

    def assign(self, X: np.ndarray, g: int, cats: np.ndarray) -> np.ndarray:
        """X (n, z) with group ``g`` one-hot at categories ``cats`` (n,); in place, returned."""
        members = self.groups[g]
        X[:, members] = 0.0
        X[np.arange(X.shape[0]), members[cats]] = 1.0
        return X

    def category(self, X: np.ndarray, g: int) -> np.ndarray:
        """(n,) int: the active category of group ``g`` in rows X (n, z) (their argmax)."""
        return X[:, self.groups[g]].argmax(axis=1)

    def valid(self, X: np.ndarray) -> np.ndarray:
        """(n,) bool: rows whose every group is exactly one-hot (entries 0 or 1, one 1)."""
        ok = np.ones(X.shape[0], dtype=bool)
        for members in self.groups:
            block = X[:, members]
            ok &= ((block == 0) | (block == 1)).all(axis=1) & (block.sum(axis=1) == 1)
        return ok

    def problem(self, X: np.ndarray, X_cf: np.ndarray) -> tuple[int, str] | None:
        """(the first row, why) where counterfactuals X_cf (n, z) of valid rows X are not
        valid advice (a group not one-hot, or a switch not allowed); None if they are."""
        for g, members in enumerate(self.groups):
            block = X_cf[:, members]
            bad = ~(((block == 0) | (block == 1)).all(axis=1) & (block.sum(axis=1) == 1))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                values = np.round(block[i], 6).tolist()
                return i, f"left group {self.describe(g)} not one-hot: {values}"
            a, b = self.category(X, g), block.argmax(axis=1)
            barred = ~np.isfinite(self.costs[g][a, b])
            if barred.any():
                i = int(np.flatnonzero(barred)[0])
                return i, (
                    f"switched group {self.describe(g)} from category {a[i]} to {b[i]}, "
                    "a switch that is not allowed"
                )
        return None

    def switches(self, x: np.ndarray) -> list[Switch]:
        """Every allowed switch open to one valid row x (z,), group by group."""
        out = []
        for g, members in enumerate(self.groups):
            a = int(x[members].argmax())
            for b, c in enumerate(self.costs[g][a]):
                if b != a and np.isfinite(c):
                    out.append(Switch(g, b, int(members[b]), a, int(members[a]), float(c)))
        return out

    def apply(self, x: np.ndarray, switch: Switch) -> np.ndarray:
        """A copy of row x (z,), or of rows (n, z) in that row's category, with ``switch``
        made."""
        out = np.array(x, dtype=float)
        out[..., switch.from_column], out[..., switch.column] = 0.0, 1.0
        return out

    def snap(self, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """Counterfactuals X_cf (n, z) of valid rows X made valid: each group one-hot of
        its largest entry, a switch that is not allowed undone (the row's category kept).
        A relaxed solver's last step (CARLA's reconstruction of one-hot encodings). A copy."""
        out = np.array(X_cf, dtype=float)
        for g in range(len(self.groups)):
            a, b = self.category(X, g), self.category(out, g)
            self.assign(out, g, np.where(np.isfinite(self.costs[g][a, b]), b, a))
        return out

    # -- what a switch costs and how it is attempted ----------------------------------------
    @staticmethod
    def sizes(onehot: OneHot | None, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """(n, z) :meth:`moves` of ``onehot``, or |x_cf - x| where the world has no groups."""
        return np.abs(np.subtract(X_cf, X)) if onehot is None else onehot.moves(X, X_cf)

    def moves(self, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """(n, z) the size of each change, |x_cf - x| on numeric features; a switch a -> b
        counts c(a, b) on b's indicator and 0 on a's. Eq. 18's cost is moves @ d."""
        out = np.abs(np.subtract(X_cf, X))
        for g, members in enumerate(self.groups):
            a, b = self.category(X, g), self.category(X_cf, g)
            block = np.zeros((X.shape[0], members.shape[0]))
            switched = np.flatnonzero(a != b)
            block[switched, b[switched]] = self.costs[g][a[switched], b[switched]]
            out[:, members] = block
        return out

    def follow(
        self, rows: np.ndarray, cols: np.ndarray, x_cf: np.ndarray, ok: np.ndarray, z: int
    ) -> np.ndarray:
        """``ok`` (c,) of the changed entries (``rows``, ``cols``, new values ``x_cf``, each
        (c,)) with each switch's source indicator (1 -> 0) taking its target's outcome: a
        switch is one change, made or not. A copy."""
        g = self.group_of(z)[cols]
        target, source = (g >= 0) & (x_cf == 1.0), (g >= 0) & (x_cf == 0.0)
        out = np.array(ok, dtype=bool)
        if not source.any():
            return out
        key = rows * len(self.groups) + g  # one switch per (row, group)
        kt = key[target]
        order = np.argsort(kt, kind="stable")
        out[source] = out[target][order][np.searchsorted(kt[order], key[source])]
        return out

    def attempted(self, X: np.ndarray, X_cf: np.ndarray) -> np.ndarray:
        """X (n, z) as eq. 7 should see it: the target indicator of a switch a -> b at
        1 - c(a, b), so |x_cf - x|·x_cf = c there. A copy."""
        out = np.array(X, dtype=float)
        for g, members in enumerate(self.groups):
            a, b = self.category(X, g), self.category(X_cf, g)
            switched = np.flatnonzero(a != b)
            out[switched, members[b[switched]]] = 1.0 - self.costs[g][a[switched], b[switched]]
        return out
