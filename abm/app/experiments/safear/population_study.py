"""Population study: ``safear`` at several risk aversions against ``threshold`` baselines.

Paired episodes (same scenario, seeds ``0..n_seeds-1``; policies use their own random
stream, so arrivals are identical across policies). Per episode: RR, RF (episode means
over defined ticks), total effort and wasted effort (tick table), and the tail of the
realised cost distribution from the candidate table:

* realised effort of an application = sum over features that changed (``ok_i == 1``)
  of ``|dx_i| * d_i`` (what the simulation counts as effort);
* attempted effort = the same over every attempted change (``ok_i`` in {0, 1}), i.e.
  failed attempts cost their effort too (the SafeAR planning convention);
* per candidate, both are summed over all its applications; the tail is the 95th
  percentile (VaR95, eq. 4) and CVaR95 (eq. 5) over candidates who were ever advised.

This module drives :class:`abm.model.RecourseModel`; it is a study, not a policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from policies.safear.risk import var_cvar

DEFAULT_POLICIES = (
    "threshold",
    "threshold-true",
    "safear:beta_risk=0",
    "safear:beta_risk=0.5",
    "safear:beta_risk=1",
)

EPISODE_COLUMNS = [
    "policy",
    "seed",
    "rr",
    "rf",
    "effort",
    "wasted_effort",
    "n_accepted",
    "n_dropped",
    "mean_cost",
    "realised_p95",
    "realised_cvar95",
    "attempted_mean",
    "attempted_p95",
    "attempted_cvar95",
    "plan_exp_cost",
    "plan_var95",
    "plan_cvar95",
]


def per_candidate_effort(events: pd.DataFrame, difficulty: Sequence[float]) -> pd.DataFrame:
    """Realised and attempted effort per candidate (one row per cid ever advised)."""
    d = np.asarray(difficulty, dtype=float)
    z = d.size
    dx = np.abs(events[[f"dx_{i}" for i in range(z)]].to_numpy(dtype=float))
    ok = events[[f"ok_{i}" for i in range(z)]].to_numpy()
    realised = ((ok == 1) * dx * d).sum(axis=1)
    attempted = (((ok == 1) | (ok == 0)) * dx * d).sum(axis=1)
    advised = np.isfinite(events["goal"].to_numpy(dtype=float))
    df = pd.DataFrame(
        {
            "cid": events["cid"].to_numpy(),
            "realised": realised,
            "attempted": attempted,
            "advised": advised,
        }
    )
    g = df.groupby("cid", sort=True).agg(
        realised=("realised", "sum"), attempted=("attempted", "sum"), advised=("advised", "any")
    )
    return g[g["advised"]].drop(columns="advised").reset_index()


def _tail(x: np.ndarray) -> tuple[float, float]:
    if x.size == 0:
        return math.nan, math.nan
    return var_cvar(x, alpha=0.95)


def run_episode(scenario, policy: str, seed: int, **overrides) -> dict:
    """One episode's row of :data:`EPISODE_COLUMNS`."""
    from abm.model import RecourseModel

    model = RecourseModel(scenario, policy, seed=seed, agents=False, **overrides).run()
    s = model.summary()
    ev = model.candidate_table()
    eff = per_candidate_effort(ev, model.config.difficulty)
    r95, rc95 = _tail(eff["realised"].to_numpy())
    a95, ac95 = _tail(eff["attempted"].to_numpy())
    row = {
        "policy": policy,
        "seed": seed,
        "rr": s["rr"],
        "rf": s["rf"],
        "effort": s["effort"],
        "wasted_effort": s["wasted_effort"],
        "n_accepted": s["n_accepted"],
        "n_dropped": s["n_dropped"],
        "mean_cost": s["mean_cost"],
        "realised_p95": r95,
        "realised_cvar95": rc95,
        "attempted_mean": float(eff["attempted"].mean()) if len(eff) else math.nan,
        "attempted_p95": a95,
        "attempted_cvar95": ac95,
    }
    for col, key in (
        ("plan_exp_cost", "exp_cost"),
        ("plan_var95", "var95"),
        ("plan_cvar95", "cvar95"),
    ):
        row[col] = (
            float(np.nanmean(ev[key])) if key in ev and np.isfinite(ev[key]).any() else math.nan
        )
    return row


def compare_population(
    scenario="paper",
    policies: Sequence[str] = DEFAULT_POLICIES,
    n_seeds: int = 10,
    progress=None,
    **overrides,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every policy on seeds ``0..n_seeds-1``.

    Returns (episodes, summary): one row per (policy, seed), and per policy the mean
    and standard error over seeds of every numeric column (``<col>`` and ``<col>_se``).
    ``overrides`` are scenario fields (e.g. ``ticks=20``, ``risk_aversion=(0, 1)``).
    """
    if not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValueError(f"n_seeds must be an integer >= 1, got {n_seeds!r}")
    rows = []
    for pol in policies:
        for seed in range(n_seeds):
            rows.append(run_episode(scenario, pol, seed, **overrides))
            if progress is not None:
                progress()
    ep = pd.DataFrame(rows, columns=EPISODE_COLUMNS)
    num = [c for c in EPISODE_COLUMNS if c not in ("policy", "seed")]
    g = ep.groupby("policy", sort=False)[num]
    mean = g.mean()
    se = g.std(ddof=1).div(np.sqrt(g.count())).add_suffix("_se")
    summary = pd.concat([mean, se], axis=1).reset_index()
    summary.insert(1, "n_seeds", n_seeds)
    return ep, summary


def plot_population(summary: pd.DataFrame, path=None, title: str | None = None):
    """Bars of RR, RF, wasted effort and the realised-cost tail per policy (error bars: s.e. over seeds)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = [
        ("rr", "recourse reliability RR"),
        ("rf", "recourse feasibility RF"),
        ("wasted_effort", "wasted effort (episode total)"),
        ("attempted_cvar95", "CVaR95 of attempted effort per candidate"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2))
    x = np.arange(len(summary))
    labels = [
        p.replace("safear:beta_risk=", "safear β=").replace("threshold-true", "threshold\n(true d)")
        for p in summary["policy"]
    ]
    colours = ["#888888" if p.startswith("threshold") else "#1f77b4" for p in summary["policy"]]
    for ax, (col, name) in zip(axes, panels, strict=True):
        ax.bar(x, summary[col], yerr=summary[f"{col}_se"], color=colours, capsize=3)
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
        ax.set_title(name, fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
    from abm.app.experiments.safear.plot import finish_figure

    return finish_figure(fig, path, title)
