"""The grid behind the robust and ROAR policies' population-world defaults (issue 33).

    python scripts/robust_defaults.py robust-l1 2,3,5,10 0,0.5,1,2

Prints, for every (lam, alpha) of the grid, the outcome-card means over seeds 0-3 of 60
ticks of the `retraining` preset: RR, RF, recommended cost, validity after a refit and
validity now. results/sensible/robust-defaults.md lists the grids run and the rule.
"""

from __future__ import annotations

import sys

import numpy as np

from abm import RecourseModel

FIGURES = ("rr", "rf", "cost_recommended", "valid_after_refit", "still_valid")


def main() -> None:
    policy = sys.argv[1]
    lams = [float(x) for x in sys.argv[2].split(",")]
    alphas = [float(x) for x in sys.argv[3].split(",")]
    for lam in lams:
        for alpha in alphas:
            rows = []
            for seed in range(4):
                model = RecourseModel("retraining", f"{policy}:lam={lam},alpha={alpha}",
                                      seed=seed, ticks=60, agents=False, record_events=False)  # fmt: skip
                card = model.run().outcome_card().values
                rows.append([card[f] for f in FIGURES])
            v = np.array(rows, dtype=float)
            means = [
                float(np.mean(c[~np.isnan(c)])) if (~np.isnan(c)).any() else np.nan for c in v.T
            ]
            print(f"{policy} lam={lam} alpha={alpha}: RR {means[0]:.3f} RF {means[1]:.3f} "
                  f"cost {means[2]:.3f} valid_after_refit {means[3]:.3f} still_valid {means[4]:.3f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
