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
import inspect
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from abm.registry import Part, parse_spec
from abm.validation import ConfigError
from lab.benchmark.protocol import RECIPE_FIELDS, Protocol

#: where trained predictors are kept (relative: the runs name it, and so their ids)
DEFAULT_ARTEFACTS = Path("results/benchmark/artefacts")
#: the learned entries with φ (durable-recourse-rl §4): each trains φ, then μ with φ inside
#: (none for rl-recommender, which keeps the last threshold)
PHI_ENTRIES = ("rl", "rl-recommender", "rl-constrained")
#: ticks of the short μ training :func:`training_seconds` times, and φ's episodes
TRIAL_STEPS = 100
TRIAL_EPISODES = 200
#: a φ's learning curve has a row an episode (20,000, about 2 MB): what ships beside it is
#: its means over blocks of this many episodes (:func:`curve_blocks`); the full curve
#: stays where it was trained (it is not an input of any run)
CURVE_BLOCK = 100
BLOCKS_FILE = "learning_curve_blocks.csv"


@dataclass(frozen=True)
class Plan:
    """What the recipe trains for one learned entry: ``kind`` (a key of
    :data:`lab.benchmark.protocol.RECIPE_FIELDS`), μ's recommender spec for a hybrid (None:
    φ's, trained first), and the RR target of ``rl-constrained``."""

    kind: str
    recommender: str | None = None
    target: float | None = None

    @property
    def phi(self) -> bool:
        return self.kind != "hybrid"

    @property
    def mu(self) -> bool:
        return self.kind != "rl-recommender"

    @property
    def fields(self) -> tuple[str, ...]:
        """The recipe's fields this entry's runs depend on."""
        return RECIPE_FIELDS[self.kind]


def slug(text: str) -> str:
    """``text`` as one safe path component."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def plan(spec: str) -> Plan | None:
    """What the protocol trains for ``spec``, or None: no entry it trains (not a
    ``hybrid-*`` nor a φ entry, or it names its own ``path`` or ``recommender``)."""
    from policies.rl import HYBRID_RECOMMENDERS
    from policies.rl.learned import ConstrainedPolicy

    parts = parse_spec(spec)
    if len(parts) != 1 or {"path", "recommender"} & set(parts[0].params):
        return None
    name, params = parts[0].name, dict(parts[0].params)
    params.pop("allow_mismatch", None)
    if name == "rl-constrained":  # its μ is trained for the entry's RR target
        default = inspect.signature(ConstrainedPolicy).parameters["target"].default
        return Plan(name, None, float(params.get("target", default)))
    if name in PHI_ENTRIES:
        return Plan(name)
    recommender = name.removeprefix("hybrid-")
    if recommender == name or recommender not in HYBRID_RECOMMENDERS:
        return None
    return Plan("hybrid", str(Part(recommender, params)))


def probe(spec: str) -> str:
    """A policy that can run wherever ``spec`` can, before anything is trained: a learned
    entry's recommender after the last threshold (exact-linear for φ, which serves any
    world with a decision score); any other entry itself."""
    made = plan(spec)
    if made is None:
        return spec
    return f"last-threshold+{made.recommender or 'exact-linear'}"


def _home(proto: Protocol, fields: Iterable[str]) -> str:
    """The first version whose recipe fixed ``fields`` as ``proto`` does: artefacts are kept
    under it, so a later version that changes other fields names the same ones (and its
    runs keep their ids). ``proto``'s own version for a recipe no version fixed."""
    from lab.benchmark.protocol import VERSIONS, past

    mine = proto.training
    for version in VERSIONS:
        try:
            old = past(version, proto.tier).training
        except ValueError:
            continue
        if old is not None and all(getattr(old, f) == getattr(mine, f) for f in fields):
            return version
    return proto.version


def artefact_dir(root: str | Path, proto: Protocol, spec: str, preset: str, seed: int) -> Path:
    """Where ``spec``'s μ of ``preset`` and training ``seed`` is kept under ``root`` (φ's,
    for ``rl-recommender``: :func:`phi_dir`)."""
    made = plan(spec)
    if made is not None and not made.mu:
        return phi_dir(root, proto, preset, seed)
    fields = made.fields if made is not None else ()
    return Path(root) / slug(_home(proto, fields)) / slug(spec) / preset / f"seed-{seed}"


