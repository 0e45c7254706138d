"""How much the goal gap moves RR and RF (SPEC §2, "ties at the threshold").

Every goal lies at least ``gap`` above the candidate's own score (``policies.goals``). This
script runs the last-threshold policies with several gaps on the same seeds (common random
numbers) and prints each gap's mean RR and RF and its paired difference to the default,
with 95 % Student-t intervals over seeds::

    python scripts/goal_gap.py --episodes 20 --scenario paper [--ustun 3]

``--ustun N`` adds ``threshold-ustun`` on N seeds of 40 ticks with gaps 1e-9 and the
default: below the MILP's feasibility tolerance the unchanged row "reaches" the goal.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from abm import RecourseModel
from policies.baselines.ustun import Ustun
from policies.composite import CompositePolicy
from policies.goals import GOAL_GAP, LastThreshold
from policies.recommenders import ExactLinear

GAPS = (0.0, 1e-12, 1e-9, GOAL_GAP, 1e-4)  # 0 = the next representable score


def ci(v: np.ndarray) -> float:
    """95 % half-width of the mean of ``v`` (n,)."""
    return float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def run(
    scenario: str, weights: str, gap: float, seeds: range, ticks: int | None = None
) -> np.ndarray:
    """(len(seeds), 3): RR, RF and advice demoted for changing nothing, per episode."""
    out = []
    for seed in seeds:
        rec = Ustun() if weights == "ustun" else ExactLinear(weights=weights)
        policy = CompositePolicy(LastThreshold(), rec, gap=gap)
        extra = {} if ticks is None else {"ticks": ticks}
        s = RecourseModel(scenario, policy, seed=seed, agents=False, **extra).run().summary()
        out.append((s["rr"], s["rf"], s["n_no_change"]))
    return np.array(out, dtype=float)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="paper")
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--ustun", type=int, default=0, help="seeds of threshold-ustun (40 ticks)")
    args = ap.parse_args()
    seeds = range(args.episodes)
    print(
        f"{args.scenario}, seeds 0-{args.episodes - 1}; Δ = paired difference to gap {GOAL_GAP:g}"
    )
    print(
        f"{'policy':16} {'gap':>7} {'RR':>15} {'RF':>15} {'ΔRR':>17} {'ΔRF':>17} {'no-change':>9}"
    )
    for weights, name in (("uniform", "threshold"), ("true", "threshold-true")):
        runs = {gap: run(args.scenario, weights, gap, seeds) for gap in GAPS}
        base = runs[GOAL_GAP]
        for gap, r in runs.items():
            d = r - base
            label = "ulp" if gap == 0 else f"{gap:g}"
            print(
                f"{name:16} {label:>7} {r[:, 0].mean():7.3f} ± {ci(r[:, 0]):.3f} "
                f"{r[:, 1].mean():7.3f} ± {ci(r[:, 1]):.3f} "
                f"{d[:, 0].mean():+8.4f} ± {ci(d[:, 0]):.4f} {d[:, 1].mean():+8.4f} ± {ci(d[:, 1]):.4f} "
                f"{r[:, 2].mean():9.1f}"
            )

    if args.ustun:
        for gap in (1e-9, GOAL_GAP):
            r = run(args.scenario, "ustun", gap, range(args.ustun), ticks=40)
            print(
                f"threshold-ustun, 40 ticks, gap {gap:g}: RR {r[:, 0].mean():.3f} "
                f"RF {r[:, 1].mean():.3f}, changed nothing (demoted) {r[:, 2].mean():.1f} per episode"
            )


if __name__ == "__main__":
    main()
