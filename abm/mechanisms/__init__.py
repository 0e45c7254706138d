"""The world extensions (specs/world-extensions.md): each is one :class:`Mechanism`
subclass that owns its footprint (settings, hooks, tick columns, episode summary, card
figures; abm/mechanisms/base.py). A scenario switches some on; each becomes one stage
object of the tick.

:class:`Mechanisms` holds those that are on, in registry order, and calls each hook on
every one of them; the model holds one (empty when every extension is off, and then every
hook does nothing and the tick is exactly the original). Stage order (§6)::

    decide:  capacity in force -> reveals -> refit -> budget refill -> reapplications
             -> arrivals -> scores -> top-k -> outcome draws -> Feedback
    respond: advice, budget charge -> dropout -> implementation -> propagation -> record

Adding an extension is one :class:`Mechanism` subclass passed to :func:`register` (the
built-in ones are :data:`BUILT_IN`); nothing else lists it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from abm.card import CORE, Figure
from abm.mechanisms.base import CheckSpec, EpisodeFigure, Mechanism, NoSettings, RecordView
from abm.mechanisms.budget import Budget
from abm.mechanisms.capacity import Capacity
from abm.mechanisms.causal import Causal
from abm.mechanisms.groups import Groups
from abm.mechanisms.outcomes import Outcomes, probability_of_score
from abm.mechanisms.retraining import VALID_TOL, Retraining
from abm.metrics import EPISODE, nanmean
from abm.population import Population
from abm.tick import Advice, Decision, Outcome

__all__ = [
    "BUILT_IN",
    "VALID_TOL",
    "CheckSpec",
    "EpisodeFigure",
    "Mechanism",
    "Mechanisms",
    "NoSettings",
    "RecordView",
    "card_figures",
    "episode_figures",
    "episode_summary",
    "register",
    "registered",
    "tick_columns",
]

#: the built-in extensions, in the order their hooks run and their columns appear
BUILT_IN: tuple[type[Mechanism], ...] = (Outcomes, Retraining, Groups, Causal, Budget, Capacity)
_registry: list[type[Mechanism]] = list(BUILT_IN)


def registered() -> tuple[type[Mechanism], ...]:
    """Every extension a scenario may switch on, in hook order (built-in ones first)."""
    return tuple(_registry)


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Add the extension ``cls`` (usable as a class decorator): from now on scenarios take
    its settings as fields, and the record, summary, card and CLI show it. Its name and
    its fields, figures and columns must be new."""
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)) or not cls.name:
        raise TypeError(f"an extension is a Mechanism subclass with a name, got {cls!r}")
    if cls in _registry:
        return cls
    taken = {m.name for m in _registry}
    fields = {f for m in _registry for f in m.Settings.model_fields}
    figures = {f.name for f in card_figures()}
    summary = {f.column for f in episode_figures()}
    mine = set(cls.Settings.model_fields)
    if (
        cls.name in taken
        or mine & fields
        or {f.name for f in cls.figures} & figures
        or {f.column for f in cls.episode} & summary
    ):
        raise ValueError(f"extension {cls.name!r} reuses a name, a field or a figure")
    if any(f.needs != cls.name for f in cls.figures):
        raise ValueError(f"extension {cls.name!r}: each of its figures needs {cls.name!r}")
    _registry.append(cls)
    return cls


def unregister(cls: type[Mechanism]) -> None:
    """Remove an extension added by :func:`register` (the built-in ones stay)."""
    if cls in BUILT_IN:
        raise ValueError(f"{cls.name!r} is built in")
    if cls in _registry:
        _registry.remove(cls)


@contextlib.contextmanager
def registered_while(cls: type[Mechanism]) -> Iterator[type[Mechanism]]:
    """:func:`register` ``cls`` for the ``with`` block only."""
    register(cls)
    try:
        yield cls
    finally:
        unregister(cls)


def card_figures() -> tuple[Figure, ...]:
    """The outcome card's catalogue: the core figures, then each extension's."""
    return CORE + tuple(f for m in _registry for f in m.figures)


def episode_figures() -> tuple[EpisodeFigure, ...]:
    """The episode summary's catalogue (with the CLI's labels): the world's own figures
    (:data:`abm.metrics.EPISODE`), then each extension's."""
    return EPISODE + tuple(f for m in _registry for f in m.episode)


def __getattr__(name: str) -> Any:
    # the catalogue as constants, read when asked (an extension registered later is in it)
    if name == "FIGURES":
        return card_figures()
    if name == "NAMES":
        return tuple(f.name for f in card_figures())
    raise AttributeError(f"module 'abm.mechanisms' has no attribute {name!r}")


