"""Throughput of a batch study: serial vs local worker processes vs a Dask LocalCluster.

    python benchmarks/bench_study.py [--runs 200] [--ticks 100] [--workers 2]

The study is paper-scale episodes (threshold policy) over a k sweep × seeds. Every mode
writes its results to a fresh directory, results are checked to be identical, and the
figures are runs/s including worker start-up (the pool or the cluster's workers), runs/s
in the steady state (first finished run to the last) and parallel efficiency =
(parallel runs/s) / (workers × serial runs/s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def make_study(runs: int, ticks: int):
    from lab.study import Study

    ks = [3, 5, 7, 9]
    seeds = max(1, runs // len(ks))
    return Study.build(
        "paper",
        policy="threshold",
        ticks=ticks,
        seeds=seeds,
        sweep={"k": ks},
        metrics=["rr", "rf", "threshold"],
        name="bench",
    )


class Clock:
    """Wall time of a study and of its steady part (first finished run to last)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None
        self.last = self.start

    def __call__(self, done: int, total: int) -> None:
        if done == 0:
            return
        now = time.perf_counter()
        self.first = self.first or now
        self.last = now

    def steady_rate(self, n: int) -> float:
        return (n - 1) / (self.last - self.first)


def timed(fn) -> tuple[float, float, object]:
    clock = Clock()
    status = fn(clock)
    return time.perf_counter() - clock.start, clock.steady_rate(status.completed), status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ticks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    import pandas as pd
    from distributed import LocalCluster
    from distributed import __version__ as dask_version

    from lab.study import TIMING_COLUMNS, load_study, run_study

    load0 = os.getloadavg()
    study = make_study(args.runs, args.ticks)
    n = study.n_runs
    tmp = Path(tempfile.mkdtemp(prefix="bench_study_"))
    rows = []
    try:
        s, r, st = timed(lambda c: run_study(study, tmp / "serial", workers=1, progress=c))
        assert st.completed == n and st.errors == 0
        rows.append(("serial (1 process)", s, r, None))
        s, r, st = timed(
            lambda c: run_study(study, tmp / "local", workers=args.workers, progress=c)
        )
        assert st.completed == n and st.errors == 0
        rows.append((f"{args.workers} local worker processes", s, r, None))
        t0 = time.perf_counter()
        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            startup = time.perf_counter() - t0
            s, r, st = timed(
                lambda c: run_study(
                    study, tmp / "dask", scheduler=cluster.scheduler_address, progress=c
                )
            )
        assert st.completed == n and st.errors == 0
        rows.append(
            (f"Dask LocalCluster, {args.workers} worker processes", s + startup, r, startup)
        )

        ref_t, ref_r = load_study(tmp / "serial")
        for other in ("local", "dask"):
            t, r = load_study(tmp / other)
            pd.testing.assert_frame_equal(ref_t, t)
            pd.testing.assert_frame_equal(
                ref_r.drop(columns=list(TIMING_COLUMNS)), r.drop(columns=list(TIMING_COLUMNS))
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    serial_rate, serial_steady = n / rows[0][1], rows[0][2]
    print(f"study: {n} runs of {args.ticks} ticks (paper scenario, threshold); dask {dask_version}")
    print(
        "runs/s over the whole study (worker start-up included) and steady (first to last result)"
    )
    print(f"{'backend':<40} {'seconds':>8} {'runs/s':>7} {'eff.':>5} {'steady':>7} {'eff.':>5}")
    for i, (label, seconds, steady, startup) in enumerate(rows):
        rate = n / seconds
        eff = "-" if i == 0 else f"{rate / (args.workers * serial_rate):.0%}"
        eff_steady = "-" if i == 0 else f"{steady / (args.workers * serial_steady):.0%}"
        note = "" if startup is None else f"  (cluster start {startup:.1f} s included)"
        print(
            f"{label:<40} {seconds:8.2f} {rate:7.1f} {eff:>5} {steady:7.1f} {eff_steady:>5}{note}"
        )
    print("results identical across backends: yes")
    # other processes on the machine take cores from the parallel backends
    print(
        f"CPUs: {os.cpu_count()}; load average before/after: {load0[0]:.1f} / {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
