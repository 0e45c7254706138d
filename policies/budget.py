"""Advice within an intervention budget (specs/world-extensions.md §5).

The model charges the L1 size of every advised change, Σ_advised |x_cf - x|_1, against
``obs.budget_left`` and refuses a recommendation that overspends. Built-in policies end
``recommend`` with :func:`fit_paced`: :func:`fit_to_budget` keeps the cheapest advice that
fits in :func:`tick_allowance`, an even share of what is left of an episode budget.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from abm.interfaces import PolicyContext, Recommendation, RecourseObs
from abm.validation import ConfigError, problem


def fit_to_budget(rec: Recommendation, X: np.ndarray, budget_left: float) -> Recommendation:
    """``rec`` with the advice that does not fit in ``budget_left`` withheld (spec §5).

    X (n, z) are the candidates' features. An infinite budget returns ``rec`` itself.
    Otherwise advised rows are kept cheapest first (equal costs: lower row first) while
    the running total of their costs stays <= ``budget_left``; the rest lose their advice
    (``advised`` False, goal NaN, X_cf = X, ``withheld`` True), ``unreached`` and
    ``info`` untouched. When everything fits, ``rec`` itself comes back as well.
    """
    budget_left = float(budget_left)
    if not budget_left >= 0.0:  # NaN fails too
        raise ConfigError(problem("budget_left", budget_left, "a number >= 0 (inf: no budget)"))
    if math.isinf(budget_left):
        return rec
    advised = rec.advised_mask()
    rows = np.flatnonzero(advised)  # ascending, so a stable sort breaks ties by row
    cost = np.abs(rec.X_cf[rows] - X[rows]).sum(axis=1)
    order = np.argsort(cost, kind="stable")
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


def tick_allowance(budget_left: float, tick: int, ticks: int, scope: str) -> float:
    """What a policy may spend at ``tick`` of a ``ticks``-tick episode (ours).

    A per-tick budget (``scope = "tick"``) or none (inf): all of ``budget_left``. An
    episode budget: an even share of what is left, ``budget_left / (ticks - tick)`` (all
    of it from the last tick on). Spent greedily, an episode budget goes to the first
    ticks' applicants and later advice is withheld (issue 33: about 99 % of it in the
    ``fair-scarf`` world, RF below 0.05 for every policy but SCARF, which paced already).
    """
    left = float(budget_left)
    if math.isinf(left) or scope != "episode":
        return left
    return left / max(int(ticks) - int(tick), 1)


def fit_paced(rec: Recommendation, obs: RecourseObs, ctx: PolicyContext) -> Recommendation:
    """``rec`` cut to this tick's allowance (:func:`tick_allowance`, :func:`fit_to_budget`)."""
    allowance = tick_allowance(obs.budget_left, obs.tick, ctx.ticks, ctx.budget_scope)
    return fit_to_budget(rec, obs.X, allowance)
