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
* Reproductions: :func:`reproduce_insurance` (Table 17),
  :func:`reproduce_dataset` / :func:`reproduce_dataset_full` (Tables 1, 3, 10-12).
* :func:`plot_policy_rollouts` -- policy visualisation (PNG).

Population model: :class:`SafeARPolicy` (registered as ``safear``; see
:mod:`policies.safear.population`).

Costs are positive and minimised: ``Q = mu + beta * sigma`` (the paper's
``mu - beta * sigma`` on rewards).
"""

from .datasets import build_dataset_mdp, data_available, dataset_spec, load_dataset
from .examples import geometric_mdp, insurance_mdp, random_mdp
from .mdp import GOAL_ACTION, Action, Feature, RecourseMDP, build_feature_mdp
from .plot import plot_policy_rollouts, top_outcomes
from .population import SafeARPolicy
from .reproduce import (
    PAPER_DATASET_TABLES,
    PAPER_TABLE17,
    reproduce_dataset,
    reproduce_dataset_full,
    reproduce_example,
    reproduce_insurance,
)
from .risk import (
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
from .solvers import Policy, grsevi, grsvi, q_values, value_iteration

__all__ = [
    "GOAL_ACTION",
    "PAPER_DATASET_TABLES",
    "PAPER_TABLE17",
    "Action",
    "CostDistribution",
    "Feature",
    "Policy",
    "RecourseMDP",
    "Rollouts",
    "SafeARPolicy",
    "build_dataset_mdp",
    "build_feature_mdp",
    "data_available",
    "dataset_spec",
    "exact_distribution",
    "exact_measures",
    "geometric_mdp",
    "grsevi",
    "grsvi",
    "group_disparity",
    "insurance_mdp",
    "load_dataset",
    "per_start_measures",
    "plot_policy_rollouts",
    "q_values",
    "random_mdp",
    "register",
    "reproduce_dataset",
    "reproduce_dataset_full",
    "reproduce_example",
    "reproduce_insurance",
    "risk_measures",
    "rollout",
    "summarize",
    "top_outcomes",
    "value_iteration",
    "var_cvar",
]


def register() -> None:
    """Policy-registry hook: adds ``safear`` (see :mod:`policies.safear.population`)."""
    from .population import register as _register

    _register()
