"""Risk measures of recourse policies: Monte-Carlo and exact.

Conventions (documented once, used everywhere):

* Total cost = sum of the costs of all actions taken within the horizon,
  failed attempts included; a rollout that never reaches a goal contributes
  the cost it accrued in ``H`` steps. Every measure except ``rho`` uses all
  rollouts, successful or not.
* Variance is the population variance of the (empirical) distribution.
* ``VaR_alpha = min{x : F(x) >= alpha}`` (eq. 4) on the (empirical) CDF.
* ``CVaR_alpha = E[X | X > VaR_alpha]`` (eq. 5, strict inequality). It is
  *undefined* (NaN; empty in CSV) when no probability mass lies above
  ``VaR_alpha``, e.g. for a deterministic cost.
* Sparsity = number of features that differ between initial and final
  state (L0); proximity = L0 over nominal features + L1 (in levels) over
  ordinal ones. Averaged over rollouts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from policies.safear.mdp import GOAL_ACTION, RecourseMDP
from policies.safear.solvers import Policy

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_ALPHAS = (0.80, 0.95)
_TOL = 1e-9


def _alpha_tag(alpha: float) -> str:
    return f"{round(alpha * 100):d}"


def var_cvar(values, probs=None, alpha: float = 0.95) -> tuple[float, float]:
    """VaR and CVaR of a discrete cost distribution.

    values : (n,) costs; probs : (n,) weights (uniform when None).
    Returns ``(VaR, CVaR)``; CVaR is NaN when no mass lies above VaR.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must be non-empty")
    p = (
        np.full(x.size, 1.0 / x.size)
        if probs is None
        else np.asarray(probs, dtype=np.float64).ravel()
    )
    if p.shape != x.shape:
        raise ValueError(f"probs must have the shape of values {x.shape}, got {p.shape}")
    order = np.argsort(x, kind="stable")
    x, p = x[order], p[order] / p.sum()
    cdf = np.cumsum(p)
    k = int(np.searchsorted(cdf, alpha - _TOL, side="left"))
    var = float(x[min(k, x.size - 1)])
    tail = x > var + _TOL
    mass = p[tail].sum()
    cvar = float(p[tail] @ x[tail] / mass) if mass > _TOL else math.nan
    return var, cvar


@dataclass(frozen=True)
class CostDistribution:
    """Exact distribution of a policy's total cost from one start state.

    values : (n,) distinct total costs, sorted; probs : (n,) their probabilities;
    success : probability of being in a goal within H steps;
    final_states : (m,) and final_probs : (m,) distribution of the final state.
    """

    values: np.ndarray
    probs: np.ndarray
    success: float
    final_states: np.ndarray
    final_probs: np.ndarray

    @property
    def mean(self) -> float:
        return float(self.probs @ self.values)

    @property
    def var(self) -> float:
        return float(self.probs @ (self.values - self.mean) ** 2)

    def var_cvar(self, alpha: float) -> tuple[float, float]:
        return var_cvar(self.values, self.probs, alpha)


def exact_distribution(
    mdp: RecourseMDP, policy: Policy, start: int, max_support: int = 200_000
) -> CostDistribution:
    """Propagate the joint law of (state, accumulated cost) for ``H`` steps.

    Exact, but the support can grow quickly: meant for small MDPs or single
    start states with few reachable states. Raises when the support exceeds
    ``max_support``.
    """
    dist: dict[tuple[int, float], float] = {(int(start), 0.0): 1.0}
    for h in range(policy.horizon):
        new: dict[tuple[int, float], float] = defaultdict(float)
        for (s, c), p in dist.items():
            a = int(policy.actions[h, s])
            if mdp.goal[s] or a == GOAL_ACTION:
                new[(s, c)] += p
                continue
            nxt, pr, co = mdp.outcomes(s, a)
            for t, q, k in zip(nxt, pr, co, strict=True):
                # Rounding keeps equal totals reached by different paths merged.
                new[(int(t), round(c + float(k), 9))] += p * float(q)
        dist = new
        if len(dist) > max_support:
            raise ValueError(f"exact distribution support exceeds max_support={max_support}")
    by_cost: dict[float, float] = defaultdict(float)
    by_state: dict[int, float] = defaultdict(float)
    success = 0.0
    for (s, c), p in dist.items():
        by_cost[c] += p
        by_state[s] += p
        if mdp.goal[s]:
            success += p
    vals = np.array(sorted(by_cost))
    states = np.array(sorted(by_state), dtype=np.int64)
    return CostDistribution(
        values=vals,
        probs=np.array([by_cost[v] for v in vals]),
        success=success,
        final_states=states,
        final_probs=np.array([by_state[int(s)] for s in states]),
    )


