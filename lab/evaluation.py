"""Paired multi-episode evaluation of policies, the recommender benchmark and calibration.

Each is a study of :mod:`lab.study` run by the one experiment runner (serial, local
worker processes or Dask; resumable when given a directory):

* :func:`evaluate_many` -- experiment ``episode``, policies × seeds ``S .. S+n-1``. Episode
  i of every policy uses seed ``S + i``, and arrivals come from their own random stream,
  so policies face identical arrivals episode by episode (common random numbers).
* :func:`benchmark_recommenders` -- experiment ``recommender-bench`` (Table 1 protocol).
* :func:`calibrate` -- experiment ``episode`` over a grid of scenario fields × seeds.

:func:`plot_evaluation`, :func:`plot_recommenders` and :func:`plot_calibration` draw each
one's results (a PNG beside the JSON or CSV the commands write).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abm.config import ScenarioConfig
from abm.mechanisms import FIGURES as CARD_FIGURES
from abm.mechanisms import NAMES as CARD_NAMES
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError, problem
from lab.study import Study, collect, paired_seeds, parse_seeds
from lab.study.analysis import png_bytes
from lab.study.experiments import BENCH_RECOMMENDERS, EPISODE_METRICS, mean_std
from lab.study.stats import (
    BOUNDS,
    DIRECTIONS,
    difference_p,
    judge,
    tost_p,
    world_interval,
)

Progress = Callable[[int, int], None]
#: how the paired differences of one evaluation are corrected together (lab.study.stats.adjust)
CORRECTION = "holm"
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
    """run_id -> {rr, rf, gini, mean_cost, n_unadvised, card: {figure: value}} of an
    ``episode`` study."""
    unadvised = ticks.groupby("run_id", sort=False)["n_unadvised"].sum()
    failed = runs[runs["status"] != "ok"]
    if len(failed):
        raise RuntimeError(f"{len(failed)} episode(s) failed; first: {failed['error'].iloc[0]}")
    return {
        r.run_id: {
            **{k: float(getattr(r, k)) for k in METRICS},
            "n_unadvised": int(unadvised[r.run_id]),
            "card": {k: float(getattr(r, k)) for k in CARD_NAMES},
        }
        for r in runs.itertuples()
    }


def _values(per: dict, cells: list[list[str]], k: str) -> np.ndarray:
    """(worlds, episodes) of card figure ``k`` over ``cells`` (run ids)."""
    return np.array([[per[rid]["card"][k] for rid in world] for world in cells])


def _card(per: dict[str, dict], cells: list[list[str]]) -> dict[str, dict[str, float]]:
    """figure -> {mean, lo, hi, worlds}: the card of one policy over ``cells`` (worlds x
    episodes of run ids), worlds as a random effect (:func:`lab.study.stats.world_interval`;
    ``worlds``: those with a defined episode, 1 = the interval speaks of that world alone)."""
    out = {}
    for k in CARD_NAMES:
        mean, lo, hi, n = world_interval(_values(per, cells, k))
        out[k] = {"mean": mean, "lo": lo, "hi": hi, "worlds": n}
    return out


def _paired(per: dict, cells: list[list[str]], base: list[list[str]]) -> dict[str, dict]:
    """figure -> the paired difference (policy - baseline) on the same worlds and episodes:
    {mean, lo, hi, worlds} as in :func:`_card`, ``p`` (t-test on the world means),
    ``tost_p`` (TOST within ±``bound``, the figure's bound of
    :data:`lab.study.stats.BOUNDS`, None where it has none), all uncorrected:
    :func:`_add_verdicts` corrects the evaluation's family."""
    out = {}
    for k in CARD_NAMES:
        v, b = _values(per, cells, k), _values(per, base, k)
        mean, lo, hi, n = world_interval(v - b)
        bound = BOUNDS.get(k)
        out[k] = {"mean": mean, "lo": lo, "hi": hi, "worlds": n}
        out[k].update(p=difference_p(v, b), tost_p=tost_p(v, b, bound), bound=bound)
    return out


