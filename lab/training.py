"""SAC training of the recommender φ and the predictor μ, with checkpoints and resume.

The loop is stable-baselines3's own: the environment is wrapped in SB3's ``Monitor`` (episode
boundaries and lengths), and ``learn`` runs a ``CallbackList`` of SB3 callbacks and small
:class:`~stable_baselines3.common.callbacks.BaseCallback` subclasses: the learning curve and
progress (:class:`LearningCurve`), ``StopTrainingOnMaxEpisodes`` (φ's episode budget),
:class:`CodeFreeCheckpoint` (SB3's ``CheckpointCallback`` saves pickled zips; this one does
not) and, with ``eval_every > 0``, ``EvalCallback`` on a separate environment
(:class:`SyncedEval`, deterministic actions, ``evaluations.npz``).

An output directory holds, while training, ``checkpoints/`` and ``learning_curve.csv``
(one row per finished episode, appended as it goes); at the end ``actor.safetensors`` and
``manifest.json`` (see :mod:`policies.rl.artefacts`). Nothing written here is a pickle: a
checkpoint ``step_N`` is ``step_N.pt`` (policy, optimiser states and the entropy
coefficient as torch tensors, read back with ``torch.load(weights_only=True)``),
``step_N_buffer.npz`` (the replay buffer's arrays, read with ``allow_pickle=False``) and
``step_N.json`` (step and episode counts, clocks, the environment's learning state, the
manifest it belongs to; written last, so a checkpoint counts only once it exists). The
latest two are kept.

Resume (``resume=True``) restarts from the latest checkpoint: weights, optimiser states,
entropy coefficient, replay buffer, step, update and episode counts and the environment's
learning state (episode count, d̂, its random generator). It is not bit-identical to an
uninterrupted run: the episode in progress at the checkpoint is restarted, the buffer of
``step_N`` holds N - 1 transitions (SB3 stores a step's transition after the callbacks
ran), and the torch / numpy generators SB3 samples minibatches and actions from are
reseeded from (seed, checkpoint step), so resuming the same checkpoint twice gives the
same result.
"""

from __future__ import annotations

import csv
import json
import pickle
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from abm.validation import optional_import

# a missing extra is a one-line error naming it, not a traceback
for _module in ("torch", "stable_baselines3", "gymnasium", "safetensors"):
    optional_import(_module, "rl", "RL training")

import torch  # noqa: E402
from stable_baselines3 import SAC  # noqa: E402
from stable_baselines3.common.buffers import ReplayBuffer  # noqa: E402
from stable_baselines3.common.callbacks import (  # noqa: E402
    BaseCallback,
    CallbackList,
    EvalCallback,
    StopTrainingOnMaxEpisodes,
)
from stable_baselines3.common.logger import Logger  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor  # noqa: E402

from abm.validation import ConfigError, one_line  # noqa: E402
from policies.rl.artefacts import save_actor, write_manifest  # noqa: E402
from policies.rl.encoding import (  # noqa: E402
    CAPACITY_OBSERVATION,
    CONSTRAINED_OBJECTIVE,
    RECOMMENDER_ACTIONS,
    RECOMMENDER_OBSERVATION,
)

Progress = Callable[[int, int], None]


class _Params(BaseModel):
    """Frozen, no unknown fields; :meth:`make` reports a bad value as one :class:`ConfigError` line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def make(cls, prefix: str = "", **values: Any):
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(one_line(exc, prefix, list(cls.model_fields))) from None

    def replace(self, **changes: Any):
        """A validated copy with ``changes``."""
        return self.make(**{**self.model_dump(), **changes})


class SACParams(_Params):
    """SAC hyper-parameters (stable-baselines3 names); ``net`` is the hidden layer sizes."""

    net: Annotated[
        tuple[Annotated[int, Field(ge=1, le=4096)], ...], Field(min_length=1, max_length=8)
    ] = (64, 64)
    learning_rate: float = Field(3e-4, gt=0, le=1)
    batch_size: int = Field(128, ge=1, le=65_536)
    buffer_size: int = Field(100_000, ge=1, le=10**8)
    learning_starts: int = Field(500, ge=0, le=10**9)
    gamma: float = Field(0.99, ge=0, le=1)
    tau: float = Field(0.005, gt=0, le=1)
    train_freq: int = Field(1, ge=1, le=10**6)
    gradient_steps: int = Field(1, ge=1, le=10**6)
    ent_coef: Literal["auto"] | Annotated[float, Field(gt=0, le=1e3)] = "auto"

    def sb3_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``stable_baselines3.SAC``."""
        kw = self.model_dump(exclude={"net"})
        return {**kw, "policy_kwargs": {"net_arch": list(self.net)}}


class _Common(_Params):
    seed: int = Field(0, ge=0, le=2**32 - 1)
    checkpoint_every: int = Field(10_000, ge=1, le=10**9)
    eval_every: int = Field(0, ge=0, le=10**9)  # steps between evaluations; 0: none
    eval_episodes: int = Field(20, ge=1, le=10_000)


