"""Constant-margin fronts read off at RR 0.95, per seed (issue 14, items 6 and 7).

Two analyses of `episode` studies whose policies are ``last-threshold:margin=c+REC``:

    python scripts/margin_fronts.py hybrid-gap results/hybrid-gap
    python scripts/margin_fronts.py behaviour results/behaviour-T1-b005 results/behaviour-T1-b001

``hybrid-gap`` (``studies/hybrid-gap.toml``: exact-linear margins with eq. 8's failures or
eq. 6's dropout switched off) writes ``rf_at_rr095.csv`` and ``fronts.png`` into the study
directory (docs/hybrid-gap.md). ``behaviour`` (``studies/behaviour-T1-*.toml``: the margin
fronts of exact-linear with uniform, estimated and true difficulties and of φ, under the
calibrated and the SPEC's default behaviour) writes ``sensitivity.csv`` and
``sensitivity_pairs.csv`` into the first directory's parent folder ``behaviour/``.

Each seed's front over the margins is read off at RR 0.95 as the Pareto study does
(:func:`lab.reproduce.pareto.read_off`). The seeds share their random numbers across
margins, recommenders and conditions, so means and paired differences over the 10 seeds
come with Student-t intervals. ``success`` is the share of reapplicants who carried out
everything asked (n_succ / n_reapplied over the episode) at the margin nearest RR 0.95.
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

from lab.reproduce.pareto import PAPER_TABLE3, read_off
from lab.study import load_study
from lab.study.runner import read_manifest

RECOMMENDERS = {
    "exact-linear": "exact-linear, uniform weights",
    "exact-linear:weights=true": "exact-linear, true difficulties",
}
CONDITIONS = [
    (0.05, 1.0, "calibrated world"),
    (math.inf, 1.0, "every change succeeds"),
    (0.05, 0.0, "no dropout"),
    (math.inf, 0.0, "neither"),
]


def tidy(runs: pd.DataFrame) -> pd.DataFrame:
    """The finished runs with ``margin`` and ``recommender`` split out of the policy spec."""
    ok = runs[runs["status"] == "ok"].copy()
    parts = ok["policy"].str.split("+", n=1)
    ok["margin"] = parts.str[0].str.split("margin=").str[1].astype(float)
    ok["recommender"] = parts.str[1]
    ok["success"] = ok["n_succ"] / ok["n_reapplied"] if "n_succ" in ok else np.nan
    return ok


def per_seed(runs: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per group of ``by`` and seed: RF read off that seed's front at RR 0.95."""
    rows = []
    for key, cell in runs.groupby([*by, "seed"]):
        cell = cell.sort_values("margin")
        rr, rf = cell["rr"].to_numpy(), cell["rf"].to_numpy()
        f, r = read_off(rr, rf)
        near = int(np.argmin(np.abs(rr - 0.95)))
        rows.append(
            {
                **dict(zip([*by, "seed"], key, strict=True)),
                "rf_at_rr095": f,
                "rr_reached": r,
                "success": cell["success"].to_numpy()[near],
            }
        )
    return pd.DataFrame(rows)


def _interval(v: np.ndarray) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean of ``v`` (n,) with a 95 % Student-t interval."""
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def summarise(seeds: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean RF at RR 0.95 over seeds per group of ``by``, with its interval."""
    rows = []
    for key, cell in seeds.groupby(by):
        mean, lo, hi = _interval(cell["rf_at_rr095"].to_numpy())
        rows.append(
            {
                **dict(zip(by, key, strict=True)),
                "rf_at_rr095": mean,
                "rf_lo": lo,
                "rf_hi": hi,
                "rr_reached": cell["rr_reached"].mean(),
                "success_near_rr095": cell["success"].mean(),
                "seeds": len(cell),
            }
        )
    return pd.DataFrame(rows)


