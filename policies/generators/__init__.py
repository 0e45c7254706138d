"""Counterfactual generators from the recourse literature (issue 37).

Registered through the ``recourse_abm.policies`` entry point ``generators``: recommenders
``claproar``, ``gravitational`` (Altmeyer et al. 2023), ``probe`` (Pawelczyk et al. 2023),
``face`` (Poyiadzi et al. 2020) and ``rbr`` (Nguyen et al. 2022), each also as the policy
``threshold-<name>`` (last threshold + the recommender).
"""

from __future__ import annotations

from abm.registry import Registry
from policies.generators.altmeyer import ClaPROAR, Gravitational
from policies.generators.face import Face
from policies.generators.probe import Probe
from policies.generators.rbr import RBR

NAMES = ("claproar", "gravitational", "probe", "face", "rbr")


def register(registry: Registry) -> None:
    """Register this family's recommenders and their last-threshold policies."""
    registry.recommender(
        "claproar",
        ClaPROAR,
        "Wachter + mu * classifier loss at x' (Altmeyer et al. 2023); lam=10, mu=5",
    )
    registry.recommender(
        "gravitational",
        Gravitational,
        "Wachter + mu * ||x' - positive centroid||_2 (Altmeyer et al. 2023); lam=10, mu=5",
    )
    registry.recommender(
        "probe",
        Probe,
        "Wachter + mu * max(0, IR(x') - r), Gaussian invalidation rate (Pawelczyk et al. 2023); "
        "sigma2=0.01, target_rate=0.45",
    )
    registry.recommender(
        "face",
        Face,
        "FACE: shortest density-weighted kNN-graph path over X_train to an accepted node; mode, k",
    )
    registry.recommender(
        "rbr",
        RBR,
        "Robust Bayesian Recourse: worst-case posterior odds near the boundary, projected gradient",
    )
    for name in NAMES:
        registry.policy(
            f"threshold-{name}",
            registry.composite("last-threshold", name),
            f"last threshold + {name} recommender",
        )
