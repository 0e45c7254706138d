"""Long-term fairness through sequential recourse (SCARF; specs/long-term-fairness.md,
Gumucio & Zhang 2026).

* :mod:`policies.fairness.generator` -- the LSTM (SCARF) and MLP (ablation) intervention
  generators, the budget projection and their training through a differentiable
  surrogate (torch, POT Sinkhorn).
* :mod:`policies.fairness.population` -- the population policies ``scarf``, ``scarf-mlp``
  and ``ei`` (no advice under ``decision_model = "ei"``); ``none`` is the core's.
* :mod:`policies.fairness.store` -- trained generators kept on disk by a hash of what
  decides them: shipped for the dashboard's demonstrations (``states/``), else the user
  cache (``RABM_CACHE_DIR``).

The synthetic SCM reproduction (spec §2-§3, the ``fairness-trial`` experiment of the study
runner) lives in the application layer (:mod:`lab.study.trials.fairness`; the
reproduction: :mod:`lab.reproduce.fairness`).

Importing this package loads neither torch nor POT; they load on use.
"""

from policies.fairness.population import EIWorld, ScarfMLPPolicy, ScarfPolicy, register

__all__ = ["EIWorld", "ScarfMLPPolicy", "ScarfPolicy", "register"]
