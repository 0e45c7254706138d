"""Small hand-built recourse MDPs (SafeAR App. B and test fixtures)."""

from __future__ import annotations

import numpy as np

from policies.safear.mdp import RecourseMDP

INSURANCE_STATES = ("s0", "T1", "b1", "T2", "c1", "c2", "T3")
INSURANCE_ACTIONS = ("quit-drinking", "quit-smoking", "move-midwest", "healthy-diet", "exercise")
INSURANCE_FEATURES = ("smoking", "drinking", "cholesterol", "bmi", "region")


def insurance_mdp(horizon: int = 8, step_cost: float = 1.0) -> RecourseMDP:
    """Synthetic health-insurance example (SafeAR App. B, Fig. 4a).

    From ``s0`` three paths lead to a low premium: quit-drinking (one step,
    success 0.5) to ``T1``; quit-smoking then move-midwest (0.9 each) via
    ``b1`` to ``T2``; healthy-diet then two exercise steps (sure) via ``c1``,
    ``c2`` to ``T3``. A failed action leaves the state unchanged; every
    attempt costs ``step_cost``. Only the actions on these paths are
    available. Features (codes): smoking {yes, no}, drinking {yes, no},
    cholesterol {high, normal}, bmi {high, over, normal}, region {west, midwest}.
    """
    feats = np.array(
        [
            [0, 0, 0, 0, 0],  # s0
            [0, 1, 0, 0, 0],  # T1: quit drinking
            [1, 0, 0, 0, 0],  # b1: quit smoking
            [1, 0, 0, 0, 1],  # T2: ... and moved to the midwest
            [0, 0, 1, 0, 0],  # c1: cholesterol normal
            [0, 0, 1, 1, 0],  # c2: bmi over
            [0, 0, 1, 2, 0],  # T3: bmi normal
        ]
    )
    edges = {  # (state, action) -> (success state, success probability)
        (0, 0): (1, 0.5),
        (0, 1): (2, 0.9),
        (2, 2): (3, 0.9),
        (0, 3): (4, 1.0),
        (4, 4): (5, 1.0),
        (5, 4): (6, 1.0),
    }
    S, A = len(INSURANCE_STATES), len(INSURANCE_ACTIONS)
    nxt = np.zeros((A, S, 2), dtype=np.int64)
    prob = np.zeros((A, S, 2))
    for (s, a), (t, p) in edges.items():
        nxt[a, s] = (t, s)
        prob[a, s] = (p, 1.0 - p)
    goal = np.isin(np.arange(S), [1, 3, 6])
    return RecourseMDP.from_outcomes(
        nxt,
        prob,
        np.full((A, S), step_cost),
        goal,
        horizon,
        features=feats,
        action_names=INSURANCE_ACTIONS,
        feature_names=INSURANCE_FEATURES,
        ordinal=np.array([False, False, False, True, False]),
        meta={"state_names": INSURANCE_STATES},
    )


def geometric_mdp(p: float, cost: float = 1.0, horizon: int = 10) -> RecourseMDP:
    """One state, one action with success ``p`` into a goal: geometric retries truncated at ``horizon``."""
    nxt = np.array([[[1, 0], [1, 1]]])
    prob = np.array([[[p, 1 - p], [0.0, 0.0]]])
    return RecourseMDP.from_outcomes(
        nxt,
        prob,
        np.array([[cost, 0.0]]),
        np.array([False, True]),
        horizon,
        features=np.array([[0], [1]]),
    )


def random_mdp(
    rng: np.random.Generator,
    n_states: int = 4,
    n_actions: int = 2,
    horizon: int = 3,
    n_goals: int = 1,
    max_outcomes: int = 3,
) -> RecourseMDP:
    """Random small MDP for tests: the last ``n_goals`` states are goals."""
    S, A, K = n_states, n_actions, max_outcomes
    nxt = rng.integers(0, S, size=(A, S, K))
    prob = rng.random((A, S, K)) * (rng.random((A, S, K)) < 0.8)
    prob[..., 0] += 0.05
    prob /= prob.sum(axis=-1, keepdims=True)
    cost = rng.integers(1, 5, size=(A, S, K)).astype(float)
    goal = np.zeros(S, bool)
    goal[S - n_goals :] = True
    return RecourseMDP.from_outcomes(nxt, prob, cost, goal, horizon)
