"""A killed study driver or dashboard leaves no process of theirs behind (issue 35)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of process ``pid``; None when it is gone or a zombie."""
    try:
        state, ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
    except OSError:
        return None
    return None if state == "Z" else (state, int(ppid))


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid``."""
    pids = (int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit())
    return {p for p in pids if (st := _stat(p)) is not None and st[1] == pid}


def _alive(pids: set[int]) -> set[int]:
    return {p for p in pids if _stat(p) is not None}


def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lab", *args],
        cwd=ROOT,
        env=os.environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _kill_leaves_no_child(
    proc: subprocess.Popen, sig: int, children: int, start: float, gone: float
) -> None:
    """Wait (``start`` s) for ``children`` children of ``proc``, send ``proc`` ``sig``, and
    check that they are gone ``gone`` s later; whatever is left is killed."""
    mine: set[int] = set()
    try:
        assert _wait(lambda: len(_children(proc.pid)) >= children, start), "no child started"
        time.sleep(1.0)  # the children are at work
        mine = _children(proc.pid)
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
        assert _wait(lambda: not _alive(mine), gone), f"left behind: {_alive(mine)}"
    finally:
        for pid in _alive(mine | _children(proc.pid)):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)"),
]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_study_driver_leaves_no_worker(tmp_path, sig):
    study = tmp_path / "long.toml"
    study.write_text(
        'name = "long"\nscenario = "paper"\nseeds = 40\nticks = 400\nmetrics = ["rr"]\n'
    )
    driver = _cli("study", "run", str(study), "--out", str(tmp_path / "out"), "--workers", "2")
    _kill_leaves_no_child(driver, sig, children=2, start=120, gone=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_dashboard_leaves_no_server(sig):
    pytest.importorskip("solara")
    port = _free_port()
    parent = _cli("dashboard", "--no-open", "--port", str(port))
    _kill_leaves_no_child(parent, sig, children=1, start=60, gone=15)
