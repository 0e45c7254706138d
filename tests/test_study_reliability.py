"""Studies that survive faults: runs lost to the infrastructure stay pending, changed inputs
get new run ids, corrupt parts are quarantined and rerun, one `study run` per directory."""

import json
import os

import pandas as pd
import pytest
from typer.testing import CliRunner

from abm.validation import ConfigError
from lab.cli import app
from lab.study import TIMING_COLUMNS, Study, finished_runs, load_study, run_study
from lab.study import runner as study_runner
from lab.study import spec as study_spec

SCENARIO = """
name = "small"
n_initial = 20
m = 20
ticks = 5
beta = {beta}
"""

STUDY = """
name = "edited"
scenario = "small.toml"
seeds = 2
metrics = ["rr", "rf"]
[sweep]
k = [3, 9]
"""


def write_study(tmp_path, beta=0.05):
    (tmp_path / "small.toml").write_text(SCENARIO.format(beta=beta))
    path = tmp_path / "study.toml"
    path.write_text(STUDY)
    return path


def same(a, b) -> None:
    (ta, ra), (tb, rb) = load_study(a), load_study(b)
    pd.testing.assert_frame_equal(ta, tb)
    drop = [c for c in TIMING_COLUMNS if c in ra]
    pd.testing.assert_frame_equal(ra.drop(columns=drop), rb.drop(columns=drop))


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("clean")
    out = tmp / "out"
    status = run_study(Study.from_toml(write_study(tmp)), out, workers=1)
    assert status.complete and status.completed == 4
    return out


