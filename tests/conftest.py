import numpy as np
import pytest

from abm import RecourseModel


@pytest.fixture(scope="session")
def paper_run():
    """One paper episode of the threshold policy with agents and events (seed 0)."""
    return RecourseModel("paper", "threshold", seed=0).run()


class SpyPolicy:
    """Wraps a policy and keeps copies of every observation it was shown."""

    def __init__(self, inner):
        self.inner = inner
        self.seen = []

    def prepare(self, ctx):
        self.inner.prepare(ctx)

    def recommend(self, obs, rng):
        self.seen.append(obs)
        return self.inner.recommend(obs, rng)

    def observe(self, feedback):
        self.inner.observe(feedback)


@pytest.fixture
def spy_policy():
    """The SpyPolicy class: wrap a policy to record what it observes."""
    return SpyPolicy


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
