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


def _children(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    out = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            out.add(int(entry.name))
    return out


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _wait(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lab", *args], cwd=ROOT, env=os.environ,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)"),
]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_study_driver_leaves_no_worker(tmp_path, sig):
    study = tmp_path / "long.toml"
    study.write_text('name = "long"\nscenario = "paper"\nseeds = 40\nticks = 400\n'
                     'metrics = ["rr"]\n')  # fmt: skip
    driver = _cli("study", "run", str(study), "--out", str(tmp_path / "out"), "--workers", "2")
    workers: set[int] = set()
    try:
        assert _wait(lambda: len(_children(driver.pid)) >= 2, 120), "no workers started"
        time.sleep(1.0)  # the workers are running their first runs
        workers = _children(driver.pid)
        os.kill(driver.pid, sig)
        driver.wait(timeout=30)
        assert _wait(lambda: not _alive(workers), 10), f"left behind: {_alive(workers)}"
    finally:
        for pid in _alive(workers | _children(driver.pid)):
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_dashboard_leaves_no_server(sig):
    pytest.importorskip("solara")
    port = _free_port()
    parent = _cli("dashboard", "--no-open", "--port", str(port))
    server: set[int] = set()
    try:
        assert _wait(lambda: _children(parent.pid), 60), "the server did not start"
        server = _children(parent.pid)
        os.kill(parent.pid, sig)
        parent.wait(timeout=30)
        assert _wait(lambda: not _alive(server), 15), f"left behind: {_alive(server)}"
    finally:
        for pid in _alive(server | _children(parent.pid)):
            os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
