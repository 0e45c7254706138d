"""Bad MDP inputs are rejected with clear errors naming the field."""

import numpy as np
import pytest
from scipy import sparse

from lab.reproduce.safear import geometric_mdp
from policies.safear import Action, Feature, RecourseMDP, build_feature_mdp


def _tables():
    nxt = np.array([[[1, 0], [1, 1]]])
    prob = np.array([[[0.6, 0.4], [0.0, 0.0]]])
    cost = np.array([[1.0, 0.0]])
    goal = np.array([False, True])
    return nxt, prob, cost, goal


def test_valid_outcomes_build():
    m = RecourseMDP.from_outcomes(*_tables(), horizon=3)
    assert (m.n_states, m.n_actions, m.horizon) == (2, 1, 3)
    assert m.available.tolist() == [[True, False]]
    assert m.P.shape == (2, 2)


def test_probabilities_must_sum_to_one():
    nxt, prob, cost, goal = _tables()
    prob[0, 0] = (0.6, 0.3)
    with pytest.raises(ValueError, match="sum to"):
        RecourseMDP.from_outcomes(nxt, prob, cost, goal, 3)


def test_negative_probability():
    nxt, prob, cost, goal = _tables()
    prob[0, 0] = (1.2, -0.2)
    with pytest.raises(ValueError, match="prob"):
        RecourseMDP.from_outcomes(nxt, prob, cost, goal, 3)


def test_negative_cost():
    nxt, prob, cost, goal = _tables()
    cost[0, 0] = -1.0
    with pytest.raises(ValueError, match="cost"):
        RecourseMDP.from_outcomes(nxt, prob, cost, goal, 3)


@pytest.mark.parametrize("h", [0, -2, 1.5, True])
def test_horizon_must_be_positive_int(h):
    with pytest.raises(ValueError, match="horizon H must be an integer >= 1"):
        RecourseMDP.from_outcomes(*_tables(), horizon=h)


def test_shapes_checked():
    nxt, prob, cost, goal = _tables()
    with pytest.raises(ValueError, match=r"goal must have shape \(S,\)"):
        RecourseMDP.from_outcomes(nxt, prob, cost, np.array([False, True, True]), 3)
    with pytest.raises(ValueError, match=r"cost must have shape \(A, S\)"):
        RecourseMDP.from_outcomes(nxt, prob, np.ones((2, 2)), goal, 3)
    with pytest.raises(ValueError, match=r"next_state entries must lie in \[0, S\)"):
        RecourseMDP.from_outcomes(nxt + 5, prob, cost, goal, 3)
    with pytest.raises(ValueError, match=r"transitions\[0\] must have shape \(S, S\)"):
        RecourseMDP.from_csr([sparse.eye(3)], 1.0, goal, 3)
    with pytest.raises(ValueError, match=r"features must have shape \(S, D\)"):
        RecourseMDP.from_outcomes(nxt, prob, cost, goal, 3, features=np.zeros((3, 1)))


def test_non_goal_dead_end_rejected():
    nxt, prob, cost, goal = _tables()
    with pytest.raises(ValueError, match="no available action"):
        RecourseMDP.from_outcomes(nxt, prob * 0, cost, goal, 3)


def test_from_csr_matches_from_outcomes():
    P = sparse.csr_matrix(np.array([[0.4, 0.6], [0.0, 0.0]]))
    a = RecourseMDP.from_csr([P], np.array([[2.0, 0.0]]), [False, True], 4)
    b = geometric_mdp(0.6, 2.0, 4)
    assert np.allclose(a.P.toarray(), b.P.toarray())
    assert np.allclose(a.cost, b.cost)
    assert a.transitions(0).shape == (2, 2)


def test_feature_action_validation():
    feats = [
        Feature("age", ("y", "o"), "non_actionable"),
        Feature("edu", ("a", "b", "c")),
        Feature("sex", ("f", "m"), "immutable", ordinal=False),
    ]

    def goal(codes):
        return codes[:, 1] == 2

    with pytest.raises(ValueError, match="only actionable"):
        build_feature_mdp(feats, [Action("x", "sex", 1.0)], goal, 3)
    with pytest.raises(ValueError, match="cost must be finite and >= 0"):
        build_feature_mdp(feats, [Action("x", "edu", -1.0)], goal, 3)
    with pytest.raises(ValueError, match=r"success must be in \[0, 1\]"):
        build_feature_mdp(feats, [Action("x", "edu", 1.0, 1.5)], goal, 3)
    with pytest.raises(ValueError, match="unknown feature"):
        build_feature_mdp(feats, [Action("x", "nope", 1.0)], goal, 3)
    with pytest.raises(ValueError, match="kind must be one of"):
        Feature("z", ("a",), "weird")


def test_feature_mdp_side_effect_and_failure():
    feats = [
        Feature("age", ("y", "m", "o"), "non_actionable"),
        Feature("edu", ("a", "b", "c")),
        Feature("sex", ("f", "m"), "immutable", ordinal=False),
    ]
    acts = [Action("study", "edu", 2.0, {"b": 0.7, "c": 0.5}, side_effects=("age",))]
    m = build_feature_mdp(feats, acts, lambda c: c[:, 1] == 2, 4)
    assert m.n_states == 18
    s = int(m.state_index([[0, 0, 1]])[0])
    nxt, p, c = m.outcomes(s, 0)
    got = {tuple(m.features[t]): q for t, q in zip(nxt, p, strict=True)}
    assert got == pytest.approx({(0, 0, 1): 0.3, (1, 1, 1): 0.7})
    assert np.all(c == 2.0)
    # Age saturates at its top level instead of leaving the space.
    s = int(m.state_index([[2, 1, 0]])[0])
    nxt, p, _ = m.outcomes(s, 0)
    assert {tuple(m.features[t]) for t in nxt} == {(2, 1, 0), (2, 2, 0)}
    # Goal states have no actions.
    assert not m.available[:, m.goal].any()


def test_two_outcome_tables_build_the_general_paths_bits():
    """The two-outcome fast path of from_outcomes (the population planner's layout) gives
    the arrays the general sparse path gives: a third, zero-probability outcome sends the
    same table through the general path. Random tables with merged outcomes (both to one
    state), swapped columns and zero probabilities."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        A, S = int(rng.integers(1, 5)), int(rng.integers(2, 30))
        nxt = rng.integers(0, S, (A, S, 2))
        nxt[:, : S // 3, 1] = nxt[:, : S // 3, 0]  # both outcomes to one state
        p0 = rng.choice([0.25, 0.5, 1.0, rng.uniform()], size=(A, S))
        p0[:, 0] = 0.0  # unavailable rows: both probabilities 0 (state 0 is a goal)
        prob = np.stack([p0, np.where(p0 > 0, 1.0 - p0, 0.0)], axis=2)
        cost = rng.uniform(0.0, 2.0, (A, S, 2))
        goal = rng.random(S) < 0.3
        goal[0] = True
        fast = RecourseMDP.from_outcomes(nxt, prob, cost, goal, 3)
        pad = lambda a, v: np.concatenate([a, np.full(a.shape[:2] + (1,), v, a.dtype)], axis=2)  # noqa: E731
        general = RecourseMDP.from_outcomes(pad(nxt, 0), pad(prob, 0.0), pad(cost, 0.0), goal, 3)
        for name in ("indptr", "indices", "prob", "cost"):
            assert np.array_equal(getattr(fast, name), getattr(general, name)), name
