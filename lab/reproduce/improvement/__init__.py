"""The ARLIM reproduction (recourse for long-term improvement; specs/improvement-bandits.md
§4): :func:`reproduce` runs the paired trials of the static task as a study of the
``arlim-trial`` experiment and writes the tables, figures and checks. The static task and
its paired trials are :mod:`lab.study.trials.improvement`; the methods live in
:mod:`policies.improvement`."""

from lab.reproduce.improvement.reproduce import (
    PAPER_LINUCB_XI025,
    PAPER_SLOPE,
    PAPER_XI0,
    Check,
    Reproduction,
    checks,
    plot_mer_vs_round,
    plot_noise_sweep,
    reproduce,
    run_trials,
    summarise,
    synthetic_table,
    trial_study,
    with_paper,
)

__all__ = [
    "PAPER_LINUCB_XI025",
    "PAPER_SLOPE",
    "PAPER_XI0",
    "Check",
    "Reproduction",
    "checks",
    "plot_mer_vs_round",
    "plot_noise_sweep",
    "reproduce",
    "run_trials",
    "summarise",
    "synthetic_table",
    "trial_study",
    "with_paper",
]
