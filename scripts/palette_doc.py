"""Write the colour and dash sentences of docs/dashboard.md and docs/teaching.md from the
dashboard's palette (dashboards/palette.py) and the policies' styles
(dashboards.data.policy_styles):

    python scripts/palette_doc.py [--check]

``--check`` (run by tests/test_dashboard_words.py) fails when a page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dashboards import data, palette
from dashboards.settings import MAX_POLICIES
from lab.docblocks import fill_blocks

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "dashboard.md"
TEACHING = ROOT / "docs" / "teaching.md"
COMMAND = "python scripts/palette_doc.py"


def policy_words() -> list[tuple[str, str, str]]:
    """(policy, colour name, dash name) of each policy that has a fixed style."""
    out = []
    for p in data.STYLE_ORDER:
        colour, dash = data.policy_styles([p])[p]
        out.append((p, palette.name_of(colour), palette.dash_name(dash)))
    return out


def outcome_words() -> str:
    return ", ".join(f"**{o}** {c}" for o, c in palette.OUTCOMES.items())


def dashboard_block() -> str:
    rows = "\n".join(f"| `{p}` | {c} | {d} |" for p, c, d in policy_words())
    measures = ", ".join(palette.dash_name(d) for d in palette.MEASURE_DASHES[:4])
    return (
        f"Outcomes have their own colours, used for nothing else: {outcome_words()}. Every "
        "policy has its own colour and dash, keyed by its name whatever it is shown with "
        "(policies not listed get the next free ones):\n\n"
        "| policy | colour | its dash |\n|---|---|---|\n"
        f"{rows}\n\n"
        f"**One rule for dashes.** {palette.DASH_RULE} A chart's measures take the dashes "
        f"{measures}, in the order of its legend. {palette.reference_words()}\n\n"
        f"The policy colours (up to {MAX_POLICIES} on a page) differ by at least "
        f"{palette.MIN_DELTA_E:g} in CIEDE2000 from each other and from the outcome "
        "colours, black and dark grey (`tests/test_dashboard_words.py`)."
    )


def teaching_block() -> str:
    named = ", ".join(f"`{p}` {c}" for p, c, _ in policy_words()[:6])
    return (
        "Colours mean the same everywhere. Outcomes have their own colours, used for "
        f"nothing else: {outcome_words()}. Every policy has its own colour, keyed by its "
        f"name whatever it is shown with: {named}. {palette.reference_words()} Dashes follow "
        "one rule, stated with the full table in "
        "[colours and dashes](dashboard.md#colours-and-dashes)."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    return max(
        fill_blocks(DASHBOARD, {"palette": dashboard_block()}, check=args.check, command=COMMAND),
        fill_blocks(TEACHING, {"palette": teaching_block()}, check=args.check, command=COMMAND),
    )


if __name__ == "__main__":
    sys.exit(main())
