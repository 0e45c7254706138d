"""A fitted model from a skops file ([data.model], abm.model_file): scores on raw columns,
the refusals (untrusted types, pickles, columns, scikit-learn version, no predict_proba),
the file's sha256 in the config and run ids, the linear form in the world's features, the
refit of a clone, and determinism."""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC

skio = pytest.importorskip("skops.io")

from abm import ConfigError, RecourseModel, ScenarioConfig  # noqa: E402
from abm.model_file import FileModel  # noqa: E402
from abm.provenance import file_sha256  # noqa: E402
from abm.scenarios import scenario_from_toml  # noqa: E402
from abm.world import build_world  # noqa: E402
from lab.study.spec import run_id  # noqa: E402

FEATURES = ["income", "savings", "age"]


def _table(n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "income": rng.uniform(10, 120, n).round(1),
            "savings": rng.integers(0, 40, n),
            "age": rng.integers(18, 80, n),
            "grade": rng.choice(["low", "mid", "high"], n),
        }
    )
    score = frame.income / 120 + frame.savings / 40 + rng.normal(0, 0.3, n)
    frame["repaid"] = np.where(score > 0.9, "yes", "no")
    return frame


@pytest.fixture
def table(tmp_path):
    frame = _table()
    frame.to_csv(tmp_path / "people.csv", index=False)
    return frame


def _dump(model, path) -> str:
    skio.dump(model, path)
    return str(path)


def _linear(frame, scaler="standard"):
    scaler = StandardScaler() if scaler == "standard" else scaler
    steps = [scaler] if scaler is not None else []
    return make_pipeline(*steps, LogisticRegression()).fit(frame[FEATURES], frame["repaid"])


def _config(tmp_path, model: dict, features=FEATURES, **data) -> ScenarioConfig:
    spec = {
        "path": str(tmp_path / "people.csv"),
        "features": list(features),
        "label": "repaid",
        "label_good": "yes",
        "model": model,
        **data,
    }
    return ScenarioConfig(
        data=spec, difficulty=[0.5] * len(features), n_initial=30, m=6, k=4, ticks=4
    )


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_a_pipeline_scores_the_world_as_it_scores_the_raw_table(table, tmp_path):
    """Numeric columns rebuilt by undoing the scaling, a coded column decoded to its text:
    the pipeline's own preprocessing (a one-hot encoder here) runs unchanged."""
    features = [*FEATURES, "grade"]
    pipe = make_pipeline(
        ColumnTransformer(
            [("num", StandardScaler(), FEATURES), ("cat", OneHotEncoder(), ["grade"])]
        ),
        LogisticRegression(),
    ).fit(table[features], table["repaid"])
    path = _dump(pipe, tmp_path / "m.skops")
    config = _config(
        tmp_path,
        {"path": path},
        features=features,
        categories={"grade": ["low", "mid", "high"]},
        bounds={"income": [0, 150]},
    )
    world = build_world(config)
    expected = pipe.predict_proba(table[features])[:, list(pipe.classes_).index("yes")]
    got = world.decision_model.score(world.X_train)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert not world.decision_model.is_linear  # a one-hot column is no scaling
    raw = world.decision_model.estimator.columns.frame(world.X_train)
    assert list(raw.columns) == features
    assert list(raw["grade"]) == list(table["grade"])
    np.testing.assert_allclose(raw["income"], table["income"], rtol=1e-13)


def test_a_run_on_a_file_model_is_deterministic(table, tmp_path):
    path = _dump(_linear(table), tmp_path / "m.skops")
    runs = []
    for _ in range(2):
        model = RecourseModel(_config(tmp_path, {"path": path}), "threshold", seed=3)
        model.run()
        runs.append((model.tick_table(), model.summary()))
    pd.testing.assert_frame_equal(runs[0][0], runs[1][0], check_exact=True)
    assert runs[0][1] == runs[1][1]
    assert runs[0][0]["n_accepted"].sum() > 0


def test_untrusted_types_are_refused_until_listed(table, tmp_path):
    forest = make_pipeline(RandomForestClassifier(n_estimators=5, random_state=0))
    path = _dump(forest.fit(table[FEATURES], table["repaid"]), tmp_path / "forest.skops")
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": path})
    line = _one_line(exc)
    assert line.startswith("data.model.trusted = [] is not allowed; allowed: ")
    assert "sklearn.tree._tree.Tree" in line
    config = _config(tmp_path, {"path": path, "trusted": ["sklearn.tree._tree.Tree"]})
    assert config.data.model.trusted == ("sklearn.tree._tree.Tree",)
    build_world(config)