class RecommenderTraining(_Common):
    """φ's training settings besides SAC's (App. D; ``reward_scale`` None: per action mapping)."""

    warmup_episodes: int = Field(0, ge=0, le=10**9)
    episodes: int = Field(20_000, ge=1, le=10**9)
    max_step: float = Field(0.5, gt=0, le=1)
    action: Literal[RECOMMENDER_ACTIONS] = "direction"  # type: ignore[valid-type]
    reward_scale: float | None = Field(None, gt=0, le=1e9)
    # the worlds episodes rotate over (lab.envs.RecommenderEnv); empty: the scenario's own
    worlds: tuple[Annotated[int, Field(ge=0, le=2**32 - 1)], ...] = ()


class PredictorTraining(_Common):
    """μ's training settings besides SAC's (eq. 16 weights, budget, goal mapping)."""

    alpha: float = Field(ge=0, le=1e6)
    tau: float = Field(ge=0, le=1e6)
    steps: int = Field(7000, ge=1, le=10**9)
    checkpoint_every: int = Field(1000, ge=1, le=10**9)
    log_floor: float = Field(1e-3, gt=0, le=1)
    max_margin: float = Field(0.3, gt=0, le=1)
    eval_episodes: int = Field(3, ge=1, le=10_000)  # 100-tick episodes
    # episodes stepped together as one batch (lab.envs.PopulationVectorEnv); a step of
    # SAC's collects one transition from each
    n_envs: int = Field(1, ge=1, le=4096)
    # the worlds episodes rotate over (lab.envs.PopulationEnv); empty: the scenario's own
    worlds: tuple[Annotated[int, Field(ge=0, le=2**32 - 1)], ...] = ()


# φ: a step's reward is the outcome of that one attempt (the next step is a new attempt
# from wherever the candidate got), so a short horizon is enough; gamma = 0 makes the
# critic a one-step (contextual-bandit) value, simpler to fit than with gamma 0.9. With
# the default "direction" mapping, train without warm-up (docs/rl.md).
RECOMMENDER_SAC = SACParams(gamma=0.0, learning_rate=1e-3, learning_starts=300)
RECOMMENDER_MAX_STEP = 0.5
# eq. 15 is divided by this before SAC sees it (None: per action mapping). Direct: ψ = 300
# times errors ~0.3 gives ~-100, /30 gives O(1). Direction: the error is ~0 by
# construction, so eq. 15 is -φ ĉ, already O(1).
RECOMMENDER_REWARD_SCALES = {"direct": 30.0, "direction": 1.0}
# A goal acts on the next tick (T = 1) or the next few: gamma 0.9 (a ~10-tick horizon)
# assigns that credit within the paper's 7,000 steps; with 0.99, alpha:tau = 10:1 still sat
# at RR 0.65 after 7,000 steps, with 0.9 it reached RR 0.93 (the fixed-margin front's end).
PREDICTOR_SAC = SACParams(gamma=0.9, learning_starts=200)
_ACTIONS = {
    "direct": "x_cf = clip(x + max_step a, 0, 1), immutable features kept; a in [-1, 1]^z",
    "direction": "u = (a + 1) / 2 on mutable features, x_cf = clip(x + t u, 0, 1) with the "
    "smallest t such that M(x_cf) >= g (bisection on M.score)",
}


