"""Bad input, third round, second part (issue "Reliability, third round"): output locations
that cannot be used, integers past int64 as study axes, classifiers without predict_proba,
crafted checkpoints, a full disk during `study run`, and empty folders left by a refusal.

Refusals end as in tests/test_bad_input.py: exit status 2, exactly one line ``error: ...``
naming the option or field and its value, no traceback, nothing written. A full disk is not
bad input: exit status 1, one line naming the path and saying how to resume.
"""

from __future__ import annotations

import errno
import os
import pickle
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from cli_checks import one_error_line
from typer.testing import CliRunner

from abm.config import ScenarioConfig
from abm.validation import ConfigError
from lab import terminal
from lab.cli import app
from lab.study import TIMING_COLUMNS, Study, load_study, read_manifest, run_study
from lab.study import runner as study_runner

runner = CliRunner()
STUDY = """\
scenario = "paper"
ticks = 3
seeds = [0, 1]
[set]
n_initial = 20
[sweep]
beta = [0.1, 0.5]
policy = ["threshold", "none"]
"""


def _one_line(result, code: int = 2, *named: str) -> str:
    line = one_error_line(result, code)
    for name in named:  # a long path is shown by its ends (abm.validation.show)
        assert (name if len(name) < 60 else name[-30:]) in line, (name, line)
    return line


