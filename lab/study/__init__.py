"""The experiment runner: sweeps × seeds of any registered experiment, resumable, serial,
on local workers or on Dask.

```python
from lab.study import Study, run_study, load_study, report, html_report

study = Study.from_toml("studies/threshold-trap.toml")     # or Study.build("paper", sweep=..., seeds=5)
run_study(study, "results/trap", workers=2)               # or scheduler="tcp://host:8786"
ticks, runs = load_study("results/trap")                  # pandas, one row per run x tick / per run
table, pngs = report("results/trap")                      # mean ± 95 % CI per sweep point, plots
html_report("results/trap")                               # one self-contained results/trap/report.html
```

An experiment (:data:`EXPERIMENTS`: ``episode``, ``recommender-bench``,
``safear-population``, ``pareto-eval``) is a function of one parameter point and one
seed that returns rows; ``evaluate``, ``calibrate``, ``bench-recommenders``, the Pareto
study and the SafeAR population study are studies of these experiments.
"""

from lab.study.analysis import build_report, pareto_front, report, summarize
from lab.study.experiments import EXPERIMENTS, Experiment, execute_run
from lab.study.page import html_report
from lab.study.runner import (
    StoreError,
    StudyRun,
    collect,
    finished_runs,
    load_runs_of,
    load_study,
    read_manifest,
    run_study,
)
from lab.study.spec import (
    TIMING_COLUMNS,
    Axis,
    RunSpec,
    Study,
    paired_seeds,
    parse_seeds,
    run_id,
)

__all__ = [
    "EXPERIMENTS",
    "TIMING_COLUMNS",
    "Axis",
    "Experiment",
    "RunSpec",
    "StoreError",
    "Study",
    "StudyRun",
    "build_report",
    "collect",
    "execute_run",
    "finished_runs",
    "load_runs_of",
    "html_report",
    "load_study",
    "paired_seeds",
    "pareto_front",
    "parse_seeds",
    "read_manifest",
    "report",
    "run_id",
    "run_study",
    "summarize",
]
