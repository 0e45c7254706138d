"""Paired multi-episode evaluation of policies, the recommender benchmark and calibration.

Episode i of every evaluation uses seed ``seed + i``; arrivals come from their own
random stream, so different policies face identical arrivals episode by episode.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from abm.config import ScenarioConfig
from abm.registry import REGISTRY

METRICS = ("rr", "rf", "gini", "mean_cost")


def run_episode(scenario: ScenarioConfig | str | Path, policy: str, seed: int,
                overrides: dict[str, Any]) -> dict[str, float]:  # fmt: skip
    """Episode means of one run (agents and events off): rr, rf, gini, mean_cost, n_unadvised."""
    from abm.model import RecourseModel

    model = RecourseModel(
        scenario, policy, seed=seed, agents=False, record_events=False, **overrides
    )
    model.run()
    s = model.summary()
    out = {k: float(s[k]) for k in METRICS}
    out["n_unadvised"] = int(model.tick_table()["n_unadvised"].sum())
    return out


def _run_episode_args(args: tuple) -> dict[str, float]:
    return run_episode(*args)


def _check(episodes: int, seed: int, workers: int) -> None:
    if not (isinstance(episodes, int) and 1 <= episodes <= 100_000):
        raise ValueError(f"episodes must be an integer in [1, 100000], got {episodes!r}")
    if not (isinstance(seed, int) and 0 <= seed <= 2**63 - 1 - episodes):
        raise ValueError(f"seed must be an integer in [0, 2**63 - 1 - episodes], got {seed!r}")
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")


def _map(fn, jobs: list, workers: int) -> list:
    if workers == 1 or len(jobs) == 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(fn, jobs))


def _aggregate(scenario, policy, episodes, seed, per_episode, overrides) -> dict[str, Any]:
    out: dict[str, Any] = {
        "scenario": scenario
        if isinstance(scenario, str)
        else getattr(scenario, "name", str(scenario)),
        "policy": policy,
        "episodes": episodes,
        "seed": seed,
    }
    for key, name in (("rr", "rr"), ("rf", "rf"), ("gini", "gini"), ("mean_cost", "cost")):
        v = np.array([e[key] for e in per_episode], dtype=float)
        v = v[np.isfinite(v)]
        out[f"{name}_mean"] = float(v.mean()) if v.size else float("nan")
        out[f"{name}_std"] = float(v.std()) if v.size else float("nan")
    out["n_unadvised"] = int(sum(e["n_unadvised"] for e in per_episode))
    out["per_episode"] = per_episode
    out["overrides"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in overrides.items()}
    return out


def evaluate(scenario: ScenarioConfig | str | Path, policy: str, episodes: int = 10, seed: int = 0,
             workers: int = 1, **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """Mean and std over ``episodes`` paired episodes (seeds seed, seed+1, ...).

    Returns scenario, policy, episodes, seed, rr_mean, rr_std, rf_mean, rf_std,
    gini_mean, gini_std, cost_mean, cost_std, n_unadvised, per_episode (list of dicts)
    and overrides. ``workers`` > 1 runs episodes in parallel processes (same results).
    """
    return evaluate_many(scenario, [policy], episodes, seed, workers, **overrides)[0]


def evaluate_many(scenario: ScenarioConfig | str | Path, policies: list[str], episodes: int = 10,
                  seed: int = 0, workers: int = 1, **overrides: Any) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`evaluate` for several policies on the same paired seeds."""
    _check(episodes, seed, workers)
    from abm.scenarios import resolve_scenario

    config = resolve_scenario(scenario)
    config = config.replace(**overrides) if overrides else config  # validate once, up front
    for p in policies:
        REGISTRY.make_policy(p)  # unknown names fail here, before any process starts
    jobs = [(config, p, seed + i, {}) for p in policies for i in range(episodes)]
    results = _map(_run_episode_args, jobs, workers)
    return [
        _aggregate(
            scenario, p, episodes, seed, results[j * episodes : (j + 1) * episodes], overrides
        )
        for j, p in enumerate(policies)
    ]


# -- recommender benchmark (durable-recourse-rl Table 1 protocol) ---------------------------
BENCH_RECOMMENDERS = (
    ("exact-linear (uniform)", "exact-linear", {}),
    ("exact-linear (true d)", "exact-linear", {"weights": "true"}),
    ("ustun", "ustun", {}),
    ("wachter", "wachter", {}),
    ("dice", "dice", {}),
)


