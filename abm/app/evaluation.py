"""Paired multi-episode evaluation of policies, the recommender benchmark and calibration.

Each is a study of :mod:`abm.app.study` run by the one experiment runner (serial, local
worker processes or Dask; resumable when given a directory):

* :func:`evaluate_many` -- experiment ``episode``, policies × seeds ``S .. S+n-1``. Episode
  i of every policy uses seed ``S + i``, and arrivals come from their own random stream,
  so policies face identical arrivals episode by episode (common random numbers).
* :func:`benchmark_recommenders` -- experiment ``recommender-bench`` (Table 1 protocol).
* :func:`calibrate` -- experiment ``episode`` over a grid of scenario fields × seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from abm.app.study import Study, collect, paired_seeds, parse_seeds
from abm.app.study.experiments import BENCH_RECOMMENDERS, EPISODE_METRICS, mean_std
from abm.config import ScenarioConfig
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError, problem

Progress = Callable[[int, int], None]
# per-run columns of an evaluation: the episode figures, and n_unadvised (summed over ticks)
METRICS = EPISODE_METRICS


def _seeds(seed: int, episodes: int, seeds: Any) -> tuple[int, ...]:
    return parse_seeds(seeds) if seeds is not None else paired_seeds(seed, episodes)


def _workers(workers: int) -> int:
    if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise ConfigError(problem("workers", workers, "an integer >= 1"))
    return workers


def _scenario_name(scenario: ScenarioConfig | str | Path) -> str:
    return scenario if isinstance(scenario, str) else getattr(scenario, "name", str(scenario))


def _aggregate(per_episode: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and (population) std over the defined episodes of rr, rf, gini and cost."""
    out: dict[str, Any] = {}
    for key, name in (("rr", "rr"), ("rf", "rf"), ("gini", "gini"), ("mean_cost", "cost")):
        out[f"{name}_mean"], out[f"{name}_std"] = mean_std([e[key] for e in per_episode])
    out["n_unadvised"] = int(sum(e["n_unadvised"] for e in per_episode))
    return out


def _per_episode(ticks: pd.DataFrame, runs: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """run_id -> {rr, rf, gini, mean_cost, n_unadvised} of an ``episode`` study."""
    unadvised = ticks.groupby("run_id", sort=False)["n_unadvised"].sum()
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"{len(failed)} episode(s) failed; first: {failed['error'].iloc[0]}")
    return {r.run_id: {**{k: float(getattr(r, k)) for k in METRICS},
                       "n_unadvised": int(unadvised[r.run_id])} for r in runs.itertuples()}  # fmt: skip


