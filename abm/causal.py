"""Causal graph among the features (world extensions §4): a linear SEM with clipping.

A graph is a set of weighted edges (i, j, w_ij) over the z features. It acts twice:

* generation: rows are built in topological order,
  x_j = clip(e_j + Σ_{i∈pa(j)} w_ij (x_i - ν_i), 0, 1);
* implementation: features whose change succeeded are fixed, and their changes
  Δ_i flow down the graph, x_j <- clip(x_j + Σ_{i∈pa(j)} w_ij Δ_i, 0, 1).

Sums over parents are taken one parent at a time in ascending index, never through a
matrix product, so the same inputs give the same bits on every machine (BLAS may
reorder a dot product). Shapes: n rows, z features.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from abm.validation import ConfigError, problem, require_int

FIELD = "causal_graph"
# |w_ij| at most this: a larger weight moves a child by more than its whole [0, 1] range
# per unit change of its parent ten times over (and 1e300 overflows the SEM's sums)
WEIGHT_MAX = 10.0
Edge = tuple[int, int, float]


def _is_index(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_weight(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _checked_edges(edges: Any, z: int) -> tuple[Edge, ...]:
    """``edges`` as (int, int, float) triples, in the given order, or a :class:`ConfigError`
    for the first malformed, out-of-range, self-looping, out-of-bounds weight or repeated edge."""
    if isinstance(edges, str | bytes) or not isinstance(edges, Iterable):
        raise ConfigError(problem(FIELD, edges, "a list of edges (i, j, w)"))
    out: list[Edge] = []
    seen: dict[tuple[int, int], int] = {}
    for k, edge in enumerate(edges):
        name = f"{FIELD}[{k}]"
        if isinstance(edge, str | bytes) or not isinstance(edge, Sequence) or len(edge) != 3:
            raise ConfigError(problem(name, edge, "a triple (i, j, w)"))
        i, j, w = edge
        if not (_is_index(i) and _is_index(j) and 0 <= i < z and 0 <= j < z):
            text = f"(i, j, w) with integers i, j in [0, {z - 1}]"
            raise ConfigError(problem(name, edge, text))
        i, j = int(i), int(j)
        if i == j:
            raise ConfigError(problem(name, edge, "i != j (no self-loop)", verb="is a self-loop"))
        if not _is_weight(w) or not abs(w) <= WEIGHT_MAX:  # NaN fails too
            text = f"(i, j, w) with w a finite number in [-{WEIGHT_MAX:g}, {WEIGHT_MAX:g}]"
            raise ConfigError(problem(name, edge, text))
        if (i, j) in seen:
            raise ConfigError(
                problem(
                    name,
                    edge,
                    "each pair (i, j) at most once",
                    verb=f"repeats the pair ({i}, {j}) of {FIELD}[{seen[i, j]}]",
                )
            )
        seen[i, j] = k
        out.append((i, j, float(w)))
    return tuple(out)


def _digraph(z: int, edges: Iterable[Edge]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(z))
    graph.add_weighted_edges_from(edges)
    return graph


def _cycle_text(graph: nx.DiGraph) -> str:
    """One directed cycle as ``a -> b -> c -> a``, started at its smallest node."""
    nodes = [u for u, _ in nx.find_cycle(graph)]
    start = nodes.index(min(nodes))
    nodes = nodes[start:] + nodes[:start]
    return " -> ".join(str(v) for v in [*nodes, nodes[0]])


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class CausalGraph:
    """A validated acyclic graph of weighted edges among z features (§4).

    ``edges`` (sorted by (i, j)) and ``n_features`` define it; the rest is derived:
    ``order`` (z,) int64 is ``networkx.lexicographical_topological_sort`` over all z
    features, ``W`` (z, z) float64 holds W[i, j] = w_ij (0 without an edge), and
    ``parents[j]`` lists j's parents in ascending index. Arrays are read-only.
    Equality and the hash follow (n_features, edges). Build one with :meth:`from_edges`,
    which also applies the scenario's rules on immutable and non-causal features.
    """

    n_features: int
    edges: tuple[Edge, ...]
    order: np.ndarray = field(init=False, repr=False)
    W: np.ndarray = field(init=False, repr=False)
    parents: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        z = require_int("n_features", self.n_features, 1)
        given = _checked_edges(self.edges, z)
        graph = _digraph(z, given)
        if not nx.is_directed_acyclic_graph(graph):
            cycle = _cycle_text(graph)
            raise ConfigError(
                problem(FIELD, given, "an acyclic graph", verb=f"has the cycle {cycle}")
            )
        edges = tuple(sorted(given))
        W = np.zeros((z, z), dtype=np.float64)
        for i, j, w in edges:
            W[i, j] = w
        order = np.fromiter(nx.lexicographical_topological_sort(graph), dtype=np.int64, count=z)
        parents = tuple(tuple(sorted(graph.predecessors(j))) for j in range(z))
        setattr_ = object.__setattr__  # frozen: derived fields are set once, here
        setattr_(self, "n_features", z)
        setattr_(self, "edges", edges)
        setattr_(self, "order", _frozen(order))
        setattr_(self, "W", _frozen(W))
        setattr_(self, "parents", parents)

    @classmethod
    def from_edges(
        cls,
        edges: Iterable[Sequence[Any]],
        n_features: int,
        immutable: Iterable[int] = (),
        noncausal: Iterable[int] = (),
    ) -> CausalGraph | None:
        """The graph of the ``causal_graph`` field, or None when it has no edge.

        Raises :class:`ConfigError` (one line naming ``causal_graph``) for an index
        outside [0, z-1], a self-loop, a repeated pair, a weight outside [-WEIGHT_MAX, WEIGHT_MAX], an edge into
        an ``immutable`` feature, an edge touching a ``noncausal`` feature, or a cycle.
        """
        z = require_int("n_features", n_features, 1)
        checked = _checked_edges(edges, z)
        if not checked:
            return None
        fixed = {int(i) for i in immutable}
        proxies = {int(i) for i in noncausal}
        for k, (i, j, w) in enumerate(checked):
            name, edge = f"{FIELD}[{k}]", (i, j, w)
            if j in fixed:
                raise ConfigError(
                    problem(
                        name,
                        edge,
                        "immutable features have no parent",
                        verb=f"points into immutable feature {j}",
                    )
                )
            touched = sorted({i, j} & proxies)
            if touched:
                raise ConfigError(
                    problem(
                        name,
                        edge,
                        "non-causal features have no edge",
                        verb=f"touches non-causal feature {touched[0]}",
                    )
                )
        return cls(z, checked)

    # -- pickling and equality: rebuilt from the definition, so arrays stay read-only
    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.n_features, self.edges))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CausalGraph):
            return NotImplemented
        return (self.n_features, self.edges) == (other.n_features, other.edges)

    def __hash__(self) -> int:
        return hash((self.n_features, self.edges))

    # -- the SEM ------------------------------------------------------------------------
    def _rows(self, name: str, a: Any, dtype: Any = np.float64) -> np.ndarray:
        a = np.asarray(a, dtype=dtype)
        if a.ndim != 2 or a.shape[1] != self.n_features:
            raise ValueError(f"{name} must have shape (n, {self.n_features}); got {a.shape}")
        return a

    def generate(self, E: np.ndarray, nu: np.ndarray) -> np.ndarray:
        """Rows X (n, z) in [0, 1] from base values E (n, z) and means ν (z,) (§4).

        E = ν + τ·noise + group shift, as the caller drew it. In topological order
        x_j = clip(e_j + Σ_{i∈pa(j)} W[i, j] (x_i - ν_i), 0, 1); a root is clip(e_j, 0, 1).
        """
        E = self._rows("E", E)
        nu = np.asarray(nu, dtype=np.float64)
        if nu.shape != (self.n_features,):
            raise ValueError(f"nu must have shape ({self.n_features},); got {nu.shape}")
        X = np.empty_like(E)
        for j in self.order:
            base = E[:, j]
            if self.parents[j]:
                base = base + self._parent_sum(j, X, nu)
            X[:, j] = np.clip(base, 0.0, 1.0)
        return X

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: np.ndarray) -> np.ndarray:
        """Rows after implementation propagates down the graph (§4), a new (n, z) array.

        ``X_old`` (n, z) is before this tick's implementation, ``X_new`` (n, z) after the
        directly implemented changes, ``intervened`` (n, z) bool marks the changes that
        succeeded. Intervened features keep X_new and pass on Δ_i = X_new_i - X_old_i;
        every other j, in topological order, becomes clip(x_j + Σ_{i∈pa(j)} W[i, j] Δ_i,
        0, 1) and passes on its realised change. A feature whose parents' changes sum
        to exactly 0 keeps its bits, so a row without intervention is returned as is.
        """
        X_old = self._rows("X_old", X_old)
        X = self._rows("X_new", X_new).copy()
        fixed = self._rows("intervened", intervened, dtype=bool)
        if not X_old.shape == X.shape == fixed.shape:
            raise ValueError(
                f"X_old, X_new and intervened must share one shape; got "
                f"{X_old.shape}, {X.shape}, {fixed.shape}"
            )
        delta = np.where(fixed, X - X_old, 0.0)
        for j in self.order:
            if not self.parents[j]:
                continue
            shift = self._parent_sum(j, delta)
            moved = (shift != 0.0) & ~fixed[:, j]
            if not moved.any():
                continue
            before = X[moved, j]
            after = np.clip(before + shift[moved], 0.0, 1.0)
            X[moved, j] = after
            delta[moved, j] = after - before
        return X

    def _parent_sum(self, j: int, D: np.ndarray, centre: np.ndarray | None = None) -> np.ndarray:
        """Σ_{i∈pa(j)} W[i, j] (D[:, i] - centre_i), shape (n,), for a j with parents; the
        terms are added one at a time in ascending parent index."""
        total = np.zeros(D.shape[0])
        for i in self.parents[j]:
            column = D[:, i] if centre is None else D[:, i] - centre[i]
            total += self.W[i, j] * column
        return total

    def to_networkx(self) -> nx.DiGraph:
        """A new networkx DiGraph over the z features, edge attribute ``weight`` = w_ij."""
        return _digraph(self.n_features, self.edges)
