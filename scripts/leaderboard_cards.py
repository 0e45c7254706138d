"""Make the report cards of the built-in entries, the rows of docs/leaderboard.md.

    python scripts/leaderboard_cards.py [--tier full] [--workers 2] [--only NAME ...]
        [--baselines results/benchmark/baselines-full.parquet]
    python scripts/leaderboard_cards.py --rejudge [--tier full] [--reports DIR]
    python scripts/benchmark_doc.py     # then the page, from results/benchmark/cards/

All entries of a tier run in one pass (:func:`lab.benchmark.run.run_benchmarks`: the
baselines' runs are read once, each card is the one its entry gets alone), on the store
of ``recourse-abm benchmark``, so it resumes and reuses what is there. Each card goes to
``results/benchmark/cards/NAME-TIER.json`` (its page to ``results/benchmark/NAME/TIER/``).
The entries are :data:`lab.benchmark.leaderboard.BUILT_IN`; the built-in policies not
entered, and why, are its ``NOT_ENTERED`` (the leaderboard page lists them).

``--rejudge``: the shipped cards of an earlier protocol version that runs the same runs
(:func:`lab.benchmark.card.rejudge`), and the shipped baselines, carried over to this one
without running anything again: each card's tables judged again from its runs (they must
come out the same), and ``check_policy`` run under this version's rules. ``--reports DIR``
keeps each entry's check report as ``NAME.txt`` and reuses it, so a pass cut short resumes.
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
    parser.add_argument(
        "--rejudge", action="store_true", help="carry earlier-version cards over, no runs"
    )
    parser.add_argument("--reports", type=Path, default=None, help="check reports kept here")
    parser.add_argument(
        "--baselines",
        type=Path,
        default=None,
        help="the baselines' runs from this file (card.export_baselines), none run again",
    )
    args = parser.parse_args(argv)
    entries = BUILT_IN[args.tier]
    names = args.only or list(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        print(f"--only = {unknown[0]!r} is not allowed: one of {', '.join(entries)}")
        return 2
    if args.rejudge:
        return rejudge(names, args.tier, args.reports)
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
        baselines=None if args.baselines is None else card.read_baselines(args.baselines),
    )
    for name, outcome in zip(names, outcomes, strict=True):
        paths = card.write(outcome, ROOT / "results" / "benchmark" / name / args.tier)
        target = ROOT / CARDS / f"{name}-{args.tier}.json"
        shutil.copyfile(paths["json"], target)
        print(f"{name}: {target.relative_to(ROOT)}", flush=True)
    print(f"{len(names)} cards in {time.perf_counter() - start:.0f} s")
    return 0


def rejudge(names: list[str], tier: str, reports: Path | None) -> int:
    """Carry the shipped baselines and cards ``names`` of ``tier`` over to this version."""
    from lab.benchmark.protocol import VERSION

    start = time.perf_counter()
    shipped = ROOT / card.BASELINES
    card.carry_baselines(shipped)
    if reports is not None:
        reports.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = ROOT / CARDS / f"{name}-{tier}.json"
        if not target.is_file():  # an entry new in this version: made, not carried
            print(f"{name}: no card to carry over", flush=True)
            continue
        doc = card.load(target)
        if doc["protocol"]["version"] == VERSION:
            print(f"{name}: already {VERSION}", flush=True)
            continue
        kept = None if reports is None else reports / f"{name}.txt"
        check = kept.read_text() if kept is not None and kept.is_file() else None
        outcome, made = card.rejudge(doc, check=check, baselines=shipped)
        if kept is not None and check is None:
            kept.write_text(outcome.check)
        paths = card.write(outcome, ROOT / "results" / "benchmark" / name / tier, made)
        shutil.copyfile(paths["json"], target)
        print(
            f"{name}: {target.relative_to(ROOT)}, {time.perf_counter() - start:.0f} s", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
