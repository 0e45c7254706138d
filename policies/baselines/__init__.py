"""Baseline recommenders of durable-recourse-rl §5: Ustun, Wachter and DiCE.

Registered as recommenders ``ustun``, ``wachter``, ``dice`` (so any goal selector can
use them, e.g. ``last-threshold+wachter:lam=50``) and as the baseline policies
``threshold-ustun``, ``threshold-wachter``, ``threshold-dice`` (last threshold + each,
their parameters going to the recommender). The constructors' annotations type the
parameters; the heavy libraries (scipy.optimize, torch, dice-ml) load only when a
recommender is used.
"""

from __future__ import annotations

from abm.registry import Registry
from policies.baselines.dice import Dice
from policies.baselines.ustun import Ustun
from policies.baselines.wachter import Wachter


def register(registry: Registry) -> None:
    registry.recommender(
        "ustun",
        Ustun,
        "Ustun-style integer program, exact (solver=milp: HiGHS), minimal percentile shift, "
        "linear models; levels=10",
    )
    registry.recommender(
        "wachter",
        Wachter,
        "Wachter-style gradient descent on lam (M(x')-g)^2 + |x'-x|_1; lam, tol, max_iter",
    )
    registry.recommender(
        "dice",
        Dice,
        "DiCE via dice-ml, desired score range from g to g+width, cheapest (L1) CF; method, cfs, width",
    )
    for name in ("ustun", "wachter", "dice"):
        registry.policy(
            f"threshold-{name}",
            registry.composite("last-threshold", name),
            f"last threshold + {name} recommender (paper baseline)",
        )
