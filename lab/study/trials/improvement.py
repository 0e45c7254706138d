"""The static ARLIM task (Problem 3.1, specs/improvement-bandits.md §2-§4) and its
paired trials: the ``arlim-trial`` experiment of the study runner.

A :class:`Task` holds everything one trial draws (split, h, arms, instance stream,
delays, reward uniforms, cost noise ε); every method plays the same task (D3), so
their differences are paired. Round t (0-based here) with pick k: expected reward
θ̃_k E_tk, reward R_t = 1[u_t < θ̃_k E_tk], delay D_t ~ Geometric(p) on {1, 2, ...};
R_t is usable from round t + D_t on iff R_t = 1, D_t <= m and t + D_t < T (censored
otherwise). A round without a feasible arm scores 0 (reward, improvement and cost).

Shapes: T rounds, K arms, D features.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from abm.rng import stream
from abm.validation import ConfigError, problem, require_int, require_number
from policies.improvement.bandits import (
    BwOUCB,
    LinUCB,
    execution_probability,
    feasible_arms,
    fit_pair_verifier,
    noisy_probability,
    protoar_pick,
)

METHODS = ("ProtoAR", "TAP", "LinUCB", "BwO-UCB")
XIS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25)
TASKS = ("compas", "german", "synthetic")
Method = Literal["ProtoAR", "TAP", "LinUCB", "BwO-UCB"]


@dataclass(frozen=True)
class Task:
    """One trial's draws, shared by every method.

    ``arms`` (K, D); ``gain`` (K,) what a pick counts as improvement (the arm's label
    y_k, or h*(x̃_k) on the synthetic task); ``theta`` (K,) θ̃_k of the reward; ``X``
    (T, D) instances; ``feasible``, ``cost``, ``E``, ``eps`` (T, K); ``delay`` (T,) int;
    ``u`` (T,) reward uniforms; ``trust`` (T, K) TAP's trustworthy pairs (None: TAP off);
    ``m`` the censoring window.
    """

    arms: np.ndarray
    gain: np.ndarray
    theta: np.ndarray
    X: np.ndarray
    feasible: np.ndarray
    cost: np.ndarray
    E: np.ndarray
    eps: np.ndarray
    delay: np.ndarray
    u: np.ndarray
    m: int
    trust: np.ndarray | None = None

    @property
    def rounds(self) -> int:
        return self.X.shape[0]

    @property
    def n_arms(self) -> int:
        return self.arms.shape[0]


# -- building a task ---------------------------------------------------------------------
def stratified_split(
    y: np.ndarray, rng: np.random.Generator, shares: tuple[float, ...] = (0.5, 0.25, 0.25)
) -> tuple[np.ndarray, ...]:
    """Row indices of each part (train : recourse : test = 2 : 1 : 1 by default), every
    class split in the same shares; each part sorted."""
    cuts = np.cumsum(shares)[:-1]
    parts: list[list[np.ndarray]] = [[] for _ in shares]
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        for i, chunk in enumerate(np.split(idx, np.round(cuts * idx.size).astype(int))):
            parts[i].append(chunk)
    return tuple(np.sort(np.concatenate(p)) for p in parts)


def _draws(
    arms: np.ndarray,
    X: np.ndarray,
    immutable: np.ndarray,
    seed: int,
    m: int,
    delay_p: float,
) -> dict[str, np.ndarray]:
    """Per-round arrays of a task: feasibility, costs, E (ν = 1/D), ε, delays, uniforms."""
    T, D = X.shape
    feasible = np.stack([feasible_arms(x, arms, immutable) for x in X])
    cost = np.abs(arms[None, :, :] - X[:, None, :]).sum(axis=2)
    return {
        "feasible": feasible,
        "cost": cost,
        "E": execution_probability(cost, 1.0 / D),
        "eps": stream(seed, "arlim-noise").standard_normal((T, arms.shape[0])),
        "delay": stream(seed, "arlim-delays").geometric(delay_p, T),
        "u": stream(seed, "arlim-rewards").random(T),
    }


def offline_task(
    X: np.ndarray,
    y: np.ndarray,
    immutable: np.ndarray,
    seed: int,
    *,
    rounds: int = 1000,
    n_arms: int = 200,
    m: int = 10,
    delay_p: float = 0.2,
    improvement_noise: float = 0.1,
    n_estimators: int = 100,
    tap: bool = True,
) -> Task:
    """The paper's protocol on a data set X (N, D), y (N,) (§2-§3): stratified split
    2 : 1 : 1, h = ``RandomForestClassifier(n_estimators)`` on the training part, arms =
    up to ``n_arms`` recourse rows with h = 1 (drawn without replacement), θ̃_k =
    clip(y_k + ``improvement_noise`` ε_k, 0, 1), instances = ``rounds`` test rows with
    h = 0 and y = 0 (drawn with replacement, D4). ``tap`` fits TAP's verifier."""
    from sklearn.ensemble import RandomForestClassifier

    rounds = require_int("rounds", rounds, 1)
    n_arms = require_int("n_arms", n_arms, 1)
    m = require_int("m", m, 1)
    delay_p = require_number("delay_p", delay_p, 0.0, 1.0, low_open=True)
    improvement_noise = require_number("improvement_noise", improvement_noise, 0.0, 1.0)
    tr, re, te = stratified_split(y, stream(seed, "arlim-split"))
    model_seed = int(stream(seed, "arlim-model").integers(2**31 - 1))
    h = RandomForestClassifier(n_estimators=n_estimators, random_state=model_seed, n_jobs=1)
    h.fit(X[tr], y[tr])
    valid = re[h.predict(X[re]) == 1]
    if valid.size == 0:
        raise ConfigError(problem("n_arms", 0, "recourse rows with h = 1: none in this split"))
    pick = stream(seed, "arlim-arms")
    arm_rows = valid if valid.size <= n_arms else pick.choice(valid, n_arms, replace=False)
    arms, labels = X[arm_rows], y[arm_rows].astype(float)
    theta = np.clip(
        labels + improvement_noise * stream(seed, "arlim-theta").standard_normal(arm_rows.size),
        0.0,
        1.0,
    )
    targets = te[(h.predict(X[te]) == 0) & (y[te] == 0)]
    if targets.size == 0:
        raise ConfigError(problem("rounds", rounds, "test rows with h = 0 and y = 0: none"))
    inst = X[stream(seed, "arlim-instances").choice(targets, rounds, replace=True)]
    trust = None
    if tap:
        verifier = fit_pair_verifier(h, X[tr], y[tr], stream(seed, "arlim-verifier"))
        # instances repeat (drawn with replacement): score each distinct row once
        uniq, inverse = np.unique(inst, axis=0, return_inverse=True)
        trust = verifier.trustworthy(uniq, arms)[inverse.reshape(-1)]
    return Task(
        arms=arms,
        gain=labels,
        theta=theta,
        X=inst,
        m=m,
        trust=trust,
        **_draws(arms, inst, immutable, seed, m, delay_p),
    )


