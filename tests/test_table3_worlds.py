"""scripts/table3_worlds.py: Table 3's fronts read off world by world, and intervals that
resample worlds, then episodes within them."""

from __future__ import annotations

import numpy as np
import pytest
from scripts_loader import load_script

t3 = load_script("table3_worlds")


def test_every_front_point_and_baseline_is_a_registered_policy():
    from abm.registry import REGISTRY

    pols = t3.policies()
    assert len(pols) == len(t3.BASELINES) + len(t3.FRONTS) * 12 and len(set(pols)) == len(pols)
    for p in pols:
        REGISTRY.validate(p)


def test_a_front_is_read_off_at_rr_095_from_its_episode_means():
    # three margins: RR rises, RF falls; RR 0.95 lies half way between the last two
    rr = np.array([[0.8, 0.8], [0.9, 0.9], [1.0, 1.0]])
    rf = np.array([[0.6, 0.6], [0.4, 0.4], [0.2, 0.2]])
    assert t3._read(rr, rf) == pytest.approx(0.3)
    worlds_rr, worlds_rf = np.stack([rr, rr]), np.stack([rf, rf - 0.1])
    assert t3.per_world(worlds_rr, worlds_rf) == pytest.approx([0.3, 0.2])


def test_the_interval_resamples_worlds_and_is_reproducible():
    values = np.array([0.1, 0.5, 0.9])

    def stat(w, e):
        return float(values[w].mean())

    lo, hi = t3.bootstrap(stat, 3, 4, resamples=400, seed=1)
    assert lo < values.mean() < hi and (lo, hi) == t3.bootstrap(stat, 3, 4, resamples=400, seed=1)
    one = t3.bootstrap(lambda w, e: float(values[:1][w].mean()), 1, 4, resamples=50)
    assert one == (0.1, 0.1)