@dataclass(frozen=True)
class Rollouts:
    """Monte-Carlo rollouts of a policy.

    cost, success, final : (N, R) per start state and rollout;
    states : (N, R, H+1) and actions : (N, R, H) when recorded, else None.
    """

    starts: np.ndarray
    cost: np.ndarray
    success: np.ndarray
    final: np.ndarray
    states: np.ndarray | None = None
    actions: np.ndarray | None = None


def _sample_outcomes(
    prob: np.ndarray, lo: np.ndarray, nnz: np.ndarray, max_k: int, u: np.ndarray
) -> np.ndarray:
    """Inverse-CDF sampling of one outcome per row from uniforms ``u`` (n,): rows start at
    ``lo`` (n,) in the CSR arrays and hold ``nnz`` (n,) outcomes. Returns the picked offsets
    (n,) within each row. Vectorised by outcome slot (at most ``max_k``) rather than by sample.
    """
    pick = nnz - 1
    acc = np.zeros(u.size)
    chosen = np.zeros(u.size, bool)
    for k in range(max_k - 1):
        has = k < nnz - 1
        acc = acc + np.where(has, prob[np.minimum(lo + k, prob.size - 1)], 0.0)
        hit = has & ~chosen & (u < acc)
        pick = np.where(hit, k, pick)
        chosen |= hit
    return pick


