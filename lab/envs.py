"""Gymnasium environments of durable-recourse-rl §4 that drive the simulation.

* :class:`RecommenderEnv` (§4.1, App. C): one candidate, state (x, g) (observed with
  M(x), the gaps and d̂), action -> x^CF (the paper's direct change, or a direction whose
  step length reaches g), reward eq. 15, online difficulty estimates d̂ (eqs. 12-14).
* :class:`PopulationEnv` (§4.2): the full population of :class:`~abm.model.RecourseModel`,
  action = goal score g, reward eq. 16. The env never re-implements the dynamics: it
  steps a RecourseModel whose policy is ``ExternalGoal + recommender``.

Both seed only ``self.np_random`` in ``reset(seed=...)``; every episode draws its own
integer seed from it, so a run is reproducible from the first reset seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from abm import collector, segments
from abm.batch import Batch, score_rows
from abm.behaviour import change_success_probability
from abm.config import K_MAX, M_MAX, ScenarioConfig, require_int, require_number
from abm.interfaces import PolicyContext, Recommender, RecourseObs, RejectedRows, rows_ready
from abm.metrics import nanmean, reward_eq16
from abm.model import RecourseModel
from abm.registry import REGISTRY
from abm.rng import Streams
from abm.scenarios import resolve_scenario
from policies.composite import CompositePolicy
from policies.recommenders import DifficultyEstimator
from policies.rl.encoding import (
    RECOMMENDER_ACTIONS,
    encode_batch,
    encode_window,
    goal_from_action,
    observation_size,
    recommender_counterfactual,
    recommender_observation,
    recommender_observation_bounds,
    recommender_observation_size,
)

# the window columns the goal selector's encoding reads (policies.rl.encoding)
_WINDOW = ("X_obs", "last_tick", "n_apps", "goal")

# -- the single-candidate recommender environment (§4.1) -------------------------------


def ratios_row(model: RecourseModel) -> dict[str, float]:
    """RR and RF (eqs. 2-3) of ``model``'s last tick, all a population env's reward reads:
    where its batch defers the record (:attr:`abm.batch.Batch.defer_record`), the rest of
    the row is not made."""
    block = model._batch.last_block
    if block is not None:  # the batch's last tick, kept as one block
        b = model._episode
        return {"rr": block.column("rr")[b], "rf": block.column("rf")[b]}
    row = model.last_row
    return {"rr": row["rr"], "rf": row["rf"]}


def world_seeds(worlds: Sequence[int] | None) -> tuple[int, ...] | None:
    """The world seeds an environment's episodes rotate over (None: the scenario's world
    alone); ValueError for an empty sequence."""
    seeds = None if worlds is None else tuple(int(w) for w in worlds)
    if seeds == ():
        raise ValueError("worlds must name at least one world seed, or be None")
    return seeds


class RecommenderEnv(gym.Env):
    """One candidate reaching a goal score; SAC learns φ: (x, g) -> x^CF.

    Observation (:func:`recommender_observation`, 2z + 4, float32): the paper's state
    (x, g) followed by functions of the environment's state that SAC would otherwise have
    to learn: the current score M(x), the gap g - M(x) and in logit units, and the current
    estimate d̂ (the
    reward's cost term depends on d̂, which changes during training, so it belongs to the
    state: without it the problem is not Markov). At inference :class:`LearnedRecommender`
    builds the same vector with the d̂ learned in training.

    Action (z,) in [-1, 1], two mappings (``action``):

    * ``"direct"`` (the paper's): the change, x^CF = clip(x + ``max_step`` a, 0, 1) with
      immutable features kept (:func:`action_to_counterfactual`). ``max_step`` < 1 scales
      the action to the size of the changes actually needed (Σ|Δ| ~ 0.1-0.4), which gives
      the actor 1/max_step times the resolution; max_step = 1 is the paper's range.
    * ``"direction"`` (a deviation): a non-negative direction u = (a + 1) / 2 over the
      mutable features; the step length along u that reaches g is found by bisection on
      M's score (:func:`direction_to_counterfactual`, uses only ``M.score``), so the
      error is ~0 by construction and RL learns only the cost-aware direction.

    ``worlds``: episode j after a seeded reset draws its candidate in world
    ``worlds[j % len(worlds)]`` (its generator and decision model M), as
    :class:`PopulationEnv` does; None: the scenario's world.

    Each step the candidate tries the advice with eq. 8's probability per changed feature
    (true d, the scenario's β) and reapplies next step (validity T = 1). The episode ends
    when M(x) >= g, or is truncated after ``max_steps``. Reward eq. 15:
    -φ ĉ - ψ max(0, e - ε), e = |M(x^CF) - g|, ĉ = Σ|Δ_i| d̂_i; the cost term is off during
    the first ``warmup_episodes`` episodes. SAC is trained on eq. 15 divided by
    ``reward_scale`` (a positive constant: the optimum is unchanged, only the magnitude
    SAC sees, ~-100 for errors ~0.3 at ψ = 300, is brought to O(1)); ``info["reward_eq15"]``
    carries eq. 15 itself. d̂ is updated after every attempt by the project's
    DifficultyEstimator (d̂⁰, η₀) and persists across episodes (see :meth:`get_state`).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: ScenarioConfig | str = "paper",
        *,
        max_steps: int = 10,
        epsilon: float = 0.01,
        phi: float = 10.0,
        psi: float = 300.0,
        warmup_episodes: int = 3000,
        goal_max: float = 0.95,
        d0: float = 0.5,
        eta0: float = 0.05,
        max_step: float = 0.5,
        action: str = "direct",
        reward_scale: float = 30.0,
        worlds: Sequence[int] | None = None,
        **overrides: Any,
    ) -> None:

        require_int("max_steps", max_steps, 1, 10_000)
        require_int("warmup_episodes", warmup_episodes, 0, 10**9)
        require_number("goal_max", goal_max, 0.0, 1.0, low_open=True, high_open=True)
        require_number("max_step", max_step, 0.0, 1.0, low_open=True)
        require_number("reward_scale", reward_scale, 0.0, 1e9, low_open=True)
        if action not in RECOMMENDER_ACTIONS:
            raise ValueError(
                f"action must be one of {', '.join(RECOMMENDER_ACTIONS)}, got {action!r}"
            )
        for name, v in (("epsilon", epsilon), ("phi", phi), ("psi", psi)):
            require_number(name, v, 0.0, 1e9)
        self.worlds = world_seeds(worlds)
        # the world (generator, M, bounds, true d) of the scenario, without running it; with
        # ``worlds``, each of them, episode j playing in worlds[j % len(worlds)]
        self._worlds = [
            self._world(scenario, {**overrides, "world_seed": w}) for w in self.worlds or ()
        ] or [self._world(scenario, overrides)]
        self.config, self.ctx, self.generator = self._worlds[0]
        self.max_steps, self.goal_max = max_steps, goal_max
        self.epsilon, self.phi, self.psi = epsilon, phi, psi
        self.max_step, self.action_mode, self.reward_scale = (
            float(max_step),
            action,
            float(reward_scale),
        )
        self.warmup_episodes = warmup_episodes
        self._estimator_args = (self.ctx.n_features, self.ctx.beta, d0, eta0)
        self.estimator = DifficultyEstimator(*self._estimator_args)
        z = self.ctx.n_features
        low, high = recommender_observation_bounds(z)
        self.observation_space = gym.spaces.Box(
            low, high, (recommender_observation_size(z),), np.float32
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (z,), np.float32)
        self.episodes = 0  # finished resets, for the warm-up phase
        self._x = np.zeros(z)
        self._g = 0.0
        self._t = 0

    @staticmethod
    def _world(scenario: ScenarioConfig | str, overrides: dict[str, Any]) -> tuple:
        model = RecourseModel(scenario, "none", agents=False, record_events=False, **overrides)
        return model.config, model.context, model.world.generator

    @property
    def warming_up(self) -> bool:
        return self.episodes <= self.warmup_episodes

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode; an explicit ``seed`` also starts learning afresh (d̂ = d̂⁰, episode 0)."""

        super().reset(seed=seed)
        if seed is not None:
            self.estimator = DifficultyEstimator(*self._estimator_args)
            self.episodes = 0
        # the worlds' turn (d̂ is one estimate across them: d is the scenario's, not a world's)
        self.config, self.ctx, self.generator = self._worlds[self.episodes % len(self._worlds)]
        score = self.ctx.decision_model.score
        while True:  # a candidate who can still improve, and a goal above its score
            x = self.generator.sample(1, self.np_random)
            s = float(score(x)[0])
            if s < self.goal_max:
                break
        self._x = x[0]
        self._g = s + float(self.np_random.uniform(0.0, 1.0)) * (self.goal_max - s)
        self._t = 0
        self.episodes += 1
        return self._obs(), {}

    def step(self, action: np.ndarray):
        x = self._x
        m = self.ctx.decision_model
        x_cf = self.counterfactual(
            x[None, :], np.asarray(action, dtype=float)[None, :], np.array([self._g])
        )[0]
        error = abs(float(m.score(x_cf[None, :])[0]) - self._g)
        cost_hat = float(np.abs(x_cf - x) @ self.estimator.d)
        cost = float(np.abs(x_cf - x) @ self.ctx.difficulty)
        cost_term = 0.0 if self.warming_up else self.phi * cost_hat
        reward = -cost_term - self.psi * max(0.0, error - self.epsilon)  # eq. 15
        # the candidate tries every changed feature (eq. 8); d̂ learns from the outcome
        changed = x_cf != x
        p = change_success_probability(
            x[changed], x_cf[changed], self.ctx.beta, self.ctx.difficulty[changed]
        )
        ok = self.np_random.random(p.shape[0]) < p
        x_new = x.copy()
        x_new[np.flatnonzero(changed)[ok]] = x_cf[changed][ok]
        succeeded = np.zeros_like(changed)
        succeeded[np.flatnonzero(changed)[ok]] = True
        self.estimator.update(x[None, :], x_cf[None, :], changed[None, :], succeeded[None, :])
        self._x = x_new
        self._t += 1
        terminated = bool(m.score(x_new[None, :])[0] >= self._g)
        truncated = not terminated and self._t >= self.max_steps
        info = {
            "error": error,
            "cost": cost,
            "cost_hat": cost_hat,
            "warmup": self.warming_up,
            "d_error": self.difficulty_error(),
            "reward_eq15": reward,
        }
        return self._obs(), float(reward / self.reward_scale), terminated, truncated, info

    def counterfactual(self, X: np.ndarray, A: np.ndarray, goals: np.ndarray) -> np.ndarray:
        """x^CF (n, z) of features X (n, z) with goals (n,) under actions A (n, z) in [-1, 1]."""
        return recommender_counterfactual(X, A, goals, self.ctx, self.action_mode, self.max_step)

    def difficulty_error(self) -> float:
        """Eq. 17: Σ|d_i - d̂_i|."""
        return float(np.abs(self.ctx.difficulty - self.estimator.d).sum())

    def get_state(self) -> dict[str, Any]:
        """What a training checkpoint must keep besides the SB3 model (JSON-safe)."""
        return {
            "episodes": self.episodes,
            "d_hat": self.estimator.d.tolist(),
            "updates": self.estimator.updates.tolist(),
            "rng": self.np_random.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state` (after the reset that starts a resumed training run)."""
        self.np_random.bit_generator.state = state["rng"]
        self.episodes = int(state["episodes"])
        self.estimator.d = np.asarray(state["d_hat"], dtype=float)
        self.estimator.updates = np.asarray(state["updates"], dtype=np.int64)

    def _obs(self) -> np.ndarray:
        s = self.ctx.decision_model.score(self._x[None, :])
        return recommender_observation(self._x[None, :], np.array([self._g]), s, self.estimator.d)[
            0
        ]


class ChosenGoal:
    """Goal selector whose goal is the one last set in :attr:`goal` (one per tick).

    :class:`PopulationEnv` sets it from SAC's action before asking the policy for advice.
    """

    # its answer depends on nothing but the goals set: PopulationVectorEnv asks it for the
    # rows of many episodes at once, each episode's goal in ``goals`` (B,)
    rows_ready = True

    def __init__(self) -> None:
        self.goal = float("nan")
        self.goals = np.empty(0)

    def prepare(self, ctx: PolicyContext) -> None:
        pass

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        return self.goal

    def select_rows(self, rows: RejectedRows) -> np.ndarray | float:
        return rows.per_row(self.goals)


class PopulationEnv(gym.Env):
    """SAC learns the predictor μ: observation of tick t -> goal score g_t (§4.2).

    Action (1,) in [-1, 1] is the margin above the last threshold th_t:
    g = min(th_t + ``max_margin`` (a + 1) / 2, 1) (:func:`goal_from_action`). A goal below
    th_t is advice that cannot get anyone in; allowing it lets SAC buy RF = 1 with no
    advice at all (every "change" is empty), which is what unconstrained predictors
    learned first. Observation: see
    :func:`encode_observation`. One env step = one tick: ``step(a)`` lets the model
    finish tick t with goal g (``respond``: advice, dropout, implementation, tick record)
    and run up to the goal decision of tick t + 1 (``decide``; ticks where nobody is
    rejected need no decision and are finished in the same step). The reward is eq. 16
    over the tick records completed in the step (:func:`abm.metrics.reward_eq16`); as at
    T = 1 a goal's effect shows at the next tick, the reward lags the action by one step,
    and the window in the observation (last goals and features) keeps the process Markov.
    Episodes are the scenario's ``ticks`` (100) long; each reset builds a new
    RecourseModel (new population) with a seed drawn from ``self.np_random``.
    ``recommender`` is a registry spec (``exact-linear``, ``ustun:levels=10``,
    ``rl:path=...``) or a Recommender object. ``capacity_obs`` appends the places and
    entrants in force, k_t / k and m_t / m, to the observation (a world with a capacity
    schedule, issue 39). ``worlds``: episode j after a seeded reset is played in world
    ``worlds[j % len(worlds)]`` (its own generator and decision model), so μ is not fitted
    to one world's pool (the benchmark's training recipe); None: the scenario's world.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: ScenarioConfig | str | Path = "paper",
        *,
        alpha: float = 1.0,
        tau: float = 1.0,
        recommender: str | Recommender = "exact-linear",
        log_floor: float = 1e-3,
        max_margin: float = 0.3,
        capacity_obs: bool = False,
        worlds: Sequence[int] | None = None,
        **overrides: Any,
    ) -> None:

        require_number("alpha", alpha, 0.0, 1e6)
        require_number("tau", tau, 0.0, 1e6)
        require_number("log_floor", log_floor, 0.0, 1.0, low_open=True)
        require_number("max_margin", max_margin, 0.0, 1.0, low_open=True)
        self.max_margin = float(max_margin)
        config = resolve_scenario(scenario)
        self.config = config.replace(**overrides) if overrides else config
        self.worlds = world_seeds(worlds)
        # the scenario every world is drawn from, and the episodes since the seeded reset
        # (the turn of the worlds; kept in a training checkpoint, get_state)
        self._base, self.episodes = self.config, 0
        self.alpha, self.tau, self.log_floor = float(alpha), float(tau), float(log_floor)
        self.recommender_spec = recommender
        z, T = self.config.n_features, self.config.validity
        c = self.config
        self.capacity_obs = bool(capacity_obs)
        # every entry is >= 0; counts / k cannot exceed everyone who ever entered / k, and
        # k_t / k, m_t / m cannot exceed the largest k and m a scenario may have
        cap = max(1.0, (c.n_initial + c.m * c.ticks) / c.k)
        if self.capacity_obs:
            cap = max(cap, K_MAX / c.k, M_MAX / max(c.m, 1))
        size = observation_size(z, T, self.capacity_obs)
        self.observation_space = gym.spaces.Box(0.0, cap, (size,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.model: RecourseModel | None = None
        self._goal = ChosenGoal()
        self._obs: RecourseObs | None = None  # the pending decision's observation
        # its threshold (None: no decision pending, the episode is over)
        self._threshold: float | None = None
        self._last_obs = np.zeros(self.observation_space.shape, np.float32)

    def _advance(self) -> list[dict]:
        """Run to the next goal decision (or the episode's end); the tick rows completed."""
        model, rows = self.model, []
        while model.running:
            obs = model.decide()
            if obs.n_rejected:
                self._seen(obs)
                return rows
            model.respond(None)  # nobody to advise: no decision to take
            rows.append(ratios_row(model))
        self._seen(None)
        return rows

    def _encode(self, obs: RecourseObs) -> np.ndarray:
        c = self.config
        return encode_window(
            obs,
            self.model.world.decision_model,
            c.k,
            c.ticks,
            c.validity,
            c.m if self.capacity_obs else None,
        )

    # gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        info = self._start(seed)
        return self._started(self._advance()), info

    def step(self, action: np.ndarray):
        goal, model = self._goal_of(action), self.model
        model.respond(model.policy.recommend(self._obs, model.streams.policy))
        rows = self._pending + [ratios_row(model)] + self._advance()
        return self._finish(goal, rows)

    def get_state(self) -> dict[str, Any]:
        """What a training checkpoint keeps of the environment (JSON-safe): the worlds'
        turn, so a resumed run goes on to the next world (lab.training's checkpoints)."""
        return {"episodes": self.episodes}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state` (after the reset that starts a resumed training run)."""
        self.episodes = int(state["episodes"])

    # the parts of reset() and step() around the model's ticks (PopulationVectorEnv runs
    # those ticks for many environments at once)
    def _start(self, seed: int | None) -> dict[str, Any]:
        """A new episode's model, built and not yet started; the reset's info."""
        info = self._next_episode(seed)
        self._build(info["seed"])
        return info

    def _next_episode(self, seed: int | None) -> dict[str, Any]:
        """The next episode's world and seed (the reset's info), its model not yet built."""
        super().reset(seed=seed)
        if seed is not None:
            self.episodes = 0
        if self.worlds is not None:
            world = self.worlds[self.episodes % len(self.worlds)]
            self.config = self._base.replace(world_seed=world)
        self.episodes += 1
        return {"seed": int(self.np_random.integers(0, 2**31 - 1))}

    def _build(self, episode_seed: int, streams: Streams | None = None) -> None:
        """The episode's model (``streams``: its streams made already)."""
        policy = CompositePolicy(self._goal, _make_recommender(self.recommender_spec))
        self.model = RecourseModel(
            self.config,
            policy,
            seed=episode_seed,
            agents=False,
            record_events=False,
            streams=streams,
        )
        # a step reads RR and RF of each tick; the rest of the record is made if read
        self.model._batch.defer_record = True

    def _started(self, rows: list[dict]) -> np.ndarray:
        """The first observation, once the model reached its first goal decision."""
        if self._threshold is None:
            raise RuntimeError("the episode ended before any goal decision (nobody was rejected)")
        self._pending = rows  # ticks before the first decision (none with m > k)
        return self._last_obs.copy()

    def _goal_of(self, action: np.ndarray) -> float:
        """The goal of ``action`` at the pending decision (set for the policy to read)."""
        if self._threshold is None:
            raise RuntimeError("call reset() before step()")
        goal = float(goal_from_action(action, self._threshold, self.max_margin)[0])
        self._goal.goal = goal
        return goal

    def _seen(self, obs: RecourseObs | None) -> None:
        """The pending decision's observation (None: the episode is over)."""
        self._obs = obs
        self._threshold = None if obs is None else obs.threshold
        if obs is not None:
            self._last_obs = self._encode(obs)

    def _finish(self, goal: float, rows: list[dict]):
        """step()'s return from the tick rows it completed."""
        self._pending = []
        self._last_rows = rows  # the tick records this step completed
        reward, info = self._figures(goal, rows)
        return self._last_obs.copy(), reward, self._threshold is None, False, info

    def _figures(self, goal: float, rows: list[dict]) -> tuple[float, dict[str, Any]]:
        """A step's reward (eq. 16 summed over the tick rows it completed) and info."""
        reward = sum(
            reward_eq16(r["rr"], r["rf"], self.alpha, self.tau, self.log_floor) for r in rows
        )
        info: dict[str, Any] = {"goal": goal, "ticks": len(rows)}
        for key in ("rr", "rf"):  # undefined (NaN) ratios are left out
            # the usual step completes one tick: the mean of one value is that value
            v = float(rows[0][key]) if len(rows) == 1 else nanmean([r[key] for r in rows])
            if v == v:
                info[key] = v
        return float(reward), info


class _Stepped:
    """One step of a vector env as arrays (N,) over its N environments: each environment's
    goal, ticks completed, eq. 2 and eq. 3 (NaN: undefined, left out of its info),
    reward, whether its episode ended; ``finals`` the last observation of each episode
    that ended and ``starts`` the reset info of the episode that followed it."""

    __slots__ = ("goals", "ticks", "rr", "rf", "rewards", "terminated", "finals", "starts")

    def __init__(self, goals, ticks, rr, rf, rewards, terminated, finals, starts) -> None:
        self.goals, self.ticks, self.rr, self.rf = goals, ticks, rr, rf
        self.rewards, self.terminated, self.finals, self.starts = (
            rewards,
            terminated,
            finals,
            starts,
        )

    def info(self, i: int) -> dict[str, Any]:
        """Environment ``i``'s info, as its :meth:`PopulationEnv._figures` has it."""
        info: dict[str, Any] = {"goal": self.goals[i].item(), "ticks": self.ticks[i].item()}
        for key in ("rr", "rf"):
            v = getattr(self, key)[i].item()
            if v == v:
                info[key] = v
        return info

    def infos(self, live: np.ndarray) -> dict[str, np.ndarray]:
        """The infos of the environments where ``live`` (N,) holds, in a vector env's
        form (gymnasium's ``VectorEnv._add_info``: a key's values, zero where it is
        absent, beside the mask ``_key`` of where it is present)."""
        out: dict[str, np.ndarray] = {}
        if not live.any():
            return out
        for key, values in (("goal", self.goals), ("ticks", self.ticks)):
            out[key], out[f"_{key}"] = np.where(live, values, 0), live.copy()
        for key, values in (("rr", self.rr), ("rf", self.rf)):
            mask = live & (values == values)
            if mask.any():
                out[key], out[f"_{key}"] = np.where(mask, values, 0.0), mask
        return out


class PopulationVectorEnv(gym.vector.VectorEnv):
    """``n_envs`` :class:`PopulationEnv` episodes whose ticks run as one batch
    (:class:`abm.batch.Batch`): one env step of all of them is one batched tick.

    Sub-environment i is a :class:`PopulationEnv` with the same arguments, reset with
    ``seed + i``; observations, rewards, terminations and infos are bit for bit those of
    gymnasium's ``SyncVectorEnv`` over such environments with same-step autoreset: a
    finished episode's last observation and info are in ``infos["final_obs"]`` and
    ``infos["final_info"]``, and the observation returned is the next episode's first.
    An episode that must finish a tick nobody was rejected at (no goal to choose) leaves
    for a batch of its own (:meth:`abm.batch.Batch.part`) and goes on there; episodes
    started at one step share a batch. :meth:`step_lists` gives one step as per-env lists
    (what SB3's ``VecEnv`` adapter, :class:`lab.training.BatchedVecEnv`, reads).
    """

    metadata = {"render_modes": [], "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(
        self, scenario: ScenarioConfig | str | Path = "paper", n_envs: int = 1, **kwargs: Any
    ) -> None:
        require_int("n_envs", n_envs, 1, 4096)
        self.envs = [PopulationEnv(scenario, **kwargs) for _ in range(n_envs)]
        self.num_envs = n_envs
        first = self.envs[0]
        self.config = first.config
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = gym.vector.utils.batch_space(first.observation_space, n_envs)
        self.action_space = gym.vector.utils.batch_space(first.action_space, n_envs)
        self._grouped: list[tuple[Batch, list[int]]] | None = None  # _groups()' answer
        # every environment's pending decision, held here for all at once (the
        # sub-environments' own fields are not kept): its encoded observation (N, size),
        # its threshold (N,) and whether one is pending (N,) (False: the episode is over;
        # its observation is then the last)
        self._obs_now = np.zeros((n_envs,) + first.observation_space.shape, np.float32)
        self._th_now = np.zeros(n_envs)
        self._live = np.zeros(n_envs, dtype=np.bool_)
        self._carried: set[int] = set()  # environments with ticks before their first decision

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, int | np.integer):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed: {len(seeds)} seeds for {self.num_envs} environments")
        obs, infos = self.reset_lists(seeds)
        out: dict[str, Any] = {}
        for i, info in enumerate(infos):
            out = self._add_info(out, info, i)
        return self._stack(obs), out

    def reset_lists(self, seeds: list[int | None]) -> tuple[list[np.ndarray], list[dict]]:
        """Every environment reset (its own seed, None: its stream goes on): per-env lists
        of first observations and reset infos."""
        infos = self._start_all(range(self.num_envs), seeds)
        self._carried.clear()
        rows = self._advance(range(self.num_envs), fresh=True)
        return [self._started(i, rows.get(i, [])) for i in range(self.num_envs)], infos

    def _started(self, i: int, rows: list[dict]) -> np.ndarray:
        """Environment ``i``'s first observation (:meth:`PopulationEnv._started`)."""
        if not self._live[i]:
            raise RuntimeError("the episode ended before any goal decision (nobody was rejected)")
        self.envs[i]._pending = rows  # ticks before the first decision (none with m > k)
        if rows:
            self._carried.add(i)
        return self._obs_now[i].copy()

    def step(self, actions: np.ndarray):
        with collector.paused():  # a step's objects die young (abm.collector)
            s = self._step(actions)
        n = self.num_envs
        ended = np.zeros(n, dtype=np.bool_)
        ended[list(s.finals)] = True
        # every environment's info at once (what _add_info makes of them one by one);
        # those that ended add their final observation and info, and their reset's info
        out: dict[str, Any] = s.infos(~ended)
        for i in s.finals:
            out = self._add_info(out, {"final_obs": s.finals[i], "final_info": s.info(i)}, i)
            out = self._add_info(out, s.starts[i], i)
        return (
            self._obs_now.astype(self.single_observation_space.dtype),
            s.rewards,
            s.terminated,
            np.zeros(n, dtype=np.bool_),
            out,
        )

    def step_lists(self, actions: np.ndarray):
        """One step of every environment as per-env lists: (observations, rewards,
        terminated, truncated, infos, finals), ``finals[i]`` = (last observation, last
        info) of each environment whose episode ended (its observation and info are then
        the next episode's first)."""
        with collector.paused():  # a step's objects die young (abm.collector)
            s = self._step(actions)
        n = self.num_envs
        infos = [s.starts[i] if i in s.starts else s.info(i) for i in range(n)]
        finals = {i: (obs, s.info(i)) for i, obs in s.finals.items()}
        obs = list(self._obs_now.copy())  # each (size,), a view of this step's copy
        return obs, s.rewards.tolist(), s.terminated.tolist(), [False] * n, infos, finals

    def _step(self, actions: np.ndarray) -> _Stepped:
        # as given: each environment reads its action as PopulationEnv.step does
        actions = np.asarray(actions).reshape(self.num_envs, -1)
        envs, n = self.envs, self.num_envs
        goals = self._goals_of(actions)
        chosen = np.array(goals)
        rr, rf = np.empty(n), np.empty(n)
        for batch, mine in self._groups():
            policy = batch.models[0].policy
            if rows_ready(policy):  # the recommender answers every episode's rows at once
                policy.goal.goals = chosen[mine]
                batch.respond(batch.advise(policy))
            else:  # each episode's policy answers its own observation, at its own goal
                for i in mine:
                    envs[i]._goal.goal = goals[i]
                batch.respond(batch.advise())
            block = batch.last_block
            if block is not None:  # every episode's row in one block: read by column
                rr[mine], rf[mine] = block.column("rr"), block.column("rf")
            else:
                for i in mine:
                    row = envs[i].model.last_row
                    rr[i], rf[i] = row["rr"], row["rf"]
        first = envs[0]
        # eq. 16 of the tick each step completed, elementwise (each value's own bits)
        rewards = reward_eq16(rr, rf, first.alpha, first.tau, first.log_floor)
        ticks = np.ones(n, dtype=np.int64)
        more = self._advance(range(n))
        # a step that completed more than its tick (a reset's ticks before the first
        # decision, ticks nobody was rejected at): its figures over all of them
        for i in sorted(self._carried.union(more)):
            env = envs[i]
            # eq. 16 reads a row's ratios alone (the model's last row is now a later tick's)
            rows = env._pending + [{"rr": rr[i], "rf": rf[i]}] + more.get(i, [])
            env._pending = []
            rewards[i], info = env._figures(goals[i], rows)
            ticks[i] = len(rows)
            rr[i], rf[i] = info.get("rr", np.nan), info.get("rf", np.nan)
        self._carried.clear()
        terminated = ~self._live
        ended = terminated.nonzero()[0].tolist()
        finals = {i: self._obs_now[i].copy() for i in ended}
        starts = {}
        if ended:  # the next episodes, started together
            starts = dict(zip(ended, self._start_all(ended, [None] * len(ended)), strict=True))
            started = self._advance(ended, fresh=True)
            for i in ended:
                self._started(i, started.get(i, []))
        return _Stepped(
            goals=np.array(goals),
            ticks=ticks,
            rr=rr,
            rf=rf,
            rewards=rewards,
            terminated=terminated,
            finals=finals,
            starts=starts,
        )

    def _start_all(self, idx, seeds: list[int | None]) -> list[dict[str, Any]]:
        """:meth:`PopulationEnv._start` of environments ``idx`` with ``seeds``, their
        episodes' streams seeded in one pass (:meth:`abm.rng.Streams.many`); the infos."""
        envs = [self.envs[i] for i in idx]
        infos = [env._next_episode(s) for env, s in zip(envs, seeds, strict=True)]
        streams = Streams.many([info["seed"] for info in infos])
        for env, info, st in zip(envs, infos, streams, strict=True):
            env._build(info["seed"], st)
        return infos

    def _goals_of(self, actions: np.ndarray) -> list[float]:
        """Each environment's :meth:`PopulationEnv._goal_of` its action row, at once
        (elementwise, so each goal has its own bits); set where a policy reads it."""
        envs = self.envs
        if not self._live.all():
            raise RuntimeError("call reset() before step()")
        return goal_from_action(actions[:, 0], self._th_now, envs[0].max_margin).tolist()

    def _groups(self) -> list[tuple[Batch, list[int]]]:
        """:meth:`_grouping` of every environment, kept until an episode starts or leaves
        a batch."""
        if self._grouped is None:
            self._grouped = self._grouping(range(self.num_envs))
        return self._grouped

    def _grouping(self, idx) -> list[tuple[Batch, list[int]]]:
        """The batches the models of environments ``idx`` are in, each with those
        environments' indices in the batch's order."""
        envs = self.envs
        at = {id(envs[i].model): i for i in idx}
        batches = {id(envs[i].model._batch): envs[i].model._batch for i in idx}.values()
        return [(b, [at[id(m)] for m in b.models]) for b in batches]

    def _advance(self, idx, fresh: bool = False) -> dict[int, list[dict]]:
        """Run environments ``idx`` (nothing pending; ``fresh``: new models, put in one
        batch) to their next goal decision or their episode's end; the tick rows each
        completed on the way (only those that completed some)."""
        envs = self.envs
        idx = list(idx)
        if fresh:
            # the env reads RR and RF of each tick; the rest of its record is made if read
            Batch.of([envs[i].model for i in idx]).defer_record = True
            self._grouped = None
        todo = list(self._groups()) if len(idx) == len(envs) else self._grouping(idx)
        rows: dict[int, list[dict]] = {}
        while todo:
            batch, mine = todo.pop()
            over = np.array([not m.running for m in batch.models])
            if over.any():
                self._grouped = None
                gone = batch if over.all() else batch.part(over)
                self._live[np.array(mine)[over]] = False  # each one's last observation stays
                if gone is batch:
                    continue
                mine = [i for i, o in zip(mine, over.tolist(), strict=True) if not o]
            batch.decide(lazy=True)  # what the goal selector sees is encoded below, at once
            decided = batch.decided()
            encoded = self._encode(batch, decided)
            idle = decided.n_rejected == 0
            # a decision pending at each threshold, encoded (its observation is built only
            # if the policy asks for it: model.pending_observation())
            wait = ~idle
            at = np.array(mine)[wait]
            self._obs_now[at] = encoded[wait]
            self._th_now[at] = decided.thresholds[wait]
            self._live[at] = True
            if idle.any():  # nobody to advise: those finish the tick now, in a batch of their own
                self._grouped = None
                sub = batch if idle.all() else batch.part(idle)
                sub.respond([None] * sub.B)
                ours = [i for i, x in zip(mine, idle.tolist(), strict=True) if x]
                for i, m in zip(ours, sub.models, strict=True):
                    rows.setdefault(i, []).append(ratios_row(m))
                todo.append((sub, ours))
        return rows

    def _encode(self, batch: Batch, decided) -> np.ndarray:
        """Every episode's encoded observation (B, size), from the batch's flat rows at
        once: row b is what its PopulationEnv encodes."""
        env = self.envs[0]
        c = env.config
        window, counts = batch.pool.windows(_WINDOW)
        X = window.X_obs
        scored = np.zeros(0)
        if X.shape[0]:  # the window under each episode's world model, as encode_window does
            episode = segments.episode_of(counts)
            if batch.episodes.fixed:  # the models in force are the worlds' (weights kept)
                scored = batch.episodes.score_of(X, episode)
            else:
                scorers = [m.world.decision_model for m in batch.models]
                scored = score_rows(scorers, X, episode)
        capacity = {}
        if env.capacity_obs:  # the places and entrants in force, as an observation has them
            t = batch.models[0].tick
            capacity = {
                "m": c.m,
                "k_t": np.array([m.decision_maker.k_t for m in batch.models]),
                "m_t": np.array([m.mechanisms.capacity_at(t)[1] for m in batch.models]),
            }
        return encode_batch(
            batch.models[0].tick,
            decided.thresholds,
            decided.applicants.X_obs,
            decided.scores,
            decided.sizes,
            window.data,
            scored,
            counts,
            c.k,
            c.ticks,
            c.validity,
            **capacity,
        )

    def _stack(self, obs: list[np.ndarray]) -> np.ndarray:
        return np.stack(obs).astype(self.single_observation_space.dtype, copy=False)


def _make_recommender(spec: str | Recommender) -> Recommender:
    if not isinstance(spec, str):
        return spec
    return REGISTRY.make("recommender", spec)


# -- a goal selector for a reliability target (issue 51) ---------------------------------


class ReliableGoalEnv(PopulationEnv):
    """μ trained to maximise RF subject to RR ≥ ``target``: a Lagrangian relaxation.

    The constrained problem max E[RF] s.t. E[RR] ≥ ρ becomes the saddle point of
    L(π, λ) = E[RF] + λ (E[RR] − ρ), λ ≥ 0 (Altman 1999, ch. 3; its RL form with a
    multiplier updated on a slower time scale: Tessler, Mankowitz & Mannor 2019, RCPO).
    Per tick, the reward is the Lagrangian normalised by 1 + λ (Stooke, Achiam & Abbeel
    2020, §4), so it stays in [-1, 1] whatever λ and whatever RR::

        r_t = (RF_t + λ (RR_t − ρ) 1[RR_t defined]) / (1 + λ)                  (L1)

    A tick whose RF is undefined gives 0. The constraint counts exactly the ticks the
    outcome card's RR averages (those where RR is defined): Σ_defined (RR_t − ρ) ≥ 0 is
    RR̄ ≥ ρ. Unlike eq. 16, a tick where nobody carried out their advice (RF defined, RR
    not) is not counted as RR = 0: with hard advice such ticks are common (in the recession
    a third of the ticks at margin 0.3), and counting them as 0 made the highest margins
    look the least reliable, the opposite of what the card measures. After each episode
    the multiplier takes a projected gradient step on the episode's shortfall, with RR̄
    the episode's RR as the card reads it (the mean over defined ticks)::

        λ ← min(max(λ + η (ρ − RR̄), 0), λ_max)                               (L2)

    With a ``judge`` (the trainer sets it to the actor's mean action, the policy that will
    be deployed), RR̄ is that policy's RR in one evaluation episode played after each
    training episode (a new population, the worlds in turn, its own seed stream), not the
    exploring policy's: measured on the exploring policy, λ kept rising until the
    exploring policy met ρ, and the deployed one overshot it (RR 0.98-0.99 for ρ = 0.95).

    Because (L1) depends on λ, a replay buffer's stored rewards go stale as λ moves; SAC
    is trained on rewards relabelled with the current λ at sampling time from the parts
    each step returns in ``info["lagrangian"]`` = (Σ RF_t, Σ_defined (RR_t − ρ)) (see
    :class:`lab.training.RelabelledReplayBuffer`).

    ``worlds``: episode j is played in world ``worlds[j % len(worlds)]`` (its own
    generator and decision model), so μ is not fitted to one world's pool.
    """

    def __init__(
        self,
        scenario: ScenarioConfig | str | Path = "paper",
        *,
        target: float = 0.95,
        worlds: tuple[int, ...] = (0,),
        multiplier: float = 1.0,
        multiplier_lr: float = 5.0,
        multiplier_max: float = 100.0,
        recommender: str | Recommender = "exact-linear",
        max_margin: float = 0.3,
        capacity_obs: bool = False,
        **overrides: Any,
    ) -> None:
        require_number("target", target, 0.0, 1.0, low_open=True, high_open=True)
        require_number("multiplier_max", multiplier_max, 0.0, 1e6, low_open=True)
        require_number("multiplier", multiplier, 0.0, multiplier_max)
        require_number("multiplier_lr", multiplier_lr, 0.0, 1e6)
        super().__init__(
            scenario,
            recommender=recommender,
            max_margin=max_margin,
            capacity_obs=capacity_obs,
            worlds=worlds,
            **overrides,
        )
        self.target = float(target)
        self.multiplier = float(multiplier)
        self.multiplier_lr, self.multiplier_max = float(multiplier_lr), float(multiplier_max)
        self._episode_rr: list[float] = []
        self.judge: Any = None  # obs -> action of the deployed policy; set by the trainer
        self._judge_env: ReliableGoalEnv | None = None
        self._judge_seed = 10_007

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._judge_env = None
            self._judge_seed = int(seed) + 10_007  # as lab.training.SyncedEval's
        self._episode_rr = []
        obs, info = super().reset(seed=seed, options=options)  # the worlds' turn, too
        return obs, {**info, "world_seed": self.config.world_seed}

    def step(self, action: np.ndarray):
        obs, _, done, truncated, info = super().step(action)
        rf_sum = rr_excess = 0.0
        for r in self._last_rows:
            if r["rf"] != r["rf"]:  # RF undefined: nothing was measured
                continue
            rf_sum += r["rf"]
            if r["rr"] == r["rr"]:  # the ticks the card's RR averages
                rr_excess += r["rr"] - self.target
                self._episode_rr.append(r["rr"])
        reward = float(self.lagrangian(rf_sum, rr_excess))
        info["lagrangian"] = (rf_sum, rr_excess)
        info["multiplier"] = self.multiplier
        if done:
            rr_bar = float(np.mean(self._episode_rr)) if self._episode_rr else 0.0
            info["episode_rr"] = rr_bar
            if self.judge is not None:
                rr_bar = info["judged_rr"] = self.judged_rr()
            step = self.multiplier + self.multiplier_lr * (self.target - rr_bar)  # (L2)
            self.multiplier = float(min(max(step, 0.0), self.multiplier_max))
        return obs, reward, done, truncated, info

    def judged_rr(self) -> float:
        """RR̄ of one episode played by ``judge`` in the evaluation env (its own worlds'
        turn and seed stream, kept across calls and checkpoints)."""
        env = self._judging_env()
        obs, _ = env.reset(seed=self._judge_seed if env.episodes == 0 else None)
        done = False
        while not done:
            obs, _, done, _, info = env.step(self.judge(obs))
        return float(info["episode_rr"])

    def _judging_env(self) -> ReliableGoalEnv:
        if self._judge_env is None:
            self._judge_env = ReliableGoalEnv(
                self._base,
                target=self.target,
                worlds=self.worlds,
                recommender=self.recommender_spec,
                max_margin=self.max_margin,
                capacity_obs=self.capacity_obs,
            )
        return self._judge_env

    def lagrangian(self, rf_sum, rr_excess, multiplier: float | None = None):
        """(L1) summed over a step's ticks from Σ RF_t and Σ_defined (RR_t − ρ), with
        λ = ``multiplier`` (default: the one in force); scalars or arrays (the replay
        buffer relabels a batch with it)."""
        lam = self.multiplier if multiplier is None else multiplier
        return (rf_sum + lam * rr_excess) / (1.0 + lam)

    def get_state(self) -> dict[str, Any]:
        """What a training checkpoint must keep besides the SB3 model (JSON-safe)."""
        state = {
            **super().get_state(),
            "multiplier": self.multiplier,
            "rng": self.np_random.bit_generator.state,
            "judge_seed": self._judge_seed,
        }
        if self._judge_env is not None:
            judge = self._judge_env
            state["judge"] = {
                "episodes": judge.episodes,
                "rng": judge.np_random.bit_generator.state,
            }
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state` (after the reset that starts a resumed training run)."""
        self.np_random.bit_generator.state = state["rng"]
        super().set_state(state)
        self.multiplier = float(state["multiplier"])
        self._judge_seed = int(state.get("judge_seed", self._judge_seed))
        if "judge" in state:
            judge = self._judging_env()
            judge.reset(seed=self._judge_seed)  # then the saved stream and turn
            judge.np_random.bit_generator.state = state["judge"]["rng"]
            judge.episodes = int(state["judge"]["episodes"])
