"""Write the protocol's table of docs/benchmark.md from lab.benchmark.protocol.

python scripts/benchmark_doc.py            # rewrite the block
python scripts/benchmark_doc.py --check    # exit 1 if it is stale (tests/test_benchmark.py)
"""

from __future__ import annotations

import sys
from pathlib import Path

from lab.benchmark.protocol import describe
from lab.docblocks import fill_block

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmark.md"


def main() -> int:
    check = "--check" in sys.argv[1:]
    return fill_block(
        DOC, "benchmark-tiers", describe(), check=check, command="python scripts/benchmark_doc.py"
    )


if __name__ == "__main__":
    sys.exit(main())
