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

import math
from typing import Any

import numpy as np

from abm.interfaces import PolicyContext, RecourseObs
from abm.registry import Registry
from policies.composite import CompositePolicy
from policies.recommenders import ExactLinear

_MAX_GRID = 1000


def _integer(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise ValueError(f"lookahead: {name} must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _number(name: str, value: Any, lo: float, hi: float, interval: str) -> float:
    """A real number in an interval written like ``[0, inf)`` (brackets say which ends count)."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and (lo <= value if interval[0] == "[" else lo < value)
        ok = ok and (value <= hi if interval[-1] == "]" else value < hi)
    if not ok:
        raise ValueError(f"lookahead: {name} must be a number in {interval}, got {value!r}")
    return value


def eq16_reward(
    rr: np.ndarray, rf: np.ndarray, alpha: float, tau: float, floor: float
) -> np.ndarray:
    """R = α(1 + 0.9 log RR) + τ(1 + 0.9 log RF) (durable-recourse-rl eq. 16), elementwise.

    RR and RF below ``floor`` are raised to it, so log 0 is finite. An undefined ratio
    (NaN) also counts as ``floor``: at a simulated tick with a non-empty window, RR is NaN
    only when nobody carried out their advice (RF = 0), and that is the failure the reward
    should punish; skipping it would let a planner make advice unattainable on purpose.
    """
    rr = np.fmax(np.asarray(rr, dtype=float), floor)  # fmax takes the number over a NaN
    rf = np.fmax(np.asarray(rf, dtype=float), floor)
    out = np.zeros(np.broadcast(rr, rf).shape)
    if alpha:
        out += alpha * (1.0 + 0.9 * np.log(rr))
    if tau:
        out += tau * (1.0 + 0.9 * np.log(rf))
    return out


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
        floor: RR and RF below it (and undefined ones) count as ``floor`` in the log.

    During a rollout the selector keeps its candidate margin over the horizon (goal
    min(th' + δ, 1) at each simulated tick with threshold th'), so a candidate is "advise
    δ above the threshold for the next ``horizon`` ticks". Ties go to the smaller margin.
    After each planned tick, ``last_plan`` holds ``(goals, values, best)``: the candidate
    goals (K,), their mean reward (K,) and the index chosen.
    """

    privileged = True

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
        self.n_goals = _integer("goals", goals, 1, _MAX_GRID)
        self.min_margin = _number("min_margin", min_margin, -1.0, 1.0, "(-1, 1)")
        self.max_margin = _number("max_margin", max_margin, self.min_margin, 1.0, "[min_margin, 1]")
        self.horizon_param = None if horizon is None else _integer("horizon", horizon, 1, _MAX_GRID)
        self.horizon = self.horizon_param or 1  # set in prepare (default: the validity T)
        self.rollouts = _integer("rollouts", rollouts, 1, _MAX_GRID)
        self.alpha = _number("alpha", alpha, 0.0, math.inf, "[0, inf)")
        self.tau = _number("tau", tau, 0.0, math.inf, "[0, inf)")
        if self.alpha == 0 and self.tau == 0:
            raise ValueError("lookahead: alpha and tau must not both be 0 (each in [0, inf))")
        self.floor = _number("floor", floor, 0.0, 1.0, "(0, 1)")
        self.margins = np.linspace(self.min_margin, self.max_margin, self.n_goals)
        self._simulate = None
        self._ticks = 0
        self._rollout_margin: float | None = None
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
        values = np.empty(self.n_goals)
        for j, margin in enumerate(self.margins):
            rr, rf = [], []
            self._rollout_margin = float(margin)
            try:
                for r in range(self.rollouts):
                    for row in self._simulate(horizon, key=r):
                        rr.append(row["rr"])
                        rf.append(row["rf"])
            finally:
                self._rollout_margin = None
            values[j] = eq16_reward(rr, rf, self.alpha, self.tau, self.floor).mean()
        goals = np.array([self._goal(obs.threshold, m) for m in self.margins])
        return goals, values

    @staticmethod
    def _goal(threshold: float, margin: float) -> float:
        return float(min(threshold + margin, 1.0))


def _policy(**params: Any):
    return CompositePolicy(Lookahead(**params), ExactLinear())


def register(registry: Registry) -> None:
    registry.goal(
        "lookahead", Lookahead,
        "PRIVILEGED upper reference (simulates the true model): best margin over the "
        "threshold by eq.-16 reward of rollouts; goals, min_margin, max_margin, horizon, "
        "rollouts, alpha, tau, floor",
    )  # fmt: skip
    registry.policy(
        "lookahead", _policy,
        "PRIVILEGED upper reference: lookahead goal (simulates the true model) + exact-linear "
        "(uniform); parameters go to the goal selector",
    )  # fmt: skip