@pytest.fixture
def study_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(STUDY)
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished tiny study (8 runs), read by the report cases."""
    root = tmp_path_factory.mktemp("finished")
    (root / "tiny.toml").write_text(STUDY)
    run_study(root / "tiny.toml", root / "st", workers=1)
    return root / "st"


def _read_only(monkeypatch, code: int = errno.EROFS) -> None:
    """Every probe file output_dir makes fails as on a read-only mount (root ignores modes)."""

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(terminal.tempfile, "mkstemp", refuse)


# -- 1. an output location that cannot be used -----------------------------------------------
@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_study_run_on_a_read_only_out_is_one_line(study_file, tmp_path, monkeypatch, code):
    out = tmp_path / "ro"
    out.mkdir()
    _read_only(monkeypatch, code)
    line = _one_line(
        runner.invoke(app, ["study", "run", str(study_file), "--out", str(out), "--workers", "1"]),
        2,
        "--out",
        str(out),
    )
    assert os.strerror(code) in line
    assert list(out.iterdir()) == []
    # a missing --out under a read-only folder: nothing is created either
    line = _one_line(
        runner.invoke(
            app, ["study", "run", str(study_file), "--out", str(out / "a" / "b"), "--workers", "1"]
        ),
        2,
        "--out",
    )
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("where", ["{file}", "{file}/sub", "{file}/a/b"])
def test_study_run_out_on_a_file_is_one_line(study_file, tmp_path, where):
    (tmp_path / "file").write_text("x")
    out = where.format(file=tmp_path / "file")
    _one_line(runner.invoke(app, ["study", "run", str(study_file), "--out", out]), 2, "--out", out)
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize(
    ("option", "where", "verb"),
    [
        ("--html", "{file}/r.html", "lies under the file"),
        ("--html", "{file}/deeper/r.html", "lies under the file"),
        ("--html", "{dir}", "is a directory"),
        ("--plots", "{file}", "is a file"),
        ("--plots", "{file}/sub", "lies under the file"),
    ],
)
def test_study_report_output_that_cannot_be_used(finished, tmp_path, option, where, verb):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    target = where.format(file=tmp_path / "file", dir=tmp_path / "dir")
    plots = tmp_path / "plots"
    argv = ["study", "report", str(finished), option, target]
    if option == "--html":  # the plots are not written when the page is refused
        argv += ["--plots", str(plots)]
    line = _one_line(runner.invoke(app, argv), 2, option, target, verb)
    assert line.startswith(f"error: {option} = ")
    assert not plots.exists()
    assert (tmp_path / "file").read_text() == "x"
    assert list((tmp_path / "dir").iterdir()) == []


def test_study_report_in_a_read_only_study_names_the_default(finished, monkeypatch, tmp_path):
    _read_only(monkeypatch)
    # the default OUT/report exists (study run wrote it): its probe file fails
    line = _one_line(runner.invoke(app, ["study", "report", str(finished)]), 2, "--plots")
    assert "Read-only file system" in line
    # given places are checked before either is written
    html = tmp_path / "new" / "r.html"
    _one_line(
        runner.invoke(
            app,
            ["study", "report", str(finished), "--html", str(html), "--plots", str(tmp_path / "p")],
        ),
        2,
    )
    assert not (tmp_path / "new").exists() and not (tmp_path / "p").exists()


def test_study_report_to_new_places_still_writes(finished, tmp_path):
    html, plots = tmp_path / "a" / "b" / "r.html", tmp_path / "plots"
    result = runner.invoke(
        app, ["study", "report", str(finished), "--html", str(html), "--plots", str(plots)]
    )
    assert result.exit_code == 0, result.output
    assert html.is_file() and (plots / "summary.csv").is_file()


# -- 2. integers past int64 as a study axis ---------------------------------------------------
BIG = 100000000000000000000  # 10**20


@pytest.mark.parametrize(
    ("axis", "where"),
    [
        (f"[sweep]\nk = [2, {BIG}]\n", "k"),  # k's own bound (1..10**7) refuses it first
        (f"[sweep]\nbudget = [2, {BIG}]\n", "sweep.budget[1]"),  # a float field, None default
        (f"[sweep]\nbudget = [2, -{BIG}]\n", "sweep.budget[1]"),
        (
            "[sweep]\nbudget = {start = 9223372036854775800, stop = 9223372036854775810, "
            "step = 5}\n",
            "sweep.budget[2]",
        ),
        (f"[[zip]]\nbudget = [1, {BIG}]\nbeta = [0.1, 0.2]\n", "zip[0].budget[1]"),
        (f"[sweep]\nworld_seed = [1, {BIG}]\n", "world_seed"),
        (f"[sweep]\nm = [1, {BIG}]\n", "m"),
        (f"seeds = [0, {BIG}]\n", "seeds"),
    ],
)
def test_integer_axis_values_past_int64_are_refused_at_plan_time(tmp_path, axis, where):
    path = tmp_path / "big.toml"
    head = 'scenario = "paper"\nticks = 2\n'
    # top-level keys go before the tables
    path.write_text(head + axis if axis.startswith("seeds") else head + "seeds = [0]\n" + axis)
    with pytest.raises(ConfigError) as info:
        Study.from_toml(path)
    assert where in str(info.value) and "\n" not in str(info.value)
    _one_line(runner.invoke(app, ["study", "plan", str(path)]), 2, where)
    out = tmp_path / "out"
    _one_line(runner.invoke(app, ["study", "run", str(path), "--out", str(out)]), 2, where)
    assert not out.exists()


def test_integer_axis_values_within_int64_are_kept(tmp_path):
    path = tmp_path / "ok.toml"
    path.write_text(
        'scenario = "paper"\nticks = 2\nseeds = [0]\n[sweep]\n'
        "world_seed = [0, 9223372036854775807]\n"
    )
    assert Study.from_toml(path).n_runs == 2


# -- 3. a classifier without predict_proba, or one that cannot be built ---------------------
@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    pd.DataFrame(
        {
            "a": [1, 2, 3, 4, 5, 6, 7, 8],
            "b": [3, 1, 2, 5, 4, 6, 8, 7],
            "ok": [0, 1, 0, 1, 0, 1, 0, 1],
        }
    ).to_csv(path, index=False)
    return path


def _classified(people: Path, estimator: str, **params) -> ScenarioConfig:
    return ScenarioConfig(
        n_features=2,
        difficulty=[0.5, 0.5],
        n_initial=8,
        ticks=2,
        data={
            "path": str(people),
            "features": ["a", "b"],
            "label": "ok",
            "classifier": {"estimator": estimator, "params": params},
        },
    )


@pytest.mark.parametrize(
    ("estimator", "params", "why"),
    [
        ("sklearn.svm.SVC", {}, "predict_proba"),
        ("sklearn.svm.SVC", {"probability": False}, "has none with these parameters"),
        ("sklearn.svm.NuSVC", {}, "predict_proba"),
        ("sklearn.linear_model.SGDClassifier", {}, "predict_proba"),
        ("sklearn.linear_model.SGDClassifier", {"loss": "hinge"}, "predict_proba"),
        ("sklearn.ensemble.StackingClassifier", {}, "can be constructed with the given"),
        ("sklearn.ensemble.VotingClassifier", {}, "missing 1 required positional argument"),
        ("sklearn.ensemble.StackingClassifier", {"cv": 3}, "estimators"),
    ],
)
def test_classifier_without_predict_proba_is_one_line(people, estimator, params, why):
    with pytest.raises(ConfigError) as info:
        _classified(people, estimator, **params)
    text = str(info.value)
    assert text.startswith(f"data.classifier.estimator = {estimator!r} is not allowed"), text
    assert why in text and "\n" not in text


@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        ("sklearn.linear_model.SGDClassifier", {"loss": "log_loss"}),
        ("sklearn.ensemble.RandomForestClassifier", {"n_estimators": 3}),
    ],
)
def test_classifier_with_predict_proba_is_kept(people, estimator, params):
    assert _classified(people, estimator, **params).data.classifier.estimator == estimator


def test_scenario_toml_naming_svc_is_refused_by_the_cli(people, tmp_path):
    toml = tmp_path / "svc.toml"
    toml.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5]\nticks = 2\nn_initial = 8\n'
        '[data]\npath = "people.csv"\nfeatures = ["a", "b"]\nlabel = "ok"\n'
        '[data.classifier]\nestimator = "sklearn.svm.SVC"\n'
    )
    out = tmp_path / "out"
    argv = ["run", "--scenario", str(toml), "--policy", "none", "--out", str(out)]
    _one_line(runner.invoke(app, argv), 2, "data.classifier", "predict_proba")
    assert not out.exists()
    toml.write_text(
        toml.read_text().replace("sklearn.svm.SVC", "sklearn.linear_model.SGDClassifier")
        + 'params = { loss = "log_loss" }\n'
    )
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output


# -- 4. a crafted checkpoint under --resume ----------------------------------------------------
class _Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.slow
def test_resume_from_a_crafted_checkpoint_is_one_line(tmp_path):
    import torch

    out = tmp_path / "rec"
    argv = [
        "train",
        "recommender",
        "--out",
        str(out),
        "--warmup-episodes",
        "2",
        "--episodes",
        "20",
        "--checkpoint-every",
        "20",
        "--net",
        "16,16",
        "--learning-starts",
        "10",
        "--batch-size",
        "16",
    ]
    assert runner.invoke(app, argv).exit_code == 0
    latest = sorted((out / "checkpoints").glob("step_*.pt"))[-1]
    good = latest.read_bytes()
    marker = tmp_path / "code-ran"
    crafted = {
        "pickle": lambda f: f.write_bytes(pickle.dumps(_Boom(marker))),
        "torch": lambda f: torch.save({"w": _Boom(marker)}, f),
        "garbage": lambda f: f.write_bytes(b"not a checkpoint"),
        "empty": lambda f: f.write_bytes(b""),
        "other tensors": lambda f: torch.save({"x": torch.zeros(3)}, f),
    }
    for name, write in crafted.items():
        write(latest)
        line = _one_line(
            runner.invoke(app, [*argv, "--resume"]),
            2,
            "--resume",
            str(latest),
            "is not a checkpoint this program wrote",
        )
        assert "weights_only" not in line, (name, line)
        assert not marker.exists(), name
    latest.write_bytes(good)
    state = latest.with_suffix(".json")
    good_state = state.read_text()
    for text in ("{", "[]", '{"manifest": 1}'):
        state.write_text(text)
        _one_line(runner.invoke(app, [*argv, "--resume"]), 2, "--resume", str(state))
    state.write_text(good_state)
    assert runner.invoke(app, [*argv, "--resume"]).exit_code == 0


# -- 5. a full disk during `study run` ---------------------------------------------------------
def _full_disk_after(monkeypatch, n_ok: int, what: str) -> list[int]:
    """After ``n_ok`` writes of ``what`` (a Parquet part, a seal, the manifest), the next one
    writes half its bytes to the temporary file and fails with ENOSPC."""
    calls = [0]
    real_table, real_text = pq.write_table, Path.write_text

    def trip(path) -> bool:
        calls[0] += 1
        return calls[0] > n_ok

    def write_table(table, where, *args, **kwargs):
        if what == "part" and trip(where):
            Path(where).write_bytes(b"PAR1 half a part")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_table(table, where, *args, **kwargs)

    def write_text(self, data, *args, **kwargs):
        name = self.name
        seal = name.endswith(f".json.{os.getpid()}.tmp") and not name.startswith(".manifest")
        if (what == "seal" and seal) or (what == "manifest" and name.startswith(".manifest")):
            if trip(self):
                real_text(self, data[: len(data) // 2], *args, **kwargs)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real_text(self, data, *args, **kwargs)

    monkeypatch.setattr(study_runner.pq, "write_table", write_table)
    monkeypatch.setattr(Path, "write_text", write_text)
    return calls


def _results(out: Path) -> pd.DataFrame:
    _, runs = load_study(out)
    timing = [c for c in TIMING_COLUMNS if c in runs.columns]
    return runs.drop(columns=timing).sort_values("run_id").reset_index(drop=True)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("whole")
    (root / "tiny.toml").write_text(STUDY)
    status = run_study(root / "tiny.toml", root / "st", workers=1)
    assert status.complete
    return _results(root / "st")


@pytest.mark.parametrize(
    ("what", "n_ok", "path"),
    [
        ("part", 3, "/runs/"),  # the run rows of the second run, its ticks written
        ("part", 4, "/ticks/"),  # the ticks of the third run (two parts per run)
        ("part", 5, "/runs/"),
        ("seal", 2, "/runs/"),  # the seal of the third run, its parts written
        ("manifest", 0, "manifest.json"),  # the manifest, before any run
        ("manifest", 1, "manifest.json"),  # the manifest, after every run
    ],
)
def test_a_full_disk_ends_in_one_line_and_the_study_resumes(
    study_file, tmp_path, monkeypatch, uninterrupted, what, n_ok, path
):
    out = tmp_path / "st"
    calls = _full_disk_after(monkeypatch, n_ok, what)
    result = runner.invoke(
        app, ["study", "run", str(study_file), "--out", str(out), "--workers", "1"]
    )
    line = _one_line(result, 1, "ran out of space", "rerun the same command", path)
    assert calls[0] == n_ok + 1
    monkeypatch.undo()
    if what == "manifest" and n_ok == 0:  # never written: nothing ran
        assert not (out / "manifest.json").exists() and not list(out.rglob("*.parquet"))
    else:
        assert read_manifest(out)["name"] == "tiny"  # still valid JSON, still the study's
    assert [str(p) for p in out.rglob("*.tmp")] == [], line
    # the rerun, with space again, completes with the same results as an uninterrupted run
    result = runner.invoke(
        app, ["study", "run", str(study_file), "--out", str(out), "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    assert [str(p) for p in out.rglob("*.tmp")] == []
    pd.testing.assert_frame_equal(_results(out), uninterrupted)


def test_a_full_disk_through_the_python_api_raises_store_error(study_file, tmp_path, monkeypatch):
    _full_disk_after(monkeypatch, 1, "part")
    with pytest.raises(study_runner.StoreError) as info:
        run_study(study_file, tmp_path / "st", workers=1)
    assert info.value.errno == errno.ENOSPC and "ran out of space" in str(info.value)
    assert isinstance(info.value, OSError)


def test_write_json_leaves_no_temporary_file(tmp_path, monkeypatch):
    from abm.provenance import write_json

    target = tmp_path / "x.json"
    write_json(target, {"a": 1})

    def full(self, data, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(OSError):
        write_json(target, {"a": 2})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    assert target.read_text().strip().endswith("}")


# -- 6. a refused command leaves no empty --out behind ----------------------------------------
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (
            [
                "train",
                "predictor",
                "--alpha",
                "1",
                "--tau",
                "1",
                "--recommender",
                "rl:path=/etc",
                "--steps",
                "10",
                "--out",
                "{out}",
            ],
            "/etc",
        ),
        (
            [
                "train",
                "predictor",
                "--alpha",
                "1",
                "--tau",
                "1",
                "--recommender",
                "rl:path={tmp}/nowhere",
                "--steps",
                "10",
                "--out",
                "{out}/a/b",
            ],
            "nowhere",
        ),
        (["reproduce", "pareto", "--quick", "--phi", "MISSING", "--out", "{out}"], "MISSING"),
        (
            ["reproduce", "pareto", "--quick", "--phi", "MISSING", "--out", "{out}/deep/er"],
            "MISSING",
        ),
        (["train", "recommender", "--out", "{out}", "--set", "nosuch=1"], "nosuch"),
    ],
)
def test_a_refused_command_leaves_no_empty_out(tmp_path, argv, named):
    out = tmp_path / "out"
    argv = [a.replace("{out}", str(out)).replace("{tmp}", str(tmp_path)) for a in argv]
    _one_line(runner.invoke(app, argv), 2, named)
    assert not out.exists()


def test_a_refused_default_out_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line(runner.invoke(app, ["reproduce", "pareto", "--quick", "--phi", "MISSING"]), 2)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_out_and_written_files_are_kept(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    argv = [
        "train",
        "predictor",
        "--alpha",
        "1",
        "--tau",
        "1",
        "--recommender",
        "rl:path=/etc",
        "--steps",
        "10",
        "--out",
        str(out),
    ]
    _one_line(runner.invoke(app, argv), 2, "/etc")
    assert out.is_dir()  # it was there before: kept
    # a refusal after a file was written in a new --out keeps the file (no data lost)
    new = tmp_path / "new"
    with pytest.raises(ConfigError), terminal.refusal_leaves_no_output():
        terminal.output_dir(new)
        (new / "sub").mkdir(parents=True)
        (new / "kept.txt").write_text("x")
        raise ConfigError("refused late")
    assert (new / "kept.txt").is_file() and not (new / "sub").exists()


def test_output_file_checks(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match=r"^--html = '' is empty"):
        terminal.output_file("", "--html")
    with pytest.raises(ConfigError, match=r"^--html = '.*/x\.html' lies under the file "):
        terminal.output_file(tmp_path / "f" / "x.html", "--html")
    assert terminal.output_file(tmp_path / "n" / "x.html", "--html") == tmp_path / "n" / "x.html"
    assert not (tmp_path / "n").exists()
    with pytest.raises(ConfigError, match=r"^--html = '.*' is a directory; allowed: a file path"):
        terminal.output_file(tmp_path, "--html")


# -- 7. --quick checks what it replaces -------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("--recommenders", "nosuch", "recommenders"),
        ("--recommenders", "exact-linear,wachtr", "wachtr"),
        ("--margins", "0,abc", "--margins"),
        ("--grid", "1-1", "--grid"),
        ("--margin-recommenders", "nope", "margin_recommenders"),
    ],
)
def test_pareto_quick_refuses_what_it_would_replace(tmp_path, option, value, named):
    out = tmp_path / "pq"
    result = runner.invoke(
        app, ["reproduce", "pareto", "--quick", "--out", str(out), option, value]
    )
    _one_line(result, 2, named)
    assert not out.exists()


# -- 8. unclear messages: files that are not what they claim to be ----------------------------
def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('base = "paper"\nk = 3\n'.encode("utf-16"), "is not UTF-8 text"),
        (bytes(range(128, 256)), "is not UTF-8 text"),
        (b'name = "s"\nscenario = "paper"\nseeds = 3\n[sweep]\nk = [2, 3]\n', "is a study file"),
        (b'scenario = "paper"\nmetrics = ["rr"]\n', "recourse-abm study run"),
        (b"scenario = 3\n", "scenario = 3 is not allowed; allowed: a [scenario] table"),
        (b'base = "other.toml"\n', "base = 'other.toml' is not allowed; allowed: a preset name"),
        (b'base = "nosuch"\nk = 3\n', "a file cannot be a base"),
    ],
)
def test_a_scenario_file_that_is_not_one_names_the_file_and_the_fix(tmp_path, content, named):
    scen = _write(tmp_path / "s.toml", content)
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "--scenario", str(scen), "--ticks", "2", "--out", str(out)])
    _one_line(result, 2, named)
    assert not out.exists()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_study_file_in_another_encoding_is_named(tmp_path, encoding):
    study = _write(tmp_path / "st.toml", 'scenario = "paper"\nseeds = 2\n'.encode(encoding))
    _one_line(runner.invoke(app, ["study", "plan", str(study)]), 2, "st.toml", "not UTF-8")


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("--lr", "0", "--lr = 0.0 is not allowed"),
        ("--lr", "1.5", "--lr = 1.5 is not allowed"),
        ("--gamma", "1.5", "--gamma = 1.5"),
        ("--batch-size", "0", "--batch-size = 0"),
        ("--learning-starts", "-1", "--learning-starts"),
    ],
)
def test_a_training_option_is_named_as_typed(tmp_path, option, value, named):
    out = tmp_path / "phi"
    result = runner.invoke(app, ["train", "recommender", "--out", str(out), option, value])
    _one_line(result, 2, named)
    assert "learning_rate" not in result.output and not out.exists()


def test_the_dashboard_refuses_a_host_or_port_it_cannot_listen_on():
    import socket

    _one_line(
        runner.invoke(app, ["dashboard", "--no-open", "--host", "999.1.1.1"]),
        2,
        "--host = '999.1.1.1' cannot be resolved",
    )
    _one_line(
        runner.invoke(app, ["dashboard", "--no-open", "--host", "192.0.2.1"]),
        2,
        "--host = '192.0.2.1' cannot be listened on",
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = runner.invoke(app, ["dashboard", "--no-open", "--port", str(port)])
        _one_line(result, 2, f"--port = {port} is in use")


@pytest.mark.parametrize("cell", ["inf", "-inf", "1e308", "-2e16"])
def test_a_data_cell_too_large_names_the_column_and_row(tmp_path, cell):
    rows = ["a,b,ok", "0.1,0.2,1", f"0.3,{cell},0", "0.5,0.6,1", "0.2,0.1,0", "0.9,0.8,1"]
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n")
    scen = tmp_path / "d.toml"
    scen.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5]\nticks = 2\nn_initial = 4\n'
        '[data]\npath = "people.csv"\nfeatures = ["a", "b"]\nlabel = "ok"\n'
    )
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "--scenario", str(scen), "--out", str(out)])
    _one_line(result, 2, "data.features[1] = 'b'", "data row 1", "magnitude <= 1e+15")
    assert not out.exists()


def _mount_tmpfs(where: Path, size: int) -> bool:
    import subprocess

    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    return done.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounts a tmpfs")
def test_a_real_full_disk_on_a_small_tmpfs(study_file, tmp_path, uninterrupted):
    """Not injected: the study's store lies on a tmpfs too small for it (CI runs as root)."""
    import subprocess

    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, 48 * 1024):  # a few runs' parts fit, not all eight
        pytest.skip("cannot mount a tmpfs here")
    try:
        out = disk / "st"
        argv = ["study", "run", str(study_file), "--out", str(out), "--workers", "1"]
        line = _one_line(runner.invoke(app, argv), 1, "ran out of space", "rerun the same command")
        assert str(disk) in line or "st" in line
        assert [str(p) for p in out.rglob("*.tmp")] == [], line
        if (out / "manifest.json").exists():
            assert read_manifest(out)["name"] == "tiny"
        # more room on the same disk: the same command finishes what was left, identically
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
        assert [str(p) for p in out.rglob("*.tmp")] == []
        pd.testing.assert_frame_equal(_results(out), uninterrupted)
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