def _add_verdicts(results: list[dict[str, Any]], method: str = CORRECTION) -> None:
    """Correct the paired differences of ``results`` as one family and add, to each
    figure's difference, ``p_adj``, ``tost_p_adj`` and ``verdict``
    (:func:`lab.study.stats.verdict`: better / worse by the figure's direction, higher /
    lower without one, level, inconclusive), and to each ``vs_baseline`` the ``correction``
    and ``family`` (the number of contrasts corrected together).

    The family is every (policy, figure) difference to the baseline with a defined p-value
    and at least :data:`lab.study.stats.MIN_WORLDS_FOR_VERDICT` worlds; difference and
    TOST p-values are each corrected by ``method``."""
    cells = [c for r in results if "vs_baseline" in r for c in r["vs_baseline"]["card"].items()]
    p_adj, tost_adj, said = judge(
        *([d[key] for _, d in cells] for key in ("mean", "p", "tost_p", "worlds")),
        [DIRECTIONS.get(k) for k, _ in cells],
        method,
        lo=[d["lo"] for _, d in cells],
        hi=[d["hi"] for _, d in cells],
    )
    size = int(np.isfinite(p_adj).sum())
    for (_, d), p, t, v in zip(cells, p_adj, tost_adj, said, strict=True):
        d["p_adj"], d["tost_p_adj"], d["verdict"] = float(p), float(t), v
    for r in results:
        if "vs_baseline" in r:
            r["vs_baseline"].update(correction=method, family=size)