def evaluate(scenario: ScenarioConfig | str | Path, policy: str, episodes: int = 10, seed: int = 0,
             workers: int = 1, **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """Mean and std over ``episodes`` paired episodes (seeds seed, seed+1, ...).

    Returns scenario, policy, episodes, seed, seeds, rr_mean, rr_std, rf_mean, rf_std,
    gini_mean, gini_std, cost_mean, cost_std, n_unadvised, per_episode (list of dicts)
    and overrides. ``workers`` > 1 runs episodes in parallel processes (same results).
    """
    return evaluate_many(scenario, [policy], episodes, seed, workers, **overrides)[0]


def evaluate_many(
    scenario: ScenarioConfig | str | Path,
    policies: Sequence[str],
    episodes: int = 10,
    seed: int = 0,
    workers: int = 1,
    *,
    seeds: Any = None,
    store: str | Path | None = None,
    scheduler: Any = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """:func:`evaluate` for several policies on the same paired seeds.

    ``seeds`` (any form of :func:`abm.app.study.parse_seeds`) replaces ``seed`` and
    ``episodes``; ``store`` keeps the runs there (a rerun resumes); ``scheduler`` runs them
    on Dask.
    """
    run_seeds = _seeds(seed, episodes, seeds)
    policies = list(dict.fromkeys(policies))
    study = Study.build(resolve_scenario(scenario), name="evaluate", overrides=overrides,
                        seeds=list(run_seeds), metrics=["n_unadvised"],
                        sweep={"policy": policies})  # fmt: skip
    ticks, runs = collect(study, store, workers=_workers(workers), scheduler=scheduler,
                          progress=progress)  # fmt: skip
    per = _per_episode(ticks, runs)
    by_policy: dict[str, list[dict[str, Any]]] = {p: [] for p in policies}
    for r in study.runs():
        by_policy[r.policy].append(per[r.run_id])
    return [{"scenario": _scenario_name(scenario), "policy": p, "episodes": len(run_seeds),
             "seed": run_seeds[0], "seeds": list(run_seeds), **_aggregate(by_policy[p]),
             "per_episode": by_policy[p],
             "overrides": {k: (list(v) if isinstance(v, tuple) else v) for k, v in overrides.items()}}
            for p in policies]  # fmt: skip


# -- recommender benchmark (durable-recourse-rl Table 1 protocol) ---------------------------
def benchmark_recommenders(n: int = 200, seed: int = 0, scenario: str = "paper",
                           goal_max: float = 0.95, names: list[str] | None = None,
                           workers: int = 1, **overrides: Any) -> list[dict[str, Any]]:  # fmt: skip
    """Error |M(x_cf) - g| and true cost sum |dx_i| d_i of each recommender on the same draws.

    ``n`` single candidates from the scenario's generator with score below ``goal_max``,
    each with a goal g ~ U(M(x), goal_max). Failures (NaN rows) are counted and left out
    of the means. ``names`` picks recommenders by registry name or label, or adds any
    recommender spec (``rl:path=DIR``). Returns one dict per recommender: recommender,
    error, cost, seconds_per_recommendation, n_failed.
    """
    labels = [label for label, name, _ in BENCH_RECOMMENDERS
              if names is None or name in names or label in names]  # fmt: skip
    known = {x for label, name, _ in BENCH_RECOMMENDERS for x in (label, name)}
    labels += [s for s in names or () if s not in known]
    if not labels:
        raise ConfigError(problem("recommenders", names, "registered recommenders"))
    study = Study.build(resolve_scenario(scenario), name="bench-recommenders",
                        experiment="recommender-bench", seeds=[seed],
                        overrides={**overrides, "n": n, "goal_max": goal_max},
                        sweep={"recommender": labels})  # fmt: skip
    _, runs = collect(study, workers=_workers(workers))
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(
            f"recommender {failed['recommender'].iloc[0]}: {failed['error'].iloc[0]}"
        )
    columns = ["recommender", "error", "cost", "seconds_per_recommendation", "n_failed"]
    return runs[columns].astype({"n_failed": int}).to_dict("records")


# -- calibration -----------------------------------------------------------------------
CALIBRATION_GRID: dict[str, list[Any]] = {
    "rho": [0.5, 1.0, 2.0],
    "chi": [0.0, 0.1],
    "omega": [0.0, 1.0],
}


def calibrate(grid: dict[str, list[Any]] | None = None, policy: str = "threshold-ustun",
              target_rr: float = 0.4, episodes: int = 10, seed: int = 0, scenario: str = "paper",
              workers: int = 2, progress: Progress | None = None, *, seeds: Any = None,
              store: str | Path | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Evaluate ``policy`` on every point of ``grid`` (scenario field -> values) on the
    paired seeds ``seed .. seed + episodes - 1`` (or ``seeds``).

    Returns one dict per point (its field values, rr_mean, rr_std, rf_mean, rf_std,
    cost_mean and the distance |rr - target_rr|), closest first. nu is left out of the
    default grid: at T = 1 everyone still waiting reapplies after one tick, so nu has no
    effect.
    """
    grid = CALIBRATION_GRID if grid is None else grid
    run_seeds = _seeds(seed, episodes, seeds)
    # one [[zip]] axis listing every grid point: the points keep the grid's product order
    points = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    zipped = {k: [p[k] for p in points] for k in grid}
    study = Study.build(resolve_scenario(scenario), name="calibrate", policy=policy,
                        seeds=list(run_seeds), metrics=["n_unadvised"],
                        zip=[zipped] if grid else [])  # fmt: skip
    ticks, runs = collect(study, store, workers=_workers(workers), progress=progress)
    per = _per_episode(ticks, runs)
    all_runs = study.runs()  # grid order: point by point, seeds within a point
    rows = []
    for k, point in enumerate(points):
        runs_k = all_runs[k * len(run_seeds) : (k + 1) * len(run_seeds)]
        agg = _aggregate([per[r.run_id] for r in runs_k])
        row = {key: (list(v) if isinstance(v, tuple) else v) for key, v in point.items()}
        row.update({m: agg[m] for m in ("rr_mean", "rr_std", "rf_mean", "rf_std", "cost_mean")})
        row["distance"] = abs(agg["rr_mean"] - target_rr)
        rows.append(row)
    rows.sort(key=lambda r: r["distance"])
    return rows
