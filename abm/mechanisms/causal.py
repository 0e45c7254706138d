"""A causal graph (specs/world-extensions.md §4): implemented changes flow to their
descendants in the structural equations; the candidate table records what followed.
Shapes: n rows, s stayers, z features."""

from __future__ import annotations

import numpy as np

from abm.mechanisms.base import Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome


class Causal(Mechanism):
    name = "causal"

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: np.ndarray):
        """Changes ``intervened`` (n, z) bool of X_new (n, z) carried down the graph."""
        graph = self.world.structure.graph
        if graph is None:
            return X_new
        return graph.propagate(X_old, X_new, intervened)

    def events(
        self, state, d: Decision, advice: Advice, outcome: Outcome, dropped, chunk, view: RecordView
    ) -> None:
        z = self.config.n_features
        dprop = np.zeros((d.rej.shape[0], z), dtype=np.float32)
        if outcome.dprop is not None:
            dprop[~dropped] = outcome.dprop
        dprop = view.per_applicant(dprop, 0.0)
        for i in range(z):
            chunk[f"dprop_{i}"] = dprop[:, i]
