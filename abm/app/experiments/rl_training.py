"""SAC training of the recommender φ and the predictor μ, with checkpoints and resume.

An output directory holds, while training, ``checkpoints/`` (SB3 zip, replay buffer and
a JSON state per checkpoint; the latest two are kept) and ``learning_curve.csv`` (one
row per finished episode, appended as it goes); at the end ``model.zip`` and
``manifest.json`` (see :mod:`policies.rl.artefacts`).

Resume (``resume=True``) restarts from the latest checkpoint: weights, optimiser states,
entropy coefficient, replay buffer, step count and the environment's learning state
(episode count, d̂, its random generator). It is not bit-identical to an uninterrupted
run: the episode in progress at the checkpoint is restarted, and SB3 does not save the
torch / numpy generator states it samples minibatches and actions from; they are
reseeded from (seed, checkpoint step), so resuming the same checkpoint twice gives the
same result.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from abm.config import require_int
from policies.rl.artefacts import MODEL_FILE, write_manifest
from policies.rl.encoding import RECOMMENDER_OBSERVATION


@dataclass(frozen=True)
class SACParams:
    """SAC hyper-parameters (stable-baselines3 names); ``net`` is the hidden layer sizes."""

    net: tuple[int, ...] = (64, 64)
    learning_rate: float = 3e-4
    batch_size: int = 128
    buffer_size: int = 100_000
    learning_starts: int = 500
    gamma: float = 0.99
    tau: float = 0.005
    train_freq: int = 1
    gradient_steps: int = 1
    ent_coef: str = "auto"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checks = (
            ("net", all(isinstance(n, int) and 1 <= n <= 4096 for n in self.net) and 1 <= len(self.net) <= 8,
             "1 to 8 layer sizes, each an integer in [1, 4096]"),
            ("learning_rate", 0 < self.learning_rate <= 1, "in (0, 1]"),
            ("batch_size", isinstance(self.batch_size, int) and 1 <= self.batch_size <= 65_536, "an integer in [1, 65536]"),
            ("buffer_size", isinstance(self.buffer_size, int) and 1 <= self.buffer_size <= 10**8, "an integer in [1, 1e8]"),
            ("learning_starts", isinstance(self.learning_starts, int) and self.learning_starts >= 0, "an integer >= 0"),
            ("gamma", 0 <= self.gamma <= 1, "in [0, 1]"),
            ("tau", 0 < self.tau <= 1, "in (0, 1]"),
        )  # fmt: skip
        for name, ok, allowed in checks:
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

    def sb3_kwargs(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "batch_size": self.batch_size,
                "buffer_size": self.buffer_size, "learning_starts": self.learning_starts,
                "gamma": self.gamma, "tau": self.tau, "train_freq": self.train_freq,
                "gradient_steps": self.gradient_steps, "ent_coef": self.ent_coef,
                "policy_kwargs": {"net_arch": list(self.net)}, **self.extra}  # fmt: skip


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
# φ's observation layout (abm.app.envs.recommender_observation); artefacts without it are refused
# A goal acts on the next tick (T = 1) or the next few: gamma 0.9 (a ~10-tick horizon)
# assigns that credit within the paper's 7,000 steps; with 0.99, alpha:tau = 10:1 still sat
# at RR 0.65 after 7,000 steps, with 0.9 it reached RR 0.93 (the fixed-margin front's end).
PREDICTOR_SAC = SACParams(gamma=0.9, learning_starts=200)


def train_recommender(out: str | Path, scenario: str = "paper", *, seed: int = 0,
                      warmup_episodes: int = 0, episodes: int = 20_000,
                      sac: SACParams = RECOMMENDER_SAC, checkpoint_every: int = 10_000,
                      max_step: float = RECOMMENDER_MAX_STEP, action: str = "direction",
                      reward_scale: float | None = None,
                      resume: bool = False, progress: Callable[[int, int], None] | None = None,
                      env_params: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """Train φ in :class:`abm.app.envs.RecommenderEnv`: ``warmup_episodes`` on error only, then
    ``episodes`` with cost (App. D). Returns the manifest. ``progress(done, total)``
    reports finished episodes. ``max_step``, ``action`` (``direct``, the paper's, or
    ``direction``) and ``reward_scale`` are :class:`abm.app.envs.RecommenderEnv`'s; the
    manifest records them (and the observation layout) for :class:`LearnedRecommender`.
    The learning curve's ``reward`` is eq. 15 itself, not the scaled reward SAC sees."""
    from abm.app.envs import RecommenderEnv

    require_int("warmup_episodes", warmup_episodes, 0, 10**9)
    require_int("episodes", episodes, 1, 10**9)
    if reward_scale is None:
        reward_scale = RECOMMENDER_REWARD_SCALES.get(action, 1.0)
    env = RecommenderEnv(scenario, warmup_episodes=warmup_episodes, max_step=max_step, action=action,
                         reward_scale=reward_scale, **(env_params or {}), **overrides)  # fmt: skip
    total_episodes = warmup_episodes + episodes
    described = {"direct": "x_cf = clip(x + max_step a, 0, 1), immutable features kept; a in [-1, 1]^z",
                 "direction": "u = (a + 1) / 2 on mutable features, x_cf = clip(x + t u, 0, 1) with the "
                              "smallest t such that M(x_cf) >= g (bisection on M.score)"}  # fmt: skip
    manifest = {
        **_base_manifest(env, "recommender", seed),
        "observation": RECOMMENDER_OBSERVATION,
        "action_mode": env.action_mode,
        "max_step": env.max_step,
        "action": described[env.action_mode],
        "env": {"max_steps": env.max_steps, "epsilon": env.epsilon, "phi": env.phi, "psi": env.psi,
                "goal_max": env.goal_max, "warmup_episodes": warmup_episodes, "episodes": episodes,
                "reward_scale": env.reward_scale},
        "sac": asdict(sac),
    }  # fmt: skip
    result = _train(out, env, manifest, sac, seed, total_steps=total_episodes * env.max_steps,
                    stop_episodes=total_episodes, checkpoint_every=checkpoint_every, resume=resume,
                    progress=progress, progress_total=total_episodes)  # fmt: skip
    return result


