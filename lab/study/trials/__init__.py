"""The papers' trials: experiments of the study runner (:mod:`lab.study.experiments`), one
module per family, each one run of one seed.

* :mod:`lab.study.trials.improvement` -- the ARLIM static task (Problem 3.1) and its paired
  trials, the ``arlim-trial`` experiment.
* :mod:`lab.study.trials.fairness` -- the SCARF synthetic SCM reproduction, the
  ``fairness-trial`` experiment.
* :mod:`lab.study.trials.robust` -- Table 1 of the robust-recourse paper (German Credit),
  one fold of one cell per run, the ``robust-table1`` experiment.

The reproductions that run them as studies and check the papers' numbers are
:mod:`lab.reproduce`; the methods themselves are the policy families (:mod:`policies`).
"""