def synthetic_task(
    seed: int, *, rounds: int = 5000, n_arms: int = 50, m: int = 10, delay_p: float = 0.2
) -> Task:
    """The regret check's task (§4): the SPEC §1 world of ``world_seed = seed`` (z = 10,
    no immutable features), arms = ``n_arms`` training rows with M = 1, θ_k = h*(x̃_k) =
    Φ((w·x̃_k - 0.5)/0.05) (known, no extra noise), instances = training rows with M = 0
    and y = 0 (with replacement)."""
    from abm.scenarios import resolve_scenario
    from abm.world import build_world

    rounds = require_int("rounds", rounds, 1)
    n_arms = require_int("n_arms", n_arms, 1)
    config = resolve_scenario("paper").replace(world_seed=seed)
    world = build_world(config)
    X = world.X_train
    accept = world.decision_model.score(X) >= 0.5
    good = np.flatnonzero(accept)
    arm_rows = stream(seed, "arlim-arms").choice(good, min(n_arms, good.size), replace=False)
    arms = X[arm_rows]
    theta = world.true_probability(arms, 0.5, config.label_noise)
    targets = np.flatnonzero(~accept & (world.y_train == 0))
    inst = X[stream(seed, "arlim-instances").choice(targets, rounds, replace=True)]
    immutable = np.zeros(X.shape[1], dtype=bool)
    return Task(
        arms=arms,
        gain=theta,
        theta=theta,
        X=inst,
        m=m,
        **_draws(arms, inst, immutable, seed, m, delay_p),
    )


# -- playing a task ----------------------------------------------------------------------
def play(
    task: Task,
    pick: Callable[[int], int],
    learn: Callable[[list[tuple[int, int]]], None] | None = None,
) -> np.ndarray:
    """Run the T rounds: ``pick(t)`` returns an arm (-1: none); ``learn(rewards)`` gets
    the rewards usable from round t on as (round s, arm k) pairs (all R_s = 1), before
    ``pick(t)``. Returns the picks (T,) int."""
    T = task.rounds
    due: list[list[tuple[int, int]]] = [[] for _ in range(T)]
    picks = np.full(T, -1, dtype=np.int64)
    for t in range(T):
        if due[t] and learn is not None:
            learn(due[t])
        k = pick(t)
        picks[t] = k
        if k < 0:
            continue
        d = int(task.delay[t])
        if task.u[t] < task.theta[k] * task.E[t, k] and d <= task.m and t + d < T:
            due[t + d].append((t, k))
    return picks


