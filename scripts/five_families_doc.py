"""Write the "which policy for which goal" tables of docs/five-families.md from the shipped
leaderboard (results/five-families/leaderboard.csv):

    python scripts/five_families_doc.py [--check] [--board PATH]

For every goal of the outcome card and every preset where its mechanism is on, the policy
with the best mean among those that advise (``none`` is the control, shown beside), its
mean [95 % interval] over worlds and episodes, its RR and RF (a best figure bought with
the others shows there), and its paired differences to the constant
margin (the strongest simple baseline), to ``threshold`` and to ``none``; a difference
whose interval excludes 0 is in bold. ``--check`` (run by tests/test_five_families.py)
fails when the page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from lab.docblocks import fill_blocks
from lab.experiments.five_families import MARGIN

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "five-families.md"
BOARD = ROOT / "results" / "five-families" / "leaderboard.csv"
SHORT = {
    MARGIN: "margin 0.05",
    "last-threshold+rbr:num_samples=50,inner_iter=20": "rbr (50 samples)",
}  # the page defines the margin once, then names it short
# goal -> (figure, +1 when higher is better, -1 when lower is)
GOALS = {
    "reliability": ("rr", +1),
    "feasibility": ("rf", +1),
    "low cost": ("cost_recommended", -1),
    "low risk (CVaR95 of effort)": ("cvar95_effort", -1),
    "true improvement": ("true_gain", +1),
    "little gaming": ("noncausal_share", -1),
    "truly qualified acceptances": ("qualified_rate", +1),
    "validity after refits": ("valid_after_refit", +1),
    "parity between groups": ("dp_gap", -1),
    "equal reliability between groups": ("rr_gap", -1),
}


def _name(policy: str) -> str:
    return f"`{SHORT.get(policy, policy)}`"


def _num(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def _ci(mean: float, lo: float, hi: float, signed: bool = False) -> str:
    if mean != mean:
        return "–"
    f = (lambda v: ("+" if v >= 0 else "") + _num(v)) if signed else _num
    text = f"{f(mean)} [{f(lo)}, {f(hi)}]"
    return f"**{text}**" if signed and (lo > 0 or hi < 0) else text


def tables(board: pd.DataFrame) -> str:
    main = board[board["study"] == "five-families"]
    out = []
    for goal, (fig, sign) in GOALS.items():
        part = main[main["figure"] == fig]
        if part.empty:
            continue
        arrow = "higher" if sign > 0 else "lower"
        rows = []
        head = [f"**{goal}** (`{fig}`, {arrow} is better)", "",
                "| preset | worlds × episodes | best | its value | − margin 0.05 | − threshold "
                "| − none | `none` | its RR, RF |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for preset, g in part.groupby("preset", sort=False):
            advising = g[(g["policy"] != "none") & g["mean"].notna()]
            if advising.empty:
                continue
            best = advising.loc[(sign * advising["mean"]).idxmax()]
            none = g[g["policy"] == "none"]
            ctrl = _ci(*none.iloc[0][["mean", "lo", "hi"]]) if len(none) else "–"
            cells = [_ci(*best[[f"vs_{k}", f"vs_{k}_lo", f"vs_{k}_hi"]], signed=True)
                     for k in ("margin", "threshold", "none")]  # fmt: skip
            mine = main[(main["preset"] == preset) & (main["policy"] == best["policy"])]
            rr_rf = ", ".join(_num(mine.loc[mine["figure"] == f, "mean"].iloc[0])
                              for f in ("rr", "rf"))  # fmt: skip
            rows.append(f"| {preset} | {int(best['worlds'])} × {int(best['episodes'])} | "
                       f"{_name(best['policy'])} | {_ci(best['mean'], best['lo'], best['hi'])} | "
                       f"{' | '.join(cells)} | {ctrl} | {rr_rf} |")  # fmt: skip
        if rows:
            out += [*head, *rows, ""]
    return "\n".join(out).rstrip()


GENERATORS_STUDY = "five-families-generators"
# the figures of the generators' table: (figure, heading)
GENERATOR_FIGURES = (("rr", "RR"), ("rf", "RF"), ("cost_recommended", "cost"))


def generator_tables(board: pd.DataFrame) -> str:
    """Per preset, each generator's RR, RF and recommended cost, and its paired differences
    in RR and RF to the margin and to ``threshold`` (the same worlds and seeds)."""
    part = board[board["study"] == GENERATORS_STUDY]
    out = []
    for preset, g in part.groupby("preset", sort=False):
        head = [f"**{preset}** ({int(g['worlds'].iloc[0])} worlds × {int(g['episodes'].iloc[0])} "
                "episodes)", "",
                "| policy | RR | RF | cost | RR − margin 0.05 | RF − margin 0.05 | RR − threshold "
                "| RF − threshold |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        rows = []
        for policy in dict.fromkeys(g["policy"]):
            if policy == "none":
                continue
            mine = g[g["policy"] == policy].set_index("figure")
            cells = [_ci(*mine.loc[f, ["mean", "lo", "hi"]]) for f, _ in GENERATOR_FIGURES]
            for key in ("margin", "threshold"):
                cells += [_ci(*mine.loc[f, [f"vs_{key}", f"vs_{key}_lo", f"vs_{key}_hi"]],
                              signed=True) for f in ("rr", "rf")]  # fmt: skip
            rows.append(f"| {_name(policy)} | {' | '.join(cells)} |")
        out += [*head, *rows, ""]
    return "\n".join(out).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--board", type=Path, default=BOARD)
    args = parser.parse_args()
    board = pd.read_csv(args.board)
    bodies = {"goals": tables(board), "generators": generator_tables(board)}
    return fill_blocks(DOC, bodies, check=args.check, command="python scripts/five_families_doc.py")


if __name__ == "__main__":
    sys.exit(main())
