"""Write the outcome card's figure table in docs/outcome-card.md from abm.card.FIGURES:
python scripts/card_table.py [--check] (tests/test_card.py runs --check)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "outcome-card.md"


def table() -> str:
    from abm.card import FIGURES

    rows = ["| figure | what it is | needs |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {f.label.replace('|', chr(92) + '|')} | {f.needs} |" for f in FIGURES]
    return "\n".join(rows)


def main() -> int:
    text = DOC.read_text()
    new, found = re.subn(r"(<!-- figures -->\n).*?(<!-- /figures -->)",
                         lambda m: m.group(1) + table() + "\n" + m.group(2), text,
                         flags=re.S)  # fmt: skip
    if found != 1:
        print("docs/outcome-card.md has no <!-- figures --> ... <!-- /figures --> block")
        return 1
    if "--check" in sys.argv[1:]:
        if new != text:
            print("docs/outcome-card.md is stale: run python scripts/card_table.py")
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
