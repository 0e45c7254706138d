"""The what-if report on the German Credit world (``recourse-abm whatif -s german-credit``,
quick tier) and its block in docs/own-data.md.

    python scripts/whatif_doc.py            # run it (resumable), write results/whatif/german-credit/
    python scripts/whatif_doc.py --doc      # rewrite the block from the shipped whatif.json
    python scripts/whatif_doc.py --check    # exit 1 if the block is stale (tests/test_docs.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lab.docblocks import fill_block

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "own-data.md"
OUT = ROOT / "results" / "whatif" / "german-credit"
STORE = ROOT / "results" / "whatif" / "store"
COMMAND = "python scripts/whatif_doc.py --doc"


def main() -> int:
    args = sys.argv[1:]
    if not {"--doc", "--check"} & set(args):
        from lab.whatif import run_whatif, write

        result = run_whatif("german-credit", tier="quick", store=STORE, workers=2)
        write(result, OUT)
        print(f"{len(result.runs)} runs in {result.seconds:.0f} s; written to {OUT}")
    doc = json.loads((OUT / "whatif.json").read_text())
    from lab.whatif import markdown

    return fill_block(DOC, "whatif-german", markdown(doc), check="--check" in args, command=COMMAND)


if __name__ == "__main__":
    sys.exit(main())
