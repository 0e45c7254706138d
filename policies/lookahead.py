"""Lookahead: a PRIVILEGED planning yardstick for goal selectors (not a deployable policy).

Each tick, for every candidate margin δ on a grid, the goal selector rolls a detached copy
of the *true* model (the real behaviour model, the hidden features of waiting candidates,
the true difficulties) a horizon of ticks ahead with goal g = min(th + δ, 1), scores the
rollout with the reward of durable-recourse-rl eq. 16,

    R = α (1 + 0.9 log RR) + τ (1 + 0.9 log RF),

and advises the margin with the best mean reward. A decision-maker cannot do this: it
knows neither the behaviour model nor the hidden state. The result is an upper reference
for learned or heuristic goal selectors ("how well could a goal selector that knew the
simulator do?"), much as ``threshold-true`` is for recommenders.

Registered as goal selector ``lookahead`` (``lookahead:alpha=1,tau=1+exact-linear``) and as
policy ``lookahead`` (lookahead + exact-linear with uniform costs; its parameters go to the
goal selector). See docs/lookahead.md.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from abm.interfaces import PolicyContext, RecourseObs, RejectedRows
from abm.metrics import reward_eq16
from abm.planning import rates_of_rows
from abm.registry import Registry
from abm.validation import ConfigError, one_line, problem
from policies.composite import CompositePolicy
from policies.recommenders import ExactLinear

_MAX_GRID = 1000


class LookaheadParams(BaseModel):
    """The bounds of :class:`Lookahead`'s parameters (see its docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    goals: int = Field(11, ge=1, le=_MAX_GRID)
    min_margin: float = Field(0.0, gt=-1.0, lt=1.0)
    max_margin: float = Field(0.2, le=1.0, allow_inf_nan=False)
    horizon: int | None = Field(None, ge=1, le=_MAX_GRID)
    rollouts: int = Field(4, ge=1, le=_MAX_GRID)
    alpha: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    tau: float = Field(1.0, ge=0.0, allow_inf_nan=False)
    floor: float = Field(1e-3, gt=0.0, lt=1.0)


def _validated(**params: Any) -> LookaheadParams:
    """Bounds, then the rules that tie two parameters; errors are one line naming the field."""
    try:
        p = LookaheadParams.model_validate(params)
    except ValidationError as exc:
        raise ConfigError(f"lookahead: {one_line(exc, model=LookaheadParams)}") from None
    if p.max_margin < p.min_margin:
        allowed = f"a number in [min_margin = {p.min_margin:g}, 1]"
        raise ConfigError(f"lookahead: {problem('max_margin', p.max_margin, allowed)}")
    if p.alpha == 0 and p.tau == 0:
        allowed = "numbers >= 0, not both 0"
        raise ConfigError(f"lookahead: {problem('alpha and tau', (p.alpha, p.tau), allowed)}")
    return p


