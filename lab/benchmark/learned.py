"""Learned entries: a policy that loads a trained predictor μ, trained by the protocol.

A hybrid of durable-recourse-rl §4 (``hybrid-<recommender>``: a learned μ beside a
baseline recommender) serves only the world it was trained for, so the protocol trains it
before it runs (:class:`lab.benchmark.protocol.Training`): in each preset, one μ per
training seed, with the entry's own recommender inside, its episodes rotating over
training worlds that are none of the evaluation worlds. Each seed's μ then runs the
protocol's worlds and paired episodes like any entry (one run id each); the entry's value
in a run is the mean over its training seeds (:func:`seed_means`), which the card and the
fronts judge as they judge every entry. The card keeps every seed's runs and artefact
hashes, and each seed's front verdicts beside the mean's (docs/benchmark.md).

Artefacts go to ``ROOT/<version>/<entry>/<preset>/seed-<s>`` (resumable: a finished one is
kept, a cut one resumes from its checkpoint); the runs name that directory, so the run ids
are the same wherever the command runs from the project's root.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from abm.registry import Part, parse_spec
from abm.validation import ConfigError
from lab.benchmark.protocol import Protocol

#: where trained predictors are kept (relative: the runs name it, and so their ids)
DEFAULT_ARTEFACTS = Path("results/benchmark/artefacts")
#: the recipe's fields a finished artefact's manifest must show (changed inputs are refused)
_RECIPE = ("alpha", "tau", "seed", "steps", "worlds", "recommender")
#: ticks of the short training :func:`training_seconds` times
TRIAL_STEPS = 100


def slug(text: str) -> str:
    """``text`` as one safe path component."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def trained_with(spec: str) -> str | None:
    """The recommender spec a learned entry's μ is trained with (the hybrid's own, with
    its parameters), or None: ``spec`` is no entry the protocol trains (not a
    ``hybrid-*``, or it names its own ``path``)."""
    from policies.rl import HYBRID_RECOMMENDERS

    parts = parse_spec(spec)
    if len(parts) != 1 or "path" in parts[0].params:
        return None
    name, params = parts[0].name, parts[0].params
    recommender = name.removeprefix("hybrid-")
    if recommender == name or recommender not in HYBRID_RECOMMENDERS:
        return None
    return str(Part(recommender, {k: v for k, v in params.items() if k != "allow_mismatch"}))


def probe(spec: str) -> str:
    """A policy that can run wherever ``spec`` can, before anything is trained: a learned
    entry's recommender after the last threshold; any other entry itself."""
    recommender = trained_with(spec)
    return spec if recommender is None else f"last-threshold+{recommender}"


def artefact_dir(root: str | Path, proto: Protocol, spec: str, preset: str, seed: int) -> Path:
    """Where ``spec``'s μ of ``preset`` and training ``seed`` is kept under ``root``."""
    return Path(root) / slug(proto.version) / slug(spec) / preset / f"seed-{seed}"


def variants(spec: str, proto: Protocol, preset: str, root: str | Path) -> dict[str, int]:
    """The specs ``spec``'s runs in ``preset`` are made with -> their training seed: one
    per seed of the recipe, each loading its μ; ``{spec: -1}`` for an entry not learned."""
    if trained_with(spec) is None or proto.training is None:
        return {spec: -1}
    sep = "," if ":" in spec else ":"
    return {
        f"{spec}{sep}path={artefact_dir(root, proto, spec, preset, s).as_posix()}": s
        for s in proto.training.seeds
    }


def _recipe(spec: str, proto: Protocol) -> dict[str, Any]:
    """:func:`lab.training.train_predictor`'s keywords of the protocol's recipe for the
    learned entry ``spec`` (its seed, steps and preset apart); ValueError for another."""
    recommender = trained_with(spec)
    if recommender is None or proto.training is None:
        raise ValueError(f"{spec} is not an entry the protocol trains")
    recipe = proto.training
    return {
        "alpha": recipe.alpha,
        "tau": recipe.tau,
        "recommender": recommender,
        "worlds": recipe.worlds,
        **dict(proto.settings),
    }


def _train_one(task: dict[str, Any]) -> dict[str, Any]:
    """One μ of the recipe (a worker's task); resumes from its checkpoint."""
    from lab.training import train_predictor
    from policies.rl.learned import torch_threads

    with torch_threads(1):  # a worker per core: one thread each
        return train_predictor(task.pop("out"), task.pop("preset"), resume=True, **task)


def finished(out: Path, task: dict[str, Any]) -> bool:
    """Whether ``out`` holds the μ ``task`` asks for (a finished one of other settings is a
    ConfigError: its inputs changed)."""
    path = out / "manifest.json"
    if not path.is_file():
        return False
    manifest = json.loads(path.read_text())
    want = {**{k: task[k] for k in _RECIPE}, "worlds": list(task["worlds"])}
    got = {k: manifest.get(k) for k in _RECIPE}
    if got != want:
        raise ConfigError(
            f"artefact = {str(out)!r} was trained with {got}, not the protocol's {want}: "
            "move it away to train it again"
        )
    return True


