"""A causal graph (specs/world-extensions.md §4): implemented changes flow to their
descendants in the structural equations; the candidate table records what followed.
Shapes: n rows, s stayers, z features."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm.fields import Float, Int, synthetic_only
from abm.mechanisms.base import Mechanism, RecordView
from abm.tick import Advice, Decision, Outcome
from abm.validation import ConfigError

_GRAPH_TEXT = "edges (i, j, w) of an acyclic graph over the features (docs/world.md)"


class CausalSettings(BaseModel):
    """§4: a causal graph over the features, edges (i, j, w_ij)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    causal_graph: tuple[tuple[Int, Int, Float], ...] = Field(
        (), json_schema_extra={"allowed": _GRAPH_TEXT}
    )


class Causal(Mechanism):
    name = "causal"
    Settings = CausalSettings
    preset = "causal"

    @classmethod
    def is_on(cls, config) -> bool:
        return bool(config.causal_graph)

    @classmethod
    def check(cls, config) -> None:
        if config.causal_graph:
            # networkx is loaded only for a scenario that has a graph
            from abm.causal import CausalGraph

            try:
                CausalGraph.from_edges(
                    config.causal_graph,
                    config.n_features,
                    config.immutable,
                    config.noncausal_features,
                )
            except ConfigError as exc:
                raise ValueError(str(exc)) from None
        synthetic_only(config, {"causal_graph": bool(config.causal_graph)})

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
