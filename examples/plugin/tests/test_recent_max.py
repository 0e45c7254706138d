"""The plugin's policies keep recourse-abm's policy contract (``abm.testing.check_policy``).

Run with ``pytest examples/plugin/tests`` (from recourse-abm's checkout, or anywhere once
both packages are installed).
"""

import pytest
from recourse_abm_recent_max import RecentMax

from abm.registry import REGISTRY
from abm.testing import check_policy
from policies.composite import CompositePolicy
from policies.recommenders import ExactLinear


def recent_max(window: int, margin: float):
    """A factory of fresh policies: check_policy builds several (determinism, forks)."""
    return lambda: CompositePolicy(RecentMax(window, margin), ExactLinear())


@pytest.mark.parametrize("window, margin", [(1, 0.0), (3, 0.0), (5, 0.01)])
def test_recent_max_keeps_the_contract(window, margin):
    report = check_policy(recent_max(window, margin), name=f"recent-max:window={window}")
    # every default world runs (none needs anything this goal lacks), every rule holds
    assert set(report.worlds) == {"paper", "budget", "retraining", "improvement", "fair-scarf"}
    assert not report.broken
    for rule in ("goal-admissible", "goal-reached", "budget", "model-in-force", "fork-safe"):
        assert report.status(rule) == "passed", report


@pytest.mark.skipif("recent-max" not in REGISTRY, reason="the plugin is not installed")
def test_the_registered_policy_keeps_the_contract():
    report = check_policy("recent-max:window=4,margin=0.02+exact-linear:weights=true")
    assert not report.broken and report.status("fork-safe") == "passed"
    assert not check_policy("recent-max").broken
