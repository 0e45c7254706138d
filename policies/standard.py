"""The standard parts: composite policies, the last-threshold goal, exact-linear advice."""

from __future__ import annotations

from abm.registry import Registry
from policies.composite import CompositePolicy, NoAdvice
from policies.goals import LastThreshold, TrendThreshold
from policies.recommenders import ExactLinear


def register(registry: Registry) -> None:
    registry.combiner(CompositePolicy)
    registry.goal("last-threshold", LastThreshold, "this tick's acceptance threshold (+ margin)")
    registry.goal(
        "trend-threshold",
        TrendThreshold,
        "this tick's threshold (+ margin) + its recent slope carried horizon ticks ahead",
    )
    registry.recommender(
        "exact-linear",
        ExactLinear,
        "exactly optimal weighted-L1 change for linear models; weights=uniform|true|estimated",
    )
    registry.policy("none", NoAdvice, "no advice (control): the rejected simply try again")
    registry.policy(
        "threshold",
        registry.composite("last-threshold", "exact-linear"),
        "last threshold + exact-linear with uniform costs (standard practice)",
    )
    registry.policy(
        "threshold-true",
        registry.composite("last-threshold", "exact-linear", weights="true"),
        "last threshold + exact-linear weighted by the true difficulties (oracle)",
    )
    registry.policy(
        "threshold-estimated",
        registry.composite("last-threshold", "exact-linear", weights="estimated"),
        "last threshold + exact-linear weighted by difficulties learned online (eqs. 12-14)",
    )
    registry.policy(
        "threshold-explore",
        registry.composite(
            "last-threshold", "exact-linear", weights="estimated", explore_share=0.1
        ),
        "threshold-estimated, but 10% of advice fills the least-tried features first (docs/exploration.md)",
    )
