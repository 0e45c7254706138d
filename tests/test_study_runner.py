"""Running studies: identical results on every backend, resume, errors, killed workers."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from abm import RecourseModel
from abm.provenance import RESULTS_SCHEMA
from lab.cli import app
from lab.study import TIMING_COLUMNS, Study, finished_runs, load_study, run_study

ROOT = Path(__file__).parents[1]

TINY = """
name = "tiny"
scenario = "paper"
ticks = 8
seeds = 2
metrics = ["rr", "rf", "threshold", "n_accepted"]
[sweep]
k = [3, 9]
policy = ["threshold", "none"]
"""


def tiny_study(tmp_path, text=TINY) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(text)
    return path


def assert_same_results(a: Path, b: Path) -> None:
    (ta, ra), (tb, rb) = load_study(a), load_study(b)
    # byte for byte: exact floats, not pandas' default relative tolerance
    pd.testing.assert_frame_equal(ta, tb, check_exact=True)
    # wall times are the only columns that may differ
    pd.testing.assert_frame_equal(
        ra.drop(columns=list(TIMING_COLUMNS)),
        rb.drop(columns=list(TIMING_COLUMNS)),
        check_exact=True,
    )


@pytest.fixture(scope="module")
def serial_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ref")
    out = tmp / "serial"
    status = run_study(Study.from_toml(tiny_study(tmp)), out, workers=1)
    assert (status.completed, status.errors, status.backend) == (8, 0, "serial")
    return out


def test_results_match_a_direct_model_run(serial_reference):
    ticks, runs = load_study(serial_reference)
    assert len(runs) == 8 and len(ticks) == 8 * 8
    assert list(ticks.columns) == [
        "run_id",
        "policy",
        "k",
        "seed",
        "tick",
        "rr",
        "rf",
        "threshold",
        "n_accepted",
    ]
    row = runs[(runs.policy == "threshold") & (runs.k == 3) & (runs.seed == 1)].iloc[0]
    model = RecourseModel(
        "paper", "threshold", seed=1, agents=False, record_events=False, k=3, ticks=8
    ).run()
    expect = model.tick_table()
    got = ticks[ticks.run_id == row.run_id]
    np.testing.assert_array_equal(got["threshold"].to_numpy(), expect["threshold"].to_numpy())
    np.testing.assert_array_equal(got["n_accepted"].to_numpy(), expect["n_accepted"].to_numpy())
    summary = model.summary()
    assert row.rr == summary["rr"] and row.n_dropped == summary["n_dropped"] and row.status == "ok"
    # grid order: k, then policy, then seed
    assert list(zip(runs.k, runs.policy, runs.seed, strict=True))[:3] == [
        (3, "threshold", 0),
        (3, "threshold", 1),
        (3, "none", 0),
    ]


@pytest.mark.slow
def test_local_workers_match_serial(tmp_path, serial_reference):
    status = run_study(Study.from_toml(tiny_study(tmp_path)), tmp_path / "local", workers=2)
    assert status.backend == "2 local worker processes" and status.completed == 8
    assert_same_results(serial_reference, tmp_path / "local")


@pytest.mark.slow  # starts a local Dask cluster
def test_dask_cluster_matches_serial(tmp_path, serial_reference):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        result = CliRunner().invoke(
            app,
            [
                "study",
                "run",
                str(tiny_study(tmp_path)),
                "--out",
                str(tmp_path / "dask"),
                "--scheduler",
                cluster.scheduler_address,
            ],
        )
    assert result.exit_code == 0, result.output
    assert "8 run(s) done now (dask" in result.output
    assert_same_results(serial_reference, tmp_path / "dask")


def test_rerun_resumes_and_manifest_records_the_study(tmp_path, serial_reference):
    study = Study.from_toml(tiny_study(tmp_path))
    out = tmp_path / "out"
    # a partial first pass: drop half of a finished study's run rows
    run_study(study, out, workers=1)
    for f in sorted((out / "runs").glob("*.parquet"))[:5]:
        f.unlink()
    status = run_study(study, out, workers=1)
    assert (status.skipped, status.completed) == (3, 5)
    assert run_study(study, out, workers=1).completed == 0
    assert_same_results(serial_reference, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_runs"] == 8 and manifest["seeds"] == [0, 1]
    assert manifest["study_text"] == TINY and manifest["axis_fields"] == ["k", "policy"]
    assert {"mesa", "numpy", "pandas", "pyarrow"} <= set(manifest["versions"])
    assert "commit" in manifest["git"] and manifest["results_schema"] == RESULTS_SCHEMA
    assert [i["completed"] for i in manifest["invocations"]] == [8, 5, 0]


def test_a_different_study_is_refused_unless_forced_and_force_replaces(tmp_path):
    out = tmp_path / "out"
    run_study(Study.build("paper", ticks=3, seeds=2), out, workers=1)
    other = Study.build("paper", ticks=4, seeds=2)
    with pytest.raises(ValueError, match="holds results of a different study"):
        run_study(other, out, workers=1)
    status = run_study(other, out, workers=1, force=True)
    # --force removes the other study's runs first: nothing is mixed
    assert (status.skipped, status.completed) == (0, 2)
    ticks, runs = load_study(out)
    assert len(runs) == 2 and len(list((out / "runs").glob("*.parquet"))) == 2
    assert set(ticks.groupby("run_id").size()) == {4}


class Exploding:
    """Raises on the first recommendation: a run that fails mid-episode."""

    def prepare(self, ctx):
        pass

    def recommend(self, obs, rng):
        raise RuntimeError("boom at recommend")

    def observe(self, feedback):
        pass


def test_a_failing_run_is_recorded_and_the_study_goes_on(tmp_path, monkeypatch):
    from abm.registry import REGISTRY, Registry

    scratch = Registry(load_plugins=False)
    scratch.policy("exploding", Exploding, "test")
    REGISTRY.entries("policy")  # the plugins load first, then the test policy joins them
    monkeypatch.setitem(
        REGISTRY._entries["policy"], "exploding", scratch.get("policy", "exploding")
    )
    study = Study.build("paper", ticks=4, seeds=2, sweep={"policy": ["threshold", "exploding"]})
    out = tmp_path / "out"
    status = run_study(study, out, workers=1)
    assert (status.completed, status.errors) == (4, 2)
    ticks, runs = load_study(out)
    bad = runs[runs.policy == "exploding"]
    assert (bad.status == "error").all() and bad.error.str.contains(
        "RuntimeError: boom at recommend"
    ).all()
    assert bad.traceback.str.contains("Traceback").all() and bad.rr.isna().all()
    assert (
        set(ticks.policy) == {"threshold"}
        and (runs[runs.policy == "threshold"].status == "ok").all()
    )
    # errors count as finished; --retry-errors runs them again
    assert run_study(study, out, workers=1).completed == 0
    assert finished_runs(out, include_errors=False) == set(runs[runs.status == "ok"].run_id)
    assert run_study(study, out, workers=1, retry_errors=True).completed == 2


KILL_STUDY = """
name = "killme"
scenario = "paper"
ticks = 100
seeds = 10
metrics = ["rr", "rf", "threshold"]
[sweep]
k = [3, 5, 7, 9]
"""


def _cli(study: Path, out: Path, workers: int) -> subprocess.Popen:
    # own session, so the test can kill exactly this study and its workers
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lab.cli",
            "study",
            "run",
            str(study),
            "--out",
            str(out),
            "--workers",
            str(workers),
        ],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_for_runs(out: Path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(list((out / "runs").glob("*.json"))) < n:
        assert proc.poll() is None, proc.stdout.read().decode()
        assert time.monotonic() < deadline, "study made no progress"
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_mid_study_then_rerun_completes_with_identical_results(tmp_path):
    study = tiny_study(tmp_path, KILL_STUDY)
    out = tmp_path / "killed"
    proc = _cli(study, out, workers=1)
    _wait_for_runs(out, 3, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(finished_runs(out))
    assert 3 <= done < 40, "the study must be interrupted mid-way"
    status = run_study(Study.from_toml(study), out, workers=1)
    assert (status.skipped, status.completed, status.errors) == (done, 40 - done, 0)
    run_study(Study.from_toml(study), tmp_path / "clean", workers=1)
    assert_same_results(tmp_path / "clean", out)


@pytest.mark.slow
def test_a_killed_worker_process_loses_only_its_run(tmp_path):
    psutil = pytest.importorskip("psutil")
    study = tiny_study(tmp_path, KILL_STUDY)
    out = tmp_path / "worker"
    proc = _cli(study, out, workers=2)
    _wait_for_runs(out, 2, proc)
    workers = [
        c for c in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(c.cmdline())
    ]
    assert workers, "no worker processes found"
    workers[0].kill()
    assert len(finished_runs(out)) < 40, "the worker must be killed mid-study"
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output.decode()
    run_study(Study.from_toml(study), tmp_path / "clean", workers=1)
    assert_same_results(tmp_path / "clean", out)


@pytest.mark.slow
def test_a_worker_killed_while_a_result_is_written_breaks_nothing(tmp_path):
    """The pool breaks while the runner is away writing a result (the generator paused at
    its yield); the next submit then meets the broken pool: it is rebuilt and every run
    still finishes, with the results of a serial run."""
    psutil = pytest.importorskip("psutil")
    from lab.study.runner import _local

    # more runs than the runner keeps in flight (4 per worker): some are still to submit
    study = Study.from_toml(tiny_study(tmp_path, TINY.replace("seeds = 2", "seeds = 5")))
    tasks = [r.task(study.metrics) for r in study.runs()]
    assert len(tasks) > 4 * 2
    results = _local(tasks, 2)
    first = next(results)  # paused at the yield: the pool still holds the other runs
    for child in psutil.Process().children():
        try:
            ours = "spawn_main" in " ".join(child.cmdline())
        except psutil.Error:  # a process of an earlier test, gone or a zombie
            continue
        if ours:
            child.kill()
            child.wait(timeout=30)
    time.sleep(1.0)  # the pool's manager thread sees the death and marks the pool broken
    rest = list(results)
    got = {r["run_id"]: r for r in [first, *rest]}
    assert sorted(got) == sorted(t["run_id"] for t in tasks)
    assert {r["status"] for r in got.values()} == {"ok"}
    # the serial reference: one worker (one pool start, not one a run)
    serial = {r["run_id"]: r for r in _local([r.task(study.metrics) for r in study.runs()], 1)}
    assert sorted(serial) == sorted(got)
    for rid, result in got.items():
        pd.testing.assert_frame_equal(serial[rid]["ticks"], result["ticks"])


# -- other experiments on the same runner ------------------------------------------------
def test_recommender_bench_study_end_to_end(tmp_path):
    from lab.evaluation import benchmark_recommenders
    from lab.study import report

    study = Study.build(
        "paper",
        experiment="recommender-bench",
        seeds=[1],
        set={"n": 12},
        sweep={"recommender": ["exact-linear (true d)", "ustun"]},
    )
    status = run_study(study, tmp_path / "bench", workers=1)
    assert (status.completed, status.errors) == (2, 0)
    ticks, runs = load_study(tmp_path / "bench")
    assert ticks.empty and "policy" not in runs
    bench = benchmark_recommenders(n=12, seed=1, names=["exact-linear", "ustun"])
    direct = {r["recommender"]: r for r in bench}
    for row in runs.itertuples():
        assert (row.error, row.cost) == (
            direct[row.recommender]["error"],
            direct[row.recommender]["cost"],
        )
    assert runs.set_index("recommender").loc["ustun", "error"] < 1e-12
    table, pngs = report(tmp_path / "bench", plots=tmp_path / "plots")
    assert list(table["recommender"]) == ["exact-linear (true d)", "ustun"] and len(pngs) == 2


def test_safear_population_study_end_to_end(tmp_path):
    from lab.reproduce.safear.population_study import run_episode

    study = Study.build(
        "paper",
        experiment="safear-population",
        ticks=4,
        seeds=2,
        set={"risk_aversion": [0.0, 1.0]},
        sweep={"policy": ["threshold", "safear:beta_risk=1"]},
    )
    status = run_study(study, tmp_path / "pop", workers=1)
    assert (status.completed, status.errors) == (4, 0)
    _, runs = load_study(tmp_path / "pop")
    for row in runs.to_dict("records"):
        direct = run_episode("paper", row["policy"], row["seed"], ticks=4, risk_aversion=(0.0, 1.0))
        got = {k: row[k] for k in direct}
        assert json.dumps(got) == json.dumps(direct)  # NaN-aware equality
    assert runs.loc[runs.policy == "safear:beta_risk=1", "plan_exp_cost"].notna().all()


def test_pareto_eval_point_is_the_paired_evaluation(tmp_path):
    from lab.evaluation import evaluate

    study = Study.build(
        "paper",
        experiment="pareto-eval",
        ticks=5,
        seeds=[3],
        set={"episodes": 2, "method": "threshold"},
        policy="threshold",
    )
    run_study(study, tmp_path / "p", workers=1)
    _, runs = load_study(tmp_path / "p")
    ev = evaluate("paper", "threshold", episodes=2, seed=3, ticks=5)
    row = runs.iloc[0]
    assert (row.rr, row.rr_std, row.rf, row.cost) == (
        ev["rr_mean"],
        ev["rr_std"],
        ev["rf_mean"],
        ev["cost_mean"],
    )
    assert row.n_unadvised == ev["n_unadvised"] and row.episodes == 2


# -- the Pareto study's evaluations: a study store, an older points.csv converted once ---------
def _points_csv(path, rows):
    import csv

    from abm.provenance import RESULTS_SCHEMA
    from lab.reproduce.pareto import POINT_COLUMNS

    base = {
        "family": "hybrid",
        "rr_std": 0,
        "rf_std": 0,
        "gini": 0,
        "cost": 0,
        "n_unadvised": 0,
        "episodes": 10,
        "seconds": 1,
        "results_schema": RESULTS_SCHEMA,
    }
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=POINT_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({**base, **r})


def test_points_csv_is_converted_once_failures_dropped_and_the_latest_row_kept(tmp_path):
    from lab.reproduce.pareto import StudyConfig, convert_points_csv, read_points

    _points_csv(
        tmp_path / "points.csv",
        [
            {
                "method": "hybrid-ustun",
                "alpha": "1",
                "tau": "4",
                "policy": "hybrid-ustun:path=a",
                "rr": "nan",
                "rf": "nan",
            },
            {
                "method": "hybrid-ustun",
                "alpha": "1",
                "tau": "1",
                "policy": "hybrid-ustun:path=b",
                "rr": 0.5,
                "rf": 0.4,
            },
            {
                "method": "threshold",
                "family": "baseline",
                "alpha": "",
                "tau": "",
                "policy": "threshold",
                "rr": 0.45,
                "rf": 0.55,
            },
            {
                "method": "hybrid-ustun",
                "alpha": "1",
                "tau": "1",
                "policy": "hybrid-ustun:path=c",
                "rr": 0.6,
                "rf": 0.3,
            },
            # evaluated under older rules (no or another results schema): never converted
            {
                "method": "rl",
                "alpha": "1",
                "tau": "1",
                "policy": "rl:path=d",
                "rr": 0.9,
                "rf": 0.5,
                "results_schema": "",
            },
            {
                "method": "rl",
                "alpha": "2",
                "tau": "1",
                "policy": "rl:path=e",
                "rr": 0.9,
                "rf": 0.5,
                "results_schema": 1,
            },
        ],
    )
    cfg = StudyConfig.of(setting="T1-b005")
    assert convert_points_csv(tmp_path, cfg) == 3
    assert convert_points_csv(tmp_path, cfg) == 0  # the store exists: read once
    rows = read_points(tmp_path)
    assert [(r["method"], r["alpha"], r["tau"], r["rr"]) for r in rows] == [
        ("hybrid-ustun", "1", "1", 0.6),
        ("threshold", "", "", 0.45),
    ]


@pytest.mark.slow
def test_report_only_on_shipped_points_gives_the_shipped_table3(tmp_path):
    import csv
    import shutil

    shipped = ROOT / "results" / "pareto" / "T5-b001"
    out = tmp_path / "T5-b001"
    out.mkdir()
    for name in ("points.csv", "study.json"):
        shutil.copyfile(shipped / name, out / name)
    args = [
        "reproduce",
        "pareto",
        "--setting",
        "T5-b001",
        "--out",
        str(out),
        "--report-only",
        "--summary",
        str(tmp_path / "summary"),
    ]
    for _ in range(2):  # the shipped points are of an earlier results schema: never converted
        result = CliRunner().invoke(app, args)
        said = " ".join(result.output.split())
        assert f"evaluated under results schema 3 (this is {RESULTS_SCHEMA})" in said
        assert result.exit_code == 0, result.output
        with open(tmp_path / "summary" / "table3.csv") as f:
            ours = list(csv.DictReader(f))
        with open(ROOT / "results" / "table3.csv") as f:
            expected = [r for r in csv.DictReader(f) if (r["T"], r["beta"]) == ("5", "0.01")]
        assert ours == expected and {r["method"] for r in ours} >= {
            "rl",
            "margin-phi",
            "lookahead-true",
        }
    # older points are reported as they were, never read back as current
    assert not (out / "evaluations").exists() and (out / "pareto.png").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("setting,beta", [("T1-b005", "0.05"), ("T1-b001", "0.01")])
def test_the_shipped_spec_behaviour_study_gives_its_table3(tmp_path, monkeypatch, setting, beta):
    """results/pareto-spec (issue 14, item 7): its predictors were trained under SPEC §1's
    (rho, chi, omega), its points give back results/behaviour/table3.csv's rows, and
    --behaviour spec reads and writes there by default, never in the calibrated folders."""
    import csv
    import json
    import shutil

    shipped = ROOT / "results" / "pareto-spec" / setting
    manifests = sorted((shipped / "predictors").glob("*/manifest.json"))
    assert len(manifests) == 12  # six rl and six shared hybrid predictors
    for manifest in manifests:
        scenario = json.loads(manifest.read_text())["scenario"]
        assert (scenario["rho"], scenario["chi"], scenario["omega"]) == (2.0, 0.1, 1.0)
        assert str(scenario["beta"]) == beta
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results" / "pareto-spec" / setting
    out.mkdir(parents=True)
    for name in ("points.csv", "study.json"):
        shutil.copyfile(shipped / name, out / name)
    args = ["reproduce", "pareto", "--setting", setting, "--behaviour", "spec", "--report-only"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with open(tmp_path / "results" / "behaviour" / "table3.csv") as f:
        ours = list(csv.DictReader(f))
    with open(ROOT / "results" / "behaviour" / "table3.csv") as f:
        expected = [r for r in csv.DictReader(f) if (r["T"], r["beta"]) == ("1", beta)]
    assert ours == expected and {r["method"] for r in ours} >= {
        "rl",
        "margin-phi",
        "hybrid-wachter",
    }
    assert (out / "table3.csv").is_file()
    assert not (tmp_path / "results" / "pareto").exists()
    assert not (tmp_path / "results" / "table3.csv").exists()


def test_pareto_front_is_one_function():
    from lab.reproduce import pareto
    from lab.study import analysis

    assert pareto.pareto_front is analysis.pareto_front
    rr = np.array([0.5, 0.9, np.nan, 0.7, 0.7])
    rf = np.array([0.6, 0.2, 0.9, 0.4, 0.4])
    assert pareto.pareto_front(rr, rf).tolist() == [0, 3, 1]  # NaN never on it, duplicates once


def test_the_manifest_names_data_files_relative_to_itself(tmp_path):
    """A scenario read from a file elsewhere: the manifest records its table's path relative
    to the manifest's folder, never the machine's absolute path; run ids do not change."""
    data = tmp_path / "tables" / "people.csv"
    data.parent.mkdir()
    rng = np.random.default_rng(3)
    pd.DataFrame(
        {"income": rng.uniform(0, 1, 40), "savings": rng.uniform(0, 1, 40), "ok": [0, 1] * 20}
    ).to_csv(data, index=False)
    (tmp_path / "mine.toml").write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5]\nn_initial = 8\nm = 4\nk = 3\n'
        '[data]\npath = "tables/people.csv"\nfeatures = ["income", "savings"]\nlabel = "ok"\n'
    )
    text = 'name = "own"\nscenario = "mine.toml"\nticks = 2\nseeds = 1\npolicy = "threshold"\n'
    study = Study.from_toml(tiny_study(tmp_path, text))
    assert study.base.data.path == str(data.resolve())
    out = tmp_path / "results" / "own"
    run_study(study, out, workers=1)
    manifest = json.loads((out / "manifest.json").read_text())
    written = manifest["base_scenario"]["data"]["path"]
    assert written == os.path.join("..", "..", "tables", "people.csv")
    assert (out / written).resolve() == data.resolve()
    assert manifest["study_file"] == os.path.join("..", "..", "tiny.toml")
    assert str(tmp_path) not in (out / "manifest.json").read_text()
    assert [r["run_id"] for r in manifest["runs"]] == [r.run_id for r in study.runs()]
