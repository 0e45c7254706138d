"""World generation and pluggable decision models."""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.naive_bayes import GaussianNB

from abm import RecourseModel, get_scenario
from abm.validation import ConfigError
from abm.world import build_world


def test_training_set_normalised_and_labels_balanced_enough():
    w = build_world(get_scenario("paper"))
    assert w.X_train.shape == (10_000, 10)
    np.testing.assert_allclose(w.X_train.min(axis=0), 0.0)
    np.testing.assert_allclose(w.X_train.max(axis=0), 1.0)
    assert 0.2 < w.y_train.mean() < 0.8
    np.testing.assert_allclose(w.label_weights.sum(), 1.0)


def test_world_depends_on_world_seed_only():
    a = build_world(get_scenario("paper").replace(seed=5))
    b = build_world(get_scenario("paper"))
    c = build_world(get_scenario("paper").replace(world_seed=1))
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.X_train, c.X_train)


def test_fast_linear_score_equals_predict_proba():
    w = build_world(get_scenario("paper"))
    X = w.X_train[:500]
    np.testing.assert_allclose(
        w.decision_model.score(X), w.decision_model.estimator.predict_proba(X)[:, 1], rtol=1e-12
    )


@pytest.mark.parametrize(
    "estimator", [GaussianNB(), RandomForestClassifier(n_estimators=10, random_state=0)]
)
def test_any_probabilistic_classifier_plugs_in(estimator):
    model = RecourseModel("paper", "none", ticks=5, estimator=estimator).run()
    assert not model.world.decision_model.is_linear
    assert (model.tick_table()["n_accepted"] == 9).all()


def test_exact_linear_refuses_nonlinear_models():
    with pytest.raises(ConfigError, match="linear decision model"):
        RecourseModel("paper", "threshold", estimator=GaussianNB())


def test_classifier_without_predict_proba_is_rejected():
    from sklearn.svm import LinearSVC

    with pytest.raises(TypeError, match="predict_proba"):
        RecourseModel("paper", "none", estimator=LinearSVC())