def train_predictor(out: str | Path, scenario: str = "paper", *, alpha: float, tau: float,
                    recommender: str = "exact-linear", seed: int = 0, steps: int = 7000,
                    sac: SACParams = PREDICTOR_SAC, checkpoint_every: int = 1000,
                    resume: bool = False, progress: Callable[[int, int], None] | None = None,
                    log_floor: float = 1e-3, max_margin: float = 0.3,
                    **overrides: Any) -> dict[str, Any]:  # fmt: skip
    """Train μ in :class:`abm.app.envs.PopulationEnv` with reward weights (alpha, tau) for
    ``steps`` ticks, the paper's recommender part fixed to ``recommender`` (a registry
    spec; ``rl:path=DIR`` for a learned φ). Returns the manifest."""
    from abm.app.envs import PopulationEnv, _make_recommender
    from policies.rl.learned import LearnedRecommender

    require_int("steps", steps, 1, 10**9)
    out = Path(out)
    rec = _make_recommender(recommender)  # unknown names fail before any training
    env = PopulationEnv(scenario, alpha=alpha, tau=tau, recommender=recommender,
                        log_floor=log_floor, max_margin=max_margin, **overrides)  # fmt: skip
    manifest = {
        **_base_manifest(env, "predictor", seed),
        "action": "g = min(th + max_margin (a + 1) / 2, 1), a in [-1, 1]",
        "max_margin": float(max_margin),
        "alpha": float(alpha),
        "tau": float(tau),
        "log_floor": log_floor,
        "recommender": recommender,
        "recommender_path": None,
        "sac": asdict(sac),
    }
    if isinstance(rec, LearnedRecommender):
        # stored relative to this artefact so that the pair can be moved together
        manifest["recommender_path"] = _relpath(Path(rec.path), out)
    return _train(out, env, manifest, sac, seed, total_steps=steps, stop_episodes=None,
                  checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                  progress_total=steps)  # fmt: skip


