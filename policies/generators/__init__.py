"""Counterfactual generators from the recourse literature (issue 37).

Registered through the ``recourse_abm.policies`` entry point ``generators``: recommenders
``claproar``, ``gravitational`` (Altmeyer et al. 2023) and ``probe`` (Pawelczyk et al.
2023), each also as the policy ``threshold-<name>`` (last threshold + the recommender).
"""

from __future__ import annotations

from abm.registry import Registry
from policies.generators.altmeyer import ClaPROAR, Gravitational
from policies.generators.probe import Probe


def register(registry: Registry) -> None:
    """Register this family's recommenders and policies."""
    registry.recommender(
        "claproar", ClaPROAR,
        "Wachter + mu * classifier loss at x' (Altmeyer et al. 2023, torch); lam=10, mu=5",
    )  # fmt: skip
    registry.recommender(
        "gravitational", Gravitational,
        "Wachter + mu * ||x' - positive centroid||_2 (Altmeyer et al. 2023, torch); lam=10, mu=5",
    )  # fmt: skip
    registry.recommender(
        "probe", Probe,
        "Wachter + mu * max(0, IR(x') - r), Gaussian invalidation rate (Pawelczyk et al. 2023); "
        "sigma2=0.01, target_rate=0.45",
    )  # fmt: skip
    for name in ("claproar", "gravitational", "probe"):
        registry.policy(
            f"threshold-{name}", registry.composite("last-threshold", name),
            f"last threshold + {name} recommender",
        )  # fmt: skip
