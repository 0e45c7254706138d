"""G-RSVI, its lower-partial-std variant, and episodic G-RSEVI.

Sign convention. The SafeAR paper writes values as rewards (negated costs)
and maximises ``Q = mu - beta * sigma``. Here costs are kept positive and
minimised, so the same criterion reads ``Q = mu + beta * sigma`` with
``V_h(s) = min_a Q_h(s, a)``: a risk-averse agent pays a premium for
spread. ``V_{H+1} = 0`` everywhere (no terminal penalty, as in the paper);
goal states have ``V_h = 0`` (zero-cost absorbing self-loop).

Steps are 0-based in arrays: ``actions[h]`` is the paper's ``pi_{h+1}``,
``values[h]`` its ``V_{h+1}``, ``values[H] = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.safear.mdp import GOAL_ACTION, RecourseMDP

RISKS = ("std", "lpsd")


@dataclass(frozen=True, eq=False)
class Policy:
    """Non-stationary deterministic policy.

    actions : (H, S) int16, ``GOAL_ACTION`` (-1) in goal states.
    values : (H+1, S) float64, the solver's risk-sensitive values (NaN where unknown).
    """

    actions: np.ndarray
    values: np.ndarray
    beta: float | np.ndarray
    risk: str = "std"
    solver: str = "grsvi"

    @property
    def horizon(self) -> int:
        return self.actions.shape[0]

    def __call__(self, h: int, s):
        """Action(s) at 0-based step ``h`` for state(s) ``s``."""
        return self.actions[h, s]


def _check_beta_risk(beta, risk: str, n_states: int | None = None):
    """Validate beta (a scalar, or (S,) per state when ``n_states`` is given); returns it."""
    b = np.asarray(beta, dtype=np.float64)
    if b.ndim == 1 and n_states is not None:
        if b.shape != (n_states,):
            raise ValueError(
                f"beta must be a scalar or have shape (S,) = ({n_states},), got {b.shape}"
            )
    elif b.ndim != 0:
        raise ValueError(f"beta must be a scalar, got shape {b.shape}")
    if not (np.all(np.isfinite(b)) and np.all(b >= 0)):
        raise ValueError(f"beta (risk aversion) must be finite and >= 0, got {beta}")
    if risk not in RISKS:
        raise ValueError(f"risk must be one of {RISKS}, got {risk!r}")
    return float(b) if b.ndim == 0 else b


def q_values(mdp: RecourseMDP, v_next: np.ndarray, beta, risk: str = "std") -> np.ndarray:
    """Risk-sensitive action values for one backward step.

    v_next : (S,) values of the next step; beta : scalar or (S,) per state.
    Returns (A, S); ``inf`` where an action is unavailable.
    """
    nrows = mdp.n_actions * mdp.n_states
    row = mdp.row_of
    x = mdp.cost + v_next[mdp.indices]
    mu = np.bincount(row, weights=mdp.prob * x, minlength=nrows)
    q = mu
    per_state = np.ndim(beta) == 1
    if per_state or beta > 0:
        # Deviations are taken around each row's own mean (not E[x^2]-mu^2) so
        # that deterministic actions get exactly zero spread; otherwise
        # cancellation noise of ~1e-7 would break ties between equal plans.
        d = x - mu[row]
        w = mdp.prob * d * d
        if risk == "lpsd":
            # Lower partial std of rewards = spread of costs above the mean.
            w = np.where(d > 0, w, 0.0)
        sigma = np.sqrt(np.bincount(row, weights=w, minlength=nrows))
        # rows are ordered (action, state): a per-state beta repeats once per action
        q = mu + (np.tile(beta, mdp.n_actions) if per_state else beta) * sigma
    q = q.reshape(mdp.n_actions, mdp.n_states)
    return np.where(mdp.available, q, np.inf)


def value_table(goal: np.ndarray, horizon: int, terminal_cost=None) -> np.ndarray:
    """Zero values (H+1, S) for the goal mask ``goal`` (S,), with ``terminal_cost`` (scalar
    or (S,), finite and >= 0) charged at step H in the non-goal states."""
    values = np.zeros((horizon + 1, goal.shape[0]))
    if terminal_cost is not None:
        tc = np.broadcast_to(np.asarray(terminal_cost, dtype=np.float64), goal.shape)
        if not (np.all(np.isfinite(tc)) and np.all(tc >= 0)):
            raise ValueError("terminal_cost must be finite and >= 0")
        values[horizon] = np.where(goal, 0.0, tc)
    return values


def grsvi(
    mdp: RecourseMDP, beta=0.0, risk: str = "std", horizon: int | None = None, terminal_cost=None
) -> Policy:
    """Greedy risk-sensitive value iteration (SafeAR Algorithm 1).

    One backward sweep over ``H`` steps, vectorised over all states and
    actions. ``risk="lpsd"`` penalises the lower partial standard deviation
    (App. A.8) instead of the standard deviation. Ties go to the lowest
    action index. Cost: O(H * nnz).

    ``beta`` is a scalar or an (S,) array (one risk aversion per state, e.g.
    when many individuals' MDPs are stacked block-diagonally).
    ``terminal_cost`` (scalar or (S,)) is charged in non-goal states after
    step H (``V_{H+1}``); the paper's setting is 0 (the default).
    """
    beta = _check_beta_risk(beta, risk, mdp.n_states)
    horizon = mdp.horizon if horizon is None else int(horizon)
    if horizon < 1:
        raise ValueError(f"horizon H must be >= 1, got {horizon}")
    s = mdp.n_states
    values = value_table(mdp.goal, horizon, terminal_cost)
    actions = np.empty((horizon, s), dtype=np.int16)
    cols = np.arange(s)
    for h in range(horizon - 1, -1, -1):
        q = q_values(mdp, values[h + 1], beta, risk)
        a = np.argmin(q, axis=0)
        v = q[a, cols]
        values[h] = np.where(mdp.goal, 0.0, v)
        actions[h] = np.where(mdp.goal, GOAL_ACTION, a)
    return Policy(actions=actions, values=values, beta=beta, risk=risk, solver="grsvi")


def value_iteration(mdp: RecourseMDP, horizon: int | None = None) -> Policy:
    """Ordinary finite-horizon expected-cost value iteration (risk-neutral)."""
    horizon = mdp.horizon if horizon is None else int(horizon)
    s = mdp.n_states
    P = mdp.P
    cbar = np.bincount(mdp.row_of, weights=mdp.prob * mdp.cost, minlength=P.shape[0])
    values = np.zeros((horizon + 1, s))
    actions = np.empty((horizon, s), dtype=np.int16)
    for h in range(horizon - 1, -1, -1):
        q = (cbar + P @ values[h + 1]).reshape(mdp.n_actions, s)
        q = np.where(mdp.available, q, np.inf)
        a = np.argmin(q, axis=0)
        values[h] = np.where(mdp.goal, 0.0, q[a, np.arange(s)])
        actions[h] = np.where(mdp.goal, GOAL_ACTION, a)
    return Policy(actions=actions, values=values, beta=0.0, risk="std", solver="value_iteration")


class _EpisodicTables:
    """G-RSEVI's tables over the (step, state) pairs visited so far: ``Q_h(s, .)`` (A,) rows,
    ``inf`` for unavailable actions and 0 (optimistic) for untried ones, and ``V_h(s)``;
    anything unvisited has ``V = 0`` (goal states exactly 0)."""

    def __init__(self, mdp: RecourseMDP, beta: float, risk: str) -> None:
        self.mdp, self.beta, self.risk = mdp, beta, risk
        self.q_table: dict[tuple[int, int], np.ndarray] = {}
        self.v_table: dict[tuple[int, int], float] = {}
        self._avail: dict[int, np.ndarray] = {}

    def available(self, s: int) -> np.ndarray:
        """Indices of the actions available in state ``s``."""
        a = self._avail.get(s)
        if a is None:
            a = np.flatnonzero(self.mdp.available[:, s])
            self._avail[s] = a
        return a

    def q(self, h: int, s: int) -> np.ndarray:
        """The (A,) row ``Q_h(s, .)``, created on first use (a view: backups write into it)."""
        q = self.q_table.get((h, s))
        if q is None:
            q = np.full(self.mdp.n_actions, np.inf)
            q[self.available(s)] = 0.0
            self.q_table[(h, s)] = q
        return q

    def walk(self, start: int, eps: float, u: np.ndarray, visited: np.ndarray) -> int:
        """One epsilon-greedy episode from ``start`` for up to H steps, stopping in a goal.

        u : (3, H) uniforms (explore?, which action, next state); the visited (state, action)
        pairs go to ``visited`` (H, 2). Returns how many steps were taken.
        """
        mdp = self.mdp
        indptr, indices, prob, S = mdp.indptr, mdp.indices, mdp.prob, mdp.n_states
        s, n = int(start), 0
        for h in range(mdp.horizon):
            if mdp.goal[s]:
                break
            acts = self.available(s)
            if u[0, h] < eps:
                a = int(acts[int(u[1, h] * acts.size)])
            else:
                a = int(np.argmin(self.q(h, s)))
            visited[n] = (s, a)
            n += 1
            r = a * S + s
            lo, hi = indptr[r], indptr[r + 1]
            c = np.cumsum(prob[lo:hi])
            j = min(int(np.searchsorted(c, u[2, h] * c[-1], side="right")), hi - lo - 1)
            s = int(indices[lo + j])
        return n

    def back_up(self, visited: np.ndarray, n: int) -> None:
        """``Q_h(s, a) = mu + beta * sigma`` (known model) along the first ``n`` visited
        pairs, from the last step to the first; ``V_h(s) = min_a Q_h(s, a)``."""
        mdp, v_table = self.mdp, self.v_table
        H, S, goal = mdp.horizon, mdp.n_states, mdp.goal
        for h in range(n - 1, -1, -1):
            s, a = int(visited[h, 0]), int(visited[h, 1])
            r = a * S + s
            lo, hi = mdp.indptr[r], mdp.indptr[r + 1]
            nxt = mdp.indices[lo:hi]
            vn = np.array(
                [0.0 if (h + 1 >= H or goal[t]) else v_table.get((h + 1, int(t)), 0.0) for t in nxt]
            )
            x = mdp.cost[lo:hi] + vn
            p = mdp.prob[lo:hi]
            mu = float(p @ x)
            d = x - mu
            w = p * d * d
            if self.risk == "lpsd":
                w = np.where(d > 0, w, 0.0)
            q = self.q(h, s)
            q[a] = mu + self.beta * float(np.sqrt(w.sum()))
            v_table[(h, s)] = float(q.min())

    def policy(self) -> Policy:
        """Greedy on Q where visited; elsewhere the first available action and NaN value."""
        mdp = self.mdp
        H, S = mdp.horizon, mdp.n_states
        actions = np.where(
            mdp.goal[None, :], GOAL_ACTION, np.argmax(mdp.available, axis=0)[None, :]
        ).astype(np.int16)
        actions = np.repeat(actions, H, axis=0)
        values = np.full((H + 1, S), np.nan)
        values[H] = 0.0
        values[:, mdp.goal] = 0.0
        for (h, s), q in self.q_table.items():
            actions[h, s] = int(np.argmin(q))
            values[h, s] = float(q.min())
        return Policy(
            actions=actions, values=values, beta=float(self.beta), risk=self.risk, solver="grsevi"
        )


def grsevi(
    mdp: RecourseMDP,
    start: int,
    beta: float = 0.0,
    *,
    rng: np.random.Generator,
    episodes: int = 10_000,
    epsilon: float = 1.0,
    decay: float = 0.9995,
    min_epsilon: float = 0.0,
    risk: str = "std",
) -> Policy:
    """Greedy risk-sensitive episodic value iteration (SafeAR Algorithm 2).

    Every episode starts in ``start``, acts epsilon-greedily on the current
    ``Q`` (epsilon multiplied by ``decay`` after each episode) for up to
    ``H`` steps, then backs up ``Q = mu + beta * sigma`` along the visited
    (step, state, action) pairs from the last step to the first, using the
    known transition model. Unvisited entries start at 0, which is
    optimistic for costs and so drives exploration. Cost is
    O(E * H * A * k) and independent of S.

    Returns a :class:`Policy` with ``(H, S)`` arrays; states never visited
    at a step get their first available action and NaN value.
    """
    beta = _check_beta_risk(beta, risk)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (no global random state)")
    if not 0 <= start < mdp.n_states:
        raise ValueError(f"start must be a state index in [0, {mdp.n_states}), got {start}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if not (0 <= epsilon <= 1 and 0 < decay <= 1 and 0 <= min_epsilon <= 1):
        raise ValueError("epsilon and min_epsilon must be in [0, 1] and decay in (0, 1]")
    H = mdp.horizon
    tables = _EpisodicTables(mdp, beta, risk)
    # all uniforms drawn up front, in this order: (3, episodes, H) explore?, action, next state
    u = np.stack([rng.random(episodes * H) for _ in range(3)]).reshape(3, episodes, H)
    visited = np.empty((H, 2), dtype=np.int64)
    eps = float(epsilon)
    for k in range(episodes):
        n = tables.walk(start, eps, u[:, k], visited)
        tables.back_up(visited, n)
        eps = max(min_epsilon, eps * decay)
    return tables.policy()
