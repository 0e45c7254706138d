"""G-RSVI / G-RSEVI against brute force, value iteration and a loop reference."""

import itertools

import numpy as np
import pytest

from lab.reproduce.safear import insurance_mdp, random_mdp
from policies.safear import GOAL_ACTION, Policy, exact_distribution, grsevi, grsvi, value_iteration


def _reference_grsvi(mdp, beta, risk="std"):
    """Algorithm 1 written as plain loops over states and actions (costs, minimised)."""
    H, S, A = mdp.horizon, mdp.n_states, mdp.n_actions
    V = np.zeros((H + 1, S))
    pi = np.full((H, S), GOAL_ACTION)
    for h in range(H - 1, -1, -1):
        for s in range(S):
            if mdp.goal[s]:
                continue
            best, arg = np.inf, None
            for a in range(A):
                nxt, p, c = mdp.outcomes(s, a)
                if len(nxt) == 0:
                    continue
                x = c + V[h + 1, nxt]
                mu = float(np.sum(p * x))
                dev = x - mu
                if risk == "lpsd":
                    dev = np.where(dev > 0, dev, 0.0)
                q = mu + beta * np.sqrt(np.sum(p * dev**2))
                if q < best - 1e-12:
                    best, arg = q, a
            V[h, s], pi[h, s] = best, arg
    return V, pi


def _policy_mean(mdp, actions):
    H, S = actions.shape
    E = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        for s in range(S):
            if mdp.goal[s]:
                continue
            nxt, p, c = mdp.outcomes(s, int(actions[h, s]))
            E[h, s] = np.sum(p * (c + E[h + 1, nxt]))
    return E[0]


@pytest.mark.parametrize("seed", range(5))
def test_beta0_equals_bruteforce_over_all_markov_policies(seed):
    mdp = random_mdp(np.random.default_rng(seed), n_states=4, n_actions=2, horizon=3)
    pol = grsvi(mdp, 0.0)
    free = [(h, s) for h in range(mdp.horizon) for s in range(mdp.n_states) if not mdp.goal[s]]
    choices = [np.flatnonzero(mdp.available[:, s]) for _, s in free]
    best = np.full(mdp.n_states, np.inf)
    for combo in itertools.product(*choices):
        acts = np.full((mdp.horizon, mdp.n_states), GOAL_ACTION)
        for (h, s), a in zip(free, combo, strict=True):
            acts[h, s] = a
        best = np.minimum(best, _policy_mean(mdp, acts))
    assert np.allclose(pol.values[0], best, atol=1e-12)
    # The exact distribution of the returned policy has that mean.
    for s in range(mdp.n_states):
        assert exact_distribution(mdp, pol, s).mean == pytest.approx(best[s], abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_beta0_equals_value_iteration(seed):
    mdp = random_mdp(
        np.random.default_rng(100 + seed), n_states=30, n_actions=4, horizon=7, n_goals=3
    )
    a, b = grsvi(mdp, 0.0), value_iteration(mdp)
    assert np.allclose(a.values, b.values, atol=1e-10)


@pytest.mark.parametrize("risk", ["std", "lpsd"])
@pytest.mark.parametrize("beta", [0.3, 1.0, 2.5])
def test_matches_loop_reference(beta, risk):
    mdp = random_mdp(np.random.default_rng(7), n_states=12, n_actions=3, horizon=5, n_goals=2)
    V, pi = _reference_grsvi(mdp, beta, risk)
    pol = grsvi(mdp, beta, risk=risk)
    assert np.allclose(pol.values, V, atol=1e-10)
    assert np.array_equal(pol.actions, pi)


def test_lpsd_penalty_is_smaller_than_std_for_same_next_values():
    from policies.safear import q_values

    mdp = random_mdp(np.random.default_rng(3), n_states=10, n_actions=3, horizon=2)
    v = np.random.default_rng(4).random(10) * 5
    qs, ql, q0 = q_values(mdp, v, 1.0), q_values(mdp, v, 1.0, "lpsd"), q_values(mdp, v, 0.0)
    fin = np.isfinite(q0)
    assert np.all(q0[fin] <= ql[fin] + 1e-12) and np.all(ql[fin] <= qs[fin] + 1e-12)


def test_insurance_policies_follow_paper_paths():
    mdp = insurance_mdp(8)
    assert grsvi(mdp, 0.0).actions[0, 0] == 0  # quit-drinking (50 %)
    assert grsvi(mdp, 0.5).actions[0, 0] == 1  # quit-smoking, then move (90 % each)
    assert grsvi(mdp, 1.0).actions[0, 0] == 3  # diet + exercise (sure, 3 steps)


def test_greedy_is_not_worse_than_bruteforce_bound_and_exact_at_beta0():
    """Eq. (1) brute force over Markov policies from s0: equal at beta=0, a lower bound otherwise."""
    mdp = insurance_mdp(5)
    for beta in (0.0, 0.5, 1.0):
        g = grsvi(mdp, beta)
        d = exact_distribution(mdp, g, 0)
        greedy_obj = d.mean + beta * np.sqrt(d.var)
        best = np.inf
        for combo in itertools.product((0, 1, 3), repeat=mdp.horizon):
            acts = g.actions.copy()
            acts[:, 0] = combo
            dd = exact_distribution(mdp, Policy(acts, g.values, beta), 0)
            best = min(best, dd.mean + beta * np.sqrt(dd.var))
        assert best <= greedy_obj + 1e-12
        if beta == 0.0:
            assert greedy_obj == pytest.approx(best, abs=1e-12)


def test_solver_input_checks():
    mdp = insurance_mdp()
    with pytest.raises(ValueError, match="beta"):
        grsvi(mdp, -0.1)
    with pytest.raises(ValueError, match="risk must be one of"):
        grsvi(mdp, 0.1, risk="cvar")
    with pytest.raises(TypeError, match="Generator"):
        grsevi(mdp, 0, 0.5, rng=np.random.RandomState(0))  # noqa: NPY002


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_grsevi_agrees_with_grsvi_from_start(beta):
    mdp = insurance_mdp(8)
    ep = grsevi(mdp, 0, beta, rng=np.random.default_rng(0), episodes=3000, decay=0.998)
    g = grsvi(mdp, beta)
    assert ep.actions[0, 0] == g.actions[0, 0]
    # Unvisited deep states keep their optimistic zero value, hence the tolerance.
    assert ep.values[0, 0] == pytest.approx(g.values[0, 0], abs=0.05)
    a = exact_distribution(mdp, ep, 0)
    b = exact_distribution(mdp, g, 0)
    assert a.mean == pytest.approx(b.mean, abs=0.02)


def test_grsevi_deterministic():
    mdp = random_mdp(np.random.default_rng(5), n_states=20, n_actions=3, horizon=6, n_goals=2)
    a = grsevi(mdp, 0, 0.5, rng=np.random.default_rng(9), episodes=300)
    b = grsevi(mdp, 0, 0.5, rng=np.random.default_rng(9), episodes=300)
    assert np.array_equal(a.actions, b.actions)
    assert np.array_equal(a.values, b.values, equal_nan=True)
