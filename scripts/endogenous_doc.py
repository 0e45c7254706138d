"""Write the tables of docs/endogenous-shift.md from the shipped study table
(results/endogenous-shift/table.csv):

    python scripts/endogenous_doc.py [--check] [--table PATH]

Per generator the outcome card's figures (mean [95 % interval] over worlds and episodes,
worlds resampled first), then each generator's paired differences to ``none`` and to
Wachter's generator; a difference whose interval excludes 0 is in bold. ``--check`` (run
by tests/test_endogenous.py) fails when the page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from lab.docblocks import fill_block
from lab.experiments.endogenous import markdown

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "endogenous-shift.md"
TABLE = ROOT / "results" / "endogenous-shift" / "table.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    return fill_block(DOC, "shift-tables", markdown(pd.read_csv(args.table)), check=args.check,
                      command="python scripts/endogenous_doc.py")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
