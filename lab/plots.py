"""Plots of simulation results, drawn on :class:`matplotlib.figure.Figure` objects.

Figures are built directly (no pyplot, no backend switch): nothing here changes
matplotlib's process-wide state, and no display is needed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _rolling(series: pd.Series, window: int) -> pd.Series:
    # undefined ticks (NaN) are skipped, as in the episode means
    return series.rolling(window, min_periods=1).mean()


def plot_metrics(ticks: pd.DataFrame, path: str | Path, title: str = "", window: int = 10) -> Path:
    """RR, RF (per tick and a rolling mean) and the threshold over time, as a PNG."""
    from matplotlib.figure import Figure

    path = Path(path)
    fig = Figure(figsize=(8, 7.5), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    t = ticks["tick"]
    for ax, col, label, color in (
        (axes[0], "rr", "Recourse reliability RR", "tab:blue"),
        (axes[1], "rf", "Recourse feasibility RF", "tab:orange"),
    ):
        ax.plot(t, ticks[col], ".", color=color, alpha=0.35, label="per tick")
        ax.plot(t, _rolling(ticks[col], window), "-", color=color, label=f"{window}-tick mean")
        ax.set_ylabel(label.split()[-1])
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(label, fontsize=10, loc="left")
        ax.legend(loc="lower right", fontsize=8)
    axes[2].plot(t, ticks["threshold"], "-", color="tab:green", label="acceptance threshold")
    if ticks["mean_goal"].notna().any():
        axes[2].plot(t, ticks["mean_goal"], "--", color="tab:red", label="mean goal score")
    axes[2].set_ylabel("score")
    axes[2].set_xlabel("tick")
    axes[2].set_title("Threshold and goal scores", fontsize=10, loc="left")
    axes[2].legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=110)
    return path


def _panels(ticks: pd.DataFrame) -> list[tuple[str, list[tuple[str, str]], str]]:
    """(title, [(column, legend label)], y label) of each world extension on in ``ticks``."""
    cols = set(ticks.columns)
    panels = []
    if "improvement_rate" in cols:
        panels.append(
            (
                "True outcomes",
                [
                    ("improvement_rate", "advice that truly qualifies"),
                    ("mean_p_true_accepted", "mean h* of the accepted"),
                    ("tp_rate", "revealed outcomes that are positive"),
                ],
                "share",
            )
        )
    if "validity" in cols:
        panels.append(("Retraining", [("validity", "outstanding advice still valid")], "share"))
    groups = sorted(c for c in cols if c.startswith("accept_rate_g"))
    if groups:
        lines = [(c, f"acceptance rate, group {c.removeprefix('accept_rate_g')}") for c in groups]
        panels.append(
            (
                "Groups",
                [
                    *lines,
                    ("dp_gap", "demographic-parity gap"),
                    ("w_dist", "W1 between groups (pool)"),
                ],
                "rate / distance",
            )
        )
    if "budget_spent" in cols:
        panels.append(
            (
                "Budget",
                [("budget_spent", "spent this tick"), ("budget_left", "left after the tick")],
                "L1 budget",
            )
        )
    return panels


def plot_extensions(
    ticks: pd.DataFrame, path: str | Path, title: str = "", window: int = 10
) -> Path:
    """One panel per world extension that is on (specs/world-extensions.md §7): its tick
    columns as rolling means over ``window`` ticks; retraining ticks as vertical lines."""
    from matplotlib.figure import Figure

    path = Path(path)
    panels = _panels(ticks)
    fig = Figure(figsize=(8, 2.6 * max(1, len(panels)) + 0.5), layout="constrained")
    axes = fig.subplots(max(1, len(panels)), 1, sharex=True, squeeze=False)[:, 0]
    t = ticks["tick"]
    refits = []
    if "model_version" in ticks.columns:
        refits = t[ticks["model_version"].diff().fillna(0) > 0].tolist()
    for ax, (name, lines, ylabel) in zip(axes, panels, strict=False):
        for col, label in lines:
            if ticks[col].notna().any():
                ax.plot(t, _rolling(ticks[col], window), "-", label=label)
        for x in refits:
            ax.axvline(x, color="0.6", lw=0.8, ls=":")
        ax.set_title(name + (" (dotted: refits)" if refits else ""), fontsize=10, loc="left")
        ax.set_ylabel(ylabel)
        ax.legend(loc="best", fontsize=8)
    axes[-1].set_xlabel(f"tick ({window}-tick rolling means)")
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=110)
    return path


def plot_learning_curve(csv_path: str | Path, path: str | Path, title: str = "") -> Path:
    """Episode reward (and its rolling mean) over training time, from ``learning_curve.csv``."""
    from matplotlib.figure import Figure

    curve = pd.read_csv(csv_path)
    path = Path(path)
    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.subplots()
    if not curve.empty:
        window = max(1, len(curve) // 50)
        ax.plot(curve["timesteps"], curve["reward"], ".", alpha=0.25, label="episode reward")
        ax.plot(
            curve["timesteps"],
            _rolling(curve["reward"], window),
            "-",
            label=f"{window}-episode mean",
        )
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xlabel("SAC steps")
    ax.set_ylabel("reward")
    ax.set_title(title or "learning curve", fontsize=10, loc="left")
    fig.savefig(path, dpi=110)
    return path
