"""Write the tables of docs/endogenous-shift.md from the shipped study tables
(results/endogenous-shift/table.csv and ablation.csv):

    python scripts/endogenous_doc.py [--check] [--table PATH] [--ablation PATH]

Per generator the outcome card's figures (mean [95 % interval] over worlds), then each
generator's paired differences to ``none`` and to Wachter's generator, in bold where they
survive Holm's correction; then the ablation (issue 55): each generator's shifts against
Wachter's in each setting. ``--check`` (run by tests/test_endogenous.py) fails when the
page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from lab.docblocks import fill_blocks
from lab.reproduce.endogenous import ablation_markdown, markdown

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "endogenous-shift.md"
TABLE = ROOT / "results" / "endogenous-shift" / "table.csv"
ABLATION = ROOT / "results" / "endogenous-shift" / "ablation.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--table", type=Path, default=TABLE)
    parser.add_argument("--ablation", type=Path, default=ABLATION)
    args = parser.parse_args()
    blocks = {
        "shift-tables": markdown(pd.read_csv(args.table)),
        "shift-ablation": ablation_markdown(pd.read_csv(args.ablation)),
    }
    return fill_blocks(DOC, blocks, check=args.check, command="python scripts/endogenous_doc.py")


if __name__ == "__main__":
    sys.exit(main())
