"""Summarising study results: mean ± 95 % CI per sweep point, Pareto fronts, plots.

Plots are drawn on :class:`matplotlib.figure.Figure` objects (no pyplot state, no
backend switch); matplotlib and scipy load only when a report is made.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from abm.validation import ConfigError
from lab.study.runner import load_study, read_manifest
from lab.study.stats import BOUNDS, difference_p, tost_p, world_interval

# the per-policy comparison among a report's figures
POLICY_FIGURE = "policies.png"

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from abm.config import ScenarioConfig

__all__ = [
    "StudyReport",
    "build_report",
    "load_study",
    "paired_rows",
    "pareto_figure",
    "pareto_front",
    "plot_pareto",
    "plot_sweep",
    "png_bytes",
    "policy_cells",
    "policy_figure",
    "read_manifest",
    "report",
    "run_status",
    "summarize",
    "sweep_figure",
    "write_plots",
]


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


def figures_on(figures: Sequence[str], preset: str | ScenarioConfig) -> tuple[str, ...]:
    """The card ``figures`` defined in ``preset`` (a preset's name or a scenario): those
    of the world, and those of each world extension it switches on (a figure of one that
    is off is undefined there)."""
    from abm.mechanisms import FIGURES
    from abm.scenarios import PRESETS

    needs = {f.name: f.needs for f in FIGURES}
    on = (PRESETS[preset] if isinstance(preset, str) else preset).mechanisms
    return tuple(f for f in figures if not needs.get(f) or needs[f] in on)


def policy_cells(runs: pd.DataFrame, figures: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """policy -> figure -> (worlds, episodes) array of ``runs`` (columns ``policy``,
    ``world_seed``, ``seed`` and each figure), worlds and seeds in ascending order."""
    worlds = sorted(runs["world_seed"].unique())
    out = {}
    for policy, g in runs.groupby("policy", sort=False):
        g = g.sort_values(["world_seed", "seed"])
        world = g["world_seed"].to_numpy()
        rows = [np.flatnonzero(world == w) for w in worlds]  # each world's, once a policy
        out[policy] = {
            f: np.array([values[r] for r in rows])
            for f, values in ((f, g[f].to_numpy(float)) for f in figures)
        }
    return out


def paired_rows(
    cells: dict[str, dict[str, np.ndarray]],
    figures: tuple[str, ...],
    baselines: dict[str, str],
    head: dict[str, Any] | None = None,
    bounds: Mapping[str, float] | None = None,
) -> list[dict]:
    """One row per (policy, figure) of :func:`policy_cells`: ``head``, then policy, figure,
    worlds (those with a defined episode), episodes, mean, lo, hi
    (:func:`lab.study.stats.world_interval`), ``bound`` (the figure's equivalence bound,
    NaN for none; ``bounds`` defaults to :data:`lab.study.stats.BOUNDS`) and, for each key
    of ``baselines``, the paired difference to that baseline policy on the same worlds and
    seeds: ``vs_<key>`` with ``_lo``, ``_hi``, ``_worlds``, ``_p`` (two-sided t-test on
    world means) and ``_tost_p`` (TOST within ±bound), NaN for the baseline itself or where
    it did not run. The p-values are uncorrected: :func:`lab.study.stats.add_verdicts`
    corrects a report's family and gives the verdicts."""
    bounds = BOUNDS if bounds is None else bounds
    rows = []
    for policy, figs in cells.items():
        for f in figures:
            mean, lo, hi, n = world_interval(figs[f])
            bound = bounds.get(f, math.nan)
            row = {
                **(head or {}),
                "policy": policy,
                "figure": f,
                "worlds": n,
                "episodes": figs[f].shape[1],
                "mean": mean,
                "lo": lo,
                "hi": hi,
                "bound": bound,
            }
            for key, base in baselines.items():
                d, p, tost = (math.nan, math.nan, math.nan, 0), math.nan, math.nan
                if base in cells and base != policy:
                    diff = figs[f] - cells[base][f]
                    d = world_interval(diff)
                    p, tost = difference_p(diff), tost_p(diff, bound=bound)
                row.update(
                    {
                        f"vs_{key}": d[0],
                        f"vs_{key}_lo": d[1],
                        f"vs_{key}_hi": d[2],
                        f"vs_{key}_worlds": d[3],
                        f"vs_{key}_p": p,
                        f"vs_{key}_tost_p": tost,
                    }
                )
            rows.append(row)
    return rows


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
            row[f"{m}_ci"] = (
                _t_quantile(v.size) * float(v.std(ddof=1)) / math.sqrt(v.size)
                if v.size > 1
                else math.nan
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _label(field: str) -> str:
    return {
        "beta": "β",
        "validity": "validity T",
        "rr": "recourse reliability RR",
        "rf": "recourse feasibility RF",
        "elapsed_s": "seconds per run",
        "run_s": "seconds per episode (ticks only)",
        "mean_cost": "mean recommended cost",
    }.get(field, field)


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
            ax.errorbar(
                xs,
                y,
                yerr=np.nan_to_num(ci),
                fmt="o",
                color=colors[policy],
                label=policy,
                ms=4,
                capsize=2,
                lw=1,
            )
        else:
            g = g.sort_values(x)
            xs = g[x].to_numpy()
            y, ci = g[metric].to_numpy(float), g[f"{metric}_ci"].to_numpy(float)
            ax.plot(xs, y, "o-", color=colors[policy], label=policy, ms=4)
            ax.fill_between(
                xs,
                y - np.nan_to_num(ci),
                y + np.nan_to_num(ci),
                color=colors[policy],
                alpha=0.18,
                lw=0,
            )


def sweep_figure(
    table: pd.DataFrame,
    x: str,
    metric: str,
    facet: list[str],
    title: str = "",
    xlabel: str | None = None,
) -> Figure:
    """``metric`` (mean ± 95 % CI) against the swept ``x``, one colour per policy and one
    panel per combination of the ``facet`` fields (the first six). Up to four x values are
    drawn side by side with error bars, more as lines with a CI band."""
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
    return fig


def plot_sweep(
    table: pd.DataFrame,
    x: str,
    metric: str,
    facet: list[str],
    path: Path,
    title: str = "",
    xlabel: str | None = None,
) -> Path:
    """:func:`sweep_figure` written to ``path`` as a PNG."""
    Path(path).write_bytes(png_bytes(sweep_figure(table, x, metric, facet, title, xlabel)))
    return Path(path)


def _short(field: str) -> str:
    return {"beta": "β", "validity": "T"}.get(field, field)


def pareto_figure(
    table: pd.DataFrame,
    runs: pd.DataFrame,
    title: str = "",
    label_fields: tuple[str, ...] = (),
) -> Figure:
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
                ax.annotate(
                    text,
                    (row["rf"], row["rr"]),
                    fontsize=6,
                    xytext=(3, 2),
                    textcoords="offset points",
                    color=color,
                )
        if len(g):
            f = pareto_front(g["rf"].to_numpy(float), g["rr"].to_numpy(float))
            ax.step(g["rf"].to_numpy()[f], g["rr"].to_numpy()[f], where="post", color=color, lw=1.2)
    ax.set_xlabel(_label("rf"))
    ax.set_ylabel(_label("rr"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title or "RR vs RF per sweep point, Pareto front per policy", fontsize=10)
    return fig


def plot_pareto(
    table: pd.DataFrame,
    runs: pd.DataFrame,
    path: Path,
    title: str = "",
    label_fields: tuple[str, ...] = (),
) -> Path:
    """:func:`pareto_figure` written to ``path`` as a PNG."""
    Path(path).write_bytes(png_bytes(pareto_figure(table, runs, title, label_fields)))
    return Path(path)


def policy_figure(policies: pd.DataFrame, metrics: list[str], title: str = "") -> Figure:
    """Each policy's mean ± 95 % CI over all of its runs (every sweep point and seed), one
    panel per metric: ``policies`` is :func:`summarize` by policy."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    names = list(policies["policy"])
    fig = Figure(figsize=(1.2 + 2.6 * len(metrics), 1.3 + 0.3 * len(names)), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    colors = [colormaps["tab10"](i % 10) for i in range(len(names))]
    ys = np.arange(len(names))
    for ax, m in zip(axes, metrics, strict=True):
        mean, ci = policies[m].to_numpy(float), policies[f"{m}_ci"].to_numpy(float)
        ax.errorbar(mean, ys, xerr=np.nan_to_num(ci), fmt="none", ecolor="0.4", capsize=2, lw=1)
        ax.scatter(mean, ys, c=colors, s=28, zorder=3)
        ax.set_yticks(ys, names if ax is axes[0] else [""] * len(names), fontsize=8)
        ax.set_ylim(len(names) - 0.5, -0.5)  # first policy on top
        ax.set_xlabel(_label(m))
        ax.grid(alpha=0.3, axis="x")
        if m in ("rr", "rf"):
            ax.set_xlim(-0.03, 1.03)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def png_bytes(fig: Figure, dpi: int = 90) -> bytes:
    """``fig`` as PNG bytes (no software tag, so equal figures give equal bytes)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


@dataclass
class StudyReport:
    """Everything a study report shows, computed once (:func:`build_report`).

    ``runs``: one row per run result (every status); ``status``: run counts (``total``
    runs of the study, ``completed`` ok, ``errors``, ``missing`` not yet run, ``other``
    results of earlier versions of the study added with ``--force``); ``table``: mean ± CI
    per policy and sweep point; ``policies``: the same per policy over all its runs;
    ``figures``: (file name, caption, PNG bytes).
    """

    out: Path
    manifest: dict[str, Any]
    runs: pd.DataFrame
    metrics: list[str]
    fields: list[str]
    status: dict[str, int]
    table: pd.DataFrame
    policies: pd.DataFrame
    figures: list[tuple[str, str, bytes]] = field(default_factory=list)


def run_status(manifest: dict[str, Any], runs: pd.DataFrame) -> dict[str, int]:
    """Counts of the study's runs by outcome (a run with several rows counts once)."""
    expected = {r["run_id"] for r in manifest["runs"]}
    if runs.empty:
        return {
            "total": len(expected),
            "completed": 0,
            "errors": 0,
            "missing": len(expected),
            "other": 0,
        }
    status = runs.drop_duplicates("run_id").set_index("run_id")["status"]
    mine = status[status.index.isin(expected)]
    return {
        "total": len(expected),
        "completed": int((mine == "ok").sum()),
        "errors": int((mine != "ok").sum()),
        "missing": len(expected - set(status.index)),
        "other": int((~status.index.isin(expected)).sum()),
    }


def build_report(out: str | Path, metrics: list[str] | None = None) -> StudyReport:
    """Summary tables and figures of the study directory ``out`` (see :class:`StudyReport`).

    Figures: ``<metric>_vs_<field>.png`` for every sweep axis other than the policy (a
    ``[[zip]]`` group is named by its first field), ``policies.png`` when several policies
    ran, and ``rr_rf_pareto.png`` when RR and RF are reported. A study without finished
    runs yet has counts but no tables or figures.
    """
    manifest = read_manifest(out)
    _, runs = load_study(out)
    if not runs.empty and "policy" not in runs:
        # an experiment without a policy: one series, named after it
        runs = runs.assign(policy=manifest.get("experiment", "runs"))
    metrics = list(metrics or manifest["report_metrics"])
    ok = runs[runs["status"] == "ok"] if not runs.empty else runs
    missing = [m for m in metrics if m not in ok]
    if not ok.empty and missing:
        raise ConfigError(
            f"metric(s) not in the results: {', '.join(missing)}; "
            f"available: {', '.join(c for c in ok.columns if _numeric(ok[c]))}"
        )
    fields = [f for f in manifest["axis_fields"] if f != "policy"]
    rep = StudyReport(
        out=Path(out),
        manifest=manifest,
        runs=runs,
        metrics=metrics,
        fields=fields,
        status=run_status(manifest, runs),
        table=pd.DataFrame(),
        policies=pd.DataFrame(),
    )
    if ok.empty:
        return rep
    rep.table = summarize(ok, ["policy", *fields], metrics)
    rep.policies = summarize(ok, ["policy"], metrics)
    title = manifest["name"]
    # one x per axis: fields of a [[zip]] group move together, the first one names them
    groups = {
        a[0]: a for a in manifest["axes"] if a[0] != "policy" and rep.table[a[0]].nunique() > 1
    }
    leads = list(groups)
    for x in leads:
        facet = [f for f in leads if f != x]
        with_ = f" (with {', '.join(groups[x][1:])})" if len(groups[x]) > 1 else ""
        for m in metrics:
            fig = sweep_figure(rep.table, x, m, facet, title, _label(x) + with_)
            caption = f"{_label(m)} against {_label(x)}{with_}: mean ± 95 % CI over seeds"
            if facet:
                caption += f", one panel per {', '.join(map(_label, facet))}"
            rep.figures.append((f"{m}_vs_{x}.png", caption, png_bytes(fig)))
    if len(rep.policies) > 1:
        caption = "each policy over all of its runs (every sweep point and seed): mean ± 95 % CI"
        rep.figures.append(
            (POLICY_FIGURE, caption, png_bytes(policy_figure(rep.policies, metrics, title)))
        )
    if {"rr", "rf"} <= set(metrics):
        fig = pareto_figure(rep.table, ok, title, tuple(leads))
        caption = "RR against RF: runs (faint), sweep-point means (solid), Pareto front per policy"
        rep.figures.append(("rr_rf_pareto.png", caption, png_bytes(fig)))
    return rep


def report(
    out: str | Path, metrics: list[str] | None = None, plots: str | Path | None = None
) -> tuple[pd.DataFrame, list[Path]]:
    """Summary table (mean ± CI per sweep point) and PNG plots of a study directory.

    Writes the figures of :func:`build_report` and ``summary.csv`` to ``plots`` (default
    ``out/report``); returns the table and the PNG paths.
    """
    rep = build_report(out, metrics)
    if rep.status["completed"] == 0:
        raise ConfigError(f"{out} holds no finished runs yet")
    return rep.table, write_plots(rep, plots)


def write_plots(rep: StudyReport, plots: str | Path | None = None) -> list[Path]:
    """The report's PNGs and ``summary.csv`` in ``plots`` (default ``out/report``)."""
    plot_dir = Path(plots) if plots is not None else rep.out / "report"
    plot_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, _, png in rep.figures:
        (plot_dir / name).write_bytes(png)
        written.append(plot_dir / name)
    rep.table.to_csv(plot_dir / "summary.csv", index=False)
    return written
