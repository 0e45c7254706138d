"""Baseline recommenders of durable-recourse-rl §5: Ustun, Wachter and DiCE.

Registered as recommenders ``ustun``, ``wachter``, ``dice`` (so any goal selector can
use them, e.g. ``last-threshold+wachter:lam=50``) and as the baseline policies
``threshold-ustun``, ``threshold-wachter``, ``threshold-dice`` (last threshold + each).
Heavy libraries (torch, dice-ml) are imported only when a recommender is used.
"""

from __future__ import annotations

from typing import Any

from abm.registry import Registry


def _ustun(**params: Any):
    from policies.baselines.ustun import Ustun

    return Ustun(**params)


def _wachter(**params: Any):
    from policies.baselines.wachter import Wachter

    return Wachter(**params)


def _dice(**params: Any):
    from policies.baselines.dice import Dice

    return Dice(**params)


def register(registry: Registry) -> None:
    registry.recommender(
        "ustun", _ustun,
        "Ustun-style MILP (HiGHS), minimal percentile shift, linear models; levels=10, batch=0",
    )  # fmt: skip
    registry.recommender(
        "wachter", _wachter,
        "Wachter-style gradient descent on lam (M(x')-g)^2 + |x'-x|_1 (torch); lam, tol, max_iter",
    )  # fmt: skip
    registry.recommender(
        "dice", _dice,
        "DiCE via dice-ml, desired score range from g to g+width, cheapest (L1) CF; method, cfs, width",
    )  # fmt: skip
    for name in ("ustun", "wachter", "dice"):
        registry.policy(
            f"threshold-{name}", registry.composite("last-threshold", name),
            f"last threshold + {name} recommender (paper baseline)",
        )  # fmt: skip