def rollout(
    mdp: RecourseMDP,
    policy: Policy,
    starts,
    n_rollouts: int = 100,
    *,
    rng: np.random.Generator,
    record: bool = False,
) -> Rollouts:
    """Simulate ``n_rollouts`` episodes from each start state, all in parallel.

    starts : (N,) state indices. Goal states stay put at zero cost.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (no global random state)")
    if n_rollouts < 1:
        raise ValueError(f"n_rollouts must be >= 1, got {n_rollouts}")
    starts = np.asarray(starts, dtype=np.int64).ravel()
    if starts.size and (starts.min() < 0 or starts.max() >= mdp.n_states):
        raise ValueError(f"start states must lie in [0, {mdp.n_states})")
    n, r, H = starts.size, n_rollouts, policy.horizon
    s = np.repeat(starts, r)
    total = np.zeros(s.size)
    states = np.empty((s.size, H + 1), dtype=np.int64) if record else None
    acts = np.full((s.size, H), GOAL_ACTION, dtype=np.int16) if record else None
    if record:
        states[:, 0] = s
    indptr, indices, prob, cost = mdp.indptr, mdp.indices, mdp.prob, mdp.cost
    max_k = int(np.diff(indptr).max())
    for h in range(H):
        a = policy.actions[h, s].astype(np.int64)
        live = np.flatnonzero((a != GOAL_ACTION) & ~mdp.goal[s])
        if live.size:
            row = a[live] * mdp.n_states + s[live]
            lo = indptr[row]
            nnz = indptr[row + 1] - lo
            j = lo + _sample_outcomes(prob, lo, nnz, max_k, rng.random(live.size))
            total[live] += cost[j]
            s = s.copy()
            s[live] = indices[j]
            if record:
                acts[live, h] = a[live]
        if record:
            states[:, h + 1] = s
    return Rollouts(
        starts=starts,
        cost=total.reshape(n, r),
        success=mdp.goal[s].reshape(n, r),
        final=s.reshape(n, r),
        states=None if states is None else states.reshape(n, r, H + 1),
        actions=None if acts is None else acts.reshape(n, r, H),
    )


def _distance(
    mdp: RecourseMDP, a_states: np.ndarray, b_states: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if mdp.features is None:
        nan = np.full(np.shape(a_states), np.nan)
        return nan, nan
    fa, fb = mdp.features[a_states], mdp.features[b_states]
    diff = fa != fb
    sparsity = diff.sum(axis=-1)
    ordinal = mdp.ordinal if mdp.ordinal is not None else np.ones(fa.shape[-1], bool)
    prox = np.where(ordinal, np.abs(fa - fb), diff).sum(axis=-1)
    return sparsity.astype(float), prox.astype(float)


def _sorted_var_cvar(srt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Empirical VaR and CVaR (n,) each of rows of costs ``srt`` (n, R) sorted along axis 1."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    n, r = srt.shape
    k = max(math.ceil(alpha * r - _TOL), 1) - 1
    var = srt[:, k]
    tail = srt > var[:, None] + _TOL
    cnt = tail.sum(axis=1)
    cvar = np.divide((srt * tail).sum(axis=1), cnt, out=np.full(n, np.nan), where=cnt > 0)
    return var, cvar


def row_var_cvar(cost: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """VaR and CVaR (n,) each of rollout costs (n, R) per start, as in :func:`per_start_measures`
    (which also builds a data frame; this is for callers that need only these two)."""
    return _sorted_var_cvar(np.sort(cost, axis=1), alpha)


def per_start_measures(
    mdp: RecourseMDP, ro: Rollouts, alphas: Sequence[float] = DEFAULT_ALPHAS
) -> pd.DataFrame:
    """One row per start state (individual): rho, cost_mean, cost_var, var{a}, cvar{a}, sparsity, proximity."""
    import pandas as pd  # with scipy.stats, a second to import: not when the registry lists policies

    cost = ro.cost
    n, r = cost.shape
    out = {
        "start": ro.starts,
        "rho": ro.success.mean(axis=1),
        "cost_mean": cost.mean(axis=1),
        "cost_var": cost.var(axis=1),
    }
    srt = np.sort(cost, axis=1)
    for alpha in alphas:
        var, cvar = _sorted_var_cvar(srt, alpha)
        out[f"var{_alpha_tag(alpha)}"] = var
        out[f"cvar{_alpha_tag(alpha)}"] = cvar
    sp, px = _distance(mdp, np.repeat(ro.starts[:, None], r, axis=1), ro.final)
    out["sparsity"] = sp.mean(axis=1)
    out["proximity"] = px.mean(axis=1)
    return pd.DataFrame(out)


def summarize(per_start: pd.DataFrame) -> dict[str, float]:
    """Average per-start measures over start states (NaN CVaRs are skipped)."""
    cols = [c for c in per_start.columns if c != "start" and c != "group"]
    res = {"n": int(len(per_start))}
    for c in cols:
        v = per_start[c].to_numpy(dtype=float)
        res[c] = float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
    return res


def risk_measures(
    mdp: RecourseMDP,
    policy: Policy,
    start: int,
    n_rollouts: int = 1000,
    *,
    rng: np.random.Generator,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
) -> dict[str, float]:
    """Risk measures of ``policy`` from one start state, pooled over ``n_rollouts`` rollouts."""
    ro = rollout(mdp, policy, [start], n_rollouts, rng=rng)
    return summarize(per_start_measures(mdp, ro, alphas)) | {"n_rollouts": n_rollouts}


def exact_measures(
    mdp: RecourseMDP, policy: Policy, start: int, alphas: Sequence[float] = DEFAULT_ALPHAS
) -> dict[str, float]:
    """Exact counterparts of :func:`risk_measures` (small reachable sets only)."""
    d = exact_distribution(mdp, policy, start)
    out = {"rho": d.success, "cost_mean": d.mean, "cost_var": d.var}
    for alpha in alphas:
        v, c = d.var_cvar(alpha)
        out[f"var{_alpha_tag(alpha)}"] = v
        out[f"cvar{_alpha_tag(alpha)}"] = c
    sp, px = _distance(mdp, np.full(d.final_states.size, start), d.final_states)
    out["sparsity"] = float(d.final_probs @ sp)
    out["proximity"] = float(d.final_probs @ px)
    return out


def group_disparity(
    per_start: pd.DataFrame, groups, metrics: Sequence[str] | None = None, pair: tuple | None = None
) -> pd.DataFrame:
    """Per-group means and a two-sided Mann-Whitney U test between two groups.

    per_start : output of :func:`per_start_measures` (N rows); groups : (N,) labels.
    Returns one row per metric: mean of each group, U statistic and p-value.
    NaN entries (undefined CVaR) are dropped per metric.
    """
    import pandas as pd
    from scipy import stats

    groups = np.asarray(groups)
    if groups.shape != (len(per_start),):
        raise ValueError(f"groups must have shape ({len(per_start)},), got {groups.shape}")
    labels = list(pair) if pair is not None else sorted(set(groups.tolist()), key=str)
    if len(labels) != 2:
        raise ValueError(f"need exactly two groups for the Mann-Whitney U test, got {labels}")
    metrics = (
        list(metrics)
        if metrics is not None
        else [c for c in per_start.columns if c not in ("start", "group")]
    )
    g0, g1 = labels
    rows = []
    for m in metrics:
        v = per_start[m].to_numpy(dtype=float)
        a = v[(groups == g0) & np.isfinite(v)]
        b = v[(groups == g1) & np.isfinite(v)]
        if a.size and b.size and not (np.ptp(np.concatenate([a, b])) == 0):
            res = stats.mannwhitneyu(a, b, alternative="two-sided")
            u, pv = float(res.statistic), float(res.pvalue)
        else:
            u, pv = math.nan, math.nan if not (a.size and b.size) else 1.0
        rows.append(
            {
                "metric": m,
                f"mean_{g0}": a.mean() if a.size else math.nan,
                f"mean_{g1}": b.mean() if b.size else math.nan,
                "U": u,
                "p_value": pv,
                f"n_{g0}": a.size,
                f"n_{g1}": b.size,
            }
        )
    return pd.DataFrame(rows)
