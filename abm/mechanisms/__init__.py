"""The world mechanisms: each world extension of specs/world-extensions.md that a scenario
switches on becomes one stage object of the tick (abm/mechanisms/base.py names the hooks).

:class:`Mechanisms` holds those that are on, in a fixed order, and calls each hook on every
one of them; the model holds one (empty when every extension is off, and then every hook
does nothing and the tick is exactly the original). Stage order (§6)::

    decide:  reveals -> refit -> budget refill -> reapplications -> arrivals -> scores
             -> top-k -> outcome draws -> Feedback
    respond: advice, budget charge -> dropout -> implementation -> propagation -> record

Adding a mechanism is one :class:`Mechanism` subclass in this package, listed in
:data:`ORDER`, plus its config fields (and its name in ``ScenarioConfig.mechanisms``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from abm.config import ScenarioConfig
from abm.mechanisms.base import Mechanism, RecordView
from abm.mechanisms.budget import Budget
from abm.mechanisms.causal import Causal
from abm.mechanisms.groups import Groups
from abm.mechanisms.outcomes import Outcomes, probability_of_score
from abm.mechanisms.retraining import VALID_TOL, Retraining
from abm.population import Population
from abm.tick import Advice, Decision, Outcome
from abm.world import DecisionModel, World

__all__ = ["ORDER", "VALID_TOL", "Mechanism", "Mechanisms", "RecordView", "tick_columns"]

#: every mechanism, in the order their hooks run and their columns appear
ORDER: tuple[type[Mechanism], ...] = (Outcomes, Retraining, Groups, Causal, Budget)


def tick_columns(config: ScenarioConfig) -> tuple[str, ...]:
    """The tick-table columns the scenario's mechanisms add after the SPEC §2 columns
    (specs/world-extensions.md §7); none while every world extension is off."""
    on = config.mechanisms
    return tuple(c for m in ORDER if m.name in on for c in m.tick_columns(config))


class Mechanisms:
    """The mechanisms switched on for one episode (or one planning fork)."""

    def __init__(self, config: ScenarioConfig, world: World, stages: tuple[Mechanism, ...] = ()):
        self.config, self.world, self.stages = config, world, stages
        #: whether any mechanism is on (an attribute: the tick asks it several times)
        self.on = bool(stages)
        self.true_probability_needed = any(m.needs_true_probability for m in stages)
        self._retraining = self.find("retraining")

    @classmethod
    def build(cls, config: ScenarioConfig, world: World) -> Mechanisms:
        on = config.mechanisms
        return cls(config, world, tuple(m(config, world) for m in ORDER if m.name in on))

    def __bool__(self) -> bool:
        return self.on

    def fork(self) -> Mechanisms:
        """A copy whose state changes leave this one alone."""
        return Mechanisms(self.config, self.world, tuple(m.fork() for m in self.stages))

    def find(self, name: str) -> Any:
        """The mechanism called ``name``, or None when it is off."""
        return next((m for m in self.stages if m.name == name), None)

    @property
    def scorer(self) -> DecisionModel:
        """The decision model in force (a refitted one under retraining)."""
        r = self._retraining
        return self.world.decision_model if r is None else r.scorer

    @property
    def version(self) -> int:
        """How many times the decision model was refitted."""
        r = self._retraining
        return 0 if r is None else r.version

    # -- decide ----------------------------------------------------------------------------
    def start_tick(self, t: int, waiting: Population, streams: Any) -> tuple[Any, ...]:
        return tuple(m.start_tick(t, waiting, streams, self) for m in self.stages)

    def on_selected(self, d: Decision, pool: Any, streams: Any, record: bool) -> None:
        if self.true_probability_needed:  # h*(x) of every applicant, once a tick
            d.p_true = self.true_probability(d.applicants.X_obs)
        for m, state in zip(self.stages, d.states, strict=True):
            m.on_selected(state, d, pool, streams, record)

    def feedback(self, states: tuple[Any, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for m, state in zip(self.stages, states, strict=True):
            out.update(m.feedback(state))
        return out

    def observation(self, d: Decision) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for m in self.stages:
            out.update(m.observation(d))
        return out

    def entrant_columns(self, n: int) -> dict[str, np.ndarray] | None:
        out: dict[str, np.ndarray] = {}
        for m in self.stages:
            out.update(m.entrant_columns(n))
        return out or None

    # -- respond ---------------------------------------------------------------------------
    def on_advice(self, d: Decision, advice: Advice, policy_name: str) -> None:
        for m, state in zip(self.stages, d.states, strict=True):
            m.on_advice(state, advice, policy_name)

    def issued(self, advised: np.ndarray, cf_scores: Any, threshold: float) -> dict | None:
        """Columns (n,) recorded with advice given now; ``cf_scores`` is called when a
        mechanism records them (M(x_cf) costs a scoring pass)."""
        out: dict[str, np.ndarray] = {}
        for m in self.stages:
            if type(m).issued is not Mechanism.issued:
                out.update(m.issued(advised, cf_scores(), threshold))
        return out or None

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: np.ndarray):
        """X_new as the world carries the changes on, or None when nothing does."""
        for m in self.stages:
            out = m.propagate(X_old, X_new, intervened)
            if out is not None:
                return out
        return None

    # -- record ----------------------------------------------------------------------------
    def tick_columns(self) -> tuple[str, ...]:
        return tick_columns(self.config)

    def row(
        self, d: Decision, advice: Advice, outcome: Outcome, row: dict, view: RecordView
    ) -> None:
        for m, state in zip(self.stages, d.states, strict=True):
            m.row(state, d, advice, outcome, row, view)

    def events(
        self,
        d: Decision,
        advice: Advice,
        outcome: Outcome,
        dropped: np.ndarray,
        chunk: dict,
        view: RecordView,
    ) -> None:
        for m, state in zip(self.stages, d.states, strict=True):
            m.events(state, d, advice, outcome, dropped, chunk, view)

    # -- the world as it truly is ------------------------------------------------------------
    def true_probability(self, X: np.ndarray) -> np.ndarray:
        """h*(x) (n,) for rows X (n, z) (§1)."""
        return probability_of_score(self.config, np.add.reduce(X * self.world.w_star, axis=1))

    def true_counterfactual(self, advice: Advice) -> np.ndarray:
        """x̃_cf (n, z): the advice with its changes carried on by the world (§4)."""
        out = self.propagate(advice.X, advice.X_cf, advice.X_cf != advice.X)
        return advice.X_cf if out is None else out
