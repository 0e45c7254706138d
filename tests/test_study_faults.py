"""Fault injection on real processes: a killed Dask scheduler, two drivers on one directory,
a scenario file edited mid-study, a part corrupted between runs.

Each case ends by checking the store against a clean run of the same study: every run
present once, the tables identical to the last bit.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_study_runner import assert_same_results  # noqa: E402  (tests/ is on sys.path)

from lab.study import Study, finished_runs, run_study

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]
BIN = Path(sys.executable).parent

SCENARIO = """
name = "faults"
n_initial = 20
m = 10
beta = {beta}
"""

STUDY = """
name = "faults"
scenario = "small.toml"
ticks = 100
seeds = 6
metrics = ["rr", "rf", "threshold"]
[sweep]
k = [3, 5, 7, 9]
"""


# runs slow enough that a second driver finds the first still at work
SLOW_STUDY = (
    STUDY.replace('"faults"', '"slow"')
    .replace("seeds = 6", "seeds = 3")
    .replace(
        "[sweep]\nk = [3, 5, 7, 9]",
        # ~1.3 s a run here: the 12 runs outlast a second driver's start-up (3-4 s) with room
        "[set]\nm = 1500\nk = 1100\n[sweep]\nn_initial = [1500, 1501, 1502, 1503]",
    )
)


def write_study(tmp: Path, beta: float = 0.05, study: str = STUDY) -> Path:
    (tmp / "small.toml").write_text(SCENARIO.format(beta=beta))
    (tmp / "study.toml").write_text(study)
    return tmp / "study.toml"


def driver(study: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "lab.cli", "study", "run", str(study), "--out", str(out), *extra],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def wait_for(cond, proc: subprocess.Popen | None = None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(proc.stdout.read().decode())
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def n_done(out: Path) -> int:
    return len(list((out / "runs").glob("*.json")))


def clean_reference(tmp: Path, study: Path) -> Path:
    out = tmp / "clean"
    status = run_study(Study.from_toml(study), out, workers=1)
    assert status.complete
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_killing_the_dask_scheduler_leaves_runs_pending_and_a_resume_completes(tmp_path):
    pytest.importorskip("distributed")
    study = write_study(tmp_path)
    address = f"tcp://127.0.0.1:{free_port()}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    sched = subprocess.Popen(
        [
            str(BIN / "dask"),
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            address.rsplit(":", 1)[1],
            "--no-dashboard",
        ],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = None
    try:
        from lab.study import runner

        wait_for(lambda: _answers(runner, address), sched, timeout=60)
        worker = subprocess.Popen(
            [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard"],
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        out = tmp_path / "dask"
        proc = driver(study, out, "--scheduler", address)
        wait_for(lambda: n_done(out) >= 2, proc)
        os.killpg(sched.pid, signal.SIGKILL)  # the scheduler dies mid-study
        output, _ = proc.communicate(timeout=120)
    finally:
        for p in (worker, sched):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    text = output.decode()
    assert proc.returncode == 1, text  # pending runs: not a success, not bad input
    assert "pending" in text and "Traceback" not in text
    done = len(finished_runs(out))
    assert 2 <= done < 24
    status = run_study(Study.from_toml(study), out, workers=1)  # the same study, resumed
    assert (status.skipped, status.completed, status.errors) == (done, 24 - done, 0)
    assert_same_results(clean_reference(tmp_path, study), out)


def _answers(runner, address: str) -> bool:
    try:
        runner.probe_scheduler(address, timeout=1.0)
        return True
    except Exception:
        return False


def test_two_drivers_on_one_directory_one_is_refused_and_nothing_mixes(tmp_path):
    # runs slow enough that the first driver still holds the directory when the second starts
    study = write_study(tmp_path, study=SLOW_STUDY)
    out = tmp_path / "out"
    first = driver(study, out, "--workers", "1")
    wait_for(lambda: n_done(out) >= 1, first)
    second = driver(study, out, "--workers", "1")
    text, _ = second.communicate(timeout=60)
    assert second.returncode == 2 and "in use by another study run" in text.decode(), text.decode()
    first_out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, first_out.decode()
    assert len(finished_runs(out)) == 12
    assert_same_results(clean_reference(tmp_path, study), out)


def test_a_scenario_file_edited_mid_study_never_mixes_two_scenarios(tmp_path):
    study = write_study(tmp_path)
    out = tmp_path / "out"
    proc = driver(study, out, "--workers", "1")
    wait_for(lambda: n_done(out) >= 3, proc)
    (tmp_path / "small.toml").write_text(SCENARIO.format(beta=0.01))  # edited under its feet
    proc.communicate(timeout=300)
    # the resume sees new content, so new ids: every run is redone with the edited file
    status = run_study(Study.from_toml(study), out, workers=1)
    assert (status.skipped, status.completed) == (0, 24)
    edited = tmp_path / "edited"
    edited.mkdir()
    assert_same_results(clean_reference(edited, write_study(edited, beta=0.01)), out)


def test_a_part_corrupted_between_runs_is_quarantined_and_redone(tmp_path):
    study = write_study(tmp_path)
    out = tmp_path / "out"
    proc = driver(study, out, "--workers", "1")
    wait_for(lambda: n_done(out) >= 4, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    part = sorted((out / "ticks").rglob("*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:-7] + b"garbage")
    status = run_study(Study.from_toml(study), out, workers=1)
    assert status.quarantined and status.errors == 0
    assert len(finished_runs(out)) == 24
    assert_same_results(clean_reference(tmp_path, study), out)
