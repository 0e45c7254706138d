"""Robust recourse under an Lp-bounded model change (papers/optimal-robust-recourse-lp).

* :mod:`policies.robust.price` -- the exact worst-case price, any p (spec §1): every
  price and worst-case validity here goes through it.
* :mod:`policies.robust.solvers` -- :func:`robust_lp` (the convex program, any p),
  :func:`alg1` (Algorithm 1, p = 1), :func:`alg2` (Algorithm 2, p = inf, terminating),
  :func:`roar` (the ROAR baseline, L1 adversary with the correct sign),
  :func:`linearise` (a Scorer as (w, b): exact or central differences),
  :func:`switch_search` (one-hot groups: a switch as one move at its cost).
* :mod:`policies.robust.policy` -- the population-model policies ``robust-l1``,
  ``robust-l2``, ``robust-linf``, ``roar-l1``, ``roar-linf``.

The paper's Table 1 reproduction lives in the application layer (one cell per study run:
:mod:`lab.study.trials.robust`; the reproduction: :mod:`lab.reproduce.robust`);
docs/robust.md lists the paper issues we fixed.
"""

from policies.robust.policy import RobustPolicy, register
from policies.robust.price import (
    augmented_norm,
    dual_exponent,
    price,
    worst_case_valid,
    worst_logit,
    worst_model,
)
from policies.robust.solvers import (
    Solution,
    alg1,
    alg1_models,
    alg2,
    linearise,
    roar,
    robust_lp,
    switch_search,
)

__all__ = [
    "RobustPolicy",
    "Solution",
    "alg1",
    "alg1_models",
    "alg2",
    "augmented_norm",
    "dual_exponent",
    "linearise",
    "price",
    "register",
    "robust_lp",
    "roar",
    "switch_search",
    "worst_case_valid",
    "worst_logit",
    "worst_model",
]