def phi_dir(root: str | Path, proto: Protocol, preset: str, seed: int) -> Path:
    """Where φ of ``preset`` and training ``seed`` is kept: one for every φ entry (the
    same recipe trains the same bytes)."""
    home = _home(proto, ("worlds", "phi_episodes"))
    return Path(root) / slug(home) / "phi" / preset / f"seed-{seed}"


def variants(spec: str, proto: Protocol, preset: str, root: str | Path) -> dict[str, int]:
    """The specs ``spec``'s runs in ``preset`` are made with -> their training seed: one
    per seed of the recipe, each loading its artefacts; ``{spec: -1}`` for an entry not
    learned."""
    made = plan(spec)
    if made is None or proto.training is None:
        return {spec: -1}
    sep = "," if ":" in spec else ":"
    out = {}
    for s in proto.training.seeds:
        where = artefact_dir(root, proto, spec, preset, s).as_posix()
        named = f"path={where}"
        if made.phi and made.mu:
            named += f",recommender={phi_dir(root, proto, preset, s).as_posix()}"
        out[f"{spec}{sep}{named}"] = s
    return out


def tasks(spec: str, proto: Protocol, preset: str, seed: int, root: str | Path) -> list[dict]:
    """The trainings of ``spec``'s artefacts of ``preset`` and ``seed``, in order (φ first):
    each a dict of ``kind`` (recommender, predictor, constrained), ``out``, ``preset`` and
    the training function's keywords."""
    made = plan(spec)
    recipe = proto.training
    if made is None or recipe is None:
        raise ValueError(f"{spec} is not an entry the protocol trains")
    common = {"preset": preset, "seed": seed, "worlds": recipe.worlds, **dict(proto.settings)}
    out = []
    if made.phi:
        phi = phi_dir(root, proto, preset, seed)
        out.append({"kind": "recommender", "out": phi, **common, "episodes": recipe.phi_episodes})
    if made.mu:
        where = artefact_dir(root, proto, spec, preset, seed)
        rec = made.recommender or f"rl:path={phi.as_posix()}"
        mu = {**common, "out": where, "recommender": rec, "steps": recipe.steps}
        if made.kind == "rl-constrained":
            out.append({"kind": "constrained", **mu, "target": made.target})
        else:
            out.append({"kind": "predictor", **mu, "alpha": recipe.alpha, "tau": recipe.tau})
    return out


#: what a finished artefact's manifest must show of its task, by kind (changed inputs are
#: refused, not overwritten)
_CHECKED = {
    "recommender": ("seed", "worlds", "episodes"),
    "predictor": ("alpha", "tau", "seed", "steps", "worlds", "recommender"),
    "constrained": ("rr_target", "seed", "steps", "worlds", "recommender"),
}


