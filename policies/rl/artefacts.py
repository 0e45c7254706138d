"""Trained artefacts in a code-free format: ``actor.safetensors`` + ``manifest.json``.

An artefact directory holds the SAC actor's weights as safetensors (named float tensors and
a JSON header: reading them runs no stored code) and ``manifest.json``: what was trained
(kind, scenario, training settings), the actor's architecture (``policy``: observation and
action boxes, hidden layers, activation) and the weights' SHA-256. Loading builds
stable-baselines3's SAC :class:`~stable_baselines3.sac.policies.Actor` from the manifest's
``policy`` and fills it from the weights: the only code that runs is this package's and
SB3's. Critics, optimisers and the replay buffer are not part of an artefact (acting needs
the actor only); training checkpoints keep them (:mod:`lab.training`).

Format 1 (an SB3 ``model.zip``, which holds pickles) is refused; ``scripts/convert_artefacts.py``
converts such a directory once, from a source you trust.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from abm.provenance import file_sha256, write_json
from abm.provenance import versions as provenance_versions
from abm.validation import ConfigError, one_line, optional_import

KINDS = ("recommender", "predictor")
FORMAT = 2
WEIGHTS_FILE = "actor.safetensors"
MANIFEST_FILE = "manifest.json"
# torch.nn activation classes an actor may use, by name (nothing else is looked up)
ACTIVATIONS = ("ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU")


class ArtefactError(ConfigError):
    """A path that is not the expected trained artefact, or one trained for another world;
    the message says why (a bad input: the command line exits 2 with it)."""


class BoxSpec(BaseModel):
    """A float32 gymnasium Box, element-wise bounds (shape (n,))."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    low: Annotated[list[float], Field(min_length=1, max_length=100_000)]
    high: Annotated[list[float], Field(min_length=1, max_length=100_000)]
    dtype: Literal["float32"] = "float32"

    @model_validator(mode="after")
    def _ordered(self) -> BoxSpec:
        if len(self.low) != len(self.high):
            raise ValueError(f"low has {len(self.low)} entries, high {len(self.high)}")
        if not all(
            math.isfinite(a) and math.isfinite(b) and a <= b
            for a, b in zip(self.low, self.high, strict=True)
        ):
            raise ValueError("bounds must be finite with low <= high")
        return self


class ActorSpec(BaseModel):
    """What rebuilds the SAC actor: spaces, hidden layers, activation (SB3's defaults otherwise)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    observation_space: BoxSpec
    action_space: BoxSpec
    net_arch: Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(max_length=8)]
    activation: Literal[ACTIVATIONS]  # type: ignore[valid-type]


def versions() -> dict[str, str]:
    """Versions of Python and the packages a trained artefact depends on."""
    return provenance_versions(extra=("stable-baselines3", "gymnasium", "safetensors"))


def actor_spec(actor) -> dict[str, Any]:
    """The manifest's ``policy`` entry for an SB3 SAC actor (``model.actor``)."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    if actor.use_sde or not isinstance(actor.features_extractor, FlattenExtractor):
        raise ArtefactError("only SAC actors with a flat observation and no gSDE can be saved")

    def box(space) -> dict[str, Any]:
        return {
            "low": space.low.ravel().tolist(),
            "high": space.high.ravel().tolist(),
            "dtype": str(space.dtype),
        }

    spec = {
        "observation_space": box(actor.observation_space),
        "action_space": box(actor.action_space),
        "net_arch": list(actor.net_arch),
        "activation": actor.activation_fn.__name__,
    }
    return ActorSpec(**spec).model_dump()


def save_actor(directory: str | Path, actor) -> dict[str, Any]:
    """Write the actor's weights to ``directory/actor.safetensors``; returns its ``policy`` spec."""
    from safetensors.torch import save_file

    spec = actor_spec(actor)
    tensors = {k: v.detach().cpu().contiguous() for k, v in actor.state_dict().items()}
    save_file(tensors, str(Path(directory) / WEIGHTS_FILE))
    return spec