class _Payload:
    """Unpickling this would create the marker file (what a malicious pickle does)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickle_is_never_read(table, tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "model.skops"  # named like a skops file; a pickle inside
    path.write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": str(path)})
    line = _one_line(exc)
    assert line.startswith("data.model.path = ") and "model.skops' is not allowed" in line
    assert line.endswith(
        "allowed: a file saved with skops.io.dump (model.skops is not a skops zip file)"
    )
    assert not marker.exists()


def test_a_skops_file_loads_without_pickle(table, tmp_path, monkeypatch):
    path = _dump(_linear(table), tmp_path / "m.skops")

    def refuse(*args, **kwargs):
        raise AssertionError("pickle was used")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    build_world(_config(tmp_path, {"path": path}))


def test_a_model_of_other_columns_is_refused(table, tmp_path):
    swapped = make_pipeline(StandardScaler(), LogisticRegression())
    swapped.fit(table[["savings", "income", "age"]], table["repaid"])
    path = _dump(swapped, tmp_path / "swapped.skops")
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": path})
    line = _one_line(exc)
    assert line.startswith("data.model.path = ")
    assert "in order: income, savings, age (it expects ['savings', 'income', 'age'])" in line
    bare = LogisticRegression().fit(table[FEATURES].to_numpy(), table["repaid"])
    with pytest.raises(ConfigError, match="it was fitted on an array, not a DataFrame"):
        _config(tmp_path, {"path": _dump(bare, tmp_path / "bare.skops")})


def _with_version(src, dst, version: str) -> None:
    """A copy of skops file ``src`` whose stored scikit-learn versions read ``version``."""
    ours = f'\\"{sklearn.__version__}\\"'
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "schema.json":
                text = data.decode()
                assert ours in text
                data = text.replace(ours, f'\\"{version}\\"').encode()
            zout.writestr(item, data)


def test_a_model_saved_with_another_sklearn_is_refused_naming_both(table, tmp_path):
    src = _dump(_linear(table), tmp_path / "m.skops")
    old = tmp_path / "old.skops"
    _with_version(src, old, "1.0.2")
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": str(old)})
    line = _one_line(exc)
    assert line.startswith("data.model.path = ")
    assert f"the installed scikit-learn {sklearn.__version__}" in line
    assert "saved with 1.0.2" in line


def test_a_model_without_predict_proba_is_refused(table, tmp_path):
    svm = make_pipeline(StandardScaler(), LinearSVC()).fit(table[FEATURES], table["repaid"])
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": _dump(svm, tmp_path / "svm.skops")})
    assert "a classifier with predict_proba (Pipeline has none)" in _one_line(exc)


def test_label_good_must_be_a_class_of_the_model(table, tmp_path):
    path = _dump(_linear(table), tmp_path / "m.skops")
    frame = table.assign(repaid=np.where(table["repaid"] == "yes", "good", "bad"))
    frame.to_csv(tmp_path / "people.csv", index=False)
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, {"path": path}, label_good="good")
    assert _one_line(exc) == (
        "data.label_good = 'good' is not allowed; allowed: a class of the model in "
        "data.model.path: no, yes"
    )


def test_classifier_and_model_together_are_refused(table, tmp_path):
    path = _dump(_linear(table), tmp_path / "m.skops")
    clf = {"estimator": "sklearn.linear_model.LogisticRegression"}
    with pytest.raises(ConfigError, match=r"^data\.model = .* not both$"):
        _config(tmp_path, {"path": path}, classifier=clf)
    with pytest.raises(ConfigError, match=r"^data\.model\.trusted = 'x' is not allowed"):
        _config(tmp_path, {"path": path, "trusted": "x"})
    with pytest.raises(ConfigError, match=r"^data\.model\.path = .* is not allowed; allowed: an"):
        _config(tmp_path, {"path": str(tmp_path / "missing.skops")})


def test_the_sha256_is_in_the_config_and_the_run_id(table, tmp_path):
    path = tmp_path / "m.skops"
    _dump(_linear(table), path)
    config = _config(tmp_path, {"path": str(path)})
    entry = config.to_dict()["data"]["model"]
    assert entry == {"path": str(path), "trusted": [], "sha256": file_sha256(path)}
    first = run_id(config.to_dict(), "threshold")
    assert ScenarioConfig.from_dict(config.to_dict()) == config
    _dump(_linear(table, MinMaxScaler()), path)  # the same path, another model
    with pytest.raises(ConfigError, match=r"^data\.model\.sha256 = .* current sha256"):
        build_world(config)
    again = _config(tmp_path, {"path": str(path)})
    assert again.data.model.sha256 != entry["sha256"]
    assert run_id(again.to_dict(), "threshold") != first


def test_the_toml_model_path_is_relative_to_the_file(table, tmp_path):
    _dump(_linear(table), tmp_path / "m.skops")
    toml = tmp_path / "mine.toml"
    toml.write_text(
        'base = "paper"\ndifficulty = [0.5, 0.5, 0.5]\n'
        '[data]\npath = "people.csv"\nfeatures = ["income", "savings", "age"]\n'
        'label = "repaid"\nlabel_good = "yes"\n[data.model]\npath = "m.skops"\n'
    )
    config = scenario_from_toml(toml)
    assert config.data.model.path == str((tmp_path / "m.skops").resolve())


@pytest.mark.parametrize(
    "scaler", [None, StandardScaler(), MinMaxScaler(), MaxAbsScaler()], ids=repr
)
@pytest.mark.parametrize("good", ["yes", "no"])
def test_the_linear_form_in_world_features_is_exact(table, tmp_path, scaler, good):
    pipe = _linear(table, scaler)
    path = _dump(pipe, tmp_path / "m.skops")
    config = _config(tmp_path, {"path": path}, bounds={"age": [0, 100]}, label_good=good)
    model = build_world(config).decision_model
    assert model.is_linear
    u = np.random.default_rng(1).random((500, 3)) * 1.4 - 0.2  # inside and outside the box
    raw = model.estimator.columns.frame(u)
    sign = 1.0 if list(pipe.classes_).index(good) == 1 else -1.0
    np.testing.assert_allclose(
        model.logit(u), sign * pipe.decision_function(raw), rtol=0, atol=1e-9
    )
    pos = list(pipe.classes_).index(good)
    np.testing.assert_allclose(model.score(u), pipe.predict_proba(raw)[:, pos], rtol=0, atol=1e-12)


def test_other_linear_classifiers_and_a_bare_estimator_are_linear(table, tmp_path):
    sgd = make_pipeline(StandardScaler(), SGDClassifier(loss="log_loss", random_state=0))
    path = _dump(sgd.fit(table[FEATURES], table["repaid"]), tmp_path / "sgd.skops")
    assert build_world(_config(tmp_path, {"path": path})).decision_model.is_linear
    bare = LogisticRegression().fit(table[FEATURES], table["repaid"])  # no pipeline at all
    model = build_world(_config(tmp_path, {"path": _dump(bare, tmp_path / "lr.skops")}))
    u = np.random.default_rng(2).random((50, 3))
    raw = model.decision_model.estimator.columns.frame(u)
    np.testing.assert_allclose(
        model.decision_model.logit(u), bare.decision_function(raw), rtol=0, atol=1e-9
    )


def test_a_non_linear_model_refuses_linear_policies_in_one_line(table, tmp_path):
    forest = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=5, random_state=0))
    path = _dump(forest.fit(table[FEATURES], table["repaid"]), tmp_path / "forest.skops")
    config = _config(tmp_path, {"path": path, "trusted": ["sklearn.tree._tree.Tree"]})
    with pytest.raises(ConfigError) as exc:
        RecourseModel(config, "threshold")
    assert _one_line(exc) == (
        "exact-linear needs a linear decision model (logistic regression), got "
        "Pipeline(StandardScaler, RandomForestClassifier) from data.model, not linear in "
        "the world's features (its last step RandomForestClassifier has no coef_ of shape (1, 3))"
    )
    RecourseModel(config, "none").run()  # a policy that needs no model runs


def test_a_refit_fits_a_clone_of_the_model_on_raw_columns(table, tmp_path):
    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=5))
    pipe.fit(table[FEATURES], table["repaid"])
    path = _dump(pipe, tmp_path / "forest.skops")
    config = _config(tmp_path, {"path": path, "trusted": ["sklearn.tree._tree.Tree"]})
    world = build_world(config)
    wrapped = world.decision_model.estimator
    assert isinstance(wrapped, FileModel)
    X = world.X_train[::2]
    y = (np.arange(X.shape[0]) % 3 == 0).astype(np.int8)
    refit = clone(wrapped).fit(X, y)
    assert refit.model is not pipe and refit.model is not wrapped.model
    # random_state left at None is set to world_seed: a refit draws no global state
    reference = clone(pipe).set_params(randomforestclassifier__random_state=config.world_seed)
    reference.fit(wrapped.columns.frame(X), np.where(y == 1, "yes", "no"))
    expected = reference.predict_proba(wrapped.columns.frame(world.X_train))[:, 1]
    np.testing.assert_array_equal(refit.predict_proba(world.X_train)[:, 1], expected)
    again = clone(wrapped).fit(X, y).predict_proba(world.X_train)
    np.testing.assert_array_equal(again, refit.predict_proba(world.X_train))
    assert wrapped.model.predict_proba(table[FEATURES]) == pytest.approx(
        pipe.predict_proba(table[FEATURES])
    )
