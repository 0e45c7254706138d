"""Robust recourse reproductions (optimal-robust-recourse-lp): Table 1 through the runner
(one cell per run: :mod:`lab.study.trials.robust`; the study and checks: :mod:`.reproduce`),
and the report of the retraining study (``studies/robust-retrain.toml``)."""

from lab.reproduce.robust.reproduce import (
    reproduce_german_lr,
    summarise_table1,
    table1_checks,
    table1_markdown,
    table1_study,
    write_table1,
)

__all__ = [
    "reproduce_german_lr",
    "summarise_table1",
    "table1_checks",
    "table1_markdown",
    "table1_study",
    "write_table1",
]