def write_manifest(directory: str | Path, manifest: dict[str, Any]) -> Path:
    """Complete ``manifest`` (format, weights hash, versions unless given) and write it.

    ``manifest["policy"]`` must be the spec :func:`save_actor` returned for the weights
    already in ``directory``.
    """
    directory = Path(directory)
    if manifest.get("kind") not in KINDS:
        raise ArtefactError(
            f"manifest kind must be one of {', '.join(KINDS)}, got {manifest.get('kind')!r}"
        )
    ActorSpec(**manifest["policy"])
    # which scenario fields it was trained for (a phi serves every T: see DEPENDS_ON)
    full = {
        "format": FORMAT,
        **manifest,
        "depends_on": list(DEPENDS_ON[manifest["kind"]]),
        "weights_sha256": file_sha256(directory / WEIGHTS_FILE),
        "versions": manifest.get("versions") or versions(),
    }
    return write_json(directory / MANIFEST_FILE, full)


# Scenario fields an artefact depends on, per kind. The world (generator, data, decision
# model) and the behaviour of the changes it advises matter to both; the population's
# dynamics only to the predictor, which observes the pool. The recommender φ is trained
# on single candidates, so a φ trained at T = 1 serves T = 5 unchanged (not a mismatch).
# ``ticks`` is left out: shorter or longer episodes of the same world are fine.
WORLD_FIELDS = (
    "n_features",
    "mean_range",
    "std_range",
    "weight_range",
    "label_noise",
    "n_train",
    "decision_model",
    "immutable",
    "world_seed",
    "data",
    "beta",
    "difficulty",
)
# the capacity schedules are absent (None) from manifests written before them, as they
# are from a scenario without one
POPULATION_FIELDS = (
    "n_initial",
    "k",
    "m",
    "validity",
    "rho",
    "chi",
    "omega",
    "nu",
    "k_steps",
    "m_steps",
    "k_season",
    "m_season",
    "k_shocks",
    "m_shocks",
)
DEPENDS_ON = {"recommender": WORLD_FIELDS, "predictor": WORLD_FIELDS + POPULATION_FIELDS}


def mismatches(manifest: dict[str, Any], scenario: dict[str, Any]) -> list[str]:
    """``field: trained value -> this scenario's value`` for every field the artefact
    depends on (:data:`DEPENDS_ON`) that differs; [] when it fits ``scenario``."""
    trained = manifest.get("scenario", {})
    out = []
    for key in DEPENDS_ON[manifest["kind"]]:
        if key == "world_seed" and manifest.get("worlds"):
            continue  # trained across several worlds (issue 51): not fitted to one
        have, want = trained.get(key), scenario.get(key)
        if have != want:
            out.append(f"{key}: trained {have!r}, here {want!r}")
    return out


def provenance(path: str | Path, manifest: dict[str, Any], found: list[str]) -> dict[str, Any]:
    """What a result records about an artefact it used: where, which bytes, trained for what."""
    trained = manifest.get("scenario", {})
    return {
        "kind": manifest["kind"],
        "path": str(path),
        "weights_sha256": manifest.get("weights_sha256"),
        "trained_for": {k: trained.get(k) for k in DEPENDS_ON[manifest["kind"]]},
        "depends_on": list(DEPENDS_ON[manifest["kind"]]),
        "mismatch": found,
    }


def read_manifest(
    path: str | Path, kind: str, n_features: int | None = None, obs_dim: int | None = None
) -> dict[str, Any]:
    """The validated manifest of the artefact directory ``path`` (or a file in it).

    Raises :class:`ArtefactError` (a ValueError) when the manifest is missing, invalid or of
    format 1 (pickles), is of another kind, does not fit ``n_features`` / ``obs_dim``, or
    when the weights are missing or differ from the file the manifest was written for.
    """
    directory = _directory(path)
    manifest = _manifest(directory)
    if manifest.get("kind") != kind:
        raise ArtefactError(
            f"{directory} holds a {manifest.get('kind')!r} artefact; expected {kind!r}"
        )
    for key, want in (("n_features", n_features), ("obs_dim", obs_dim)):
        if want is not None and manifest.get(key) != want:
            raise ArtefactError(
                f"{directory}: {key} is {manifest.get(key)!r} in the manifest; "
                f"this scenario needs {want}"
            )
    _weights(directory, manifest)
    return manifest


def load_sac(
    path: str | Path, kind: str, n_features: int | None = None, obs_dim: int | None = None
):
    """(manifest, SB3 SAC actor on CPU) of a validated artefact; cached per weights hash.

    The actor has SB3's ``predict(obs, deterministic=True) -> (actions, None)``, the
    same call (and the same numbers) as a SAC model's.
    """
    manifest = read_manifest(path, kind, n_features, obs_dim)
    directory = _directory(path)
    return manifest, _load_actor(
        str(directory / WEIGHTS_FILE),
        manifest["weights_sha256"],
        json.dumps(manifest["policy"], sort_keys=True),
    )