def switched_on(config: Any) -> frozenset[str]:
    """The names of the extensions ``config`` switches on."""
    return frozenset(m.name for m in _registry if m.is_on(config))


def tick_columns(config: Any) -> dict[str, type]:
    """The tick-table columns (with dtypes) the scenario's extensions add after the SPEC §2
    columns (specs/world-extensions.md §7); none while every extension is off."""
    out: dict[str, type] = {}
    for m in _registry:
        if m.is_on(config):
            out.update(m.tick_columns(config))
    return out


def episode_summary(ticks: Any) -> dict[str, float]:
    """Episode figures of the extensions' tick columns present in ``ticks`` (none while
    every extension is off): each extension's :attr:`Mechanism.episode`, then the means
    over defined ticks of the columns its :attr:`Mechanism.episode_prefixes` name and of
    the policy's own ``policy_*`` columns."""
    out: dict[str, float] = {}
    for m in _registry:
        out.update(m.summarise(ticks))
    prefixes = tuple(p for m in _registry for p in m.episode_prefixes) + ("policy_",)
    for name in ticks.columns:
        if name.startswith(prefixes):
            out[name] = nanmean(ticks[name])
    return out


class Mechanisms:
    """The extensions switched on for one episode (or one planning fork)."""

    def __init__(self, config: Any, world: Any, stages: tuple[Mechanism, ...] = ()):
        self.config, self.world, self.stages = config, world, stages
        #: whether any extension is on (an attribute: the tick asks it several times)
        self.on = bool(stages)
        self.true_probability_needed = any(m.needs_true_probability for m in stages)
        self._retraining = self.find("retraining")
        # the stage that sets k_t and m_t, and those that carry changes on (overriders only)
        self._capacity = next(
            (m for m in stages if type(m).capacity is not Mechanism.capacity), None
        )
        self._carriers = tuple(m for m in stages if type(m).propagate is not Mechanism.propagate)
        self._issuers = tuple(m for m in stages if type(m).issued is not Mechanism.issued)

    @classmethod
    def build(cls, config: Any, world: Any, streams: Any = None) -> Mechanisms:
        """The stages of an episode of ``config`` (``streams``: its draws at the start)."""
        on = config.mechanisms
        return cls(
            config, world, tuple(m(config, world, streams) for m in _registry if m.name in on)
        )

    def __bool__(self) -> bool:
        return self.on

    def fork(self, recorded: bool = True) -> Mechanisms:
        """A copy whose state changes leave this one alone; ``recorded`` False: a planning
        fork's, whose figures nobody reads (each stage's :attr:`Mechanism.recorded`)."""
        if not self.stages:
            return self
        stages = tuple(m.fork() for m in self.stages)
        if not recorded:
            for m in stages:
                m.recorded = False
        return Mechanisms(self.config, self.world, stages)

    def find(self, name: str) -> Any:
        """The mechanism called ``name``, or None when it is off."""
        return next((m for m in self.stages if m.name == name), None)

    @property
    def scorer(self) -> Any:
        """The decision model in force (a refitted one under retraining)."""
        r = self._retraining
        return self.world.decision_model if r is None else r.scorer

    @property
    def refits(self) -> bool:
        """Whether the decision model in force may be replaced during the run
        (retraining); without it :attr:`scorer` is the world's all along."""
        return self._retraining is not None

    @property
    def version(self) -> int:
        """How many times the decision model was refitted."""
        r = self._retraining
        return 0 if r is None else r.version

    @property
    def propagates(self) -> bool:
        """Whether implemented changes may move features beyond the counterfactual."""
        return bool(self._carriers)

    def capacity_at(self, t: int) -> tuple[int, int]:
        """(k_t, m_t) in force at tick ``t``: the scenario's k and m unless an extension
        sets them."""
        c = self._capacity
        return (self.config.k, self.config.m) if c is None else c.capacity(t)

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
        for m in self._issuers:
            out.update(m.issued(advised, cf_scores(), threshold))
        return out or None

    def propagate(self, X_old: np.ndarray, X_new: np.ndarray, intervened: Any):
        """X_new as the world carries the changes on, or None when nothing does.
        ``intervened`` is the (n, z) bool mask of the changes made, or a callable giving
        it (built only when an extension carries changes on)."""
        for m in self._carriers:
            mask = intervened() if callable(intervened) else intervened
            out = m.propagate(X_old, X_new, mask)
            if out is not None:
                return out
        return None

    # -- record ----------------------------------------------------------------------------
    def tick_columns(self) -> dict[str, type]:
        """:func:`tick_columns` of the episode's scenario, read off its stages (those on,
        in registry order) without asking every extension again."""
        out: dict[str, type] = {}
        for m in self.stages:
            out.update(m.tick_columns(self.config))
        return out

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
