"""The core's interfaces, the policies package and the policy list load nothing heavy.

Each check runs in a fresh interpreter (this test process has long since imported
everything) and reads ``sys.modules`` afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("mesa", "sklearn", "torch", "matplotlib")
# data files a policy list must not read (SafeAR data sets, RL artefacts, tables)
DATA_SUFFIXES = (".csv", ".parquet", ".zip", ".npz", ".npy", ".data", ".arff", ".gz")


def loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter: top-level modules loaded, abm/policies/lab
    modules loaded, and data files opened (seen through an audit hook)."""
    probe = textwrap.dedent(
        """
        import json, sys
        opened = []
        def _hook(event, args):
            # zip entries of sys.path are probed by the import system: not data
            if event == "open" and isinstance(args[0], str) and args[0] not in sys.path:
                opened.append(args[0])
        sys.addaudithook(_hook)
        {code}
        names = sorted(sys.modules)
        print(json.dumps({{
            "top": sorted({{n.split(".")[0] for n in names}}),
            "ours": [n for n in names if n.split(".")[0] in ("abm", "policies", "lab")],
            "opened": opened,
        }}))
        """
    ).format(code=code)
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("statement", ["import abm.interfaces", "import policies"])
def test_interfaces_and_policies_import_light(statement):
    seen = loaded_after(statement)
    heavy = [m for m in HEAVY if m in seen["top"]]
    assert not heavy, f"{statement!r} loads {heavy}"


def test_policies_package_loads_no_family():
    # families are reached through the registry's entry points, not the package import
    assert loaded_after("import policies")["ours"] == ["policies"]


def test_registry_lists_policies_without_heavy_libraries_or_data():
    seen = loaded_after(
        "from abm.registry import REGISTRY\n"
        "names = REGISTRY.describe()\n"
        "assert {'threshold', 'safear', 'threshold-dice', 'rl', 'threshold-wachter'} <= set(names)"
    )
    heavy = {*HEAVY, "dice_ml", "stable_baselines3", "gymnasium", "pandas"} & set(seen["top"])
    assert not heavy, f"listing policies loads {heavy}"
    # the application layer (experiments, their data loaders) is not touched
    assert not [m for m in seen["ours"] if m.split(".")[0] == "lab"]
    assert not [p for p in seen["opened"] if p.endswith(DATA_SUFFIXES)]
