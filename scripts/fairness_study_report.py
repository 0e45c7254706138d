"""Report of studies/fairness-scarf.toml: means over seeds, paired differences (same seed,
same budget) with 95 % t-intervals against `none` and against `threshold`, over the whole
episode and over its last 25 ticks, and per-tick plots of dp_gap and w_dist.

    recourse-abm study run studies/fairness-scarf.toml --out STORE --workers 1
    python scripts/fairness_study_report.py STORE        # writes docs/studies/fairness-scarf*
"""

import sys

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from lab.study import load_study

LATE = 75  # the late window: ticks 75-99 of 100

ticks, runs = load_study(sys.argv[1])
failed = int((runs.status != "ok").sum())
runs = runs[runs.status == "ok"]
ticks = ticks.drop(columns=[c for c in ("policy", "budget") if c in ticks]).merge(
    runs[["run_id", "policy", "budget"]], on="run_id"
)
late = ticks[ticks.tick >= LATE].groupby("run_id")[["dp_gap", "w_dist"]].mean()
runs = runs.join(late.add_prefix("late_"), on="run_id")
n_seeds = runs.seed.nunique()
cols = [
    "dp_gap",
    "w_dist",
    "w_score",
    "rr",
    "rf",
    "mean_p_true_accepted",
    "decision_accuracy",
    "budget_spent",
]


def ci(x: np.ndarray) -> str:
    """mean [95 % t-interval] of paired differences x (pairs,)."""
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return f"{x.mean():+.4f} ({len(x)} pair)" if len(x) else "-"
    h = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():+.4f} [{x.mean() - h:+.4f}, {x.mean() + h:+.4f}]"


def paired(reference: str, metrics: list[str]) -> list[str]:
    """Rows of a table: each policy minus ``reference`` at the same budget and seed."""
    out = []
    for b, db in runs.groupby("budget"):
        base = db[db.policy == reference].set_index("seed")
        for p, dp in db.groupby("policy"):
            if p == reference:
                continue
            d = dp.set_index("seed")
            common = d.index.intersection(base.index)
            cells = [ci((d.loc[common, c] - base.loc[common, c]).to_numpy(float)) for c in metrics]
            out.append(f"| {b:g} | {p} | {len(common)} | " + " | ".join(cells) + " |")
    return out


lines = [
    "# fairness-scarf study",
    "",
    "`studies/fairness-scarf.toml`: preset fair-scarf, 100 ticks, budgets 5/10/20/40 (episode, L1), "
    "policies none / ei (decision_model = ei, no advice) / threshold / scarf-mlp / scarf, "
    f"{n_seeds} paired seeds; {len(runs)} runs ok, {failed} not. "
    "Rerun with `recourse-abm study run studies/fairness-scarf.toml --out DIR --workers 1`, then "
    "`python scripts/fairness_study_report.py DIR`.",
    "",
    "## Means over seeds (episode means of the tick columns)",
    "",
    "| budget | policy | seeds | " + " | ".join(cols) + " |",
    "|---" * (len(cols) + 3) + "|",
]
for (b, p), d in runs.groupby(["budget", "policy"]):
    lines.append(
        f"| {b:g} | {p} | {len(d)} | " + " | ".join(f"{d[c].mean():.4f}" for c in cols) + " |"
    )
lines += [
    "",
    "## Paired differences vs `none` (same seed and budget), mean and 95 % t-CI",
    "",
    f"Episode means, and the late window (ticks {LATE}-99): does the gap narrow over time?",
    "",
    "| budget | policy | pairs | Δ dp_gap | Δ w_dist | Δ dp_gap, late | Δ w_dist, late "
    "| Δ mean_p_true_accepted |",
    "|---|---|---|---|---|---|---|---|",
    *paired("none", ["dp_gap", "w_dist", "late_dp_gap", "late_w_dist", "mean_p_true_accepted"]),
    "",
    "## Paired differences vs `threshold` (the same budget spent on standard advice)",
    "",
    "| budget | policy | pairs | Δ rr | Δ rf | Δ mean_p_true_accepted | Δ dp_gap | Δ w_dist |",
    "|---|---|---|---|---|---|---|---|",
    *[
        r
        for r in paired("threshold", ["rr", "rf", "mean_p_true_accepted", "dp_gap", "w_dist"])
        if "| none |" not in r and "| ei |" not in r
    ],
    "",
    "Per-tick plots (budget 40, mean over seeds, 5-tick rolling): `fairness-scarf-dp_gap.png`, "
    "`fairness-scarf-w_dist.png`.",
    "",
]
open("docs/studies/fairness-scarf.md", "w").write("\n".join(lines))
t = ticks[ticks.budget == 40.0]
for m in ("dp_gap", "w_dist"):
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for p, d in t.groupby("policy"):
        s = d.groupby("tick")[m].mean().rolling(5, min_periods=1).mean()
        ax.plot(s.index, s.values, label=p)
    ax.set_xlabel("tick")
    ax.set_ylabel(m)
    ax.set_title(f"fair-scarf, budget 40: {m} ({n_seeds} seeds, 5-tick rolling)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(f"docs/studies/fairness-scarf-{m}.png", dpi=100, metadata={"Software": None})
print("\n".join(lines))