class Lookahead:
    """PRIVILEGED upper reference: the goal margin whose simulated future scores best.

    Args:
        goals: number of candidate margins, evenly spaced in [min_margin, max_margin]
            (goal g = min(th + δ, 1)); 1 means "always min_margin" and simulates nothing.
        min_margin, max_margin: the margin grid's ends; -1 < min_margin <= max_margin <= 1.
        horizon: simulated ticks after this one (default: the scenario's validity T), cut
            at the episode's end; ticks t+1..t+horizon are scored.
        rollouts: simulations per candidate; rollout r of every candidate uses the same
            random streams (common random numbers), derived from (seed, tick, r).
        alpha, tau: weights of the RR and RF terms of eq. 16 (>= 0, not both 0).
        floor: RR and RF below it count as ``floor`` in the log; undefined ones follow
            :func:`abm.metrics.reward_eq16`'s rule.

    During a rollout the selector keeps its candidate margin over the horizon (goal
    min(th' + δ, 1) at each simulated tick with threshold th'), so a candidate is "advise
    δ above the threshold for the next ``horizon`` ticks". Ties go to the smaller margin.
    After each planned tick, ``last_plan`` holds ``(goals, values, best)``: the candidate
    goals (K,), their mean reward (K,) and the index chosen.
    """

    privileged = True
    # inside its own rollouts it answers with the rollout's margin; outside, its rollouts'
    # streams derive from (seed, tick, key) alone: the same observation, the same goal
    deterministic = True

    def __init__(
        self,
        goals: int = 11,
        min_margin: float = 0.0,
        max_margin: float = 0.2,
        horizon: int | None = None,
        rollouts: int = 4,
        alpha: float = 1.0,
        tau: float = 1.0,
        floor: float = 1e-3,
    ) -> None:
        p = _validated(
            goals=goals,
            min_margin=min_margin,
            max_margin=max_margin,
            horizon=horizon,
            rollouts=rollouts,
            alpha=alpha,
            tau=tau,
            floor=floor,
        )
        self.params = p
        self.n_goals, self.min_margin, self.max_margin = p.goals, p.min_margin, p.max_margin
        self.horizon_param = p.horizon
        self.horizon = p.horizon or 1  # set in prepare (default: the validity T)
        self.rollouts, self.alpha, self.tau, self.floor = p.rollouts, p.alpha, p.tau, p.floor
        self.margins = np.linspace(self.min_margin, self.max_margin, self.n_goals)
        self._simulate = None
        self._ticks = 0
        self._rollout_margin: float | None = None
        # inside a batch of rollouts: each fork's margin (forks, in batch order)
        self._rollout_margins: np.ndarray | None = None
        self.last_plan: tuple[np.ndarray, np.ndarray, int] | None = None

    def prepare(self, ctx: PolicyContext) -> None:
        simulate = ctx.extra.get("simulator")
        if simulate is None:
            raise RuntimeError(
                "lookahead needs the model's simulator (PolicyContext.extra['simulator']), "
                "which RecourseModel provides; it cannot run without one"
            )
        self._simulate = simulate
        self._ticks = ctx.ticks
        self.horizon = ctx.validity if self.horizon_param is None else self.horizon_param

    def select(self, obs: RecourseObs, rng: np.random.Generator) -> float:
        if self._rollout_margin is not None:  # called by our own simulation: keep the plan
            return self._goal(obs.threshold, self._rollout_margin)
        horizon = min(self.horizon, self._ticks - 1 - obs.tick)
        if self.n_goals == 1 or horizon < 1:
            # nothing to compare, or no scored tick left in the episode: the lowest margin
            self.last_plan = None
            return self._goal(obs.threshold, self.margins[0])
        goals, values = self.evaluate(obs, horizon)
        best = int(np.argmax(values))  # the first maximum: ties go to the smaller margin
        self.last_plan = (goals, values, best)
        return float(goals[best])

    def evaluate(self, obs: RecourseObs, horizon: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate goals (K,) at this tick and their mean simulated eq.-16 reward (K,)."""
        # every rollout of every margin in one batch; the plan is the margin (its first
        # tick's advice is asked for once), and rollout r of each uses key r
        runs = [(r, j) for j in range(self.n_goals) for r in range(self.rollouts)]
        simulate = self._simulate
        try:
            if hasattr(simulate, "rates"):  # (runs, horizon) each
                rr, rf = simulate.rates(horizon, runs, on_plan=self._plan)
            else:  # a simulator of rows: in one batch, or of single calls only
                if hasattr(simulate, "many"):
                    done = simulate.many(horizon, runs, on_plan=self._plan)
                else:
                    done = []
                    for r, j in runs:
                        self._plan([j])
                        done.append(simulate(horizon, key=r, plan=j))
                rr, rf = rates_of_rows(done, horizon)
        finally:
            self._rollout_margin = self._rollout_margins = None
        # (K, rollouts * horizon): candidate j's rows are its rollouts' ticks in order, and
        # a row's mean is what the row alone gives (one reduction along the last axis)
        rr, rf = rr.reshape(self.n_goals, -1), rf.reshape(self.n_goals, -1)
        values = reward_eq16(rr, rf, self.alpha, self.tau, self.floor).mean(axis=1)
        goals = np.array([self._goal(obs.threshold, m) for m in self.margins])
        return goals, values

    def _plan(self, plans: list[int]) -> None:
        """The forks about to be asked follow margins ``plans`` (indices, in batch order):
        :meth:`select` answers one of them with its margin, :meth:`select_rows` all."""
        self._rollout_margins = self.margins[np.asarray(plans, dtype=np.int64)]
        self._rollout_margin = float(self._rollout_margins[0])

    @property
    def rows_ready(self) -> bool:
        """Inside its own rollouts its answer is min(th + δ, 1) of each fork's margin δ: a
        function of the fork's threshold alone (abm.interfaces.rows_ready)."""
        return self._rollout_margins is not None

    def select_rows(self, rows: RejectedRows) -> np.ndarray | float:
        """:meth:`select` of each row's fork inside a batch of rollouts, (n,)."""
        return rows.per_row(np.minimum(rows.threshold + self._rollout_margins, 1.0))

    @staticmethod
    def _goal(threshold: float, margin: float) -> float:
        return float(min(threshold + margin, 1.0))


@functools.wraps(Lookahead.__init__, assigned=("__annotations__",), updated=())
def _policy(**params: Any) -> CompositePolicy:
    """Lookahead + exact-linear; takes (and the registry types) the goal selector's parameters."""
    return CompositePolicy(Lookahead(**params), ExactLinear())


_policy.__signature__ = inspect.signature(Lookahead)  # type: ignore[attr-defined]


def register(registry: Registry) -> None:
    registry.goal(
        "lookahead",
        Lookahead,
        "PRIVILEGED upper reference (simulates the true model): best margin over the "
        "threshold by eq.-16 reward of rollouts; goals, min_margin, max_margin, horizon, "
        "rollouts, alpha, tau, floor",
    )
    registry.policy(
        "lookahead",
        _policy,
        "PRIVILEGED upper reference: lookahead goal (simulates the true model) + exact-linear "
        "(uniform); parameters go to the goal selector",
    )