@lru_cache(maxsize=64)
def _load_actor(weights_path: str, digest: str, spec_json: str):
    # keyed on the content hash: a retrained artefact at the same path is reloaded
    for module in ("torch", "safetensors", "stable_baselines3"):
        optional_import(module, "rl", "a learned (SAC) policy")
    from safetensors import SafetensorError
    from safetensors.torch import load as load_tensors

    data = Path(weights_path).read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:  # changed since read_manifest checked it
        raise ArtefactError(f"{weights_path} does not match its manifest (sha256 differs)")
    try:
        tensors = load_tensors(data)
    except (SafetensorError, ValueError, OSError) as exc:
        raise ArtefactError(f"{weights_path} is not a safetensors file: {exc}") from None
    actor = build_actor(ActorSpec(**json.loads(spec_json)))
    try:
        actor.load_state_dict(tensors, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        raise ArtefactError(
            f"{weights_path} does not fit the manifest's policy: "
            f"{' '.join(s.strip() for s in first[:3])}"
        ) from None
    actor.set_training_mode(False)
    for p in actor.parameters():
        p.requires_grad_(False)
    return actor


def build_actor(spec: ActorSpec):
    """An untrained SB3 SAC actor of ``spec``'s architecture (weights to be loaded).

    The initial weights are drawn inside a forked torch generator, so building one leaves
    torch's global random state as it was.
    """
    import numpy as np
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.torch_layers import FlattenExtractor
    from stable_baselines3.sac.policies import Actor

    def box(b: BoxSpec) -> spaces.Box:
        return spaces.Box(
            np.asarray(b.low, np.float32), np.asarray(b.high, np.float32), dtype=np.float32
        )

    obs_space, act_space = box(spec.observation_space), box(spec.action_space)
    with torch.random.fork_rng(devices=[]):
        extractor = FlattenExtractor(obs_space)
        return Actor(
            obs_space,
            act_space,
            net_arch=list(spec.net_arch),
            features_extractor=extractor,
            features_dim=extractor.features_dim,
            activation_fn=getattr(torch.nn, spec.activation),
        )


def _manifest(directory: Path) -> dict[str, Any]:
    mpath = directory / MANIFEST_FILE
    if not mpath.is_file():
        raise ArtefactError(f"{directory} is not a trained artefact: {MANIFEST_FILE} is missing")
    try:
        manifest = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtefactError(f"{mpath} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise ArtefactError(f"{mpath}: unsupported manifest (not a JSON object)")
    if manifest.get("format") == 1:
        raise ArtefactError(
            f"{directory} is a format-1 artefact (an SB3 model.zip, which holds "
            "pickles): convert it once, if you trust its source, with "
            "scripts/convert_artefacts.py"
        )
    if manifest.get("format") != FORMAT:
        raise ArtefactError(f"{mpath}: unsupported manifest (format must be {FORMAT})")
    try:
        ActorSpec(**manifest.get("policy", {}))
    except (ValidationError, TypeError) as exc:
        detail = one_line(exc, "policy") if isinstance(exc, ValidationError) else str(exc)
        raise ArtefactError(f"{mpath}: {detail}") from None
    return manifest


def _weights(directory: Path, manifest: dict[str, Any]) -> Path:
    wpath = directory / WEIGHTS_FILE
    if not wpath.is_file():
        raise ArtefactError(f"{directory}: {WEIGHTS_FILE} is missing")
    if file_sha256(wpath) != manifest.get("weights_sha256"):
        raise ArtefactError(
            f"{wpath} does not match its manifest (sha256 differs): refusing to load it"
        )
    return wpath


def _directory(path: str | Path) -> Path:
    p = Path(path)
    if p.suffix in (".safetensors", ".json", ".zip"):
        p = p.parent
    if not p.exists():
        raise FileNotFoundError(
            f"no trained artefact at {p} (train one with `recourse-abm train ...`)"
        )
    if not p.is_dir():
        raise ArtefactError(
            f"{p} is not an artefact directory (expected {WEIGHTS_FILE} + {MANIFEST_FILE})"
        )
    return p
