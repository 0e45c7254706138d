"""Headline figures of the five world-extension presets, each against its twin without the
mechanism (or against a simple alternative policy), on paired seeds.

    python scripts/extension_presets.py                       # 10 seeds, 100 ticks
    python scripts/extension_presets.py --seeds 3 --ticks 40  # a quick look

Writes results/extensions/figures.csv (one row per preset, arm and metric: mean and 95 %
CI over seeds), results/extensions/figures.md (the tables docs/mechanisms/ quotes, with the
paired differences B - A and their 95 % CIs) and one PNG per preset (the mechanism's tick
columns, means over seeds, both arms). Arms share seeds, so each arrival, dropout and
implementation draw is common to both (common random numbers).
"""

from __future__ import annotations

import argparse
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

# preset -> (what the comparison shows, arm A, arm B, metrics); an arm is
# (label, scenario overrides, policy)
COMPARISONS = {
    "improvement": (
        "threshold advice when the proxies 8, 9 are uninformative (r = 0: the model ignores "
        "them) vs informative (r = 0.9, the preset: the model rewards them)",
        ("r = 0", {"noncausal_strength": 0.0}, "threshold"),
        ("r = 0.9 (preset)", {}, "threshold"),
        [
            "proxy_share",
            "mean_true_gain",
            "improvement_rate",
            "impl_improvement_rate",
            "gaming_rate",
            "tp_rate",
            "mean_p_true_accepted",
            "rr",
            "rf",
        ],
    ),
    "retraining": (
        "advice exactly at the threshold vs a constant goal margin of 0.05 (same recommender)",
        ("threshold", {}, "threshold"),
        ("margin 0.05", {}, "last-threshold:margin=0.05+exact-linear"),
        ["valid_retrained", "valid_threshold_refit", "score_drop", "rr", "rf", "mean_cost"],
    ),
    "groups": (
        "threshold advice vs no advice, two groups with group 0 shifted down on features 0-4",
        ("no advice", {}, "none"),
        ("threshold", {}, "threshold"),
        ["dp_gap", "w_dist", "accept_rate_g0", "accept_rate_g1", "rr", "rf"],
    ),
    "causal": (
        "threshold advice with the chain 7 -> 4 -> 1 vs the same world without the graph",
        ("no graph", {"causal_graph": ()}, "threshold"),
        ("chain 7 -> 4 -> 1 (preset)", {}, "threshold"),
        ["propagated", "rr", "rf", "mean_cost", "effort"],
    ),
    "budget": (
        "threshold advice under a per-tick L1 budget of 1.0 vs unlimited advice",
        ("unlimited", {"budget": None}, "threshold"),
        ("budget 1.0 per tick (preset)", {}, "threshold"),
        ["n_withheld", "budget_spent", "rr", "rf", "mean_cost"],
    ),
}


def run_one(task: tuple[str, str, dict, str, int, int]) -> tuple[str, str, int, dict, pd.DataFrame]:
    """One episode; returns its episode figures and its tick table."""
    from abm import RecourseModel

    preset, label, overrides, policy, seed, ticks = task
    model = RecourseModel(preset, policy, seed=seed, agents=False, ticks=ticks, **overrides)
    model.run()
    tt = model.tick_table()
    summary = model.summary()
    row = {k: v for k, v in summary.items() if isinstance(v, int | float)}
    for col in (
        "valid_retrained",
        "valid_threshold_refit",
        "score_drop",
        "gaming_rate",
        "impl_improvement_rate",
        "accept_rate_g0",
        "accept_rate_g1",
        "mean_true_gain",
    ):
        if col in tt.columns:
            row[col] = float(tt[col].mean(skipna=True))
    row["n_withheld"] = float(tt["n_withheld"].mean())
    if "budget_spent" in tt.columns:
        row["budget_spent"] = float(tt["budget_spent"].mean())
    ct = model.candidate_table()
    dx = ct.filter(like="dx_").abs()
    proxies = [f"dx_{i}" for i in model.config.noncausal_features]
    # share of the advised change (L1) that falls on non-causal features
    row["proxy_share"] = float(dx[proxies].to_numpy().sum() / dx.to_numpy().sum())
    dprop = ct.filter(like="dprop_")
    # mean |propagated change| (L1) per implemented piece of advice
    n_impl = int(ct["implemented"].sum())
    row["propagated"] = float(dprop.abs().to_numpy().sum() / n_impl) if n_impl else 0.0
    return preset, label, seed, row, tt


