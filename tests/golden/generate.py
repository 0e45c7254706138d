"""Write tests/golden/golden.json from the current code: python tests/golden/generate.py"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, case_id, dumps, run_case  # noqa: E402


def main() -> None:
    out = {}
    for i, case in enumerate(CASES):
        out[case_id(case)] = run_case(case)
        print(f"[{i + 1}/{len(CASES)}] {case_id(case)}", flush=True)
    (Path(__file__).parent / "golden.json").write_text(dumps(out))


if __name__ == "__main__":
    main()
