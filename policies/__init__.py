"""Registry of recourse policies, goal selectors and recommenders.

A policy is named either directly (``threshold``, ``none``, …) or as a composite
``GOAL+RECOMMENDER`` where each part may carry parameters after a colon, e.g.
``last-threshold:margin=0.02+exact-linear:weights=estimated``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from abm.interfaces import RecoursePolicy
from policies.composite import CompositePolicy, NoAdvice
from policies.goals import LastThreshold
from policies.recommenders import ExactLinear


@dataclass(frozen=True)
class Entry:
    factory: Callable[..., Any]
    description: str


GOALS: dict[str, Entry] = {}
RECOMMENDERS: dict[str, Entry] = {}
POLICIES: dict[str, Entry] = {}


def register_goal(name: str, factory: Callable[..., Any], description: str) -> None:
    GOALS[name] = Entry(factory, description)


def register_recommender(name: str, factory: Callable[..., Any], description: str) -> None:
    RECOMMENDERS[name] = Entry(factory, description)


def register_policy(name: str, factory: Callable[..., RecoursePolicy], description: str) -> None:
    POLICIES[name] = Entry(factory, description)


def composite(
    goal: str, recommender: str, **recommender_params: Any
) -> Callable[..., RecoursePolicy]:
    """A factory for ``goal + recommender``; its keyword arguments go to the recommender."""

    def factory(**params: Any) -> RecoursePolicy:
        return CompositePolicy(
            _make(GOALS, "goal selector", goal, {}),
            _make(RECOMMENDERS, "recommender", recommender, {**recommender_params, **params}),
        )

    return factory


register_goal("last-threshold", LastThreshold, "this tick's acceptance threshold (+ margin)")
register_recommender(
    "exact-linear", ExactLinear,
    "exactly optimal weighted-L1 change for linear models; weights=uniform|true|estimated",
)  # fmt: skip
register_policy("none", NoAdvice, "no advice (control): the rejected simply try again")
register_policy(
    "threshold", composite("last-threshold", "exact-linear"),
    "last threshold + exact-linear with uniform costs (standard practice)",
)  # fmt: skip
register_policy(
    "threshold-true", composite("last-threshold", "exact-linear", weights="true"),
    "last threshold + exact-linear weighted by the true difficulties (oracle)",
)  # fmt: skip
register_policy(
    "threshold-estimated", composite("last-threshold", "exact-linear", weights="estimated"),
    "last threshold + exact-linear weighted by difficulties learned online (eqs. 12-14)",
)  # fmt: skip


def _parse_value(text: str) -> Any:
    # numbers become numbers; everything else stays text (``weights=true`` names the
    # oracle cost weights, it is not a boolean)
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _split_params(spec: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"policy parameter {item!r} in {spec!r} must look like key=value")
        params[key.strip()] = _parse_value(value.strip())
    return name.strip(), params


def _make(table: dict[str, Entry], kind: str, name: str, params: dict[str, Any]) -> Any:
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; available: {', '.join(sorted(table))}")
    try:
        return table[name].factory(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for {kind} {name!r}: {exc}") from None


def make_policy(spec: str, **params: Any) -> RecoursePolicy:
    """Build a policy from a registry name or a ``GOAL+RECOMMENDER`` spec."""
    if "+" in spec:
        goal_spec, _, rec_spec = spec.partition("+")
        goal_name, goal_params = _split_params(goal_spec)
        rec_name, rec_params = _split_params(rec_spec)
        return CompositePolicy(
            _make(GOALS, "goal selector", goal_name, goal_params),
            _make(RECOMMENDERS, "recommender", rec_name, {**rec_params, **params}),
        )
    name, spec_params = _split_params(spec)
    return _make(POLICIES, "policy", name, {**spec_params, **params})


def _register_families() -> None:
    """Let every other module or package under ``policies/`` with a ``register()`` add its entries.

    Families keep heavy imports (torch, dice-ml, …) inside their functions, so importing
    the registry stays cheap.
    """
    core = {"composite", "goals", "recommenders"}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in core:
            continue
        register = getattr(importlib.import_module(f"policies.{info.name}"), "register", None)
        if register is not None:
            register()


def available_policies() -> dict[str, str]:
    """Policy name -> one-line description."""
    return {name: e.description for name, e in sorted(POLICIES.items())}


_register_families()

__all__ = [
    "CompositePolicy",
    "ExactLinear",
    "GOALS",
    "LastThreshold",
    "NoAdvice",
    "POLICIES",
    "RECOMMENDERS",
    "available_policies",
    "make_policy",
    "register_goal",
    "register_policy",
    "register_recommender",
]
