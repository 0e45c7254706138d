"""Learned policy parts: the recommender φ and the predictor μ (durable-recourse-rl §4).

Both load a trained artefact in ``prepare`` and act deterministically (the SAC actor's
mean action), so they use no random numbers at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from abm.interfaces import Feedback, PolicyContext, RecourseObs
from policies.composite import CompositePolicy
from policies.rl.artefacts import ArtefactError, load_sac

DEFAULT_RECOMMENDER = "results/artefacts/recommender"
DEFAULT_PREDICTOR_RL = "results/artefacts/predictor-rl"
DEFAULT_PREDICTOR_HYBRID = "results/artefacts/predictor-hybrid"


class LearnedRecommender:
    """φ: (x, g) -> x^CF from a ``recommender`` artefact; rows already at their goal stay."""

    def __init__(self, path: str | Path | None = DEFAULT_RECOMMENDER) -> None:
        self.path = path

    def prepare(self, ctx: PolicyContext) -> None:
        if self.path is None:
            raise ValueError("the learned recommender needs path=DIR of a trained recommender")
        self.ctx = ctx
        self.manifest, self.sac = load_sac(self.path, "recommender", n_features=ctx.n_features)

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        from abm.envs import action_to_counterfactual

        obs = np.concatenate([X, goals[:, None]], axis=1).astype(np.float32)
        actions, _ = self.sac.predict(obs, deterministic=True)
        X_cf = action_to_counterfactual(X, np.asarray(actions, dtype=float), self.ctx.immutable)
        met = ~(self.ctx.model.score(X) < goals)
        X_cf[met] = X[met]
        return X_cf

    def observe(self, feedback: Feedback) -> None:
        pass

    @property
    def difficulty_estimate(self) -> np.ndarray:
        """d̂ (z,) learned while training."""
        return np.asarray(self.manifest["d_hat"], dtype=float)


class LearnedGoal:
    """μ: encoded observation -> goal score g, from a ``predictor`` artefact."""

    def __init__(self, path: str | Path = DEFAULT_PREDICTOR_RL) -> None:
        self.path = path

    def prepare(self, ctx: PolicyContext) -> None:
        from abm.envs import observation_size

        self.ctx = ctx
        self.manifest, self.sac = load_sac(self.path, "predictor", n_features=ctx.n_features,
                                           obs_dim=observation_size(ctx.n_features, ctx.validity))  # fmt: skip
        if "max_margin" not in self.manifest:
            raise ArtefactError(f"predictor {self.path} has no max_margin in its manifest: it was "
                                "trained by an older recourse-abm (goals in [0, 1]); train it again")  # fmt: skip
        self.max_margin = float(self.manifest["max_margin"])

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        from abm.envs import encode_window, goal_from_action

        c = self.ctx
        x = encode_window(obs, c.model, c.k, c.ticks, c.validity)
        action, _ = self.sac.predict(x[None, :], deterministic=True)
        return float(goal_from_action(action, obs.threshold, self.max_margin)[0])

    def recommender_path(self) -> Path:
        """The learned recommender this predictor was trained with (after ``prepare``)."""
        rel = self.manifest.get("recommender_path")
        if rel is None:
            raise ArtefactError(
                f"predictor {self.path} was trained with {self.manifest.get('recommender')!r}, not a "
                "learned recommender; pass recommender=DIR"
            )
        return Path(self.path) / rel


class LearnedPolicy(CompositePolicy):
    """The paper's method: learned μ + learned φ (φ from the predictor's manifest by default)."""

    def __init__(self, path: str | Path = DEFAULT_PREDICTOR_RL, recommender: str | Path | None = None) -> None:
        super().__init__(LearnedGoal(path), LearnedRecommender(recommender))

    def prepare(self, ctx: PolicyContext) -> None:
        self.goal.prepare(ctx)
        if self.recommender.path is None:
            self.recommender.path = self.goal.recommender_path()
        self.recommender.prepare(ctx)
