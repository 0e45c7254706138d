"""The lookahead goal selector (a privileged planning reference) and the model's simulator hook."""

import math

import numpy as np
import pandas as pd
import pytest

from abm import RecourseModel
from abm.interfaces import PolicyContext
from abm.metrics import reward_eq16
from abm.registry import REGISTRY, make_policy
from policies.composite import CompositePolicy
from policies.lookahead import Lookahead
from policies.recommenders import ExactLinear

TICKS = 20


class Recording(Lookahead):
    """Lookahead that remembers the goal it chose each (real) tick."""

    def __init__(self, **params):
        super().__init__(**params)
        self.chosen = {}
        self.plans = {}

    def select(self, obs, rng):
        goal = super().select(obs, rng)
        if self._rollout_margin is None:  # not one of our own rollouts
            self.chosen[obs.tick] = goal
            self.plans[obs.tick] = self.last_plan
        return goal


class Scripted:
    """Replays given goals tick by tick."""

    def __init__(self, goals):
        self.goals = goals

    def prepare(self, ctx):
        pass

    def select(self, obs, rng):
        return self.goals[obs.tick]


def _run(policy, scenario="paper", seed=3, ticks=TICKS, **kw):
    return RecourseModel(scenario, policy, seed=seed, ticks=ticks, agents=False, **kw).run()


def test_registered_and_labelled_privileged():
    assert "PRIVILEGED" in REGISTRY.describe("goal")["lookahead"]
    assert "PRIVILEGED" in REGISTRY.describe("policy")["lookahead"]
    policy = make_policy("lookahead:goals=5,alpha=2")
    assert isinstance(policy, CompositePolicy) and isinstance(policy.recommender, ExactLinear)
    assert policy.goal.n_goals == 5 and policy.goal.alpha == 2.0 and policy.goal.privileged
    composite = make_policy("lookahead:alpha=1,tau=1,rollouts=1+exact-linear:weights=true")
    assert isinstance(composite.goal, Lookahead) and composite.recommender.weights == "true"
    assert _run(composite, ticks=3).tick == 3


@pytest.mark.parametrize("scenario, horizon", [("paper", None), ("paper-T5", 2)])
def test_same_seed_same_results(scenario, horizon):
    spec = "lookahead:goals=4,rollouts=2" + (f",horizon={horizon}" if horizon else "")
    a, b = _run(spec, scenario), _run(spec, scenario)
    pd.testing.assert_frame_equal(a.tick_table(), b.tick_table())
    pd.testing.assert_frame_equal(a.candidate_table(), b.candidate_table())


def test_real_run_depends_on_the_chosen_goals_only():
    # replaying the chosen goals without any simulation gives the very same episode:
    # the rollouts never touch the model's own streams or state
    look = Recording(goals=5, max_margin=0.1, rollouts=2)
    planned = _run(CompositePolicy(look, ExactLinear()))
    assert len(set(look.chosen.values())) > 1  # it did move the goal
    replay = _run(CompositePolicy(Scripted(look.chosen), ExactLinear()))
    pd.testing.assert_frame_equal(planned.tick_table(), replay.tick_table())
    pd.testing.assert_frame_equal(planned.candidate_table(), replay.candidate_table())


def test_single_goal_grid_is_the_threshold_policy():
    pd.testing.assert_frame_equal(
        _run("lookahead:goals=1").tick_table(), _run("threshold").tick_table()
    )


class Probe:
    """Calls the simulator from inside recommend and checks that nothing real moved."""

    def __init__(self):
        self.inner = make_policy("threshold")
        self.model = None
        self.calls = 0

    def prepare(self, ctx):
        self.simulate = ctx.extra["simulator"]
        self.inner.prepare(ctx)

    def recommend(self, obs, rng):
        m = self.model
        if self.simulate.running:  # called by the rollout itself: just advise
            return self.inner.recommend(obs, rng)
        before = {n: g.bit_generator.state for n, g in m.streams._gens.items()}
        pop, tick, next_id = m.population, m.tick, m._next_id
        rows = self.simulate(2, key=0)
        again = self.simulate(2, key=0)
        other = [self.simulate(2, key=k) for k in (1, 2, 3)]
        table = pd.DataFrame(rows)
        assert table.equals(pd.DataFrame(again))  # equal keys replay equal draws
        assert not all(table.equals(pd.DataFrame(o)) for o in other)
        assert [r["tick"] for r in rows] == [obs.tick + 1, obs.tick + 2]
        assert {n: g.bit_generator.state for n, g in m.streams._gens.items()} == before
        assert m.population is pop and m.tick == tick and m._next_id == next_id
        self.calls += 1
        return self.inner.recommend(obs, rng)

    def observe(self, feedback):
        self.inner.observe(feedback)


