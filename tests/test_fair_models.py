"""Fairness-regularised decision models (decision_model = "dp" / "ei", long-term-fairness §1)."""

import numpy as np
import pytest

from abm.config import ScenarioConfig
from abm.fair_models import FairLogisticRegression
from abm.validation import ConfigError
from abm.world import build_world

GROUPS = dict(group_share=(0.5, 0.5), group_shift=((-0.1,) * 5 + (0.0,) * 5, (0.0,) * 10))


def _gap(world):
    scores = world.decision_model.score(world.X_train)
    g = world.group_train
    return abs((scores[g == 0] >= 0.5).mean() - (scores[g == 1] >= 0.5).mean())


def test_dp_model_narrows_the_acceptance_gap_at_a_small_price_in_accuracy():
    plain = build_world(ScenarioConfig(**GROUPS))
    dp = build_world(ScenarioConfig(decision_model="dp", **GROUPS))
    assert dp.decision_model.is_linear
    assert _gap(dp) < _gap(plain) - 0.05
    acc = [((w.decision_model.score(w.X_train) >= 0.5) == w.y_train).mean() for w in (plain, dp)]
    assert acc[1] > acc[0] - 0.03


@pytest.mark.slow  # two full EI fits
def test_ei_model_is_a_real_fit_and_deterministic():
    a = build_world(ScenarioConfig(decision_model="ei", **GROUPS)).decision_model.weights
    b = FairLogisticRegression(objective="ei")
    w = build_world(ScenarioConfig(**GROUPS))
    b.fit(w.X_train, w.y_train, groups=w.group_train)
    c = FairLogisticRegression(objective="ei").fit(w.X_train, w.y_train, groups=w.group_train)
    np.testing.assert_array_equal(b.coef_, c.coef_)
    assert not np.allclose(a, w.decision_model.weights)


def test_one_group_gives_the_plain_logistic_fit():
    w = build_world(ScenarioConfig())
    fair = FairLogisticRegression(objective="dp").fit(
        w.X_train, w.y_train, groups=np.zeros(len(w.y_train), int)
    )
    np.testing.assert_allclose(fair.coef_[0], w.decision_model.weights)


def test_fair_models_refuse_retraining_and_need_groups():
    with pytest.raises(ConfigError, match="^decision_model"):
        ScenarioConfig(decision_model="dp", retrain_every=5, retrain_data="shifted")
    w = build_world(ScenarioConfig())
    with pytest.raises(ValueError, match="groups"):
        FairLogisticRegression(objective="ei").fit(w.X_train, w.y_train)
