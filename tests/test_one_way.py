"""One-way actionability (issue 53 item 2): the keys, the refusal, the model's safety net,
exact-linear's one-way fill and its cap on the features changed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cli_checks import one_error_line
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.special import logit
from typer.testing import CliRunner

from abm import ConfigError, RecourseModel, ScenarioConfig
from abm.advice import checked_advice
from abm.interfaces import Recommendation
from abm.scenarios import get_scenario
from abm.testing import PolicyCheckError, check_policy
from lab.cli import app
from policies.composite import CompositePolicy
from policies.goals import LastThreshold
from policies.recommenders import (
    ExactLinear,
    capped_counterfactuals,
    exact_linear_counterfactuals,
)

PAPER = get_scenario("paper")
ONE_WAY = {"immutable": (9,), "increase": (0, 1, 2), "decrease": (5, 7)}


# -- the keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "start"),
    [
        ({"increase": (10,)}, "increase = (10,) is not allowed; allowed: distinct feature"),
        ({"decrease": (1, 1)}, "decrease = (1, 1) is not allowed"),
        ({"immutable": (3,), "increase": (3,)}, "increase = (3,) is not allowed"),
        ({"increase": (2,), "decrease": (2,)}, "increase = (2,) is not allowed"),
        ({"increase": ("a",)}, "increase"),
    ],
)
def test_bad_one_way_fields_are_one_line_errors(fields, start):
    with pytest.raises(ConfigError) as info:
        PAPER.replace(**fields)
    text = str(info.value)
    assert text.startswith(start), text
    assert "\n" not in text


def test_one_way_fields_stay_out_of_the_dict_at_their_default():
    """Run ids are hashed from to_dict(): worlds without one-way features keep theirs."""
    assert not {"increase", "decrease"} & set(PAPER.to_dict())
    c = PAPER.replace(increase=(0,), decrease=(4,))
    d = c.to_dict()
    assert d["increase"] == [0] and d["decrease"] == [4]
    assert ScenarioConfig.from_dict(d) == c != PAPER


def test_cli_refuses_a_bad_one_way_key_with_exit_2():
    result = CliRunner().invoke(app, ["run", "--set", "decrease=[0, 12]"])
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "decrease = (0, 12)" in line


@pytest.fixture
def table(tmp_path):
    rows = {
        "income": [10, 20, 30, 40, 50, 60, 15, 35],
        "debt": [5, 2, 0, 5, 3, 4, 2, 1],
        "age": [20, 30, 40, 50, 60, 25, 33, 47],
        "ok": [1, 0, 1, 0, 1, 0, 1, 0],
    }
    path = tmp_path / "people.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def data_config(path, **keys) -> ScenarioConfig:
    spec = {"path": str(path), "features": ["income", "debt", "age"], "label": "ok", **keys}
    return ScenarioConfig(data=spec, difficulty=[0.5] * 3, n_initial=6, m=3, k=2, ticks=3)


def test_data_names_become_indices(table):
    c = data_config(table, immutable=["age"], increase=["income"], decrease=["debt"])
    assert (c.immutable, c.increase, c.decrease) == ((2,), (0,), (1,))
    assert "increase" not in data_config(table).to_dict()["data"]


@pytest.mark.parametrize(
    ("keys", "start"),
    [
        ({"increase": ["salary"]}, "data.increase = 'salary' is not allowed; allowed: names"),
        ({"immutable": ["age"], "decrease": ["age"]}, "data.decrease = 'age' is not allowed"),
        ({"increase": ["debt"], "decrease": ["debt"]}, "data.increase = 'debt' is not allowed"),
        ({"increase": "income"}, "data.increase = 'income' is not allowed; allowed: a list"),
    ],
)
def test_bad_data_one_way_keys_are_one_line_errors(table, keys, start):
    with pytest.raises(ConfigError) as info:
        data_config(table, **keys)
    text = str(info.value)
    assert text.startswith(start), text
    assert "\n" not in text


# -- the refusal and the safety net -----------------------------------------------------------
class Pushy:
    """Moves every mutable feature up by 0.1 (where it can): ignores directions."""

    def __init__(self, declares: bool = False) -> None:
        self.keeps_one_way = declares

    def prepare(self, ctx):
        self.ctx = ctx

    def recommend(self, obs, rng):
        X_cf = np.where(self.ctx.mutable, np.minimum(obs.X + 0.1, 1.0), obs.X)
        return Recommendation(goal=np.maximum(obs.scores + 0.01, obs.threshold), X_cf=X_cf)

    def observe(self, feedback):
        pass


def test_a_policy_that_declares_nothing_is_refused_in_one_line():
    config = PAPER.replace(ticks=3, **ONE_WAY)
    with pytest.raises(ConfigError) as info:
        RecourseModel(config, Pushy())
    text = str(info.value)
    assert text.startswith("policy 'Pushy' does not keep one-way features (increase [0, 1, 2]")
    assert "\n" not in text
    RecourseModel(PAPER.replace(ticks=3), Pushy())  # fine where nothing is one-way


def test_the_model_refuses_advice_that_moves_the_wrong_way():
    config = PAPER.replace(ticks=3, **ONE_WAY)
    model = RecourseModel(config, Pushy(declares=True))
    with pytest.raises(RuntimeError, match="raised feature 5, which advice may only lower"):
        model.step()


def test_checked_advice_direction_rule():
    X = np.array([[0.5, 0.5, 0.5]])
    up, down = np.array([[0.6, 0.5, 0.5]]), np.array([[0.5, 0.4, 0.5]])
    d = np.array([1, 1, 0], np.int8)
    for X_cf in (up, np.array([[0.5, 0.5, 0.1]])):
        checked_advice(X, Recommendation(goal=[0.9], X_cf=X_cf), None, "p", d)
    with pytest.raises(RuntimeError, match="lowered feature 1, which advice may only raise"):
        checked_advice(X, Recommendation(goal=[0.9], X_cf=down), None, "p", d)


def test_check_policy_catches_a_wrong_way_move_and_a_broken_cap():
    with pytest.raises(PolicyCheckError) as info:
        check_policy(lambda: Pushy(declares=True), scenarios=["one-way"], ticks=2)
    assert info.value.rule == "one-way"
    assert "moved feature 5, which may only fall" in str(info.value)

    class Capped(Pushy):
        max_changes = 2

    with pytest.raises(PolicyCheckError) as info:
        check_policy(Capped, scenarios=["paper"], ticks=2)
    assert info.value.rule == "one-way"
    assert "more than max_changes = 2" in str(info.value)


# -- exact-linear -----------------------------------------------------------------------------
def test_exact_linear_moves_one_way_features_only_their_way():
    """In the one-way world a decrease-only feature with w > 0 cannot help: the advice is
    the plain fill with it held, and increase-only features still carry advice."""
    report = check_policy("threshold", scenarios=["one-way"], ticks=4)
    assert report.status("one-way") == "passed"
    config = PAPER.replace(ticks=4, **ONE_WAY)
    held = PAPER.replace(ticks=4, immutable=(5, 7, 9))
    a, b = RecourseModel(config, "threshold"), RecourseModel(held, "threshold")
    for _ in range(4):
        a.step()
        b.step()
    ta, tb = a.candidate_table(), b.candidate_table()
    pd.testing.assert_frame_equal(ta, tb)
    moved = ta[[f"dx_{i}" for i in range(10)]].fillna(0.0).to_numpy()
    assert (moved != 0).any() and (moved[:, [5, 7, 9]] == 0).all() and (moved >= 0).all()


def test_capped_fill_known_answer():
    """w = (1, 0.5), unit costs, x = (0.9, 0): 0.4 logit units missing. Uncapped, feature 0
    fills its room of 0.1 first, then feature 1 moves 0.6 (cost 0.7). With one change, only
    feature 1 alone reaches: +0.8 (cost 0.8)."""
    w, b, cost = np.array([1.0, 0.5]), 0.0, np.ones(2)
    X = np.array([[0.9, 0.0]])
    goal = np.array([1 / (1 + np.exp(-1.3))])  # logit 1.3 = 0.9 + 0.4
    free = exact_linear_counterfactuals(X, goal, w, b, cost, np.ones(2, bool))
    np.testing.assert_allclose(free, [[1.0, 0.6]])
    one = capped_counterfactuals(X, goal, w, b, cost, np.ones(2, bool), 1)
    np.testing.assert_allclose(one, [[0.9, 0.8]])


def test_capped_fill_matches_a_mixed_integer_program():
    """The cheapest capped move, against HiGHS on the MILP: min c.delta s.t. w.delta >=
    need, 0 <= delta_i <= room_i * u_i, sum u <= K, u binary (w > 0, moves up only)."""
    gen = np.random.default_rng(7)
    for _ in range(40):
        z, cap = 6, int(gen.integers(1, 4))
        w, cost = gen.uniform(0.1, 1.0, z), gen.uniform(0.1, 1.0, z)
        x = gen.uniform(0.0, 1.0, (1, z))
        need = float(gen.uniform(0.05, 1.5))
        goal = 1 / (1 + np.exp(-(w @ x[0] + need)))
        got = capped_counterfactuals(x, np.array([goal]), w, 0.0, cost, np.ones(z, bool), cap)
        room = 1.0 - x[0]
        c = np.concatenate([cost, np.zeros(z)])
        rows = [
            LinearConstraint(np.concatenate([w, np.zeros(z)])[None], lb=logit(goal) - w @ x[0]),
            LinearConstraint(np.hstack([np.eye(z), -np.diag(room)]), ub=0.0),
            LinearConstraint(np.concatenate([np.zeros(z), np.ones(z)])[None], ub=cap),
        ]
        integrality = np.concatenate([np.zeros(z), np.ones(z)])
        res = milp(c, constraints=rows, integrality=integrality, bounds=Bounds(0, 1))
        if not res.success:
            assert np.isnan(got).all()
            continue
        delta = got[0] - x[0]
        assert np.count_nonzero(np.abs(delta) > 1e-12) <= cap
        assert cost @ delta == pytest.approx(res.fun, abs=1e-7)


def test_exact_linear_with_a_cap_passes_check_policy_and_is_refused_when_too_wide():
    report = check_policy("last-threshold+exact-linear:max_changes=1", scenarios=["one-way"])
    assert report.status("one-way") == "passed"
    policy = CompositePolicy(LastThreshold(), ExactLinear(max_changes=1))
    assert policy.max_changes == 1 and policy.keeps_one_way
    with pytest.raises(ConfigError, match="max_changes = 1 is not allowed; allowed: None"):
        ExactLinear(weights="estimated", explore_share=0.1, max_changes=1)


def test_no_one_way_features_change_nothing():
    """Declared or not, a world without one-way features runs as before, bit for bit
    (the golden cases pin the figures; here: advice equal with the check on and off)."""
    a = RecourseModel(PAPER.replace(ticks=5), "threshold")
    b = RecourseModel(PAPER.replace(ticks=5), "last-threshold+exact-linear:max_changes=10")
    for _ in range(5):
        a.step()
        b.step()
    pd.testing.assert_frame_equal(a.candidate_table(), b.candidate_table())
