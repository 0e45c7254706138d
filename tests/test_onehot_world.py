"""One-hot groups in the world (issue 53 item 1): the keys and their one-line errors, rows
drawn one-hot, a switch attempted as one change (eq. 7 with |dx|·x_cf = c), its cost
c(a, b)·d_b, the model's safety net, the refusal, check_policy's rule, [data.onehot] and a
fitted Pipeline that one-hot encodes the raw column."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from cli_checks import one_error_line
from test_one_way import Pushy
from typer.testing import CliRunner

from abm import ConfigError, RecourseModel, ScenarioConfig
from abm.advice import checked_advice
from abm.batch import Episodes
from abm.interfaces import Recommendation
from abm.metrics import recommendation_cost
from abm.onehot import DEFAULT_SWITCH_COST, OneHot
from abm.population import Population
from abm.scenarios import get_scenario
from abm.stages import implement
from abm.testing import PolicyCheckError, check_policy
from lab.cli import app
from lab.study.spec import run_id

PAPER = get_scenario("paper")
COSTS = ((0.0, 0.2, 0.6), (0.3, 0.0, math.inf), (0.4, 0.4, 0.0))
GROUPED = {"onehot": ((2, 3, 4),), "switch_cost": (COSTS,)}


def group(costs=COSTS) -> OneHot:
    return OneHot.build(((2, 3, 4),), (costs,), ("housing",))


def rows(categories, z: int = 6) -> np.ndarray:
    """Rows (n, z) at 0.5 with the group 2-4 set to ``categories`` (n,)."""
    X = np.full((len(categories), z), 0.5)
    X[:, 2:5] = 0.0
    X[np.arange(len(categories)), 2 + np.asarray(categories)] = 1.0
    return X


# -- the keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "start"),
    [
        ({"onehot": ((2,),)}, "onehot[0] = (2,) is not allowed; allowed: groups of at least 2"),
        ({"onehot": ((2, 3), (3, 4))}, "onehot[1] = (3, 4) is not allowed"),
        ({"onehot": ((8, 10),)}, "onehot[0] = (8, 10) is not allowed"),
        ({"onehot": ((2, 3),), "increase": (2,)}, "onehot[0] = (2, 3) is not allowed"),
        ({"onehot": ((2, 3),), "immutable": (2,)}, "onehot[0] = (2, 3) is not allowed"),
        (
            {"onehot": ((2, 3),), "switch_cost": (((0.0, 1.0), (0.3, 0.0)),)},
            "switch_cost[0] = ((0.0, 1.0), (0.3, 0.0)) is not allowed; allowed: a 2 x 2 table",
        ),
        (
            {"onehot": ((2, 3),), "switch_cost": (((0.1, 0.5), (0.3, 0.0)),)},
            "switch_cost[0] = ((0.1, 0.5), (0.3, 0.0)) is not allowed",
        ),
        ({"switch_cost": (((0.0, 0.5), (0.5, 0.0)),)}, "switch_cost = "),
    ],
)
def test_bad_onehot_fields_are_one_line_errors(fields, start):
    with pytest.raises(ConfigError) as info:
        PAPER.replace(**fields)
    text = str(info.value)
    assert text.startswith(start), text
    assert "\n" not in text


def test_onehot_fields_stay_out_of_the_dict_at_their_default():
    """Run ids are hashed from to_dict(): worlds without groups keep theirs."""
    assert not {"onehot", "switch_cost"} & set(PAPER.to_dict())
    c = PAPER.replace(**GROUPED)
    d = c.to_dict()
    assert d["onehot"] == [[2, 3, 4]] and d["switch_cost"][0][1][2] == math.inf
    assert ScenarioConfig.from_dict(d) == c != PAPER
    assert run_id(d, "none") != run_id(PAPER.to_dict(), "none")


def test_cli_refuses_a_bad_onehot_key_with_exit_2():
    result = CliRunner().invoke(app, ["run", "--set", "onehot=[[3]]"])
    assert result.exit_code == 2, result.output
    assert "onehot[0] = (3,)" in one_error_line(result)


# -- rows, costs and the attempt ---------------------------------------------------------------
def test_drawn_rows_are_one_hot_and_keep_the_other_columns():
    """The same normals as the world without groups: only the group's columns differ, each
    row one-hot at its largest draw (so both worlds pair)."""
    c = PAPER.replace(onehot=((2, 3, 4), (6, 8)), ticks=5)
    a, b = RecourseModel(c, "none"), RecourseModel(PAPER.replace(ticks=5), "none")
    oh = a.context.onehot
    assert oh.valid(a.world.X_train).all()
    rest = [0, 1, 5, 7, 9]
    assert np.array_equal(a.world.X_train[:, rest], b.world.X_train[:, rest])
    top = b.world.X_train[:, [2, 3, 4]].argmax(axis=1)
    assert np.array_equal(a.world.X_train[:, [2, 3, 4]].argmax(axis=1), top)
    for model in (a, b):
        while model.running:
            model.step()
    assert oh.valid(a.population.X).all() and len(a.population)


def test_moves_and_costs_count_a_switch_once():
    oh = group()
    X = rows([0, 1, 2, 0])
    X_cf = rows([1, 0, 0, 0])
    X_cf[3, 0] = 0.8  # a numeric move, no switch
    d = np.array([0.5, 0.5, 0.9, 0.7, 0.6, 0.5])
    moves = oh.moves(X, X_cf)
    assert moves[0, 3] == 0.2 and moves[0, 2] == 0.0  # 0 -> 1 costs c(0, 1) on 1's column
    assert moves[1, 2] == 0.3 and moves[2, 2] == 0.4
    cost = recommendation_cost(X, X_cf, d, oh)
    assert np.allclose(cost, [0.2 * 0.7, 0.3 * 0.9, 0.4 * 0.9, 0.3 * 0.5])
    # L1 would charge 2 a switch whatever the pair
    assert np.allclose(recommendation_cost(X, X_cf, d)[:3], [1.6, 1.6, 1.5])
    default = OneHot.build(((2, 3, 4),))
    assert default.costs[0][0, 2] == DEFAULT_SWITCH_COST and default.costs[0][1, 1] == 0


def test_problem_names_the_row_and_the_group():
    oh = group()
    X = rows([0, 1, 2])
    assert oh.problem(X, rows([2, 0, 1])) is None
    half = X.copy()
    half[1, 2:5] = (0.5, 0.5, 0.0)
    row, why = oh.problem(X, half)
    assert row == 1 and "housing (features [2, 3, 4]) not one-hot" in why
    row, why = oh.problem(X, rows([0, 2, 2]))  # 1 -> 2 is not allowed
    assert row == 1 and "from category 1 to 2" in why and "not allowed" in why
    snapped = oh.snap(X, half + rows([0, 0, 0]) * 0)
    assert oh.problem(X, snapped) is None


def _stayers(X, X_cf) -> Population:
    pop = Population.empty(X.shape[1], X.shape[0])
    pop.data.update(X=X.copy(), X_obs=X.copy(), X_cf=X_cf.copy())
    pop.data["advised"][:] = True
    return pop


class _Plain:
    propagates = False

    def propagate(self, X, X_new, intervened):
        return None

    class scorer:  # noqa: N801 - a stand-in with the model's one method
        @staticmethod
        def score(X):
            return X.sum(axis=1)


def _episode(seed: int) -> Episodes:
    """One episode drawing from ``seed``, with nothing carried on and the stand-in scorer."""
    one = SimpleNamespace(
        streams=SimpleNamespace(implementation=np.random.default_rng(seed)),
        mechanisms=_Plain(),
        scorer=_Plain.scorer,
    )
    return Episodes([one])


def test_a_switch_succeeds_as_one_change_with_eq7_at_its_cost():
    """p = 1 - exp(-beta (1/c - 1) / d_b): a known answer within 4 standard errors; the
    source indicator always follows its target; effort c d_b per made switch."""
    oh, n, beta = group(), 20_000, 0.4
    X, X_cf = rows([0] * n), rows([1] * n)  # every row 0 -> 1 at c = 0.2
    d = np.full(6, 0.5)
    d[3] = 0.8
    stayers = _stayers(X, X_cf)
    out = implement(stayers, np.array([n]), d, beta, _episode(3), None, oh)
    p = -math.expm1(-beta * (1 / 0.2 - 1) / 0.8)
    made = out.implemented.mean()
    assert abs(made - p) < 4 * math.sqrt(p * (1 - p) / n)
    X_new = stayers.data["X"]
    assert oh.valid(X_new).all()
    assert np.array_equal(X_new[:, 3] == 1, out.implemented)
    assert np.allclose(out.effort, np.where(out.implemented, 0.2 * 0.8, 0.0))
    # without groups the 0 -> 1 jump has attainability 0: it never succeeds
    plain = implement(_stayers(X, X_cf), np.array([n]), d, beta, _episode(3))
    assert not plain.implemented.any()


# -- the safety net, the refusal and check_policy ------------------------------------------------
def test_the_model_refuses_invalid_advice():
    oh = group()
    X = rows([0, 1])
    ok = checked_advice(X, Recommendation(np.ones(2), rows([1, 0])), None, "p", None, oh)
    assert ok.advised.all()
    with pytest.raises(RuntimeError, match=r"policy 'p' switched group housing .* \(row 1\)"):
        checked_advice(X, Recommendation(np.ones(2), rows([1, 2])), None, "p", None, oh)
    half = rows([1, 0])
    half[0, 2:5] = (0.2, 0.8, 0.0)
    with pytest.raises(RuntimeError, match=r"not one-hot: \[0.2, 0.8, 0.0\] \(row 0\)"):
        checked_advice(X, Recommendation(np.ones(2), half), None, "p", None, oh)


class Relaxed(Pushy):
    """test_one_way's Pushy (every mutable feature up by 0.1): it leaves a group with
    fractions; ``declares`` says it keeps one-hot groups all the same."""

    def __init__(self, declares: bool = False) -> None:
        super().__init__()
        self.keeps_onehot = declares


def test_an_undeclared_policy_is_refused_in_one_line_naming_the_group():
    with pytest.raises(ConfigError) as info:
        RecourseModel(PAPER.replace(**GROUPED), Relaxed())
    text = str(info.value)
    assert "does not keep one-hot groups valid (onehot[0] (features [2, 3, 4]))" in text
    assert "\n" not in text


def test_check_policy_catches_a_policy_that_breaks_a_group():
    with pytest.raises(PolicyCheckError, match="onehot") as info:
        check_policy(lambda: Relaxed(declares=True), scenarios=["onehot"], ticks=3)
    assert "not one-hot" in str(info.value)


def test_a_policy_refused_by_the_world_is_reported_not_run():
    report = check_policy(
        lambda: Relaxed(), scenarios=["paper", "onehot"], ticks=3, skip=["goal-reached"]
    )
    assert "does not keep one-hot groups" in report.not_run["onehot"]


# -- [data.onehot] --------------------------------------------------------------------------------
@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(2)
    n = 60
    frame = pd.DataFrame(
        {
            "income": rng.uniform(10, 60, n).round(1),
            "housing": rng.choice(["own", "rent", "free"], n),
            "debt": rng.integers(0, 9, n),
        }
    )
    frame["ok"] = ((frame.income / 60 + (frame.housing == "own") * 0.4) > 0.7).astype(int)
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path, frame


def data_config(path, **keys) -> ScenarioConfig:
    spec = {
        "path": str(path),
        "features": ["income", "housing", "debt"],
        "label": "ok",
        "onehot": {"housing": {}},
        **keys,
    }
    return ScenarioConfig(data=spec, difficulty=[0.5] * 5, n_initial=6, m=3, k=2, ticks=3)


def test_a_onehot_column_becomes_indicators(table):
    path, frame = table
    c = data_config(
        path,
        onehot={"housing": {"cost": {"own": 0.8}, "switches": {"own": ["rent"]}}},
        immutable=[],
    )
    assert c.data.world_features == (
        "income",
        "housing=free",
        "housing=own",
        "housing=rent",
        "debt",
    )
    assert c.onehot == ((1, 2, 3),)
    inf = math.inf
    assert c.switch_cost == (((0.0, 0.8, 0.5), (inf, 0.0, 0.5), (0.5, 0.8, 0.0)),)
    m = RecourseModel(c, "none")
    X = m.world.X_train
    assert m.context.onehot.names == ("housing",)
    assert np.array_equal(X[:, 2] == 1, (frame.housing == "own").to_numpy())
    assert ScenarioConfig.from_dict(c.to_dict()) == c
    fixed = data_config(path, immutable=["housing"])
    assert fixed.immutable == (1, 2, 3)


@pytest.mark.parametrize(
    ("keys", "start"),
    [
        (
            {"onehot": {"housing": {"cost": {"castle": 0.4}}}},
            "data.onehot.housing.cost = 'castle' is not allowed; allowed: a category",
        ),
        (
            {"onehot": {"housing": {"cost": {"own": 1.0}}}},
            "data.onehot.housing.cost.own = 1.0 is not allowed; allowed: a switching cost in (0, 1)",
        ),
        ({"onehot": {"salary": {}}}, "data.onehot.salary = 'salary' is not allowed"),
        (
            {"onehot": {"housing": {}}, "decrease": ["housing"]},
            "data.onehot.housing = 'housing' is not allowed",
        ),
        (
            {"onehot": {"housing": {"values": ["own", "rent"]}}},
            "data.onehot.housing.values = ['own', 'rent'] is not allowed; allowed: every value",
        ),
        (
            {"onehot": {"housing": {"switches": {"own": ["boat"]}}}},
            "data.onehot.housing.switches.own = ['boat'] is not allowed",
        ),
        ({"onehot": {"housing": {"colour": 1}}}, "data.onehot"),
    ],
)
def test_bad_data_onehot_keys_are_one_line_errors(table, keys, start):
    with pytest.raises(ConfigError) as info:
        data_config(table[0], **keys)
    text = str(info.value)
    assert text.startswith(start), text
    assert "\n" not in text


def test_a_pipeline_that_one_hot_encodes_is_linear_in_the_world(table, tmp_path):
    """The model gets the raw column back (the category of the active indicator), and a
    ColumnTransformer of a scaler and a OneHotEncoder then a logistic regression is
    w . u + b on world rows: exact-linear advice may use it."""
    skio = pytest.importorskip("skops.io")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    path, frame = table
    features = ["income", "housing", "debt"]
    pipe = make_pipeline(
        ColumnTransformer(
            [
                ("num", StandardScaler(), ["income", "debt"]),
                ("cat", OneHotEncoder(drop="first"), ["housing"]),
            ]
        ),
        LogisticRegression(),
    ).fit(frame[features], frame["ok"])
    skio.dump(pipe, tmp_path / "m.skops")
    c = data_config(path, model={"path": str(tmp_path / "m.skops")})
    m = RecourseModel(c, "threshold")
    scorer = m.world.decision_model
    assert scorer.is_linear
    X = m.world.X_train
    want = pipe.predict_proba(frame[features])[:, 1]
    assert np.allclose(scorer.score(X), want, rtol=0, atol=1e-12)
    assert list(scorer.estimator.columns.frame(X)["housing"]) == list(frame.housing)
    while m.running:
        m.step()
    assert m.context.onehot.valid(m.population.X).all()


def test_cli_refuses_a_bad_data_onehot_key_with_exit_2(table, tmp_path):
    path, _ = table
    scenario = tmp_path / "bad.toml"
    scenario.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5, 0.5, 0.5, 0.5]\n[data]\n'
        f'path = "{path}"\nfeatures = ["income", "housing", "debt"]\nlabel = "ok"\n'
        "[data.onehot.housing]\ncost = { own = 1.5 }\n"
    )
    result = CliRunner().invoke(app, ["run", "-s", str(scenario), "--ticks", "2"])
    assert result.exit_code == 2, result.output
    assert "data.onehot.housing.cost.own = 1.5 is not allowed" in one_error_line(result)


def test_a_skipped_rule_never_fails():
    """check_policy's skip holds for goal-reached too (its check is shared with
    model-in-force's): Pushy's +0.1 falls short of its goals, reported as skipped."""
    with pytest.raises(PolicyCheckError, match="goal-reached"):
        check_policy(lambda: Relaxed(), scenarios=["paper"], ticks=2)
    report = check_policy(lambda: Relaxed(), scenarios=["paper"], ticks=2, skip=["goal-reached"])
    assert report.status("goal-reached") == "skipped"
