"""SafeAR reproductions: example MDPs, the insurance and data-set tables, population study, plots."""

from lab.reproduce.safear.datasets import (
    build_dataset_mdp,
    data_available,
    dataset_spec,
    load_dataset,
)
from lab.reproduce.safear.examples import geometric_mdp, insurance_mdp, random_mdp
from lab.reproduce.safear.plot import plot_policy_rollouts, top_outcomes
from lab.reproduce.safear.reproduce import (
    PAPER_DATASET_TABLES,
    PAPER_TABLE17,
    reproduce_dataset,
    reproduce_dataset_full,
    reproduce_example,
    reproduce_insurance,
)

__all__ = [
    "PAPER_DATASET_TABLES",
    "PAPER_TABLE17",
    "build_dataset_mdp",
    "data_available",
    "dataset_spec",
    "geometric_mdp",
    "insurance_mdp",
    "load_dataset",
    "plot_policy_rollouts",
    "random_mdp",
    "reproduce_dataset",
    "reproduce_dataset_full",
    "reproduce_example",
    "reproduce_insurance",
    "top_outcomes",
]
