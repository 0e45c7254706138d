"""A world extension in one class: its settings, its hooks at each stage of the tick, its
tick columns, its episode summary and its card figures (all hooks are no-ops).

An extension (specs/world-extensions.md: true outcomes, retraining, groups, a causal graph,
a budget, capacity that changes) keeps its own state between ticks (copied by
:meth:`Mechanism.fork` for planning rollouts: stored arrays are never written in place, so
a shallow copy is a private one) and returns a typed state for each tick from
:meth:`Mechanism.start_tick`, which every later hook of that tick receives. Everything the
rest of the model knows of it is read from the class: :class:`abm.config.ScenarioConfig`
takes its :attr:`Mechanism.Settings` as flat scenario keys, the record its
:meth:`Mechanism.tick_columns`, the summary its :attr:`Mechanism.episode`, the outcome card
its :attr:`Mechanism.figures`, the CLI its :attr:`Mechanism.preset` and
:func:`abm.testing.check_policy` its :attr:`Mechanism.check_world`. docs/architecture.md
("Writing a world extension") walks through a small one.

Shapes: a applicants, n rejected, z features.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from abm.card import Figure, Sheet
from abm.metrics import EpisodeFigure, summarise
from abm.population import Population
from abm.tick import Advice, Decision, Outcome


class NoSettings(BaseModel):
    """An extension without scenario fields of its own."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class CheckSpec:
    """A world :func:`abm.testing.check_policy` runs policies in: its ``name``, the
    ``scenario`` preset, ``overrides``, what it is, and whether it is checked by default."""

    name: str
    scenario: str
    overrides: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    default: bool = True


class Mechanism:
    """A world extension: its settings, state that lives across ticks and a hook for each
    stage. Subclasses set :attr:`name` and :attr:`Settings` (the fields with their "off"
    defaults) and override what they use; :func:`abm.mechanisms.register` adds one."""

    #: the name in ``ScenarioConfig.mechanisms`` and in the card's "needs <name>"
    name: ClassVar[str] = ""
    #: its scenario fields (flat keys of the scenario), each default meaning "off"
    Settings: ClassVar[type[BaseModel]] = NoSettings
    #: its card figures, in card order (each needs this extension)
    figures: ClassVar[tuple[Figure, ...]] = ()
    #: its episode figures (summary.json and the CLI's summary table)
    episode: ClassVar[tuple[EpisodeFigure, ...]] = ()
    #: tick columns starting with one of these get an episode mean each (the groups' own
    #: rates), after every extension's :attr:`episode`
    episode_prefixes: ClassVar[tuple[str, ...]] = ()
    #: a preset that switches it on ("" for none): the CLI's hint when its figures are off
    preset: ClassVar[str] = ""
    #: the world abm.testing checks policies in, or None
    check_world: ClassVar[CheckSpec | None] = None
    #: whether it reads h*(x) of the applicants (``Decision.p_true``)
    needs_true_probability: ClassVar[bool] = False
    #: whether the episode's tick figures are recorded: a planning fork's are not
    #: (:meth:`Mechanisms.fork`), so figures that only the record reads may be skipped there
    recorded: bool = True

    def __init__(self, config: Any, world: Any, streams: Any = None) -> None:
        self.config, self.world = config, world

    # -- the scenario ----------------------------------------------------------------------
    @classmethod
    def is_on(cls, config: Any) -> bool:
        """Whether ``config`` switches this extension on (default: a field is not at its
        default)."""
        return any(getattr(config, n) != f.default for n, f in cls.Settings.model_fields.items())

    @classmethod
    def check(cls, config: Any) -> None:
        """Checks across fields (the scenario's too), raising :func:`abm.validation.not_allowed`;
        the per-field bounds are in :attr:`Settings`. Runs whether or not it is on."""

    @classmethod
    def context(cls, config: Any) -> dict[str, Any]:
        """Fields this extension sets in the policy's :class:`abm.interfaces.PolicyContext`."""
        return {}

    # -- the record ------------------------------------------------------------------------
    @classmethod
    def tick_columns(cls, config: Any) -> dict[str, type]:
        """The tick-table columns it adds in a scenario, with their dtypes (np.int64 for
        counts, float otherwise)."""
        return {}

    @classmethod
    def summarise(cls, ticks: Any) -> dict[str, float]:
        """Its episode figures from a tick table (none when its columns are absent)."""
        return summarise(cls.episode, ticks)

    @classmethod
    def fill_card(cls, sheet: Sheet) -> None:
        """Put each of :attr:`figures` on ``sheet`` (called while it is on)."""

    def fork(self) -> Mechanism:
        """A copy whose state changes leave this one alone (stored arrays are shared)."""
        return copy.copy(self)

    # -- decide ----------------------------------------------------------------------------
    def capacity(self, t: int) -> tuple[int, int] | None:
        """(k_t, m_t) in force at tick ``t``, or None to leave the scenario's k and m."""
        return None

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
