"""What every world mechanism can do at each stage of the tick: the hooks, all no-ops.

A mechanism is one world extension of specs/world-extensions.md switched on (true
outcomes, retraining, groups, a causal graph, a budget). It keeps its own state between
ticks (copied by :meth:`Mechanism.fork` for planning rollouts: stored arrays are never
written in place, so a shallow copy is a private one) and returns a typed state for each
tick from :meth:`Mechanism.start_tick`, which every later hook of that tick receives.
Shapes: a applicants, n rejected, z features.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from abm.config import ScenarioConfig
from abm.population import Population
from abm.tick import Advice, Decision, Outcome
from abm.world import World


class Mechanism:
    """A world mechanism: state that lives across ticks and a hook for each stage."""

    #: the name in ``ScenarioConfig.mechanisms``
    name: ClassVar[str] = ""
    #: whether the mechanism reads h*(x) of the applicants (``Decision.p_true``)
    needs_true_probability: ClassVar[bool] = False

    def __init__(self, config: ScenarioConfig, world: World) -> None:
        self.config, self.world = config, world

    def fork(self) -> Mechanism:
        """A copy whose state changes leave this one alone (stored arrays are shared)."""
        return copy.copy(self)

    # -- decide ----------------------------------------------------------------------------
    def start_tick(self, t: int, waiting: Population, streams: Any, others: Any) -> Any:
        """Before reapplications: this tick's state (the figures known so far), or None.
        ``others`` is the set of mechanisms this one belongs to."""
        return None

    def on_selected(self, state: Any, d: Decision, pool: Any, streams: Any, record: bool) -> None:
        """After the top-k selection of ``d`` (``pool``: the waiting and the dropped)."""

    def feedback(self, state: Any) -> dict[str, Any]:
        """Fields this mechanism adds to the policy's Feedback."""
        return {}

    def observation(self, d: Decision) -> dict[str, Any]:
        """Fields this mechanism adds to the RecourseObs of ``d``."""
        return {}

    def entrant_columns(self, n: int) -> dict[str, np.ndarray]:
        """Population columns (n,) this mechanism adds to ``n`` entrants."""
        return {}

    # -- respond ---------------------------------------------------------------------------
    def on_advice(self, state: Any, advice: Advice, policy_name: str) -> None:
        """The validated advice, before anything changes (may refuse it by raising)."""

    def issued(self, advised: np.ndarray, cf_scores: np.ndarray, threshold: float) -> dict:
        """Population columns (n,) recorded with this tick's advice."""
        return {}

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: np.ndarray):
        """Implemented changes (X_new, (n, z)) as the world carries them on, or None."""
        return None

    # -- record ----------------------------------------------------------------------------
    @classmethod
    def tick_columns(cls, config: ScenarioConfig) -> tuple[str, ...]:
        """The tick-table columns this mechanism adds in a scenario."""
        return ()

    def row(
        self, state: Any, d: Decision, advice: Advice, outcome: Outcome, row: dict, view: RecordView
    ) -> None:
        """Add this mechanism's figures of the tick to ``row``."""

    def events(
        self,
        state: Any,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        dropped: np.ndarray,
        chunk: dict,
        view: RecordView,
    ) -> None:
        """Add this mechanism's candidate-table columns (a,) to ``chunk``."""


class RecordView:
    """What the record of one tick may read besides the tick itself: the waiting pool after
    the tick, the streams (W1 subsampling), ``per_applicant`` (values (n, ...) over the
    rejected spread to the applicants, ``fill`` elsewhere) and the advice's counterfactuals
    as the world would carry them on (:meth:`true_counterfactual`)."""

    def __init__(
        self,
        waiting: Callable[[], Population],
        streams: Any,
        per_applicant: Callable[[Any, Any], np.ndarray],
        true_counterfactual: Callable[[Advice], np.ndarray],
    ) -> None:
        self._waiting, self.streams = waiting, streams
        self.per_applicant, self.true_counterfactual = per_applicant, true_counterfactual

    @property
    def waiting(self) -> Population:
        return self._waiting()
