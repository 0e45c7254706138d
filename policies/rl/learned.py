"""Learned policy parts: the recommender φ and the predictor μ (durable-recourse-rl §4).

Both load a trained artefact in ``prepare`` and act deterministically (the SAC actor's
mean action), so they use no random numbers at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from abm.interfaces import Feedback, FollowsModel, PolicyContext, RecourseObs
from abm.validation import ConfigError, problem
from policies.composite import CompositePolicy
from policies.rl.artefacts import ArtefactError, load_sac, mismatches, provenance
from policies.rl.encoding import (
    CAPACITY_OBSERVATION,
    CONSTRAINED_OBJECTIVE,
    RECOMMENDER_ACTIONS,
    RECOMMENDER_OBSERVATION,
    encode_window,
    goal_from_action,
    observation_size,
    recommender_counterfactual,
    recommender_observation,
    recommender_observation_size,
)

# the shipped T = 1, beta = 0.05 artefacts (results/pareto/T1-b005, `reproduce pareto`):
# phi, and the predictors whose front point is closest to RR = 0.95 (alpha:tau = 10:1)
_SHIPPED = Path(__file__).resolve().parents[2] / "results" / "pareto" / "T1-b005"
DEFAULT_RECOMMENDER = _SHIPPED / "recommender"
DEFAULT_PREDICTOR_RL = _SHIPPED / "predictors" / "rl-a10-t1"
DEFAULT_PREDICTOR_HYBRID = _SHIPPED / "predictors" / "hybrid-a10-t1"
# the shipped μ trained for RR >= 0.95 in the paper's world (issue 51, `reproduce
# constrained-goal`), training seed 0
DEFAULT_PREDICTOR_CONSTRAINED = (
    _SHIPPED.parents[1] / "constrained-goal" / "predictors" / "paper-rr0.95"
)


# per recommender, the shipped alpha:tau = 10:1 predictor (as for rl): Wachter's own
# (trained with Wachter inside, 21,000 steps), the shared exact-linear-trained one otherwise
_DEFAULT_HYBRID = {"wachter": "hybrid-wachter-a10-t1-s21000"}


def default_hybrid_predictor(recommender: str) -> Path:
    """The shipped predictor that ``hybrid-<recommender>`` loads when no path is given."""
    return _SHIPPED / "predictors" / _DEFAULT_HYBRID.get(recommender, DEFAULT_PREDICTOR_HYBRID.name)


def artefact_path(path: str | Path) -> str | Path:
    """``path`` unless it is empty (``rl:path=``), which would quietly mean the current
    directory."""
    if not str(path).strip():
        raise ConfigError(
            problem(
                "path",
                str(path),
                "the directory of a trained artefact, e.g. rl:path=results/artefacts/recommender",
                verb="is empty",
            )
        )
    return path


def torch_threads(n: int = 1):
    """:func:`abm.mlp.torch_threads`, imported on use: listing policies stays light."""
    from abm.mlp import torch_threads as threads

    return threads(n)


def check_fit(path: str | Path, manifest: dict, ctx: PolicyContext, allow: bool) -> dict:
    """The provenance record of an artefact, after checking it fits the scenario in ``ctx``.

    The scenario comes from ``ctx.extra["scenario"]`` (set by the model); an artefact
    trained for another world, beta or population is an :class:`ArtefactError` unless
    ``allow`` (the policy's ``allow_mismatch``) or ``ctx.extra["allow_mismatch"]`` (the
    CLI's ``--allow-mismatch``) says otherwise, and then the mismatch is recorded.
    """
    scenario = ctx.extra.get("scenario")
    found = [] if scenario is None else mismatches(manifest, scenario.to_dict())
    if found and not (allow or ctx.extra.get("allow_mismatch", False)):
        raise ArtefactError(
            f"{manifest['kind']} {path} was trained for another scenario ({'; '.join(found)}); "
            "train one for this scenario, or pass --allow-mismatch (allow_mismatch=true) to use it anyway"
        )
    return provenance(path, manifest, found)


class LearnedRecommender(FollowsModel):
    """φ: (x, g) -> x^CF from a ``recommender`` artefact; rows already at their goal stay.

    Builds the training observation [x, g, M(x), g - M(x), d̂] with the d̂ learned in
    training (the manifest's ``d_hat``) and maps actions with the manifest's
    ``action_mode`` and ``max_step`` (:func:`policies.rl.encoding.recommender_counterfactual`).
    Artefacts from before these fields existed (observation (x, g), x^CF = x + a) are
    refused: they must be trained again. M is the decision model in force (``use_model``):
    it is read on every call, so a new model needs no rebuilding.
    """

    def __init__(
        self, path: str | Path | None = DEFAULT_RECOMMENDER, allow_mismatch: bool = False
    ) -> None:
        self.path = None if path is None else artefact_path(path)
        self.allow_mismatch = allow_mismatch
        self.record: dict | None = None

    def prepare(self, ctx: PolicyContext) -> None:

        if self.path is None:
            raise ValueError("the learned recommender needs path=DIR of a trained recommender")
        self.ctx = ctx
        z = ctx.n_features
        manifest, sac = load_sac(self.path, "recommender", n_features=z)
        missing = [
            k for k in ("observation", "action_mode", "max_step", "d_hat") if k not in manifest
        ]
        if (
            missing
            or manifest["observation"] != RECOMMENDER_OBSERVATION
            or manifest.get("obs_dim") != recommender_observation_size(z)
        ):
            raise ArtefactError(
                f"recommender {self.path} was trained by an older recourse-abm (observation "
                f"{manifest.get('observation', '(x, g)')!r}, no {', '.join(missing) or 'matching obs_dim'}): "
                f"this version needs observation {RECOMMENDER_OBSERVATION!r}, action_mode and max_step "
                "in the manifest; train it again with `recourse-abm train recommender`"
            )
        if (
            manifest["action_mode"] not in RECOMMENDER_ACTIONS
            or not 0 < float(manifest["max_step"]) <= 1
        ):
            raise ArtefactError(
                f"recommender {self.path}: action_mode {manifest['action_mode']!r} / "
                f"max_step {manifest['max_step']!r} not understood"
            )
        if len(manifest["d_hat"]) != z:
            raise ArtefactError(
                f"recommender {self.path}: d_hat has {len(manifest['d_hat'])} entries, not {z}"
            )
        self.record = check_fit(self.path, manifest, ctx, self.allow_mismatch)
        self.manifest, self.sac = manifest, sac
        self.action_mode, self.max_step = manifest["action_mode"], float(manifest["max_step"])

    def recommend(self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator) -> np.ndarray:

        scores = self.ctx.decision_model.score(X)
        obs = recommender_observation(X, goals, scores, self.difficulty_estimate)
        with torch_threads(1):  # the same bits whatever torch's thread count elsewhere
            actions, _ = self.sac.predict(obs, deterministic=True)
        X_cf = recommender_counterfactual(
            X, np.asarray(actions, dtype=float), goals, self.ctx, self.action_mode, self.max_step
        )
        met = ~(scores < goals)
        X_cf[met] = X[met]
        if self.action_mode == "direction":
            # the 1-D search reaches every goal on its ray; one beyond the box along φ's
            # direction is no advice (a NaN row), not the ray's end at the bounds
            X_cf[self.ctx.decision_model.score(X_cf) < goals] = np.nan
        return X_cf

    def observe(self, feedback: Feedback) -> None:
        pass

    def provenance(self) -> list[dict]:
        """The artefact this part uses (after ``prepare``)."""
        return [self.record] if self.record is not None else []

    @property
    def difficulty_estimate(self) -> np.ndarray:
        """d̂ (z,) learned while training."""
        return np.asarray(self.manifest["d_hat"], dtype=float)


class LearnedGoal(FollowsModel):
    """μ: encoded observation -> goal score g, from a ``predictor`` artefact.

    The history window is scored by the decision model in force (``use_model``), read on
    every call.
    """

    def __init__(
        self, path: str | Path = DEFAULT_PREDICTOR_RL, allow_mismatch: bool = False
    ) -> None:
        self.path = artefact_path(path)
        self.allow_mismatch = allow_mismatch
        self.record: dict | None = None

    def prepare(self, ctx: PolicyContext) -> None:

        self.ctx = ctx
        self.manifest, self.sac = load_sac(self.path, "predictor", n_features=ctx.n_features)
        # a μ trained with the capacity in force in its observation (issue 39) sees it here too
        self.capacity = self.manifest.get("capacity_observation") == CAPACITY_OBSERVATION
        want = observation_size(ctx.n_features, ctx.validity, self.capacity)
        if self.manifest.get("obs_dim") != want:
            raise ArtefactError(
                f"{self.path}: obs_dim is {self.manifest.get('obs_dim')!r} in the "
                f"manifest; this scenario needs {want}"
            )
        if "max_margin" not in self.manifest:
            raise ArtefactError(
                f"predictor {self.path} has no max_margin in its manifest: it was "
                "trained by an older recourse-abm (goals in [0, 1]); train it again"
            )
        self.max_margin = float(self.manifest["max_margin"])
        self.record = check_fit(self.path, self.manifest, ctx, self.allow_mismatch)

    def provenance(self) -> list[dict]:
        """The artefact this part uses (after ``prepare``)."""
        return [self.record] if self.record is not None else []

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:

        c = self.ctx
        x = encode_window(
            obs, c.decision_model, c.k, c.ticks, c.validity, c.m if self.capacity else None
        )
        with torch_threads(1):  # the same bits whatever torch's thread count elsewhere
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

    def __init__(
        self,
        path: str | Path = DEFAULT_PREDICTOR_RL,
        recommender: str | Path | None = None,
        allow_mismatch: bool = False,
    ) -> None:
        super().__init__(
            LearnedGoal(path, allow_mismatch), LearnedRecommender(recommender, allow_mismatch)
        )

    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.base_model = ctx.decision_model
        self.goal.prepare(ctx)
        if self.recommender.path is None:
            self.recommender.path = self.goal.recommender_path()
        self.recommender.prepare(ctx)


class ConstrainedGoal(LearnedGoal):
    """μ trained to maximise RF subject to RR ≥ ``target`` (lab.envs.ReliableGoalEnv).

    ``target`` must be the ρ the artefact was trained for: a goal selector trained for one
    reliability does not deliver another, so any other value is refused in one line.
    """

    def __init__(
        self,
        path: str | Path = DEFAULT_PREDICTOR_CONSTRAINED,
        target: float = 0.95,
        allow_mismatch: bool = False,
    ) -> None:
        if not (isinstance(target, int | float) and 0.0 < float(target) < 1.0):
            raise ConfigError(problem("target", target, "(0, 1): the RR to keep"))
        super().__init__(path, allow_mismatch)
        self.target = float(target)

    def prepare(self, ctx: PolicyContext) -> None:
        super().prepare(ctx)
        if self.manifest.get("objective") != CONSTRAINED_OBJECTIVE:
            raise ArtefactError(
                f"predictor {self.path} was trained on eq. 16, not for an RR target; use rl, "
                "or train one with `recourse-abm train constrained-predictor`"
            )
        trained = float(self.manifest["rr_target"])
        if abs(trained - self.target) > 1e-9:
            raise ConfigError(
                problem(
                    "target",
                    self.target,
                    f"{trained:g}, the RR target predictor {self.path} was trained for",
                )
            )


class ConstrainedPolicy(LearnedPolicy):
    """μ trained for an RR target (:class:`ConstrainedGoal`) + the learned φ it was trained
    with (``recommender=DIR`` overrides it)."""

    def __init__(
        self,
        path: str | Path = DEFAULT_PREDICTOR_CONSTRAINED,
        target: float = 0.95,
        recommender: str | Path | None = None,
        allow_mismatch: bool = False,
    ) -> None:
        CompositePolicy.__init__(
            self,
            ConstrainedGoal(path, target, allow_mismatch),
            LearnedRecommender(recommender, allow_mismatch),
        )
