"""Running a study: serially, on local worker processes or on a Dask cluster.

The one runner of every sweep: a study names an experiment
(:mod:`lab.study.experiments`), and each run is one parameter point and one seed.
Results go under ``out/`` as they arrive, one Parquet file per finished run::

    out/manifest.json            study, resolved runs, results schema, git commit, package
                                 versions, invocations (written to a temporary name, renamed)
    out/runs/<run_id>.parquet    the run's rows: swept values, seed, status, error, the
                                 experiment's figures (an episode: its summary), finished_at
    out/ticks/<run_id>.parquet   one row per tick (experiments that keep ticks): run id,
                                 swept values, seed, kept metrics
    out/runs/<run_id>.json       the seal: sha256, row count and columns of both parts
    out/quarantine/              parts that failed their check, moved aside (their runs rerun)
    out/.lock                    held (flock) by the one `study run` writing here: pid, host

A run's files are written to a temporary name and renamed: ticks, then run rows, then the
seal, so a run counts as finished exactly when its seal exists and its parts match it.
Killing the study loses only the runs in flight; the same command then resumes with the
others. Runs lost to the infrastructure (a dead worker process, a lost Dask scheduler,
worker or connection) are not stored: they stay pending and the next invocation runs
them. Only an exception raised by the run itself is stored as an error.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import errno
import fcntl
import json
import multiprocessing
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from abm.provenance import RESULTS_SCHEMA, file_sha256, git_info, now, versions, write_json
from abm.validation import ConfigError, problem
from lab.processes import watch_parent
from lab.study.experiments import execute_run
from lab.study.spec import RunSpec, Study

MANIFEST = "manifest.json"
LOCK = ".lock"
QUARANTINE = "quarantine"
# a run in flight when a worker process dies this many times is left pending for the next
# invocation instead of being resubmitted again (it may be what kills the workers)
MAX_WORKER_DEATHS = 3
# columns every run part has (the id columns of _id_columns and the outcome)
RUN_COLUMNS = ("run_id", "seed", "status", "error", "traceback", "elapsed_s", "finished_at")

Progress = Callable[[int, int], None]


# -- storage -------------------------------------------------------------------------
def _tmp(path: Path) -> Path:
    # per process, so two writers never share a temporary file
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


class StoreError(OSError):
    """A study's results could not be written (a full disk, a quota, an I/O error). What
    was finished before stays sealed and the manifest valid: the same command resumes."""


def _no_space(exc: OSError) -> bool:
    # pyarrow's own OSError carries the errno in its text only
    return exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn an OSError while writing ``path`` into a one-line :class:`StoreError`."""
    try:
        yield
    except StoreError:
        raise
    except OSError as exc:
        what = (
            "ran out of space (no space left on device)"
            if _no_space(exc)
            else f"could not be written ({exc.strerror or ' '.join(str(exc).split())})"
        )
        raise StoreError(
            exc.errno,
            f"{path} {what}; finished runs are kept and nothing partial is trusted: free "
            "space (or fix the cause) and rerun the same command to resume the study",
            str(path),
        ) from exc


def _atomic_parquet(table: pa.Table, path: Path) -> dict[str, Any]:
    """Write ``table`` to ``path`` atomically; returns its seal entry (sha256, rows, columns)."""
    tmp = _tmp(path)
    try:
        with _writing(path):
            pq.write_table(table, tmp)
            digest = file_sha256(tmp)
            os.replace(tmp, path)
    except BaseException:  # no temporary file is left behind
        tmp.unlink(missing_ok=True)
        raise
    return {"sha256": digest, "rows": table.num_rows, "columns": table.column_names}


def _write_json(path: Path, data: Any) -> None:
    with _writing(path):
        write_json(path, data)


def _param_value(value: Any) -> Any:
    # lists (immutable, difficulty, ranges) become JSON text: one scalar column per field
    return json.dumps(value) if isinstance(value, list | tuple) else value


def _id_columns(study: Study, run: RunSpec) -> dict[str, Any]:
    cols: dict[str, Any] = {"run_id": run.run_id}
    if study.experiment_takes_policy:
        cols["policy"] = run.policy
    for f in study.axis_fields:
        if f != "policy":
            cols[f] = _param_value(run.params[f])
    cols["seed"] = run.seed
    return cols


