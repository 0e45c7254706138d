"""The population planner's table path (policies.safear.pairs) against the general CSR path:
every number bit for bit."""

import numpy as np
import pytest

from abm.interfaces import PolicyContext
from policies.safear import SafeARPolicy
from policies.safear.mdp import RecourseMDP
from policies.safear.pairs import PairTables, grsvi_pairs, moments, rollout_costs
from policies.safear.risk import per_start_measures, rollout, row_var_cvar
from policies.safear.solvers import grsvi


def random_attempts(seed, retry, S=40, A0=5):
    """Random two-outcome attempts on S states: later states on success, a sink (or the
    state itself, ``retry``) on failure; some rows unavailable, some sure (p = 1)."""
    rng = np.random.default_rng(seed)
    goal = rng.random(S) < 0.4
    goal[-1] = False  # the sink
    states = np.flatnonzero(~goal)
    n = states.size
    succ = np.minimum(states + rng.integers(1, 6, (A0, n)), S - 2)
    fail = np.broadcast_to(states if retry else np.full(n, S - 1), (A0, n))
    p = rng.choice([0.0, 1.0, 0.1, 0.3, 0.7, 0.95], size=(A0, n)) * (rng.random((A0, n)) < 0.8)
    p = np.where(rng.random((A0, n)) < 0.5, rng.random((A0, n)), p)
    live = (p > 0) & (succ != states)
    p = np.where(live, p, 0.0)
    c = np.where(live, rng.random((A0, n)) * 3, 0.0)
    stuck = ~(p > 0).any(axis=0)
    return goal, states, succ, fail, p, c, stuck


def full_mdp(goal, states, succ, fail, p, c, stuck, horizon):
    """What the general path builds: RecourseMDP.from_outcomes on (A, S, 2) tables with
    the goal states' rows empty."""
    A0, S = p.shape[0], goal.size
    nxt = np.zeros((A0 + 1, S, 2), np.int64)
    nxt[:] = np.arange(S)[None, :, None]
    prob = np.zeros((A0 + 1, S, 2))
    cost = np.zeros((A0 + 1, S))
    nxt[:A0, states, 0], nxt[:A0, states, 1] = succ, fail
    prob[:A0, states, 0] = p
    prob[:A0, states, 1] = np.where(p > 0, 1.0 - p, 0.0)
    cost[:A0, states] = c
    prob[A0, states[stuck], 0] = 1.0
    return RecourseMDP.from_outcomes(nxt, prob, cost, goal, horizon)


@pytest.mark.parametrize("retry", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_tables_hold_what_from_outcomes_stores_and_solve_alike(seed, retry):
    H = 6
    args = random_attempts(seed, retry)
    t = PairTables.from_attempts(*args, H)
    ref = full_mdp(*args, H)
    mine = t.to_mdp()
    for key in ("indptr", "indices", "prob", "cost", "available", "goal"):
        np.testing.assert_array_equal(getattr(mine, key), getattr(ref, key), err_msg=key)
    assert np.array_equal(mine.prob.view(np.int64), ref.prob.view(np.int64))  # bits
    S = ref.n_states
    beta = np.random.default_rng(seed).uniform(0, 3, S)
    starts = t.states[:7]
    for risk in ("std", "lpsd"):
        pol = grsvi_pairs(t, beta, risk=risk, terminal_cost=1.0)
        want = grsvi(ref, beta, risk=risk, terminal_cost=1.0)
        np.testing.assert_array_equal(pol.actions, want.actions)
        np.testing.assert_array_equal(pol.values, want.values)
        got_m = moments(t, pol.actions, starts)
        want_m = SafeARPolicy._moments(ref, want, starts)
        for g, w in zip(got_m, want_m, strict=True):
            np.testing.assert_array_equal(g, w)
        r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
        cost = rollout_costs(t, pol.actions, starts, 50, rng=r1)
        ro = rollout(ref, want, starts, 50, rng=r2)
        np.testing.assert_array_equal(cost, ro.cost)
        assert r1.bit_generator.state == r2.bit_generator.state  # the same draws
        ps = per_start_measures(ref, ro, alphas=(0.95,))
        var, cvar = row_var_cvar(cost, 0.95)
        np.testing.assert_array_equal(var, ps["var95"].to_numpy())
        np.testing.assert_array_equal(cvar, ps["cvar95"].to_numpy())


class Wavy:
    """A non-linear scorer (the planner then takes finite-difference gradients)."""

    is_linear = False

    def score(self, X):
        X = np.asarray(X, float)
        return 1 / (1 + np.exp(-(2 * X[:, 0] + 3 * X[:, 1] ** 2 + np.sin(3 * X[:, 2]) - 2.5)))


def context(model, beta=0.05):
    from abm.interfaces import LinearScorer

    z = 4
    return PolicyContext(
        decision_model=LinearScorer((2.0, 2.5, 1.0, -1.5), -2.5) if model == "linear" else model,
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.array([False, False, False, True]),
        difficulty=np.array([0.9, 0.3, 0.6, 0.5]),
        k=1,
        m=1,
        validity=1,
        beta=beta,
        ticks=1,
    )


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"retry": 1, "risk": "lpsd", "horizon": 10},
        {"n_features": 2, "levels": 4, "max_jump": 1},
        {"n_features": 4, "levels": 3, "fail_cost": 0.0, "rollouts": 37},
        {"levels": 8, "horizon": 3, "margin": 0.1},
    ],
)
@pytest.mark.parametrize("model", ["linear", "wavy"])
def test_population_table_path_equals_general_path(params, model):
    pol = SafeARPolicy(**params)
    pol.prepare(context(Wavy() if model == "wavy" else "linear", beta=0.05))
    rng = np.random.default_rng(7)
    X = rng.uniform(0.0, 0.6, (60, 4))
    X[:3, 0] = 1.0  # a feature at its bound
    goal = np.clip(pol.ctx.decision_model.score(X) + rng.uniform(0.02, 0.4, 60), 0, 0.999)
    goal[-5:] = 0.9999  # beyond the box's best corner
    beta = rng.uniform(0, 3, 60)
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    cf, ok, meas = pol._plan_unmet(X, goal, beta, r1)
    cf_ref, ok_ref, meas_ref = pol._plan_unmet_mdp(X, goal, beta, r2)
    assert ok.any() and (~ok).any()
    np.testing.assert_array_equal(cf, cf_ref)
    np.testing.assert_array_equal(ok, ok_ref)
    assert meas.keys() == meas_ref.keys()
    for key in meas:
        np.testing.assert_array_equal(meas[key], meas_ref[key], err_msg=key)
    assert r1.bit_generator.state == r2.bit_generator.state
