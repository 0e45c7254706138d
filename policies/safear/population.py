"""SafeAR inside the population model: a risk-averse recourse policy (``safear``).

For every rejected candidate the policy builds a small finite-horizon MDP over a
discretised neighbourhood of its features and solves it with G-RSVI
(``Q = mu + beta_risk * sigma`` on costs):

* **Features**: the ``n_features`` most useful mutable features, picked by score gain
  per unit of difficulty ``|w_i| / d_i`` (the linear model's weights; a finite-difference
  gradient otherwise), keeping only those that move the score.
* **Levels**: ``levels`` values per feature, from the candidate's value towards the
  helpful bound, evenly spaced up to the move that alone closes the gap to the goal
  (or the bound, whichever is nearer). States are the Cartesian product (``levels ** F``).
* **Actions**: move one feature up by 1..``max_jump`` levels. Success probability is
  the simulation's own implementation model (:func:`abm.behaviour.change_success_probability`,
  eq. 8, with the scenario's ``beta`` and the feature's difficulty ``d_i``) for that
  jump. Each attempt costs the effort ``|dx| * d_i``, paid whether it succeeds or not
  (SafeAR's convention).
* **Failure**: as in the simulation, where each recommended change is attempted once per
  application, a failed attempt ends the plan (an absorbing "failed" state; the candidate
  is rejected and advised afresh). ``retry=1`` instead leaves the state unchanged and lets
  the plan try again in later steps. With retries, mean-std planning is known to prefer
  long-shot attempts (a low-probability attempt has a small one-step spread), so the
  one-shot model is the default.
* **Goal**: states whose score reaches the tick's goal (the last threshold + ``margin``).
  Failing, or not reaching the goal within ``horizon`` attempts, costs ``fail_cost`` in
  the planning criterion only (the reported risk measures count effort alone).

All candidates of a tick are stacked block-diagonally into one MDP and solved in one
vectorised sweep, with one ``beta_risk`` per candidate. Goal states are absorbing, so the
MDP is held as tables over its non-goal states only (:mod:`policies.safear.pairs`). The
recommendation is the plan's intended target: the goal state reached when every planned
attempt succeeds. The plan's expected cost, cost variance, success rate (exact, by policy
evaluation) and VaR95 / CVaR95 (Monte-Carlo rollouts on the policy stream) go into the
candidate table.

Dependencies: :mod:`abm.interfaces` and, for the implementation model, :mod:`abm.behaviour`.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from abm.behaviour import change_success_probability
from abm.config import require_int
from abm.interfaces import Feedback, FollowsModel, PolicyContext, Recommendation, RecourseObs
from abm.registry import Registry
from policies.budget import fit_paced
from policies.goals import admissible_goals
from policies.safear.mdp import GOAL_ACTION, RecourseMDP
from policies.safear.pairs import PairTables, grsvi_pairs, moments, rollout_costs
from policies.safear.risk import per_start_measures, rollout, row_var_cvar
from policies.safear.solvers import grsvi

# grid points on the goal boundary count as reaching it (the model's tolerance is 1e-6)
_GOAL_SLACK = 1e-12
_FD_STEP = 1e-4


class SafeARPolicy(FollowsModel):
    """Risk-averse recourse: per-candidate G-RSVI plans over a coarse feature grid.

    Parameters (all optional; ``safear:beta_risk=0.5,levels=4`` on the command line):
    ``beta_risk`` -- risk aversion for everyone; ``None`` reads each candidate's own
    (``obs.extra["risk_aversion"]``, the scenario field ``risk_aversion``).
    ``n_features`` (1-4), ``levels`` (2-8), ``max_jump`` (levels per attempt, 1 =
    one-level moves; default ``levels - 1``), ``horizon`` (attempts, 1-50),
    ``fail_cost`` (>= 0), ``retry`` (0 or 1), ``margin`` (added to the threshold), ``rollouts`` (per
    candidate, for VaR/CVaR), ``risk`` (``std`` or ``lpsd``).

    A one-way feature moves only the way it may (the other way it has no room, so it is
    never moved there).
    Plans are built afresh each tick from the decision model in force (``use_model``:
    feature choice, grid and goal states all read it), so a new model needs no
    rebuilding; advice is cut to this tick's share of the budget (:func:`policies.budget.fit_paced`).
    """

    keeps_one_way = True

    def __init__(
        self,
        beta_risk: Annotated[float, Field(ge=0.0, le=100.0)] | None = None,
        n_features: Annotated[int, Field(ge=1, le=4)] = 3,
        levels: Annotated[int, Field(ge=2, le=8)] = 5,
        max_jump: Annotated[int, Field(ge=1, le=7)] | None = None,
        horizon: Annotated[int, Field(ge=1, le=50)] = 8,
        fail_cost: Annotated[float, Field(ge=0.0)] = 1.0,
        margin: Annotated[float, Field(gt=-1.0, lt=1.0)] = 0.0,
        rollouts: Annotated[int, Field(ge=1, le=100_000)] = 200,
        risk: Literal["std", "lpsd"] = "std",
        retry: Annotated[int, Field(ge=0, le=1)] = 0,
    ) -> None:
        if beta_risk is not None and (
            isinstance(beta_risk, bool)
            or not isinstance(beta_risk, (int, float))
            or not math.isfinite(beta_risk)
            or not 0 <= beta_risk <= 100
        ):
            raise ValueError(f"safear: beta_risk must be a number in [0, 100], got {beta_risk!r}")
        self.beta_risk = None if beta_risk is None else float(beta_risk)
        self.n_features = require_int("safear: n_features", n_features, 1, 4)
        self.levels = require_int("safear: levels", levels, 2, 8)
        self.max_jump = (
            self.levels - 1
            if max_jump is None
            else require_int("safear: max_jump", max_jump, 1, self.levels - 1)
        )
        self.horizon = require_int("safear: horizon", horizon, 1, 50)
        self.rollouts = require_int("safear: rollouts", rollouts, 1, 100_000)
        if (
            isinstance(fail_cost, bool)
            or not isinstance(fail_cost, (int, float))
            or not 0 <= fail_cost < math.inf
        ):
            raise ValueError(f"safear: fail_cost must be a finite number >= 0, got {fail_cost!r}")
        self.fail_cost = float(fail_cost)
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not -1 < margin < 1:
            raise ValueError(f"safear: margin must be in (-1, 1), got {margin!r}")
        self.margin = float(margin)
        if risk not in ("std", "lpsd"):
            raise ValueError(f"safear: risk must be 'std' or 'lpsd', got {risk!r}")
        self.risk = risk
        if retry not in (0, 1, True, False):
            raise ValueError(f"safear: retry must be 0 or 1, got {retry!r}")
        self.retry = bool(retry)
        self._layout: dict[int, tuple] = {}

    # ------------------------------------------------------------------ protocol
    def prepare(self, ctx: PolicyContext) -> None:
        self.ctx = ctx
        self.base_model = ctx.decision_model  # what an obs without decision_model means
        self.d = np.asarray(ctx.difficulty, dtype=float)
        self.mutable = ctx.mutable & (ctx.upper > ctx.lower)

    def observe(self, feedback: Feedback) -> None:
        pass

    def recommend(self, obs: RecourseObs, rng: np.random.Generator) -> Recommendation:
        self.use_model(self.base_model if obs.decision_model is None else obs.decision_model)
        n = obs.n_rejected
        goal = np.full(n, float(min(obs.threshold + self.margin, 1.0)))
        goal = admissible_goals(goal, obs.scores, obs.threshold)
        if self.beta_risk is not None:
            beta = np.full(n, self.beta_risk)
        else:
            beta = np.asarray(obs.extra.get("risk_aversion", np.zeros(n)), dtype=float).reshape(-1)
            if beta.shape != (n,):
                raise ValueError(
                    f"safear: obs.extra['risk_aversion'] must have shape ({n},), got {beta.shape}"
                )
        return fit_paced(self.plan(obs.X, goal, beta, rng), obs, self.ctx)

    # ------------------------------------------------------------------ planning
    def plan(
        self, X: np.ndarray, goal: np.ndarray, beta: np.ndarray, rng: np.random.Generator
    ) -> Recommendation:
        """Plan for candidates ``X`` (n, z) with goals (n,) and risk aversions (n,).

        Candidates already at their goal get no advice (there is nothing to change);
        goals no plan on the grid reaches give no advice and count as unreached.
        """
        X = np.asarray(X, dtype=float)
        n = X.shape[0]
        X_cf = X.copy()
        goal = np.array(goal, dtype=float)
        info = {
            k: np.full(n, np.nan) for k in ("exp_cost", "cost_var", "var95", "cvar95", "plan_rho")
        }
        info["beta_risk"] = np.asarray(beta, dtype=float).copy()
        advised = np.zeros(n, dtype=bool)
        unreached = np.zeros(n, dtype=bool)
        todo = (
            np.flatnonzero(~(self.ctx.decision_model.score(X) >= goal)) if n else np.empty(0, int)
        )
        if todo.size:
            beta_todo = np.asarray(beta, dtype=float)[todo]
            X_cf[todo], ok, measures = self._plan_unmet(X[todo], goal[todo], beta_todo, rng)
            for key, v in measures.items():
                info[key][todo] = np.where(ok, v, np.nan)
            advised[todo[ok]] = True
            unreached[todo[~ok]] = True
        goal[~advised] = np.nan
        return Recommendation(goal=goal, X_cf=X_cf, advised=advised, info=info, unreached=unreached)

    def _plan_unmet(
        self, Xt: np.ndarray, gt: np.ndarray, beta: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Plan for ``m`` candidates below their goals: one block-diagonal MDP on their feature
        grids, solved by G-RSVI with each candidate's own beta.

        Returns the counterfactuals (m, z), whether the plan reaches the goal (m,) and the plan's
        measures (m,) each: exp_cost, cost_var, plan_rho, var95, cvar95. The MDP is held as
        :class:`~policies.safear.pairs.PairTables` (the rows of its non-goal states only);
        :meth:`_plan_unmet_mdp` computes the same bits on the general :class:`RecourseMDP`.
        """
        sel, vals, strides, codes, grid_goal = self._grids(Xt, gt)
        m, S1 = grid_goal.shape
        B = S1 + 1  # block of one candidate: the grid and a "failed" sink
        is_goal = np.concatenate([grid_goal, np.zeros((m, 1), bool)], axis=1).reshape(m * B)
        tables = self._tables(vals, sel, strides, codes, grid_goal, is_goal)
        pol = grsvi_pairs(tables, np.repeat(beta, B), risk=self.risk, terminal_cost=self.fail_cost)
        starts = np.arange(m) * B
        target = self._intended_target(is_goal, pol, starts, strides)
        ok = grid_goal.any(axis=1) & is_goal[target]
        tgt_codes = codes[np.minimum(target - starts, S1 - 1)]  # (m, F)
        cf = self._counterfactuals(Xt, sel, vals, tgt_codes, ok)
        mean, var, rho = moments(tables, pol.actions, starts)
        var95, cvar95 = row_var_cvar(
            rollout_costs(tables, pol.actions, starts, self.rollouts, rng=rng), 0.95
        )
        measures = {
            "exp_cost": mean,
            "cost_var": var,
            "plan_rho": rho,
            "var95": var95,
            "cvar95": cvar95,
        }
        return cf, ok, measures

    def _plan_unmet_mdp(
        self, Xt: np.ndarray, gt: np.ndarray, beta: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """:meth:`_plan_unmet` on the general path: the full block-diagonal
        :class:`RecourseMDP` (goal rows included), :func:`grsvi`, :func:`rollout`. The
        reference the tests hold the table path to."""
        sel, vals, strides, codes, grid_goal = self._grids(Xt, gt)
        m, S1 = grid_goal.shape
        B = S1 + 1
        is_goal = np.concatenate([grid_goal, np.zeros((m, 1), bool)], axis=1).reshape(m * B)
        mdp = self._build(vals, sel, strides, codes, is_goal, m)
        pol = grsvi(mdp, np.repeat(beta, B), risk=self.risk, terminal_cost=self.fail_cost)
        starts = np.arange(m) * B
        target = self._intended_target(mdp.goal, pol, starts, strides)
        ok = grid_goal.any(axis=1) & mdp.goal[target]
        tgt_codes = codes[np.minimum(target - starts, S1 - 1)]  # (m, F)
        cf = self._counterfactuals(Xt, sel, vals, tgt_codes, ok)

        mean, var, rho = self._moments(mdp, pol, starts)
        ro = rollout(mdp, pol, starts, self.rollouts, rng=rng)
        ps = per_start_measures(mdp, ro, alphas=(0.95,))
        measures = {
            "exp_cost": mean,
            "cost_var": var,
            "plan_rho": rho,
            "var95": ps["var95"].to_numpy(),
            "cvar95": ps["cvar95"].to_numpy(),
        }
        return cf, ok, measures

    def _grids(self, Xt: np.ndarray, gt: np.ndarray):
        """Each candidate's grid: selected features (m, F), their values (m, F, L), the
        layout's strides (F,) and codes (S1, F), and which grid states reach the goal (m, S1)."""
        direction, useful = self._directions(Xt)  # (m, z)
        # one-way features: the row's own box, so a feature whose helpful way is barred
        # has no room and is never picked (nor moved)
        lo, hi = self.ctx.bounds(Xt)
        room = np.where(direction > 0, hi - Xt, Xt - lo)
        sel, reach = self._select(Xt, gt, direction, useful, room)  # (m, F), (m, F)
        vals = self._grid_values(Xt, direction, sel, reach)  # (m, F, L)
        strides, codes, _ = self._grid(sel.shape[1])
        return sel, vals, strides, codes, self._grid_goal(Xt, gt, sel, vals, codes)

    def _grid_values(self, Xt, direction, sel, reach) -> np.ndarray:
        """(m, F, L) grid values of the selected features: from x towards the helpful bound."""
        frac = np.linspace(0.0, 1.0, self.levels)
        x0 = np.take_along_axis(Xt, sel, axis=1)
        dirs = np.take_along_axis(direction, sel, axis=1)
        lo_b, hi_b = self.ctx.lower[sel], self.ctx.upper[sel]
        vals = np.clip(
            x0[..., None] + dirs[..., None] * reach[..., None] * frac,
            lo_b[..., None],
            hi_b[..., None],
        )
        vals[..., 0] = x0
        return vals

    def _grid_goal(self, Xt, gt, sel, vals, codes) -> np.ndarray:
        """(m, S1) whether each grid state's features score at least the candidate's goal."""
        m, z = Xt.shape
        S1 = codes.shape[0]
        Xs = np.repeat(Xt, S1, axis=0).reshape(m, S1, z)
        rows, cols = np.arange(m)[:, None], np.arange(S1)[None, :]
        for f in range(sel.shape[1]):
            Xs[rows, cols, sel[:, f : f + 1]] = vals[:, f, codes[:, f]]
        Xs = Xs.reshape(m * S1, z)
        # sums of grid fractions that equal 1 land on the goal up to rounding
        score = self.ctx.decision_model.score(Xs)
        return (score >= np.repeat(gt, S1) - _GOAL_SLACK).reshape(m, S1)

    @staticmethod
    def _counterfactuals(Xt, sel, vals, tgt_codes, ok) -> np.ndarray:
        """(m, z) counterfactuals: the planned target's values where it reaches the goal."""
        new_vals = np.take_along_axis(vals, tgt_codes[..., None], axis=2)[..., 0]
        rows_ok = np.flatnonzero(ok)
        cf = Xt.copy()
        cf[rows_ok[:, None], sel[rows_ok]] = new_vals[rows_ok]
        return cf  # rows out of reach keep their features: the caller gives them no advice

    # ------------------------------------------------------------------ helpers
    def _directions(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, z) direction (+1 / -1) that raises the score and (m, z) gain per unit move."""
        model = self.ctx.decision_model
        if model.is_linear:
            w = np.asarray(model.weights, dtype=float)
            direction = np.broadcast_to(np.where(w >= 0, 1.0, -1.0), X.shape)
            gain = np.broadcast_to(np.abs(w), X.shape)
        else:
            m, z = X.shape
            base = model.score(X)
            step = np.where(X + _FD_STEP <= self.ctx.upper, _FD_STEP, -_FD_STEP)
            Xp = np.repeat(X, z, axis=0).reshape(m, z, z)
            Xp[:, np.arange(z), np.arange(z)] += step
            grad = (model.score(Xp.reshape(m * z, z)).reshape(m, z) - base[:, None]) / step
            direction = np.where(grad >= 0, 1.0, -1.0)
            gain = np.abs(grad)
        gain = np.where(self.mutable, gain, 0.0)
        return direction, gain

    def _select(self, X, goal, direction, gain, room):
        """The F most useful features per candidate (m, F) and how far each may move (m, F)."""
        model = self.ctx.decision_model
        F = min(self.n_features, max(int(self.mutable.sum()), 1))
        score_rate = gain / self.d
        usable = (gain > 0) & (room > 1e-12)
        key = np.where(usable, score_rate, -np.inf)
        order = np.argsort(-key, axis=1, kind="stable")
        sel = order[:, :F]
        if model.is_linear:
            from scipy.special import logit

            need = logit(np.clip(goal, 1e-12, 1 - 1e-12)) - (X @ model.weights + model.intercept)
            g_sel = np.take_along_axis(gain, sel, axis=1)
            r_sel = np.take_along_axis(room, sel, axis=1)
            # the move that alone closes the gap (a hair beyond, so the top level reaches it)
            alone = np.divide(
                need[:, None] * (1 + 1e-9), g_sel, out=np.full(g_sel.shape, np.inf), where=g_sel > 0
            )
            reach = np.minimum(alone, r_sel)
            # if the best features by rate cannot reach the goal together, use the
            # features with the largest attainable gain instead
            short = (g_sel * r_sel).sum(axis=1) < need
            if short.any():
                alt = np.argsort(-np.where(usable, gain * room, -np.inf), axis=1, kind="stable")[
                    :, :F
                ]
                sel[short] = alt[short]
                g_alt = np.take_along_axis(gain, alt, axis=1)[short]
                r_alt = np.take_along_axis(room, alt, axis=1)[short]
                a_alt = np.divide(
                    need[short, None] * (1 + 1e-9),
                    g_alt,
                    out=np.full(g_alt.shape, np.inf),
                    where=g_alt > 0,
                )
                reach[short] = np.minimum(a_alt, r_alt)
        else:
            reach = np.take_along_axis(room, sel, axis=1)
        reach = np.where(np.take_along_axis(usable, sel, axis=1), reach, 0.0)
        return sel, reach

    def _grid(self, F: int):
        lay = self._layout.get(F)
        if lay is None:
            L = self.levels
            strides = L ** np.arange(F - 1, -1, -1)
            codes = np.stack(np.unravel_index(np.arange(L**F), (L,) * F), axis=1)
            lay = (strides, codes, L**F)
            self._layout[F] = lay
        return lay

    def _tables(self, vals, sel, strides, codes, grid_goal, is_goal) -> PairTables:
        """The MDP :meth:`_build` builds, as tables over its non-goal states: each candidate's
        grid states below the goal (``grid_goal`` (m, S1) False) and its "failed" sink;
        ``is_goal`` (m * (S1 + 1),) flags the goal states of the whole MDP."""
        L, J = self.levels, self.max_jump
        m, S1 = grid_goal.shape
        B = S1 + 1
        F = sel.shape[1]
        # non-goal states in ascending order: a block's grid states below the goal, its sink
        cand, cell = np.nonzero(np.concatenate([~grid_goal, np.ones((m, 1), bool)], axis=1))
        states = cand * B + cell
        on_grid = cell < S1
        cell = np.minimum(cell, S1 - 1)  # a sink reads any grid cell: it has no attempts
        fail = states if self.retry else cand * B + S1
        # one row per attempt (feature f, jump j), f-major as the actions are numbered
        f = np.repeat(np.arange(F), J)[:, None]  # (F*J, 1)
        j = np.tile(np.arange(1, J + 1), F)[:, None]
        k = codes[cell][:, f[:, 0]].T  # (F*J, n) levels now
        can = (k + j < L) & on_grid
        x = vals[cand, f, k]
        x2 = vals[cand, f, np.minimum(k + j, L - 1)]
        d_f = self.d[sel][cand, f]
        dx = np.abs(x2 - x)
        # elementwise, so one call gives each entry the bits of a call per attempt
        pa = change_success_probability(x, x2, self.ctx.beta, d_f)
        live = can & (dx > 0) & (pa > 0)
        succ = states + j * strides[f] * can
        p = np.where(live, pa, 0.0)
        c = np.where(live, dx * d_f, 0.0)
        # dead ends (no attempt with a chance left) and the sinks stay put at zero cost
        stuck = ~(p > 0).any(axis=0)
        fail = np.broadcast_to(fail, succ.shape)
        return PairTables.from_attempts(is_goal, states, succ, fail, p, c, stuck, self.horizon)

    def _build(self, vals, sel, strides, codes, is_goal, m) -> RecourseMDP:
        """Block-diagonal MDP of m candidates (blocks of ``S1 + 1`` states, the last one the
        "failed" sink): actions (feature f, jump j), then one "stay" action."""
        L, J = self.levels, self.max_jump
        F = sel.shape[1]
        S1 = codes.shape[0]
        B = S1 + 1
        S = m * B
        A = F * J
        nxt = np.empty((A, m, B, 2), dtype=np.int64)
        prob = np.zeros((A, m, B, 2))
        cost = np.zeros((A, m, B))
        start = (np.arange(m) * B)[:, None]
        here = start + np.arange(S1)[None, :]  # (m, S1) global grid indices
        fail = here if self.retry else np.broadcast_to(start + S1, here.shape)
        nxt[:, :, S1, :] = start + S1
        d_sel = self.d[sel]  # (m, F)
        for f in range(F):
            k = codes[:, f]  # (S1,)
            for j in range(1, J + 1):
                a = f * J + (j - 1)
                k2 = k + j
                can = k2 < L
                k2c = np.minimum(k2, L - 1)
                x = vals[:, f, k]  # (m, S1)
                x2 = vals[:, f, k2c]
                dx = np.abs(x2 - x)
                p = change_success_probability(x, x2, self.ctx.beta, d_sel[:, f : f + 1])
                live = can[None, :] & (dx > 0) & (p > 0)
                nxt[a, :, :S1, 0] = here + j * strides[f] * can
                nxt[a, :, :S1, 1] = fail
                prob[a, :, :S1, 0] = np.where(live, p, 0.0)
                prob[a, :, :S1, 1] = np.where(live, 1.0 - p, 0.0)
                cost[a, :, :S1] = np.where(live, dx * d_sel[:, f : f + 1], 0.0)
        nxt, prob, cost = nxt.reshape(A, S, 2), prob.reshape(A, S, 2), cost.reshape(A, S)
        base = np.arange(S)
        # the sink and dead ends (no move with a chance left) stay put at zero cost;
        # fail_cost at the horizon is what they cost the planner
        stuck = ~is_goal & ~(prob[:, :, 0] > 0).any(axis=0)
        if stuck.any():
            nxt = np.concatenate([nxt, np.stack([base, base], axis=1)[None]], axis=0)
            stay = np.zeros((1, S, 2))
            stay[0, stuck, 0] = 1.0
            prob = np.concatenate([prob, stay], axis=0)
            cost = np.concatenate([cost, np.zeros((1, S))], axis=0)
        # an attempt with zero success chance is an unavailable action
        return RecourseMDP.from_outcomes(nxt, prob, cost, is_goal, self.horizon)

    def _intended_target(
        self, goal: np.ndarray, pol, starts: np.ndarray, strides: np.ndarray
    ) -> np.ndarray:
        """(m,) state reached when every planned attempt succeeds."""
        J = self.max_jump
        moves = np.append(((np.arange(strides.size * J) % J) + 1) * np.repeat(strides, J), 0)
        s = starts.copy()
        for h in range(pol.horizon):
            a = pol.actions[h, s].astype(np.int64)
            live = (a != GOAL_ACTION) & ~goal[s]
            if not live.any():
                break
            s[live] += moves[a[live]]  # the last action is "stay"
        return s

    @staticmethod
    def _moments(mdp: RecourseMDP, pol, starts: np.ndarray):
        """Exact mean and variance of the plan's total effort and its success rate from ``starts``."""
        S, H = mdp.n_states, pol.horizon
        E1, E2 = np.zeros(S), np.zeros(S)
        R = mdp.goal.astype(float)
        indptr, p_all, c_all, nx_all = mdp.indptr, mdp.prob, mdp.cost, mdp.indices
        states = np.arange(S)
        for h in range(H - 1, -1, -1):
            a = pol.actions[h].astype(np.int64)
            # only the planned action's row of each state: its transitions in stored order,
            # so each state's sums add the same terms in the same order as over every row
            row = np.where(a >= 0, a, 0) * S + states
            start, count = indptr[row], indptr[row + 1] - indptr[row]
            owner = np.repeat(states, count)
            entry = np.repeat(start - np.cumsum(count) + count, count) + np.arange(owner.size)
            p, c, nx = p_all[entry], c_all[entry], nx_all[entry]
            e1 = np.bincount(owner, weights=p * (c + E1[nx]), minlength=S)
            e2 = np.bincount(owner, weights=p * (c * c + 2 * c * E1[nx] + E2[nx]), minlength=S)
            r = np.bincount(owner, weights=p * R[nx], minlength=S)
            goal = mdp.goal | (a < 0)
            E1, E2, R = (
                np.where(goal, 0.0, e1),
                np.where(goal, 0.0, e2),
                np.where(goal, mdp.goal.astype(float), r),
            )
        mean = E1[starts]
        return mean, np.maximum(E2[starts] - mean * mean, 0.0), R[starts]


def register(registry: Registry) -> None:
    """Add ``safear`` to the policy registry."""
    registry.policy(
        "safear",
        SafeARPolicy,
        "risk-averse plans (G-RSVI per candidate, beta_risk from the candidate or safear:beta_risk=B); "
        "records exp_cost, var95, cvar95",
    )
