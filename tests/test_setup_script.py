"""scripts/setup.sh picks the newest supported Python that runs (issue 54, item 8)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"


def _fake(folder: Path, name: str, version: str, runs: bool = True) -> None:
    """An executable ``name`` that says it is Python ``version`` (or fails, as a pyenv shim
    of a version that is not switched on does)."""
    body = f'echo "{version}"' if runs else f'echo "pyenv: {name}: not found" >&2; exit 127'
    path = folder / name
    path.write_text(f"#!{shutil.which('sh')}\n{body}\n")
    path.chmod(0o755)


def which(folder: Path, **env: str) -> subprocess.CompletedProcess:
    """``setup.sh --which-python`` with only ``folder`` and the tools it needs on PATH (the
    machine's own Pythons out of sight)."""
    tools = folder / "tools"
    tools.mkdir(exist_ok=True)
    for tool in ("dirname",):
        if not (tools / tool).exists():
            (tools / tool).symlink_to(shutil.which(tool))
    environ = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    environ |= {"PATH": f"{folder}:{tools}"} | env
    return subprocess.run(
        [shutil.which("bash"), str(SETUP), "--which-python"],
        capture_output=True,
        text=True,
        env=environ,
    )


@pytest.mark.parametrize(
    "present, chosen",
    [
        ({"python3.12": True, "python3.11": True}, "python3.12"),
        ({"python3.12": False, "python3.11": True}, "python3.11"),  # a shim that fails
        ({"python3.11": True, "python3.13": True}, "python3.11"),  # 3.13 is not measured
    ],
)
def test_the_newest_supported_python_that_runs_is_taken(tmp_path, present, chosen):
    for name, runs in present.items():
        _fake(tmp_path, name, name.removeprefix("python"), runs)
    _fake(tmp_path, "python3", "3.9")  # a plain python3 of another version is not taken
    done = which(tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == chosen, done.stderr


def test_python_set_wins_and_none_found_is_one_line(tmp_path):
    assert which(tmp_path, PYTHON="/opt/py/bin/python3").stdout.strip() == "/opt/py/bin/python3"
    _fake(tmp_path, "python3", "3.9")
    done = which(tmp_path)
    assert done.returncode == 2 and "no Python 3.12 3.11 found" in done.stderr
