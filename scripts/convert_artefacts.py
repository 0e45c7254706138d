"""Convert format-1 artefacts (SB3 ``model.zip``) to the code-free format 2, once.

    python scripts/convert_artefacts.py results/pareto            # every artefact below
    python scripts/convert_artefacts.py DIR --keep-zip            # keep model.zip

A format-1 ``model.zip`` holds pickles: loading it runs whatever code it contains. Run this
only on artefacts from a source you trust (e.g. the ones this repository shipped). It
checks the zip against the manifest's ``model_sha256``, loads it with stable-baselines3,
writes the SAC actor as ``actor.safetensors`` (:mod:`policies.rl.artefacts`), checks that
the new artefact gives bitwise the same deterministic actions on 512 observations drawn
in the observation box, rewrites ``manifest.json`` as format 2 (the training record kept,
``converted`` added) and removes ``model.zip``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from abm.provenance import file_sha256  # noqa: E402
from policies.rl.artefacts import (  # noqa: E402
    MANIFEST_FILE,
    load_sac,
    save_actor,
    versions,
    write_manifest,
)

OLD_MODEL = "model.zip"


def convert(directory: Path, keep_zip: bool = False) -> str:
    """Convert one artefact directory; returns a one-line report."""
    from stable_baselines3 import SAC

    old = json.loads((directory / MANIFEST_FILE).read_text())
    zpath = directory / OLD_MODEL
    if old.get("format") != 1:
        return f"{directory}: format {old.get('format')}, nothing to do"
    digest = file_sha256(zpath)
    if digest != old.get("model_sha256"):
        raise SystemExit(f"{zpath} does not match its manifest (sha256 differs): not converted")
    model = SAC.load(zpath, device="cpu")
    spec = save_actor(directory, model.actor)
    manifest = {k: v for k, v in old.items() if k not in ("format", "model_sha256")}
    sac = dict(manifest.get("sac", {}))
    if sac.pop("extra", {}):
        raise SystemExit(f"{directory}: sac.extra is not empty; convert it by hand")
    manifest["sac"] = sac
    manifest["policy"] = spec
    manifest["converted"] = {
        "from": f"{OLD_MODEL} (stable-baselines3 zip, format 1)",
        "sha256": digest,
        "versions": versions(),
    }
    write_manifest(directory, manifest)  # keeps the training run's "versions"
    _, actor = load_sac(directory, old["kind"])
    space = model.observation_space
    obs = np.random.default_rng(0).uniform(space.low, space.high, (512, *space.shape))
    obs = obs.astype(np.float32)
    want, _ = model.predict(obs, deterministic=True)
    got, _ = actor.predict(obs, deterministic=True)
    if not np.array_equal(want, got):
        raise SystemExit(f"{directory}: converted actions differ from the zip's")
    if not keep_zip:
        zpath.unlink()
    return f"{directory}: converted, 512 actions identical"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "roots", nargs="+", type=Path, help="artefact directories or folders above them"
    )
    ap.add_argument("--keep-zip", action="store_true", help="keep model.zip after converting")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    found = sorted({p.parent for root in args.roots for p in root.rglob(OLD_MODEL)})
    for directory in found:
        print(convert(directory, args.keep_zip))
    print(f"{len(found)} artefact(s)")


if __name__ == "__main__":
    main()