def _ci(v: np.ndarray) -> float:
    from scipy import stats

    v = v[~np.isnan(v)]
    if v.size < 2:
        return math.nan
    return float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def _plot(preset: str, ticks: dict[str, list[pd.DataFrame]], out: Path) -> None:
    from matplotlib.figure import Figure

    from lab.plots import _panels

    first = next(iter(ticks.values()))[0]
    panels = _panels(first)
    extra = [("RR / RF", [("rr", "RR"), ("rf", "RF")], "rate")]
    panels = panels + extra
    fig = Figure(figsize=(8, 2.5 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    styles = ["-", "--"]
    for ax, (name, lines, ylabel) in zip(axes, panels, strict=True):
        for style, (label, tables) in zip(styles, ticks.items(), strict=False):
            mean = pd.concat(tables).groupby("tick").mean(numeric_only=True)
            for i, (col, text) in enumerate(lines):
                if col in mean.columns and mean[col].notna().any():
                    roll = mean[col].rolling(5, min_periods=1).mean()
                    ax.plot(mean.index, roll, style, color=f"C{i}", label=f"{text} · {label}")
        ax.set_title(name, fontsize=10, loc="left")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7, loc="best")
    axes[-1].set_xlabel("tick (5-tick rolling means of the mean over seeds)")
    fig.suptitle(f"preset {preset}: solid = {list(ticks)[0]}, dashed = {list(ticks)[1]}")
    fig.savefig(out / f"{preset}.png", dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--ticks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default="results/extensions")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [
        (preset, label, overrides, policy, seed, args.ticks)
        for preset, (_, *arms, _) in COMPARISONS.items()
        for label, overrides, policy in arms
        for seed in range(args.seeds)
    ]
    results: dict[tuple[str, str], dict[int, dict]] = {}
    ticks: dict[str, dict[str, list[pd.DataFrame]]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for n, (preset, label, seed, row, tt) in enumerate(pool.map(run_one, tasks), 1):
            results.setdefault((preset, label), {})[seed] = row
            ticks.setdefault(preset, {}).setdefault(label, []).append(tt)
            print(f"\r{n}/{len(tasks)} episodes", end="", flush=True)
    print()
    rows, md = [], [f"Paired seeds 0-{args.seeds - 1}, {args.ticks} ticks; ± = 95 % CI.", ""]
    for preset, (story, arm_a, arm_b, metrics) in COMPARISONS.items():
        a, b = results[preset, arm_a[0]], results[preset, arm_b[0]]
        md += [
            f"### `{preset}`: {story}",
            "",
            f"| metric | A: {arm_a[0]} | B: {arm_b[0]} | B − A (paired) |",
            "|---|---|---|---|",
        ]
        for m in metrics:
            va = np.array([a[s].get(m, math.nan) for s in sorted(a)], dtype=float)
            vb = np.array([b[s].get(m, math.nan) for s in sorted(b)], dtype=float)
            diff = vb - va
            cells = []
            for label, v in (("A", va), ("B", vb), ("B-A", diff)):
                mean = float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
                rows.append(
                    {
                        "preset": preset,
                        "arm": label,
                        "metric": m,
                        "mean": mean,
                        "ci": _ci(v),
                        "n": int(np.isfinite(v).sum()),
                    }
                )
                cells.append("n/a" if math.isnan(mean) else f"{mean:.3f} ± {_ci(v):.3f}")
            md.append(f"| {m} | " + " | ".join(cells) + " |")
        md.append("")
        _plot(preset, ticks[preset], out)
    pd.DataFrame(rows).to_csv(out / "figures.csv", index=False)
    (out / "figures.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    print(f"written to {out}/ (figures.csv, figures.md, one PNG per preset)")


if __name__ == "__main__":
    main()
