"""Write the README's column lists from the code: python scripts/readme_columns.py [--check]

The lists sit between ``<!-- columns:NAME -->`` and ``<!-- /columns -->`` markers, so they
cannot drift from the tables the model writes; tests/test_readme.py runs ``--check``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def column_lists() -> dict[str, str]:
    """Marker name -> the backticked, comma-separated column list."""
    from abm.model import RecourseModel

    model = RecourseModel("paper", "threshold", seed=0, ticks=2, agents=False).run()
    ticks = list(model.tick_table().columns)
    candidates = []
    for col in model.candidate_table().columns:
        name = re.sub(r"_\d+$", "_i", col)  # one entry per per-feature family
        if name not in candidates:
            candidates.append(name)
    return {"ticks": ", ".join(ticks), "candidates": ", ".join(candidates)}


def render(text: str, lists: dict[str, str]) -> str:
    for name, cols in lists.items():
        pattern = re.compile(rf"(<!-- columns:{name} -->).*?(<!-- /columns -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"README.md has no <!-- columns:{name} --> marker")
        text = pattern.sub(lambda m, c=cols: f"{m.group(1)}`{c}`{m.group(2)}", text)
    return text


def main() -> int:
    text = README.read_text()
    new = render(text, column_lists())
    if "--check" in sys.argv[1:]:
        if new != text:
            print("README.md column lists are stale: run python scripts/readme_columns.py")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
