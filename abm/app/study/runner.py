"""Running a study: serially, on local worker processes or on a Dask cluster.

Results go under ``out/`` as they arrive, one Parquet file per finished run::

    out/manifest.json            study, resolved runs, git commit, package versions, invocations
    out/runs/<run_id>.parquet    one row: swept values, seed, status, error, episode summary
    out/ticks/<run_id>.parquet   one row per tick: run id, swept values, seed, kept metrics

A run's files are written to a temporary name and renamed, the ticks before the run row,
so a run counts as finished exactly when its ``runs/`` file exists. Killing the study
loses only the runs in flight; the same command then resumes with the others.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime as dt
import json
import multiprocessing
import os
import subprocess
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from abm.app.results import versions, write_json
from abm.app.study.spec import RunSpec, Study
from abm.config import ConfigError, ScenarioConfig

MANIFEST = "manifest.json"
# a run that is in flight when a worker process dies this many times is recorded as failed
MAX_WORKER_DEATHS = 3

Progress = Callable[[int, int], None]


# -- the job a worker runs (module level: spawn and Dask import it by name) --------
def execute_run(task: dict[str, Any]) -> dict[str, Any]:
    """Run one episode; never raises. Returns the kept tick columns and the summary.

    ``task``: run_id, policy, config (ScenarioConfig.to_dict()), metrics (tick columns).
    """
    from abm.metrics import nanmean
    from abm.model import RecourseModel

    start = time.perf_counter()
    try:
        config = ScenarioConfig.from_dict(task["config"])
        model = RecourseModel(config, task["policy"], agents=False, record_events=False)
        # set-up (world, cached per process, and policy) and the ticks are timed apart
        setup_s = time.perf_counter() - start
        model.run()
        run_s = time.perf_counter() - start - setup_s
        ticks = model.tick_table()
        summary = model.summary()
    except Exception as exc:  # recorded with the run; the study goes on
        return {"run_id": task["run_id"], "status": "error", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(), "elapsed_s": time.perf_counter() - start}  # fmt: skip
    metrics = list(task["metrics"])
    values = {k: summary[k] for k in summary if k not in ("scenario", "policy", "seed")}
    values.update(setup_s=setup_s, run_s=run_s)
    for m in metrics:  # kept per-tick columns without an episode figure: their mean
        values.setdefault(m, nanmean(ticks[m]))
    return {"run_id": task["run_id"], "status": "ok", "error": "", "traceback": "",
            "elapsed_s": time.perf_counter() - start, "summary": values,
            "ticks": ticks[["tick", *metrics]].reset_index(drop=True)}  # fmt: skip


# -- storage -------------------------------------------------------------------------
def _atomic_parquet(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _param_value(value: Any) -> Any:
    # lists (immutable, difficulty, ranges) become JSON text: one scalar column per field
    return json.dumps(value) if isinstance(value, list | tuple) else value


def _id_columns(study: Study, run: RunSpec) -> dict[str, Any]:
    cols: dict[str, Any] = {"run_id": run.run_id, "policy": run.policy}
    for f in study.axis_fields:
        if f != "policy":
            cols[f] = _param_value(run.params[f])
    cols["seed"] = run.seed
    return cols


def store_result(out: Path, study: Study, run: RunSpec, result: dict[str, Any]) -> None:
    """Write one finished run (ticks first, then the run row that marks it done)."""
    ids = _id_columns(study, run)
    if result["status"] == "ok":
        ticks = result["ticks"]
        n = len(ticks)
        columns = {k: pa.array([v] * n) for k, v in ids.items()}
        columns.update({c: pa.array(ticks[c].to_numpy()) for c in ticks.columns})
        _atomic_parquet(pa.table(columns), out / "ticks" / f"{run.run_id}.parquet")
    row = {**ids, "status": result["status"], "error": result["error"],
           "traceback": result["traceback"], "elapsed_s": result["elapsed_s"],
           **result.get("summary", {})}  # fmt: skip
    _atomic_parquet(pa.Table.from_pylist([row]), out / "runs" / f"{run.run_id}.parquet")


def finished_runs(out: str | Path, include_errors: bool = True) -> set[str]:
    """Run ids with a result under ``out`` (errors included unless ``include_errors`` is False)."""
    runs_dir = Path(out) / "runs"
    if not runs_dir.is_dir():
        return set()
    done = {p.stem for p in runs_dir.glob("*.parquet")}
    if not include_errors and done:
        for rid in list(done):
            status = (
                pq.read_table(runs_dir / f"{rid}.parquet", columns=["status"]).column(0)[0].as_py()
            )
            if status != "ok":
                done.discard(rid)
    return done


def git_info() -> dict[str, Any]:
    """Commit of the checkout this package runs from, and whether it has local changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()  # fmt: skip
        # diff-index reads the index without rewriting it
        dirty = subprocess.run(["git", "-C", str(root), "diff-index", "--quiet", "HEAD", "--"],
                               capture_output=True, timeout=10).returncode != 0  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = versions()
    for name in ("pyarrow", "dask", "distributed"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _write_manifest(out: Path, study: Study, runs: list[RunSpec], force: bool) -> dict[str, Any]:
    path = out / MANIFEST
    if path.exists():
        manifest = json.loads(path.read_text())
        if manifest.get("spec_hash") != study.spec_hash and not force:
            raise ConfigError(
                f"{out} holds results of a different study ({manifest.get('name')!r}, spec "
                f"{manifest.get('spec_hash')}); use another --out, or --force to add to it"
            )
    else:
        manifest = {"created": _now(), "invocations": []}
    manifest.update({
        "name": study.name,
        "description": study.description,
        "study_file": study.source,
        "study_text": study.source_text,
        "spec": study.spec,
        "spec_hash": study.spec_hash,
        "base_scenario": study.base.to_dict(),
        "axes": [list(a.fields) for a in study.axes],
        "axis_fields": list(study.axis_fields),
        "policy": study.policy,
        "seeds": list(study.seeds),
        "metrics": list(study.metrics),
        "report_metrics": list(study.report_metrics),
        "skipped_policies": list(study.skipped_policies),
        "n_runs": len(runs),
        "runs": [{"run_id": r.run_id, "policy": r.policy, "seed": r.seed, **r.params} for r in runs],
        "git": git_info(),
        "versions": _versions(),
    })  # fmt: skip
    write_json(path, manifest)
    return manifest


# -- backends --------------------------------------------------------------------------
def _serial(tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield execute_run(task)


def _local(tasks: list[dict[str, Any]], workers: int) -> Iterator[dict[str, Any]]:
    """Worker processes (spawn: what ``import mesa`` selects anyway). A dead worker breaks
    the pool; the pool is rebuilt and the unfinished runs are resubmitted."""
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    pending = list(reversed(tasks))
    deaths: dict[str, int] = {}
    window = 4 * workers  # bounded, so a broken pool has few runs to resubmit
    while pending:
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
        inflight: dict[cf.Future, dict[str, Any]] = {}
        broken = False
        try:
            while pending or inflight:
                while pending and len(inflight) < window:
                    task = pending.pop()
                    inflight[pool.submit(execute_run, task)] = task
                # runs already executing when a worker dies are the suspects, not the queued ones
                running = {f for f in inflight if f.running()}
                done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
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
                            yield _failed(task, f"worker process died {n} times while running it")
                        else:
                            pending.append(task)
                if broken:
                    # every other run of the dead pool goes back to the queue
                    pending.extend(inflight.values())
                    inflight.clear()
                    break
        finally:
            pool.shutdown(wait=not broken, cancel_futures=True)


def _dask(tasks: list[dict[str, Any]], scheduler: Any) -> Iterator[dict[str, Any]]:
    """Runs on a Dask distributed cluster; a lost worker's run is rescheduled by Dask."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise ConfigError(
            "--scheduler needs dask.distributed: pip install 'dask[distributed]'"
        ) from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler, timeout="20s") if own else scheduler
    try:
        futures = {
            client.submit(execute_run, task, key=f"recourse-run-{task['run_id']}", pure=False): task
            for task in tasks
        }
        for fut, result in as_completed(futures, with_results=True, raise_errors=False):
            if isinstance(result, BaseException):  # e.g. KilledWorker after repeated deaths
                result = _failed(futures[fut], f"{type(result).__name__}: {result}")
            yield result
            fut.release()
    finally:
        if own:
            client.close()


def _failed(task: dict[str, Any], message: str) -> dict[str, Any]:
    return {"run_id": task["run_id"], "status": "error", "error": message, "traceback": "",
            "elapsed_s": float("nan")}  # fmt: skip


# -- the driver ------------------------------------------------------------------------
@dataclass
class StudyRun:
    """What one invocation did."""

    out: Path
    total: int
    skipped: int = 0
    completed: int = 0
    errors: int = 0
    backend: str = ""
    seconds: float = 0.0
    error_messages: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.completed


def run_study(
    study: Study | str | Path,
    out: str | Path,
    *,
    workers: int | None = None,
    scheduler: Any | None = None,
    force: bool = False,
    retry_errors: bool = False,
    progress: Progress | None = None,
) -> StudyRun:
    """Run every unfinished run of ``study`` and store the results under ``out``.

    Args:
        study: a :class:`Study` or a study TOML path.
        workers: local worker processes (default: the CPU count); 1 runs in this process.
        scheduler: a Dask scheduler address (``tcp://host:8786``) or a ``distributed.Client``;
            overrides ``workers``.
        force: add to ``out`` even if it holds results of a different study.
        retry_errors: rerun runs recorded as errors (otherwise they count as finished).
        progress: called as ``progress(done, total)`` after each run (and once at start).
    """
    if not isinstance(study, Study):
        study = Study.from_toml(study)
    out = Path(out)
    runs = study.runs()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "ticks").mkdir(parents=True, exist_ok=True)
    manifest = _write_manifest(out, study, runs, force)
    done = finished_runs(out, include_errors=not retry_errors)
    todo = [r for r in runs if r.run_id not in done]
    status = StudyRun(out=out, total=len(runs), skipped=len(runs) - len(todo))
    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers}")
    tasks = [r.task(study.metrics) for r in todo]
    if scheduler is not None:
        status.backend = (
            f"dask {scheduler if isinstance(scheduler, str) else scheduler.scheduler.address}"
        )
        results = _dask(tasks, scheduler)
    elif workers == 1 or len(tasks) <= 1:
        status.backend = "serial"
        results = _serial(tasks)
    else:
        workers = min(workers, len(tasks))
        status.backend = f"local x{workers}"
        results = _local(tasks, workers)
    by_id = {r.run_id: r for r in todo}
    invocation = {"started": _now(), "backend": status.backend, "skipped": status.skipped}
    start = time.perf_counter()
    if progress:
        progress(status.skipped, status.total)
    try:
        for result in results:
            store_result(out, study, by_id[result["run_id"]], result)
            status.completed += 1
            if result["status"] != "ok":
                status.errors += 1
                status.error_messages.append(f"{result['run_id']}: {result['error']}")
            if progress:
                progress(status.skipped + status.completed, status.total)
    finally:
        status.seconds = time.perf_counter() - start
        invocation.update(finished=_now(), completed=status.completed, errors=status.errors,
                          seconds=round(status.seconds, 3))  # fmt: skip
        manifest["invocations"].append(invocation)
        write_json(out / MANIFEST, manifest)
    return status
