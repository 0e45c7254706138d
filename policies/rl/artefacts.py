"""Trained artefacts: a directory with ``model.zip`` (stable-baselines3 SAC) and ``manifest.json``.

SB3 zips contain pickles: loading one can run arbitrary code. Load only artefacts from
sources you trust. The manifest check below catches mix-ups and corruption (wrong kind,
wrong feature count, a zip that is not the one the manifest describes), not malice.
"""

from __future__ import annotations

import hashlib
import json
import platform
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

KINDS = ("recommender", "predictor")
FORMAT = 1
MODEL_FILE = "model.zip"
MANIFEST_FILE = "manifest.json"


class ArtefactError(ValueError):
    """A path that is not the expected trained artefact; the message says why."""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def versions() -> dict[str, str]:
    """Versions of the packages a trained artefact depends on."""
    out = {"python": platform.python_version()}
    for dist in ("recourse-abm", "numpy", "torch", "stable-baselines3", "gymnasium", "cloudpickle"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def write_manifest(directory: Path, manifest: dict[str, Any]) -> Path:
    """Complete ``manifest`` (format, model hash, versions) and write it next to model.zip."""
    directory = Path(directory)
    if manifest.get("kind") not in KINDS:
        raise ArtefactError(
            f"manifest kind must be one of {', '.join(KINDS)}, got {manifest.get('kind')!r}"
        )
    full = {"format": FORMAT, **manifest, "model_sha256": sha256(directory / MODEL_FILE),
            "versions": versions()}  # fmt: skip
    path = directory / MANIFEST_FILE
    path.write_text(json.dumps(full, indent=2, default=_json_default))
    return path


def read_manifest(path: str | Path, kind: str, n_features: int | None = None,
                  obs_dim: int | None = None) -> dict[str, Any]:  # fmt: skip
    """The validated manifest of the artefact directory ``path`` (or its model.zip).

    Raises :class:`ArtefactError` (a ValueError) when the manifest is missing or invalid,
    is of another kind, or does not fit ``n_features`` / ``obs_dim``, or when model.zip
    is missing or differs from the file the manifest was written for.
    """
    directory = _directory(path)
    mpath = directory / MANIFEST_FILE
    if not mpath.is_file():
        raise ArtefactError(f"{directory} is not a trained artefact: {MANIFEST_FILE} is missing")
    try:
        manifest = json.loads(mpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtefactError(f"{mpath} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtefactError(f"{mpath}: unsupported manifest (format must be {FORMAT})")
    if manifest.get("kind") != kind:
        raise ArtefactError(
            f"{directory} holds a {manifest.get('kind')!r} artefact; expected {kind!r}"
        )
    for key, want in (("n_features", n_features), ("obs_dim", obs_dim)):
        if want is not None and manifest.get(key) != want:
            raise ArtefactError(f"{directory}: {key} is {manifest.get(key)!r} in the manifest; "
                                f"this scenario needs {want}")  # fmt: skip
    zpath = directory / MODEL_FILE
    if not zpath.is_file():
        raise ArtefactError(f"{directory}: {MODEL_FILE} is missing")
    if sha256(zpath) != manifest.get("model_sha256"):
        raise ArtefactError(
            f"{zpath} does not match its manifest (sha256 differs): refusing to load it"
        )
    return manifest


def load_sac(
    path: str | Path, kind: str, n_features: int | None = None, obs_dim: int | None = None
):
    """(manifest, SAC model on CPU) of a validated artefact; cached per file content."""
    manifest = read_manifest(path, kind, n_features, obs_dim)
    return manifest, _load_sac(str(_directory(path) / MODEL_FILE), manifest["model_sha256"])


@lru_cache(maxsize=32)
def _load_sac(zip_path: str, digest: str):
    # keyed on the content hash: a retrained artefact at the same path is reloaded
    from stable_baselines3 import SAC

    model = SAC.load(zip_path, device="cpu")
    model.policy.set_training_mode(False)
    return model


def _directory(path: str | Path) -> Path:
    p = Path(path)
    if p.name == MODEL_FILE or p.name == MANIFEST_FILE:
        p = p.parent
    if not p.exists():
        raise FileNotFoundError(
            f"no trained artefact at {p} (train one with `recourse-abm train ...`)"
        )
    if not p.is_dir():
        raise ArtefactError(
            f"{p} is not an artefact directory (expected {MODEL_FILE} + {MANIFEST_FILE})"
        )
    return p


def _json_default(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | set):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
