"""Batch scenario studies: sweeps × seeds, resumable, serial, on local workers or on Dask.

```python
from abm.app.study import Study, run_study, load_study, report

study = Study.from_toml("studies/threshold-trap.toml")     # or Study.build("paper", sweep=..., seeds=5)
run_study(study, "results/trap", workers=2)               # or scheduler="tcp://host:8786"
ticks, runs = load_study("results/trap")                  # pandas, one row per run x tick / per run
table, pngs = report("results/trap")                      # mean ± 95 % CI per sweep point, plots
```
"""

from abm.app.study.runner import StudyRun, execute_run, finished_runs, run_study
from abm.app.study.spec import TIMING_COLUMNS, Axis, RunSpec, Study, run_id


def __getattr__(name: str):
    # the report side pulls in matplotlib and scipy: worker processes never need them
    if name in ("load_study", "pareto_front", "report", "summarize"):
        from abm.app.study import analysis as _analysis

        return getattr(_analysis, name)
    raise AttributeError(f"module 'abm.app.study' has no attribute {name!r}")


__all__ = [
    "TIMING_COLUMNS",
    "Axis",
    "RunSpec",
    "Study",
    "StudyRun",
    "execute_run",
    "finished_runs",
    "load_study",
    "pareto_front",
    "report",
    "run_id",
    "run_study",
    "summarize",
]
