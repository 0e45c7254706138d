"""Write the SCARF generators shipped for the dashboard's demonstrations:
python scripts/scarf_states.py [--check [--retrain]]

Each entry of :data:`SHIPPED` (a preset and a policy spec, at the preset's own settings)
is trained here and stored in ``policies/fairness/states/`` under its key
(:mod:`policies.fairness.store`), so that choosing it in the dashboard loads the generator
instead of training it (about 15-45 s on two cores). Files no entry names are removed.

Rerun after any change to the training code, to the package version or to the pinned
torch, POT or NumPy: each changes the keys. ``--check`` exits 1 when a file is missing,
unreadable or left over (tests/test_prepare_cache.py runs it); ``--retrain`` also trains
each entry afresh and compares the weights bit for bit with the shipped ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

SHIPPED = (
    ("fair-scarf", "scarf"),  # demonstration 7
    ("fair-scarf", "scarf-mlp"),  # its memoryless ablation, one choice away in that demo
)


def entries() -> list[tuple[str, str, tuple, str]]:
    """(preset, spec, training inputs, store key) of each shipped entry."""
    from abm.model import RecourseModel
    from abm.registry import make_policy
    from abm.scenarios import resolve_scenario
    from policies.fairness.population import generator_key, stored_key

    out = []
    for preset, spec in SHIPPED:
        ctx = RecourseModel(
            resolve_scenario(preset), "none", agents=False, record_events=False
        ).context
        inputs = make_policy(spec).training_inputs(ctx)
        out.append((preset, spec, inputs, stored_key(generator_key(*inputs))))
    return out


def shape_of(inputs: tuple) -> dict[str, int]:
    _, sur, X0, _, T, _, settings, _ = inputs
    return {"n_in": int(X0.shape[1]) + 1, "k": int(sur.k), "T": int(T), "hidden": settings.hidden}


# what a file's writer may differ in from this install without the file being stale: the
# libraries and the CPU architecture (pinned in constraints.txt; another one misses the
# shipped states and trains, as it should)
PLATFORM = ("torch", "pot", "numpy", "arch")


def foreign() -> str:
    """Why this install cannot use the shipped states although they are current (another
    torch, POT, NumPy or CPU architecture than the one that wrote them), else ""."""
    import json

    from policies.fairness import store

    ours = json.loads(store.environment())
    for path in sorted(store.SHIPPED_DIR.glob("*.npz")):
        theirs = (store.record(path) or {}).get("environment", {})
        differ = [
            f"{k} {theirs.get(k)} (here {ours[k]})" for k in PLATFORM if theirs.get(k) != ours[k]
        ]
        if differ:
            return f"{path.name} was written under " + ", ".join(differ)
    return ""


def problems(retrain: bool = False) -> list[str]:
    """What is wrong with the shipped files (empty: they are current)."""
    import torch

    from policies.fairness import store
    from policies.fairness.generator import train

    out, wanted = [], set()
    for preset, spec, inputs, key in entries():
        kind = inputs[0]
        path = store.SHIPPED_DIR / store.file_name(kind, key)
        wanted.add(path.name)
        net = store.load(path, kind, key, shape_of(inputs))
        if net is None:
            out.append(f"{preset} {spec}: {path.name} missing or unreadable")
        elif retrain:
            fresh = train(*inputs[:7], seed=inputs[7]).state_dict()
            if any(not torch.equal(t, fresh[n]) for n, t in net.state_dict().items()):
                out.append(f"{preset} {spec}: a fresh training differs from {path.name}")
    stray = sorted(p.name for p in store.SHIPPED_DIR.glob("*.npz") if p.name not in wanted)
    out += [f"{name}: no entry names it" for name in stray]
    return out


def write() -> None:
    from policies.fairness import store
    from policies.fairness.generator import train

    wanted = set()
    for preset, spec, inputs, key in entries():
        kind, shape = inputs[0], shape_of(inputs)
        path = store.SHIPPED_DIR / store.file_name(kind, key)
        wanted.add(path.name)
        if store.load(path, kind, key, shape) is not None:
            print(f"{preset} {spec}: {path.name} is current")
            continue
        net = train(*inputs[:7], seed=inputs[7])
        store.save(store.SHIPPED_DIR, kind, key, net, shape)
        print(f"{preset} {spec}: wrote {path.name} ({path.stat().st_size:,} bytes)")
    for path in store.SHIPPED_DIR.glob("*.npz"):
        if path.name not in wanted:
            path.unlink()
            print(f"removed {path.name}")


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    args = sys.argv[1:]
    if "--check" in args:
        found = problems(retrain="--retrain" in args)
        for line in found:
            print(line)
        if found and foreign():
            print(f"(expected here: {foreign()})")
        if found:
            print("the shipped SCARF states are stale: run python scripts/scarf_states.py")
        return 1 if found else 0
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