def test_simulator_leaves_the_real_model_alone():
    probe = Probe()
    model = RecourseModel("paper-T5", probe, seed=1, ticks=12, agents=False)
    probe.model = model
    model.run()
    assert probe.calls == 12
    pd.testing.assert_frame_equal(
        model.tick_table(), _run("threshold", "paper-T5", seed=1, ticks=12).tick_table()
    )
    with pytest.raises(RuntimeError, match="between decide\\(\\) and respond\\(\\)"):
        probe.simulate(1)


def test_simulations_cannot_nest():
    class Nesting(Probe):
        def recommend(self, obs, rng):
            if self.simulate.running:  # inside the rollout: try to fork again
                self.simulate(1)
            with pytest.raises(RuntimeError, match="cannot be nested"):
                self.simulate(1)
            self.calls += 1
            return self.inner.recommend(obs, rng)

    probe = Nesting()
    model = RecourseModel("paper", probe, seed=0, ticks=2, agents=False)
    probe.model = model
    model.run()
    assert probe.calls == 2


def test_choice_is_the_argmax_of_the_simulated_reward():
    # recompute every candidate's reward by hand from the simulator and check the choice
    look = Recording(goals=6, max_margin=0.15, rollouts=3, alpha=2.0, tau=0.5, floor=0.01)
    policy = CompositePolicy(look, ExactLinear())
    checked = []

    class Check:
        def prepare(self, ctx):
            self.simulate = ctx.extra["simulator"]
            policy.prepare(ctx)

        def recommend(self, obs, rng):
            if look._rollout_margin is not None:  # a rollout's own tick
                return policy.recommend(obs, rng)
            rec = policy.recommend(obs, rng)
            if look.last_plan is None:  # the last tick: nothing left to score
                return rec
            goals, values, best = look.last_plan
            by_hand = []
            for margin in look.margins:
                look._rollout_margin = float(margin)
                rows = [row for r in range(3) for row in self.simulate(1, key=r)]
                look._rollout_margin = None
                terms = []
                for row in rows:
                    if row["rf"] != row["rf"]:  # nothing to measure: reward 0
                        terms.append(0.0)
                        continue
                    rr = row["rr"] if row["rr"] >= 0.01 else 0.01  # NaN fails: floor
                    rf = row["rf"] if row["rf"] >= 0.01 else 0.01
                    terms.append(2.0 * (1 + 0.9 * math.log(rr)) + 0.5 * (1 + 0.9 * math.log(rf)))
                by_hand.append(sum(terms) / len(terms))
            np.testing.assert_allclose(values, by_hand, rtol=1e-12)
            assert best == int(np.argmax(by_hand))
            assert rec.goal[0] == goals[best] == min(obs.threshold + look.margins[best], 1.0)
            checked.append(obs.tick)
            return rec

        def observe(self, feedback):
            policy.observe(feedback)

    RecourseModel("paper", Check(), seed=2, ticks=6, agents=False).run()
    assert checked == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("offers", [("__call__",), ("__call__", "many")])
def test_a_simulator_without_arrays_gives_the_same_plans(offers):
    """The lookahead reads RR and RF as arrays (Simulator.rates) where the simulator has
    them, else each rollout's rows (``many``, or one call a rollout): the same plans and
    the same run."""

    class Only:
        """The simulator with only the methods ``offers``."""

        def __init__(self, simulate):
            self._simulate = simulate
            if "many" in offers:
                self.many = simulate.many

        def __call__(self, *args, **kwargs):
            return self._simulate(*args, **kwargs)

    plans = {}
    for kind in ("arrays", "rows"):
        look = Lookahead(goals=4, rollouts=2)
        model = RecourseModel("paper-T5", CompositePolicy(look, ExactLinear()), seed=3, ticks=8)
        if kind == "rows":
            look._simulate = Only(look._simulate)
            assert not hasattr(look._simulate, "rates")
        seen = plans[kind] = []
        while model.running:
            model.step()
            if look.last_plan is not None:
                seen.append(look.last_plan)
        plans[kind].append(model.tick_table())
    *arrays, table_a = plans["arrays"]
    *rows, table_r = plans["rows"]
    assert len(arrays) == len(rows) > 3
    for (goals_a, values_a, best_a), (goals_r, values_r, best_r) in zip(arrays, rows, strict=True):
        np.testing.assert_array_equal(goals_a, goals_r)
        np.testing.assert_array_equal(values_a, values_r)
        assert best_a == best_r
    pd.testing.assert_frame_equal(table_a, table_r)


