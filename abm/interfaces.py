"""Protocols and the records passed between the model and recourse policies.

Policies depend on this module only; the model depends on these protocols, never on
a concrete policy. Shapes: n = rejected applicants this tick, z = features,
w = candidates in the history window.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

import numpy as np

from abm.summation import linear_logit


class Scorer(Protocol):
    """What a policy may ask of the decision model."""

    weights: np.ndarray | None  # (z,) for linear models, else None
    intercept: float | None

    @property
    def is_linear(self) -> bool: ...

    def score(self, X: np.ndarray) -> np.ndarray: ...

    def logit(self, X: np.ndarray) -> np.ndarray: ...


class LinearScorer:
    """M(x) = sigmoid(w . x + b) from given ``weights`` (z,) and ``intercept``: a
    :class:`Scorer` for hand-built contexts (tests, examples, a policy's own what-ifs)."""

    is_linear = True

    def __init__(self, weights, intercept: float) -> None:
        self.weights = np.asarray(weights, dtype=float)
        self.intercept = float(intercept)

    def logit(self, X: np.ndarray) -> np.ndarray:
        return linear_logit(X, self.weights, self.intercept)

    def score(self, X: np.ndarray) -> np.ndarray:
        from scipy.special import expit  # keeps `import abm.interfaces` light

        return expit(self.logit(X))


@dataclass(frozen=True)
class PolicyContext:
    """Fixed facts about the world a policy may use, handed over once in ``prepare``.

    ``lower``/``upper``/``immutable``/``difficulty`` have shape (z,). ``difficulty`` is
    the true d: only oracle policies should read it. Likewise ``extra["simulator"]``, when
    present (:class:`RecourseModel` always sets it), is a :class:`Simulator` of the true
    model: only privileged planning references (``lookahead``) should call it.
    """

    decision_model: Scorer
    lower: np.ndarray
    upper: np.ndarray
    immutable: np.ndarray
    difficulty: np.ndarray
    k: int
    m: int
    validity: int
    beta: float
    ticks: int
    X_train: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # world extensions (specs/world-extensions.md); defaults describe a world without them
    y_train: np.ndarray | None = None  # (n_train,) int8 labels of X_train
    group_train: np.ndarray | None = None  # (n_train,) int64 groups of X_train (0 if one)
    n_groups: int = 1
    causal_graph: Any = None  # abm.causal.CausalGraph (frozen) or None
    budget: float | None = None  # None: unlimited
    budget_scope: str = "episode"  # "tick" or "episode"
    # one-way actionability (z,) bool: features advice may only raise / only lower; None:
    # none (a context built before they existed)
    increase: np.ndarray | None = None
    decrease: np.ndarray | None = None
    # unordered categories: abm.onehot.OneHot (groups of indicator features, exactly one 1,
    # switched at a cost) or None
    onehot: Any = None

    @property
    def n_features(self) -> int:
        return self.lower.shape[0]

    def with_model(self, model: Scorer) -> PolicyContext:
        """This context with ``decision_model`` replaced (the model in force after a refit)."""
        return dataclasses.replace(self, decision_model=model)

    @property
    def mutable(self) -> np.ndarray:
        """(z,) bool: features a recommendation may change."""
        return ~self.immutable

    @cached_property
    def direction(self) -> np.ndarray:
        """(z,) int8: +1 a feature advice may only raise, -1 only lower, 0 either way (or
        immutable)."""
        z = self.n_features
        up = np.zeros(z, bool) if self.increase is None else self.increase
        down = np.zeros(z, bool) if self.decrease is None else self.decrease
        return up.astype(np.int8) - down.astype(np.int8)

    @property
    def one_way(self) -> bool:
        """Whether some feature may move one way only."""
        return bool(self.direction.any())

    def box(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-row bounds (lo, hi), each (n, z), on counterfactuals of rows X (n, z): the
        [lower, upper] box, an immutable feature held at x, an increase-only feature
        at least x and a decrease-only one at most x."""
        X = np.asarray(X, dtype=float)
        d = self.direction
        hold_lo, hold_hi = self.immutable | (d > 0), self.immutable | (d < 0)
        lo = np.where(hold_lo, X, np.broadcast_to(self.lower, X.shape))
        hi = np.where(hold_hi, X, np.broadcast_to(self.upper, X.shape))
        return lo, hi

    def bounds(
        self, X: np.ndarray, lower: np.ndarray | None = None, upper: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) on counterfactuals of rows X (n, z), or of one row (z,): :meth:`box`
        where some feature is one-way, else ``lower`` and ``upper`` (default the
        context's, (z,)) for every row, as before one-way features existed."""
        if self.one_way:
            return self.box(X)
        return (self.lower if lower is None else lower), (self.upper if upper is None else upper)

    def useful(self, weights: np.ndarray) -> np.ndarray:
        """(z,) bool: features that may move the way a linear score with ``weights`` (z,)
        rises: mutable, w != 0, and not one-way against sign(w)."""
        return self.mutable & (weights != 0) & (self.direction * np.sign(weights) >= 0)


class Simulator(Protocol):
    """Privileged rollouts of the true model, ``PolicyContext.extra["simulator"]``.

    Callable between the model's ``decide()`` and ``respond()`` at tick t (so from inside
    ``recommend``): it finishes tick t on a fork of the model (:mod:`abm.planning`; same
    policy object, whose ``observe`` is not called; the policy recognises its own
    re-entrant calls and answers them), then runs ticks t+1, ..., t+ticks, the last up to
    its selection. The fork draws from streams derived from (seed, t, key) only: the real
    run is untouched, and equal keys replay equal draws. Returns one dict per simulated
    tick: ``tick``, ``n_succ``, ``n_succ_accepted``, ``n_rejected_window``, ``rr``, ``rf``
    (NaN when undefined). ``plan`` names the caller's plan: rollouts of one decision under
    one plan share the first tick's advice when the policy is ``deterministic``.
    """

    def __call__(self, ticks: int, key: int = 0, plan: Any = None) -> list[dict[str, float]]: ...

    def many(
        self, ticks: int, runs: list[tuple[int, Any]], on_plan: Any = None
    ) -> list[list[dict[str, float]]]:
        """``[self(ticks, key, plan) for key, plan in runs]``, the forks advanced as one
        batch; ``on_plan(plans)`` is called right before the policy is asked, with the
        plans of the forks it answers (a planner that answers its own rollouts by plan
        sets them there, :meth:`abm.planning.Simulator.many`). Optional: the lookahead
        calls a simulator without it once per rollout."""
        ...

    def rates(
        self, ticks: int, runs: list[tuple[int, Any]], on_plan: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(RR, RF), each (len(runs), ticks): the ``rr`` and ``rf`` of :meth:`many`'s rows
        as arrays, bit for bit. Optional, as :meth:`many` (the lookahead reads these)."""
        ...


@dataclass(frozen=True)
class HistoryWindow:
    """Candidates rejected within the last T ticks, as the decision-maker last saw them.

    ids (w,), X (w, z) features at last application, last_tick (w,), n_applications (w,),
    goal (w,) and X_cf (w, z) of their last recommendation (NaN where none was given).
    """

    ids: np.ndarray
    X: np.ndarray
    last_tick: np.ndarray
    n_applications: np.ndarray
    goal: np.ndarray
    X_cf: np.ndarray


@dataclass(frozen=True)
class RecourseObs:
    """What the decision-maker sees at tick ``tick`` after selecting the top k.

    Applicants: ``applicant_ids`` (a,), ``applicant_X`` (a, z), ``applicant_scores`` (a,),
    ``accepted`` (a,) bool. Rejected: ``ids`` (n,), ``X`` (n, z), ``scores`` (n,),
    ``n_applications`` (n,) counting this one. ``threshold`` is the k-th highest score
    (NaN if nobody applied). ``history`` is built on first access. ``extra`` holds
    per-rejected traits (n,) such as ``risk_aversion``.

    World extensions: ``decision_model`` is the model in force (None: the one of
    ``PolicyContext``) and ``model_version`` counts its refits; ``group`` (n,) and
    ``applicant_group`` (a,) are group ids (None without groups); ``budget_left`` is what
    the intervention budget still allows this tick (inf without a budget). ``k_t`` and
    ``m_t`` are the places and the entrants in force at this tick (a capacity schedule's;
    the scenario's k and m without one; None where the observation was not made by a
    model); ``PolicyContext.k``/``m`` are the scenario's base values.
    """

    tick: int
    threshold: float
    applicant_ids: np.ndarray
    applicant_X: np.ndarray
    applicant_scores: np.ndarray
    accepted: np.ndarray
    ids: np.ndarray
    X: np.ndarray
    scores: np.ndarray
    n_applications: np.ndarray
    history_fn: Callable[[], HistoryWindow] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    decision_model: Scorer | None = None
    model_version: int = 0
    group: np.ndarray | None = None
    applicant_group: np.ndarray | None = None
    budget_left: float = math.inf
    k_t: int | None = None
    m_t: int | None = None

    @property
    def k(self) -> int | None:
        """Deprecated since 0.9 (removed in 0.10): :attr:`k_t`, the places in force."""
        warnings.warn("RecourseObs.k is deprecated: use k_t", DeprecationWarning, stacklevel=2)
        return self.k_t

    @property
    def m(self) -> int | None:
        """Deprecated since 0.9 (removed in 0.10): :attr:`m_t`, the entrants in force."""
        warnings.warn("RecourseObs.m is deprecated: use m_t", DeprecationWarning, stacklevel=2)
        return self.m_t

    @cached_property
    def history(self) -> HistoryWindow:
        """Candidates rejected in [t - T, t - 1] who have not reapplied (dropouts included)."""
        if self.history_fn is None:
            raise ValueError("this observation carries no history window")
        return self.history_fn()

    @property
    def n_rejected(self) -> int:
        return self.ids.shape[0]


@dataclass(frozen=True)
class Recommendation:
    """Advice for the rejected of one tick: ``goal`` (n,) and ``X_cf`` (n, z).

    ``advised`` (n,) is False for candidates who got no advice (their goal is NaN and
    X_cf equals their features). A row with X_cf equal to the candidate's features is
    no advice either, whatever ``advised`` says (SPEC §2, edge cases): the model demotes
    it. Among the unadvised, ``unreached`` (n,) marks goals no feasible change reaches
    and ``withheld`` (n,) advice held back or cut to nothing by a budget; both default to
    none. ``info`` holds optional per-candidate columns (n,) that the model copies into
    the candidate table (e.g. a risk measure).
    """

    goal: np.ndarray
    X_cf: np.ndarray
    advised: np.ndarray | None = None
    info: dict[str, np.ndarray] = field(default_factory=dict)
    unreached: np.ndarray | None = None
    withheld: np.ndarray | None = None

    def advised_mask(self) -> np.ndarray:
        if self.advised is None:
            return np.ones(self.goal.shape[0], dtype=bool)
        return self.advised


class RejectedRows:
    """The rejected of one tick of B episodes, as one flat set of rows (:mod:`abm.batch`):
    features ``X`` (n, z) and ``scores`` (n,), episode b's ``counts[b]`` rows after episode
    b - 1's; each episode's acceptance ``threshold`` (B,) and decision model in force
    (``models``, B). What a row-wise policy (:func:`rows_ready`) answers in one call."""

    __slots__ = ("X", "scores", "counts", "threshold", "models", "tick", "_episode")

    def __init__(self, X, scores, counts, threshold, models, tick: int) -> None:
        self.X, self.scores, self.counts = X, scores, counts
        self.threshold, self.models, self.tick = threshold, models, tick
        self._episode: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.scores.shape[0]

    @property
    def episode(self) -> np.ndarray:
        """(n,) the episode of each row."""
        if self._episode is None:
            self._episode = np.arange(self.counts.shape[0]).repeat(self.counts)
        return self._episode

    def per_row(self, values: np.ndarray) -> np.ndarray | float:
        """Per-episode ``values`` (B,) spread over the rows (a scalar for one episode)."""
        if self.counts.shape[0] == 1:
            return values[0]
        return values.take(self.episode)

    def by_model(self):
        """(model, rows (m,)) for each distinct decision model in force, in first-seen
        order: rows scored alike can be answered in one call."""
        models = self.models
        if len(set(map(id, models))) == 1:  # one model for all
            yield models[0], None  # every row
            return
        groups: dict[int, tuple[Any, list[int]]] = {}
        for b, m in enumerate(models):
            groups.setdefault(id(m), (m, []))[1].append(b)
        for m, eps in groups.values():
            yield m, np.isin(self.episode, eps).nonzero()[0]


def rows_ready(policy: object) -> bool:
    """Whether ``policy`` answers the rejected of many episodes in one call
    (``recommend_rows(rows) -> Recommendation`` over :class:`RejectedRows`): its advice to a
    row depends on that row, its episode's threshold and decision model alone, with no
    draw and no state, so it is bit for bit what each episode's own call gives."""
    return bool(getattr(policy, "rows_ready", False))


@dataclass(frozen=True)
class Feedback:
    """Outcomes the decision-maker can observe at tick ``tick``.

    Reapplicants only (changes stay hidden until someone reapplies): ``ids`` (r,),
    ``X_before`` (r, z) features at their previous application, ``X_cf`` (r, z) the
    counterfactual they were given, ``X_after`` (r, z) features now, ``accepted`` (r,).
    A feature was attempted where X_cf != X_before; it succeeded where X_after == X_cf.

    True outcomes revealed this tick (specs/world-extensions.md §1; empty without them):
    ``outcome_ids`` (o,), ``outcome_X`` (o, z) features when accepted, ``outcome_tick``
    (o,) the tick of acceptance and ``outcome_y`` (o,) int8 the outcome.
    """

    tick: int
    ids: np.ndarray
    X_before: np.ndarray
    X_cf: np.ndarray
    X_after: np.ndarray
    accepted: np.ndarray
    outcome_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    outcome_X: np.ndarray | None = None  # (o, z); None stands for no rows
    outcome_tick: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    outcome_y: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    @property
    def n_outcomes(self) -> int:
        return self.outcome_ids.shape[0]

    def outcomes(self) -> tuple[np.ndarray, np.ndarray]:
        """(attempted, succeeded), both (r, z) bool."""
        attempted = self.X_cf != self.X_before
        succeeded = attempted & (self.X_after == self.X_cf)
        return attempted, succeeded


@runtime_checkable
class RecoursePolicy(Protocol):
    """Anything that turns an observation into a recommendation for every rejected applicant.

    Optional: ``deterministic`` True promises that ``recommend`` draws nothing from its
    ``rng`` and changes no state of its own (only ``observe`` does), so an observation is
    always answered the same way; planners' rollouts may then reuse an answer
    (:class:`Simulator`'s ``plan``). Absent means False.
    """

    def prepare(self, ctx: PolicyContext) -> None: ...

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation: ...

    def observe(self, feedback: Feedback) -> None: ...


class ReportsStats(Protocol):
    """Optional: a policy with ``tick_stats`` reports its own per-tick figures.

    The model calls ``tick_stats()`` once per recorded tick, after ``respond``; each key
    ``name`` becomes the tick-table column ``policy_name`` (NaN on ticks it is missing).
    Forks (planning rollouts) record nothing and do not call it.
    """

    def tick_stats(self) -> Mapping[str, float]: ...


class FollowsModel:
    """Mixin for policies and their parts: ``self.ctx`` follows the decision model in force.

    ``use_model(model)`` replaces ``ctx.decision_model`` when ``model`` is another object
    and then calls ``model_changed()``, where a part rebuilds what it derived from the
    model (weights, a solver). A no-op while the model is unchanged, so a world that
    never retrains costs one identity check per tick. Callers: ``CompositePolicy`` for its
    goal selector and recommender, and direct policies at the top of ``recommend``.
    """

    ctx: PolicyContext

    def use_model(self, model: Scorer | None) -> None:
        if model is None or model is self.ctx.decision_model:
            return
        self.ctx = self.ctx.with_model(model)
        self.model_changed()

    def model_changed(self) -> None:
        """Rebuild whatever was derived from ``ctx.decision_model`` (default: nothing)."""


class GoalSelector(Protocol):
    """Chooses the goal score(s) for this tick's rejected: a scalar or shape (n,).

    Optional ``deterministic``, as for :class:`RecoursePolicy` (a composite policy is
    deterministic when both its parts are)."""

    def prepare(self, ctx: PolicyContext) -> None: ...

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float | np.ndarray: ...


class Recommender(Protocol):
    """Maps features X (n, z) and goals (n,) to counterfactuals X_cf (n, z).

    Optional ``deterministic``, as for :class:`RecoursePolicy`."""

    def prepare(self, ctx: PolicyContext) -> None: ...

    def recommend(
        self, X: np.ndarray, goals: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray: ...

    def observe(self, feedback: Feedback) -> None: ...
