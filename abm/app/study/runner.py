"""Running a study: serially, on local worker processes or on a Dask cluster.

The one runner of every sweep: a study names an experiment
(:mod:`abm.app.study.experiments`), and each run is one parameter point and one seed.
Results go under ``out/`` as they arrive, one Parquet file per finished run::

    out/manifest.json            study, resolved runs, results schema, git commit, package
                                 versions, invocations
    out/runs/<run_id>.parquet    the run's rows: swept values, seed, status, error, the
                                 experiment's figures (an episode: its summary), finished_at
    out/ticks/<run_id>.parquet   one row per tick (experiments that keep ticks): run id,
                                 swept values, seed, kept metrics

A run's files are written to a temporary name and renamed, the ticks before the run row,
so a run counts as finished exactly when its ``runs/`` file exists. Killing the study
loses only the runs in flight; the same command then resumes with the others.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from abm.app.study.experiments import execute_run
from abm.app.study.spec import RunSpec, Study
from abm.provenance import RESULTS_SCHEMA, git_info, now, versions, write_json
from abm.validation import ConfigError

MANIFEST = "manifest.json"
# a run that is in flight when a worker process dies this many times is recorded as failed
MAX_WORKER_DEATHS = 3

Progress = Callable[[int, int], None]


# -- storage -------------------------------------------------------------------------
def _atomic_parquet(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


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
    """Write one finished run (ticks first, then the run rows that mark it done).

    Every row carries ``finished_at`` (POSIX seconds): which of two runs came later.
    """
    ids = _id_columns(study, run)
    ticks = result.get("ticks")
    if result["status"] == "ok" and ticks is not None:
        n = len(ticks)
        columns = {k: pa.array([v] * n) for k, v in ids.items()}
        columns.update({c: pa.array(ticks[c].to_numpy()) for c in ticks.columns})
        _atomic_parquet(pa.table(columns), out / "ticks" / f"{run.run_id}.parquet")
    head = {**ids, "status": result["status"], "error": result["error"],
            "traceback": result["traceback"], "elapsed_s": result["elapsed_s"]}  # fmt: skip
    rows = [{**head, **r} for r in result.get("rows", [])] or [head]
    finished = result.get("finished_at", time.time())
    for r in rows:
        r["finished_at"] = finished
    _atomic_parquet(pa.Table.from_pylist(rows), out / "runs" / f"{run.run_id}.parquet")


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


def _versions() -> dict[str, str]:
    return versions(extra=("pyarrow", "dask", "distributed"))


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
        manifest = {"created": now(), "invocations": []}
    manifest.update({
        "name": study.name,
        "experiment": study.experiment,
        "settings": study.settings,
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
        "results_schema": RESULTS_SCHEMA,
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


# -- reading back ------------------------------------------------------------------------
def read_manifest(out: str | Path) -> dict[str, Any]:
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise ConfigError(
            f"{out} is not a study directory (no {MANIFEST}); run `recourse-abm study run` first"
        )
    return json.loads(path.read_text())


def _read_parts(folder: Path) -> pd.DataFrame:
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return pd.DataFrame()
    # error rows lack the summary columns: permissive promotion fills them with nulls
    table = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    return table.to_pandas()


def load_study(out: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The results of a study directory as ``(ticks_df, runs_df)``.

    ``ticks_df``: one row per run × tick (run_id, policy, swept fields, seed, tick, kept
    metrics). ``runs_df``: one row per run (the same keys, status, error, elapsed_s and the
    episode summary). Rows come in grid order (axes as listed in the study, then seed).
    Swept list-valued fields are JSON text.
    """
    manifest = read_manifest(out)
    out = Path(out)
    runs = _read_parts(out / "runs")
    ticks = _read_parts(out / "ticks")
    order = {r["run_id"]: i for i, r in enumerate(manifest["runs"])}

    def ordered(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
        if df.empty:
            return df
        # runs from an earlier version of the study (added with --force) go last
        rank = df["run_id"].map(order).fillna(len(order)).astype(np.int64)
        df = df.assign(_order=rank).sort_values(["_order", *keys], kind="stable")
        return df.drop(columns="_order").reset_index(drop=True)

    return ordered(ticks, ["tick"]), ordered(runs, [])


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


def _start(
    tasks: list[dict[str, Any]], workers: int, scheduler: Any | None
) -> tuple[str, Iterator[dict[str, Any]]]:
    """Start ``tasks`` on Dask (``scheduler`` given), in this process (one worker or task) or
    on local worker processes; returns the backend's name and the results as they finish."""
    if scheduler is not None:
        address = scheduler if isinstance(scheduler, str) else scheduler.scheduler.address
        return f"dask {address}", _dask(tasks, scheduler)
    if workers == 1 or len(tasks) <= 1:
        return "serial", _serial(tasks)
    workers = min(workers, len(tasks))
    return f"local x{workers}", _local(tasks, workers)


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
    status.backend, results = _start(tasks, workers, scheduler)
    by_id = {r.run_id: r for r in todo}
    invocation = {"started": now(), "backend": status.backend, "skipped": status.skipped}
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
        invocation.update(finished=now(), completed=status.completed, errors=status.errors,
                          seconds=round(status.seconds, 3))  # fmt: skip
        manifest["invocations"].append(invocation)
        write_json(out / MANIFEST, manifest)
    return status


def record_runs(study: Study, out: str | Path, results: dict[str, dict[str, Any]]) -> None:
    """Store results obtained elsewhere (e.g. converted from an older format) as finished
    runs of ``study`` under ``out``, as :func:`run_study` would have: ``results`` maps run
    ids of ``study`` to results shaped like those of
    :func:`~abm.app.study.experiments.execute_run` (an optional ``finished_at`` orders them).
    """
    out = Path(out)
    by_id = {r.run_id: r for r in study.runs()}
    unknown = sorted(set(results) - set(by_id))
    if unknown:
        raise ConfigError(f"run id {unknown[0]} is not a run of study {study.name!r}")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "ticks").mkdir(parents=True, exist_ok=True)
    manifest = _write_manifest(out, study, list(by_id.values()), force=True)
    for rid, result in results.items():
        store_result(out, study, by_id[rid], result)
    manifest["invocations"].append({"started": now(), "backend": "recorded", "skipped": 0,
                                    "finished": now(), "completed": len(results), "errors": 0})  # fmt: skip
    write_json(out / MANIFEST, manifest)


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
        run_study(study, out, workers=workers, scheduler=scheduler, force=True,
                  retry_errors=retry_errors, progress=progress)  # fmt: skip
        ticks, runs = load_study(out)
        mine = {r.run_id for r in study.runs()}
        return (ticks[ticks["run_id"].isin(mine)].reset_index(drop=True) if len(ticks) else ticks,
                runs[runs["run_id"].isin(mine)].reset_index(drop=True))  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="recourse-study-") as tmp:
        run_study(study, tmp, workers=workers, scheduler=scheduler, progress=progress)
        return load_study(tmp)