def train_recommender(
    out: str | Path,
    scenario: str = "paper",
    *,
    seed: int = 0,
    warmup_episodes: int = 0,
    episodes: int = 20_000,
    sac: SACParams = RECOMMENDER_SAC,
    checkpoint_every: int = 10_000,
    max_step: float = RECOMMENDER_MAX_STEP,
    action: str = "direction",
    reward_scale: float | None = None,
    eval_every: int = 0,
    eval_episodes: int = 20,
    resume: bool = False,
    progress: Progress | None = None,
    env_params: dict[str, Any] | None = None,
    worlds: Sequence[int] = (),
    **overrides: Any,
) -> dict[str, Any]:
    """Train φ in :class:`lab.envs.RecommenderEnv`: ``warmup_episodes`` on error only, then
    ``episodes`` with cost (App. D). Returns the manifest. ``progress(done, total)``
    reports finished episodes. ``max_step``, ``action`` (``direct``, the paper's, or
    ``direction``) and ``reward_scale`` are :class:`lab.envs.RecommenderEnv`'s; the
    manifest records them (and the observation layout) for :class:`LearnedRecommender`.
    ``worlds``: episodes rotate over these world seeds (the manifest lists them, so φ
    serves any world of the scenario); empty: the scenario's world alone.
    The learning curve's ``reward`` is eq. 15 itself, not the scaled reward SAC sees.
    Bad settings raise :class:`abm.validation.ConfigError` before anything is built."""
    from lab.envs import RecommenderEnv

    p = RecommenderTraining.make(
        seed=seed,
        warmup_episodes=warmup_episodes,
        episodes=episodes,
        checkpoint_every=checkpoint_every,
        max_step=max_step,
        action=action,
        reward_scale=reward_scale,
        eval_every=eval_every,
        eval_episodes=eval_episodes,
        worlds=tuple(worlds),
    )
    sac = _sac(sac)
    scale = p.reward_scale or RECOMMENDER_REWARD_SCALES[p.action]
    env_kw = {
        "max_step": p.max_step,
        "action": p.action,
        "reward_scale": scale,
        **({"worlds": p.worlds} if p.worlds else {}),
        **(env_params or {}),
        **overrides,
    }
    env = RecommenderEnv(scenario, warmup_episodes=p.warmup_episodes, **env_kw)
    total_episodes = p.warmup_episodes + p.episodes
    manifest = {
        **_base_manifest(env, "recommender", p.seed),
        "observation": RECOMMENDER_OBSERVATION,
        "action_mode": env.action_mode,
        "max_step": env.max_step,
        "action": _ACTIONS[env.action_mode],
        "env": {
            "max_steps": env.max_steps,
            "epsilon": env.epsilon,
            "phi": env.phi,
            "psi": env.psi,
            "goal_max": env.goal_max,
            "warmup_episodes": p.warmup_episodes,
            "episodes": p.episodes,
            "reward_scale": env.reward_scale,
        },
        "sac": sac.model_dump(),
        # left out when not given: a manifest of one world reads as before
        **({"worlds": list(p.worlds)} if p.worlds else {}),
    }
    # evaluation with cost from the first episode; d̂ is copied in before each evaluation
    make_eval = (
        (lambda: RecommenderEnv(scenario, warmup_episodes=0, **env_kw)) if p.eval_every else None
    )
    return _train(
        out,
        env,
        manifest,
        sac,
        p,
        total_steps=total_episodes * env.max_steps,
        stop_episodes=total_episodes,
        resume=resume,
        progress=progress,
        make_eval=make_eval,
    )


def train_predictor(
    out: str | Path,
    scenario: str = "paper",
    *,
    alpha: float,
    tau: float,
    recommender: str = "exact-linear",
    seed: int = 0,
    steps: int = 7000,
    sac: SACParams = PREDICTOR_SAC,
    checkpoint_every: int = 1000,
    eval_every: int = 0,
    eval_episodes: int = 3,
    resume: bool = False,
    progress: Progress | None = None,
    log_floor: float = 1e-3,
    max_margin: float = 0.3,
    capacity_obs: bool = False,
    n_envs: int = 1,
    worlds: Sequence[int] = (),
    **overrides: Any,
) -> dict[str, Any]:
    """Train μ in :class:`lab.envs.PopulationEnv` with reward weights (alpha, tau) for
    ``steps`` ticks, the paper's recommender part fixed to ``recommender`` (a registry
    spec; ``rl:path=DIR`` for a learned φ); ``capacity_obs``: μ also observes k_t / k and
    m_t / m. ``n_envs`` > 1: that many episodes at once, their ticks one batch
    (:class:`lab.envs.PopulationVectorEnv`); ``steps`` counts every environment's.
    ``worlds``: episodes rotate over these world seeds (the manifest lists them, so the
    artefact serves any world of the scenario); empty: the scenario's world alone.
    Returns the manifest."""
    from lab.envs import PopulationEnv, PopulationVectorEnv, _make_recommender

    p = PredictorTraining.make(
        alpha=alpha,
        tau=tau,
        seed=seed,
        steps=steps,
        checkpoint_every=checkpoint_every,
        eval_every=eval_every,
        eval_episodes=eval_episodes,
        log_floor=log_floor,
        max_margin=max_margin,
        n_envs=n_envs,
        worlds=tuple(worlds),
    )
    if p.worlds and p.n_envs > 1:  # a batch's episodes share one world (abm.batch.Batch)
        raise ConfigError(
            f"worlds = {list(p.worlds)!r} is not allowed with n_envs = {p.n_envs}; "
            "allowed: worlds with n_envs = 1"
        )
    sac = _sac(sac)
    out = Path(out)
    rec = _make_recommender(recommender)  # unknown names fail before any training
    env_kw = {
        "alpha": p.alpha,
        "tau": p.tau,
        "recommender": recommender,
        "log_floor": p.log_floor,
        "max_margin": p.max_margin,
        "capacity_obs": capacity_obs,
        "worlds": p.worlds or None,
        **overrides,
    }
    vec = None
    if p.n_envs == 1:
        env = PopulationEnv(scenario, **env_kw)
    else:
        venv = PopulationVectorEnv(scenario, p.n_envs, **env_kw)
        env, vec = venv.envs[0], VecMonitor(BatchedVecEnv(venv))
    # n_envs = 1 is left out: manifests of one environment stay as they were
    many = {"n_envs": p.n_envs} if p.n_envs > 1 else {}
    if p.worlds:  # likewise left out when not given
        many["worlds"] = list(p.worlds)
    manifest = _predictor_manifest(
        env,
        p,
        sac,
        recommender,
        rec,
        out,
        capacity_obs,
        alpha=p.alpha,
        tau=p.tau,
        log_floor=p.log_floor,
        **many,
    )
    make_eval = (lambda: PopulationEnv(scenario, **env_kw)) if p.eval_every else None
    return _train(
        out,
        env,
        manifest,
        sac,
        p,
        total_steps=p.steps,
        stop_episodes=None,
        resume=resume,
        progress=progress,
        make_eval=make_eval,
        vec=vec,
    )


