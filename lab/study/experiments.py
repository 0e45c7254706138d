"""The experiments a study can run: each is a function of one parameter point and one seed.

An experiment receives the run's scenario (its ``seed`` is the run's seed), its policy
spec and its own validated parameters, and returns rows (dicts of numbers and labels)
and, optionally, a per-tick table. The runner (:mod:`lab.study.runner`) stores them
under the run's id, on any backend, and never needs to know which experiment it ran.

=====================  ====================================================================
``episode``            one simulation episode: the episode summary and the kept tick columns
``recommender-bench``  durable-recourse-rl Table 1: error |M(x_cf) - g| and true cost of one
                       recommender on ``n`` candidates drawn from the scenario
``safear-population``  one episode with the candidate table: RR, RF, effort and the tail of
                       each candidate's realised and attempted effort (SafeAR eqs. 4-5)
``pareto-eval``        one point of the Pareto study: ``episodes`` paired episodes of one
                       policy (seeds ``seed .. seed + episodes - 1``), means and stds
=====================  ====================================================================

Everything here is imported by worker processes by module name: the functions are
module level and their arguments plain data.
"""

from __future__ import annotations

import json
import math
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_serializer

from abm.config import ScenarioConfig
from abm.mechanisms import NAMES as CARD_NAMES
from abm.mechanisms import episode_summary as mechanism_summary
from abm.metrics import nanmean
from abm.model import RecourseModel
from abm.registry import REGISTRY
from abm.rng import stream
from lab.study.trials.fairness import (
    TRIAL_COLUMNS as FAIRNESS_COLUMNS,
)
from lab.study.trials.fairness import FairnessTrialParams, run_fairness_trial
from lab.study.trials.improvement import TRIAL_COLUMNS, TrialParams, run_trial
from lab.study.trials.robust import TABLE1_COLUMNS, Table1Params, run_table1_cell
from policies.safear.risk import var_cvar

Rows = list[dict[str, Any]]
Output = tuple[Rows, pd.DataFrame | None]

FROZEN = ConfigDict(extra="forbid", frozen=True)


class NoParams(BaseModel):
    """An experiment without parameters of its own."""

    model_config = FROZEN


@dataclass(frozen=True)
class Experiment:
    """A registered experiment.

    ``run(config, policy, params, metrics)`` returns ``(rows, ticks or None)``; ``params``
    is an instance of ``params`` (set or swept in a study like scenario fields);
    ``columns`` are the numeric row columns a report may summarise; ``policy`` says
    whether the experiment takes a policy.
    """

    name: str
    run: Callable[[ScenarioConfig, str, BaseModel, tuple[str, ...]], Output]
    description: str
    params: type[BaseModel] = NoParams
    columns: tuple[str, ...] = ()
    policy: bool = True
    keeps_ticks: bool = False


# -- episode -------------------------------------------------------------------------
# per-run figures besides the kept metrics: the episode summary and wall times (seconds:
# elapsed_s in all, setup_s building the model, run_s running the ticks)
SUMMARY_COLUMNS = (
    "rr",
    "rf",
    "gini",
    "mean_cost",
    "n_accepted",
    "n_dropped",
    "n_reapplied",
    "n_succ",
    "wasted_effort",
    "effort",
    "mean_time_to_accept",
    "elapsed_s",
    "setup_s",
    "run_s",
    *(n for n in CARD_NAMES if n not in ("rr", "rf", "effort")),
)


def run_episode(
    config: ScenarioConfig, policy: str, params: BaseModel, metrics: tuple[str, ...]
) -> Output:
    """One episode (agents and events off): the summary row and the ``metrics`` tick columns.

    A kept tick column without an episode figure gets its mean over defined ticks.
    """
    return run_episodes([config], policy, params, metrics)[0]


def run_episodes(
    configs: list[ScenarioConfig], policy: str, params: BaseModel, metrics: tuple[str, ...]
) -> list[Output]:
    """:func:`run_episode` of each of ``configs`` (one scenario, as a batch takes it:
    ``abm.batch.SHARED``), advanced together as one batch (:class:`abm.batch.Batch`); each
    output is its episode's alone, bit for bit, but for the timings (the batch's ticks are
    shared out evenly)."""
    from abm.batch import Batch

    models, setups = [], []
    for config in configs:
        start = time.perf_counter()
        models.append(RecourseModel(config, policy, agents=False, record_events=False))
        # set-up (world, cached per process, and policy) and the ticks are timed apart
        setups.append(time.perf_counter() - start)
    start = time.perf_counter()
    if len(models) == 1:
        models[0].run()
    else:
        Batch.of(models).run()
    run_s = (time.perf_counter() - start) / len(models)
    return [_episode_output(m, metrics, s, run_s) for m, s in zip(models, setups, strict=True)]