def shown_probability(task: Task, t: int, xi: float) -> np.ndarray:
    """Ê (K,) shown at round t for cost noise ξ."""
    return noisy_probability(task.E[t], xi, task.eps[t]) if xi > 0 else task.E[t]


def run_protoar(task: Task, xi: float = 0.0, trusted: bool = False) -> np.ndarray:
    """ProtoAR (or TAP with ``trusted``: only trustworthy arms) on ``task``: picks (T,)."""
    if trusted and task.trust is None:
        raise ConfigError(problem("trust", None, "a task built with tap=True"))
    mask = task.feasible & task.trust if trusted else task.feasible
    return play(task, lambda t: protoar_pick(shown_probability(task, t, xi), mask[t]))


def run_linucb(task: Task, xi: float = 0.0, **params: Any) -> np.ndarray:
    """LinUCB (Algorithm 1) on ``task``; ``params`` go to :class:`LinUCB` (lam, delta,
    bonus, learn_with; m is the task's). Picks (T,)."""
    agent = LinUCB(task.n_arms, m=task.m, **params)
    shown = np.zeros(task.rounds)

    def pick(t: int) -> int:
        E_hat = shown_probability(task, t, xi)
        k = agent.pick(E_hat, task.feasible[t])
        if k >= 0:
            shown[t] = E_hat[k]
        return k

    def learn(rewards: list[tuple[int, int]]) -> None:
        for s, k in rewards:
            agent.reward(k, 1.0, shown[s], float(task.E[s, k]))

    return play(task, pick, learn)


def run_bwo(task: Task, seed: int, n_trees: int = 50, max_samples: float = 0.25) -> np.ndarray:
    """BwO-UCB (Algorithm 2) on ``task`` with its own stream of ``seed``. Picks (T,)."""
    agent = BwOUCB(n_trees, max_samples, stream(seed, "arlim-bwo"))
    order = np.full(task.rounds, -1, dtype=np.int64)  # round -> pick number

    def pick(t: int) -> int:
        x = task.X[t]
        Z = np.concatenate([np.broadcast_to(x, task.arms.shape), task.arms - x], axis=1)
        k = agent.pick(Z, task.feasible[t])
        if k >= 0:
            order[t] = len(agent.Z) - 1
        return k

    def learn(rewards: list[tuple[int, int]]) -> None:
        for s, _ in rewards:
            agent.reward(int(order[s]))
        agent.refit()

    return play(task, pick, learn)


def trace(task: Task, picks: np.ndarray) -> dict[str, np.ndarray]:
    """Per-round (T,) ``expected`` reward θ̃_k E_tk, ``gain`` (improvement), ``cost``
    and ``regret`` (best feasible θ̃E minus the pick's); zeros where no arm was picked."""
    T = task.rounds
    rows = np.arange(T)
    ok = picks >= 0
    k = np.where(ok, picks, 0)
    value = task.theta[None, :] * task.E
    expected = np.where(ok, value[rows, k], 0.0)
    best = np.where(task.feasible, value, -np.inf).max(axis=1)
    best = np.where(np.isfinite(best), best, 0.0)
    return {
        "expected": expected,
        "gain": np.where(ok, task.gain[k], 0.0),
        "cost": np.where(ok, task.cost[rows, k], 0.0),
        "regret": best - expected,
    }


def regret_slope(cum_regret: np.ndarray, start_share: float = 0.1) -> float:
    """Least-squares slope of log cumulative regret against log t over t in [T/10, T]
    (t 1-based; 1 = linear regret, below 1 sublinear)."""
    T = cum_regret.shape[0]
    t = np.arange(1, T + 1)
    keep = (t >= math.ceil(start_share * T)) & (cum_regret > 0)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(t[keep]), np.log(cum_regret[keep]), 1)[0])


# -- the study runner's experiment --------------------------------------------------------
FROZEN = ConfigDict(extra="forbid", frozen=True)
Xi = Annotated[float, Field(ge=0.0, le=1.0)]


