"""A recommender that records what it is shown: the observations of a run, for tests of
what a policy sees (encodings, capacity in force)."""

from __future__ import annotations

import numpy as np

from abm.interfaces import Recommendation
from abm.model import RecourseModel


class Spy:
    """Advises every rejected row to stay put with goal ``goal``; keeps each observation."""

    def __init__(self, goal: float = 0.7) -> None:
        self.goal, self.seen = goal, []

    def prepare(self, ctx):
        pass

    def recommend(self, obs, rng):
        self.seen.append(obs)
        return Recommendation(goal=np.full(obs.n_rejected, self.goal), X_cf=obs.X.copy())

    def observe(self, fb):
        pass


def observations(scenario: str, ticks: int, goal: float = 0.7, seed: int = 0) -> list:
    """The observations a policy gets over ``ticks`` ticks of ``scenario`` (one per tick
    with rejected applicants)."""
    spy = Spy(goal)
    RecourseModel(scenario, spy, seed=seed, agents=False, ticks=ticks).run()
    return spy.seen
