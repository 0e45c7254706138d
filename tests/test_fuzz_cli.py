"""Property-based fuzzing of ``recourse-abm run`` and the scenario loader (issue 16, item 8).

Any input either runs (exit 0) or is refused with exactly one line ``error: ...`` and exit
status 2; never a traceback. Episodes are 2 ticks of the smallest preset; the fields that
size the world (and so the run time) are drawn from invalid or small values only.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from abm.config import ScenarioConfig
from lab.cli import app

# 150 examples of a whole run each (about 1 s apiece): the slow tier
pytestmark = pytest.mark.slow
runner = CliRunner()
BASE = ["run", "--scenario", "motivating-example", "--ticks", "2", "--no-events"]
# fields that set the world's size: a valid large value would only make the test slow
SIZES = {"n_initial", "m", "n_train", "n_features", "ticks", "k", "validity", "data"}
FIELDS = sorted(set(ScenarioConfig.fields()) - SIZES)
MARKUP = ["[bold]", "[/]", "[red]x[/red]", "[link=x]", "\\[", "]", "[", "{", "}", "=", "+", ":"]

numbers = st.one_of(
    st.integers(min_value=-(10**20), max_value=3),
    st.integers(min_value=2**63, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
)
texts = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=16),
    st.lists(st.sampled_from(MARKUP), min_size=1, max_size=4).map("".join),
)
values = st.one_of(numbers.map(str), texts, st.sampled_from(["nan", "inf", "-inf", "1e400", ""]))
small = st.one_of(st.integers(min_value=-5, max_value=30), st.sampled_from([10**20, -(10**20)]))


def _check(result) -> None:
    text = result.output
    assert "Traceback" not in text, text
    assert result.exit_code in (0, 2), (result.exit_code, text, result.exception)
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), text


def _invoke(extra: list[str]):
    """Run in a temporary directory; a fuzzed ``--out`` stays inside it (no ``..``, no root)."""
    with tempfile.TemporaryDirectory() as tmp:
        if extra[:1] == ["--out"] and extra[1]:
            extra = ["--out", os.path.join(tmp, "o", extra[1].replace("..", "_").lstrip("/"))]
        cwd = os.getcwd()
        os.chdir(tmp)  # a relative path the command writes lands here, never in the checkout
        try:
            return runner.invoke(app, [*BASE, "--out", str(Path(tmp) / "out"), *extra])
        finally:
            os.chdir(cwd)


@given(
    option=st.sampled_from(["--ticks", "--seed", "--policy", "--scenario", "--out", "--events"]),
    value=values,
)
@settings(max_examples=50, deadline=None)
def test_run_option_values(option, value):
    _check(_invoke([option, value]))


@given(key=st.one_of(st.sampled_from(FIELDS), texts), value=st.one_of(values, small.map(str)))
@settings(max_examples=50, deadline=None)
def test_run_set_overrides(key, value):
    _check(_invoke(["--set", f"{key}={value}"]))


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else repr(value)
            if math.isfinite(value)
            else ("inf" if value > 0 else "-inf")
        )
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string (JSON's escapes are TOML's)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


toml_values = st.one_of(
    st.booleans(),
    small,
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
    st.lists(st.one_of(small, st.floats(min_value=-2, max_value=2)), max_size=4),
)


@given(
    fields=st.dictionaries(
        st.one_of(st.sampled_from([*ScenarioConfig.fields(), "base"]), st.just("bogus")),
        toml_values,
        max_size=5,
    ),
    raw=st.one_of(st.none(), texts),
)
@settings(max_examples=50, deadline=None)
def test_scenario_files(fields, raw):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.toml"
        if raw is not None:
            path.write_text(raw)
        else:
            fields.pop("data", None)  # a data source names files: the corpus covers it
            if "base" in fields and fields["base"] is not None:
                fields["base"] = fields["base"] if isinstance(fields["base"], str) else "paper"
            path.write_text("".join(f"{k} = {_toml_value(v)}\n" for k, v in fields.items()))
        _check(
            runner.invoke(
                app,
                [
                    "run",
                    "--scenario",
                    str(path),
                    "--ticks",
                    "2",
                    "--no-events",
                    "--out",
                    str(Path(tmp) / "out"),
                ],
            )
        )


axis_values = st.one_of(
    st.lists(st.integers(1, 9), min_size=1, max_size=3),
    st.lists(toml_values, min_size=0, max_size=4),
    st.fixed_dictionaries({"start": small, "stop": small, "step": st.one_of(small, st.floats())}),
    toml_values,
)


@given(
    sweep=st.dictionaries(
        st.one_of(
            st.sampled_from([*ScenarioConfig.fields(), "policy", "world_seed"]),
            st.just("bogus"),
        ),
        axis_values,
        max_size=3,
    ),
    # weighted towards plans that can pass, so the valid paths are fuzzed too
    seeds=st.one_of(
        st.integers(1, 3), st.integers(1, 3), small, texts, st.lists(small, max_size=3)
    ),
    scenario=st.one_of(
        st.just("paper"), st.just("paper"), st.sampled_from(["lending", "nosuch"]), texts
    ),
)
@settings(max_examples=60, deadline=None)
def test_study_grids(sweep, seeds, scenario):
    """``study plan`` of any grid: a plan (exit 0) or one line (exit 2), never a traceback."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "grid.toml"
        lines = [f"scenario = {_toml_value(scenario)}", f"seeds = {_toml_value(seeds)}", "[sweep]"]
        for key, value in sweep.items():
            if isinstance(value, dict):
                inner = ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items())
                lines.append(f"{key} = {{{inner}}}")
            else:
                lines.append(f"{key} = {_toml_value(value)}")
        path.write_text("\n".join(lines) + "\n")
        _check(runner.invoke(app, ["study", "plan", str(path)]))
