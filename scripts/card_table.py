"""Write the outcome card's figure table in docs/outcome-card.md from abm.mechanisms.FIGURES:
python scripts/card_table.py [--check] (tests/test_card.py runs --check)."""

from __future__ import annotations

import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "outcome-card.md"


def table() -> str:
    from abm.mechanisms import FIGURES

    rows = ["| figure | what it is | needs |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {f.label.replace('|', chr(92) + '|')} | {f.needs} |" for f in FIGURES]
    return "\n".join(rows)


def main() -> int:
    from lab.docblocks import fill_block

    return fill_block(
        DOC,
        "figures",
        table(),
        check="--check" in sys.argv[1:],
        command="python scripts/card_table.py",
    )


if __name__ == "__main__":
    sys.exit(main())
