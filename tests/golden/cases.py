"""The golden cases: scenario, policy, seed and overrides whose results must never drift.

Each case keeps its whole tick and candidate tables as Parquet files under ``reference/``
(:func:`reference_paths`) beside ``golden.json``, which holds the case's summary and the
SHA-256 fingerprints of both tables (:func:`fingerprint`: a canonical CSV whose floats are
written with ``repr``, so equal fingerprints mean bitwise-equal values).
``tests/test_golden.py`` runs every case and compares it with the reference under the
cross-CPU contract of ``compare.py``; equal fingerprints mean it also matched bit for bit.
``generate.py`` rewrites both; do so only for a change that alters results (CHANGELOG line
with old vs new figures, ``RESULTS_SCHEMA`` bumped).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference"
GOLDEN_FILE = HERE / "golden.json"

_CHEAP = ("none", "threshold", "threshold-true", "threshold-estimated")
_SCENARIOS = ("paper", "paper-T5", "paper-hard", "paper-T5-hard", "motivating-example")

CASES: list[dict[str, Any]] = [
    {"scenario": s, "policy": p, "seed": seed}
    for s in _SCENARIOS
    for p in _CHEAP
    for seed in (0, 1)
]
CASES += [
    {
        "scenario": "paper",
        "policy": "last-threshold:margin=0.05+exact-linear:weights=estimated",
        "seed": 3,
    },
    {
        "scenario": "paper",
        "policy": "safear",
        "seed": 0,
        "ticks": 30,
        "risk_aversion": [0.0, 2.0],
        "slow": True,
    },
    {"scenario": "paper-T5", "policy": "safear:beta_risk=1", "seed": 2, "ticks": 20},
    {"scenario": "paper", "policy": "threshold-ustun", "seed": 0, "ticks": 15, "slow": True},
    {"scenario": "paper", "policy": "threshold-wachter", "seed": 0, "ticks": 15, "slow": True},
    {
        "scenario": "paper",
        "policy": "none",
        "seed": 0,
        "ticks": 30,
        "decision_model": "mlp",
        "slow": True,
    },
    {
        "scenario": "paper",
        "policy": "threshold-wachter",
        "seed": 1,
        "ticks": 10,
        "decision_model": "mlp",
        "slow": True,
    },
    # the learned policies' networks run in float32 (torch): on another CPU their kernels
    # sum in another order, a float32 unit of the output, so advice moves by up to 3.4e-8
    # (6.2e-6 relative on a change of 0.002; an Intel Xeon against the reference CPU,
    # 2026-12-01): floats held to a stated (rtol, atol) = (1e-5, 1e-7); discrete outcomes
    # must match as everywhere
    {"scenario": "paper", "policy": "rl", "seed": 0, "ticks": 20, "tol": (1e-5, 1e-7)},
    {
        "scenario": "paper",
        "policy": "rl-recommender",
        "seed": 0,
        "ticks": 20,
        "tol": (1e-5, 1e-7),
    },
    {
        "scenario": "paper",
        "policy": "hybrid-exact-linear",
        "seed": 1,
        "ticks": 20,
        "tol": (1e-5, 1e-7),
    },
    {"scenario": "paper-T5", "policy": "lookahead", "seed": 0, "ticks": 8},
    {
        "scenario": "large",
        "policy": "threshold",
        "seed": 0,
        "ticks": 4,
        "n_initial": 3000,
        "m": 3000,
        "k": 2700,
    },
    {
        "scenario": "paper",
        "policy": "threshold-dice",
        "seed": 0,
        "ticks": 2,
        "needs": "dice_ml",
        "slow": True,
    },
    {"scenario": "paper", "policy": "threshold-explore", "seed": 0, "ticks": 40},
    # every world mechanism and the families built on them
    {"scenario": "improvement", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "improvement", "policy": "improve-linucb", "seed": 0, "ticks": 30},
    {"scenario": "improvement", "policy": "improve-proto", "seed": 1, "ticks": 20},
    {"scenario": "improvement", "policy": "improve-bwo", "seed": 0, "ticks": 15},
    {"scenario": "retraining", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "retraining", "policy": "robust-l1", "seed": 0, "ticks": 20},
    {"scenario": "retraining", "policy": "robust-linf", "seed": 1, "ticks": 12},
    {"scenario": "retraining", "policy": "roar-l1", "seed": 0, "ticks": 12},
    {"scenario": "groups", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "causal", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "budget", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "fair-scarf", "policy": "threshold", "seed": 0, "ticks": 20},
    # SCARF trains its generator (Adam, float64) while it prepares: training carries the
    # kernels' last-digit differences to about 1e-6 of the advice (1.3e-6 relative, 5e-12
    # absolute measured under scripts/other-kernels.sh): its floats are held to a stated
    # (rtol, atol) = (1e-5, 1e-9); its discrete outcomes must match as everywhere
    {
        "scenario": "fair-scarf",
        "policy": "scarf-mlp",
        "seed": 0,
        "ticks": 20,
        "tol": (1e-5, 1e-9),
        "slow": True,
    },
    {
        "scenario": "fair-scarf",
        "policy": "scarf",
        "seed": 0,
        "ticks": 20,
        "tol": (1e-5, 1e-9),
        "slow": True,
    },
    {"scenario": "german-credit", "policy": "threshold", "seed": 0, "ticks": 20},
    {"scenario": "lending", "policy": "threshold", "seed": 0, "ticks": 30},
    {"scenario": "lending", "policy": "safear", "seed": 1, "ticks": 20},
]

#: PopulationEnv traces (the RL environment's observations, rewards and infos) kept beside
#: the model runs: name -> PopulationEnv keyword arguments.
ENV_CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "T5": {"validity": 5, "alpha": 2.0, "tau": 0.5},
}

# test tags, not parameters of the case: an optional dependency, the slow tier, and a
# float tolerance (rtol, atol) looser than compare's for a case that trains a model as it runs
_TAGS = ("needs", "slow", "tol")
TABLES = ("ticks", "candidates")


def case_id(case: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in case.items() if k not in _TAGS)


def slug(key: str) -> str:
    """A file name for ``key`` (a case id): readable, with a digest against collisions."""
    readable = re.sub(r"[^A-Za-z0-9.]+", "-", key.replace("scenario=", "").replace("policy=", ""))
    return f"{readable[:60].strip('-')}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def reference_paths(key: str) -> dict[str, Path]:
    """The reference Parquet file of each table of ``key`` (a case id or :func:`env_key`)."""
    tables = ("trace",) if key.startswith("env=") else TABLES
    return {t: REFERENCE / f"{slug(key)}.{t}.parquet" for t in tables}


def fingerprint(df: pd.DataFrame) -> str:
    """SHA-256 of ``df`` as CSV with exact float text (repr) and its dtypes."""
    buf = io.StringIO()
    buf.write(",".join(f"{c}:{t}" for c, t in df.dtypes.astype(str).items()) + "\n")
    df.to_csv(buf, index=False, float_format=None)
    return hashlib.sha256(buf.getvalue().encode()).hexdigest()


def bitwise(expected: dict[str, Any], summary: dict, tables: dict[str, pd.DataFrame]) -> bool:
    """Whether a run's summary and tables are its reference's bit for bit (``expected``:
    its entry of golden.json)."""
    return summary == expected["summary"] and all(
        fingerprint(df) == expected[name] for name, df in tables.items()
    )


def json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if hasattr(value, "item"):
        return json_safe(value.item())
    return value


def run_case(case: dict[str, Any]) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """(summary, {"ticks": ..., "candidates": ...}) of one case (imports the model lazily)."""
    from abm import RecourseModel

    kwargs = {k: v for k, v in case.items() if k not in ("scenario", "policy", "seed", *_TAGS)}
    model = RecourseModel(
        case["scenario"], case["policy"], seed=case["seed"], agents=False, **kwargs
    )
    model.run()
    summary = json_safe(model.summary())
    summary.pop("policy", None)  # the display name may change with the registry; results may not
    return summary, {"ticks": model.tick_table(), "candidates": model.candidate_table()}


def run_env(kwargs: dict[str, Any]) -> pd.DataFrame:
    """The trace of two PopulationEnv episodes on ``paper`` (sinusoidal actions, reset seed 7).

    One row per observation: episode, seed, step (-1 for the reset), reward, ticks, rr, rf,
    goal (NaN where undefined), then obs_0 ... obs_{o-1} (float32).
    """
    from lab.envs import PopulationEnv

    env = PopulationEnv("paper", **kwargs)
    rows: list[dict[str, Any]] = []
    observations: list[np.ndarray] = []
    for episode in range(2):
        obs, info = env.reset(seed=7) if episode == 0 else env.reset()
        seed = info["seed"]
        rows.append(
            dict(
                episode=episode,
                seed=seed,
                step=-1,
                reward=np.nan,
                ticks=0,
                rr=np.nan,
                rf=np.nan,
                goal=np.nan,
            )
        )
        observations.append(obs)
        for i in range(200):
            action = np.array([np.sin(0.7 * i + episode)], dtype=np.float32)
            obs, reward, terminated, truncated, info = env.step(action)
            if truncated:
                raise RuntimeError("PopulationEnv truncated an episode of the golden trace")
            rows.append(
                dict(
                    episode=episode,
                    seed=seed,
                    step=i,
                    reward=float(reward),
                    ticks=int(info["ticks"]),
                    rr=_num(info.get("rr")),
                    rf=_num(info.get("rf")),
                    goal=_num(info["goal"]),
                )
            )
            observations.append(obs)
            if terminated:
                break
    ints = {c: np.int64 for c in ("episode", "seed", "step", "ticks")}
    df = pd.DataFrame(rows).astype(ints)
    obs_all = np.stack(observations).astype(np.float32)
    return pd.concat(
        [df, pd.DataFrame({f"obs_{j}": obs_all[:, j] for j in range(obs_all.shape[1])})], axis=1
    )


def _num(value: Any) -> float:
    return np.nan if value is None else float(value)


def env_key(name: str) -> str:
    return f"env={name}"


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def load_golden() -> dict[str, Any]:
    return json.loads(GOLDEN_FILE.read_text())


def read_reference(key: str) -> dict[str, pd.DataFrame]:
    """The stored tables of ``key`` (a case id or :func:`env_key`), as they were written."""
    return {name: pd.read_parquet(path) for name, path in reference_paths(key).items()}


def write_reference(key: str, tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    """Write ``tables`` as the reference of ``key``; returns their fingerprints.

    Raises if a table does not read back to the same fingerprint (Parquet must keep every
    dtype and every bit).
    """
    REFERENCE.mkdir(exist_ok=True)
    paths = reference_paths(key)
    out = {}
    for name, df in tables.items():
        df.to_parquet(paths[name], index=False, compression="zstd", compression_level=19)
        out[name] = fingerprint(df)
        if fingerprint(pd.read_parquet(paths[name])) != out[name]:
            raise RuntimeError(f"{paths[name].name} does not read back bit for bit")
    return out
