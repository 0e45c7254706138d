"""Write the tables of docs/five-families.md from the study's shipped figures
(results/five-families/leaderboard.csv):

    python scripts/five_families_doc.py [--check] [--board PATH]

The distances to the constant-margin fronts are on the one leaderboard, docs/leaderboard.md
(scripts/benchmark_doc.py, from the benchmark's report cards). Here, for every goal of the outcome card and every preset where its mechanism is on, the policy
with the best mean among those that advise (``none`` is the control, shown beside; for a
signed gap, the one closest to 0), its mean [95 % interval] over worlds, its RR and RF (a
best figure bought with the others shows there), and its paired differences to the
constant margin 0.05, to ``threshold`` and to ``none``, in bold where the difference
survives the report's correction (BH over every contrast of the leaderboard), with the
verdict beside it. ``--check`` (run by tests/test_five_families.py) fails when the page is
stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from lab.docblocks import fill_blocks
from lab.reproduce.five_families import MARGIN

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "five-families.md"
BOARD = ROOT / "results" / "five-families" / "leaderboard.csv"
SHORT = {
    MARGIN: "margin 0.05",
    "last-threshold+rbr:num_samples=50,inner_iter=20": "rbr (50 samples)",
}  # the page defines the margin once, then names it short
# goal -> (figure, +1 when higher is better, -1 when lower is, 0 when closest to 0 is)
GOALS = {
    "reliability": ("rr", +1),
    "feasibility": ("rf", +1),
    "advice that paid": ("advice_paid", +1),
    "advice valid when used": ("valid_at_reapply", +1),
    "low cost": ("cost_recommended", -1),
    "low risk (CVaR95 of effort)": ("cvar95_effort", -1),
    "true qualification of the accepted": ("h_accepted", +1),
    "little gaming": ("noncausal_share", -1),
    "truly qualified acceptances": ("qualified_rate", +1),
    "validity after refits": ("valid_after_refit", +1),
    "parity of acceptance between groups": ("accept_gap", 0),
    "equal reliability between groups": ("rr_gap", 0),
}
# verdicts that survive the report's correction (lab.study.stats.verdict, front words too)
SURVIVES = ("better", "worse", "higher", "lower", "level", "beats", "trails", "matches")


def _name(policy: str) -> str:
    return f"`{SHORT.get(policy, policy)}`"


def _num(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def _ci(mean: float, lo: float, hi: float, verdict: str | None = None) -> str:
    """``mean [lo, hi]``; with a ``verdict`` (a paired difference): signed, in bold where
    the difference survives the correction, the verdict beside it."""
    if mean != mean:
        return "–"
    if verdict is None:
        return f"{_num(mean)} [{_num(lo)}, {_num(hi)}]"

    def signed(v: float) -> str:
        return ("+" if v >= 0 else "") + _num(v)

    text = f"{signed(mean)} [{signed(lo)}, {signed(hi)}]"
    verdict = verdict if isinstance(verdict, str) else ""
    return f"**{text}** {verdict}" if verdict in SURVIVES else f"{text} {verdict}".rstrip()


def _diff(row: pd.Series, key: str) -> str:
    return _ci(*row[[f"vs_{key}", f"vs_{key}_lo", f"vs_{key}_hi"]], row.get(f"vs_{key}_verdict"))


def tables(board: pd.DataFrame) -> str:
    main = board[board["study"] == "five-families"]
    out = []
    for goal, (fig, sign) in GOALS.items():
        part = main[main["figure"] == fig]
        if part.empty:
            continue
        arrow = {1: "higher is better", -1: "lower is better", 0: "signed, closest to 0 is best"}[
            sign
        ]
        rows = []
        head = [
            f"**{goal}** (`{fig}`, {arrow})",
            "",
            "| preset | worlds × episodes | best | its value | − margin 0.05 | − threshold "
            "| − none | `none` | its RR, RF |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for preset, g in part.groupby("preset", sort=False):
            advising = g[(g["policy"] != "none") & g["mean"].notna()]
            if advising.empty:
                continue
            score = sign * advising["mean"] if sign else -advising["mean"].abs()
            best = advising.loc[score.idxmax()]
            none = g[g["policy"] == "none"]
            ctrl = _ci(*none.iloc[0][["mean", "lo", "hi"]]) if len(none) else "–"
            cells = [_diff(best, k) for k in ("margin", "threshold", "none")]
            mine = main[(main["preset"] == preset) & (main["policy"] == best["policy"])]
            rr_rf = ", ".join(
                _num(mine.loc[mine["figure"] == f, "mean"].iloc[0]) for f in ("rr", "rf")
            )
            rows.append(
                f"| {preset} | {int(best['worlds'])} × {int(best['episodes'])} | "
                f"{_name(best['policy'])} | {_ci(best['mean'], best['lo'], best['hi'])} | "
                f"{' | '.join(cells)} | {ctrl} | {rr_rf} |"
            )
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
        head = [
            f"**{preset}** ({int(g['worlds'].max())} worlds × {int(g['episodes'].max())} "
            "episode" + ("s)" if int(g["episodes"].max()) > 1 else ")"),
            "",
            "| policy | RR | RF | cost | RR − margin 0.05 | RF − margin 0.05 | RR − threshold "
            "| RF − threshold |",
            "|---|---|---|---|---|---|---|---|",
        ]
        rows = []
        for policy in dict.fromkeys(g["policy"]):
            if policy == "none":
                continue
            mine = g[g["policy"] == policy].set_index("figure")
            cells = [_ci(*mine.loc[f, ["mean", "lo", "hi"]]) for f, _ in GENERATOR_FIGURES]
            for key in ("margin", "threshold"):
                cells += [_diff(mine.loc[f], key) for f in ("rr", "rf")]
            rows.append(f"| {_name(policy)} | {' | '.join(cells)} |")
        out += [*head, *rows, ""]
    return "\n".join(out).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--board", type=Path, default=BOARD)
    args = parser.parse_args()
    board = pd.read_csv(args.board)
    bodies = {
        "goals": tables(board),
        "generators": generator_tables(board),
    }
    return fill_blocks(DOC, bodies, check=args.check, command="python scripts/five_families_doc.py")


if __name__ == "__main__":
    sys.exit(main())