def store_result(out: Path, study: Study, run: RunSpec, result: dict[str, Any]) -> None:
    """Write one finished run: ticks, then the run rows, then the seal that marks it done.

    Every row carries ``finished_at`` (POSIX seconds): which of two runs came later.
    """
    ids = _id_columns(study, run)
    ticks = result.get("ticks")
    # an earlier seal (a rerun error) goes first: a reader then sees an unsealed run, never
    # a seal that disagrees with a half-replaced part
    (out / "runs" / f"{run.run_id}.json").unlink(missing_ok=True)
    seal: dict[str, Any] = {"run_id": run.run_id, "status": result["status"]}
    if result["status"] == "ok" and ticks is not None:
        n = len(ticks)
        columns = {k: pa.array([v] * n) for k, v in ids.items()}
        columns.update({c: pa.array(ticks[c].to_numpy()) for c in ticks.columns})
        seal["ticks"] = _atomic_parquet(pa.table(columns), out / "ticks" / f"{run.run_id}.parquet")
    head = {
        **ids,
        "status": result["status"],
        "error": result["error"],
        "traceback": result["traceback"],
        "elapsed_s": result["elapsed_s"],
    }
    rows = [{**head, **r} for r in result.get("rows", [])] or [head]
    finished = result.get("finished_at", time.time())
    for r in rows:
        r["finished_at"] = finished
    seal["runs"] = _atomic_parquet(
        pa.Table.from_pylist(rows), out / "runs" / f"{run.run_id}.parquet"
    )
    _write_json(out / "runs" / f"{run.run_id}.json", seal)


def _check_part(path: Path, entry: Any, run_id: str) -> str:
    """Why the Parquet part ``path`` does not match its seal ``entry`` ('' when it does)."""
    if not isinstance(entry, dict) or not {"sha256", "rows", "columns"} <= set(entry):
        return "its seal is malformed"
    if not path.is_file():
        return "the part is missing"
    if file_sha256(path) != entry["sha256"]:
        return "its sha256 differs from the one recorded when it was written"
    try:
        meta = pq.read_metadata(path)
        ids = pq.read_table(path, columns=["run_id"]).column(0).to_pylist()
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        return f"it is not readable Parquet ({type(exc).__name__}: {exc})"
    if meta.num_rows != entry["rows"] or meta.schema.to_arrow_schema().names != entry["columns"]:
        return "its rows or columns differ from those recorded"
    if set(ids) != {run_id}:
        return "it holds rows of another run"
    return ""


def _check_run(out: Path, seal_path: Path) -> tuple[str, dict[str, Any] | None, str]:
    """(run id, its seal, '' or why its parts cannot be trusted)."""
    rid = seal_path.stem
    try:
        seal = json.loads(seal_path.read_text())
    except (OSError, ValueError) as exc:
        return rid, None, f"its seal is not readable ({type(exc).__name__})"
    if not isinstance(seal, dict) or seal.get("run_id") != rid or "runs" not in seal:
        return rid, None, "its seal is malformed"
    why = _check_part(out / "runs" / f"{rid}.parquet", seal["runs"], rid)
    if not why and "ticks" in seal:
        why = _check_part(out / "ticks" / f"{rid}.parquet", seal["ticks"], rid)
        why = why and f"ticks: {why}"
    missing = [c for c in RUN_COLUMNS if c not in seal["runs"].get("columns", ())]
    if not why and missing:
        why = f"it lacks the column(s) {', '.join(missing)}"
    return rid, seal, why


def _quarantine(out: Path, rid: str) -> None:
    """Move every file of run ``rid`` to ``out/quarantine/<time>-<rid>/`` (kept, not deleted)."""
    dest = out / QUARANTINE / f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{rid}"
    for src in (
        out / "runs" / f"{rid}.parquet",
        out / "runs" / f"{rid}.json",
        out / "ticks" / f"{rid}.parquet",
    ):
        if src.exists():
            dest.mkdir(parents=True, exist_ok=True)
            os.replace(src, dest / f"{src.parent.name}-{src.name}")


