"""Summarising study results: mean ± 95 % CI per sweep point, Pareto fronts, plots.

Plots are drawn on :class:`matplotlib.figure.Figure` objects (no pyplot state, no
backend switch); matplotlib and scipy load only when a report is made.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.app.study.runner import load_study, read_manifest
from abm.validation import ConfigError

__all__ = ["load_study", "pareto_front", "plot_pareto", "plot_sweep", "read_manifest", "report",
           "summarize"]  # fmt: skip


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats, maximising both ``x`` and ``y``.

    A point is on the front when no other has x >= and y >= with one of them >. Points
    with a NaN or infinite coordinate are never on it; of exact duplicates the first is
    kept. The indices come by increasing x (so y decreases along the front).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    idx = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    # x descending, ties by y descending; lexsort is stable, so duplicates keep their order
    order = idx[np.lexsort((-y[idx], -x[idx]))]
    front, best = [], -np.inf
    for i in order:
        if y[i] > best:
            front.append(i)
            best = y[i]
    return np.array(front[::-1], dtype=np.int64)


def _t_quantile(n: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1)) if n > 1 else math.nan


def summarize(runs: pd.DataFrame, by: list[str], metrics: list[str]) -> pd.DataFrame:
    """Mean, 95 % CI half-width (Student t over seeds) and n per group, per metric.

    Columns: ``by``, ``n``, then ``<metric>``, ``<metric>_ci`` for each metric. Undefined
    (NaN) values are left out of that metric's mean and count.
    """
    ok = runs[runs["status"] == "ok"] if "status" in runs else runs
    rows = []
    for key, group in ok.groupby(by, sort=False, dropna=False) if by else [((), ok)]:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(by, key, strict=True))
        row["n"] = len(group)
        for m in metrics:
            v = group[m].astype(float).dropna().to_numpy() if m in group else np.array([])
            row[m] = float(v.mean()) if v.size else math.nan
            row[f"{m}_ci"] = (_t_quantile(v.size) * float(v.std(ddof=1)) / math.sqrt(v.size)
                              if v.size > 1 else math.nan)  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def _label(field: str) -> str:
    return {"beta": "β", "validity": "validity T", "rr": "recourse reliability RR",
            "rf": "recourse feasibility RF", "elapsed_s": "seconds per run", "run_s": "seconds per episode (ticks only)",
            "mean_cost": "mean recommended cost"}.get(field, field)  # fmt: skip


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series)


def _draw_policies(ax, panel: pd.DataFrame, x: str, metric: str, colors: dict, levels) -> None:
    """Mean ± 95 % CI of ``metric`` per policy of one panel: at categorical positions
    ``levels`` (side by side, error bars), or, when ``levels`` is None, as lines with a CI band
    over the numeric ``x``."""
    width = 0.7 / max(len(colors), 1)
    for j, (policy, g) in enumerate(panel.groupby("policy", sort=False)):
        y, ci = g[metric].to_numpy(float), g[f"{metric}_ci"].to_numpy(float)
        if levels is not None:
            xs = np.array([levels.index(v) for v in g[x]]) + (j - (len(colors) - 1) / 2) * width
            ax.errorbar(xs, y, yerr=np.nan_to_num(ci), fmt="o", color=colors[policy], label=policy,
                        ms=4, capsize=2, lw=1)  # fmt: skip
        else:
            g = g.sort_values(x)
            xs = g[x].to_numpy()
            y, ci = g[metric].to_numpy(float), g[f"{metric}_ci"].to_numpy(float)
            ax.plot(xs, y, "o-", color=colors[policy], label=policy, ms=4)
            ax.fill_between(xs, y - np.nan_to_num(ci), y + np.nan_to_num(ci), color=colors[policy],
                            alpha=0.18, lw=0)  # fmt: skip


def plot_sweep(
    table: pd.DataFrame,
    x: str,
    metric: str,
    facet: list[str],
    path: Path,
    title: str = "",
    xlabel: str | None = None,
) -> Path:
    """``metric`` (mean ± 95 % CI) against the swept ``x``, one colour per policy and one
    panel per combination of the ``facet`` fields. Up to four x values are drawn side by
    side with error bars, more as lines with a CI band."""
    panels = [((), table)] if not facet else list(table.groupby(facet, sort=False))
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    panels = panels[:6]
    fig = Figure(figsize=(3.6 * len(panels) + 1.2, 3.4), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)
    policies = list(dict.fromkeys(table["policy"]))
    colors = {p: colormaps["tab10"](i % 10) for i, p in enumerate(policies)}
    levels = list(dict.fromkeys(table[x]))
    # few x values: categorical positions, policies side by side with error bars;
    # many: lines with a CI band over the numeric axis
    categorical = len(levels) <= 4 or not _numeric(table[x])
    if categorical and _numeric(table[x]):
        levels = sorted(levels)
    for ax, (key, panel) in zip(axes[0], panels, strict=True):
        _draw_policies(ax, panel, x, metric, colors, levels if categorical else None)
        if categorical:
            ax.set_xticks(
                range(len(levels)), [f"{v:g}" if _numeric(table[x]) else str(v) for v in levels]
            )
        numeric = not categorical
        if numeric and table[x].min() > 0 and table[x].max() / table[x].min() >= 50:
            ax.set_xscale("log")
        if facet:
            key = key if isinstance(key, tuple) else (key,)
            ax.set_title(
                ", ".join(f"{_label(f)} = {v}" for f, v in zip(facet, key, strict=True)), fontsize=9
            )
        ax.set_xlabel(xlabel or _label(x))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(_label(metric))
    values = table[metric].dropna()
    if metric in ("rr", "rf"):
        axes[0][0].set_ylim(-0.03, 1.03)
    elif len(values) and values.min() > 0 and values.max() / values.min() >= 50:
        axes[0][0].set_yscale("log")  # e.g. seconds per run over populations of 10 to 100,000
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=90)
    return path


def _short(field: str) -> str:
    return {"beta": "β", "validity": "T"}.get(field, field)


def plot_pareto(
    table: pd.DataFrame,
    runs: pd.DataFrame,
    path: Path,
    title: str = "",
    label_fields: tuple[str, ...] = (),
) -> Path:
    """RF (x) against RR (y): each run faint, each sweep point's mean solid, and each
    policy's Pareto front (higher is better on both)."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.6, 4.4), layout="constrained")
    ax = fig.subplots()
    policies = list(dict.fromkeys(table["policy"]))
    for i, policy in enumerate(policies):
        color = colormaps["tab10"](i % 10)
        r = runs[(runs["policy"] == policy) & (runs["status"] == "ok")]
        ax.scatter(r["rf"], r["rr"], s=6, color=color, alpha=0.2, lw=0)
        g = table[table["policy"] == policy].dropna(subset=["rr", "rf"])
        ax.scatter(g["rf"], g["rr"], s=22, color=color, label=policy, edgecolor="k", lw=0.4)
        if label_fields and len(table) <= 16:  # few points: say which sweep point each is
            for _, row in g.iterrows():
                text = ",".join(
                    f"{_short(f)}={row[f]:g}" if _numeric(g[f]) else str(row[f])
                    for f in label_fields
                )
                ax.annotate(text, (row["rf"], row["rr"]), fontsize=6, xytext=(3, 2),
                            textcoords="offset points", color=color)  # fmt: skip
        if len(g):
            f = pareto_front(g["rf"].to_numpy(float), g["rr"].to_numpy(float))
            ax.step(g["rf"].to_numpy()[f], g["rr"].to_numpy()[f], where="post", color=color, lw=1.2)
    ax.set_xlabel(_label("rf"))
    ax.set_ylabel(_label("rr"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title or "RR vs RF per sweep point, Pareto front per policy", fontsize=10)
    fig.savefig(path, dpi=90)
    return path


def report(
    out: str | Path, metrics: list[str] | None = None, plots: str | Path | None = None
) -> tuple[pd.DataFrame, list[Path]]:
    """Summary table (mean ± CI per sweep point) and PNG plots of a study directory.

    Plots go to ``plots`` (default ``out/report``): ``<metric>_vs_<field>.png`` for every
    sweep axis other than the policy (a ``[[zip]]`` group is named by its first field), and ``rr_rf_pareto.png`` when RR and RF
    are available.
    """
    manifest = read_manifest(out)
    _, runs = load_study(out)
    if runs.empty:
        raise ConfigError(f"{out} holds no finished runs yet")
    if "policy" not in runs:  # an experiment without a policy: one series, named after it
        runs = runs.assign(policy=manifest.get("experiment", "runs"))
    metrics = list(metrics or manifest["report_metrics"])
    missing = [m for m in metrics if m not in runs]
    if missing:
        raise ConfigError(f"metric(s) not in the results: {', '.join(missing)}; "
                          f"available: {', '.join(c for c in runs.columns if _numeric(runs[c]))}")  # fmt: skip
    fields = [f for f in manifest["axis_fields"] if f != "policy"]
    by = ["policy", *fields]
    table = summarize(runs, by, metrics)
    plot_dir = Path(plots) if plots is not None else Path(out) / "report"
    plot_dir.mkdir(parents=True, exist_ok=True)
    written = []
    title = manifest["name"]
    # one x per axis: fields of a [[zip]] group move together, the first one names them
    groups = {a[0]: a for a in manifest["axes"] if a[0] != "policy" and table[a[0]].nunique() > 1}
    leads = list(groups)
    for x in leads:
        facet = [f for f in leads if f != x]
        xlabel = _label(x) + (f" (with {', '.join(groups[x][1:])})" if len(groups[x]) > 1 else "")
        for m in metrics:
            written.append(
                plot_sweep(table, x, m, facet, plot_dir / f"{m}_vs_{x}.png", title, xlabel)
            )
    if {"rr", "rf"} <= set(runs.columns) and {"rr", "rf"} <= set(metrics):
        written.append(plot_pareto(table, runs, plot_dir / "rr_rf_pareto.png", title, tuple(leads)))
    table.to_csv(plot_dir / "summary.csv", index=False)
    return table, written
