"""Robustness to refits on one scale (issue 48, item 1): the robust and ROAR policies over
their ball radius α, from the runs of ``studies/robust-alpha.toml``.

    recourse-abm study run studies/robust-alpha.toml --out STORE --workers 2
    python scripts/robust_alpha.py STORE [--out results/robust-alpha] [--check]

Per preset (``retraining``, ``lending``) and policy: advice from an older model that
clears the threshold of its issue tick under the model in force (``valid_after_refit``,
the scale every policy shares), the same judged against the policy's own goal
(``own_goal_after_refit``, what robust recourse used to be judged by), RR, RF and the cost
of advice, each the mean [95 % interval] over worlds (:mod:`lab.study.stats`). Every
policy's paired difference in ``valid_after_refit``, RR and RF to ``threshold`` carries a
verdict; the family is every such difference of the report, corrected with Holm. Writes
``table.csv`` and fills the ``robust-alpha`` block of docs/robust.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from abm.provenance import RESULTS_SCHEMA
from lab.docblocks import fill_block
from lab.study import load_study
from lab.study.analysis import paired_rows, policy_cells
from lab.study.stats import add_verdicts

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "robust.md"
FIGURES = ("valid_after_refit", "own_goal_after_refit", "rr", "rf", "cost_recommended")
# the paired differences that carry a verdict, and the baseline they are paired with
CONTRASTS = ("valid_after_refit", "rr", "rf")
BASELINES = {"threshold": "threshold"}
SURVIVES = ("better", "worse", "higher", "lower", "level")


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (preset, policy, figure): mean, lo, hi over worlds, and the paired
    difference to ``threshold`` with its verdict (Holm over the report's contrasts)."""
    rows = []
    for preset, part in runs.groupby("scenario", sort=False):
        rows += paired_rows(
            policy_cells(part, FIGURES), FIGURES, BASELINES, head={"preset": preset}
        )
    board = pd.DataFrame(rows)
    # only the contrasts this report reads join the family
    shown = board["figure"].isin(CONTRASTS)
    judged = add_verdicts(board[shown], list(BASELINES), method="holm")
    board = board.join(judged[[c for c in judged.columns if c not in board.columns]])
    board["results_schema"] = RESULTS_SCHEMA
    return board


def _num(x: float) -> str:
    return "–" if x != x else f"{x:.3f}".replace("-", "−")


def _ci(mean: float, lo: float, hi: float) -> str:
    return "–" if mean != mean else f"{_num(mean)} [{_num(lo)}, {_num(hi)}]"


def _diff(row: pd.Series) -> str:
    m = row["vs_threshold"]
    if m != m:
        return ""
    sign = "+" if m >= 0 else ""
    text = f"{sign}{_num(m)}"
    verdict = row.get("vs_threshold_verdict", "")
    verdict = verdict if isinstance(verdict, str) else ""
    return f"**{text}** {verdict}" if verdict in SURVIVES else f"{text} {verdict}".rstrip()


def markdown(board: pd.DataFrame) -> str:
    """Per preset, one row per policy: each figure with its interval, then the paired
    differences to ``threshold`` with their verdicts."""
    out = []
    for preset, part in board.groupby("preset", sort=False):
        n = int(part["worlds"].max())
        out += [
            f"**{preset}** ({n} worlds x {int(part['episodes'].max())} episode)",
            "",
            "| policy | valid after refit (threshold) | own goal after refit | RR | RF "
            "| cost | Δ valid after refit | Δ RR | Δ RF |",
            "|---" * 9 + "|",
        ]
        for policy, g in part.groupby("policy", sort=False):
            at = g.set_index("figure")
            cells = [_ci(*at.loc[f, ["mean", "lo", "hi"]]) for f in FIGURES]
            cells += [_diff(at.loc[f]) for f in CONTRASTS]
            out.append(f"| `{policy}` | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path, nargs="?", help="the study's --out (its runs)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "robust-alpha")
    parser.add_argument("--check", action="store_true", help="only check the docs block")
    args = parser.parse_args()
    if args.store is not None:
        _, runs = load_study(args.store)
        board = table(runs[runs["status"] == "ok"])
        args.out.mkdir(parents=True, exist_ok=True)
        board.to_csv(args.out / "table.csv", index=False)
    board = pd.read_csv(args.out / "table.csv")
    return fill_block(
        DOC,
        "robust-alpha",
        markdown(board),
        check=args.check,
        command="python scripts/robust_alpha.py",
    )


if __name__ == "__main__":
    sys.exit(main())