def test_runs_lost_to_the_infrastructure_stay_pending_and_run_on_resume(
    tmp_path, clean, monkeypatch
):
    study = write_study(tmp_path)
    out = tmp_path / "out"
    serial = study_runner._start

    def flaky(tasks, workers, scheduler):
        # the first two runs finish, the others are lost as a dead scheduler loses them
        def results():
            for i, task in enumerate(tasks):
                if i < 2:
                    yield study_runner.execute_run(task)
                else:
                    yield study_runner._lost(task, "CommClosedError: in <TCP (closed)>")

        return "flaky", results()

    monkeypatch.setattr(study_runner, "_start", flaky)
    result = CliRunner().invoke(app, ["study", "run", str(study), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "2 of 4 run(s) pending, 0 failed" in " ".join(result.output.split())
    assert len(finished_runs(out)) == 2  # nothing was stored as an error
    monkeypatch.setattr(study_runner, "_start", serial)
    status = run_study(Study.from_toml(study), out, workers=1)
    assert (status.skipped, status.completed, status.pending, status.failed) == (2, 2, 0, 0)
    same(clean, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert [i["pending"] for i in manifest["invocations"]] == [2, 0]


def test_an_edited_scenario_file_reruns_every_run_and_reports_only_the_new_ones(tmp_path):
    study = write_study(tmp_path, beta=0.05)
    out = tmp_path / "out"
    run_study(Study.from_toml(study), out, workers=1)
    old = finished_runs(out)
    write_study(tmp_path, beta=0.2)  # the scenario file changes, the study file does not
    status = run_study(Study.from_toml(study), out, workers=1)
    assert (status.skipped, status.completed) == (0, 4)
    ticks, runs = load_study(out)
    assert len(runs) == 4 and not set(runs.run_id) & old
    edited = tmp_path / "edited"
    edited.mkdir()
    run_study(Study.from_toml(write_study(edited, beta=0.2)), edited / "out", workers=1)
    same(edited / "out", out)


def test_run_ids_hash_the_results_schema_and_data_content(monkeypatch):
    study = Study.build("paper", ticks=3, seeds=1)
    before = study.runs()[0].run_id
    monkeypatch.setattr(study_spec, "RESULTS_SCHEMA", study_spec.RESULTS_SCHEMA + 1)
    assert study.runs()[0].run_id != before
    monkeypatch.undo()
    cfg = study.runs()[0].config
    assert (
        study_spec.run_id(cfg, "threshold")
        != study_spec.run_id({**cfg, "data": {"path": "x.csv", "sha256": "a"}}, "threshold")
        != study_spec.run_id({**cfg, "data": {"path": "x.csv", "sha256": "b"}}, "threshold")
    )
    # the content names a run, not the folder it was read from (a scenario's relative
    # paths are made absolute: another checkout, the same id)
    model = {"trusted": [], "sha256": "m"}
    here = {"path": "/a/x.csv", "sha256": "a", "model": {**model, "path": "/a/m.skops"}}
    there = {"path": "/b/x.csv", "sha256": "a", "model": {**model, "path": "/b/m.skops"}}
    assert study_spec.run_id({**cfg, "data": here}, "threshold") == study_spec.run_id(
        {**cfg, "data": there}, "threshold"
    )
    other_model = {**there, "model": {**there["model"], "sha256": "n"}}
    assert study_spec.run_id({**cfg, "data": here}, "threshold") != study_spec.run_id(
        {**cfg, "data": other_model}, "threshold"
    )


def test_corrupt_zero_byte_and_unsealed_parts_are_quarantined_and_rerun(tmp_path, clean):
    out = tmp_path / "out"
    run_study(Study.from_toml(write_study(tmp_path)), out, workers=1)
    parts = sorted((out / "runs").glob("*.parquet"))
    parts[0].write_bytes(b"")  # zero bytes
    data = parts[1].read_bytes()
    parts[1].write_bytes(data[:100] + b"garbage" + data[107:])  # corrupt, same size
    ticks = out / "ticks" / parts[2].name
    ticks.write_bytes(ticks.read_bytes()[:-20])  # truncated ticks
    (out / "runs" / f"{parts[3].stem}.json").unlink()  # written, never sealed
    # a report reads only what it can trust: the three bad parts go to quarantine, the
    # unsealed one is left alone (a study run may be about to seal it)
    ticks, runs = load_study(out)
    assert ticks.empty and runs.empty and len(list((out / "quarantine").iterdir())) == 3
    status = run_study(Study.from_toml(write_study(tmp_path)), out, workers=1)
    assert (status.skipped, status.completed, len(status.quarantined)) == (0, 4, 1), status
    assert len(list((out / "quarantine").iterdir())) == 4
    same(clean, out)


def test_a_second_study_run_on_the_same_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    study = Study.from_toml(write_study(tmp_path))
    out.mkdir()
    with study_runner.StudyLock(out):
        with pytest.raises(
            ConfigError, match=rf"in use by another study run \(pid {os.getpid()} on "
        ):
            run_study(study, out, workers=1)
        result = CliRunner().invoke(
            app, ["study", "run", str(tmp_path / "study.toml"), "--out", str(out)]
        )
        assert result.exit_code == 2 and "in use by another study run" in result.output
    assert run_study(study, out, workers=1).complete  # free again once the holder is done
    assert not list(out.glob(".*.tmp")) and not list((out / "runs").glob(".*.tmp"))


def test_workers_message_names_the_backend(tmp_path):
    study = Study.from_toml(write_study(tmp_path))
    tasks = [r.task(study.metrics) for r in study.runs()]
    assert study_runner._start(tasks, 2, None)[0] == "2 local worker processes"
    assert study_runner._start(tasks[:1], 2, None)[0] == "in this process: 1 run left for 2 workers"
    assert study_runner._start(tasks, 1, None)[0] == "serial"
    assert study_runner._start([], 2, None)[0] == "nothing to run"


class _Server:
    """A TCP server on a free local port that answers each connection with ``handler``."""

    def __init__(self, handler):
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.handler = handler
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.handler(conn)

    def close(self):
        self.sock.close()


@pytest.mark.parametrize(
    "kind, message",
    [
        ("silent", "no Dask handshake within"),  # an HTTP server waits for a request
        ("garbage", "does not speak Dask's protocol"),  # a huge length: no 3 EiB allocation
        ("closing", "no Dask scheduler answers there"),
    ],
)
def test_scheduler_that_is_not_dask_is_refused_quickly(kind, message):
    import time

    held = []
    handlers = {
        "silent": held.append,
        "garbage": lambda c: (c.sendall(b"\xff" * 64), held.append(c)),
        "closing": lambda c: c.close(),
    }
    server = _Server(handlers[kind])
    try:
        t0 = time.perf_counter()
        with pytest.raises(ConfigError, match=message):
            study_runner.probe_scheduler(server.address, timeout=1.0)
        assert time.perf_counter() - t0 < 5
    finally:
        server.close()
        for c in held:
            c.close()


def test_study_run_with_a_non_dask_scheduler_exits_2_and_writes_nothing(tmp_path):
    # an HTTP server answering at once (a silent one is covered above, with a short timeout)
    held = []
    reply = b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
    server = _Server(lambda c: (c.sendall(reply), held.append(c)))
    try:
        result = CliRunner().invoke(
            app,
            [
                "study",
                "run",
                str(write_study(tmp_path)),
                "--out",
                str(tmp_path / "out"),
                "--scheduler",
                server.address,
            ],
        )
    finally:
        server.close()
        for c in held:
            c.close()
    assert result.exit_code == 2, result.output
    assert "does not speak Dask's protocol" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out" / "runs").exists()


def test_probe_accepts_a_real_scheduler():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        study_runner.probe_scheduler(cluster.scheduler_address, timeout=5.0)
