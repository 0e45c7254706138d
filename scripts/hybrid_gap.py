"""Why our hybrids sit below the paper's (issue 14, item 6): the mechanism behind the RF cost.

Reads the study ``studies/hybrid-gap.toml`` (constant goal margins with exact-linear
advice, under the calibrated world and with eq. 8's failures or eq. 6's dropout switched
off) and writes, next to it::

    rf_at_rr095.csv   RF read off each margin front at RR 0.95, per condition
    fronts.png        the fronts, with the paper's Table 3 hybrids at RR 0.95

    recourse-abm study run studies/hybrid-gap.toml --out results/hybrid-gap
    python scripts/hybrid_gap.py results/hybrid-gap

Each seed's front over the margins is read off at RR 0.95 as the Pareto study does
(:func:`abm.app.experiments.pareto.read_off`); the seeds share their random numbers across
margins and conditions, so the mean over the 10 seeds comes with a Student-t interval.
``success`` is the share of reapplicants who carried out everything they were asked
(n_succ / n_reapplied, pooled over the episode's ticks) at the margin nearest RR 0.95.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from abm.app.experiments.pareto import PAPER_TABLE3, read_off
from abm.app.study import load_study

RECOMMENDERS = {"exact-linear": "exact-linear, uniform weights",
                "exact-linear:weights=true": "exact-linear, true difficulties"}  # fmt: skip
CONDITIONS = [(0.05, 1.0, "calibrated world"), (math.inf, 1.0, "every change succeeds"),
              (0.05, 0.0, "no dropout"), (math.inf, 0.0, "neither")]  # fmt: skip


def tidy(runs: pd.DataFrame) -> pd.DataFrame:
    """The finished runs with ``margin`` and ``recommender`` split out of the policy spec."""
    ok = runs[runs["status"] == "ok"].copy()
    parts = ok["policy"].str.split("+", n=1)
    ok["margin"] = parts.str[0].str.split("margin=").str[1].astype(float)
    ok["recommender"] = parts.str[1]
    ok["success"] = ok["n_succ"] / ok["n_reapplied"]
    return ok


def read_offs(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (recommender, beta, rho): RF at RR 0.95, mean and 95 % half-width over seeds."""
    rows = []
    for (rec, beta, rho), cell in runs.groupby(["recommender", "beta", "rho"]):
        rf, rr_used, success = [], [], []
        for _, s in cell.groupby("seed"):
            s = s.sort_values("margin")
            f, r = read_off(s["rr"].to_numpy(), s["rf"].to_numpy())
            rf.append(f)
            rr_used.append(r)
            success.append(s["success"].to_numpy()[np.argmin(np.abs(s["rr"].to_numpy() - 0.95))])
        rf = np.asarray(rf)
        half = stats.t.ppf(0.975, rf.size - 1) * rf.std(ddof=1) / math.sqrt(rf.size)
        label = next(c[2] for c in CONDITIONS if c[0] == beta and c[1] == rho)
        rows.append({"recommender": rec, "beta": beta, "rho": rho, "condition": label,
                     "rf_at_rr095": rf.mean(), "rf_lo": rf.mean() - half,
                     "rf_hi": rf.mean() + half, "rr_reached": float(np.mean(rr_used)),
                     "success_near_rr095": float(np.mean(success)), "seeds": rf.size})  # fmt: skip
    return pd.DataFrame(rows)


def figure(runs: pd.DataFrame) -> Figure:
    """RR against RF, one panel per recommender, one line per condition (means over seeds)."""
    fig = Figure(figsize=(10, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    means = runs.groupby(["recommender", "beta", "rho", "margin"])[["rr", "rf"]].mean()
    for ax, (rec, title) in zip(axes, RECOMMENDERS.items(), strict=True):
        for beta, rho, label in CONDITIONS:
            m = means.loc[(rec, beta, rho)]
            ax.plot(m["rf"], m["rr"], "o-", ms=3, label=label)
        hybrids = [v for k, v in PAPER_TABLE3.items() if k[1] == 0.05 and k[0] != "rl"]
        for i, rf in enumerate(hybrids):
            ax.plot(rf, 0.95, "k*", ms=8, label="paper's hybrids (β = 0.05)" if i == 0 else None)
        ax.axhline(0.95, color="0.7", lw=0.8, ls=":")
        ax.set(title=title, xlabel="recourse feasibility RF", xlim=(0, 1.02))
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("recourse reliability RR")
    axes[1].legend(fontsize=8, loc="lower left")
    fig.suptitle("Constant goal margins 0–0.3 (T = 1, β = 0.05 unless switched off), 10 seeds")
    fig.tight_layout()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the study's output directory")
    args = parser.parse_args()
    _, runs = load_study(args.out)
    if runs.empty:
        sys.exit(f"no finished runs in {args.out}: run the study first")
    runs = tidy(runs)
    table = read_offs(runs)
    table.to_csv(args.out / "rf_at_rr095.csv", index=False)
    figure(runs).savefig(args.out / "fronts.png", dpi=90)
    with pd.option_context("display.width", 140, "display.precision", 3):
        print(table.drop(columns=["beta", "rho"]).to_string(index=False))
    print(f"written: {args.out / 'rf_at_rr095.csv'}, {args.out / 'fronts.png'}")


if __name__ == "__main__":
    main()
