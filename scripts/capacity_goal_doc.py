"""Write the tables of docs/capacity-goal.md from the shipped comparison
(results/capacity-goal/table.csv):

    python scripts/capacity_goal_doc.py [--check] [--table PATH]

RF at RR 0.95 of every front (mean [95 % interval] with the worlds it rests on, world 0
alone, each world), each method against the constant-margin fronts and the paired
differences (Holm-corrected verdicts, in bold where they survive; see
lab.reproduce.capacity_goal.markdown), and RR and RF per phase of the episode for a few
points (results/capacity-goal/phases.csv). ``--check`` (run by tests/test_capacity_goal.py)
fails when the page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from lab.docblocks import fill_blocks
from lab.reproduce.capacity_goal import markdown, phase_markdown

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "capacity-goal.md"
TABLE = ROOT / "results" / "capacity-goal" / "table.csv"
PHASES = ROOT / "results" / "capacity-goal" / "phases.csv"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    bodies = {
        "capacity-tables": markdown(pd.read_csv(args.table)),
        "capacity-phases": phase_markdown(pd.read_csv(PHASES)),
    }
    return fill_blocks(DOC, bodies, check=args.check, command="python scripts/capacity_goal_doc.py")


if __name__ == "__main__":
    sys.exit(main())
