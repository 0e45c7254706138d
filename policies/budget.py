"""Advice within an intervention budget (specs/world-extensions.md §5).

The model charges the L1 size of every advised change, Σ_advised |x_cf - x|_1, against
``obs.budget_left`` and refuses a recommendation that overspends. Built-in policies end
``recommend`` with :func:`fit_paced`: :func:`fit_to_budget` keeps the cheapest advice that
fits in :func:`tick_allowance`, an even share of what is left of an episode budget over the
ticks left of the scenario's ``budget_horizon`` (not of this run: a 20-tick run spends per
tick what the first 20 ticks of a 100-tick run spend).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from abm.config import BUDGET_HORIZON
from abm.interfaces import PolicyContext, Recommendation, RecourseObs
from abm.onehot import OneHot
from abm.validation import ConfigError, problem


def fit_to_budget(
    rec: Recommendation, X: np.ndarray, budget_left: float, onehot: Any = None
) -> Recommendation:
    """``rec`` with the advice that does not fit in ``budget_left`` withheld (spec §5).

    X (n, z) are the candidates' features. An infinite budget returns ``rec`` itself.
    Otherwise advised rows are kept cheapest first (equal costs: lower row first) while
    the running total of their costs stays <= ``budget_left``; the rest lose their advice
    (``advised`` False, goal NaN, X_cf = X, ``withheld`` True), ``unreached`` and
    ``info`` untouched. When everything fits, ``rec`` itself comes back as well. A cost is
    the change's L1 size, a one-hot switch counting c(a, b) as the world charges it
    (``onehot``: abm.onehot.OneHot or None).
    """
    budget_left = float(budget_left)
    if not budget_left >= 0.0:  # NaN fails too
        raise ConfigError(problem("budget_left", budget_left, "a number >= 0 (inf: no budget)"))
    if math.isinf(budget_left):
        return rec
    advised = rec.advised_mask()
    rows = np.flatnonzero(advised)  # ascending, so ties keep row order
    cost = OneHot.sizes(onehot, X[rows], rec.X_cf[rows]).sum(axis=1)
    order = cheapest_first(cost)
    fits = np.cumsum(cost[order]) <= budget_left  # costs >= 0: the kept rows are a prefix
    if fits.all():
        return rec
    cut = rows[order[~fits]]
    advised = advised.copy()
    advised[cut] = False
    withheld = (
        np.zeros(advised.shape[0], dtype=bool) if rec.withheld is None else rec.withheld.copy()
    )
    withheld[cut] = True
    goal = np.array(rec.goal, dtype=float)
    goal[cut] = np.nan
    X_cf = rec.X_cf.copy()
    X_cf[cut] = X[cut]
    return dataclasses.replace(rec, goal=goal, X_cf=X_cf, advised=advised, withheld=withheld)


#: costs within this relative difference are equal when advice is ranked (cheapest_first)
COST_TOL = 1e-9


def cheapest_first(cost: np.ndarray) -> np.ndarray:
    """Indices of ``cost`` (n,) cheapest first; costs within :data:`COST_TOL` (relative)
    count as equal and keep their order. Candidates tied at one score are asked the same
    change, whose cost is equal in exact arithmetic but not in its last bits, and those
    bits differ between CPUs: ranked by them, a budget that funds some of the tied would
    fund different ones on another machine."""
    order = np.argsort(cost, kind="stable")
    c = cost[order]
    step = np.ones(c.shape[0], dtype=bool)
    step[1:] = np.diff(c) > COST_TOL * np.maximum(1.0, np.abs(c[1:]))
    group = np.cumsum(step)
    return order[np.lexsort((order, group))]


def tick_allowance(budget_left: float, tick: int, horizon: int, scope: str) -> float:
    """What a policy may spend at ``tick`` of an episode budget meant to last ``horizon``
    ticks (ours).

    A per-tick budget (``scope = "tick"``) or none (inf): all of ``budget_left``. An
    episode budget: an even share of what is left, ``budget_left / (horizon - tick)`` (all
    of it from tick ``horizon - 1`` on). Spent greedily, an episode budget goes to the first
    ticks' applicants and later advice is withheld (issue 33: about 99 % of it in the
    ``fair-scarf`` world, RF below 0.05 for every policy but SCARF, which paced already).
    ``horizon`` is the scenario's ``budget_horizon``, never the run's ``ticks`` (issue 48):
    paced over the run, a 20-tick run gave each tick 5 times what a 100-tick run does.
    """
    left = float(budget_left)
    if math.isinf(left) or scope != "episode":
        return left
    return left / max(int(horizon) - int(tick), 1)


def budget_horizon(ctx: PolicyContext) -> int:
    """The scenario's ``budget_horizon`` (``BUDGET_HORIZON`` for a context without one)."""
    scenario = ctx.extra.get("scenario")
    return int(getattr(scenario, "budget_horizon", BUDGET_HORIZON))


def fit_paced(rec: Recommendation, obs: RecourseObs, ctx: PolicyContext) -> Recommendation:
    """``rec`` cut to this tick's allowance (:func:`tick_allowance`, :func:`fit_to_budget`)."""
    allowance = tick_allowance(obs.budget_left, obs.tick, budget_horizon(ctx), ctx.budget_scope)
    return fit_to_budget(rec, obs.X, allowance, ctx.onehot)