class TrialParams(BaseModel):
    """One paired trial (the run's seed): ``task`` (compas, german or the synthetic
    regret check), the methods, the cost-noise levels ξ and the §2 settings."""

    model_config = FROZEN
    task: Literal["compas", "german", "synthetic"] = "compas"
    methods: tuple[Method, ...] = Field(METHODS, min_length=1)
    xis: tuple[Xi, ...] = Field(XIS, min_length=1)
    rounds: int = Field(1000, ge=1, le=1_000_000)
    n_arms: int = Field(200, ge=1, le=100_000)
    m: int = Field(10, ge=1, le=1_000_000)
    lam: float = Field(20.0, gt=0.0, le=1e9)
    delta: float = Field(0.05, gt=0.0, lt=1.0)
    bonus: Literal["quad", "sqrt"] = "quad"
    learn_with: Literal["shown", "true"] = "shown"
    n_trees: int = Field(50, ge=1, le=10_000)
    max_samples: float = Field(0.25, gt=0.0, le=1.0)
    delay_p: float = Field(0.2, gt=0.0, le=1.0)
    improvement_noise: float = Field(0.1, ge=0.0, le=1.0)
    curves: bool = True  # keep per-round MER curves (ticks) at the lowest and highest ξ


TRIAL_COLUMNS = (
    "mer",
    "mer200",
    "improvement",
    "cost",
    "regret",
    "regret_slope",
    "n_none",
    "ms_per_round",
)


def build_task(params: TrialParams, seed: int) -> Task:
    """The trial's task for ``params.task`` and ``seed``."""
    if params.task == "synthetic":
        return synthetic_task(
            seed, rounds=params.rounds, n_arms=params.n_arms, m=params.m, delay_p=params.delay_p
        )
    from lab.datasets import load_dataset

    ds = load_dataset(params.task)
    return offline_task(
        ds.X,
        ds.y,
        ds.immutable,
        seed,
        rounds=params.rounds,
        n_arms=params.n_arms,
        m=params.m,
        delay_p=params.delay_p,
        improvement_noise=params.improvement_noise,
        tap="TAP" in params.methods,
    )


def play_methods(
    task: Task, params: TrialParams, seed: int
) -> list[tuple[str, float, np.ndarray, float]]:
    """(method, ξ, picks (T,), seconds per round) for every method and ξ of ``params``;
    BwO-UCB never sees E, so it plays once and stands for every ξ."""
    out: list[tuple[str, float, np.ndarray, float]] = []
    for method in params.methods:
        levels = params.xis if method != "BwO-UCB" else params.xis[:1]
        for xi in levels:
            start = time.perf_counter()
            if method == "ProtoAR":
                picks = run_protoar(task, xi)
            elif method == "TAP":
                picks = run_protoar(task, xi, trusted=True)
            elif method == "LinUCB":
                picks = run_linucb(
                    task,
                    xi,
                    lam=params.lam,
                    delta=params.delta,
                    bonus=params.bonus,
                    learn_with=params.learn_with,
                )
            else:
                picks = run_bwo(task, seed, params.n_trees, params.max_samples)
            seconds = (time.perf_counter() - start) / task.rounds
            if method == "BwO-UCB":
                out += [(method, x, picks, seconds) for x in params.xis]
            else:
                out.append((method, xi, picks, seconds))
    return out


def run_trial(
    config: Any, policy: str, params: TrialParams, metrics: tuple[str, ...]
) -> tuple[list[dict[str, Any]], Any]:
    """The ``arlim-trial`` experiment: one paired trial of seed ``config.seed``.

    Rows: one per (method, ξ) with :data:`TRIAL_COLUMNS` (final MER, MER at round 200,
    mean improvement and cost, final cumulative regret and its log-log slope, rounds
    without an arm, milliseconds per round). Ticks: the running MER and cumulative
    regret per round (``tick`` 1..T) at the lowest and highest ξ (``curves``).
    """
    import pandas as pd

    seed = int(config.seed)
    task = build_task(params, seed)
    rows, curves = [], []
    keep_xi = {min(params.xis), max(params.xis)}
    for method, xi, picks, seconds in play_methods(task, params, seed):
        tr = trace(task, picks)
        t = np.arange(1, task.rounds + 1)
        mer = np.cumsum(tr["expected"]) / t
        cum_regret = np.cumsum(tr["regret"])
        rows.append(
            {
                "task": params.task,
                "method": method,
                "xi": xi,
                "n_arms": task.n_arms,
                "mer": float(mer[-1]),
                "mer200": float(mer[min(200, task.rounds) - 1]),
                "improvement": float(tr["gain"].mean()),
                "cost": float(tr["cost"].mean()),
                "regret": float(cum_regret[-1]),
                "regret_slope": regret_slope(cum_regret),
                "n_none": int((picks < 0).sum()),
                "ms_per_round": 1000.0 * seconds,
            }
        )
        if params.curves and xi in keep_xi:
            curves.append(
                pd.DataFrame(
                    {"tick": t, "method": method, "xi": xi, "mer": mer, "cum_regret": cum_regret}
                )
            )
    ticks = pd.concat(curves, ignore_index=True) if curves else None
    return rows, ticks
