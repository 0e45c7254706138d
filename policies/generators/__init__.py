"""Counterfactual generators from the recourse literature (issue 37).

Registered through the ``recourse_abm.policies`` entry point ``generators``.
"""

from __future__ import annotations

from abm.registry import Registry


def register(registry: Registry) -> None:
    """Register this family's recommenders and policies (filled in by each method's module)."""
