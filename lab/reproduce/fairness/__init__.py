"""The SCARF synthetic reproduction (long-term fairness): :mod:`.reproduce`. Its trial, the
``fairness-trial`` experiment, is :mod:`lab.study.trials.fairness`."""
