"""Reinforcement-learning policies of durable-recourse-rl §4 (SAC, stable-baselines3).

Registered names (artefacts are loaded by path; see ``recourse-abm train``):

* goal selector ``rl`` (learned predictor μ, ``path=DIR``) and recommender ``rl``
  (learned recommender φ, ``path=DIR``), usable in composites such as ``rl:path=P+ustun``;
* ``rl-recommender``: last threshold + learned φ (``path=DIR`` of the recommender);
* ``hybrid-exact-linear``, ``hybrid-ustun``, ``hybrid-wachter``, ``hybrid-dice``:
  learned μ (``path=DIR`` of a predictor) + a baseline recommender (other parameters go
  to the recommender);
* ``rl``: learned μ + learned φ, the paper's method (``path=DIR`` of a predictor trained
  with φ; ``recommender=DIR`` overrides the φ named in its manifest);
* ``rl-constrained``: μ trained to maximise RF subject to RR ≥ ``target`` (a Lagrangian
  SAC, docs/rl.md) + φ; as a goal selector too.

Artefacts are safetensors weights plus a JSON manifest: loading one runs no stored code
(docs/rl.md).
"""

from __future__ import annotations

from typing import Any

from abm.registry import Registry
from policies.composite import CompositePolicy
from policies.rl.learned import (
    ConstrainedGoal,
    ConstrainedPolicy,
    LearnedGoal,
    LearnedPolicy,
    LearnedRecommender,
    default_hybrid_predictor,
)

HYBRID_RECOMMENDERS = ("exact-linear", "ustun", "wachter", "dice")


def _hybrid(registry: Registry, recommender: str):
    """``hybrid-<recommender>``: learned μ (``path``) + the recommender, which gets the
    other keywords (typed against it by the registry)."""

    def factory(
        path: str | None = None, allow_mismatch: bool = False, **rec_params: Any
    ) -> CompositePolicy:
        rec = registry.make("recommender", recommender, **rec_params)
        goal = LearnedGoal(path or default_hybrid_predictor(recommender), allow_mismatch)
        return CompositePolicy(goal, rec)

    return factory


def register(registry: Registry) -> None:
    registry.goal("rl", LearnedGoal, "learned predictor mu (SAC); path=DIR of a trained predictor")
    registry.recommender(
        "rl", LearnedRecommender, "learned recommender phi (SAC); path=DIR of a trained recommender"
    )
    registry.policy(
        "rl-recommender",
        registry.composite("last-threshold", "rl"),
        "last threshold + learned recommender phi; path=DIR",
    )
    for name in HYBRID_RECOMMENDERS:
        registry.policy(
            f"hybrid-{name}",
            _hybrid(registry, name),
            f"learned predictor mu + {name} recommender (paper hybrid); path=DIR",
            forward=("recommender", name),
        )
    registry.policy(
        "rl",
        LearnedPolicy,
        "learned predictor mu + learned recommender phi (the paper's method); path=DIR",
    )
    registry.goal(
        "rl-constrained",
        ConstrainedGoal,
        "learned predictor mu trained for RR >= target (Lagrangian SAC); path=DIR, target",
    )
    registry.policy(
        "rl-constrained",
        ConstrainedPolicy,
        "mu trained for RR >= target (Lagrangian SAC) + learned recommender phi; path=DIR, target",
    )