# -- 9. input read and then ignored, the rest ---------------------------------------------------
@pytest.mark.parametrize(
    ("grid", "named"),
    [
        ("{}", "is empty"),
        ('{"rho": [1], "rho": [2]}', "names rho twice"),
        ('{"rho": [1], "chi": [0], "chi": [0.1]}', "names chi twice"),
    ],
)
def test_calibrate_grid_that_would_be_ignored_is_refused(tmp_path, grid, named):
    out = tmp_path / "cal"
    _one_line(runner.invoke(app, ["calibrate", "--grid", grid, "--out", str(out)]), 2, named)
    assert not out.exists()


@pytest.mark.parametrize("metrics", ["", " ", ",", " , "])
def test_study_report_with_no_metric_named_is_refused(finished, metrics):
    result = runner.invoke(app, ["study", "report", str(finished), "--metrics", metrics])
    _one_line(result, 2, "--metrics", "names no metric")


def test_data_whose_every_feature_is_constant_is_refused(tmp_path):
    rows = ["a,b,ok", *(f"1,2,{i % 2}" for i in range(6))]
    (tmp_path / "same.csv").write_text("\n".join(rows) + "\n")
    scen = tmp_path / "d.toml"
    scen.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5]\nticks = 2\nn_initial = 4\n'
        '[data]\npath = "same.csv"\nfeatures = ["a", "b"]\nlabel = "ok"\n'
    )
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", "--scenario", str(scen), "--out", str(out)])
    _one_line(result, 2, "data.features", "every feature column is constant")
    assert not out.exists()
    rows[2] = "1,3,1"  # one varying value is enough
    (tmp_path / "same.csv").write_text("\n".join(rows) + "\n")
    assert runner.invoke(app, ["run", "--scenario", str(scen), "--out", str(out)]).exit_code == 0


def test_resume_without_a_checkpoint_says_it_starts_afresh(tmp_path, capsys):
    from lab.commands.train import say_fresh_start

    say_fresh_start(tmp_path, resume=True)
    assert "--resume: no checkpoint in" in capsys.readouterr().out
    say_fresh_start(tmp_path, resume=False)
    assert capsys.readouterr().out == ""
