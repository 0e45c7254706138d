"""SafeAR: risk-aware algorithmic recourse on finite-horizon MDPs.

Engine (independent of the rest of the package):

* :class:`RecourseMDP` -- validated finite-horizon MDP over discrete states
  (stacked CSR transitions), :func:`build_feature_mdp` from :class:`Feature`
  and :class:`Action` descriptions.
* Solvers: :func:`grsvi` (Algorithm 1, ``risk="std"`` or ``"lpsd"``),
  :func:`grsevi` (Algorithm 2), :func:`value_iteration` (risk-neutral check).
* Risk measures: :func:`rollout`, :func:`per_start_measures`,
  :func:`risk_measures`, :func:`exact_measures`, :func:`exact_distribution`,
  :func:`var_cvar`, :func:`group_disparity` (Mann-Whitney U).
The paper's reproductions, example MDPs, data sets and plots live in the application
layer (:mod:`lab.reproduce.safear`).

Population model: :class:`SafeARPolicy` (registered as ``safear``; see
:mod:`policies.safear.population`).

Costs are positive and minimised: ``Q = mu + beta * sigma`` (the paper's
``mu - beta * sigma`` on rewards).
"""

from policies.safear.mdp import GOAL_ACTION, Action, Feature, RecourseMDP, build_feature_mdp
from policies.safear.population import SafeARPolicy, register
from policies.safear.risk import (
    CostDistribution,
    Rollouts,
    exact_distribution,
    exact_measures,
    group_disparity,
    per_start_measures,
    risk_measures,
    rollout,
    summarize,
    var_cvar,
)
from policies.safear.solvers import Policy, grsevi, grsvi, q_values, value_iteration

__all__ = [
    "GOAL_ACTION",
    "Action",
    "CostDistribution",
    "Feature",
    "Policy",
    "RecourseMDP",
    "Rollouts",
    "SafeARPolicy",
    "build_feature_mdp",
    "exact_distribution",
    "exact_measures",
    "grsevi",
    "grsvi",
    "group_disparity",
    "per_start_measures",
    "q_values",
    "register",
    "risk_measures",
    "rollout",
    "summarize",
    "value_iteration",
    "var_cvar",
]
