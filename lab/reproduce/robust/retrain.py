"""The report of ``studies/robust-retrain.toml`` (spec §5): a table with 95 % CIs, paired
differences against the non-robust reference, and validity against cost.

Reads a finished study directory (``recourse-abm study run``); writes
``robust-retrain.csv`` (mean ± CI per refit schedule and policy), ``robust-retrain-paired.csv``
(policy − reference, paired by seed), ``robust-retrain-valid_vs_cost.png`` and
``robust-retrain.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from lab.study import load_study, summarize

# valid_threshold_refit: advice from an older model against the threshold of its issue
# tick (spec §5's valid_threshold; the tick column valid_threshold now judges all advice)
METRICS = (
    "rr",
    "rf",
    "mean_cost",
    "valid_retrained",
    "valid_threshold_refit",
    "policy_price_of_robustness",
)
LABELS = {
    "rr": "RR",
    "rf": "RF",
    "mean_cost": "mean cost",
    "valid_retrained": "valid_retrained",
    "valid_threshold_refit": "valid_threshold_refit",
    "policy_price_of_robustness": "price of robustness",
}
REFERENCE = "robust-l1:alpha=0,lam=2"


def _half_width(d: np.ndarray) -> float:
    """95 % CI half-width of the mean of ``d`` (Student t), NaN below two values."""
    from scipy import stats

    if d.size < 2:
        return math.nan
    return float(stats.t.ppf(0.975, d.size - 1)) * float(d.std(ddof=1)) / math.sqrt(d.size)


def retrain_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, 95 % CI half-width and n per (retrain_every, policy) of :data:`METRICS`."""
    return summarize(runs, ["retrain_every", "policy"], list(METRICS))


def paired_differences(runs: pd.DataFrame, reference: str = REFERENCE) -> pd.DataFrame:
    """Per (retrain_every, policy): mean of policy − ``reference`` over the seeds both ran
    (arrivals are paired by seed) and its 95 % CI half-width (Student t)."""
    ok = runs[runs["status"] == "ok"]
    rows = []
    for every, group in ok.groupby("retrain_every", sort=True):
        ref = group[group["policy"] == reference].set_index("seed")
        for policy, g in group.groupby("policy", sort=False):
            if policy == reference:
                continue
            g = g.set_index("seed")
            row = {"retrain_every": every, "policy": policy, "reference": reference}
            for m in METRICS:
                d = (g[m] - ref[m]).dropna().to_numpy(float) if m in g else np.array([])
                row[m] = float(d.mean()) if d.size else math.nan
                row[f"{m}_ci"] = _half_width(d)
            row["n"] = int(ref.index.intersection(g.index).size)
            rows.append(row)
    return pd.DataFrame(rows)


