"""SCARF's level-by-level propagation equals the causal graph's, bit for bit (issue 21 speed)."""

from __future__ import annotations

import numpy as np
import pytest

from abm.causal import CausalGraph
from policies.fairness.population import LevelPropagation


def _random_graph(rng: np.random.Generator) -> CausalGraph:
    z = int(rng.integers(3, 12))
    edges = {}
    for _ in range(int(rng.integers(1, 2 * z))):
        i, j = sorted(rng.choice(z, 2, replace=False).tolist())
        edges[(i, j)] = float(rng.normal())
    z = max(max(i, j) for i, j in edges) + 1
    return CausalGraph(z, tuple((i, j, w) for (i, j), w in edges.items()))


@pytest.mark.parametrize("seed", range(8))
def test_level_propagation_matches_the_graph_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    graph = _random_graph(rng)
    z = graph.n_features
    for _ in range(10):
        idx = np.array(sorted(rng.choice(z, int(rng.integers(1, z + 1)), replace=False)))
        n = int(rng.integers(0, 200))
        X = rng.random((n, z))
        X[rng.random((n, z)) < 0.1] = 1.0  # features at their bounds: clipping matters
        X[rng.random((n, z)) < 0.05] = 0.0
        # some rows are asked to change nothing on some features
        step = np.where(rng.random((n, idx.size)) < 0.3, 0.0, rng.exponential(0.3, (n, idx.size)))
        X_I = X[:, idx]
        moved = np.clip(X_I + step, 0.0, 1.0)
        X_new = X.copy()
        X_new[:, idx] = moved
        hit = np.zeros(X.shape, dtype=bool)
        hit[:, idx] = moved != X_I
        expected = graph.propagate(X, X_new, hit)
        got = LevelPropagation(graph, idx)(X_new.copy(), X_I, moved)
        assert got.tobytes() == expected.tobytes()


def test_the_preset_graph_propagates_to_the_children():
    # fair-scarf's graph shape: each improvable feature feeds one child with weight w
    graph = CausalGraph(4, ((0, 2, 0.5), (1, 3, 0.4)))
    X = np.full((1, 4), 0.5)
    X_new = X.copy()
    X_new[0, 0] = 0.7  # +0.2 on feature 0 only
    got = LevelPropagation(graph, np.array([0, 1]))(X_new.copy(), X[:, [0, 1]], X_new[:, [0, 1]])
    np.testing.assert_allclose(got, [[0.7, 0.5, 0.6, 0.5]])
