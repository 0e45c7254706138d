"""The command line end to end."""

import json

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from abm.validation import ConfigError
from lab import cli
from lab.cli import app, friendly_errors, run

runner = CliRunner()

TICK_COLUMNS = [
    "tick",
    "threshold",
    "n_applicants",
    "n_accepted",
    "n_rejected",
    "n_dropped",
    "n_reapplied",
    "n_succ",
    "rr",
    "rf",
    "gini",
    "mean_cost",
]
SUMMARY_KEYS = [
    "scenario",
    "policy",
    "seed",
    "ticks",
    "rr",
    "rf",
    "gini",
    "mean_cost",
    "n_accepted",
    "n_dropped",
    "versions",
]


def test_run_writes_everything(tmp_path):
    out = tmp_path / "res"
    result = runner.invoke(
        app,
        [
            "run",
            "--scenario",
            "paper-T5",
            "--policy",
            "threshold",
            "--ticks",
            "30",
            "--seed",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "recourse reliability" in result.output
    ticks = pd.read_parquet(out / "ticks.parquet")
    assert list(ticks.columns[: len(TICK_COLUMNS)]) != [] and set(TICK_COLUMNS) <= set(
        ticks.columns
    )
    assert len(ticks) == 30
    cands = pd.read_parquet(out / "candidates.parquet")
    assert {"cid", "tick", "score", "accepted", "goal", "dx_0", "ok_0", "exit"} <= set(
        cands.columns
    )
    summary = json.loads((out / "summary.json").read_text())
    assert set(SUMMARY_KEYS) <= set(summary)
    assert summary["ticks"] == 30 and summary["seed"] == 2 and summary["scenario"] == "paper-T5"
    assert summary["rr"] == pytest.approx(ticks["rr"].mean(skipna=True))
    assert (out / "metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_with_overrides_and_toml(tmp_path):
    scen = tmp_path / "s.toml"
    scen.write_text('base = "paper"\nk = 4\n')
    out = tmp_path / "o"
    result = runner.invoke(
        app,
        [
            "run",
            "--scenario",
            str(scen),
            "--set",
            "beta=0.01",
            "--ticks",
            "5",
            "--no-events",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["k"] == 4 and summary["config"]["beta"] == 0.01
    assert not (out / "candidates.parquet").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # ours: the registry, the presets, the scenario config
        (["run", "--policy", "bogus"], "policy = 'bogus' is not registered; allowed: "),
        (["run", "--scenario", "nope"], "scenario = 'nope' is not a preset; allowed: a preset ("),
        (["run", "--set", "beta=-1"], "beta = -1 is not allowed; allowed: a number in (0, inf]"),
        (
            ["run", "--set", "k=abc"],
            "k = 'abc' is not allowed; allowed: an integer in [1, 10000000]",
        ),
        (["run", "--set", "kk=3"], "kk = 3 is not a known field; allowed: name, n_features"),
        (["run", "--set", "k"], "--set = 'k' is not allowed; allowed: KEY=VALUE"),
        (
            ["run", "--policy", "last-threshold+exact-linear:weights=wrong"],
            "weights = 'wrong' is not allowed; allowed: one of uniform, true, estimated",
        ),
        # typer's: bounds from ScenarioConfig, unknown options and commands
        (
            ["run", "--ticks", "0"],
            "--ticks = 0 is not allowed; allowed: an integer in [1, 1000000]",
        ),
        (["run", "--ticks", "abc"], "--ticks = abc is not allowed; allowed: an integer in [1, "),
        (["run", "--seed=-1"], "--seed = -1 is not allowed; allowed: an integer in [0, 2**63 - 1]"),
        (
            ["run", "--tiks", "3"],
            "option = --tiks is not an option of `run`; allowed: --scenario, --policy, --ticks",
        ),
        (["bogus"], "command = bogus is unknown; allowed: run, scenarios, policies"),
        (
            ["dashboard", "--port", "0"],
            "--port = 0 is not allowed; allowed: an integer in [1, 65535]",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args, message, tmp_path):
    if args[0] == "run":
        args = [*args, "--out", str(tmp_path / "x")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert message in lines[0]
    assert not (tmp_path / "x").exists()


def test_a_bug_is_not_a_bad_input():
    """friendly_errors reports bad input in one line but lets a TypeError (a bug) through."""

    @friendly_errors
    def buggy() -> None:
        raise TypeError("unsupported operand")

    @friendly_errors
    def bad_input() -> None:
        raise ConfigError("k = 0 is not allowed; allowed: an integer >= 1")

    with pytest.raises(TypeError):
        buggy()
    with pytest.raises(typer.Exit) as info:
        bad_input()
    assert info.value.exit_code == 2


def test_commands_are_functions_that_raise(tmp_path):
    """Called from Python, a command raises the one-line ConfigError instead of exiting."""
    with pytest.raises(ConfigError, match="beta = -1 is not allowed"):
        run(scenario="paper", ticks=2, out=tmp_path / "r", set_=["beta=-1"])
    run(scenario="motivating-example", ticks=2, out=tmp_path / "r", events=False)
    assert (tmp_path / "r" / "summary.json").exists()


def test_listings(monkeypatch):
    monkeypatch.setattr(cli.console, "width", 80)
    result = runner.invoke(app, ["scenarios"])
    assert result.exit_code == 0
    assert "motivating-example" in result.output and "paper-T5-hard" in result.output
    assert "threshold trap" in result.output and "100,000" in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    result = runner.invoke(app, ["policies"])
    assert result.exit_code == 0 and "threshold" in result.output and "none" in result.output


def test_version_flag_and_python_dash_m():
    import subprocess
    import sys

    from abm import __version__

    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and __version__ in res.output and "results schema" in res.output
    out = subprocess.run([sys.executable, "-m", "lab", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and __version__ in out.stdout


def test_set_seed_works_and_seed_option_wins(tmp_path):
    """``--set seed=N`` sets the episode seed; ``--seed`` given too wins."""
    for args, seed in ((["--set", "seed=3"], 3), (["--set", "seed=3", "--seed", "5"], 5)):
        out = tmp_path / str(seed)
        result = runner.invoke(
            app,
            [
                "run",
                "-s",
                "motivating-example",
                "--ticks",
                "2",
                "--no-events",
                "--out",
                str(out),
                *args,
            ],
        )
        assert result.exit_code == 0, result.output
        assert json.loads((out / "summary.json").read_text())["seed"] == seed


def test_run_ticks_is_validated_and_step_stops_at_the_end():
    from abm.model import RecourseModel

    model = RecourseModel("motivating-example", "threshold", agents=False)
    for bad in (-5, 1.5, "2", model.config.ticks + 1):
        with pytest.raises(ConfigError, match="ticks = .* is not allowed; allowed: an integer in"):
            model.run(ticks=bad)
    assert model.tick == 0
    model.run(ticks=0)
    assert model.tick == 0
    model.run()
    assert model.tick == model.config.ticks and not model.running
    with pytest.raises(
        RuntimeError,
        match=f"step\\(\\) at tick {model.config.ticks}, but "
        f"the scenario has ticks = {model.config.ticks}",
    ):
        model.step()
    assert model.tick == model.config.ticks


def test_the_first_screen_shows_defined_figures_and_one_line_for_the_extensions_off(tmp_path):
    wide = CliRunner(env={"COLUMNS": "400"})
    short = wide.invoke(app, ["run", "--ticks", "10", "--out", str(tmp_path / "a")])
    assert short.exit_code == 0, short.output
    assert "needs retraining" not in short.output and "MMD²" not in short.output
    # one line, which the terminal may wrap
    text = " ".join(short.output.split())
    assert text.count("world extension that is off") == 1, short.output
    off = text[text.index("figures need a world extension") :]
    assert "retraining 10" in off and "-s retraining" in off and "--card" in off
    # the full card: on the screen with --card, and in summary.json either way
    full = wide.invoke(app, ["run", "--ticks", "10", "--card", "--out", str(tmp_path / "b")])
    assert "needs retraining" in full.output and "world extension that is off" not in full.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert "domain_shift" in json.dumps(summary)
    # every extension on: no line
    all_on = wide.invoke(
        app,
        ["run", "-s", "retraining", "--ticks", "10", "--out", str(tmp_path / "c")]
        + ["--set", "outcome_delay=1", "--set", "group_share=[0.5,0.5]", "--set", "budget=10"],
    )
    assert all_on.exit_code == 0, all_on.output
    assert "world extension that is off" not in all_on.output


def test_run_resolves_one_config_and_builds_each_table_once(tmp_path, monkeypatch):
    from abm import model as model_module
    from abm.config import ScenarioConfig
    from abm.record import Recorder

    built = {"ticks": 0, "candidates": 0, "configs": 0}
    tick_table, candidate_table = Recorder._build_tick_table, Recorder.candidate_table
    replace, configure = ScenarioConfig.replace, model_module.configure

    def count(key, fn):
        def wrapped(*args, **kwargs):
            built[key] += 1
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(Recorder, "_build_tick_table", count("ticks", tick_table))
    monkeypatch.setattr(Recorder, "candidate_table", count("candidates", candidate_table))
    monkeypatch.setattr(ScenarioConfig, "replace", count("configs", replace))
    # the model takes the CLI's config as it is: no second merge of the overrides
    monkeypatch.setattr(model_module, "configure", count("configs", configure))
    res = runner.invoke(
        app,
        ["run", "--ticks", "5", "--seed", "3", "--set", "beta=0.1", "--out", str(tmp_path / "r")],
    )
    assert res.exit_code == 0, res.output
    # one replace (the overrides) and one pass through the model's configure, which
    # applies nothing; the tick table built once for the file, the summary, the card and
    # the screen; the candidate table once
    assert built == {"ticks": 1, "candidates": 1, "configs": 2}, built
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (summary["ticks"], summary["seed"], summary["config"]["beta"]) == (5, 3, 0.1)


def test_summary_labels_come_from_one_catalogue():
    """Every episode figure of a run with every extension on has one entry in the
    catalogue (abm.mechanisms.episode_figures), and the CLI's summary shows exactly the
    labelled ones it holds, in catalogue order, with those labels."""
    from abm import RecourseModel
    from abm.mechanisms import episode_figures, registered

    summary = RecourseModel("lending", "threshold", seed=1, ticks=6, agents=False).run().summary()
    catalogue = episode_figures()
    columns = [f.column for f in catalogue]
    assert len(set(columns)) == len(columns)
    # the groups' per-group means and the policy's own columns come by prefix, not by name
    prefixes = tuple(p for m in registered() for p in m.episode_prefixes) + ("policy_",)
    head = {"scenario", "policy", "seed", "ticks"}
    named = {k for k in summary if k not in head and not k.startswith(prefixes)}
    assert len(named) == 29 and named <= set(columns), named - set(columns)
    table = cli.summary_table(summary, "t")
    shown = list(table.columns[0]._cells)
    expected = [f.label for f in catalogue if f.label and f.column in summary]
    assert shown == expected and "decision model refits" in shown and "accepted" in shown
