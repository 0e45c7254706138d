"""How long one entry takes through the benchmark's quick tier (issue 50: at most 10
minutes on the 2-core machine for ``threshold-true``).

    python benchmarks/bench_benchmark.py [--policy threshold-true] [--tier quick] [--workers 2]

Times ``recourse-abm benchmark POLICY --tier TIER`` from an empty store (the entry and
every baseline run: a first entrant's cost), then a second entry on the same store
(``threshold``: its runs are all baselines, so only the check and the judging run), and
prints each against the tier's promise, with the runs per second and the command's own
estimate beside the measured time. First, the time to build the full tier's run specs
(12,480 for one entry; each validated and hashed for its id), which --verify and every
benchmark pay: Study.runs validates a world's configuration once per policy axis (25 s
before, 3.7 s after, measured under load on the 2-core machine).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

PROMISE_S = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="threshold-true")
    parser.add_argument("--tier", default="quick", choices=("quick", "smoke", "full"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from lab.benchmark import card, protocol, run_benchmark
    from lab.benchmark.run import estimate_seconds, studies

    start = time.perf_counter()
    n = sum(len(s.runs()) for s in studies(args.policy, protocol("full")))
    seconds = time.perf_counter() - start
    print(f"{'run specs':14s} full tier: {n} runs in {seconds:.1f} s ({n / seconds:.0f} runs/s)")
    proto = protocol(args.tier)
    root = Path(tempfile.mkdtemp(prefix="bench-benchmark-"))
    try:
        store = root / "store"
        estimate = estimate_seconds(args.policy, proto, store) / args.workers
        for label, policy in (("first entrant", args.policy), ("next entrant", "threshold")):
            start = time.perf_counter()
            outcome = run_benchmark(
                policy, tier=args.tier, store=store, workers=args.workers, log=lambda _: None
            )
            card.write(outcome, root / "card" / policy)
            seconds = time.perf_counter() - start
            runs = len(outcome.runs)
            print(
                f"{label:14s} {policy:16s} {args.tier}: {seconds:7.1f} s "
                f"({seconds / PROMISE_S:.2f} x the 10-minute promise; {runs} runs judged, "
                f"{runs / seconds:.1f} runs/s)"
            )
            if label == "first entrant":
                print(f"{'':14s} the command's estimate beforehand: {estimate:.0f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
