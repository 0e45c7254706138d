"""Report of studies/fairness-scarf.toml: means, paired differences against `none` with
95 % t-intervals, and per-tick plots of dp_gap and w_dist (budget 5).

    recourse-abm study run studies/fairness-scarf.toml --out STORE --workers 2
    python scripts/fairness_study_report.py STORE        # writes docs/studies/fairness-scarf*
"""

import sys

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from abm.app.study import load_study

ticks, runs = load_study(sys.argv[1])
runs = runs[runs.status == "ok"]
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
lines = [
    "# fairness-scarf study",
    "",
    "`studies/fairness-scarf.toml`: preset fair-scarf, 100 ticks, budgets 5/10/20/40 (episode, L1), "
    "policies none / ei (decision_model = ei, no advice) / threshold / scarf-mlp / scarf, 5 paired seeds "
    "(spec: 30; fewer here: each scarf run trains its generator). "
    f"{len(runs)} runs, 539 s on 2 workers. Rerun with `recourse-abm study run studies/fairness-scarf.toml --out DIR`.",
    "",
    "## Means over seeds (episode means of the tick columns)",
    "",
    "| budget | policy | seeds | " + " | ".join(cols) + " |",
    "|---" * (len(cols) + 3) + "|",
]
g = runs.groupby(["budget", "policy"])
for (b, p), d in g:
    lines.append(
        f"| {b:g} | {p} | {len(d)} | " + " | ".join(f"{d[c].mean():.4f}" for c in cols) + " |"
    )
lines += [
    "",
    "## Paired differences vs `none` (same seed), mean and 95 % t-CI",
    "",
    "| budget | policy | pairs | Δ dp_gap | Δ w_dist | Δ mean_p_true_accepted |",
    "|---|---|---|---|---|---|",
]
for b, db in runs.groupby("budget"):
    base = db[db.policy == "none"].set_index("seed")
    for p, dp in db.groupby("policy"):
        if p == "none":
            continue
        d = dp.set_index("seed")
        common = d.index.intersection(base.index)
        cells = []
        for c in ("dp_gap", "w_dist", "mean_p_true_accepted"):
            x = (d.loc[common, c] - base.loc[common, c]).to_numpy(float)
            if len(x) >= 2:
                h = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
                cells.append(f"{x.mean():+.4f} [{x.mean() - h:+.4f}, {x.mean() + h:+.4f}]")
            else:
                cells.append(f"{x.mean():+.4f} (1 pair)" if len(x) else "-")
        lines.append(f"| {b:g} | {p} | {len(common)} | " + " | ".join(cells) + " |")
lines += [
    "",
    "Per-tick plots (budget 5): `fairness-scarf-dp_gap.png`, `fairness-scarf-w_dist.png`.",
    "",
]
open("docs/studies/fairness-scarf.md", "w").write("\n".join(lines))
t = ticks.drop(columns=[c for c in ("policy", "budget") if c in ticks]).merge(
    runs[["run_id", "policy", "budget"]], on="run_id"
)
t = t[t.budget == 5.0]
for m in ("dp_gap", "w_dist"):
    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for p, d in t.groupby("policy"):
        s = d.groupby("tick")[m].mean().rolling(5, min_periods=1).mean()
        ax.plot(s.index, s.values, label=p)
    ax.set_xlabel("tick")
    ax.set_ylabel(m)
    ax.set_title(f"fair-scarf, budget 5: {m} (mean over seeds, 5-tick rolling)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(f"docs/studies/fairness-scarf-{m}.png", dpi=100, metadata={"Software": None})
print("\n".join(lines))
