"""The what-if reports shipped in docs/own-data.md (``recourse-abm whatif``, quick tier):
on the German Credit preset, and on the worked example with one-hot columns, one-way
features and a fitted Pipeline (examples/german-onehot/).

    python scripts/whatif_doc.py [--only NAME]   # run (resumable), write results/whatif/NAME/
    python scripts/whatif_doc.py --doc           # rewrite the blocks from the shipped JSON
    python scripts/whatif_doc.py --check         # exit 1 if a block is stale (tests/test_docs.py)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lab.docblocks import fill_block

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "own-data.md"
STORE = ROOT / "results" / "whatif" / "store"
COMMAND = "python scripts/whatif_doc.py --doc"
#: report name -> (the scenario as whatif takes it, from the repository root; its block)
REPORTS = {
    "german-credit": ("german-credit", "whatif-german"),
    "german-onehot": ("examples/german-onehot/german-onehot.toml", "whatif-german-onehot"),
}


def main() -> int:
    args = sys.argv[1:]
    names = [args[args.index("--only") + 1]] if "--only" in args else list(REPORTS)
    status = 0
    for name in names:
        scenario, block = REPORTS[name]
        out = ROOT / "results" / "whatif" / name
        if not {"--doc", "--check"} & set(args):
            from lab.whatif import run_whatif, write

            result = run_whatif(scenario, tier="quick", store=STORE, workers=2)
            write(result, out)
            print(f"{len(result.runs)} runs in {result.seconds:.0f} s; written to {out}")
        doc = json.loads((out / "whatif.json").read_text())
        from lab.whatif import markdown

        status |= fill_block(DOC, block, markdown(doc), check="--check" in args, command=COMMAND)
    return status


if __name__ == "__main__":
    sys.exit(main())