def _seen(kind: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The fields :data:`_CHECKED` of ``kind`` as a finished ``manifest`` records them."""
    flat = {**manifest, "episodes": manifest.get("env", {}).get("episodes")}
    return {k: flat.get(k) for k in _CHECKED[kind]}


def _asked(task: dict[str, Any]) -> dict[str, Any]:
    flat = {**task, "worlds": list(task["worlds"]), "rr_target": task.get("target")}
    return {k: flat[k] for k in _CHECKED[task["kind"]]}


def finished(task: dict[str, Any]) -> bool:
    """Whether ``task["out"]`` holds the artefact ``task`` asks for (a finished one of
    other settings is a ConfigError: its inputs changed)."""
    out = Path(task["out"])
    path = out / "manifest.json"
    if not path.is_file():
        return False
    got, want = _seen(task["kind"], json.loads(path.read_text())), _asked(task)
    if got != want:
        raise ConfigError(
            f"artefact = {str(out)!r} was trained with {got}, not the protocol's {want}: "
            "move it away to train it again"
        )
    return True


def _train_one(task: dict[str, Any]) -> dict[str, Any]:
    """One artefact of the recipe (a worker's task); resumes from its checkpoint."""
    from lab import training
    from policies.rl.learned import torch_threads

    task = dict(task)
    kind, out, preset = task.pop("kind"), task.pop("out"), task.pop("preset")
    train = {
        "recommender": training.train_recommender,
        "predictor": training.train_predictor,
        "constrained": training.train_constrained_predictor,
    }[kind]
    with torch_threads(1):  # a worker per core: one thread each
        return train(out, preset, resume=True, **task)


def train(
    spec: str,
    proto: Protocol,
    presets: Iterable[str],
    root: str | Path = DEFAULT_ARTEFACTS,
    *,
    workers: int = 2,
    log: Callable[[str], None] = print,
) -> dict[tuple[str, int], Path]:
    """Train ``spec``'s artefacts in each of ``presets`` with each training seed of the
    protocol's recipe (those already trained are kept; a cut one resumes), ``workers``
    processes at once; a μ with φ inside starts once its φ is done. Returns (preset, seed)
    -> the directory the entry's runs name as ``path``."""
    recipe = proto.training
    out, chains, phis = {}, [], []
    for preset in presets:
        for seed in recipe.seeds:
            out[(preset, seed)] = artefact_dir(root, proto, spec, preset, seed)
            todo = tasks(spec, proto, preset, seed, root)
            phis += [t["out"] for t in todo if t["kind"] == "recommender"]
            chain = [t for t in todo if not finished(t)]
            if chain:
                chains.append(chain)
    if chains:
        count = sum(len(c) for c in chains)
        log(
            f"training {count} artefacts for {spec} (phi: {recipe.phi_episodes} episodes, "
            f"mu: {recipe.steps} ticks; worlds {list(recipe.worlds)})"
        )
    with cf.ProcessPoolExecutor(max_workers=max(1, min(workers, len(chains) or 1))) as pool:
        jobs = {pool.submit(_train_one, chain[0]): (chain, 0) for chain in chains}
        while jobs:
            done, _ = cf.wait(jobs, return_when=cf.FIRST_COMPLETED)
            for job in done:
                chain, i = jobs.pop(job)
                job.result()
                task = chain[i]
                log(f"trained {task['kind']} of {spec} in {task['preset']}, seed {task['seed']}")
                if i + 1 < len(chain):  # the μ that needs this φ
                    jobs[pool.submit(_train_one, chain[i + 1])] = (chain, i + 1)
    for phi in phis:  # what ships of each φ's curve (trained now or before)
        curve_blocks(phi)
    return out


def curve_blocks(out: str | Path, block: int = CURVE_BLOCK) -> Path:
    """``out``'s learning curve as means over blocks of ``block`` episodes, written to
    ``out/BLOCKS_FILE`` (once): a row a block, ``episode`` and ``timesteps`` at its last
    episode, every other column its mean."""
    out = Path(out)
    path = out / BLOCKS_FILE
    if not path.is_file():
        curve = pd.read_csv(out / "learning_curve.csv")
        group = (curve["episode"] - 1) // block
        means = curve.groupby(group).mean()
        last = curve.groupby(group)[["episode", "timesteps"]].max()
        means[["episode", "timesteps"]] = last
        means.insert(2, "episodes", curve.groupby(group).size())
        means.to_csv(path, index=False)
    return path


def training_seconds(spec: str, proto: Protocol, preset: str, root: str | Path) -> float:
    """About how long ``spec``'s artefacts of ``preset`` not yet trained under ``root``
    take here with one worker: each kind's marginal cost, the difference between short
    trainings of n and 2n (φ :data:`TRIAL_EPISODES` episodes, μ :data:`TRIAL_STEPS` ticks;
    SAC updating from the first, a trial φ inside μ) over n, times the recipe's budget, so
    what a training pays once (imports, worlds) is not multiplied. 0 for an entry not
    learned."""
    import tempfile
    import time

    from lab.training import PREDICTOR_SAC, RECOMMENDER_SAC
    from policies.rl.learned import torch_threads

    if plan(spec) is None or proto.training is None:
        return 0.0
    recipe = proto.training
    left = [
        t
        for s in recipe.seeds
        for t in tasks(spec, proto, preset, s, root)
        if not (Path(t["out"]) / "manifest.json").is_file()
    ]
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp, torch_threads(1):
        # μ's trials advise with the longer φ trial (with the trained φ once there is one)
        trial_phi = Path(tmp) / "recommender-2"
        for kind in dict.fromkeys(t["kind"] for t in left):
            task = {**next(t for t in left if t["kind"] == kind), "worlds": recipe.worlds[:1]}
            task["checkpoint_every"] = 10**6
            if kind == "recommender":
                unit, n, budget = "episodes", TRIAL_EPISODES, recipe.phi_episodes
                task["sac"] = RECOMMENDER_SAC.replace(learning_starts=0)
            else:
                unit, n, budget = "steps", TRIAL_STEPS, recipe.steps
                task["sac"] = PREDICTOR_SAC.replace(learning_starts=0)
                if task["recommender"].startswith("rl:") and trial_phi.is_dir():
                    task["recommender"] = f"rl:path={trial_phi.as_posix()}"
            took = []
            for times in (0, 1, 2):  # the first, of one unit, pays the imports untimed
                start = time.process_time()
                _train_one({**task, "out": Path(tmp) / f"{kind}-{times}", unit: times * n or 1})
                took.append(time.process_time() - start)
            per = max(took[2] - took[1], 0.0) / n
            total += per * budget * sum(t["kind"] == kind for t in left)
    return total


def provenance(spec: str, proto: Protocol, presets: Iterable[str], root: str | Path) -> list[dict]:
    """Each trained artefact of ``spec`` (φ and μ): preset, seed, kind, directory and
    weights hash (for the card)."""
    rows = []
    for preset in presets:
        for seed in proto.training.seeds if proto.training else ():
            for task in tasks(spec, proto, preset, seed, root):
                manifest = json.loads((Path(task["out"]) / "manifest.json").read_text())
                rows.append(
                    {
                        "preset": preset,
                        "training_seed": seed,
                        "kind": manifest["kind"],
                        "path": Path(task["out"]).as_posix(),
                        "weights_sha256": manifest["weights_sha256"],
                    }
                )
    return rows


def as_entry(runs: pd.DataFrame, spec: str, named: dict[str, int]) -> pd.DataFrame:
    """``runs`` with the rows of ``named`` (a variant spec -> its training seed) renamed to
    the entry ``spec``, their seed in ``training_seed`` (-1 on every other row not already
    another learned entry's: several entries of one pass keep their seeds)."""
    seed = runs["policy"].map(named)
    before = runs["training_seed"] if "training_seed" in runs else -1
    runs = runs.assign(training_seed=seed.fillna(before).astype(int))
    return runs.assign(policy=runs["policy"].where(seed.isna(), spec))


def seed_means(runs: pd.DataFrame, policy: str) -> pd.DataFrame:
    """``runs`` with ``policy``'s rows of its training seeds (``training_seed`` >= 0)
    replaced by their mean in each (preset, world, episode): the learned entry's value in
    that run. Unchanged for an entry not learned."""
    if "training_seed" not in runs or not (runs["training_seed"] >= 0).any():
        return runs
    learned = (runs["policy"] == policy) & (runs["training_seed"] >= 0)
    # the seeds in their order, whatever the rows' (a mean's bits depend on the order it
    # adds in: a card judged again from its stored runs must give the same bits)
    part = runs[learned].sort_values("training_seed", kind="stable")
    keys = ["preset", "policy", "world_seed", "seed"]
    numeric = [c for c in part.select_dtypes("number").columns if c not in keys]
    means = part.groupby(keys, sort=False)[numeric].mean().reset_index()
    means = means.assign(training_seed=-1, run_id=means["preset"] + "/seed-mean")
    return pd.concat([means, runs[~learned]], ignore_index=True)
