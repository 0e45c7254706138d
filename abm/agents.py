"""Mesa agents: thin Candidate handles over population rows, and the DecisionMaker."""

from __future__ import annotations

import warnings
import weakref

import mesa
import numpy as np

from abm import behaviour
from abm.selection import select_top_k
from abm.world import DecisionModel


class DecisionMaker(mesa.Agent):
    """The decision-maker: scores the applicants with the decision model in force and
    admits the top k (:func:`abm.selection.select_top_k`) each tick.

    The decision model is read from the model's ``scorer``, so a retrained one is used as
    soon as it is fitted. Planning forks, which have no Mesa registration, get an
    unregistered one (:meth:`unregistered`).
    """

    def __init__(self, model: mesa.Model, k_t: int) -> None:
        super().__init__(model)
        #: the places it fills this tick (k_t: the scenario's k unless capacity changes)
        self.k_t = k_t

    @classmethod
    def unregistered(cls, model: object, k_t: int) -> DecisionMaker:
        """A decision-maker of a model that Mesa does not know (a planning fork). It holds
        its model weakly: a fork that nothing else holds is freed at once, not left in a
        cycle for the garbage collector (:mod:`abm.collector`)."""
        agent = object.__new__(cls)
        agent.model, agent.k_t = weakref.proxy(model), k_t
        return agent

    @property
    def k(self) -> int:
        """Deprecated since 0.9 (removed in 0.10): :attr:`k_t`, the places in force."""
        warnings.warn("DecisionMaker.k is deprecated: use k_t", DeprecationWarning, stacklevel=2)
        return self.k_t

    @property
    def decision_model(self) -> DecisionModel:
        return self.model.scorer

    def decide(
        self, X: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """(scores (n,), accepted (n,) bool, threshold) of applicants X (n, z); ``rng``
        breaks ties at the threshold."""
        scores = self.model.scorer.score(X)
        return (scores, *self.select(scores, rng))

    def select(self, scores: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """(accepted (n,) bool, threshold): the top k_t of ``scores`` (n,); ``rng`` breaks
        ties at the threshold."""
        return select_top_k(scores, self.k_t, rng)


class Candidate(mesa.Agent):
    """A waiting candidate, viewed through its row of the model's population arrays.

    ``cid`` is the candidate's id in the population (and in the candidate table); the
    Mesa ``unique_id`` is Mesa's own counter.
    """

    def __init__(self, model: mesa.Model, cid: int) -> None:
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


class CandidateHandles:
    """The Mesa ``Candidate`` agents of the waiting candidates, kept in step with the pool
    (none while ``on`` is False: a model built with ``agents=False``)."""

    def __init__(self, model: mesa.Model, on: bool = True) -> None:
        self.model, self.on = model, on
        self._handles: dict[int, Candidate] = {}
        self._rows: dict[int, int] = {}

    def sync(
        self,
        accepted: np.ndarray,
        dropped: np.ndarray,
        waiting: np.ndarray,
        pool_ids: np.ndarray,
    ) -> None:
        """Remove the agents of the ``accepted`` and ``dropped`` ids, add agents for new
        ``waiting`` ids; rows follow ``pool_ids`` (w,), the waiting pool's ids in row order."""
        if not self.on:
            return
        for cid in np.concatenate([accepted, dropped]).tolist():
            handle = self._handles.pop(cid, None)
            if handle is not None:
                handle.remove()
        for cid in waiting.tolist():
            if cid not in self._handles:
                self._handles[cid] = Candidate(self.model, cid)
        self._rows = {cid: i for i, cid in enumerate(pool_ids.tolist())}

    def row_of(self, cid: int) -> int:
        try:
            return self._rows[cid]
        except KeyError:
            raise KeyError(f"candidate {cid} is not waiting in the pool") from None
