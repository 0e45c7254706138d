"""Make the report cards of the built-in entries, the rows of docs/leaderboard.md.

    python scripts/leaderboard_cards.py [--tier full] [--workers 2] [--only NAME ...]
    python scripts/benchmark_doc.py     # then the page, from results/benchmark/cards/

All entries of a tier run in one pass (:func:`lab.benchmark.run.run_benchmarks`: the
baselines' runs are read once, each card is the one its entry gets alone), on the store
of ``recourse-abm benchmark``, so it resumes and reuses what is there. Each card goes to
``results/benchmark/cards/NAME-TIER.json`` (its page to ``results/benchmark/NAME/TIER/``).
The entries are :data:`lab.benchmark.leaderboard.BUILT_IN`; the built-in policies not
entered, and why, are its ``NOT_ENTERED`` (the leaderboard page lists them).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from lab.benchmark import card
from lab.benchmark.leaderboard import BUILT_IN, CARDS
from lab.benchmark.run import DEFAULT_STORE, run_benchmarks
from policies.known_breaks import KNOWN_BREAKS

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tier", default="full", choices=sorted(BUILT_IN))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--only", nargs="*", default=None, help="card names to make")
    args = parser.parse_args(argv)
    entries = BUILT_IN[args.tier]
    names = args.only or list(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        print(f"--only = {unknown[0]!r} is not allowed: one of {', '.join(entries)}")
        return 2
    start = time.perf_counter()
    shown = {"step": -1}

    def progress(done: int, total: int) -> None:
        step = 10 * done // max(total, 1)
        if step != shown["step"] or done == total:
            shown["step"] = step
            print(f"  {done}/{total} runs, {time.perf_counter() - start:.0f} s", flush=True)

    specs = [entries[n] for n in names]
    outcomes = run_benchmarks(
        specs,
        # the rules a built-in policy is known to break, stated on its card
        allow={spec: KNOWN_BREAKS[spec] for spec in specs if spec in KNOWN_BREAKS},
        tier=args.tier,
        store=args.store,
        workers=args.workers,
        progress=progress,
        log=lambda line: print(line, flush=True),
    )
    for name, outcome in zip(names, outcomes, strict=True):
        paths = card.write(outcome, ROOT / "results" / "benchmark" / name / args.tier)
        target = ROOT / CARDS / f"{name}-{args.tier}.json"
        shutil.copyfile(paths["json"], target)
        print(f"{name}: {target.relative_to(ROOT)}", flush=True)
    print(f"{len(names)} cards in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