def benchmark_recommenders(n: int = 200, seed: int = 0, scenario: str = "paper",
                           goal_max: float = 0.95, names: list[str] | None = None,
                           **overrides: Any) -> list[dict[str, Any]]:  # fmt: skip
    """Error |M(x_cf) - g| and true cost sum |dx_i| d_i of each recommender on the same draws.

    ``n`` single candidates from the scenario's generator with score below ``goal_max``,
    each with a goal g ~ U(M(x), goal_max). Failures (NaN rows) are counted and left out
    of the means. Returns one dict per recommender: recommender, error, cost,
    seconds_per_recommendation, n_failed.
    """
    from abm.model import RecourseModel
    from abm.rng import stream

    if not (isinstance(n, int) and 1 <= n <= 1_000_000):
        raise ValueError(f"n must be an integer in [1, 1000000], got {n!r}")
    if not 0.0 < goal_max < 1.0:
        raise ValueError(f"goal_max must be in (0, 1), got {goal_max!r}")
    model = RecourseModel(
        scenario, "none", seed=seed, agents=False, record_events=False, **overrides
    )
    ctx, world = model.context, model.world
    rng = stream(seed, "bench-recommenders")
    X = np.empty((0, ctx.n_features))
    while X.shape[0] < n:  # keep candidates who can still improve
        draw = world.generator.sample(n, rng)
        X = np.concatenate([X, draw[ctx.decision_model.score(draw) < goal_max]])[:n]
    s = ctx.decision_model.score(X)
    goals = s + rng.uniform(0.0, 1.0, n) * (goal_max - s)
    rows = []
    for label, name, params in BENCH_RECOMMENDERS:
        if names is not None and name not in names and label not in names:
            continue
        rec = REGISTRY.make("recommender", name, **params)
        rec.prepare(ctx)
        start = time.perf_counter()
        X_cf = rec.recommend(X, goals, stream(seed, f"bench-{name}"))
        elapsed = time.perf_counter() - start
        ok = ~np.isnan(X_cf).any(axis=1)
        err = np.abs(ctx.decision_model.score(X_cf[ok]) - goals[ok])
        cost = np.abs(X_cf[ok] - X[ok]) @ ctx.difficulty
        rows.append({
            "recommender": label,
            "error": float(err.mean()) if ok.any() else float("nan"),
            "cost": float(cost.mean()) if ok.any() else float("nan"),
            "seconds_per_recommendation": elapsed / n,
            "n_failed": int((~ok).sum()),
        })  # fmt: skip
    return rows


# -- calibration -----------------------------------------------------------------------
CALIBRATION_GRID: dict[str, list[Any]] = {
    "rho": [0.5, 1.0, 2.0],
    "chi": [0.0, 0.1],
    "omega": [0.0, 1.0],
}


def calibrate(grid: dict[str, list[Any]] | None = None, policy: str = "threshold-ustun",
              target_rr: float = 0.4, episodes: int = 10, seed: int = 0, scenario: str = "paper",
              workers: int = 2, progress: Any | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Evaluate ``policy`` on every point of ``grid`` (scenario field -> values).

    Returns one dict per point (its field values, rr_mean, rr_std, rf_mean, cost_mean and
    the distance |rr - target_rr|), closest first. nu is left out of the default grid:
    at T = 1 everyone still waiting reapplies after one tick, so nu has no effect.
    """
    grid = CALIBRATION_GRID if grid is None else grid
    keys = list(grid)
    points = [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
    from abm.scenarios import resolve_scenario

    base = resolve_scenario(scenario)
    configs = [base.replace(**p) for p in points]  # validates every point up front
    jobs = [(c, policy, seed + i, {}) for c in configs for i in range(episodes)]
    results = []
    if workers == 1:
        for j in jobs:
            results.append(run_episode(*j))
            if progress is not None:
                progress()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for r in pool.map(_run_episode_args, jobs):
                results.append(r)
                if progress is not None:
                    progress()
    rows = []
    for k, point in enumerate(points):
        agg = _aggregate(
            scenario, policy, episodes, seed, results[k * episodes : (k + 1) * episodes], {}
        )
        row = {key: (list(v) if isinstance(v, tuple) else v) for key, v in point.items()}
        row.update({m: agg[m] for m in ("rr_mean", "rr_std", "rf_mean", "rf_std", "cost_mean")})
        row["distance"] = abs(agg["rr_mean"] - target_rr)
        rows.append(row)
    rows.sort(key=lambda r: r["distance"])
    return rows
