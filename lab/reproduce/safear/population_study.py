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

Each (policy, seed) is one run of the ``safear-population`` experiment of the study
runner (:mod:`lab.study.experiments`); this module is a study, not a policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.config import ScenarioConfig
from abm.scenarios import resolve_scenario
from lab.study import Study, collect, parse_seeds
from lab.study.experiments import POPULATION_COLUMNS, per_candidate_effort, population_row

DEFAULT_POLICIES = (
    "threshold",
    "threshold-true",
    "safear:beta_risk=0",
    "safear:beta_risk=0.5",
    "safear:beta_risk=1",
)
EPISODE_COLUMNS = ["policy", "seed", *POPULATION_COLUMNS]

__all__ = [
    "DEFAULT_POLICIES",
    "EPISODE_COLUMNS",
    "compare_population",
    "per_candidate_effort",
    "plot_population",
    "run_episode",
]


def run_episode(
    scenario: ScenarioConfig | str | Path, policy: str, seed: int, **overrides: Any
) -> dict:
    """One episode's row of :data:`EPISODE_COLUMNS` (the ``safear-population`` experiment)."""
    config = resolve_scenario(scenario).replace(**overrides, seed=seed)
    return {"policy": policy, "seed": seed, **population_row(config, policy)}


def compare_population(
    scenario: ScenarioConfig | str | Path = "paper",
    policies: Sequence[str] = DEFAULT_POLICIES,
    n_seeds: int | str | Sequence[int] = 10,
    progress: Callable[[int, int], None] | None = None,
    *,
    workers: int = 1,
    store: str | Path | None = None,
    **overrides: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every policy on the same seeds (``n_seeds``: a count N for 0..N-1, or any seed
    form of :func:`lab.study.parse_seeds`), as a ``safear-population`` study.

    Returns (episodes, summary): one row per (policy, seed), and per policy the mean
    and standard error over seeds of every numeric column (``<col>`` and ``<col>_se``).
    ``overrides`` are scenario fields (e.g. ``ticks=20``, ``risk_aversion=(0, 1)``);
    ``store`` keeps the runs there (a rerun resumes), ``workers`` runs them in parallel.
    """
    seeds = parse_seeds(n_seeds, "n_seeds")
    policies = list(dict.fromkeys(policies))
    study = Study.build(
        resolve_scenario(scenario),
        name="safear-population",
        experiment="safear-population",
        overrides=overrides,
        seeds=list(seeds),
        sweep={"policy": policies},
    )
    _, runs = collect(study, store, workers=workers, progress=progress)
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(
            f"{failed['policy'].iloc[0]}, seed {failed['seed'].iloc[0]}: {failed['error'].iloc[0]}"
        )
    ep = runs[EPISODE_COLUMNS].reset_index(drop=True)
    num = list(POPULATION_COLUMNS)
    g = ep.groupby("policy", sort=False)[num]
    mean = g.mean()
    se = g.std(ddof=1).div(np.sqrt(g.count())).add_suffix("_se")
    summary = pd.concat([mean, se], axis=1).reset_index()
    summary.insert(1, "n_seeds", len(seeds))
    return ep, summary


def plot_population(summary: pd.DataFrame, path=None, title: str | None = None):
    """Bars of RR, RF, wasted effort and the realised-cost tail per policy (error bars: s.e. over seeds)."""
    from matplotlib.figure import Figure

    from lab.reproduce.safear.plot import finish_figure

    panels = [
        ("rr", "recourse reliability RR"),
        ("rf", "recourse feasibility RF"),
        ("wasted_effort", "wasted effort (episode total)"),
        ("attempted_cvar95", "CVaR95 of attempted effort per candidate"),
    ]
    fig = Figure(figsize=(4.2 * len(panels), 4.2))
    axes = fig.subplots(1, len(panels))
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
    return finish_figure(fig, path, title)
