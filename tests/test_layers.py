"""The layers of docs/architecture.md: imports point one way and form no cycle above the
core (import-linter's contracts in pyproject.toml).

``scripts/check.sh`` runs ``lint-imports`` too; running it here puts a broken layer in
front of whoever runs only the tests. That the light modules stay light is checked in
tests/test_light_imports.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    """dashboards | lab -> policies -> abm core (the two front ends independent: neither
    imports the other), and no cycle among the sibling modules of lab, policies or
    dashboards."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.fail("lint-imports is missing: install the dev extra (bash scripts/setup.sh)")
    out = subprocess.run(
        [lint, "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
