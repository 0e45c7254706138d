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
    RejectedRows,
    Scorer,
    rows_ready,
)
from policies.budget import fit_paced
from policies.goals import GOAL_GAP, admissible_goals


def follow(part: object, model: Scorer) -> None:
    """Hand ``model`` (the decision model in force) to ``part`` if it follows the model
    (:class:`abm.interfaces.FollowsModel`); parts that never read it have no ``use_model``."""
    use_model = getattr(part, "use_model", None)
    if use_model is not None:
        use_model(model)


class CompositePolicy:
    """A goal selector ("what score to aim for") and a recommender ("how to get there").

    Every goal is made admissible first (:func:`~policies.goals.admissible_goals`: at
    least the threshold and at least ``gap`` above the candidate's own score). A
    recommender returns X_cf (n, z); a row of NaN means no feasible change reaches that
    candidate's goal: the candidate gets no advice and counts as unreached.

    Both parts are handed the decision model in force (``obs.decision_model``) right before
    each is used, so a goal selector that simulates the future (``lookahead``, whose
    rollouts call this policy again, possibly under a refitted model) cannot leave the
    recommender on another model. Advice is then cut to this tick's share of the budget
    (:func:`~policies.budget.fit_paced`).
    """

    def __init__(self, goal: GoalSelector, recommender: Recommender, gap: float = GOAL_GAP) -> None:
        if not 0.0 <= gap < 1.0:
            raise ValueError(f"gap must be in [0, 1), got {gap!r}")
        self.goal = goal
        self.recommender = recommender
        self.gap = float(gap)

    @property
    def deterministic(self) -> bool:
        """Both parts answer an observation the same way every time (no draw, no state)."""
        return all(getattr(part, "deterministic", False) for part in (self.goal, self.recommender))

    @property
    def keeps_one_way(self) -> bool:
        """The recommender's word: whether its advice keeps one-way features."""
        return bool(getattr(self.recommender, "keeps_one_way", False))

    @property
    def keeps_onehot(self) -> bool:
        """The recommender's word: whether its advice keeps one-hot groups valid."""
        return bool(getattr(self.recommender, "keeps_onehot", False))

    @property
    def max_changes(self) -> int | None:
        """The recommender's cap on the features one advice changes (None: none)."""
        return getattr(self.recommender, "max_changes", None)

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.base_model = ctx.decision_model  # what an obs without decision_model means
        self.goal.prepare(ctx)
        self.recommender.prepare(ctx)

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        model = self.base_model if obs.decision_model is None else obs.decision_model
        follow(self.goal, model)
        goals = np.empty(obs.n_rejected)
        goals[:] = self.goal.select(obs, rng)  # a scalar or one goal per candidate
        goals = admissible_goals(goals, obs.scores, obs.threshold, self.gap)
        follow(self.recommender, model)
        X_cf = self.recommender.recommend(obs.X, goals, rng)
        return fit_paced(_advice(obs.X, goals, X_cf), obs, self.ctx)

    @property
    def rows_ready(self) -> bool:
        """Both parts answer many episodes' rows at once and no budget paces the advice
        (abm.interfaces.rows_ready); such parts keep no state, so ``observe`` teaches them
        nothing."""
        ctx = getattr(self, "ctx", None)
        return (
            ctx is not None
            and ctx.budget is None
            and rows_ready(self.goal)
            and rows_ready(self.recommender)
        )

    def recommend_rows(self, rows: RejectedRows) -> Recommendation:
        """:meth:`recommend` of many episodes' rejected at once, one flat Recommendation
        (n rows); each row is what its episode's own call gives."""
        goals = np.empty(rows.n)
        goals[:] = self.goal.select_rows(rows)
        goals = admissible_goals(goals, rows.scores, rows.per_row(rows.threshold), self.gap)
        return _advice(rows.X, goals, self.recommender.recommend_rows(rows, goals))

    def observe(self, feedback: Feedback) -> None:
        for part in (self.goal, self.recommender):
            observe = getattr(part, "observe", None)
            if observe is not None:
                observe(feedback)


def _advice(X: np.ndarray, goals: np.ndarray, X_cf: np.ndarray) -> Recommendation:
    """The Recommendation of goals (n,) and X_cf (n, z) for rows X (n, z); a NaN row of
    X_cf is a goal no feasible change reaches: no advice, counted as unreached."""
    if not np.isnan(np.add.reduce(X_cf, axis=None)):  # advice lies in [0, 1]: NaN iff a row failed
        return Recommendation(goal=goals, X_cf=X_cf)
    failed = np.isnan(X_cf).any(axis=1)
    # never a silent substitute: the model counts these in n_unreached
    X_cf = np.where(failed[:, None], X, X_cf)
    goals[failed] = np.nan
    return Recommendation(goal=goals, X_cf=X_cf, advised=~failed, unreached=failed)


class NoAdvice:
    """Control: rejected candidates get no recommendation and simply try again."""

    keeps_one_way = keeps_onehot = True  # it moves nothing
    rows_ready = True

    def prepare(self, ctx: PolicyContext) -> None:
        pass

    def recommend_rows(self, rows: RejectedRows) -> Recommendation:
        n = rows.n
        return Recommendation(
            goal=np.full(n, np.nan), X_cf=rows.X.copy(), advised=np.zeros(n, dtype=bool)
        )

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        n = obs.n_rejected
        return Recommendation(
            goal=np.full(n, np.nan), X_cf=obs.X.copy(), advised=np.zeros(n, dtype=bool)
        )

    def observe(self, feedback: Feedback) -> None:
        pass
