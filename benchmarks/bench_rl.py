"""Throughput of the RL pieces: environment steps, SAC training steps, learned policies.

    python benchmarks/bench_rl.py            # about a minute on one core
    python benchmarks/bench_rl.py --steps 2000

Prints, for φ's RecommenderEnv and μ's PopulationEnv, environment steps per second with
random actions and SAC training steps per second (the ratio is SAC's share of training
time), and episode times of the learned policies against the `threshold` baseline. These
figures size the Pareto study: one predictor is 7,000 PopulationEnv steps, φ about
25,000 RecommenderEnv steps. Torch runs on one CPU thread, as `recourse-abm train` does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# a target, not a test: the paper's 7,000-step predictor in under 2 min of CPU
TARGET_PREDICTOR_SECONDS = 120.0


def env_rate(env, steps: int, seed: int = 0) -> float:
    """Environment steps per second with uniform random actions (no learning)."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        action = rng.uniform(-1.0, 1.0, env.action_space.shape).astype(np.float32)
        _, _, done, truncated, _ = env.step(action)
        if done or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def sac_rate(env, steps: int, seed: int = 0) -> float:
    """SAC training steps per second (one gradient step per environment step)."""
    from stable_baselines3 import SAC

    from lab.training import PREDICTOR_SAC, silent_logger

    sac = PREDICTOR_SAC.replace(learning_starts=min(200, steps // 4))
    model = SAC("MlpPolicy", env, seed=seed, device="cpu", verbose=0, **sac.sb3_kwargs())
    model.set_logger(silent_logger())
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def episode_ms(policy: str, episodes: int) -> float:
    """Median wall time of one 100-tick `paper` episode with ``policy``, in ms."""
    from abm import RecourseModel

    times = []
    for seed in range(episodes):
        start = time.perf_counter()
        RecourseModel("paper", policy, seed=seed, agents=False, record_events=False).run()
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1500, help="steps per rate measurement")
    ap.add_argument("--episodes", type=int, default=5, help="episodes per policy timing")
    args = ap.parse_args(argv)
    import torch

    from lab.envs import PopulationEnv, RecommenderEnv

    torch.set_num_threads(1)
    print(f"{'environment':34s} {'env steps/s':>12s} {'SAC steps/s':>12s} {'SAC share':>10s}")
    predictor_rate = None
    for name, make in (
        ("RecommenderEnv (direction)", lambda: RecommenderEnv("paper", action="direction")),
        (
            "PopulationEnv (exact-linear)",
            lambda: PopulationEnv("paper", recommender="exact-linear"),
        ),
        ("PopulationEnv (learned phi)", lambda: PopulationEnv("paper", recommender="rl")),
    ):
        env = make()
        raw = env_rate(env, args.steps)
        env.close()
        env = make()
        trained = sac_rate(env, args.steps)
        env.close()
        if name == "PopulationEnv (exact-linear)":
            predictor_rate = trained
        print(f"{name:34s} {raw:12,.0f} {trained:12,.0f} {1 - trained / raw:10.0%}")
    seconds = 7000 / predictor_rate
    verdict = "meets" if seconds <= TARGET_PREDICTOR_SECONDS else "misses"
    print(
        f"one 7,000-step predictor (exact-linear inside): {seconds:.0f} s, "
        f"{verdict} the {TARGET_PREDICTOR_SECONDS:.0f} s target"
    )
    print(f"\n{'policy (100-tick paper episode)':34s} {'median ms':>10s} {'vs threshold':>13s}")
    base = episode_ms("threshold", args.episodes)
    for policy in ("threshold", "rl-recommender", "hybrid-exact-linear", "rl"):
        ms = base if policy == "threshold" else episode_ms(policy, args.episodes)
        print(f"{policy:34s} {ms:10.1f} {ms / base:12.1f}x")


if __name__ == "__main__":
    main()
