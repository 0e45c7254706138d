"""How long ``recourse-abm whatif`` takes on the German Credit world (issue 53: the quick
tier within 10 minutes on the 2-core machine).

    python benchmarks/bench_whatif.py [--scenario german-credit] [--tier quick] [--workers 2]

Runs the what-if from an empty store (every run of the quick list and of the baselines),
then again on the same store (nothing runs: the judging and the report only), and prints
each against the promise with the runs per second.
"""

from __future__ import annotations

import argparse
import tempfile
import time

PROMISE_S = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="german-credit")
    parser.add_argument("--tier", default="quick", choices=("quick", "smoke", "full"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    from lab.whatif import run_whatif, write

    with tempfile.TemporaryDirectory() as tmp:
        for label in ("empty store", "same store"):
            start = time.perf_counter()
            result = run_whatif(
                args.scenario, tier=args.tier, store=tmp, workers=args.workers, log=lambda _: None
            )
            write(result, f"{tmp}/report")
            seconds = time.perf_counter() - start
            n = len(result.runs)
            print(
                f"{label:12s} {args.scenario}, {args.tier} tier: {n} runs, {seconds:.1f} s "
                f"({n / seconds:.1f} runs/s) with {args.workers} workers; "
                f"{seconds / PROMISE_S:.2f} of the 10-minute promise"
            )


if __name__ == "__main__":
    main()
