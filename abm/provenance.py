"""Provenance of results: package versions, the git checkout, JSON-safe records.

One home for what every written result carries (run summaries, study manifests,
trained artefacts), so the records agree on names and on how odd values are written:

* :data:`RESULTS_SCHEMA` -- the version of what results mean (see CHANGELOG.md);
* :func:`versions` -- Python and the packages that shape results;
* :func:`git_info` -- the commit of the checkout this package runs from and whether it
  has local changes;
* :func:`file_sha256` -- the identity of a file's bytes (data files, artefacts, parts);
* :func:`json_safe` / :func:`write_json` (atomic) -- NaN becomes ``null``, +-inf the texts
  ``"inf"``/``"-inf"``, numpy scalars and arrays plain numbers and lists, tuples lists,
  paths texts: the file is strict JSON any reader accepts.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

# Version of what results mean: bumped by every change that alters results (summaries, tick
# or candidate tables, study rows, training rewards), each with a CHANGELOG.md line.
# 1: up to 0.1.0; 2: 0.2.0 (eq. 16's NaN rule in PopulationEnv rewards, strict JSON);
# 3: 0.3.0 (SPEC §2 advice edge cases: ties, "change nothing", unreachable goals, Gini);
# 4: 0.6.0 (results that travel: scores within 1e-9 of the threshold are tied, changes
# below 1e-9 are round-off, not advice); 5: 0.8.0 (the outcome card's tick columns:
# n_short_of_goal, and with outcomes n_qualified_accepted, true_gain_sum, advised_change,
# noncausal_change); 6: 0.8.1 (episode budgets paced by every policy, scarf's shrunken
# advice fitted to its allowance, the robust policies' cost weight relative to the weights);
# 7: 0.8.2 (robust and ROAR policies halve λ for rows short of the threshold, the greedy
# exact solver for robust-l1 and -linf, new robust-l1 and -l2 defaults); 8: the shift
# columns at refits (MMD², disagreement); 9: Ustun's exact combinatorial solver, Wachter's
# descent in NumPy (and ClaPROAR, Gravitational, PROBE on it).
RESULTS_SCHEMA = 10

#: the cross-CPU contract (docs/architecture.md, "Results that travel"): on another CPU or
#: BLAS every discrete outcome is identical and a float64 agrees within
#: |got - ref| <= FLOAT_ATOL + FLOAT_RTOL |ref| (tests/golden/compare.py, the benchmark's
#: --verify); on one machine results are bitwise equal
FLOAT_RTOL = 1e-9
FLOAT_ATOL = 1e-12

# packages whose versions can change a simulation's numbers
VERSIONED = ("recourse-abm", "mesa", "numpy", "scipy", "scikit-learn", "pandas", "torch")


def versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Versions of Python and of :data:`VERSIONED` plus ``extra`` (installed ones only)."""
    out = {"python": platform.python_version()}
    for name in dict.fromkeys((*VERSIONED, *extra)):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_info(root: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout at ``root``
    (default: the one this package runs from); ``None`` outside a git checkout."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        # diff-index reads the index without rewriting it (safe beside a running git)
        dirty = (
            subprocess.run(
                ["git", "-C", str(root), "diff-index", "--quiet", "HEAD", "--"],
                capture_output=True,
                timeout=10,
            ).returncode
            != 0
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def json_safe(value: Any) -> Any:
    """``value`` with every part strict JSON can hold (see the module docstring)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [json_safe(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: str | Path, data: Any, indent: int | None = 2) -> Path:
    """Write ``json_safe(data)``, indented (``indent`` None: compact, one line), to ``path``
    atomically; returns the path.

    The text goes to a temporary file of this process first and then replaces ``path``,
    so a reader (or a resumed study) never sees a half-written file.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    separators = (",", ":") if indent is None else None
    text = json.dumps(json_safe(data), indent=indent, separators=separators, allow_nan=False)
    text += "\n"
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:  # a full disk, an interrupt: no temporary file is left behind
        tmp.unlink(missing_ok=True)
        raise
    return path


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file's bytes, read in chunks."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def arrays_digest(*arrays: np.ndarray) -> bytes:
    """A 20-byte digest of ``arrays``: each one's type, shape and bytes (a key for results
    that are functions of the arrays' values, e.g. a fit or a graph shared across forks)."""
    h = hashlib.blake2b(digest_size=20)
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a)
    return h.digest()
