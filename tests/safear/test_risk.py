"""Risk measures against closed forms (truncated geometric retries) and Monte Carlo."""

import math

import numpy as np
import pandas as pd
import pytest

from lab.reproduce.safear import geometric_mdp, insurance_mdp
from policies.safear import (
    exact_distribution,
    exact_measures,
    group_disparity,
    grsvi,
    per_start_measures,
    risk_measures,
    rollout,
    var_cvar,
)


def geometric_closed_form(p, c, H, alpha):
    """X = c * min(G, H), G ~ Geometric(p) on {1, 2, ...}."""
    q = 1.0 - p
    rho = 1 - q**H
    mean = c * (1 - q**H) / p
    # E[min(G,H)^2] = sum_{k=1}^{H} (2k-1) P(min(G,H) >= k), P(... >= k) = q^(k-1).
    m2 = sum((2 * k - 1) * q ** (k - 1) for k in range(1, H + 1))
    var = c * c * (m2 - ((1 - q**H) / p) ** 2)
    k = H if q == 0 else min(H, max(1, math.ceil(math.log(1 - alpha) / math.log(q) - 1e-12)))
    if q == 0:
        k = 1
    # Memorylessness: min(G, H) given G > k is k + min(G', H - k).
    # Undefined when nothing lies above VaR (truncation at H, or sure success).
    cvar = c * (k + (1 - q ** (H - k)) / p) if (k < H and q > 0) else math.nan
    return rho, mean, var, c * k, cvar


@pytest.mark.parametrize(
    "p,c,H", [(0.5, 1.0, 8), (0.3, 2.5, 12), (0.9, 1.2, 4), (0.7, 0.8, 1), (1.0, 3.0, 5)]
)
@pytest.mark.parametrize("alpha", [0.8, 0.95])
def test_exact_matches_geometric_closed_form(p, c, H, alpha):
    mdp = geometric_mdp(p, c, H)
    pol = grsvi(mdp, 0.7)
    rho, mean, var, v, cv = geometric_closed_form(p, c, H, alpha)
    m = exact_measures(mdp, pol, 0, alphas=(alpha,))
    tag = f"{round(alpha * 100)}"
    assert m["rho"] == pytest.approx(rho, abs=1e-12)
    assert m["cost_mean"] == pytest.approx(mean, abs=1e-9)
    assert m["cost_var"] == pytest.approx(var, abs=1e-9)
    assert m[f"var{tag}"] == pytest.approx(v, abs=1e-9)
    if math.isnan(cv):
        assert math.isnan(m[f"cvar{tag}"])
    else:
        assert m[f"cvar{tag}"] == pytest.approx(cv, abs=1e-9)


def test_monte_carlo_converges_to_closed_form():
    p, c, H = 0.4, 1.5, 10
    mdp = geometric_mdp(p, c, H)
    m = risk_measures(mdp, grsvi(mdp, 0.0), 0, 200_000, rng=np.random.default_rng(1), alphas=(0.8,))
    rho, mean, var, v, cv = geometric_closed_form(p, c, H, 0.8)
    assert m["rho"] == pytest.approx(rho, abs=0.003)
    assert m["cost_mean"] == pytest.approx(mean, abs=0.02)
    assert m["cost_var"] == pytest.approx(var, rel=0.03)
    assert m["var80"] == pytest.approx(v)
    assert m["cvar80"] == pytest.approx(cv, abs=0.03)


def test_var_cvar_definitions():
    # F(x) >= alpha picks the smallest such value; CVaR uses the strict tail.
    assert var_cvar([1, 2, 3, 4], alpha=0.5) == (2.0, 3.5)
    assert var_cvar([1, 2, 3, 4], alpha=0.75) == (3.0, 4.0)
    v, cv = var_cvar([3.0] * 10, alpha=0.95)
    assert v == 3.0 and math.isnan(cv)
    v, cv = var_cvar([1.0, 5.0], [0.96, 0.04], alpha=0.95)
    assert v == 1.0 and cv == 5.0
    with pytest.raises(ValueError, match="alpha"):
        var_cvar([1.0], alpha=1.0)


def test_per_start_measures_match_var_cvar():
    rng = np.random.default_rng(0)
    mdp = insurance_mdp(8)
    ro = rollout(mdp, grsvi(mdp, 0.0), [0, 0, 2], 500, rng=rng)
    ps = per_start_measures(mdp, ro, (0.8, 0.95))
    for i in range(3):
        for a in (0.8, 0.95):
            v, cv = var_cvar(ro.cost[i], alpha=a)
            t = f"{round(a * 100)}"
            assert ps.loc[i, f"var{t}"] == v
            assert (math.isnan(cv) and math.isnan(ps.loc[i, f"cvar{t}"])) or ps.loc[
                i, f"cvar{t}"
            ] == pytest.approx(cv)
    assert np.allclose(ps["cost_var"], ro.cost.var(axis=1))


def test_rollouts_are_deterministic_and_seed_sensitive():
    mdp = insurance_mdp(8)
    pol = grsvi(mdp, 0.0)
    a = rollout(mdp, pol, [0, 2, 4], 300, rng=np.random.default_rng(42), record=True)
    b = rollout(mdp, pol, [0, 2, 4], 300, rng=np.random.default_rng(42), record=True)
    c = rollout(mdp, pol, [0, 2, 4], 300, rng=np.random.default_rng(43))
    assert np.array_equal(a.cost, b.cost) and np.array_equal(a.states, b.states)
    assert not np.array_equal(a.cost, c.cost)
    # Recorded traces are consistent with the accumulated cost (unit costs).
    steps = (a.actions >= 0).sum(axis=-1)
    assert np.array_equal(steps.astype(float), a.cost)


def test_monte_carlo_vs_exact_on_insurance():
    mdp = insurance_mdp(8)
    for beta in (0.0, 0.5):
        pol = grsvi(mdp, beta)
        d = exact_distribution(mdp, pol, 0)
        m = risk_measures(mdp, pol, 0, 50_000, rng=np.random.default_rng(3))
        assert m["cost_mean"] == pytest.approx(d.mean, abs=0.03)
        assert m["cost_var"] == pytest.approx(d.var, rel=0.06)


def test_group_disparity_mann_whitney():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "cost_mean": np.concatenate([rng.normal(2, 1, 300), rng.normal(3, 1, 300)]),
            "same": rng.normal(0, 1, 600),
        }
    )
    g = np.array(["F"] * 300 + ["M"] * 300)
    res = group_disparity(df, g).set_index("metric")
    assert res.loc["cost_mean", "p_value"] < 1e-6
    assert res.loc["same", "p_value"] > 1e-3
    assert res.loc["cost_mean", "mean_F"] < res.loc["cost_mean", "mean_M"]
    with pytest.raises(ValueError, match="groups must have shape"):
        group_disparity(df, g[:10])