def _episode_output(
    model: RecourseModel, metrics: tuple[str, ...], setup_s: float, run_s: float
) -> Output:
    ticks = model.tick_table()
    summary = model.summary()
    # the world extensions' figures reach a study through its kept metrics only, so every
    # run of a study has the same summary columns whichever extensions it switches on
    extension = mechanism_summary(ticks)
    row = {k: summary[k] for k in summary if k not in ("scenario", "policy", "seed", *extension)}
    row.update(setup_s=setup_s, run_s=run_s)
    # the outcome card: the same columns in every run, NaN where a figure is undefined
    card = model.outcome_card().values
    row.update({name: card[name] for name in CARD_NAMES})
    for m in metrics:
        if m not in ticks.columns:  # an extension column of a run that has it off
            ticks[m] = np.nan
        row.setdefault(m, extension.get(m, nanmean(ticks[m])))
    return [row], ticks[["tick", *metrics]].reset_index(drop=True)


# -- recommender benchmark (durable-recourse-rl Table 1 protocol) ---------------------
# (label, registry name, parameters); a study may also name any recommender spec
BENCH_RECOMMENDERS = (
    ("exact-linear (uniform)", "exact-linear", {}),
    ("exact-linear (true d)", "exact-linear", {"weights": "true"}),
    ("ustun", "ustun", {}),
    ("wachter", "wachter", {}),
    ("dice", "dice", {}),
)
BENCH_COLUMNS = ("error", "cost", "seconds_per_recommendation", "n_failed")


class BenchParams(BaseModel):
    """``recommender``: a label of :data:`BENCH_RECOMMENDERS` or a recommender spec
    (``rl:path=DIR``); ``n`` candidates with goals drawn in (M(x), ``goal_max``)."""

    model_config = FROZEN
    recommender: str = "exact-linear (uniform)"
    n: int = Field(200, ge=1, le=1_000_000)
    goal_max: float = Field(0.95, gt=0.0, lt=1.0)


def bench_draws(config: ScenarioConfig, n: int, goal_max: float):
    """``(context, X, goals)``: ``n`` candidates of the scenario's generator with score
    below ``goal_max`` (rejection sampling), X of shape (n, z), and goals
    g ~ U(M(x), goal_max), shape (n,). Stream ``bench-recommenders`` of ``config.seed``:
    every recommender of a seed sees the same draws."""
    model = RecourseModel(config, "none", agents=False, record_events=False)
    ctx, world = model.context, model.world
    rng = stream(config.seed, "bench-recommenders")
    X = np.empty((0, ctx.n_features))
    while X.shape[0] < n:  # keep candidates who can still improve
        draw = world.generator.sample(n, rng)
        X = np.concatenate([X, draw[ctx.decision_model.score(draw) < goal_max]])[:n]
    s = ctx.decision_model.score(X)
    goals = s + rng.uniform(0.0, 1.0, n) * (goal_max - s)
    return ctx, X, goals


def _bench_recommender(label: str):
    """(registry name, built recommender) of a bench label or a recommender spec."""
    for known, name, params in BENCH_RECOMMENDERS:
        if label == known:
            return name, REGISTRY.make("recommender", name, **params)
    recommender = REGISTRY.make("recommender", label)
    return label.partition(":")[0], recommender


def run_recommender_bench(
    config: ScenarioConfig, policy: str, params: BenchParams, metrics: tuple[str, ...]
) -> Output:
    """One row: mean error |M(x_cf) - g| and mean true cost sum_i |dx_i| d_i over the
    candidates the recommender solved (failures, NaN rows, are counted in n_failed)."""
    ctx, X, goals = bench_draws(config, params.n, params.goal_max)
    name, rec = _bench_recommender(params.recommender)
    rec.prepare(ctx)
    start = time.perf_counter()
    X_cf = rec.recommend(X, goals, stream(config.seed, f"bench-{name}"))
    elapsed = time.perf_counter() - start
    ok = ~np.isnan(X_cf).any(axis=1)
    err = np.abs(ctx.decision_model.score(X_cf[ok]) - goals[ok])
    cost = np.abs(X_cf[ok] - X[ok]) @ ctx.difficulty
    return [
        {
            "error": float(err.mean()) if ok.any() else math.nan,
            "cost": float(cost.mean()) if ok.any() else math.nan,
            "seconds_per_recommendation": elapsed / params.n,
            "n_failed": int((~ok).sum()),
        }
    ], None


# -- SafeAR population study ---------------------------------------------------------
POPULATION_COLUMNS = (
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
)