def test_objective_steers_the_margin():
    # RR only: aim higher than with RF only, and reach a higher reliability
    reliable, feasible = (
        Recording(alpha=1, tau=0, rollouts=2),
        Recording(alpha=0, tau=1, rollouts=2),
    )
    a = _run(CompositePolicy(reliable, ExactLinear()), ticks=30)
    b = _run(CompositePolicy(feasible, ExactLinear()), ticks=30)
    margins = {}
    for name, look, model in (("rr", reliable, a), ("rf", feasible, b)):
        th = model.tick_table().set_index("tick")["threshold"]
        margins[name] = np.mean([g - th[t] for t, g in look.chosen.items()])
    assert margins["rr"] > margins["rf"] + 0.02
    assert a.summary()["rr"] > b.summary()["rr"] and b.summary()["rf"] > a.summary()["rf"]


def test_horizon_defaults_to_validity_and_stops_at_the_episode_end():
    look = Recording(goals=3, rollouts=1)
    model = _run(CompositePolicy(look, ExactLinear()), "paper-T5", ticks=8)
    assert look.horizon == 5
    th = model.tick_table().set_index("tick")["threshold"]
    assert look.plans[7] is None and look.chosen[7] == th[7]  # nothing left to score
    assert look.plans[6] is not None  # one tick left: horizon cut to 1


def test_planner_scores_with_the_one_eq16_reward():
    # lookahead scores rollouts with abm.metrics.reward_eq16 (its floor and NaN rule)
    r = reward_eq16([1.0, 0.5, 0.0, np.nan], [1.0, 1.0, 1.0, 0.0], alpha=1, tau=2, floor=1e-3)
    floor_term = 1 + 0.9 * math.log(1e-3)
    np.testing.assert_allclose(
        r, [3.0, 1 + 0.9 * math.log(0.5) + 2, floor_term + 2, 3 * floor_term]
    )
    assert reward_eq16([np.nan], [np.nan], alpha=1, tau=1, floor=0.1)[0] == 0.0


@pytest.mark.parametrize(
    "spec, field, allowed",
    [
        ("lookahead:goals=0", "goals = 0", "an integer in [1, 1000]"),
        ("lookahead:goals=1001", "goals = 1001", "an integer in [1, 1000]"),
        ("lookahead:goals=2.5", "goals = '2.5'", "an integer"),
        ("lookahead:horizon=0", "horizon = 0", ">= 1"),
        ("lookahead:rollouts=0", "rollouts = 0", "an integer in [1, 1000]"),
        ("lookahead:alpha=-1", "alpha = -1.0", "a number in [0, inf)"),
        ("lookahead:tau=nan", "tau = ", "a number"),
        ("lookahead:alpha=0,tau=0", "alpha and tau", "not both 0"),
        ("lookahead:floor=0", "floor = 0.0", "a number in (0, 1)"),
        ("lookahead:floor=1", "floor = 1.0", "a number in (0, 1)"),
        ("lookahead:min_margin=-1", "min_margin = -1.0", "a number in (-1, 1)"),
        ("lookahead:min_margin=0.1,max_margin=0.05", "max_margin = 0.05", "[min_margin = 0.1, 1]"),
        ("lookahead:max_margin=1.5+exact-linear", "max_margin = 1.5", "a number in (-inf, 1]"),
        ("lookahead:goals=many", "goals = 'many'", "an integer"),
    ],
)
def test_bad_parameters_name_field_and_range(spec, field, allowed):
    with pytest.raises(ValueError) as err:
        make_policy(spec)
    message = str(err.value)
    assert "lookahead" in message and field in message and allowed in message
    assert "\n" not in message


def test_parameters_are_typed():
    look = make_policy("lookahead:goals=4,rollouts=2,alpha=2,horizon=3").goal
    assert (look.n_goals, look.rollouts, look.horizon_param) == (4, 2, 3)
    assert isinstance(look.n_goals, int) and isinstance(look.alpha, float)
    with pytest.raises(ValueError, match="goals = 0"):
        Lookahead(goals=0)  # built directly, the same bounds hold


def test_unknown_parameter_and_missing_simulator():
    with pytest.raises(ValueError, match="goal selector 'lookahead' has no parameter 'gamma'"):
        make_policy("lookahead:gamma=1+exact-linear")
    with pytest.raises(ValueError, match="policy 'lookahead' has no parameter 'gamma'"):
        make_policy("lookahead:gamma=1")
    ctx = PolicyContext(
        decision_model=None,
        lower=np.zeros(2),
        upper=np.ones(2),
        immutable=np.zeros(2, bool),
        difficulty=np.ones(2),
        k=1,
        m=1,
        validity=1,
        beta=0.05,
        ticks=10,
    )
    with pytest.raises(RuntimeError, match="simulator"):
        Lookahead().prepare(ctx)
