"""Two-outcome recourse MDPs held as dense tables over their non-goal states.

The population planner's MDPs give every (action, state) at most two outcomes (success,
failure) and make most grid states goals. Goal states are absorbing at zero cost, so
G-RSVI, policy evaluation and rollouts never read their rows: :class:`PairTables` keeps
only the rows of the ``n`` non-goal states, as (2, A, n) tables, and the functions here
redo :func:`policies.safear.solvers.grsvi`, the population planner's exact moments and
:func:`policies.safear.risk.rollout` on them.

Every number matches the general CSR path bit for bit. The tables hold what
:meth:`RecourseMDP.from_outcomes` would store: outcomes in ascending next-state order,
zero-probability outcomes left out (slot 1 then holds probability 0), probabilities
divided by their row sum and costs as stored there. Row sums of two terms do not depend
on the order of the terms, and an empty slot adds an exact zero, so the dense sums equal
the CSR ``bincount`` sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policies.safear.mdp import GOAL_ACTION, RecourseMDP
from policies.safear.solvers import Policy, _check_beta_risk, value_table


@dataclass(frozen=True, eq=False)
class PairTables:
    """A two-outcome MDP restricted to the rows of its non-goal states.

    goal : (S,) bool; states : (n,) int64, the non-goal states in ascending order;
    nxt : (2, A, n) int64, prob : (2, A, n) float64, cost : (2, A, n) float64 -- each
    row's outcomes in stored (ascending next-state) order, slot 0 then slot 1; an absent
    outcome has probability 0, cost 0 and the row's own state as next state;
    count : (A, n) int64, outcomes per row (0 = unavailable); horizon : int.
    """

    goal: np.ndarray
    states: np.ndarray
    nxt: np.ndarray
    prob: np.ndarray
    cost: np.ndarray
    count: np.ndarray
    horizon: int

    @property
    def n_states(self) -> int:
        return self.goal.size

    @property
    def available(self) -> np.ndarray:
        """(A, n) whether each action may be taken in each non-goal state."""
        return self.count > 0

    @classmethod
    def from_attempts(cls, goal, states, succ, fail, p, c, stuck, horizon: int) -> PairTables:
        """Tables of attempts that succeed with probability ``p`` and fail otherwise.

        goal : (S,) bool; states : (n,) the non-goal states; succ, fail : (A0, n) next
        states; p : (A0, n) success probabilities (0 = unavailable); c : (A0, n) the cost
        paid either way; stuck : (n,) states given one more action, "stay" at zero cost.
        Stored as :meth:`RecourseMDP.from_outcomes` stores ``(succ, fail)`` with
        probabilities ``(p, 1 - p)`` (``(1, 0)`` and cost 0 for "stay").
        """
        A0, n = p.shape
        p_fail = np.where(p > 0, 1.0 - p, 0.0)
        swap = fail < succ
        if swap.any():
            n0, n1 = np.where(swap, fail, succ), np.where(swap, succ, fail)
            q0, q1 = np.where(swap, p_fail, p), np.where(swap, p, p_fail)
        else:  # failing leads to a later state (the sink) everywhere
            n0, n1, q0, q1 = succ, fail, p, p_fail
        # from_outcomes keeps cost * prob and divides it by the probability again
        w0, w1 = c * q0, c * q1
        k0, k1 = q0 != 0, q1 != 0
        moved = ~k0 & k1
        if moved.any():  # a dropped first outcome moves the second into slot 0
            n0, q0, w0 = np.where(k0, n0, n1), np.where(k0, q0, q1), np.where(k0, w0, w1)
            k0, k1 = k0 | k1, k0 & k1
            q1, w1 = np.where(k1, q1, 0.0), np.where(k1, w1, 0.0)
        count = np.empty((A0 + 1, n), np.int64)
        np.add(k0, k1, out=count[:A0], dtype=np.int64)
        count[A0] = stuck
        # the row sum from_arrays normalises by (an absent outcome adds 0.0)
        total = np.where(k0, q0 + q1, 1.0)
        nxt = np.empty((2, A0 + 1, n), np.int64)
        nxt[:, A0] = states
        nxt[0, :A0] = np.where(k0, n0, states)
        nxt[1, :A0] = np.where(k1, n1, states)
        prob = np.zeros((2, A0 + 1, n))
        np.divide(q0, total, out=prob[0, :A0])
        np.divide(q1, total, out=prob[1, :A0])
        prob[0, A0] = stuck
        cost = np.zeros((2, A0 + 1, n))
        np.divide(w0, q0, out=cost[0, :A0], where=k0)
        np.divide(w1, q1, out=cost[1, :A0], where=k1)
        return cls(
            goal=np.asarray(goal, bool),
            states=np.asarray(states, np.int64),
            nxt=nxt,
            prob=prob,
            cost=cost,
            count=count,
            horizon=int(horizon),
        )

    def to_mdp(self) -> RecourseMDP:
        """The same MDP as a :class:`RecourseMDP` (goal states without rows), for checks."""
        A, n = self.count.shape
        S = self.n_states
        cnt = np.zeros((A, S), np.int64)
        cnt[:, self.states] = self.count
        idx = np.zeros((A, S, 2), np.int64)
        pr = np.zeros((A, S, 2))
        co = np.zeros((A, S, 2))
        idx[:, self.states] = np.moveaxis(self.nxt, 0, -1)
        pr[:, self.states] = np.moveaxis(self.prob, 0, -1)
        co[:, self.states] = np.moveaxis(self.cost, 0, -1)
        keep = np.arange(2)[None, None, :] < cnt[..., None]
        indptr = np.concatenate([[0], np.cumsum(cnt.ravel())])
        return RecourseMDP.from_arrays(
            indptr, idx[keep], pr[keep], co[keep], self.goal, self.horizon
        )


def grsvi_pairs(t: PairTables, beta, risk: str = "std", terminal_cost=None) -> Policy:
    """:func:`policies.safear.solvers.grsvi` on ``t`` with a per-state ``beta`` (S,).

    Returns the same :class:`Policy` ((H, S) actions, (H+1, S) values) bit for bit.
    """
    S, H = t.n_states, t.horizon
    beta = _check_beta_risk(np.broadcast_to(np.asarray(beta, float), (S,)), risk, S)
    values = value_table(t.goal, H, terminal_cost)
    actions = np.full((H, S), GOAL_ACTION, dtype=np.int16)
    b = beta[t.states]
    avail = t.available
    cols = np.arange(t.states.size)
    p, nx, c = t.prob, t.nxt, t.cost
    for h in range(H - 1, -1, -1):
        x = c + values[h + 1][nx]  # (2, A, n)
        px = p * x
        mu = px[0] + px[1]
        d = x - mu
        w = p * d * d
        if risk == "lpsd":
            w = np.where(d > 0, w, 0.0)
        q = mu + b * np.sqrt(w[0] + w[1])
        q[~avail] = np.inf
        a = np.argmin(q, axis=0)
        values[h, t.states] = q[a, cols]
        actions[h, t.states] = a
    return Policy(actions=actions, values=values, beta=beta, risk=risk, solver="grsvi")


def moments(t: PairTables, actions: np.ndarray, starts: np.ndarray):
    """Exact mean (m,) and variance (m,) of the total effort of the policy ``actions`` (H, S)
    from ``starts`` (m,), and its success rate (m,); as the population planner's
    CSR evaluation computes them."""
    S, H = t.n_states, actions.shape[0]
    E1, E2 = np.zeros(S), np.zeros(S)
    R = t.goal.astype(float)
    n = t.states.size
    rows = np.arange(n)
    p, c, nx = (arr.reshape(2, -1) for arr in (t.prob, t.cost, t.nxt))  # (2, A*n)
    for h in range(H - 1, -1, -1):
        r = actions[h, t.states].astype(np.int64) * n + rows  # the planned action's rows
        pr, cr, nr = p[:, r], c[:, r], nx[:, r]  # (2, n) each
        e1_nx = E1[nr]
        t1 = pr * (cr + e1_nx)
        t2 = pr * (cr * cr + 2 * cr * e1_nx + E2[nr])
        tr = pr * R[nr]
        E1[t.states] = t1[0] + t1[1]
        E2[t.states] = t2[0] + t2[1]
        R[t.states] = tr[0] + tr[1]
    mean = E1[starts]
    return mean, np.maximum(E2[starts] - mean * mean, 0.0), R[starts]


def rollout_costs(
    t: PairTables, actions: np.ndarray, starts, n_rollouts: int, *, rng: np.random.Generator
) -> np.ndarray:
    """Total costs (m, R) of ``n_rollouts`` rollouts from each start (m,): the ``cost`` of
    :func:`policies.safear.risk.rollout`, with the same draws from ``rng``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (no global random state)")
    starts = np.asarray(starts, dtype=np.int64).ravel()
    n, H = t.states.size, actions.shape[0]
    pos = np.full(t.n_states, -1, np.int64)  # a state's row in the tables; -1 for goals
    pos[t.states] = np.arange(n)
    row = actions[:, t.states].astype(np.int64) * n + np.arange(n)  # (H, n) planned rows
    # inverse CDF over a row's stored outcomes: the first when u < its probability, else
    # the second; a row with one outcome stores probability 1.0 (p / p), which u never
    # reaches, so it needs no test of its own
    p0 = t.prob[0].ravel()
    c = t.cost.ravel()
    nx = pos[t.nxt].ravel()  # next states as table rows (2 * A * n,)
    size = p0.size
    cur = pos[np.repeat(starts, n_rollouts)]  # (N,) each rollout's row; -1 once in a goal
    total = np.zeros(cur.size)
    # goals are absorbing and every other state has an action, so the rollouts that draw
    # at a step are those not yet in a goal, in rollout order as rollout() draws for them;
    # they are followed in compact arrays (index, row, cost so far)
    alive = np.flatnonzero(cur >= 0)
    cur, acc = cur[alive], np.zeros(alive.size)
    for h in range(H):
        if not alive.size:
            break
        r = row[h, cur]
        j = (rng.random(alive.size) >= p0[r]) * size + r
        acc += c[j]
        cur = nx[j]
        done = cur < 0
        if done.any():
            total[alive[done]] = acc[done]
            keep = ~done
            alive, cur, acc = alive[keep], cur[keep], acc[keep]
    total[alive] = acc
    return total.reshape(starts.size, n_rollouts)