def per_candidate_effort(events: pd.DataFrame, difficulty: Sequence[float]) -> pd.DataFrame:
    """Realised and attempted effort per candidate (one row per cid ever advised).

    Realised: sum over features that changed (``ok_i == 1``) of ``|dx_i| d_i``; attempted:
    the same over every attempted change (``ok_i`` in {0, 1}); both summed over the
    candidate's applications.
    """
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


def population_row(config: ScenarioConfig, policy: str) -> dict[str, Any]:
    """One episode's figures of :data:`POPULATION_COLUMNS` (candidate table on)."""
    model = RecourseModel(config, policy, agents=False, record_events=True).run()
    s = model.summary()
    ev = model.candidate_table()
    eff = per_candidate_effort(ev, model.config.difficulty)
    r95, rc95 = _tail(eff["realised"].to_numpy())
    a95, ac95 = _tail(eff["attempted"].to_numpy())
    row = {
        k: s[k]
        for k in ("rr", "rf", "effort", "wasted_effort", "n_accepted", "n_dropped", "mean_cost")
    }
    row.update(
        realised_p95=r95,
        realised_cvar95=rc95,
        attempted_mean=float(eff["attempted"].mean()) if len(eff) else math.nan,
        attempted_p95=a95,
        attempted_cvar95=ac95,
    )
    for col, key in (
        ("plan_exp_cost", "exp_cost"),
        ("plan_var95", "var95"),
        ("plan_cvar95", "cvar95"),
    ):
        has = key in ev and np.isfinite(ev[key]).any()
        row[col] = float(np.nanmean(ev[key])) if has else math.nan
    return row


def run_population(
    config: ScenarioConfig, policy: str, params: BaseModel, metrics: tuple[str, ...]
) -> Output:
    return [population_row(config, policy)], None


# -- paired evaluation of one policy (a point of the Pareto study) --------------------
EPISODE_METRICS = ("rr", "rf", "gini", "mean_cost")


def episode_means(config: ScenarioConfig, policy: str) -> dict[str, float]:
    """Episode means of one run (agents and events off): rr, rf, gini, mean_cost, and
    n_unadvised (advice that could not be given, summed over ticks)."""
    model = RecourseModel(config, policy, agents=False, record_events=False).run()
    s = model.summary()
    out: dict[str, Any] = {k: float(s[k]) for k in EPISODE_METRICS}
    out["n_unadvised"] = int(model.tick_table()["n_unadvised"].sum())
    return out


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std over the finite values (NaN: an undefined episode)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return (float(v.mean()), float(v.std())) if v.size else (math.nan, math.nan)


class ParetoParams(BaseModel):
    """A Pareto point: its labels (``method``, ``family``, ``alpha``, ``tau`` of eq. 16;
    none for baselines; the goal ``margin`` c of a constant-margin selector g = th + c),
    and the number of paired ``episodes``."""

    model_config = FROZEN
    method: str = ""
    family: Literal["baseline", "hybrid", "rl", "lookahead", "margin"] = "baseline"
    alpha: float | None = Field(None, ge=0.0, le=1e6)
    tau: float | None = Field(None, ge=0.0, le=1e6)
    margin: float | None = Field(None, gt=-1.0, lt=1.0)
    episodes: int = Field(10, ge=1, le=100_000)

    @model_serializer(mode="wrap")
    def _without_unset_margin(self, handler: Callable[[Any], dict]) -> dict[str, Any]:
        # points without a margin keep the run ids they had before margins existed
        out = handler(self)
        if out.get("margin") is None:
            out.pop("margin", None)
        return out


PARETO_COLUMNS = (
    "rr",
    "rr_std",
    "rf",
    "rf_std",
    "gini",
    "cost",
    "n_unadvised",
    "episodes",
    "seconds",
    "rr_episodes",
    "rf_episodes",
)


def run_pareto_point(
    config: ScenarioConfig, policy: str, params: ParetoParams, metrics: tuple[str, ...]
) -> Output:
    """Episodes ``seed + i`` (i < episodes) of ``policy``: RR, RF, Gini and cost, mean and
    std over the episodes, the unadvised total, and each episode's RR and RF (JSON lists
    in episode order, NaN for an undefined episode) for paired intervals across points."""
    start = time.perf_counter()
    per = [
        episode_means(config.replace(seed=config.seed + i), policy) for i in range(params.episodes)
    ]
    (rr, rr_std), (rf, rf_std) = mean_std([e["rr"] for e in per]), mean_std([e["rf"] for e in per])
    return [
        {
            "rr": rr,
            "rr_std": rr_std,
            "rf": rf,
            "rf_std": rf_std,
            "gini": mean_std([e["gini"] for e in per])[0],
            "cost": mean_std([e["mean_cost"] for e in per])[0],
            "n_unadvised": sum(e["n_unadvised"] for e in per),
            "episodes": params.episodes,
            "seconds": round(time.perf_counter() - start, 2),
            "rr_episodes": json.dumps([e["rr"] for e in per]),
            "rf_episodes": json.dumps([e["rf"] for e in per]),
        }
    ], None