class ConstrainedTraining(_Common):
    """The constrained μ's settings besides SAC's: the RR target ρ, the worlds episodes
    rotate over, and the multiplier's start, step η and cap ((L1)-(L2), docs/rl.md)."""

    target: float = Field(0.95, gt=0, lt=1)
    worlds: tuple[Annotated[int, Field(ge=0, le=2**32 - 1)], ...] = Field(
        (0,), min_length=1, max_length=1000
    )
    steps: int = Field(14_000, ge=1, le=10**9)
    checkpoint_every: int = Field(1000, ge=1, le=10**9)
    multiplier: float = Field(1.0, ge=0, le=1e6)
    multiplier_lr: float = Field(5.0, ge=0, le=1e6)
    multiplier_max: float = Field(100.0, gt=0, le=1e6)
    max_margin: float = Field(0.3, gt=0, le=1)
    eval_episodes: int = Field(3, ge=1, le=10_000)


class RelabelledReplayBuffer(ReplayBuffer):
    """SAC's replay buffer for (L1): each transition keeps its Lagrangian parts
    (Σ RF_t, Σ_defined (RR_t − ρ)) beside the reward, and a sampled batch's rewards are
    recomputed by ``reward(rf, excess)`` (the env's :meth:`lab.envs.ReliableGoalEnv.lagrangian`,
    with the multiplier in force), so old transitions are not judged by an old λ. Sampling
    draws what SB3's own buffer draws (the same bits for the same λ)."""

    def __init__(
        self,
        *args: Any,
        reward: Callable[[np.ndarray, np.ndarray], np.ndarray],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if self.n_envs != 1:
            raise ValueError("RelabelledReplayBuffer serves one environment")
        self.reward = reward
        self.parts = np.zeros((self.buffer_size, 2), dtype=np.float64)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        self.parts[self.pos] = infos[0]["lagrangian"]
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds: np.ndarray, env=None):
        samples = super()._get_samples(batch_inds, env)
        parts = self.parts[batch_inds]
        rewards = np.asarray(self.reward(parts[:, 0], parts[:, 1]), dtype=np.float32)
        return samples._replace(rewards=self.to_torch(rewards.reshape(-1, 1)))


