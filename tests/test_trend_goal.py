"""The trend-threshold goal (issue 39's adaptive baseline): known answers for its slope and
its window, and the policy contract with a planning fork."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from abm.testing import check_policy
from policies.goals import TrendThreshold


def ctx(simulator=None):
    return SimpleNamespace(extra={} if simulator is None else {"simulator": simulator})


def goals(selector, thresholds, start=0):
    rng = np.random.default_rng(0)
    return [
        selector.select(SimpleNamespace(tick=start + i, threshold=th), rng)
        for i, th in enumerate(thresholds)
    ]


def test_a_rising_bar_is_carried_horizon_ticks_ahead():
    g = TrendThreshold(margin=0.01, window=5, horizon=2.0)
    g.prepare(ctx())
    out = goals(g, [0.50, 0.52, 0.54])
    # one tick: no slope; then 0.02 a tick, twice over
    assert out == pytest.approx([0.51, 0.52 + 0.01 + 0.04, 0.54 + 0.01 + 0.04])


def test_a_falling_bar_lowers_nothing_unless_asked():
    up = TrendThreshold(horizon=1.0)
    up.prepare(ctx())
    assert goals(up, [0.6, 0.5, 0.4])[-1] == pytest.approx(0.4)
    both = TrendThreshold(horizon=1.0, up_only=False)
    both.prepare(ctx())
    assert goals(both, [0.6, 0.5, 0.4])[-1] == pytest.approx(0.3)


def test_the_window_keeps_the_last_ticks_and_a_tick_counts_once():
    g = TrendThreshold(window=3, horizon=1.0)
    g.prepare(ctx())
    goals(g, [0.9, 0.1, 0.2, 0.3])  # the 0.9 has left the window: slope 0.1
    assert [s[0] for s in g._seen] == [1, 2, 3]
    assert TrendThreshold.slope(g._seen) == pytest.approx(0.1)
    again = g.select(SimpleNamespace(tick=3, threshold=0.3), np.random.default_rng(0))
    assert again == pytest.approx(0.4) and len(g._seen) == 3
    nan = g.select(SimpleNamespace(tick=4, threshold=math.nan), np.random.default_rng(0))
    assert nan != nan and len(g._seen) == 3  # no applicants: nothing learned
    assert min(goals(g, [0.99, 0.999], start=5)) <= 1.0  # goals stay scores


def test_a_planning_rollout_reads_the_record_but_adds_nothing():
    sim = SimpleNamespace(running=False)
    g = TrendThreshold(horizon=1.0)
    g.prepare(ctx(sim))
    goals(g, [0.5, 0.55])
    sim.running = True
    inside = g.select(SimpleNamespace(tick=2, threshold=0.7), np.random.default_rng(0))
    assert inside == pytest.approx(0.7 + TrendThreshold.slope(((0, 0.5), (1, 0.55), (2, 0.7))))
    assert [s[0] for s in g._seen] == [0, 1]


def test_it_keeps_the_policy_contract_with_planning_forks():
    report = check_policy(
        "trend-threshold:horizon=3+exact-linear", scenarios=["paper", "retraining"]
    )
    assert not report.not_run  # it ran in both worlds, every rule passed (else it raises)