def train(
    spec: str,
    proto: Protocol,
    presets: Iterable[str],
    root: str | Path = DEFAULT_ARTEFACTS,
    *,
    workers: int = 2,
    log: Callable[[str], None] = print,
) -> dict[tuple[str, int], Path]:
    """Train ``spec``'s μ in each of ``presets`` with each training seed of the protocol's
    recipe (those already trained are kept; a cut one resumes), ``workers`` processes at
    once. Returns (preset, seed) -> the artefact's directory."""
    kwargs = _recipe(spec, proto)
    recipe = proto.training
    out, todo = {}, {}
    for preset in presets:
        for seed in recipe.seeds:
            where = artefact_dir(root, proto, spec, preset, seed)
            task = {"out": where, "preset": preset, **kwargs, "seed": seed, "steps": recipe.steps}
            out[(preset, seed)] = where
            if not finished(where, task):
                todo[(preset, seed)] = task
    if todo:
        log(
            f"training {len(todo)} predictors of {recipe.steps} ticks ({spec}: "
            f"{kwargs['recommender']} inside, worlds {list(recipe.worlds)})"
        )
    with cf.ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo) or 1))) as pool:
        jobs = {pool.submit(_train_one, dict(task)): key for key, task in todo.items()}
        for job in cf.as_completed(jobs):
            job.result()
            preset, seed = jobs[job]
            log(f"trained {spec} in {preset}, seed {seed}")
    return out


def training_seconds(spec: str, proto: Protocol, preset: str, root: str | Path) -> float:
    """About how long ``spec``'s predictors of ``preset`` not yet trained under ``root``
    take here with one worker: a short training (:data:`TRIAL_STEPS` ticks, SAC updating
    from the first) times the recipe's steps. 0 for an entry not learned."""
    import tempfile
    import time

    from lab.training import PREDICTOR_SAC, train_predictor

    if trained_with(spec) is None or proto.training is None:
        return 0.0
    recipe = proto.training
    left = [
        s
        for s in recipe.seeds
        if not (artefact_dir(root, proto, spec, preset, s) / "manifest.json").is_file()
    ]
    if not left:
        return 0.0
    from policies.rl.learned import torch_threads

    with tempfile.TemporaryDirectory() as tmp, torch_threads(1):
        start = time.process_time()
        train_predictor(
            tmp,
            preset,
            **{**_recipe(spec, proto), "worlds": recipe.worlds[:1]},
            steps=TRIAL_STEPS,
            sac=PREDICTOR_SAC.replace(learning_starts=0),
            checkpoint_every=10**6,
        )
        per_step = (time.process_time() - start) / TRIAL_STEPS
    return per_step * recipe.steps * len(left)


def provenance(spec: str, proto: Protocol, presets: Iterable[str], root: str | Path) -> list[dict]:
    """Each trained μ of ``spec``: preset, seed, directory and weights hash (for the card)."""
    rows = []
    for preset in presets:
        for seed in proto.training.seeds if proto.training else ():
            where = artefact_dir(root, proto, spec, preset, seed)
            manifest = json.loads((where / "manifest.json").read_text())
            rows.append(
                {
                    "preset": preset,
                    "training_seed": seed,
                    "path": where.as_posix(),
                    "weights_sha256": manifest["weights_sha256"],
                }
            )
    return rows


def as_entry(runs: pd.DataFrame, spec: str, named: dict[str, int]) -> pd.DataFrame:
    """``runs`` with the rows of ``named`` (a variant spec -> its training seed) renamed to
    the entry ``spec``, their seed in ``training_seed`` (-1 on every other row)."""
    seed = runs["policy"].map(named)
    runs = runs.assign(training_seed=seed.fillna(-1).astype(int))
    return runs.assign(policy=runs["policy"].where(seed.isna(), spec))


def seed_means(runs: pd.DataFrame, policy: str) -> pd.DataFrame:
    """``runs`` with ``policy``'s rows of its training seeds (``training_seed`` >= 0)
    replaced by their mean in each (preset, world, episode): the learned entry's value in
    that run. Unchanged for an entry not learned."""
    if "training_seed" not in runs or not (runs["training_seed"] >= 0).any():
        return runs
    learned = (runs["policy"] == policy) & (runs["training_seed"] >= 0)
    part = runs[learned]
    keys = ["preset", "policy", "world_seed", "seed"]
    numeric = [c for c in part.select_dtypes("number").columns if c not in keys]
    means = part.groupby(keys, sort=False)[numeric].mean().reset_index()
    means = means.assign(training_seed=-1, run_id=means["preset"] + "/seed-mean")
    return pd.concat([means, runs[~learned]], ignore_index=True)