def train_constrained_predictor(
    out: str | Path,
    scenario: str = "paper",
    *,
    target: float = 0.95,
    worlds: tuple[int, ...] = (0,),
    recommender: str = "exact-linear",
    seed: int = 0,
    steps: int = 14_000,
    sac: SACParams = PREDICTOR_SAC,
    checkpoint_every: int = 1000,
    multiplier: float = 1.0,
    multiplier_lr: float = 5.0,
    multiplier_max: float = 100.0,
    max_margin: float = 0.3,
    capacity_obs: bool = False,
    eval_every: int = 0,
    eval_episodes: int = 3,
    resume: bool = False,
    progress: Progress | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Train μ to maximise RF subject to RR ≥ ``target`` (:class:`lab.envs.ReliableGoalEnv`,
    (L1)-(L2)) for ``steps`` ticks, episodes rotating over ``worlds``; the recommender part
    fixed to ``recommender`` as in :func:`train_predictor`. Returns the manifest, which
    records ρ, the worlds and the final λ."""
    from lab.envs import ReliableGoalEnv, _make_recommender

    p = ConstrainedTraining.make(
        target=target,
        worlds=tuple(worlds),
        seed=seed,
        steps=steps,
        checkpoint_every=checkpoint_every,
        multiplier=multiplier,
        multiplier_lr=multiplier_lr,
        multiplier_max=multiplier_max,
        max_margin=max_margin,
        eval_every=eval_every,
        eval_episodes=eval_episodes,
    )
    sac = _sac(sac)
    out = Path(out)
    rec = _make_recommender(recommender)  # unknown names fail before any training
    env_kw = {
        "target": p.target,
        "worlds": p.worlds,
        "multiplier": p.multiplier,
        "multiplier_lr": p.multiplier_lr,
        "multiplier_max": p.multiplier_max,
        "recommender": recommender,
        "max_margin": p.max_margin,
        "capacity_obs": capacity_obs,
        **overrides,
    }
    env = ReliableGoalEnv(scenario, **env_kw)
    manifest = _predictor_manifest(
        env,
        p,
        sac,
        recommender,
        rec,
        out,
        capacity_obs,
        objective=CONSTRAINED_OBJECTIVE,
        rr_target=p.target,
        worlds=list(p.worlds),
        multiplier_start=p.multiplier,
        multiplier_lr=p.multiplier_lr,
        multiplier_max=p.multiplier_max,
        multiplier_reads="RR of the actor's mean action, one episode after each training episode",
    )
    make_eval = (lambda: ReliableGoalEnv(scenario, **env_kw)) if p.eval_every else None
    extra = {
        "replay_buffer_class": RelabelledReplayBuffer,
        "replay_buffer_kwargs": {"reward": env.lagrangian},
    }
    return _train(
        out,
        env,
        manifest,
        sac,
        p,
        total_steps=p.steps,
        stop_episodes=None,
        resume=resume,
        progress=progress,
        make_eval=make_eval,
        sac_extra=extra,
        on_model=lambda model: setattr(env, "judge", _deployed(model)),
    )


def _predictor_manifest(
    env, p, sac: SACParams, recommender: str, rec, out: Path, capacity_obs: bool, **own: Any
) -> dict[str, Any]:
    """What every μ's manifest says (the world, the goal mapping, the recommender inside,
    ``rec`` built from its spec ``recommender``, SAC's settings) around the training's
    ``own`` keys."""
    from policies.rl.learned import LearnedRecommender

    manifest = {
        **_base_manifest(env, "predictor", p.seed),
        "action": "g = min(th + max_margin (a + 1) / 2, 1), a in [-1, 1]",
        "max_margin": p.max_margin,
        **own,
        "recommender": recommender,
        "recommender_path": None,
        "sac": sac.model_dump(),
    }
    if capacity_obs:
        manifest["capacity_observation"] = CAPACITY_OBSERVATION
    if isinstance(rec, LearnedRecommender):
        # stored relative to this artefact so that the pair can be moved together
        manifest["recommender_path"] = _relpath(Path(rec.path), out)
    return manifest


def _deployed(model) -> Callable[[np.ndarray], np.ndarray]:
    """obs -> the actor's mean action (what a trained μ does at inference)."""

    def act(obs: np.ndarray) -> np.ndarray:
        action, _ = model.predict(obs[None, :], deterministic=True)
        return action[0]

    return act


def _sac(sac: SACParams | dict[str, Any]) -> SACParams:
    return sac if isinstance(sac, SACParams) else SACParams.make("sac", **sac)


def _base_manifest(env, kind: str, seed: int) -> dict[str, Any]:
    """The manifest keys every artefact has: what it is and the world it was trained in."""
    return {
        "kind": kind,
        "scenario": env.config.to_dict(),
        "seed": seed,
        "n_features": env.config.n_features,
        "obs_dim": int(env.observation_space.shape[0]),
    }


# -- the shared loop ----------------------------------------------------------------------


def _train(
    out,
    env,
    manifest,
    sac: SACParams,
    p: _Common,
    *,
    total_steps: int,
    stop_episodes: int | None,
    resume: bool,
    progress: Progress | None,
    make_eval: Callable[[], Any] | None,
    sac_extra: dict[str, Any] | None = None,
    on_model: Callable[[Any], None] | None = None,
    vec: VecEnv | None = None,
) -> dict[str, Any]:
    """SAC on ``vec`` (default: ``env`` alone); ``env`` is the (first) environment whose
    learning state checkpoints keep."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ckdir = out / "checkpoints"
    curve_path = out / "learning_curve.csv"
    if vec is None:
        vec = DummyVecEnv([lambda: Monitor(env)])
    clock = _Clock()
    manifest_json = json.loads(json.dumps(manifest, default=str))
    model = SAC(
        "MlpPolicy",
        vec,
        seed=p.seed,
        device="cpu",
        verbose=0,
        **sac.sb3_kwargs(),
        **(sac_extra or {}),
    )
    model.set_logger(silent_logger())  # the learning curve and checkpoints are ours
    if on_model is not None:
        on_model(model)
    latest = latest_checkpoint(ckdir) if resume else None
    state = None
    if latest is not None:
        state = _read_state(latest)
        if state["manifest"] != manifest_json:
            raise ConfigError(
                f"--resume: the checkpoint in {ckdir} was made with other settings; "
                "use the same options or a new --out"
            )
        try:
            _restore(model, latest, state)
        # a crafted pickle, a truncated zip, tensors of another shape or name
        except (
            pickle.UnpicklingError,
            RuntimeError,
            ValueError,
            KeyError,
            TypeError,
            OSError,
            EOFError,
            IndexError,
        ) as exc:
            raise _not_a_checkpoint(latest, exc) from None
        model.set_random_seed(p.seed + model.num_timesteps)
        vec.seed(p.seed + model.num_timesteps)
        _truncate_curve(curve_path, model.num_timesteps)
        clock.before = (state["cpu_seconds"], state["wall_seconds"])
    else:
        if ckdir.exists():
            for f in ckdir.iterdir():
                f.unlink()
        curve_path.unlink(missing_ok=True)
        (out / "evaluations.npz").unlink(missing_ok=True)
    episodes_done = state["episodes"] if state else 0
    curve = LearningCurve(
        env,
        curve_path,
        manifest,
        episodes_done,
        stop_episodes is not None,
        progress,
        stop_episodes or total_steps,
    )
    callbacks = [
        curve,
        CodeFreeCheckpoint(env, ckdir, p.checkpoint_every, manifest_json, curve, clock, state),
    ]
    if stop_episodes is not None:
        callbacks.append(StopTrainingOnMaxEpisodes(stop_episodes - episodes_done))
    eval_env = None
    if make_eval is not None:
        eval_env = make_eval()
        callbacks.append(SyncedEval(env, eval_env, p, out, model.num_timesteps))
    remaining = total_steps - model.num_timesteps
    if remaining > 0 and (stop_episodes is None or episodes_done < stop_episodes):
        model.learn(
            total_timesteps=remaining, callback=CallbackList(callbacks), reset_num_timesteps=False
        )
    spec = save_actor(out, model.actor)
    full = {
        **manifest,
        "policy": spec,
        "steps": int(model.num_timesteps),
        "episodes_trained": curve.episodes,
        "cpu_seconds": clock.cpu(),
        "wall_seconds": clock.wall(),
        "learning_curve": curve_path.name,
    }
    if p.eval_every:
        full["evaluations"] = "evaluations.npz"
    if manifest["kind"] == "recommender":
        full["d_hat"] = env.estimator.d.tolist()
        full["d_error"] = env.difficulty_error()
    if manifest.get("objective") == CONSTRAINED_OBJECTIVE:
        full["multiplier_final"] = env.multiplier  # λ after the last episode, (L2)
    write_manifest(out, full)
    vec.close()
    if eval_env is not None:
        eval_env.close()
    return json.loads((out / "manifest.json").read_text())


def silent_logger() -> Logger:
    """An SB3 logger that writes nowhere: SB3's default at ``verbose=0`` writes nothing
    either, but makes an empty ``SB3-<time>`` folder in the temp dir at every learn()."""
    return Logger(folder=None, output_formats=[])


class BatchedVecEnv(VecEnv):
    """SB3's ``VecEnv`` over :class:`lab.envs.PopulationVectorEnv` (all its episodes'
    ticks in one batch): what ``DummyVecEnv`` over as many :class:`lab.envs.PopulationEnv`
    gives, bit for bit (``terminal_observation``, ``TimeLimit.truncated``, same-step
    resets, environment i seeded with seed + i)."""

    def __init__(self, venv) -> None:
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self.metadata = venv.envs[0].metadata
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        opts = [o for o in self._options if o]
        if opts:
            raise ValueError("PopulationEnv.reset takes no options")
        obs, self.reset_infos = self.venv.reset_lists(list(self._seeds))
        self._reset_seeds()
        self._reset_options()
        return np.stack(obs).astype(self.observation_space.dtype, copy=False)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        obs, rewards, terminated, truncated, infos, finals = self.venv.step_lists(self._actions)
        dones = np.zeros(self.num_envs, dtype=bool)
        out = []
        for i in range(self.num_envs):
            dones[i] = terminated[i] or truncated[i]
            info = finals[i][1] if i in finals else infos[i]
            info["TimeLimit.truncated"] = truncated[i] and not terminated[i]
            if i in finals:
                info["terminal_observation"] = finals[i][0]
                self.reset_infos[i] = infos[i]
            out.append(info)
        stacked = np.stack(obs).astype(self.observation_space.dtype, copy=False)
        return stacked, np.array(rewards, dtype=np.float32), dones, out

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(env, attr_name) for env in self._get_target_envs(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        for env in self._get_target_envs(indices):
            setattr(env, attr_name, value)

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list[Any]:
        return [
            getattr(env, method_name)(*args, **kwargs) for env in self._get_target_envs(indices)
        ]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [isinstance(env, wrapper_class) for env in self._get_target_envs(indices)]

    def _get_target_envs(self, indices) -> list[Any]:
        return [self.venv.envs[i] for i in self._get_indices(indices)]


class _Clock:
    """CPU and wall seconds of this run plus those of the runs it resumes."""

    def __init__(self) -> None:
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()
        self.before = (0.0, 0.0)

    def cpu(self) -> float:
        return self.before[0] + time.process_time() - self.cpu0

    def wall(self) -> float:
        return self.before[1] + time.perf_counter() - self.wall0


# per-step info keys whose episode mean the learning curve keeps (``multiplier``: λ of
# the constrained predictor, (L2); ``judged_rr``: the deployed policy's RR after the
# episode, which (L2) reads)
CURVE_KEYS = ("error", "cost", "rr", "rf", "goal", "multiplier", "judged_rr")


class LearningCurve(BaseCallback):
    """One CSV row per finished episode (SB3's ``Monitor`` marks the end) and progress.

    Columns: episode, timesteps, reward (the episode's sum; eq. 15 itself for φ), length,
    mean_<key> of the env's per-step info (error, cost, rr, rf, goal), and for φ warmup and
    d_error. ``progress(done, total)`` gets episodes (φ) or steps (μ, every 100 steps).
    """

    def __init__(
        self,
        env,
        path: Path,
        manifest: dict[str, Any],
        episodes: int,
        by_episode: bool,
        progress: Progress | None,
        total: int,
    ) -> None:
        super().__init__()
        self.env_, self.path, self.manifest = env, path, manifest
        self.episodes, self.by_episode = episodes, by_episode
        self.progress, self.total = progress, total
        self._ep: dict[int, dict[str, list[float]]] = {}  # per environment
        self._reported = 0

    def _on_training_start(self) -> None:
        self._reported = self.num_timesteps
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            done = self.episodes if self.by_episode else self.num_timesteps
            self.progress(min(done, self.total), self.total)

    def _on_step(self) -> bool:
        rewards = self.locals["rewards"]
        for i, info in enumerate(self.locals["infos"]):
            self._record(i, info, rewards[i])
        if not self.by_episode and self.num_timesteps // 100 > self._reported // 100:
            self._reported = self.num_timesteps
            self._report()
        return True

    def _record(self, i: int, info: dict[str, Any], reward: float) -> None:
        """Environment ``i``'s step; a row when its episode ended."""
        # φ's env trains on eq. 15 / reward_scale; the curve reports eq. 15 itself
        reward = float(info.get("reward_eq15", reward))
        ep = self._ep.setdefault(i, {})
        ep.setdefault("reward", []).append(reward)
        for key in CURVE_KEYS:
            if key in info:
                ep.setdefault(key, []).append(float(info[key]))
        if "episode" in info:  # Monitor's end-of-episode record
            self.episodes += 1
            row = {
                "episode": self.episodes,
                "timesteps": self.num_timesteps,
                "reward": float(np.sum(ep["reward"])),
                "length": int(info["episode"]["l"]),
            }
            for key in CURVE_KEYS:
                if key in ep:
                    row[f"mean_{key}"] = float(np.mean(ep[key]))
            if self.manifest["kind"] == "recommender":
                row["warmup"] = int(self.episodes <= self.manifest["env"]["warmup_episodes"])
                row["d_error"] = self.env_.difficulty_error()
            _append_row(self.path, row)
            del self._ep[i]
            if self.by_episode:
                self._report()


class CodeFreeCheckpoint(BaseCallback):
    """Every ``every`` steps, a checkpoint without pickles (module docstring); keeps two."""

    def __init__(
        self,
        env,
        ckdir: Path,
        every: int,
        manifest: dict[str, Any],
        curve,
        clock: _Clock,
        state: dict[str, Any] | None,
    ) -> None:
        super().__init__()
        self.env_, self.ckdir, self.every, self.manifest = env, ckdir, every, manifest
        self.curve, self.clock, self.state = curve, clock, state

    def _on_training_start(self) -> None:
        self._saved = self.num_timesteps
        if self.state is not None and "env" in self.state:
            # after SB3's first reset, so the restored learning state survives it
            self.env_.set_state(self.state["env"])

    def _on_step(self) -> bool:
        # several environments add several steps at once: a multiple of ``every`` passed
        if self.num_timesteps // self.every > self._saved // self.every:
            self._saved = self.num_timesteps
            self.save()
        return True

    def save(self) -> None:
        m = self.model
        self.ckdir.mkdir(parents=True, exist_ok=True)
        stem = self.ckdir / f"step_{self.num_timesteps:09d}"
        _, variables = m._get_torch_save_params()
        tensors = {**m.get_parameters(), **{v: getattr(m, v).detach() for v in variables}}
        torch.save(tensors, stem.with_suffix(".pt"))
        buf = m.replay_buffer
        n = buf.buffer_size if buf.full else buf.pos
        np.savez(
            stem.with_name(stem.name + "_buffer.npz"),
            **{k: getattr(buf, k)[:n] for k in _BUFFER_ARRAYS if getattr(buf, k, None) is not None},
        )
        state = {
            "steps": self.num_timesteps,
            "episodes": self.curve.episodes,
            "n_updates": m._n_updates,
            "episode_num": m._episode_num,
            "buffer": {"pos": int(buf.pos), "full": bool(buf.full)},
            "cpu_seconds": self.clock.cpu(),
            "wall_seconds": self.clock.wall(),
            "manifest": self.manifest,
        }
        if hasattr(self.env_, "get_state"):
            state["env"] = self.env_.get_state()
        stem.with_suffix(".json").write_text(json.dumps(state))
        for old in sorted(self.ckdir.glob("step_*.json"))[:-2]:
            for f in (old, old.with_suffix(".pt"), old.with_name(old.stem + "_buffer.npz")):
                f.unlink(missing_ok=True)


# "parts": the Lagrangian parts of a RelabelledReplayBuffer (absent from SB3's own buffer)
_BUFFER_ARRAYS = (
    "observations",
    "next_observations",
    "actions",
    "rewards",
    "dones",
    "timeouts",
    "parts",
)


def _not_a_checkpoint(path: Path, exc: BaseException) -> ConfigError:
    """--resume refused: ``path`` is not a checkpoint :class:`CodeFreeCheckpoint` wrote."""
    # torch's own message (several lines, advising weights_only=False) is not shown: a file
    # that holds a pickle is never loaded with pickles allowed
    if isinstance(exc, pickle.UnpicklingError):
        reason = "not tensors alone: torch, with pickled code refused, could not read it"
    else:
        text = " ".join(str(exc).split())
        reason = type(exc).__name__ + (f": {text[:160]}" if text else "")
    return ConfigError(
        f"--resume: {path} is not a checkpoint this program wrote ({reason}); remove "
        f"{path.parent} to start afresh, or choose a new --out"
    )


def _read_state(latest: Path) -> dict[str, Any]:
    """The JSON state beside checkpoint ``latest``, checked for the keys a resume reads."""
    path = latest.with_suffix(".json")
    try:
        state = json.loads(path.read_text())
        if not isinstance(state, dict):
            raise ValueError("not a JSON object")
        for key in (
            "manifest",
            "steps",
            "episodes",
            "n_updates",
            "episode_num",
            "buffer",
            "cpu_seconds",
            "wall_seconds",
        ):
            if key not in state:
                raise KeyError(key)
        int(state["steps"]), int(state["buffer"]["pos"]), bool(state["buffer"]["full"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _not_a_checkpoint(path, exc) from None
    return state


def _restore(model, latest: Path, state: dict[str, Any]) -> None:
    """Load a :class:`CodeFreeCheckpoint` into a freshly built ``model`` of the same settings."""
    with warnings.catch_warnings():  # torch warns of a foreign pickle protocol, then refuses
        warnings.simplefilter("ignore")
        tensors = torch.load(latest, map_location="cpu", weights_only=True)
    names, variables = model._get_torch_save_params()
    model.set_parameters({k: tensors[k] for k in names}, exact_match=True, device="cpu")
    for v in variables:  # in place: the entropy optimiser holds this tensor
        getattr(model, v).data.copy_(tensors[v])
    buf = model.replay_buffer
    with np.load(latest.with_name(latest.stem + "_buffer.npz"), allow_pickle=False) as arrays:
        for k in arrays.files:
            getattr(buf, k)[: len(arrays[k])] = arrays[k]
    buf.pos, buf.full = int(state["buffer"]["pos"]), bool(state["buffer"]["full"])
    model.num_timesteps = int(state["steps"])
    model._n_updates, model._episode_num = int(state["n_updates"]), int(state["episode_num"])


class SyncedEval(EvalCallback):
    """SB3's ``EvalCallback`` every ``eval_every`` training steps, on the same episodes each time.

    Before each evaluation the evaluation environment's generator is reset to one fixed
    seed (so successive evaluations compare the policy on identical episodes) and, for φ,
    it gets the training environment's current d̂ (part of φ's observation). Results go to
    ``evaluations.npz`` (SB3's layout: timesteps, results, ep_lengths), kept across resumes.
    """

    def __init__(self, train_env, eval_env, p: _Common, out: Path, done_steps: int) -> None:
        vec = DummyVecEnv([lambda: Monitor(eval_env)])
        super().__init__(
            vec,
            n_eval_episodes=p.eval_episodes,
            eval_freq=p.eval_every,
            log_path=str(out),
            deterministic=True,
            verbose=0,
        )
        # a seed of its own, so evaluation episodes are not training's first episodes
        self.train_env, self.raw_eval, self.eval_seed = train_env, eval_env, p.seed + 10_007
        # n_calls counts from the checkpoint's step, so evaluations fall on the same steps
        self.n_calls = done_steps
        self._keep_earlier(out / "evaluations.npz", done_steps)

    def _keep_earlier(self, path: Path, done_steps: int) -> None:
        if done_steps == 0 or not path.is_file():
            return
        with np.load(path, allow_pickle=False) as f:
            keep = f["timesteps"] <= done_steps
            self.evaluations_timesteps = f["timesteps"][keep].tolist()
            self.evaluations_results = f["results"][keep].tolist()
            self.evaluations_length = f["ep_lengths"][keep].tolist()

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq == 0:  # as EvalCallback decides
            self.raw_eval.np_random = np.random.default_rng(self.eval_seed)
            if hasattr(self.raw_eval, "estimator"):
                self.raw_eval.estimator.d = self.train_env.estimator.d.copy()
                self.raw_eval.estimator.updates = self.train_env.estimator.updates.copy()
        return super()._on_step()


def latest_checkpoint(ckdir: Path) -> Path | None:
    """The newest complete checkpoint (weights, state and replay buffer) in ``ckdir``."""
    found = sorted(ckdir.glob("step_*.json")) if ckdir.is_dir() else []
    for js in reversed(found):
        if js.with_suffix(".pt").is_file() and js.with_name(js.stem + "_buffer.npz").is_file():
            return js.with_suffix(".pt")
    return None


def _append_row(path: Path, row: dict[str, Any]) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(row), extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)


def _truncate_curve(path: Path, steps: int) -> None:
    """Drop learning-curve rows written after the checkpoint being resumed."""
    if not path.exists():
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    path.unlink()
    for row in rows:
        if int(row["timesteps"]) <= steps:
            _append_row(path, row)


def _relpath(target: Path, start: Path) -> str:
    import os

    return os.path.relpath(target.resolve(), start.resolve())
