"""Policies built from parts: goal selector + recommender, and the no-advice control."""

from __future__ import annotations

import numpy as np

from abm.interfaces import (
    Feedback,
    GoalSelector,
    PolicyContext,
    Recommendation,
    Recommender,
    RecourseObs,
)
from policies.goals import GOAL_GAP, admissible_goals


class CompositePolicy:
    """A goal selector ("what score to aim for") and a recommender ("how to get there").

    Every goal is made admissible first (:func:`~policies.goals.admissible_goals`: at
    least the threshold and at least ``gap`` above the candidate's own score). A
    recommender returns X_cf (n, z); a row of NaN means no feasible change reaches that
    candidate's goal: the candidate gets no advice and counts as unreached.
    """

    def __init__(self, goal: GoalSelector, recommender: Recommender, gap: float = GOAL_GAP) -> None:
        if not 0.0 <= gap < 1.0:
            raise ValueError(f"gap must be in [0, 1), got {gap!r}")
        self.goal = goal
        self.recommender = recommender
        self.gap = float(gap)

    def prepare(self, ctx: PolicyContext) -> None:
        self.goal.prepare(ctx)
        self.recommender.prepare(ctx)

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        goals = np.empty(obs.n_rejected)
        goals[:] = self.goal.select(obs, rng)  # a scalar or one goal per candidate
        goals = admissible_goals(goals, obs.scores, obs.threshold, self.gap)
        X_cf = self.recommender.recommend(obs.X, goals, rng)
        if not np.isnan(
            np.add.reduce(X_cf, axis=None)
        ):  # advice lies in [0, 1]: NaN iff a row failed
            return Recommendation(goal=goals, X_cf=X_cf)
        failed = np.isnan(X_cf).any(axis=1)
        # never a silent substitute: the model counts these in n_unreached
        X_cf = np.where(failed[:, None], obs.X, X_cf)
        goals[failed] = np.nan
        return Recommendation(goal=goals, X_cf=X_cf, advised=~failed, unreached=failed)

    def observe(self, feedback: Feedback) -> None:
        for part in (self.goal, self.recommender):
            observe = getattr(part, "observe", None)
            if observe is not None:
                observe(feedback)


class NoAdvice:
    """Control: rejected candidates get no recommendation and simply try again."""

    def prepare(self, ctx: PolicyContext) -> None:
        pass

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        n = obs.n_rejected
        return Recommendation(
            goal=np.full(n, np.nan), X_cf=obs.X.copy(), advised=np.zeros(n, dtype=bool)
        )

    def observe(self, feedback: Feedback) -> None:
        pass