def check_parts(out: str | Path, *, repair: bool = False) -> tuple[dict[str, dict], list[str]]:
    """The runs under ``out`` whose parts match their seals, and the problems found.

    Returns ``({run_id: seal}, problems)``; a seal holds ``status`` and, per part (``runs``,
    ``ticks``), its sha256, row count and columns. A run whose parts do not match its seal
    (corrupt, truncated, zero bytes, edited) is moved to ``out/quarantine/``, so that it runs
    again. With ``repair`` (the invocation holding the study's lock) parts that have no seal
    (a write cut short, or files of an older version) are moved there too; without it they
    are only left out, since a run in progress elsewhere may be about to seal them.
    """
    out = Path(out)
    runs_dir = out / "runs"
    if not runs_dir.is_dir():
        return {}, []
    good: dict[str, dict] = {}
    problems: list[str] = []
    for seal_path in sorted(runs_dir.glob("*.json")):
        rid, seal, why = _check_run(out, seal_path)
        if why:
            problems.append(f"run {rid}: {why}; moved to {QUARANTINE}/ to run again")
            _quarantine(out, rid)
        else:
            good[rid] = seal  # type: ignore[assignment]
    if repair:
        for folder in (runs_dir, out / "ticks"):
            for part in sorted(folder.glob("*.parquet")):
                if part.stem not in good:
                    problems.append(
                        f"run {part.stem}: its part has no seal (a write cut short); "
                        f"moved to {QUARANTINE}/ to run again"
                    )
                    _quarantine(out, part.stem)
            for tmp in folder.glob(".*.tmp"):
                tmp.unlink(missing_ok=True)
    return good, problems


def finished_runs(out: str | Path, include_errors: bool = True) -> set[str]:
    """Run ids with a sealed, intact result under ``out`` (errors included unless
    ``include_errors`` is False)."""
    good, _ = check_parts(out)
    return {rid for rid, seal in good.items() if include_errors or seal["status"] == "ok"}


def _versions() -> dict[str, str]:
    return versions(extra=("pyarrow", "dask", "distributed"))


