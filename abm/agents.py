"""Mesa agents: thin Candidate handles over population rows, and the DecisionMaker."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mesa
import numpy as np

from abm import behaviour

if TYPE_CHECKING:
    from abm.model import RecourseModel
    from abm.world import DecisionModel


#: Scores within this distance of the k-th highest count as tied with it (score units).
#: Scores that are equal in exact arithmetic (many candidates implement advice to the same
#: goal) differ in their last digits, and which way they differ depends on the CPU's
#: kernels (about 1e-14 apart seen here); the tie must not. 1e-9 is far above that noise
#: and far below GOAL_GAP (1e-6), the least gap between goals that mean different things.
SCORE_TIE = 1e-9


def select_top_k(scores: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Accept exactly min(k, n) of scores (n,); returns (accepted (n,) bool, threshold).

    The threshold is the k-th highest score (the lowest score when n <= k, NaN when
    n = 0). Candidates within :data:`SCORE_TIE` of it are tied: as many of them as there
    are places left are admitted in a seeded random order; the generator is used only when
    such a tie must be broken (SPEC §2).
    """
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, dtype=bool), float("nan")
    if n <= k:
        return np.ones(n, dtype=bool), float(scores.min())
    part = scores.copy()
    part.partition(n - k)  # what np.partition does, without its wrapper
    threshold = float(part[n - k])
    accepted = scores > threshold + SCORE_TIE
    at = ((scores >= threshold - SCORE_TIE) & ~accepted).nonzero()[0]
    need = k - np.count_nonzero(accepted)
    if need == at.shape[0]:
        accepted[at] = True
    else:
        accepted[rng.permutation(at)[:need]] = True
    return accepted, threshold


class DecisionMaker(mesa.Agent):
    """Scores applicants with the decision model in force and admits the top k each tick.

    The model is read from :attr:`RecourseModel.scorer`, so a retrained one (world
    extensions §2) is used as soon as it is fitted.
    """

    def __init__(self, model: RecourseModel, k: int) -> None:
        super().__init__(model)
        self.k = k

    @property
    def decision_model(self) -> DecisionModel:
        return self.model.scorer

    def score(self, X: np.ndarray) -> np.ndarray:
        """M(x) of applicants X (n, z), shape (n,)."""
        return self.decision_model.score(X)

    def select(self, scores: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        return select_top_k(scores, self.k, rng)


class Candidate(mesa.Agent):
    """A waiting candidate, viewed through its row of the model's population arrays.

    ``cid`` is the candidate's id in the population (and in the candidate table); the
    Mesa ``unique_id`` is Mesa's own counter.
    """

    def __init__(self, model: RecourseModel, cid: int) -> None:
        super().__init__(model)
        self.cid = cid

    @property
    def _row(self) -> int:
        return self.model.row_of(self.cid)

    def _get(self, column: str):
        return self.model.population.data[column][self._row]

    @property
    def features(self) -> np.ndarray:
        """True current features (z,), including changes the decision-maker has not seen."""
        return self._get("X")

    @property
    def observed_features(self) -> np.ndarray:
        """Features (z,) at the last application: all the decision-maker knows."""
        return self._get("X_obs")

    @property
    def recommendation(self) -> np.ndarray:
        """Counterfactual (z,) received at the last rejection."""
        return self._get("X_cf")

    @property
    def goal(self) -> float:
        return float(self._get("goal"))

    @property
    def n_applications(self) -> int:
        return int(self._get("n_apps"))

    @property
    def last_application(self) -> int:
        return int(self._get("last_tick"))

    @property
    def entered(self) -> int:
        return int(self._get("entered"))

    @property
    def implemented(self) -> bool:
        """Whether every recommended change succeeded."""
        return bool(self._get("implemented"))

    @property
    def score(self) -> float:
        """Score the decision-maker gave at the last application."""
        return float(self.model.scorer.score(self.observed_features[None, :])[0])

    @property
    def status(self) -> str:
        return "waiting"

    def reapply_probability(self, tick: int | None = None) -> float:
        """Probability of reapplying at ``tick`` (default: the next tick), eqs. 9-11."""
        tick = self.model.tick if tick is None else tick
        c = self.model.config
        gap = behaviour.score_gap(np.array([self.goal]), np.array([self._get("score_now")]))
        return float(
            behaviour.reapply_probability(
                gap, np.array([tick - self.last_application]), c.validity, c.nu
            )[0]
        )
