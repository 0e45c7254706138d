"""Advice within the intervention budget (specs/world-extensions.md §5): fit_to_budget and
the built-in policies that end with it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from abm.config import BUDGET_HORIZON, ScenarioConfig
from abm.interfaces import LinearScorer, PolicyContext, Recommendation, RecourseObs
from abm.registry import make_policy
from abm.scenarios import resolve_scenario
from abm.validation import ConfigError
from policies.budget import budget_horizon, fit_paced, fit_to_budget, tick_allowance

# costs are multiples of 1/8, so every sum below is exact
X = np.array([[0.5, 0.5], [0.25, 0.5], [0.5, 0.5], [0.5, 0.25], [0.25, 0.25]])
X_CF = np.array([[0.625, 0.625], [0.375, 0.5], [0.5, 0.5], [0.5, 0.375], [0.75, 0.5]])
# |x_cf - x|_1 per row: 0.25, 0.125, 0 (row 2 is not advised), 0.125, 0.75


def hand_rec() -> Recommendation:
    return Recommendation(
        goal=np.array([0.6, 0.7, np.nan, 0.8, 0.9]),
        X_cf=X_CF.copy(),
        advised=np.array([True, True, False, True, True]),
        info={"risk": np.arange(5.0)},
        unreached=np.array([False, False, True, False, False]),
    )


def spent(rec: Recommendation, X: np.ndarray) -> float:
    """What the model charges: Σ over advised rows of |x_cf - x|_1."""
    return float(np.abs(rec.X_cf - X)[rec.advised_mask()].sum())


def test_known_answer_cheapest_first():
    rec = hand_rec()
    out = fit_to_budget(rec, X, 0.5)
    # advised costs sorted: row 1 (0.125), row 3 (0.125), row 0 (0.25), row 4 (0.75);
    # running sums 0.125, 0.25, 0.5 <= 0.5 keep rows 1, 3, 0; 1.25 withholds row 4
    np.testing.assert_array_equal(out.advised, [True, True, False, True, False])
    np.testing.assert_array_equal(out.withheld, [False, False, False, False, True])
    np.testing.assert_array_equal(out.goal, [0.6, 0.7, np.nan, 0.8, np.nan])
    np.testing.assert_array_equal(out.X_cf[4], X[4])
    np.testing.assert_array_equal(out.X_cf[:4], X_CF[:4])
    assert out.unreached is rec.unreached and out.info is rec.info
    assert spent(out, X) == 0.5
    # the input is left alone
    np.testing.assert_array_equal(rec.X_cf, X_CF)
    assert rec.withheld is None and rec.advised[4]


def test_ties_go_to_the_lower_row():
    out = fit_to_budget(hand_rec(), X, 0.125)  # rows 1 and 3 both cost 0.125
    np.testing.assert_array_equal(out.advised, [False, True, False, False, False])
    np.testing.assert_array_equal(out.withheld, [True, False, False, True, True])


def test_zero_budget_withholds_all_paid_advice_and_keeps_free_rows():
    rec = dataclasses.replace(hand_rec(), X_cf=np.where([[1], [0], [0], [0], [0]], X, X_CF))
    out = fit_to_budget(rec, X, 0.0)
    np.testing.assert_array_equal(out.advised, [True, False, False, False, False])
    assert spent(out, X) == 0.0


def test_infinite_budget_and_advice_that_fits_return_the_same_object():
    rec = hand_rec()
    assert fit_to_budget(rec, X, math.inf) is rec
    assert fit_to_budget(rec, X, 1.25) is rec  # everything fits exactly


@pytest.mark.parametrize("bad", [-0.1, math.nan, -math.inf])
def test_bad_budget_names_the_field(bad):
    with pytest.raises(ConfigError, match="budget_left = .* allowed: a number >= 0"):
        fit_to_budget(hand_rec(), X, bad)


@pytest.mark.parametrize("seed", range(20))
def test_never_exceeds_and_keeps_the_cheapest(seed):
    rng = np.random.default_rng(seed)
    n, z = 40, 5
    X = rng.uniform(0, 1, (n, z))
    X_cf = np.clip(X + rng.normal(0, 0.2, (n, z)) * (rng.uniform(size=(n, z)) < 0.5), 0, 1)
    X_cf[:3] = X[:3]  # advice that costs nothing
    X_cf[3:6] = X_cf[6]  # and equal costs
    X[3:6] = X[6]
    advised = rng.uniform(size=n) < 0.8
    X_cf[~advised] = X[~advised]
    rec = Recommendation(goal=rng.uniform(size=n), X_cf=X_cf, advised=advised)
    cost = np.abs(X_cf - X).sum(axis=1)
    budget = rng.uniform(0, cost[advised].sum())
    out = fit_to_budget(rec, X, budget)
    assert spent(out, X) <= budget
    kept, cut = out.advised, advised & ~out.advised
    assert cut.any() and not (kept & ~advised).any()
    assert cost[kept].max() <= cost[cut].min()  # cheapest first
    assert spent(out, X) + cost[cut].min() > budget  # and no cheaper row was left out
    assert (out.withheld == cut).all()
    assert fit_to_budget(rec, X, budget).advised.tolist() == kept.tolist()  # deterministic


# -- the policies -----------------------------------------------------------------------
def context(z=4) -> PolicyContext:
    return PolicyContext(
        decision_model=LinearScorer([0.8, 2.0, 0.5, 1.0], -2.2),
        lower=np.zeros(z),
        upper=np.ones(z),
        immutable=np.zeros(z, bool),
        difficulty=np.full(z, 0.5),
        k=4,
        m=12,
        validity=1,
        beta=0.05,
        ticks=10,
    )


def observation(ctx, budget_left=math.inf, k=4) -> RecourseObs:
    A = np.random.default_rng(7).uniform(0.25, 0.75, (12, ctx.n_features))
    scores = ctx.decision_model.score(A)
    order = np.argsort(-scores, kind="stable")
    accepted = np.zeros(len(A), bool)
    accepted[order[:k]] = True
    rej = np.flatnonzero(~accepted)
    ids = np.arange(len(A))
    return RecourseObs(
        tick=3,
        threshold=float(scores[order[k - 1]]),
        applicant_ids=ids,
        applicant_X=A,
        applicant_scores=scores,
        accepted=accepted,
        ids=ids[rej],
        X=A[rej],
        scores=scores[rej],
        n_applications=np.ones(rej.size, np.int64),
        budget_left=budget_left,
    )


@pytest.mark.parametrize("spec", ["threshold", "threshold-ustun", "safear:rollouts=20"])
def test_policies_respect_a_finite_budget(spec):
    ctx = context()
    policy = make_policy(spec)
    policy.prepare(ctx)
    free = observation(ctx)
    full = policy.recommend(free, np.random.default_rng(0))
    assert full.withheld is None or not full.withheld.any()
    total = spent(full, free.X)
    assert full.advised_mask().sum() >= 4 and total > 0
    for share in (0.0, 0.3, 0.6):
        obs = dataclasses.replace(free, budget_left=share * total)
        rec = policy.recommend(obs, np.random.default_rng(0))
        assert spent(rec, obs.X) <= obs.budget_left
        cut = full.advised_mask() & ~rec.advised_mask()
        assert cut.any() and (rec.withheld == cut).all()
        np.testing.assert_array_equal(rec.X_cf[cut], obs.X[cut])
        assert np.isnan(rec.goal[cut]).all()
        kept = rec.advised_mask()
        np.testing.assert_array_equal(rec.X_cf[kept], full.X_cf[kept])  # advice is cut, not bent
        np.testing.assert_array_equal(rec.goal[kept], full.goal[kept])


def test_no_advice_costs_nothing():
    ctx = context()
    policy = make_policy("none")
    policy.prepare(ctx)
    obs = observation(ctx, budget_left=0.0)
    assert spent(policy.recommend(obs, np.random.default_rng(0)), obs.X) == 0.0


@pytest.mark.parametrize(
    ("left", "tick", "horizon", "scope", "expected"),
    [
        (math.inf, 0, 100, "episode", math.inf),  # no budget
        (20.0, 0, 100, "episode", 0.2),  # an even share of what is left
        (18.0, 10, 100, "episode", 0.2),
        (20.0, 99, 100, "episode", 20.0),  # the horizon's last tick may spend it all
        (20.0, 150, 100, "episode", 20.0),  # ... and any tick past it
        (5.0, 3, 100, "tick", 5.0),  # a per-tick budget is spent whole
    ],
)
def test_tick_allowance_known_answers(left, tick, horizon, scope, expected):
    assert tick_allowance(left, tick, horizon, scope) == pytest.approx(expected, rel=1e-15)


def with_horizon(ctx: PolicyContext, horizon: int | None, **changes) -> PolicyContext:
    """``ctx`` whose scenario has ``budget_horizon`` = horizon (None: no scenario)."""
    extra = {} if horizon is None else {"scenario": ScenarioConfig(budget_horizon=horizon)}
    return dataclasses.replace(ctx, extra=extra, **changes)


def test_the_horizon_is_the_scenarios_and_defaults_to_the_standard_episode():
    assert budget_horizon(with_horizon(context(), 40)) == 40
    assert budget_horizon(with_horizon(context(), None)) == BUDGET_HORIZON == 100
    assert ScenarioConfig().budget_horizon == 100
    assert "budget_horizon" not in ScenarioConfig().to_dict()  # run ids as before
    assert ScenarioConfig(budget_horizon=40).to_dict()["budget_horizon"] == 40
    with pytest.raises(ConfigError, match="budget_horizon"):
        ScenarioConfig(budget_horizon=0)


def test_fit_paced_known_answer_whatever_the_runs_length():
    """Tick 3 of a 10-tick horizon: 1/7 of what is left, in a run of 10 ticks or of 100.
    With 0.5 / 0.5 · 7 = 3.5 left the allowance is 0.5: rows 1, 3, 0 (test_known_answer_...)."""
    rec = hand_rec()
    obs = RecourseObs(
        tick=3,
        threshold=0.5,
        applicant_ids=np.arange(5),
        applicant_X=X,
        applicant_scores=np.zeros(5),
        accepted=np.zeros(5, bool),
        ids=np.arange(5),
        X=X,
        scores=np.zeros(5),
        n_applications=np.ones(5, np.int64),
        budget_left=3.5,
    )
    outs = [fit_paced(rec, obs, with_horizon(context(), 10, ticks=ticks)) for ticks in (10, 100)]
    for out in outs:
        np.testing.assert_array_equal(out.advised, [True, True, False, True, False])
        assert spent(out, X) == 0.5
    # without a scenario: the standard 100 ticks, 3.5 / 97 < 0.125 pays for nothing
    assert spent(fit_paced(rec, obs, with_horizon(context(), None)), X) == 0.0


@pytest.mark.parametrize(
    "spec", ["threshold", "threshold-ustun", "safear:rollouts=20", "robust-l1", "roar-l1:kappa=0.3"]
)
def test_policies_pace_an_episode_budget(spec):
    """Tick 3 of a 10-tick budget horizon: an episode budget is spent at most 1/7 of what
    is left; a tick budget of the same size is spent in full (the cheapest advice first)."""
    totals = {}
    for scope in ("episode", "tick"):
        ctx = with_horizon(context(), 10, budget_scope=scope)
        policy = make_policy(spec)
        policy.prepare(ctx)
        free = observation(ctx)
        total = spent(policy.recommend(free, np.random.default_rng(0)), free.X)
        assert total > 0
        obs = dataclasses.replace(free, budget_left=0.9 * total)
        totals[scope] = spent(policy.recommend(obs, np.random.default_rng(0)), obs.X)
        allowance = 0.9 * total / 7 if scope == "episode" else 0.9 * total
        assert totals[scope] <= allowance
    assert totals["tick"] > 0 and totals["tick"] >= totals["episode"]


def run_ticks(config, policy: str, ticks: int):
    from abm import RecourseModel

    return (
        RecourseModel(config, policy, seed=0, ticks=ticks, agents=False, record_events=False)
        .run()
        .tick_table()
    )


@pytest.mark.parametrize(
    "policy", ["threshold", pytest.param("scarf-mlp", marks=pytest.mark.slow)]
)  # scarf-mlp trains its generator (~10 s)
def test_an_episode_budget_lasts_the_episode(policy):
    """fair-scarf (an episode budget of 20) with a 30-tick horizon: no tick spends more than
    an even share of what was left over the horizon's ticks left (scarf's shrunken advice
    included: moves clipped at the bounds made a plain rescale overspend about fourfold
    before 0.8.0), the budget is never overspent, and advice is still given at the end."""
    ticks = run_ticks(resolve_scenario("fair-scarf").replace(budget_horizon=30), policy, 30)
    before = np.concatenate([[20.0], ticks["budget_left"].to_numpy()[:-1]])
    share = before / np.maximum(30 - np.arange(30), 1)
    assert (ticks["budget_spent"].to_numpy() <= share + 1e-9).all()
    assert ticks["budget_spent"].sum() <= 20.0 + 1e-9
    assert (ticks["budget_spent"].to_numpy()[-5:] > 0).all()


def test_a_short_run_spends_per_tick_what_a_full_one_does():
    """Issue 48: fair-scarf's budget is paced over its 100-tick horizon whatever the run's
    length, so ticks 0-19 of a 20-tick and of a 100-tick run spend, withhold and measure the
    same (paced over the run, the 20-tick run had 5 times the allowance); the full run
    never spends more than the budget of 20."""
    short, full = (run_ticks("fair-scarf", "threshold", n) for n in (20, 100))
    for column in ("budget_spent", "budget_left", "n_withheld", "rr", "rf"):
        np.testing.assert_array_equal(short[column].to_numpy(), full[column].to_numpy()[:20])
    before = np.concatenate([[20.0], short["budget_left"].to_numpy()[:-1]])
    assert (short["budget_spent"].to_numpy() <= before / (100 - np.arange(20)) + 1e-9).all()
    assert short["budget_spent"].iloc[0] <= 0.2 < 20.0 / 20  # the run's pace would allow 1.0
    assert full["budget_spent"].sum() <= 20.0 + 1e-9 and full["budget_left"].iloc[-1] >= 0


def test_advice_equal_but_for_its_last_bits_is_ranked_by_row_not_by_those_bits():
    """Tied candidates are asked the same change; its cost differs between CPUs in the last
    bits only, so the rows of equal cost keep row order and a budget funds the same ones."""
    from policies.budget import cheapest_first

    cost = np.array([0.3, 0.1 + 1e-17, 0.2, 0.1, 0.1 + 2e-16, 0.05])
    assert cheapest_first(cost).tolist() == [5, 1, 3, 4, 2, 0]
    noisy = cost * (1 + np.array([0, -3e-16, 0, 4e-16, -2e-16, 0]))
    assert cheapest_first(noisy).tolist() == cheapest_first(cost).tolist()
    # a real difference (above a relative 1e-9) still ranks
    assert cheapest_first(np.array([0.1 + 1e-6, 0.1])).tolist() == [1, 0]