class StudyLock:
    """An advisory lock (``flock``) on ``out/.lock``: one ``study run`` per directory.

    The holder writes its pid, host and start time into the file, so that a second
    invocation can say who holds it. The lock ends with the process that holds it, however
    it ends (the kernel releases it), so a killed study never leaves a stale lock.
    """

    def __init__(self, out: Path):
        self.path = out / LOCK
        self.fd: int | None = None

    def __enter__(self) -> StudyLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 4096).decode(errors="replace").strip()
            os.close(fd)
            try:
                info = json.loads(holder)
                who = f"pid {info['pid']} on {info['host']}, started {info['started']}"
            except (ValueError, KeyError, TypeError):
                who = "a process that has not said who it is"
            raise ConfigError(
                f"{self.path.parent} is in use by another study run ({who}); wait for it to "
                "finish, or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": now()}
        os.write(fd, json.dumps(info).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _clear_results(out: Path) -> None:
    """Remove the runs of the study held in ``out`` (``--force`` replaces, never mixes)."""
    for folder in ("runs", "ticks"):
        shutil.rmtree(out / folder, ignore_errors=True)
        (out / folder).mkdir()


def _portable_paths(scenario: dict[str, Any], out: Path) -> dict[str, Any]:
    """``scenario`` (ScenarioConfig.to_dict) as a manifest records it: a data table or model
    file named by an absolute path is written relative to the manifest's folder ``out`` (as
    is the study file), so results copied or cloned elsewhere name no machine's folders.
    Run ids never held these paths; a model's sha256 stays beside its path."""
    data = scenario.get("data")
    if not isinstance(data, dict):
        return scenario
    data = {**data}
    if "path" in data:
        data["path"] = _relative(data["path"], out)
    if isinstance(data.get("model"), dict):
        data["model"] = {**data["model"], "path": _relative(data["model"].get("path"), out)}
    return {**scenario, "data": data}


def _relative(where: Any, out: Path) -> Any:
    """An absolute path as seen from folder ``out``; anything else as it is."""
    if isinstance(where, str | Path) and os.path.isabs(where):
        return os.path.relpath(where, out.resolve())
    return where


def _write_manifest(
    out: Path, study: Study, runs: list[RunSpec], force: bool, shared: bool = False
) -> dict[str, Any]:
    """Write (atomically) the manifest of ``study`` to ``out``; call under :class:`StudyLock`.

    ``out`` holding another study is refused, or with ``force`` its results are removed
    first. A ``shared`` store (``collect``, the Pareto evaluations) keeps the runs of every
    study added to it, and its reports read them all.
    """
    path = out / MANIFEST
    if path.exists():
        manifest = read_manifest(out)
        other = manifest.get("spec_hash") != study.spec_hash
        if other and not shared and not manifest.get("shared"):
            if not force:
                raise ConfigError(
                    f"{out} holds results of a different study ({manifest.get('name')!r}, spec "
                    f"{manifest.get('spec_hash')}); use another --out, or --force to replace them"
                )
            _clear_results(out)
            manifest = {"created": now(), "invocations": [], "replaced": manifest.get("name")}
    else:
        manifest = {"created": now(), "invocations": []}
    manifest.update(
        {
            "name": study.name,
            "experiment": study.experiment,
            "settings": study.settings,
            "description": study.description,
            "study_file": study.source and _relative(os.path.abspath(study.source), out),
            "study_text": study.source_text,
            "spec": study.spec,
            "spec_hash": study.spec_hash,
            "base_scenario": _portable_paths(study.base.to_dict(), out),
            "axes": [list(a.fields) for a in study.axes],
            "axis_fields": list(study.axis_fields),
            "policy": study.policy,
            "seeds": list(study.seeds),
            "metrics": list(study.metrics),
            "report_metrics": list(study.report_metrics),
            "skipped_policies": list(study.skipped_policies),
            "n_runs": len(runs),
            "runs": [
                {"run_id": r.run_id, "policy": r.policy, "seed": r.seed, **r.params} for r in runs
            ],
            "results_schema": RESULTS_SCHEMA,
            "git": git_info(),
            "versions": _versions(),
        }
    )
    if shared:
        manifest["shared"] = True
    _write_json(path, manifest)
    return manifest


# -- backends --------------------------------------------------------------------------
def _start_worker(parent: int) -> None:
    """A study worker's start (the pool's initializer): exit with the driver
    (:func:`lab.processes.watch_parent`), then freeze what the imports made
    (``gc.freeze``). The runs' objects live across many young collections (a batch's
    models for all its ticks), so full collections come every few batches, and each
    walks every object in the process: about 0.1-0.2 s with the libraries loaded,
    about 0.04 s with them frozen (they are never freed anyway)."""
    import gc

    watch_parent(parent)
    gc.freeze()


def _serial(tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield execute_run(task)


def _local(tasks: list[dict[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
    """Worker processes (spawn: what ``import mesa`` selects anyway). A dead worker breaks
    the pool; the pool is rebuilt and the unfinished runs are resubmitted (a run in flight
    at :data:`MAX_WORKER_DEATHS` deaths is left pending)."""
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    pending = list(reversed(tasks))
    deaths: dict[str, int] = {}
    window = 4 * workers  # bounded, so a broken pool has few runs to resubmit
    while pending:
        # workers exit when the driver dies, however it dies (no orphans after a SIGKILL)
        pool = cf.ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=_start_worker, initargs=(os.getpid(),)
        )
        inflight: dict[cf.Future, dict[str, Any]] = {}
        broken = False
        try:
            while pending or inflight:
                while pending and len(inflight) < window:
                    task = pending.pop()
                    try:
                        inflight[pool.submit(execute_run, task)] = task
                    except BrokenProcessPool:  # a worker died while results were written
                        pending.append(task)
                        broken = True
                        break
                # runs already executing when a worker dies are the suspects, not the queued ones
                running = {f for f in inflight if f.running()}
                # a broken pool fails every future it holds: take them all, then rebuild
                until = cf.ALL_COMPLETED if broken else cf.FIRST_COMPLETED
                done, _ = cf.wait(inflight, return_when=until)
                for fut in done:
                    task = inflight.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        broken = True
                        if fut not in running:
                            pending.append(task)
                            continue
                        n = deaths[task["run_id"]] = deaths.get(task["run_id"], 0) + 1
                        if n >= MAX_WORKER_DEATHS:
                            yield _lost(task, f"a worker process died {n} times while running it")
                        else:
                            pending.append(task)
                    except Exception as exc:  # e.g. the result could not be sent back
                        yield _lost(task, f"{type(exc).__name__}: {exc}")
                if broken:
                    # every other run of the dead pool goes back to the queue
                    pending.extend(inflight.values())
                    inflight.clear()
                    break
        finally:
            pool.shutdown(wait=not broken, cancel_futures=True)


def _dask(tasks: list[dict[str, Any]], scheduler: Any) -> Iterator[dict[str, Any]]:
    """Runs on a Dask distributed cluster; a lost worker's run is rescheduled by Dask.

    :func:`execute_run` returns a run's own exceptions as results, so anything a future
    raises (``KilledWorker``, ``CommClosedError``, ``CancelledError``, ``OSError``,
    ``TimeoutError``, ...) is the cluster's: the run stays pending. So do all runs not
    finished when the connection to the scheduler is lost.
    """
    try:
        from distributed import Client
    except ImportError:
        raise ConfigError(
            "--scheduler needs dask.distributed: pip install 'dask[distributed]'"
        ) from None
    own = not isinstance(scheduler, Client)  # an address was probed by run_study
    try:
        client = Client(scheduler, timeout="20s") if own else scheduler
    except (OSError, TimeoutError) as exc:
        raise ConfigError(
            f"--scheduler {scheduler}: no Dask scheduler answers there ({type(exc).__name__}: {exc})"
        ) from None
    try:
        waiting = {
            client.submit(execute_run, task, key=f"recourse-run-{task['run_id']}", pure=False): task
            for task in tasks
        }
        # polled, not `as_completed`: when the scheduler dies the client cancels every future,
        # and a poll sees that at once instead of waiting on a connection that is gone
        while waiting:
            ended = [f for f in waiting if f.status in ("finished", "error", "cancelled", "lost")]
            if not ended:
                time.sleep(0.05)
                continue
            for fut in ended:
                task = waiting.pop(fut)
                yield _dask_result(fut, task)
                fut.release()
    finally:
        if own:
            try:
                client.close(timeout=5)
            except (OSError, TimeoutError, RuntimeError):
                pass


def probe_scheduler(address: str, timeout: float = 5.0) -> None:
    """Check that a Dask scheduler answers at ``tcp://host:port`` before the client connects.

    A Dask scheduler greets every new connection with a handshake frame (an 8-byte length,
    then a msgpack map naming ``pickle-protocol``), so one short read within ``timeout``
    tells it from a server that stays silent (HTTP waits for a request: the client would
    hang) or sends something else (the client reads a garbage length and allocates it).
    Other schemes (tls://, inproc://, ...) are left to the client. Raises ConfigError.
    """
    scheme, sep, rest = address.partition("://")
    if sep and scheme != "tcp":
        return
    host, _, port = (rest if sep else address).rpartition(":")
    where = f"--scheduler {address}"
    try:
        port_n = int(port)
    except ValueError:
        raise ConfigError(f"{where}: expected tcp://HOST:PORT") from None
    try:
        with socket.create_connection((host.strip("[]"), port_n), timeout=timeout) as sock:
            sock.settimeout(timeout)
            head = _read_exactly(sock, 8)
            size = int.from_bytes(head, "little")
            if not 0 < size <= 1 << 16:
                raise ConfigError(f"{where}: the server there does not speak Dask's protocol")
            if b"pickle-protocol" not in _read_exactly(sock, size):
                raise ConfigError(f"{where}: the server there does not speak Dask's protocol")
    except TimeoutError:
        raise ConfigError(
            f"{where}: no Dask handshake within {timeout:g} s (is it a Dask scheduler?)"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{where}: no Dask scheduler answers there ({exc})") from None


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return data


def _dask_result(fut: Any, task: dict[str, Any]) -> dict[str, Any]:
    """The run's result, or a lost run (pending) if the cluster could not deliver it."""
    if fut.status != "finished":
        reason = "the connection to the scheduler was lost" if fut.status == "cancelled" else ""
        try:
            exc = fut.exception(timeout=5)
            reason = reason or f"{type(exc).__name__}: {exc}"
        except Exception as err:  # the cluster is gone: the reason is what we know
            reason = reason or f"{type(err).__name__}: {err}"
        return _lost(task, f"Dask {fut.status}: {reason}")
    try:
        return fut.result(timeout=60)
    except Exception as exc:  # anything the future raises is the cluster's (see _dask)
        return _lost(task, f"{type(exc).__name__}: {exc}")


def _lost(task: dict[str, Any], message: str) -> dict[str, Any]:
    """A run the infrastructure lost: reported, never stored (it stays pending); every run
    of a batch task."""
    if "batch" in task:
        return {"run_id": task["run_id"], "batch": [_lost(t, message) for t in task["batch"]]}
    return {"run_id": task["run_id"], "status": "pending", "error": message}


def _each_run(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of every run of a task's ``result`` (one, or a batch's)."""
    return result["batch"] if "batch" in result else [result]


#: what a study's batches may hold, by default (``run_study(batch_memory=...)``, MiB)
BATCH_MEMORY_MIB = 256
#: the most episodes one batch task holds, whatever the memory allows
MAX_BATCH = 256


def episode_bytes(config: dict[str, Any]) -> int:
    """A bound on the memory one episode of ``config`` (``ScenarioConfig.to_dict()``)
    holds inside a batch: its waiting pool and RF window (N₀ + m (T + 1) rows of about
    3 z + 12 numbers, with the copies a tick makes), its record (64 columns a tick) and a
    fixed 150 KiB of Python objects. At paper scale 0.3 MiB, against 0.16-0.20 MiB
    measured (benchmarks/bench_batch.py)."""
    z = int(config.get("n_features", 10))
    rows = int(config.get("n_initial", 20)) + int(config.get("m", 10)) * (
        int(config.get("validity", 1)) + 1
    )
    pool = rows * (3 * z + 12) * 8 * 6
    record = int(config.get("ticks", 100)) * 64 * 8 * 2
    return pool + record + 150 * 1024


def batch_tasks(
    tasks: list[dict[str, Any]], workers: int, memory_mib: float = BATCH_MEMORY_MIB
) -> list[dict[str, Any]]:
    """``tasks`` with the episodes of one scenario and policy (differing only in their seeds
    and worlds) joined into batch tasks (``batch``: their tasks, run together by
    :func:`lab.study.experiments.execute_batch`). A batch holds as many episodes as
    ``memory_mib`` allows (:func:`episode_bytes`), at most :data:`MAX_BATCH`, and no more
    than shares the group evenly among ``workers``; a lone task stays as it is. Run ids,
    results and their order of storage are each run's own."""
    from lab.study.experiments import BATCHED

    groups: dict[str, list[dict[str, Any]]] = {}
    out: list[dict[str, Any]] = []
    for task in tasks:
        if task.get("experiment") not in BATCHED:
            out.append(task)
            continue
        same = {k: v for k, v in task["config"].items() if k not in ("seed", "world_seed")}
        key = json.dumps(
            [task["policy"], task.get("params", {}), task["metrics"], same], sort_keys=True
        )
        groups.setdefault(key, []).append(task)
    for group in groups.values():
        by_memory = int(memory_mib * 2**20 // episode_bytes(group[0]["config"]))
        share = -(-len(group) // max(workers, 1))
        size = max(1, min(by_memory, MAX_BATCH, share))
        for i in range(0, len(group), size):
            part = group[i : i + size]
            if len(part) == 1:
                out.append(part[0])
            else:
                out.append({"run_id": f"batch of {part[0]['run_id']}", "batch": part})
    return out


# -- reading back ------------------------------------------------------------------------
def read_manifest(out: str | Path) -> dict[str, Any]:
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise ConfigError(
            f"{out} is not a study directory (no {MANIFEST}); run `recourse-abm study run` first"
        )
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not readable JSON ({type(exc).__name__}: {exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("runs"), list):
        raise ConfigError(f"{path} is not a study manifest (an object with a `runs` list)")
    return manifest


def _read_parts(folder: Path, ids: list[str]) -> pd.DataFrame:
    files = [folder / f"{rid}.parquet" for rid in ids if (folder / f"{rid}.parquet").is_file()]
    if not files:
        return pd.DataFrame()
    # error rows lack the summary columns: permissive promotion fills them with nulls
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    return table.to_pandas()


def read_ticks(out: str | Path, run_ids: list[str]) -> pd.DataFrame:
    """The tick rows of ``run_ids`` in the store ``out`` (in that order), for a report that
    needs a few runs' ticks only; their parts were checked when the runs were loaded."""
    return _read_parts(Path(out) / "ticks", list(run_ids))


def load_study(out: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The results of a study directory as ``(ticks_df, runs_df)``.

    ``ticks_df``: one row per run × tick (run_id, policy, swept fields, seed, tick, kept
    metrics). ``runs_df``: one row per run (the same keys, status, error, elapsed_s and the
    episode summary). Rows come in grid order (axes as listed in the study, then seed).
    Swept list-valued fields are JSON text.

    Only runs whose parts match their seals are read (others are quarantined, see
    :func:`check_parts`), and only runs of the study in the manifest: a run whose inputs
    changed since (an edited scenario file, a new results schema) has another id, and its
    old rows are left out. A shared store (``collect``) holds several studies: all are read.
    """
    manifest = read_manifest(out)
    out = Path(out)
    good, _ = check_parts(out)
    order = {r["run_id"]: i for i, r in enumerate(manifest["runs"])}
    ids = sorted(good) if manifest.get("shared") else [r for r in order if r in good]
    runs = _read_parts(out / "runs", ids)
    ticks = _read_parts(out / "ticks", ids)

    def ordered(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        if df.empty:
            return df
        # runs of other studies of a shared store go last
        rank = df["run_id"].map(order).fillna(len(order)).astype(np.int64)
        df = df.assign(_order=rank).sort_values(["_order", *keys], kind="stable")
        return df.drop(columns="_order").reset_index(drop=True)

    return ordered(ticks, ["tick"]), ordered(runs, ["run_id"])


# -- the driver ------------------------------------------------------------------------
@dataclass
class StudyRun:
    """What one invocation did, and where the study stands after it.

    ``completed``/``errors``: runs finished now / of those, errors. ``failed``: runs of the
    study stored as errors (now or before); ``pending``: runs with no result yet (lost to
    the infrastructure, or never started); ``lost``: why runs were lost now.
    """

    out: Path
    total: int
    skipped: int = 0
    completed: int = 0
    errors: int = 0
    failed: int = 0
    pending: int = 0
    backend: str = ""
    seconds: float = 0.0
    error_messages: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every run finished without an error."""
        return self.pending == 0 and self.failed == 0


def _start(
    tasks: list[dict[str, Any]], workers: int, scheduler: Any | None
) -> tuple[str, Iterator[dict[str, Any]]]:
    """Start ``tasks`` on Dask (``scheduler`` given), in this process (one worker or task) or
    on local worker processes; returns the backend's name and the results as they finish."""
    if scheduler is not None:
        address = scheduler if isinstance(scheduler, str) else scheduler.scheduler.address
        return f"dask {address}", _dask(tasks, scheduler)
    if not tasks:
        return "nothing to run", _serial(tasks)
    if workers == 1:
        return "serial", _serial(tasks)
    if len(tasks) == 1:  # a process of its own would only add its start-up time
        return f"in this process: 1 run left for {workers} workers", _serial(tasks)
    workers = min(workers, len(tasks))
    return f"{workers} local worker processes", _local(tasks, workers)


def run_study(
    study: Study | str | Path,
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: Any | None = None,
    force: bool = False,
    retry_errors: bool = False,
    shared: bool = False,
    rerun: Collection[str] = (),
    progress: Progress | None = None,
    batch_memory: float = BATCH_MEMORY_MIB,
) -> StudyRun:
    """Run every unfinished run of ``study`` and store the results under ``out``.

    Args:
        study: a :class:`Study` or a study TOML path.
        workers: local worker processes (default: the CPU count); 1 runs in this process.
        scheduler: a Dask scheduler address (``tcp://host:8786``) or a ``distributed.Client``;
            overrides ``workers``.
        force: if ``out`` holds results of a different study, remove them first (otherwise
            that is an error).
        retry_errors: rerun runs recorded as errors (otherwise they count as finished).
        shared: ``out`` is a store of several studies (see :func:`collect`): runs of other
            studies stay.
        rerun: ids of finished runs to run again (their results are replaced), e.g. runs
            stored before the experiment reported a column now needed.
        progress: called as ``progress(done, total)`` after each run (and once at start).
        batch_memory: MiB one batch of episodes may hold (:func:`batch_tasks`; 0 runs each
            episode alone). Results are the same bits either way; only the speed changes.

    Raises:
        ConfigError: bad arguments, ``out`` holds another study, or another ``study run``
            holds ``out``.
        StoreError: a result or the manifest could not be written (a full disk): the runs
            sealed before stay, the manifest stays valid and no temporary file is left, so
            the same call resumes.
    """
    if not isinstance(study, Study):
        study = Study.from_toml(study)
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers = {workers!r} is not allowed: an integer >= 1")
    if isinstance(batch_memory, bool) or not (
        isinstance(batch_memory, int | float) and 0 <= batch_memory < float("inf")
    ):
        raise ConfigError(
            problem("batch_memory", batch_memory, "a number of MiB >= 0 (0: each episode alone)")
        )
    if isinstance(scheduler, str):
        probe_scheduler(scheduler)  # before anything is written
    out = Path(out)
    runs = study.runs()
    with _writing(out):
        (out / "runs").mkdir(parents=True, exist_ok=True)
        (out / "ticks").mkdir(parents=True, exist_ok=True)
    with StudyLock(out):
        manifest = _write_manifest(out, study, runs, force, shared)
        good, problems = check_parts(out, repair=True)
        done = {r for r, seal in good.items() if not retry_errors or seal["status"] == "ok"}
        done.difference_update(rerun)
        todo = [r for r in runs if r.run_id not in done]
        status = StudyRun(
            out=out, total=len(runs), skipped=len(runs) - len(todo), quarantined=problems
        )
        tasks = [r.task(study.metrics) for r in todo]
        if batch_memory:
            tasks = batch_tasks(
                tasks, 1 if scheduler is None and workers == 1 else workers, batch_memory
            )
        status.backend, results = _start(tasks, workers, scheduler)
        by_id = {r.run_id: r for r in todo}
        invocation = {
            "started": now(),
            "backend": status.backend,
            "skipped": status.skipped,
            "quarantined": len(problems),
        }
        start = time.perf_counter()
        if progress:
            progress(status.skipped, status.total)
        failing = False
        try:
            for result in (r for unit in results for r in _each_run(unit)):
                if result["status"] == "pending":
                    status.lost.append(f"{result['run_id']}: {result['error']}")
                    continue
                store_result(out, study, by_id[result["run_id"]], result)
                status.completed += 1
                if result["status"] != "ok":
                    status.errors += 1
                    status.error_messages.append(f"{result['run_id']}: {result['error']}")
                if progress:
                    progress(status.skipped + status.completed, status.total)
        except BaseException:
            failing = True
            raise
        finally:
            status.seconds = time.perf_counter() - start
            good, _ = check_parts(out)
            mine = [good.get(r.run_id) for r in runs]
            status.pending = sum(s is None for s in mine)
            status.failed = sum(s is not None and s["status"] != "ok" for s in mine)
            invocation.update(
                finished=now(),
                completed=status.completed,
                errors=status.errors,
                pending=status.pending,
                failed=status.failed,
                seconds=round(status.seconds, 3),
            )
            manifest["invocations"].append(invocation)
            try:
                _write_json(out / MANIFEST, manifest)
            except StoreError:
                if not failing:  # else the first failure is the one to report
                    raise
    return status


def record_runs(study: Study, out: str | Path, results: dict[str, dict[str, Any]]) -> None:
    """Store results obtained elsewhere (e.g. converted from an older format) as finished
    runs of ``study`` under ``out``, as :func:`run_study` would have: ``results`` maps run
    ids of ``study`` to results shaped like those of
    :func:`~lab.study.experiments.execute_run` (an optional ``finished_at`` orders them).
    """
    out = Path(out)
    by_id = {r.run_id: r for r in study.runs()}
    unknown = sorted(set(results) - set(by_id))
    if unknown:
        raise ConfigError(f"run id {unknown[0]} is not a run of study {study.name!r}")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "ticks").mkdir(parents=True, exist_ok=True)
    with StudyLock(out):
        manifest = _write_manifest(out, study, list(by_id.values()), force=False, shared=True)
        for rid, result in results.items():
            store_result(out, study, by_id[rid], result)
        manifest["invocations"].append(
            {
                "started": now(),
                "backend": "recorded",
                "skipped": 0,
                "finished": now(),
                "completed": len(results),
                "errors": 0,
            }
        )
        _write_json(out / MANIFEST, manifest)


def load_runs_of(study: Study, out: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored results of ``study``'s runs only, as :func:`load_study` returns them: a
    store may also hold other studies' runs and runs of earlier results schemas."""
    ticks, runs = load_study(out)
    mine = {r.run_id for r in study.runs()}
    return (
        ticks[ticks["run_id"].isin(mine)].reset_index(drop=True) if len(ticks) else ticks,
        runs[runs["run_id"].isin(mine)].reset_index(drop=True),
    )


def collect(
    study: Study,
    out: str | Path | None = None,
    *,
    workers: int = 1,
    scheduler: Any | None = None,
    retry_errors: bool = False,
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``study`` and return its results as :func:`load_study` does.

    With ``out`` the results stay there: a second call skips the finished runs, and other
    studies may add theirs (runs are keyed by what determines them, so they never mix up;
    the tables returned hold only ``study``'s runs, in grid order). Without ``out`` they
    go to a temporary directory that is removed afterwards. Commands that print or write
    their own tables (evaluate, calibrate, bench-recommenders, reproductions) run here.
    """
    if out is not None:
        run_study(
            study,
            out,
            workers=workers,
            scheduler=scheduler,
            shared=True,
            retry_errors=retry_errors,
            progress=progress,
        )
        return load_runs_of(study, out)
    with tempfile.TemporaryDirectory(prefix="recourse-study-") as tmp:
        run_study(study, tmp, workers=workers, scheduler=scheduler, progress=progress)
        return load_study(tmp)
