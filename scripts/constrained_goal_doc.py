"""Write the generated tables of docs/constrained-goal.md from results/constrained-goal/.

    python scripts/constrained_goal_doc.py [--check]

Each block sits between ``<!-- constrained-NAME -->`` and ``<!-- /constrained-NAME -->``:
per world, the comparison table (``table.csv``) and the constrained μ's reach (RR per
training seed and world against the target, ``reach.csv``); the trained μ's costs and
final multipliers (``training.csv``, from their manifests). ``--check`` fails if the page differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.docblocks import fill_blocks  # noqa: E402
from lab.reproduce import constrained_goal as rg  # noqa: E402

PAGE = ROOT / "docs" / "constrained-goal.md"
OUT = ROOT / "results" / "constrained-goal"


def reach_markdown(reach: pd.DataFrame) -> str:
    """RR (and RF) per training seed and world, and each seed's mean, against the target."""
    worlds = sorted(reach["world_seed"].unique())
    head = "| μ | training seed | mean RR | mean RF | " + " | ".join(f"w{w}" for w in worlds) + " |"
    rows = [head, "|" + "---|" * (4 + len(worlds))]
    for (method, seed), part in reach.groupby(["method", "training_seed"], sort=False):
        part = part.set_index("world_seed")
        cells = " | ".join(f"{part.loc[w, 'rr']:.3f}" for w in worlds)
        rows.append(
            f"| {method} | {seed} | {part['rr'].mean():.3f} | {part['rf'].mean():.3f} | {cells} |"
        )
    rows.append("")
    for method, part in reach.groupby("method", sort=False):
        below = int((part["rr"] < rg.TARGET).sum())
        rows.append(
            f"{method}: mean RR {part['rr'].mean():.3f} over its {len(part)} (training seed, "
            f"world) values against the target {rg.TARGET:g}; {below} of {len(part)} below "
            f"it, lowest {part['rr'].min():.3f}. Each value is the mean of 5 paired episodes."
        )
        rows.append("")
    return "\n".join(rows).rstrip()


def training_markdown() -> str:
    table = pd.read_csv(OUT / "training.csv")
    rows = ["| world | training seed | ticks | CPU s | λ at the end |", "|---|---|---|---|---|"]
    for r in table.itertuples():
        rows.append(
            f"| {r.world} | {r.training_seed} | {r.steps:,} | {r.cpu_seconds:.0f} | "
            f"{r.multiplier_final:.3g} |"
        )
    rows.append("")
    rows.append(f"Training in all: {table['cpu_seconds'].sum() / 3600:.2f} CPU-hours.")
    return "\n".join(rows)


def blocks() -> dict[str, str]:
    out = {"training": training_markdown()}
    for world in rg.WORLDS:
        table = pd.read_csv(OUT / world / "table.csv")
        out[f"{world}-table"] = rg.markdown(table.drop(columns="results_schema"))
        out[f"{world}-reach"] = reach_markdown(pd.read_csv(OUT / world / "reach.csv"))
        out[f"{world}-tried"] = rg.tried_markdown(pd.read_csv(OUT / world / "tried.csv"))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    args = parser.parse_args()
    bodies = {f"constrained-{name}": body for name, body in blocks().items()}
    return fill_blocks(
        PAGE, bodies, check=args.check, command="python scripts/constrained_goal_doc.py"
    )


if __name__ == "__main__":
    sys.exit(main())