def paired(seeds: pd.DataFrame, by: list[str], column: str, a: str, b: str) -> dict:
    """Mean of (RF of ``a`` − RF of ``b``) in ``column`` over seeds, per the rest of ``by``."""
    wide = seeds.pivot_table(index=[*by, "seed"], columns=column, values="rf_at_rr095")
    out = []
    for key, cell in (wide[a] - wide[b]).groupby(level=list(range(len(by)))):
        mean, lo, hi = _interval(cell.to_numpy())
        key = key if isinstance(key, tuple) else (key,)
        out.append(
            {
                **dict(zip(by, key, strict=True)),
                "difference": f"{a} − {b}",
                "diff": mean,
                "diff_lo": lo,
                "diff_hi": hi,
            }
        )
    return out


# -- the hybrid gap (docs/hybrid-gap.md) ------------------------------------------------
def condition(beta: float, rho: float) -> str:
    return next(c[2] for c in CONDITIONS if c[0] == beta and c[1] == rho)


def hybrid_gap(out: Path) -> pd.DataFrame:
    runs = tidy(_load(out))
    seeds = per_seed(runs, ["recommender", "beta", "rho"])
    table = summarise(seeds, ["recommender", "beta", "rho"])
    table.insert(
        3, "condition", [condition(b, r) for b, r in zip(table.beta, table.rho, strict=True)]
    )
    table.to_csv(out / "rf_at_rr095.csv", index=False)
    figure(runs).savefig(out / "fronts.png", dpi=90)
    print(f"written: {out / 'rf_at_rr095.csv'}, {out / 'fronts.png'}")
    return table


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


# -- sensitivity to the behaviour parameters (issue 14, item 7) -----------------------------
def _short(rec: str) -> str:
    """margin front name of a recommender spec, as in the Pareto study."""
    if rec.startswith("rl:path="):
        return "margin-phi"
    return {
        "exact-linear": "margin-exact-linear",
        "exact-linear:weights=estimated": "margin-estimated",
        "exact-linear:weights=true": "margin-true",
    }[rec]


def behaviour(outs: list[Path]) -> pd.DataFrame:
    # beta is fixed per study ([set]), so it comes from the study's base scenario
    runs = pd.concat(
        [tidy(_load(o)).assign(beta=read_manifest(o)["base_scenario"]["beta"]) for o in outs],
        ignore_index=True,
    )
    runs["method"] = runs["recommender"].map(_short)
    runs["behaviour"] = np.where(runs["rho"] == 1.0, "calibrated (1, 0, 0)", "spec (2, 0.1, 1)")
    seeds = per_seed(runs, ["beta", "behaviour", "method"])
    table = summarise(seeds, ["beta", "behaviour", "method"])
    pairs = []
    for a, b in (
        ("margin-phi", "margin-true"),
        ("margin-true", "margin-estimated"),
        ("margin-estimated", "margin-exact-linear"),
    ):
        pairs += paired(seeds, ["beta", "behaviour"], "method", a, b)
    for m in sorted(seeds["method"].unique()):  # spec − calibrated, per method
        pairs += [
            {**r, "method": m}
            for r in paired(
                seeds[seeds.method == m],
                ["beta"],
                "behaviour",
                "spec (2, 0.1, 1)",
                "calibrated (1, 0, 0)",
            )
        ]
    where = outs[0].parent / "behaviour"
    where.mkdir(exist_ok=True)
    table.to_csv(where / "sensitivity.csv", index=False)
    pd.DataFrame(pairs).to_csv(where / "sensitivity_pairs.csv", index=False)
    with pd.option_context("display.width", 160, "display.precision", 3):
        print(pd.DataFrame(pairs).to_string(index=False))
    print(f"written: {where / 'sensitivity.csv'}, {where / 'sensitivity_pairs.csv'}")
    return table


def _load(out: Path) -> pd.DataFrame:
    _, runs = load_study(out)
    if runs.empty:
        sys.exit(f"no finished runs in {out}: run the study first")
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("analysis", choices=["hybrid-gap", "behaviour"])
    parser.add_argument("out", type=Path, nargs="+", help="the study output directories")
    args = parser.parse_args()
    if args.analysis == "hybrid-gap":
        table = hybrid_gap(args.out[0])
    else:
        table = behaviour(args.out)
    with pd.option_context("display.width", 160, "display.precision", 3):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
