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
from abm.validation import ConfigError


def _same_immutables(A: np.ndarray, B: np.ndarray, immutable: np.ndarray) -> np.ndarray:
    """(len(A), len(B)) bool: rows agree on every immutable feature."""
    if not immutable.any():
        return np.ones((A.shape[0], B.shape[0]), dtype=bool)
    a, b = A[:, immutable], B[:, immutable]
    return (a[:, None, :] == b[None, :, :]).all(axis=2)


class Face(FollowsModel):
    """Shortest density-weighted path on a kNN or epsilon graph (FACE, Sec. 4).

    Graph: ``mode="knn"`` links each node to its ``k`` nearest nodes (symmetrised),
    ``mode="epsilon"`` links nodes closer than ``radius`` (Euclidean). Only nodes with the
    same immutable values are linked, so a path never changes an immutable feature. Edge
    weight: the edge length ||x_i - x_j||_2 times a density penalty, the paper's kNN
    estimate w_ij = ||x_i - x_j|| * (r_i r_j)^(z/2) / r_bar^z (eq. 5's kNN form, with
    r_i the distance from x_i to its k-th neighbour, so sparse regions cost more),
    or the plain length when ``density=False``. A query row is linked the same way
    (its k nearest / all within ``radius`` with the same immutables); the graph being
    undirected, one multi-source Dijkstra from the accepted targets per distinct goal
    serves every row of a tick exactly (rows never route through each other). Targets: nodes
    inside [lower, upper] whose score under the model in force is >= the row's goal;
    rows with none reachable get NaN (unreached).
    """

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
        n = len(nodes)
        kk = min(self.k, n - 1)
        self.nn = NearestNeighbors().fit(nodes)
        # k-th neighbour distance: the kNN density estimate's radius (density ~ r^-z)
        dk, _ = self.nn.kneighbors(nodes, n_neighbors=kk + 1)
        self.r = np.maximum(dk[:, -1], 1e-12)
        self.r_bar = float(np.exp(np.log(self.r).mean()))
        if self.mode == "knn":
            A = self.nn.kneighbors_graph(nodes, n_neighbors=kk + 1, mode="distance")
        else:
            A = self.nn.radius_neighbors_graph(nodes, radius=self.radius, mode="distance")
        A = A.tocoo()
        keep = A.row != A.col
        i, j, d = A.row[keep], A.col[keep], A.data[keep]
        if self.imm.any():
            keep = (nodes[i][:, self.imm] == nodes[j][:, self.imm]).all(axis=1)
            i, j, d = i[keep], j[keep], d[keep]
        w = self._weight(d, self.r[i], self.r[j])
        G = csr_matrix((w, (i, j)), shape=(n, n))
        self.G = G.maximum(G.T)  # symmetric: kNN links are not mutual by themselves
        lo, hi = np.asarray(ctx.lower, dtype=float), np.asarray(ctx.upper, dtype=float)
        self.inside = ((nodes >= lo) & (nodes <= hi)).all(axis=1)
        self.model_changed()

    def _weight(self, d: np.ndarray, ri: np.ndarray, rj: np.ndarray) -> np.ndarray:
        # strictly positive: csgraph treats an explicit 0 weight as a missing edge
        d = np.maximum(d, 1e-12)
        if not self.density:
            return d
        z = self.nodes.shape[1]
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
        Q = X[need]
        n, q = len(self.nodes), len(need)
        kk = min(self.k, n)
        # query edges: each row to its neighbours with the same immutables (row -> node only)
        if self.mode == "knn":
            dist, idx = self.nn.kneighbors(Q, n_neighbors=n if self.imm.any() else kk)
        else:
            dlist, ilist = self.nn.radius_neighbors(Q, radius=self.radius, sort_results=True)
        rows, cols, ds = [], [], []
        for a in range(q):
            if self.mode == "knn":
                d_a, i_a = dist[a], idx[a]
            else:
                d_a, i_a = dlist[a], ilist[a]
            if self.imm.any():
                ok = (self.nodes[i_a][:, self.imm] == Q[a, self.imm]).all(axis=1)
                d_a, i_a = d_a[ok], i_a[ok]
                if self.mode == "knn":
                    d_a, i_a = d_a[:kk], i_a[:kk]
            rows.append(np.full(i_a.size, a))
            cols.append(i_a)
            ds.append(d_a)
        start = np.r_[0, np.cumsum([c.size for c in cols])]  # row a's edges: start[a]:start[a+1]
        rows, cols, ds = np.concatenate(rows), np.concatenate(cols), np.concatenate(ds)
        # a query's own radius: its k-th neighbour among all nodes, as for the nodes
        rq, _ = self.nn.kneighbors(Q, n_neighbors=min(self.k, n - 1) + 1)
        rq = np.maximum(rq[:, -1], 1e-12)
        w = self._weight(ds, rq[rows], self.r[cols])
        # exact and batched: the graph is undirected, so one multi-source Dijkstra from
        # the accepted targets (per distinct goal) gives every node's cost to its nearest
        # target and which target that is; a row's cost is then the cheapest neighbour
        cf = np.full((q, self.nodes.shape[1]), np.nan)
        gq = goals[need]
        for g in np.unique(gq):
            targets = np.flatnonzero(self.inside & (self.node_score >= g))
            if targets.size == 0:
                continue
            D, _, src = dijkstra(
                self.G, directed=False, indices=targets, min_only=True, return_predecessors=True
            )
            for r in np.flatnonzero(gq == g):
                lo_, hi_ = start[r], start[r + 1]
                tot = w[lo_:hi_] + D[cols[lo_:hi_]]
                if tot.size and np.isfinite(tot.min()):
                    cf[r] = self.nodes[src[cols[lo_ + int(np.argmin(tot))]]]
        out[need] = cf
        return out

    def observe(self, feedback: Feedback) -> None:
        pass
