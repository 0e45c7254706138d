"""Counterfactual generators from the recourse literature (issue 37).

Registered through the ``recourse_abm.policies`` entry point ``generators``.
"""

from __future__ import annotations

from abm.registry import Registry
from policies.generators.face import Face
from policies.generators.rbr import RBR


def register(registry: Registry) -> None:
    """Register this family's recommenders and their last-threshold policies."""
    registry.recommender(
        "face", Face,
        "FACE: shortest density-weighted kNN-graph path over X_train to an accepted node; mode, k",
    )  # fmt: skip
    registry.recommender(
        "rbr", RBR,
        "Robust Bayesian Recourse: worst-case posterior odds near the boundary, projected gradient",
    )  # fmt: skip
    for name in ("face", "rbr"):
        registry.policy(
            f"threshold-{name}", registry.composite("last-threshold", name),
            f"last threshold + {name} recommender",
        )  # fmt: skip