def evaluate(
    scenario: ScenarioConfig | str | Path,
    policy: str,
    episodes: int = 10,
    seed: int = 0,
    workers: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
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
    world_seeds: Any = None,
    baseline: str | None = "none",
    store: str | Path | None = None,
    scheduler: Any = None,
    progress: Progress | None = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """:func:`evaluate` for several policies on the same paired seeds.

    ``seeds`` (any form of :func:`lab.study.parse_seeds`) replaces ``seed`` and
    ``episodes``; ``world_seeds`` (the same syntax) runs every episode seed in each of
    those worlds (default: the scenario's one world); ``store`` keeps the runs there (a
    rerun resumes); ``scheduler`` runs them on Dask.

    Each result also holds the outcome card (``card``: figure -> mean, lo, hi and the
    number of worlds, worlds as a random effect, :func:`lab.study.stats.world_interval`),
    ``card_reasons`` (why a figure is undefined in this world) and, for every policy but
    ``baseline`` when it is among ``policies``, the paired difference to it
    (``vs_baseline``: policy, correction, family and ``card``: figure -> mean, lo, hi,
    worlds, p, tost_p, bound, p_adj, tost_p_adj, verdict). The differences of all policies
    form one family, corrected by :data:`CORRECTION` (Holm); no verdict below 10 worlds.
    """
    run_seeds = _seeds(seed, episodes, seeds)
    config = (
        resolve_scenario(scenario).replace(**overrides) if overrides else resolve_scenario(scenario)
    )
    worlds = (
        parse_seeds(world_seeds, "world_seeds") if world_seeds is not None else (config.world_seed,)
    )
    policies = list(dict.fromkeys(policies))
    sweep: dict[str, Any] = {"policy": policies}
    if world_seeds is not None:
        sweep["world_seed"] = list(worlds)
    study = Study.build(
        resolve_scenario(scenario),
        name="evaluate",
        overrides=overrides,
        seeds=list(run_seeds),
        metrics=["n_unadvised"],
        sweep=sweep,
    )
    ticks, runs = collect(
        study, store, workers=_workers(workers), scheduler=scheduler, progress=progress
    )
    per = _per_episode(ticks, runs)
    cells = {p: {w: [] for w in worlds} for p in policies}
    for r in study.runs():
        cells[r.policy][r.params.get("world_seed", config.world_seed)].append(r.run_id)
    grid = {p: [cells[p][w] for w in worlds] for p in policies}
    reasons = {
        f.name: f"needs {f.needs}"
        for f in CARD_FIGURES
        if f.needs and f.needs not in config.mechanisms
    }
    out = []
    for p in policies:
        flat = [per[rid] for world in grid[p] for rid in world]
        result = {
            "scenario": _scenario_name(scenario),
            "policy": p,
            "episodes": len(run_seeds),
            "seed": run_seeds[0],
            "seeds": list(run_seeds),
            "worlds": list(worlds),
            **_aggregate(flat),
            "card": _card(per, grid[p]),
            "card_reasons": reasons,
            "per_episode": flat,
            "overrides": {
                k: (list(v) if isinstance(v, tuple) else v) for k, v in overrides.items()
            },
        }
        if baseline in policies and p != baseline:
            result["vs_baseline"] = {
                "policy": baseline,
                "card": _paired(per, grid[p], grid[baseline]),
            }
        out.append(result)
    _add_verdicts(out)
    return out


# -- recommender benchmark (durable-recourse-rl Table 1 protocol) ---------------------------
def benchmark_recommenders(
    n: int = 200,
    seed: int = 0,
    scenario: str = "paper",
    goal_max: float = 0.95,
    names: list[str] | None = None,
    workers: int = 1,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Error |M(x_cf) - g| and true cost sum |dx_i| d_i of each recommender on the same draws.

    ``n`` single candidates from the scenario's generator with score below ``goal_max``,
    each with a goal g ~ U(M(x), goal_max). Failures (NaN rows) are counted and left out
    of the means. ``names`` picks recommenders by registry name or label, or adds any
    recommender spec (``rl:path=DIR``). Returns one dict per recommender: recommender,
    error, cost, seconds_per_recommendation, n_failed.
    """
    labels = [
        label
        for label, name, _ in BENCH_RECOMMENDERS
        if names is None or name in names or label in names
    ]
    known = {x for label, name, _ in BENCH_RECOMMENDERS for x in (label, name)}
    labels += [s for s in names or () if s not in known]
    if not labels:
        raise ConfigError(problem("recommenders", names, "registered recommenders"))
    study = Study.build(
        resolve_scenario(scenario),
        name="bench-recommenders",
        experiment="recommender-bench",
        seeds=[seed],
        overrides={**overrides, "n": n, "goal_max": goal_max},
        sweep={"recommender": labels},
    )
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
# the columns of a calibration row besides the grid fields
CALIBRATION_COLUMNS = ("rr_mean", "rr_std", "rf_mean", "rf_std", "cost_mean", "distance")


def calibrate(
    grid: dict[str, list[Any]] | None = None,
    policy: str = "threshold-ustun",
    target_rr: float = 0.4,
    episodes: int = 10,
    seed: int = 0,
    scenario: str = "paper",
    workers: int = 2,
    progress: Progress | None = None,
    *,
    seeds: Any = None,
    store: str | Path | None = None,
) -> list[dict[str, Any]]:
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
    study = Study.build(
        resolve_scenario(scenario),
        name="calibrate",
        policy=policy,
        seeds=list(run_seeds),
        metrics=["n_unadvised"],
        zip=[zipped] if grid else [],
    )
    ticks, runs = collect(study, store, workers=_workers(workers), progress=progress)
    per = _per_episode(ticks, runs)
    all_runs = study.runs()  # grid order: point by point, seeds within a point
    rows = []
    for k, point in enumerate(points):
        runs_k = all_runs[k * len(run_seeds) : (k + 1) * len(run_seeds)]
        agg = _aggregate([per[r.run_id] for r in runs_k])
        row = {key: (list(v) if isinstance(v, tuple) else v) for key, v in point.items()}
        row.update({m: agg[m] for m in CALIBRATION_COLUMNS[:-1]})
        row["distance"] = abs(agg["rr_mean"] - target_rr)
        rows.append(row)
    rows.sort(key=lambda r: r["distance"])
    return rows


# -- plots of the three commands' results -------------------------------------------------
def _dots(ax, labels: list[str], mean: np.ndarray, err: np.ndarray, xlabel: str) -> None:
    """One row per label: a dot at ``mean`` with a ``±err`` bar (first label on top)."""
    ys = np.arange(len(labels))
    ax.errorbar(mean, ys, xerr=np.nan_to_num(err), fmt="o", ms=4, capsize=2, lw=1)
    ax.set_yticks(ys, labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3, axis="x")


def plot_evaluation(results: list[dict[str, Any]], path: str | Path) -> Path:
    """RR, RF, Gini and cost per policy of :func:`evaluate_many`: each episode (faint) and
    the mean ± std over the paired episodes."""
    from matplotlib.figure import Figure

    policies = [r["policy"] for r in results]
    fig = Figure(figsize=(10.5, 1.4 + 0.3 * len(policies)), layout="constrained")
    axes = fig.subplots(1, 4, sharey=True)
    for ax, (key, ep_key, label) in zip(
        axes,
        (
            ("rr", "rr", "RR"),
            ("rf", "rf", "RF"),
            ("gini", "gini", "Gini"),
            ("cost", "mean_cost", "mean cost"),
        ),
        strict=True,
    ):
        _dots(
            ax,
            policies,
            np.array([r[f"{key}_mean"] for r in results], dtype=float),
            np.array([r[f"{key}_std"] for r in results], dtype=float),
            label,
        )
        for i, r in enumerate(results):
            values = [e[ep_key] for e in r["per_episode"]]
            ax.scatter(values, np.full(len(values), i), s=8, color="0.5", alpha=0.35, lw=0)
    seeds = results[0]["seeds"]
    fig.suptitle(
        f"{results[0]['scenario']}: mean ± std over {len(seeds)} paired episodes", fontsize=10
    )
    Path(path).write_bytes(png_bytes(fig))
    return Path(path)


def plot_recommenders(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Error |M(x_cf) - g| (log scale) and true cost of each recommender of
    :func:`benchmark_recommenders`."""
    from matplotlib.figure import Figure

    names = [r["recommender"] for r in rows]
    fig = Figure(figsize=(8.5, 1.4 + 0.3 * len(names)), layout="constrained")
    ax_err, ax_cost = fig.subplots(1, 2, sharey=True)
    # an exact recommender's error is 0 or ~1e-16: drawn at a floor so the log axis holds it
    err = np.maximum(np.array([r["error"] for r in rows], dtype=float), 1e-17)
    _dots(ax_err, names, err, np.zeros(len(rows)), "mean error |M(x_cf) - g|")
    ax_err.set_xscale("log")
    _dots(
        ax_cost,
        names,
        np.array([r["cost"] for r in rows], dtype=float),
        np.zeros(len(rows)),
        "mean true cost",
    )
    fig.suptitle("recommenders on the same candidates and goals", fontsize=10)
    Path(path).write_bytes(png_bytes(fig))
    return Path(path)


def plot_calibration(rows: list[dict[str, Any]], target_rr: float, path: str | Path) -> Path:
    """RR and RF (mean ± std over the paired episodes) at each grid point of
    :func:`calibrate`, closest to ``target_rr`` on top, with the target marked."""
    from matplotlib.figure import Figure

    fields = [k for k in rows[0] if k not in CALIBRATION_COLUMNS]
    labels = [", ".join(f"{f}={r[f]}" for f in fields) for r in rows]
    fig = Figure(figsize=(8.5, 1.4 + 0.25 * len(rows)), layout="constrained")
    ax_rr, ax_rf = fig.subplots(1, 2, sharey=True)
    for ax, key in ((ax_rr, "rr"), (ax_rf, "rf")):
        _dots(
            ax,
            labels,
            np.array([r[f"{key}_mean"] for r in rows], dtype=float),
            np.array([r[f"{key}_std"] for r in rows], dtype=float),
            key.upper(),
        )
        ax.set_xlim(-0.03, 1.03)
    ax_rr.axvline(target_rr, color="tab:red", ls="--", lw=1, label=f"target RR = {target_rr:g}")
    ax_rr.legend(fontsize=7, loc="lower right")
    fig.suptitle("calibration grid, closest to the target first", fontsize=10)
    Path(path).write_bytes(png_bytes(fig))
    return Path(path)
