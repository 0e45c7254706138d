"""The batched engine (abm/batch.py): every episode of a batch is bit for bit the run made
alone (tick and candidate tables, summary, outcome card, the pool it ends with), on every
preset with its extensions on, with ragged episodes, per-episode worlds and capacities."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from abm import ConfigError, RecourseModel
from abm.batch import Batch
from abm.scenarios import PRESETS


def _same_run(alone: RecourseModel, batched: RecourseModel) -> None:
    pd.testing.assert_frame_equal(alone.tick_table(), batched.tick_table(), check_exact=True)
    pd.testing.assert_frame_equal(
        alone.candidate_table(), batched.candidate_table(), check_exact=True
    )
    a, b = alone.summary(), batched.summary()
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), key
    card_a, card_b = alone.outcome_card(), batched.outcome_card()
    assert repr(card_a.values) == repr(card_b.values) and card_a.reasons == card_b.reasons
    for column, values in alone.population.data.items():
        assert np.array_equal(values, batched.population.data[column], equal_nan=True), column
    assert alone.tick == batched.tick and alone.running == batched.running


def _batch_and_alone(scenario, policy, seeds, **overrides_each):
    """(alone, batched): the runs of ``seeds`` made alone and as one batch; keyword
    arguments are lists, one override per episode."""
    kw = [{k: v[i] for k, v in overrides_each.items()} for i in range(len(seeds))]
    alone = [
        RecourseModel(scenario, policy, seed=s, **k).run() for s, k in zip(seeds, kw, strict=True)
    ]
    models = [RecourseModel(scenario, policy, seed=s, **k) for s, k in zip(seeds, kw, strict=True)]
    Batch.of(models).run()
    return alone, models


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(s, marks=pytest.mark.slow) if s == "large" else s for s in sorted(PRESETS)],
)
def test_each_episode_of_a_batch_is_the_run_made_alone(scenario):
    """Every preset, its extensions on: three episodes of 12 ticks."""
    alone, batched = _batch_and_alone(scenario, "threshold", [0, 1, 2], ticks=[12] * 3)
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [
        ("paper", "none"),
        ("paper", "threshold-estimated"),
        ("paper", "threshold-explore"),
        ("paper", "last-threshold:margin=0.1+exact-linear:weights=true"),
        ("paper", "robust-l1"),
        ("paper", "roar-l1"),
        ("paper", "trend-threshold+exact-linear"),
        ("paper", "threshold-wachter"),
        ("improvement", "improve-linucb"),
        ("fair-scarf", "scarf"),
        ("paper-T5", "safear"),
    ],
)
def test_policies_with_and_without_state_keep_their_bits(scenario, policy):
    alone, batched = _batch_and_alone(scenario, policy, [3, 4], ticks=[10, 10])
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


def test_ragged_episodes_end_apart_and_keep_their_own_capacity():
    """Episodes of 4, 9 and 6 ticks with k 2, 9 and 5: each leaves when it is over and
    keeps its rows; the others go on."""
    alone, batched = _batch_and_alone(
        "paper-T5", "threshold", [5, 6, 7], ticks=[4, 9, 6], k=[2, 9, 5], n_initial=[10, 40, 25]
    )
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)
    assert [m.tick for m in batched] == [4, 9, 6]


def test_episodes_of_different_worlds_score_under_their_own_models():
    """World seeds 0, 1, 2: three decision models, scored row by row in one pass."""
    alone, batched = _batch_and_alone(
        "paper-T5", "threshold", [0, 0, 0], ticks=[15] * 3, world_seed=[0, 1, 2]
    )
    weights = {tuple(m.scorer.weights) for m in batched}
    assert len(weights) == 3
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


def test_a_nonlinear_decision_model_scores_each_episode_alone():
    alone, batched = _batch_and_alone(
        "paper", "none", [0, 1], ticks=[6, 6], decision_model=["mlp", "mlp"], world_seed=[0, 1]
    )
    assert not batched[0].scorer.is_linear
    for a, b in zip(alone, batched, strict=True):
        _same_run(a, b)


def test_a_batch_refuses_episodes_of_other_behaviour():
    models = [RecourseModel("paper", seed=0), RecourseModel("paper", seed=1, beta=0.5)]
    with pytest.raises(ConfigError, match="beta"):
        Batch.of(models)


def test_a_model_of_a_batch_steps_with_its_batch():
    models = [RecourseModel("paper", seed=s, ticks=3) for s in range(2)]
    batch = Batch.of(models)
    with pytest.raises(RuntimeError, match="episode 1 of a batch of 2"):
        models[1].step()
    batch.run()
    assert all(not m.running for m in models)
    with pytest.raises(RuntimeError, match="over"):
        batch.step()
    with pytest.raises(ValueError, match="fresh"):
        Batch.of([RecourseModel("paper", seed=0).run(2)])


def test_a_batch_of_one_is_the_run_alone():
    """RecourseModel.step is its batch of one: stepping that batch is the same run."""
    alone = RecourseModel("improvement", "threshold", seed=9, ticks=8).run()
    m = RecourseModel("improvement", "threshold", seed=9, ticks=8)
    m._batch.run()
    _same_run(alone, m)