# -- the registry --------------------------------------------------------------------
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "episode",
            run_episode,
            "one simulation episode",
            columns=SUMMARY_COLUMNS,
            keeps_ticks=True,
        ),
        Experiment(
            "recommender-bench",
            run_recommender_bench,
            "Table 1 protocol: error and true cost of one recommender",
            BenchParams,
            BENCH_COLUMNS + ("elapsed_s",),
            policy=False,
        ),
        Experiment(
            "safear-population",
            run_population,
            "one episode with the per-candidate effort tails (SafeAR)",
            columns=POPULATION_COLUMNS + ("elapsed_s",),
        ),
        Experiment(
            "pareto-eval",
            run_pareto_point,
            "paired episodes of one policy: a point of the RR-RF Pareto study",
            ParetoParams,
            PARETO_COLUMNS + ("elapsed_s",),
        ),
        Experiment(
            "arlim-trial",
            run_trial,
            "one paired trial of the ARLIM static task (improvement bandits)",
            TrialParams,
            TRIAL_COLUMNS + ("elapsed_s",),
            policy=False,
        ),
        Experiment(
            "robust-table1",
            run_table1_cell,
            "one fold of one cell of robust-recourse Table 1 (German Credit, LR)",
            Table1Params,
            TABLE1_COLUMNS + ("elapsed_s",),
            policy=False,
        ),
        Experiment(
            "fairness-trial",
            run_fairness_trial,
            "one paired trial of the SCARF synthetic SCM reproduction (long-term fairness)",
            FairnessTrialParams,
            FAIRNESS_COLUMNS + ("elapsed_s",),
            policy=False,
        ),
    )
}


#: the episode's own figures a batch can give (the others run one task at a time)
BATCHED = frozenset({"episode"})


def execute_run(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task; never raises (a failure is returned as an error result).

    ``task``: run_id, experiment, policy, config (``ScenarioConfig.to_dict()``, its seed the
    run's), params (the experiment's), metrics (tick columns to keep). Returns run_id,
    status, error, traceback, elapsed_s, and for a finished run rows and ticks. A task of
    several runs (``batch``: their tasks, :func:`lab.study.runner.batch_tasks`) returns
    ``batch``: their results, in order.
    """
    from threadpoolctl import threadpool_limits

    if "batch" in task:
        return execute_batch(task)

    start = time.perf_counter()
    try:
        experiment = EXPERIMENTS[task["experiment"]]
        config = ScenarioConfig.from_dict(task["config"])
        params = experiment.params.model_validate(task.get("params", {}))
        # one BLAS/OpenMP thread whatever the backend: serial, worker processes and Dask
        # threads then sum every product in the same order and give the same bits
        with threadpool_limits(limits=1):
            rows, ticks = experiment.run(config, task["policy"], params, tuple(task["metrics"]))
    except Exception as exc:  # recorded with the run; the study goes on
        return {
            "run_id": task["run_id"],
            "status": "error",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
            "elapsed_s": time.perf_counter() - start,
        }
    return {
        "run_id": task["run_id"],
        "status": "ok",
        "error": "",
        "traceback": "",
        "elapsed_s": time.perf_counter() - start,
        "rows": rows,
        "ticks": ticks,
    }


def execute_batch(task: dict[str, Any]) -> dict[str, Any]:
    """The runs of ``task["batch"]`` (episodes of one scenario and policy) as one batch;
    ``{"run_id", "batch": results}``. Should one episode fail, each run goes again alone,
    so every run gets the result it gets alone (its own error included)."""
    from threadpoolctl import threadpool_limits

    tasks = task["batch"]
    first = tasks[0]
    start = time.perf_counter()
    try:
        experiment = EXPERIMENTS[first["experiment"]]
        params = experiment.params.model_validate(first.get("params", {}))
        configs = [ScenarioConfig.from_dict(t["config"]) for t in tasks]
        with threadpool_limits(limits=1):
            outputs = run_episodes(configs, first["policy"], params, tuple(first["metrics"]))
    except Exception:
        return {"run_id": task["run_id"], "batch": [execute_run(t) for t in tasks]}
    each = (time.perf_counter() - start) / len(tasks)
    results = [
        {
            "run_id": t["run_id"],
            "status": "ok",
            "error": "",
            "traceback": "",
            "elapsed_s": each,
            "rows": rows,
            "ticks": ticks,
        }
        for t, (rows, ticks) in zip(tasks, outputs, strict=True)
    ]
    return {"run_id": task["run_id"], "batch": results}