def plot_valid_vs_cost(summary: pd.DataFrame, path: str | Path) -> Path:
    """valid_retrained (filled) and valid_threshold_refit (hollow) against mean cost, one point
    per policy with 95 % CIs, one panel per refit schedule."""
    from matplotlib.figure import Figure

    schedules = sorted(summary["retrain_every"].unique())
    policies = list(dict.fromkeys(summary["policy"]))
    fig = Figure(figsize=(5.5 * len(schedules), 4.4))
    axes = fig.subplots(1, len(schedules), sharex=True, sharey=True, squeeze=False)
    for ax, every in zip(axes[0], schedules, strict=True):
        panel = summary[summary["retrain_every"] == every]
        for j, policy in enumerate(policies):
            r = panel[panel["policy"] == policy]
            if r.empty:
                continue
            r = r.iloc[0]
            x, xe = r["mean_cost"], np.nan_to_num(r["mean_cost_ci"])
            for metric, face in (("valid_retrained", f"C{j}"), ("valid_threshold_refit", "none")):
                if np.isfinite(r[metric]):
                    ax.errorbar(
                        x,
                        r[metric],
                        xerr=xe,
                        yerr=np.nan_to_num(r[f"{metric}_ci"]),
                        fmt="o",
                        color=f"C{j}",
                        mfc=face,
                        capsize=2,
                        label=policy if metric == "valid_retrained" else None,
                    )
        title = "no refits" if every == 0 else f"refit every {every} ticks"
        if every == 0:
            ax.text(
                0.5,
                0.5,
                "no refits: valid_retrained and\nvalid_threshold_refit are undefined",
                ha="center",
                va="center",
                transform=ax.transAxes,
            )
            for j, policy in enumerate(policies):  # the costs alone
                r = panel[panel["policy"] == policy]
                if not r.empty:
                    ax.axvline(r.iloc[0]["mean_cost"], color=f"C{j}", lw=1, alpha=0.6)
        ax.set_title(f"retrain_every = {every} ({title})")
        ax.set_xlabel("mean cost of advice (difficulty-weighted L1)")
        ax.set_ylim(-0.05, 1.05)
    axes[0][0].set_ylabel("share of advice still valid after a refit")
    handles, labels = axes[0][-1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(
        "Robust recourse under refits: filled = valid_retrained, hollow = "
        "valid_threshold_refit (mean ± 95 % CI, 5 seeds)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def _cell(mean: float, ci: float, digits: int = 3) -> str:
    if not np.isfinite(mean):
        return "n/a"
    return f"{mean:.{digits}f} ± {ci:.{digits}f}" if np.isfinite(ci) else f"{mean:.{digits}f}"


def markdown_table(df: pd.DataFrame, signed: bool = False) -> str:
    """Rows of ``df`` (summary or paired differences) as a Markdown table with CIs."""
    head = "| retrain_every | policy | " + " | ".join(LABELS[m] for m in METRICS) + " |"
    lines = [head, "|---" * (len(METRICS) + 2) + "|"]
    for r in df.itertuples(index=False):
        d = r._asdict()
        cells = []
        for m in METRICS:
            text = _cell(d[m], d[f"{m}_ci"])
            cells.append(("+" if signed and np.isfinite(d[m]) and d[m] >= 0 else "") + text)
        lines.append(f"| {d['retrain_every']} | `{d['policy']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_retrain_report(
    study: str | Path, out: str | Path, name: str = "robust-retrain"
) -> list[Path]:
    """The report files of the study in ``study`` under ``out`` (see the module doc)."""
    _, runs = load_study(study)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = retrain_summary(runs)
    paired = paired_differences(runs)
    csv, pcsv = out / f"{name}.csv", out / f"{name}-paired.csv"
    summary.round(6).to_csv(csv, index=False)
    paired.round(6).to_csv(pcsv, index=False)
    png = plot_valid_vs_cost(summary, out / f"{name}-valid_vs_cost.png")
    md = out / f"{name}.md"
    n_seeds = int(summary["n"].max()) if len(summary) else 0
    md.write_text(
        "\n".join(
            [
                f"# Study `{name}`: robust recourse under model refits",
                "",
                f"`recourse-abm study run studies/{name}.toml --out results/{name} --workers 2`, then "
                f"`recourse-abm reproduce robust --case retrain --study results/{name} --out docs/studies`. "
                f"Mean ± 95 % CI over {n_seeds} seeds (Student t), 40 ticks, preset `retraining`.",
                "",
                "## Per policy",
                "",
                markdown_table(summary),
                "",
                f"## Paired differences against `{REFERENCE}` (same seeds)",
                "",
                markdown_table(paired, signed=True),
                "",
                f"![valid_retrained and valid_threshold_refit against cost]({png.name})",
                "",
                "`valid_retrained`: waiting advice issued under an older model that the model in force "
                "still scores at its goal (goal = M_issue(X_cf)); `valid_threshold_refit`: the same advice "
                "still at or above the threshold of its issue tick; price of robustness: mean L1 cost "
                "of the advice over that of the exact α = 0 optimum on the same rows, minus 1 (tick "
                "column `policy_price_of_robustness`). Both validities are NaN without refits.",
                "",
            ]
        )
    )
    return [csv, pcsv, png, md]