def _base_manifest(env, kind: str, seed: int) -> dict[str, Any]:
    """The manifest keys every artefact has: what it is and the world it was trained in."""
    return {"kind": kind, "scenario": env.config.to_dict(), "seed": seed,
            "n_features": env.config.n_features, "obs_dim": int(env.observation_space.shape[0])}  # fmt: skip


# -- the shared loop ----------------------------------------------------------------------


def _train(out, env, manifest, sac: SACParams, seed: int, *, total_steps: int,
           stop_episodes: int | None, checkpoint_every: int, resume: bool, progress,
           progress_total: int) -> dict[str, Any]:  # fmt: skip
    from stable_baselines3 import SAC
    from stable_baselines3.common.vec_env import DummyVecEnv

    require_int("checkpoint_every", checkpoint_every, 1, 10**9)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ckdir = out / "checkpoints"
    curve_path = out / "learning_curve.csv"
    vec = DummyVecEnv([lambda: env])
    cpu0, wall0 = time.process_time(), time.perf_counter()
    latest = _latest_checkpoint(ckdir) if resume else None
    if latest is not None:
        state = json.loads(latest.with_suffix(".json").read_text())
        if state["manifest"] != json.loads(json.dumps(manifest, default=str)):
            raise ValueError(f"--resume: the checkpoint in {ckdir} was made with other settings; "
                             "use the same options or a new --out")  # fmt: skip
        model = SAC.load(latest, env=vec, device="cpu")
        model.load_replay_buffer(latest.with_name(latest.stem + "_buffer.pkl"))
        done_steps = int(state["steps"])
        model.set_random_seed(seed + done_steps)
        vec.seed(seed + done_steps)
        _truncate_curve(curve_path, done_steps)
        cpu_before, wall_before = state["cpu_seconds"], state["wall_seconds"]
    else:
        if ckdir.exists():
            for f in ckdir.iterdir():
                f.unlink()
        curve_path.unlink(missing_ok=True)
        model = SAC("MlpPolicy", vec, seed=seed, device="cpu", verbose=0, **sac.sb3_kwargs())
        state, done_steps, cpu_before, wall_before = None, 0, 0.0, 0.0
    callback = _Callback(env, ckdir, curve_path, manifest, checkpoint_every, stop_episodes, progress,
                         progress_total, state, (cpu0, wall0, cpu_before, wall_before))  # fmt: skip
    model.learn(total_timesteps=max(total_steps - done_steps, 0), callback=callback,
                reset_num_timesteps=False)  # fmt: skip
    model.save(out / MODEL_FILE)
    full = {**manifest, "steps": int(model.num_timesteps), "episodes_trained": callback.episodes,
            "cpu_seconds": callback.cpu_seconds(), "wall_seconds": callback.wall_seconds(),
            "learning_curve": curve_path.name}  # fmt: skip
    if manifest["kind"] == "recommender":
        full["d_hat"] = env.estimator.d.tolist()
        full["d_error"] = env.difficulty_error()
    write_manifest(out, full)
    env.close()
    return json.loads((out / "manifest.json").read_text())


