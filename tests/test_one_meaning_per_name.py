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
    from lab.reproduce import pareto

    assert hasattr(pareto, "run_pareto") and not hasattr(pareto, "run_study")


def test_the_places_in_force_are_k_t_and_the_old_names_warn():
    """``k`` is the scenario's base value (the key, ``PolicyContext.k``, the tick column);
    the value in force is ``k_t`` on the observation and the decision-maker."""
    m = RecourseModel("paper", "threshold", seed=0, ticks=3, k_steps=((2, 0.5),), agents=False)
    seen = []
    for _ in range(3):
        seen.append(m.decide())
        m.respond(m.policy.recommend(seen[-1], m.streams.policy))
    assert [o.k_t for o in seen] == [9, 9, 5] and m.config.k == 9  # 4.5 rounds half up
    assert m.decision_maker.k_t == 5
    with pytest.warns(DeprecationWarning, match="k_t"):
        assert seen[-1].k == 5
    with pytest.warns(DeprecationWarning, match="m_t"):
        assert seen[-1].m == seen[-1].m_t
    with pytest.warns(DeprecationWarning, match="k_t"):
        assert m.decision_maker.k == 5


def test_experiment_is_a_kind_of_run_and_the_old_package_still_imports():
    """``lab.experiments`` (the reproductions) is ``lab.reproduce`` and ``lab.training``:
    the old module names import the same modules, with a warning."""
    import lab.reproduce.checks

    with pytest.warns(DeprecationWarning) as caught:
        old = importlib.import_module("lab.experiments.checks")
    said = [str(w.message) for w in caught]
    assert "lab.experiments.checks is deprecated: use lab.reproduce.checks" in said
    assert old is lab.reproduce.checks and old.__name__ == "lab.reproduce.checks"
    moved = importlib.import_module("lab.experiments")
    assert moved.new_name("lab.experiments.rl_training") == "lab.training"
    assert moved.new_name("lab.experiments.safear.datasets") == "lab.reproduce.safear.datasets"
    assert "episode" in importlib.import_module("lab.study.experiments").EXPERIMENTS
