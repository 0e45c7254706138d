"""Bad input, third round (issue "Reliability, third round"): a grid too large to list,
settings that mean nothing without another, finite but absurd values, and input that was
read and then ignored.

Every command-line case ends as in tests/test_bad_input.py: exit status 2, exactly one line
``error: ...`` naming the option or field and its value, no traceback, nothing written
where ``--out`` points.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_checks import one_error_line
from typer.testing import CliRunner

from abm import RecourseModel
from abm.config import K_MAX, ScenarioConfig
from abm.scenarios import PRESETS
from abm.validation import ConfigError
from lab.cli import app
from lab.study import Study
from lab.study import spec as study_spec

ROOT = Path(__file__).parents[1]
runner = CliRunner()
DRIFT = [0.1] * 5 + [-0.1] * 5
HUGE_GRID = """\
scenario = "paper"
[sweep]
beta = {start = 0.01, stop = 1.0, num = 1000000}
k = {start = 1, stop = 1000000, step = 1}
"""


def _refused(argv: list[str], tmp_path: Path, *named: str) -> str:
    """Run the CLI with ``argv`` (``{out}``: a fresh path) and return its one error line."""
    out = tmp_path / "out"
    argv = [a.replace("{out}", str(out)) for a in argv]
    line = one_error_line(runner.invoke(app, argv))
    for name in named:
        assert name in line, (name, line)
    assert not out.exists()
    assert not (tmp_path / "results").exists()
    return line


# -- 1. a grid is counted before it is listed -----------------------------------------------
class Listed(Exception):
    """Raised by a patched axis lister: the study got as far as listing values."""


@pytest.fixture
def no_listing(monkeypatch):
    def refuse(*args, **kwargs):
        raise Listed

    monkeypatch.setattr(study_spec, "_axis_values", refuse)


def test_a_grid_of_10_to_the_12_runs_is_refused_before_any_axis_is_listed(tmp_path, no_listing):
    path = tmp_path / "huge.toml"
    path.write_text(HUGE_GRID)
    with pytest.raises(ConfigError) as err:
        Study.from_toml(path)
    text = str(err.value)
    assert "the study has 1,000,000,000,000 runs; at most 1,000,000 are allowed" in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("keys", "runs"),
    [
        # seeds count: 1,000 values x 2,000 seeds
        ({"sweep": {"k": {"start": 1, "stop": 1000, "step": 1}}, "seeds": 2000}, "2,000,000"),
        # world_seeds count too: 1,000 worlds x 1,000 seeds x 2
        ({"world_seeds": 1000, "seeds": 1000, "sweep": {"k": [1, 2]}}, "2,000,000"),
        # a list axis and a range axis
        (
            {"sweep": {"k": list(range(1, 1001)), "beta": {"start": 0.1, "stop": 1, "num": 1001}}},
            "1,001,000",
        ),
        # a zip group counts once (its length), not once per column
        (
            {"zip": [{"k": list(range(1, 2001)), "m": list(range(2000))}], "seeds": 1000},
            "2,000,000",
        ),
        # a registered selection counts the registered policies only
        (
            {
                "sweep": {
                    "policy": {"registered": ["threshold", "none", "not-a-policy"]},
                    "k": {"start": 1, "stop": 600000, "step": 1},
                }
            },
            "1,200,000",
        ),
    ],
)
def test_every_kind_of_axis_is_counted_before_listing(keys, runs, no_listing):
    with pytest.raises(ConfigError, match=f"the study has {runs} runs; at most 1,000,000"):
        Study.build("paper", **keys)


def test_a_zip_group_of_a_million_rows_is_within_the_limit(no_listing):
    # counted once: 10^6 runs, not 10^12, so the study goes on to list its axes
    rows = {
        "k": {"start": 1, "stop": 1000000, "step": 1},
        "m": {"start": 0, "stop": 999999, "step": 1},
    }
    with pytest.raises(Listed):
        Study.build("paper", zip=[rows])


def test_ranges_too_wide_for_a_float_are_counted_not_overflowed():
    for sweep in (
        {"beta": {"start": 0.0, "stop": 1e308, "step": 5e-324}},
        {"beta": {"start": -1e308, "stop": 1e308, "step": 1e-300}},
        {"k": {"start": 1, "stop": 10**400, "step": 1}},
    ):
        with pytest.raises(ConfigError, match=r"the study has more than 10\^\d+ runs; at most"):
            Study.build("paper", sweep=sweep)


def test_malformed_axes_still_get_their_own_message():
    # the count passes over them (each counts 1); listing names the problem
    with pytest.raises(ConfigError, match="lists must have equal lengths"):
        Study.build("paper", zip=[{"m": list(range(10**6)), "k": [1]}], seeds=10)
    with pytest.raises(ConfigError, match=r"sweep.k.*stop"):
        Study.build("paper", sweep={"k": {"start": 5, "stop": 1}}, seeds=10**6)


def test_study_plan_refuses_a_huge_grid_at_once(tmp_path):
    path = tmp_path / "huge.toml"
    path.write_text(HUGE_GRID)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, "-m", "lab", "study", "plan", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "1,000,000,000,000 runs; at most 1,000,000 are allowed" in lines[0]


def test_no_repeats_is_linear_and_names_the_repeats():
    with pytest.raises(ConfigError, match=r"sweep.k lists 5 more than once"):
        Study.build("paper", sweep={"k": [*range(1, 200_000), 5]})


# -- 2. settings that mean nothing without another ------------------------------------------
COMPANIONS = [
    ({"decision_model": "dp"}, "decision_model = 'dp'", "group_share"),
    ({"decision_model": "ei"}, "decision_model = 'ei'", "group_share"),
    ({"decision_model": "ei", "group_share": [1.0]}, "decision_model = 'ei'", "group_share"),
    ({"retrain_data": "shifted"}, "retrain_data = 'shifted'", "retrain_drift"),
    ({"retrain_every": 5, "retrain_data": "shifted"}, "retrain_data = 'shifted'", "retrain_drift"),
    ({"retrain_drift": DRIFT}, "retrain_drift = (0.1,", "retrain_data"),
    (
        {"retrain_every": 5, "outcome_delay": 2, "retrain_drift": DRIFT},
        "retrain_drift = (0.1,",
        "retrain_data = outcomes",
    ),
    ({"outcome_delay_dist": "geometric"}, "outcome_delay_dist = 'geometric'", "outcome_delay"),
    # a drift without refits: nothing is ever refitted on the drifting data
    (
        {"retrain_drift": DRIFT, "retrain_data": "shifted"},
        "retrain_drift = (0.1,",
        "retrain_every = 0",
    ),
    (
        {"retrain_drift": DRIFT, "retrain_data": "both", "outcome_delay": 2},
        "retrain_drift = (0.1,",
        "retrain_every",
    ),
]


@pytest.mark.parametrize(("fields", "culprit", "companion"), COMPANIONS)
def test_a_setting_without_its_companion_names_both(fields, culprit, companion):
    with pytest.raises(ConfigError) as err:
        ScenarioConfig(**fields)
    text = str(err.value)
    assert text.startswith(culprit) and companion in text.split("allowed:")[1], text
    assert "\n" not in text


def test_the_companions_together_are_fine():
    groups = {"group_share": (0.5, 0.5)}
    assert ScenarioConfig(decision_model="dp", **groups).decision_model == "dp"
    assert ScenarioConfig(decision_model="ei", group_share=(0.2, 0.3, 0.5)).n_groups == 3
    ScenarioConfig(retrain_every=5, retrain_data="shifted", retrain_drift=DRIFT)
    ScenarioConfig(retrain_every=5, retrain_data="both", retrain_drift=DRIFT, outcome_delay=2)
    ScenarioConfig(retrain_every=5, retrain_data="both", outcome_delay=2)  # drift optional
    ScenarioConfig(outcome_delay=3, outcome_delay_dist="geometric")


def test_presets_and_shipped_studies_keep_validating():
    for name, config in PRESETS.items():
        assert ScenarioConfig.from_dict(config.to_dict()) == config, name
    # robust-retrain runs `retraining` with refits and without: the point without clears
    # the drift and the shifted data with them (a drift without refits is refused)
    study = Study.from_toml(ROOT / "studies" / "robust-retrain.toml")
    points = {
        (r.config.get("retrain_every", 0), bool(r.config.get("retrain_drift", ())))
        for r in study.runs()
    }
    assert points == {(0, False), (10, True)}
    assert Study.from_toml(ROOT / "studies" / "fairness-scarf.toml").n_runs > 0


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("decision_model=dp", "decision_model = 'dp'"),
        ("decision_model=ei", "decision_model = 'ei'"),
        ("retrain_data=shifted", "retrain_data = 'shifted'"),
        ("retrain_drift=[0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1]", "retrain_drift = (0.1,"),
        ("outcome_delay_dist=geometric", "outcome_delay_dist = 'geometric'"),
    ],
)
def test_cli_refuses_a_setting_without_its_companion(value, named, tmp_path):
    _refused(["run", "-s", "motivating-example", "--set", value, "--out", "{out}"], tmp_path, named)


def test_scenario_file_with_a_lone_setting_is_refused(tmp_path):
    path = tmp_path / "lone.toml"
    path.write_text('base = "paper"\noutcome_delay_dist = "geometric"\n')
    _refused(
        ["run", "-s", str(path), "--out", "{out}"],
        tmp_path,
        "outcome_delay_dist = 'geometric'",
        "outcome_delay",
    )


# -- 3. finite but absurd values ------------------------------------------------------------
ABSURD = [
    ({"causal_graph": [[0, 1, 1e300]]}, "causal_graph[0] = (0, 1, 1e+300)", "[-10, 10]"),
    (
        {"causal_graph": [[0, 1, 0.5], [1, 2, -10.5]]},
        "causal_graph[1] = (1, 2, -10.5)",
        "[-10, 10]",
    ),
    ({"causal_graph": [[0, 1, math.inf]]}, "causal_graph[0] = (0, 1, inf)", "finite"),
    ({"label_noise": math.inf}, "label_noise = inf", "[0, inf)"),
    ({"label_noise": math.nan}, "label_noise = nan", "[0, inf)"),
    ({"immutable": [0, 0]}, "immutable = (0, 0)", "distinct"),
    ({"immutable": [3, 1, 3]}, "immutable = (3, 1, 3)", "distinct"),
    ({"k": 10**20}, "k = 100000000000000000000", "[1, 10000000]"),
    ({"k": K_MAX + 1}, f"k = {K_MAX + 1}", "[1, 10000000]"),
    ({"k": 2**63}, f"k = {2**63}", "[1, 10000000]"),
    ({"weight_range": [1, math.inf]}, "weight_range = [1, inf]", "hi <= 1e+06"),
    ({"weight_range": [0.1, 1e300]}, "weight_range = [0.1, 1e+300]", "hi <= 1e+06"),
]


@pytest.mark.parametrize(("fields", "shown", "allowed"), ABSURD)
def test_absurd_values_are_refused_with_their_bound(fields, shown, allowed):
    with pytest.raises(ConfigError) as err:
        ScenarioConfig(**fields)
    text = str(err.value)
    assert text.startswith(shown) and allowed in text.split("allowed:")[1], text


def test_values_at_the_stated_bounds_are_fine():
    assert ScenarioConfig(causal_graph=[[0, 1, 10.0], [1, 2, -10]]).causal_graph[1][2] == -10.0
    assert ScenarioConfig(k=K_MAX).k == K_MAX == 10_000_000
    assert ScenarioConfig(weight_range=[1, 1e6]).weight_range == (1.0, 1e6)
    assert ScenarioConfig(label_noise=1e6).label_noise == 1e6
    assert ScenarioConfig(immutable=[3, 1]).immutable == (3, 1)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("causal_graph=[[0, 1, 1e300]]", "causal_graph[0] = (0, 1, 1e+300)"),
        ("label_noise=inf", "label_noise = inf"),
        ("immutable=[0, 0]", "immutable = (0, 0)"),
        ("k=100000000000000000000", "k = 100000000000000000000"),
        ("weight_range=[1, inf]", "weight_range = [1, inf]"),
    ],
)
def test_cli_refuses_absurd_values(value, named, tmp_path):
    _refused(["run", "-s", "motivating-example", "--set", value, "--out", "{out}"], tmp_path, named)


# -- 4. input read and then ignored ---------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "--ticks", "2", "--set", "ticks=abc"], ("ticks = 'abc'",)),
        (["run", "--ticks", "2", "--set", "ticks=0"], ("ticks = 0",)),
        (["run", "--seed", "2", "--set", "seed=-4"], ("seed = -4",)),
        (["run", "--seed", "2", "--set", "seed=x"], ("seed = 'x'",)),
        (["run", "--set", "k=2\nbeta=-1"], ("--set = 'k=2\\nbeta=-1'",)),
        (["run", "--set", "k=2\r\nbeta=1"], ("--set = 'k=2\\r\\nbeta=1'",)),
        (["run", "--set", "beta=0.01", "--set", "k=[1,\n2]"], ("--set = ",)),
        (["evaluate", "--seeds", "2", "--seed", "5"], ("--seed = 5", "--seeds = '2'")),
        (["evaluate", "--seeds", "2", "--episodes", "3"], ("--episodes = 3", "--seeds = '2'")),
        (["evaluate", "--seed", "0", "--seeds", "0-1"], ("--seed = 0", "--seeds = '0-1'")),
        (["calibrate", "--seeds", "2", "--seed", "5"], ("--seed = 5", "--seeds = '2'")),
        (["calibrate", "--episodes", "10", "--seeds", "2"], ("--episodes = 10", "--seeds")),
    ],
)
def test_input_that_would_be_ignored_is_refused(argv, named, tmp_path):
    extra = ["-s", "motivating-example"] if argv[0] == "run" else []
    _refused([*argv, *extra, "--out", "{out}"], tmp_path, *named)


def test_an_option_still_wins_over_a_valid_set_value(tmp_path):
    result = runner.invoke(
        app,
        [
            "run",
            "-s",
            "motivating-example",
            "--set",
            "ticks=3",
            "--ticks",
            "2",
            "--no-events",
            "--out",
            str(tmp_path / "r"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "2 ticks" in result.output


def test_evaluate_parse_overrides_refuses_a_newline_too(tmp_path):
    _refused(
        ["evaluate", "--episodes", "1", "--set", "ticks=2\nk=1", "--out", "{out}"],
        tmp_path,
        "--set = 'ticks=2\\nk=1'",
    )


@pytest.mark.parametrize(
    ("keyword", "value"),
    [
        ("agents", "yes"),
        ("agents", 1),
        ("agents", None),
        ("record_events", "no"),
        ("allow_mismatch", 0.0),
    ],
)
def test_recourse_model_flags_must_be_bools(keyword, value):
    with pytest.raises(ConfigError) as err:
        RecourseModel("motivating-example", "none", **{keyword: value})
    assert str(err.value) == f"{keyword} = {value!r} is not allowed; allowed: true or false"


def test_recourse_model_takes_numpy_bools():
    model = RecourseModel(
        "motivating-example", "none", agents=np.bool_(False), record_events=np.bool_(True)
    )
    assert model._handles.on is False and model.record_events is True
