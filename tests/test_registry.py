"""The policy registry: spec parsing, typed parameters, one-line errors, plugins."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from abm.registry import REGISTRY, Part, PolicySpecError, Registry, make_policy, parse_spec
from policies.composite import CompositePolicy

ROOT = Path(__file__).resolve().parents[1]

# -- parse_spec ------------------------------------------------------------------------
LOWER = "abcdefghijklmnopqrstuvwxyz"
names = st.text(LOWER + "0123456789-", min_size=1, max_size=12)
keys = st.text(LOWER + "_", min_size=1, max_size=8)
values = st.text(LOWER + LOWER.upper() + "0123456789._/-", min_size=1, max_size=10)
parts = st.builds(Part, names, st.dictionaries(keys, values, max_size=4))


@settings(max_examples=100, deadline=None)
@given(st.lists(parts, min_size=1, max_size=2))
def test_parse_spec_round_trips(spec_parts):
    text = "+".join(str(p) for p in spec_parts)
    assert parse_spec(text) == tuple(spec_parts)
    # spaces around names, keys and values are not part of them
    spaced = text.replace("+", " + ").replace(",", " , ").replace("=", " = ")
    assert parse_spec(spaced) == tuple(spec_parts)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "a registry name or GOAL+RECOMMENDER"),
        ("a+b+c", "has 3 parts"),
        ("threshold:margin", "must look like key=value"),
        ("threshold:=1", "must look like key=value"),
        ("threshold:a=1,a=2", "'a' is given twice"),
        (":a=1", "has an empty name"),
    ],
)
def test_malformed_specs_are_one_line_errors(spec, message):
    with pytest.raises(PolicySpecError, match=re.escape(message)) as err:
        parse_spec(spec)
    assert "\n" not in str(err.value)


# -- typed parameters and their errors ---------------------------------------------------
@pytest.mark.parametrize(
    "spec, message",
    [
        ("nope", "policy = 'nope' is not registered; allowed: "),
        ("last-threshold+nope", "recommender = 'nope' is not registered"),
        ("nope+exact-linear", "goal selector = 'nope' is not registered"),
        (
            "threshold:margn=1",
            "policy 'threshold' has no parameter 'margn'; allowed: d0, eta0, explore_share, max_changes, optimism, weights",
        ),
        ("none:x=1", "policy 'none' has no parameter 'x'; allowed: no parameters"),
        (
            "last-threshold:margn=1+exact-linear",
            "goal selector 'last-threshold' has no parameter 'margn'; allowed: margin",
        ),
        (
            "last-threshold:margin=abc+exact-linear",
            "goal selector 'last-threshold': margin = 'abc' is not allowed; allowed: a number in (-1, 1)",
        ),
        (
            "last-threshold:margin=1.5+exact-linear",
            "goal selector 'last-threshold': margin = '1.5' is not allowed; allowed: a number in (-1, 1)",
        ),
        (
            "threshold:weights=cheap",
            "policy 'threshold': weights = 'cheap' is not allowed; allowed: one of uniform, true, estimated",
        ),
        (
            "threshold-wachter:lam=-1",
            "policy 'threshold-wachter': lam = '-1' is not allowed; allowed: a number > 0",
        ),
        (
            "threshold-ustun:levels=2.5",
            "policy 'threshold-ustun': levels = '2.5' is not allowed; allowed: an integer in [1, 1000]",
        ),
        (
            "safear:levels=9",
            "policy 'safear': levels = '9' is not allowed; allowed: an integer in [2, 8]",
        ),
        (
            "safear:beta_risk=nan",
            "policy 'safear': beta_risk = 'nan' is not allowed; allowed: a number in [0, 100]",
        ),
        (
            "hybrid-ustun:lvls=3",
            "policy 'hybrid-ustun' has no parameter 'lvls'; allowed: allow_mismatch, batch, gap, levels, max_changes, path",
        ),
        (
            "threshold-dice:method=grid",
            "policy 'threshold-dice': method = 'grid' is not allowed; allowed: one of random, genetic",
        ),
    ],
)
def test_bad_specs_name_the_part_and_the_parameter(spec, message):
    for check in (REGISTRY.validate, make_policy):  # checked before anything is built
        with pytest.raises(PolicySpecError) as err:
            check(spec)
        assert message in str(err.value)
        assert "\n" not in str(err.value)


def test_spec_texts_are_typed_by_annotation():
    pol = make_policy("last-threshold:margin=0.05+exact-linear:weights=estimated,eta0=0.1")
    assert isinstance(pol, CompositePolicy)
    assert pol.goal.margin == 0.05 and pol.recommender.weights == "estimated"
    assert type(pol.recommender.eta0) is float and pol.recommender.eta0 == 0.1
    wachter = make_policy("threshold-wachter:lam=50,max_iter=20").recommender
    assert (wachter.lam, wachter.max_iter) == (50.0, 20) and type(wachter.max_iter) is int
    safear = make_policy("safear:levels=4,retry=1,risk=lpsd")
    assert (safear.levels, safear.retry, safear.risk) == (4, True, "lpsd")
    assert make_policy("threshold-ustun:batch=true,solver=milp").recommender.batch is True


def test_composites_forward_keywords_to_their_recommender():
    assert make_policy("threshold-true").recommender.weights == "true"
    assert make_policy("threshold-true:weights=uniform").recommender.weights == "uniform"
    assert make_policy("threshold", weights="estimated").recommender.weights == "estimated"
    # the keyword of a GOAL+RECOMMENDER spec goes to the recommender
    assert make_policy("last-threshold+exact-linear", weights="true").recommender.weights == "true"
    hybrid = make_policy("hybrid-wachter:path=somewhere,lam=3")
    assert str(hybrid.goal.path) == "somewhere" and hybrid.recommender.lam == 3.0


def test_validate_builds_nothing_and_returns_the_spec():
    spec = "last-threshold:margin=0.02+ustun:levels=5"
    assert REGISTRY.validate(spec) == spec


# -- every registered part -----------------------------------------------------------------
def _registered(kind):
    return [(kind, name) for name in REGISTRY.describe(kind)]


ALL = _registered("policy") + _registered("goal") + _registered("recommender")


@pytest.mark.parametrize("kind, name", ALL)
def test_every_part_builds_with_defaults_and_rejects_unknown_keys(kind, name):
    assert REGISTRY.make(kind, name) is not None
    entry = REGISTRY.get(kind, name)
    with pytest.raises(ValidationError):
        entry.params.model_validate({"no_such_parameter": 1})
    with pytest.raises(PolicySpecError, match=f"{name}' has no parameter 'no_such_parameter'"):
        REGISTRY.make(kind, f"{name}:no_such_parameter=1")
    assert REGISTRY.describe(kind)[name].strip()


def test_every_policy_is_listed_with_its_family():
    assert {"standard", "baselines", "lookahead", "rl", "safear"} <= set(REGISTRY.plugins)
    assert {"none", "threshold", "threshold-ustun", "rl", "safear", "lookahead"} <= set(
        REGISTRY.describe()
    )


# -- a registry of one's own -------------------------------------------------------------
class Halfway:
    """A goal selector for the tests: halfway between the threshold and 1."""

    def __init__(
        self, share: Annotated[float, Field(ge=0, le=1)] = 0.5, mode: Literal["up", "down"] = "up"
    ) -> None:
        self.share, self.mode = share, mode


def own_registry() -> Registry:
    reg = Registry(load_plugins=False)
    reg.goal("halfway", Halfway, "halfway to 1")
    reg.recommender("echo", lambda scale=1.0: ("echo", scale), "untyped")  # rejected below
    return reg


def test_untyped_parameters_are_refused_at_registration():
    with pytest.raises(TypeError, match="'scale' needs a type annotation"):
        own_registry()


def test_own_registry_add_remove_and_combine():
    reg = Registry(load_plugins=False)
    reg.goal("halfway", Halfway, "halfway to 1")

    def echo(scale: float = 1.0, **extra: Any) -> tuple:
        return ("echo", scale, extra)

    reg.recommender("echo", echo, "echo")
    reg.combiner(lambda goal, rec: (goal, rec))
    reg.policy("both", reg.composite("halfway", "echo", scale=2.0), "halfway + echo")
    goal, rec = reg.make_policy("both:scale=3")
    assert isinstance(goal, Halfway) and rec == ("echo", 3.0, {})
    goal, rec = reg.make_policy("halfway:share=0.25,mode=down+echo")
    assert (goal.share, goal.mode) == (0.25, "down")
    # an open factory without a forward target takes unknown keywords untyped
    assert reg.make("recommender", "echo:anything=x") == ("echo", 1.0, {"anything": "x"})
    with pytest.raises(ValueError, match="registered twice"):
        reg.goal("halfway", Halfway, "again")
    with pytest.raises(ValueError, match="name = 'a\\+b' is not allowed"):
        reg.goal("a+b", Halfway, "bad name")
    assert reg.remove("goal", "halfway").factory is Halfway
    with pytest.raises(PolicySpecError, match="goal selector = 'halfway' is not registered"):
        reg.make_policy("both")
    with pytest.raises(PolicySpecError, match="not registered"):
        reg.remove("goal", "halfway")


def test_a_composite_without_a_combiner_is_an_error():
    reg = Registry(load_plugins=False)
    reg.goal("halfway", Halfway, "halfway to 1")
    reg.recommender("r", Halfway, "a stand-in recommender")
    with pytest.raises(PolicySpecError, match="no family registered a way to combine"):
        reg.make_policy("halfway+r")


# -- a plugin package ----------------------------------------------------------------------
PLUGIN_CHECK = textwrap.dedent(
    """
    from abm.model import RecourseModel
    from abm.registry import REGISTRY

    assert REGISTRY.plugins["recent-max"] == "recourse_abm_recent_max:register"
    assert "recent-max" in REGISTRY and "recent-max" in REGISTRY.describe("goal")
    ticks = RecourseModel("paper", "recent-max", seed=0).run().tick_table()
    rejected = ticks["n_rejected"] > 0
    # mean_goal averages one goal over the rejected: equal up to rounding, never below
    assert (ticks["mean_goal"][rejected] >= ticks["threshold"][rejected] - 1e-12).all()
    assert (ticks["mean_goal"][rejected] > ticks["threshold"][rejected] + 1e-6).any()
    # window=1 is the standard last-threshold goal: the same run as `threshold`
    one = RecourseModel("paper", "recent-max:window=1+exact-linear", seed=0).run().tick_table()
    assert one.equals(RecourseModel("paper", "threshold", seed=0).run().tick_table())
    assert not ticks.equals(one)
    try:
        REGISTRY.validate("recent-max:window=abc+exact-linear")
    except ValueError as exc:
        assert "goal selector 'recent-max': window = 'abc'" in str(exc), exc
    else:
        raise AssertionError("window=abc was accepted")
    print("plugin ok")
    """
)


@pytest.mark.slow
def test_example_plugin_installs_and_adds_a_policy(tmp_path):
    # build from a copy: setuptools writes build/ and egg-info next to the sources
    src = tmp_path / "src"
    shutil.copytree(ROOT / "examples" / "plugin", src)
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    out = subprocess.run(
        [sys.executable, "-c", PLUGIN_CHECK],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "plugin ok" in out.stdout
