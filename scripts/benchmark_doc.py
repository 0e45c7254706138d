"""Write the protocol's table of docs/benchmark.md from lab.benchmark.protocol.

python scripts/benchmark_doc.py            # rewrite the block
python scripts/benchmark_doc.py --check    # exit 1 if it is stale (tests/test_benchmark.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

from lab.benchmark.leaderboard import CARDS, markdown, not_entered
from lab.benchmark.protocol import describe
from lab.docblocks import fill_block

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python scripts/benchmark_doc.py"


def main() -> int:
    check = "--check" in sys.argv[1:]
    blocks = (
        ("benchmark.md", "benchmark-tiers", describe()),
        ("leaderboard.md", "leaderboard", markdown(ROOT / CARDS)),
        ("leaderboard.md", "not-entered", not_entered()),
    )
    status = 0
    for page, name, body in blocks:
        status |= fill_block(ROOT / "docs" / page, name, body, check=check, command=COMMAND)
    return status


if __name__ == "__main__":
    sys.exit(main())
