"""Trained SCARF generators kept on disk, so that a preparation trains once.

A generator is stored under a digest (:func:`disk_key`) of everything that decides its
weights: the training inputs (:func:`policies.fairness.population.generator_key`: the
surrogate, the cohort, the horizon, the plan budget, the settings and the seed), the
training code (this package's ``generator.py`` and the population surrogate), the
package, torch, POT and NumPy versions, the CPU architecture and the file format. Any
change among them misses the store, and the generator is trained afresh.

Two places are searched, in order:

* the states shipped in the package (``policies/fairness/states/``, written by
  ``scripts/scarf_states.py``): the dashboard's demonstrations, so that they start without
  training after a fresh install;
* the user cache: ``$RABM_CACHE_DIR`` if set, else the platform's cache folder
  (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows) under ``recourse-abm/scarf/``. Its keys add this machine's
  CPU (:func:`user_key`). ``RABM_CACHE_DIR=off`` turns both off (every preparation trains).

A loaded generator is the one a training on the machine that wrote it gives, bit for bit.
On a CPU whose kernels round differently a fresh training can differ in the last digits
(about 1e-6 of the advice, tests/golden/cases.py): there the shipped states are the
reference, as the trained RL artefacts are, and the user cache holds that CPU's own.

A file is NumPy's ``.npz`` of the net's ``state_dict`` (float64 arrays) and a JSON
record (a unicode array), read with ``allow_pickle=False``: loading runs no stored code.
The record holds the key and a SHA-256 of the arrays; a file whose key, checksum, names
or shapes do not match is ignored (and, in the user cache, replaced by the retrained
one). Files are written to a temporary name and moved into place (``os.replace``), so a
reader never sees half a file, and concurrent writers of one key write the same weights.

The arrays are the trained weights, copied into a freshly built net of the same shape;
``tests/test_prepare_cache.py`` runs an episode with a trained and with a loaded one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import sys
import uuid
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

CACHE_ENV = "RABM_CACHE_DIR"
OFF = "off"
SHIPPED_DIR = Path(__file__).resolve().parent / "states"
FORMAT = 1
META = "__meta__"  # the record's entry in the .npz (no state_dict name starts with "_")


def user_cache_dir() -> Path | None:
    """Where this user's trained generators are kept; None when ``RABM_CACHE_DIR=off``."""
    value = os.environ.get(CACHE_ENV)
    if value is not None and value.strip():
        if value.strip().lower() == OFF:
            return None
        return Path(value).expanduser() / "scarf"
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "recourse-abm" / "scarf"


def enabled() -> bool:
    """Whether stored generators are read and written (``RABM_CACHE_DIR`` is not ``off``)."""
    return (os.environ.get(CACHE_ENV) or "").strip().lower() != OFF


@cache
def environment() -> str:
    """What besides the inputs decides the trained bits, as one text (computed once)."""
    import abm
    from policies.fairness import generator

    # line ends as a Windows checkout may write them do not change the code
    code = hashlib.sha256(Path(generator.__file__).read_bytes().replace(b"\r\n", b"\n"))
    parts = {
        "format": FORMAT,
        "recourse-abm": abm.__version__,
        "code": code.hexdigest(),
        "numpy": np.__version__,
        "arch": platform.machine(),
    }
    for dist in ("torch", "pot"):
        try:
            parts[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            parts[dist] = "absent"
    return json.dumps(parts, sort_keys=True)


# settings that choose other numerical kernels on the same CPU (scripts/other-kernels.sh)
KERNEL_ENV = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "OPENBLAS_CORETYPE",
    "NPY_DISABLE_CPU_FEATURES",
)


def machine() -> str:
    """The CPU (model and vector extensions, from /proc/cpuinfo where there is one) and the
    kernel settings of :data:`KERNEL_ENV`: other kernels may round a training's last
    digits differently."""
    chosen = " ".join(f"{k}={os.environ[k]}" for k in KERNEL_ENV if os.environ.get(k))
    return f"{_cpu()} {chosen}".strip()


@cache
def _cpu() -> str:
    cpu, flags = platform.processor(), ""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            cpu = value.strip()
        if key.strip() == "flags" and not flags:
            flags = " ".join(sorted(value.split()))
    if cpu and flags:
        return f"{platform.machine()} {cpu} {flags}"
    return f"{platform.machine()} {cpu}"


def user_key(key: str) -> str:
    """A user cache's key for the store's ``key``: this machine's (:func:`machine`) own.
    The shipped states are the reference on every machine, as the trained RL artefacts are;
    a cache trained here serves here only (a home folder may be shared between machines)."""
    return hashlib.sha256(f"{key}\n{machine()}".encode()).hexdigest()


def disk_key(input_key: str, code: str = "") -> str:
    """The store's key: SHA-256 of the training inputs' digest, :func:`environment` and
    ``code``, the source of what else the training runs (the caller's surrogate)."""
    code_digest = hashlib.sha256(code.replace("\r\n", "\n").encode()).hexdigest()
    return hashlib.sha256(f"{input_key}\n{environment()}\n{code_digest}".encode()).hexdigest()


def file_name(kind: str, key: str) -> str:
    return f"{kind}-{key}.npz"


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(repr((name, a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save(directory: Path, kind: str, key: str, net: Any, shape: dict[str, int]) -> Path:
    """Write ``net``'s weights to ``directory`` under ``key`` (atomically); ``shape`` holds
    what :func:`policies.fairness.generator.build_net` needs besides the kind. Returns the
    file's path."""
    arrays = {name: t.detach().cpu().numpy().copy() for name, t in net.state_dict().items()}
    record = {"format": FORMAT, "kind": kind, "key": key, **shape, "sha256": _checksum(arrays)}
    record["environment"] = json.loads(environment())  # what wrote it, for the reader's notes
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(kind, key)
    # a fresh name per writer, created with the umask's permissions (mkstemp's are 0600)
    tmp = directory / f".{path.stem}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "xb") as f:
            np.savez(f, **{META: np.array(json.dumps(record, sort_keys=True))}, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def record(path: Path) -> dict[str, Any] | None:
    """The JSON record of a stored generator (None if unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return json.loads(str(data[META][()]))
    except Exception:
        return None


def load(path: Path, kind: str, key: str, shape: dict[str, int]) -> Any | None:
    """The net stored at ``path`` if it is a sound file for ``kind``, ``key`` and
    ``shape`` (else None, with the reason logged): its weights in a freshly built net."""
    from policies.fairness.generator import build_net

    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data[META][()]))
            arrays = {name: data[name] for name in data.files if name != META}
        expected = {"format": FORMAT, "kind": kind, "key": key, **shape}
        wrong = [k for k, v in expected.items() if meta.get(k) != v]
        if wrong:
            raise ValueError(f"record differs in {', '.join(wrong)}")
        if meta.get("sha256") != _checksum(arrays):
            raise ValueError("checksum differs")
        net = build_net(kind, shape["n_in"], shape["k"], shape["T"], shape["hidden"], 0)
        net = net.double()
        import torch

        state = net.state_dict()
        if set(state) != set(arrays) or any(
            state[n].shape != arrays[n].shape or arrays[n].dtype != np.float64 for n in state
        ):
            raise ValueError("weights' names or shapes differ")
        net.load_state_dict({n: torch.from_numpy(a) for n, a in arrays.items()})
        net.eval()
        return net
    except Exception as exc:  # a damaged or foreign file is a miss, never a failure
        log.warning("ignoring stored generator %s: %s", path, exc)
        return None
