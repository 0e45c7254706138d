"""FACE: feasible counterfactuals along dense paths of observed applicants.

After Poyiadzi, Sokol, Santos-Rodriguez, De Bie & Flach (AIES 2020). A graph over the
world's training applicants ``X_train`` (n_train, z) is built once per world; each
rejected row is joined to its nearest nodes and the counterfactual is the node, accepted
by the model in force at the row's goal, at the end of the shortest weighted path.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from abm.interfaces import Feedback, FollowsModel, PolicyContext
from abm.provenance import arrays_digest
from abm.validation import ConfigError

# the graphs of the last few (nodes, settings) built (FACE.prepare): their arrays are read
# only; threads share the dict through single operations, so a lost race builds one twice
_GRAPHS: dict[tuple, tuple] = {}
_KEEP_GRAPHS = 8


def _same_immutables(A: np.ndarray, B: np.ndarray, immutable: np.ndarray) -> np.ndarray:
    """(len(A), len(B)) bool: rows agree on every immutable feature."""
    if not immutable.any():
        return np.ones((A.shape[0], B.shape[0]), dtype=bool)
    a, b = A[:, immutable], B[:, immutable]
    return (a[:, None, :] == b[None, :, :]).all(axis=2)


class Face(FollowsModel):
    """Shortest density-weighted path on a kNN or epsilon graph (FACE, Sec. 4).

    Graph: ``mode="knn"`` links each node to its ``k`` nearest nodes (symmetrised),
    ``mode="epsilon"`` links nodes closer than ``radius`` (Euclidean), all on the mutable
    features; for a row, a node stands for its mutable values with the row's immutable
    values (re-scored per row), so advice never changes an immutable feature. Edge
    weight: the edge length ||x_i - x_j||_2 times a density penalty, the paper's kNN
    estimate w_ij = ||x_i - x_j|| * (r_i r_j)^(z/2) / r_bar^z (eq. 5's kNN form, with
    r_i the distance from x_i to its k-th neighbour, so sparse regions cost more),
    or the plain length when ``density=False``. A query row is linked the same way
    (its k nearest / all within ``radius`` with the same immutables); the graph being
    undirected, one multi-source Dijkstra from the accepted targets per distinct goal
    serves every row of a tick exactly (rows never route through each other). Targets: nodes
    inside [lower, upper] whose score under the model in force is >= the row's goal;
    rows with none reachable get NaN (unreached).

    One-way features (``ctx.direction``) narrow each row's targets to the nodes on their
    side of the row (an increase-only feature at least x, a decrease-only one at most x),
    so the advice keeps them; the path between is the graph's as before (only its end is
    advice), at the price of one Dijkstra per row. One-hot groups (``ctx.onehot``) are kept
    the same way: every node is a valid row, and a row's targets are narrowed to nodes
    whose categories it may switch to (an immutable group carries the row's own).
    """

    keeps_one_way = True
    keeps_onehot = True

    def __init__(
        self,
        mode: Literal["knn", "epsilon"] = "knn",
        k: Annotated[int, Field(ge=1, le=10_000)] = 50,
        radius: Annotated[float, Field(gt=0.0)] = 0.25,
        density: bool = True,
        max_nodes: Annotated[int, Field(ge=2, le=1_000_000)] = 20_000,
    ) -> None:
        if mode not in ("knn", "epsilon"):
            raise ValueError(f"mode must be 'knn' or 'epsilon', got {mode!r}")
        if not (isinstance(k, int) and k >= 1):
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if not radius > 0:
            raise ValueError(f"radius must be > 0, got {radius!r}")
        self.mode, self.k, self.radius = mode, int(k), float(radius)
        self.density, self.max_nodes = bool(density), int(max_nodes)

    def prepare(self, ctx: PolicyContext) -> None:
        from scipy.sparse import csr_matrix
        from sklearn.neighbors import NearestNeighbors

        self.ctx = ctx
        if ctx.X_train is None or len(ctx.X_train) < 2:
            raise ConfigError("X_train = none; allowed: a world with >= 2 training applicants")
        nodes = np.unique(np.asarray(ctx.X_train, dtype=float), axis=0)
        if len(nodes) > self.max_nodes:
            raise ConfigError(
                f"X_train rows = {len(nodes)} exceeds face max_nodes = {self.max_nodes}; "
                "allowed: raise max_nodes"
            )
        self.nodes = nodes
        self.imm = np.asarray(ctx.immutable, dtype=bool)
        # distances on the mutable features only: immutables are the row's own (below)
        self.space = nodes[:, ~self.imm]
        # the graph is a function of the nodes and the settings: every episode of a world
        # (a study's, a check's) shares one, read only
        key = (arrays_digest(nodes, self.imm), self.mode, self.k, self.radius, self.density)
        built = _GRAPHS.get(key)
        if built is None:
            built = self._graph(NearestNeighbors, csr_matrix)
            if len(_GRAPHS) >= _KEEP_GRAPHS:
                _GRAPHS.clear()  # no iteration: another thread may be changing the dict
            _GRAPHS[key] = built
        self.nn, self.r, self.r_bar, self.G = built
        self.inside = self._inside(nodes)
        self.model_changed()

    def _graph(self, NearestNeighbors: type, csr_matrix: type) -> tuple:
        """(the fitted neighbour index, each node's k-th neighbour distance r (n,), their
        geometric mean, the symmetric weighted graph (n, n)) over :attr:`space`."""
        n = len(self.space)
        kk = min(self.k, n - 1)
        nn = NearestNeighbors().fit(self.space)
        # k-th neighbour distance: the kNN density estimate's radius (density ~ r^-z)
        dk, ik = nn.kneighbors(self.space, n_neighbors=kk + 1)
        self.r = np.maximum(dk[:, -1], 1e-12)
        self.r_bar = float(np.exp(np.log(self.r).mean()))
        if self.mode == "knn":
            # the same query gives the kNN graph: what kneighbors_graph builds, without
            # searching the 10,000 nodes a second time
            i, j, d = np.repeat(np.arange(n), kk + 1), ik.ravel(), dk.ravel()
        else:
            A = nn.radius_neighbors_graph(self.space, radius=self.radius, mode="distance")
            A = A.tocoo()
            i, j, d = A.row, A.col, A.data
        keep = i != j
        i, j, d = i[keep], j[keep], d[keep]
        w = self._weight(d, self.r[i], self.r[j])
        G = csr_matrix((w, (i, j)), shape=(n, n))
        G = G.maximum(G.T)  # symmetric: kNN links are not mutual by themselves
        self.r.flags.writeable = False
        return nn, self.r, self.r_bar, G

    def _weight(self, d: np.ndarray, ri: np.ndarray, rj: np.ndarray) -> np.ndarray:
        # strictly positive: csgraph treats an explicit 0 weight as a missing edge
        d = np.maximum(d, 1e-12)
        if not self.density:
            return d
        z = self.space.shape[1]
        return d * np.exp(0.5 * z * (np.log(ri) + np.log(rj)) - z * np.log(self.r_bar))

    def model_changed(self) -> None:
        # retraining changes which nodes are accepted, never the graph
        self.node_score = np.asarray(self.ctx.decision_model.score(self.nodes), dtype=float)

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        from scipy.sparse.csgraph import dijkstra

        X = np.asarray(X, dtype=float)
        goals = np.broadcast_to(np.asarray(goals, dtype=float), X.shape[:1])
        out = X.copy()
        need = np.flatnonzero(self.ctx.decision_model.score(X) < goals)
        if need.size == 0:
            return out
        Q = X[need][:, ~self.imm]
        n, q = len(self.nodes), len(need)
        kk = min(self.k, n)
        # a query's own radius: its k-th neighbour, as for the nodes; one search serves
        # it and (knn mode) the links into the graph, the first kk of the same neighbours
        kr = min(self.k, n - 1) + 1
        dist, idx = self.nn.kneighbors(Q, n_neighbors=max(kk, kr))
        rq = np.maximum(dist[:, kr - 1], 1e-12)
        if self.mode == "knn":
            nbrs = list(zip(dist[:, :kk], idx[:, :kk], strict=True))
        else:
            nbrs = list(zip(*self.nn.radius_neighbors(Q, radius=self.radius), strict=True))
        cf = np.full((q, self.nodes.shape[1]), np.nan)
        gq = goals[need]
        # one multi-source Dijkstra from the accepted targets serves every row with the
        # same targets (the graph is undirected): per distinct goal, or per row where
        # immutables make each row's targets its own (nodes carrying the row's values)
        keys = [(gq[a], tuple(X[need[a], self.imm])) for a in range(q)]
        one_way = self.ctx.direction != 0 if self.ctx.one_way else None
        if one_way is not None:  # each row's one-way values narrow its targets too
            keys = [(*key, tuple(X[need[a], one_way])) for a, key in enumerate(keys)]
        onehot = self.ctx.onehot
        if onehot is not None:  # and its categories, to the switches allowed from them
            cats = np.column_stack([onehot.category(X[need], g) for g in range(len(onehot.groups))])
            keys = [(*key, tuple(cats[a].tolist())) for a, key in enumerate(keys)]
        for key in dict.fromkeys(keys):
            g, imm_vals = key[:2]
            H = self.nodes
            if self.imm.any():
                H = self.nodes.copy()
                H[:, self.imm] = imm_vals
                score = np.asarray(self.ctx.decision_model.score(H), dtype=float)
                inside = self._inside(H)
            else:
                score, inside = self.node_score, self.inside
            keep = inside & (score >= g)
            if one_way is not None:
                # targets on the permitted side of the row's every one-way feature
                side = (H[:, one_way] - np.asarray(key[2])) * self.ctx.direction[one_way]
                keep &= (side >= 0).all(axis=1)
            if onehot is not None:
                for grp, a in enumerate(key[-1]):
                    keep &= np.isfinite(onehot.costs[grp][a, onehot.category(H, grp)])
            targets = np.flatnonzero(keep)
            if targets.size == 0:
                continue
            # G is symmetric: as a directed graph it has every link both ways, so SciPy
            # need not build and walk its transpose (directed=False): the same distances,
            # predecessors and sources, in less than half the time
            D, _, src = dijkstra(
                self.G, directed=True, indices=targets, min_only=True, return_predecessors=True
            )
            for a in (a for a in range(q) if keys[a] == key):
                d_a, i_a = nbrs[a]
                if i_a.size == 0:
                    continue
                tot = self._weight(d_a, np.full(i_a.size, rq[a]), self.r[i_a]) + D[i_a]
                j = int(np.argmin(tot))
                if np.isfinite(tot[j]):
                    cf[a] = H[src[i_a[j]]]
        out[need] = cf
        return out

    def _inside(self, H: np.ndarray) -> np.ndarray:
        lo, hi = np.asarray(self.ctx.lower, dtype=float), np.asarray(self.ctx.upper, dtype=float)
        return ((H >= lo) & (H <= hi)).all(axis=1)

    def observe(self, feedback: Feedback) -> None:
        pass