class _Callback:
    """Learning curve, checkpoints, progress and the episode cap (an SB3 BaseCallback)."""

    def __new__(cls, *args, **kwargs):
        from stable_baselines3.common.callbacks import BaseCallback

        class Impl(BaseCallback):
            def __init__(self, env, ckdir, curve_path, manifest, every, stop_episodes, progress,
                         total, state, clocks) -> None:  # fmt: skip
                super().__init__()
                self.env_, self.ckdir, self.curve_path = env, ckdir, curve_path
                self.manifest, self.every, self.stop_episodes = manifest, every, stop_episodes
                self.progress, self.total, self.state, self.clocks = progress, total, state, clocks
                self.episodes = state["episodes"] if state else 0
                self._ep: dict[str, list[float]] = {}

            def _on_training_start(self) -> None:
                if self.state is not None and "env" in self.state:
                    # after SB3's first reset, so the restored learning state survives it
                    self.env_.set_state(self.state["env"])
                self._report()

            def cpu_seconds(self) -> float:
                return self.clocks[2] + time.process_time() - self.clocks[0]

            def wall_seconds(self) -> float:
                return self.clocks[3] + time.perf_counter() - self.clocks[1]

            def _report(self) -> None:
                if self.progress is not None:
                    done = self.episodes if self.stop_episodes is not None else self.num_timesteps
                    self.progress(min(done, self.total), self.total)

            def _on_step(self) -> bool:
                info = self.locals["infos"][0]
                # φ's env trains on eq. 15 / reward_scale; the curve reports eq. 15 itself
                reward = float(info.get("reward_eq15", self.locals["rewards"][0]))
                ep = self._ep
                ep.setdefault("reward", []).append(reward)
                for key in ("error", "cost", "rr", "rf", "goal"):
                    if key in info:
                        ep.setdefault(key, []).append(float(info[key]))
                if self.locals["dones"][0]:
                    self.episodes += 1
                    row = {"episode": self.episodes, "timesteps": self.num_timesteps,
                           "reward": float(np.sum(ep["reward"])), "length": len(ep["reward"])}  # fmt: skip
                    for key in ("error", "cost", "rr", "rf", "goal"):
                        if key in ep:
                            row[f"mean_{key}"] = float(np.mean(ep[key]))
                    if self.manifest["kind"] == "recommender":
                        row["warmup"] = int(
                            self.episodes <= self.manifest["env"]["warmup_episodes"]
                        )
                        row["d_error"] = self.env_.difficulty_error()
                    _append_row(self.curve_path, row)
                    self._ep = {}
                    self._report()
                if self.num_timesteps % self.every == 0:
                    self._checkpoint()
                if self.stop_episodes is not None and self.episodes >= self.stop_episodes:
                    return False
                if self.stop_episodes is None and self.num_timesteps % 100 == 0:
                    self._report()
                return True

            def _checkpoint(self) -> None:
                self.ckdir.mkdir(parents=True, exist_ok=True)
                stem = self.ckdir / f"step_{self.num_timesteps:09d}"
                self.model.save(stem.with_suffix(".zip"))
                self.model.save_replay_buffer(stem.with_name(stem.name + "_buffer.pkl"))
                state = {"steps": self.num_timesteps, "episodes": self.episodes,
                         "cpu_seconds": self.cpu_seconds(), "wall_seconds": self.wall_seconds(),
                         "manifest": json.loads(json.dumps(self.manifest, default=str))}  # fmt: skip
                if hasattr(self.env_, "get_state"):
                    state["env"] = self.env_.get_state()
                # the JSON is written last: a checkpoint counts only once it exists
                stem.with_suffix(".json").write_text(json.dumps(state))
                for old in sorted(self.ckdir.glob("step_*.json"))[:-2]:
                    for f in (
                        old,
                        old.with_suffix(".zip"),
                        old.with_name(old.stem + "_buffer.pkl"),
                    ):
                        f.unlink(missing_ok=True)

        return Impl(*args, **kwargs)


def _latest_checkpoint(ckdir: Path) -> Path | None:
    found = sorted(ckdir.glob("step_*.json")) if ckdir.is_dir() else []
    for js in reversed(found):
        if js.with_suffix(".zip").is_file() and js.with_name(js.stem + "_buffer.pkl").is_file():
            return js.with_suffix(".zip")
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
