"""One meaning per name (issue 54, item 6): the renamed public names keep a deprecated
alias that warns for one minor version; the internal ones are gone."""

from __future__ import annotations

import importlib

import pytest

import abm.config
import abm.testing
from abm import RecourseModel
from abm.world import DecisionModel, World


def test_the_check_worlds_are_check_worlds_and_the_old_name_warns():
    assert abm.testing.WORLDS["paper"].__class__ is abm.testing.CheckWorld
    assert abm.testing.CheckWorld is not World
    with pytest.warns(DeprecationWarning, match="CheckWorld"):
        assert abm.testing.World is abm.testing.CheckWorld
    with pytest.raises(AttributeError):
        abm.testing.NoSuchName  # noqa: B018


def test_the_tick_state_is_tick_state_and_last_tick_warns():
    m = RecourseModel("paper", "threshold", seed=0, ticks=3, agents=False).run()
    state = m.tick_state
    assert state.tick == 2
    with pytest.warns(DeprecationWarning, match="tick_state"):
        assert m.last_tick is state
    # last_tick keeps one meaning: a candidate's column
    assert "last_tick" in m.population.data


def test_decision_model_is_the_class_and_the_setting_has_its_own_name():
    assert isinstance(DecisionModel, type)
    assert not hasattr(abm.config, "DecisionModel")
    assert abm.config.DECISION_MODELS == ("logistic", "mlp", "dp", "ei")


def test_code_used_only_by_the_application_lives_there():
    with pytest.raises(ImportError):
        importlib.import_module("policies.improvement.data")
    assert importlib.import_module("lab.datasets").DATASETS
    from lab.experiments import pareto

    assert hasattr(pareto, "run_pareto") and not hasattr(pareto, "run_study")
