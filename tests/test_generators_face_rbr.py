"""Known answers and invariants of the FACE and RBR recommenders (issue 37)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from abm.interfaces import PolicyContext
from policies.generators.face import Face


@dataclass
class _Linear:
    """A logistic scorer M(x) = sigmoid(w.x + b)."""

    weights: np.ndarray
    intercept: float
    is_linear: bool = True
    estimator: object = None

    def score(self, X):
        return 1.0 / (1.0 + np.exp(-(np.asarray(X, dtype=float) @ self.weights + self.intercept)))


def _ctx(X_train, model, lower, upper, immutable=None):
    z = X_train.shape[1]
    return PolicyContext(
        decision_model=model,
        lower=np.asarray(lower, dtype=float),
        upper=np.asarray(upper, dtype=float),
        immutable=np.zeros(z, bool) if immutable is None else np.asarray(immutable),
        difficulty=np.ones(z),
        k=1,
        m=1,
        validity=1,
        beta=0.5,
        ticks=1,
        X_train=np.asarray(X_train, dtype=float),
    )


def _detour_world():
    """A start at (0, 0), a dense arc over the top to (2, 0), a sparse gap straight across.

    Two accepted nodes: (2, 0) at the end of the dense arc and (1.2, -1.6) across the gap;
    only x0 > 1.5 or the far-off point is accepted by M = sigmoid(10 (x0 - 1.1)) and the
    gap node sits below the arc so that the straight route to it has no edge.
    """
    t = np.linspace(np.pi, 0.0, 21)
    arc = np.c_[1.0 + np.cos(t), np.sin(t)]  # (0,0) ... (1,1) ... (2,0), steps ~0.157
    far = np.array([[1.2, -1.6]])
    return np.vstack([arc[1:], far])


def test_face_detours_through_the_dense_arc():
    X_train = _detour_world()
    model = _Linear(np.array([10.0, 0.0]), -11.0)  # accepted: x0 > 1.1 (at goal 0.5)
    face = Face(mode="epsilon", radius=0.2, density=False)
    face.prepare(_ctx(X_train, model, [-5, -5], [5, 5]))
    x = np.array([[0.0, 0.0]])
    cf = face.recommend(x, np.array([0.5]), np.random.default_rng(0))
    # the far node (1.2, -1.6) is closer in a straight line but has no edge: unreachable
    # path; the first accepted node along the arc is the answer (x0 just above 1.1)
    arc_ok = X_train[:-1][model.score(X_train[:-1]) >= 0.5]
    first = arc_ok[np.argmin(np.abs(arc_ok[:, 0] - 1.1))]
    np.testing.assert_array_equal(cf[0], first)
    assert model.score(cf)[0] >= 0.5


def test_face_density_weight_prefers_the_dense_route():
    # two routes from A=(0,0) to accepted nodes: a direct long hop through empty space
    # to B=(3,0), and a detour through a dense cluster to C=(3,0.6); with the density
    # penalty the dense detour is cheaper, without it the direct hop wins
    dense = np.c_[np.linspace(0.2, 2.8, 27), np.full(27, 0.6)]
    X_train = np.vstack([[[0.0, 0.3]], dense, [[3.0, 0.6]], [[3.0, -1.0]], [[0.0, -1.0]]])
    model = _Linear(np.array([20.0, 0.0]), -58.0)  # accepted: x0 > 2.9
    x = np.array([[0.0, -1.0]])
    plain = Face(mode="epsilon", radius=3.1, density=False)
    plain.prepare(_ctx(X_train, model, [-5, -5], [5, 5]))
    dens = Face(mode="epsilon", radius=3.1, k=3, density=True)
    dens.prepare(_ctx(X_train, model, [-5, -5], [5, 5]))
    g = np.array([0.5])
    np.testing.assert_array_equal(plain.recommend(x, g, np.random.default_rng(0))[0], [3.0, -1.0])
    np.testing.assert_array_equal(dens.recommend(x, g, np.random.default_rng(0))[0], [3.0, 0.6])


def test_face_immutables_bounds_unreached_and_model_in_force():
    rng = np.random.default_rng(1)
    X_train = np.c_[rng.uniform(0, 1, (300, 2)), rng.integers(0, 2, 300)]
    X_train[X_train[:, 2] == 1, 0] *= 0.5  # group 1 never gets above x0 = 0.5
    model = _Linear(np.array([8.0, 0.0, 0.0]), -5.0)  # accepted: x0 > 0.625
    ctx = _ctx(X_train, model, [0, 0, 0], [0.9, 1, 1], immutable=[False, False, True])
    face = Face(k=10)
    face.prepare(ctx)
    X = np.array([[0.1, 0.5, 0.0], [0.1, 0.5, 1.0], [0.95, 0.5, 0.0]])
    g = np.array([0.5, 0.5, 0.5])
    cf = face.recommend(X, g, np.random.default_rng(0))
    assert cf[0, 2] == 0.0 and model.score(cf[:1])[0] >= 0.5 and (cf[0] <= [0.9, 1, 1]).all()
    # group 1's applicants never reach x0 > 0.5, but the advice keeps the row's group and
    # takes a node's mutable values (the path runs on the mutable features)
    assert cf[1, 2] == 1.0 and model.score(cf[1:2])[0] >= 0.5
    # unreached: a goal no node can meet
    assert np.isnan(face.recommend(X[:1], np.array([0.999]), np.random.default_rng(0))).all()
    np.testing.assert_array_equal(cf[2], X[2])  # already at goal: unchanged
    again = face.recommend(X, g, np.random.default_rng(99))
    np.testing.assert_array_equal(np.nan_to_num(cf, nan=-1), np.nan_to_num(again, nan=-1))
    # retraining: a stricter model in force moves the target further out
    face.ctx = ctx.with_model(_Linear(np.array([8.0, 0.0, 0.0]), -6.4))  # x0 > 0.8
    face.model_changed()
    cf2 = face.recommend(X[:1], g[:1], np.random.default_rng(0))
    assert cf2[0, 0] > 0.8 and face.ctx.decision_model.score(cf2)[0] >= 0.5


# ---- RBR ----


def _rbr_objective(rbr, x, S, pos):
    """F at x (z,) by direct computation: inner problems solved to convergence from zero."""
    from policies.generators.rbr import (
        optimistic_nll,
        pessimistic_ll,
        solve_optimistic,
        solve_pessimistic,
    )

    p = x.size
    c = np.linalg.norm(x - S, axis=1)
    v = solve_optimistic(c, rbr.sigma, rbr.epsilon_op, p, 5000)
    u = solve_pessimistic(c, rbr.sigma, rbr.epsilon_pe, p, 5000)
    op = optimistic_nll(c, v, rbr.sigma, p)
    pe = pessimistic_ll(c, u, rbr.sigma, rbr.epsilon_pe, p)
    return -op[~pos].sum() - pe[pos].sum()


def _rbr_world():
    rng = np.random.default_rng(3)
    X_train = rng.uniform(-2, 2, (400, 2))
    model = _Linear(np.array([3.0, 1.0]), -1.0)
    return X_train, model


def test_rbr_lowers_its_worst_case_objective_and_reaches_goal():
    from policies.generators.rbr import RBR

    X_train, model = _rbr_world()
    rbr = RBR(num_samples=200)
    rbr.prepare(_ctx(X_train, model, [-3, -3], [3, 3]))
    x = np.array([[-1.0, -1.0]])
    g = np.array([0.5])
    cf = rbr.recommend(x, g, np.random.default_rng(7))
    assert model.score(cf)[0] >= 0.5
    # the same samples the recommender drew (same seed) around its boundary point
    xb = rbr._boundary(x[0], 0.5)
    r = np.random.default_rng(7)
    V = r.standard_normal((1, 200, 2))
    V /= np.linalg.norm(V, axis=-1, keepdims=True)
    V *= (r.random((1, 200)) ** 0.5)[..., None] * rbr.perturb_radius
    S = (xb + V)[0]
    pos = model.score(S) >= 0.5
    f_rbr = _rbr_objective(rbr, cf[0], S, pos)
    f_b = _rbr_objective(rbr, xb, S, pos)  # the non-robust, closest boundary point
    assert f_rbr < f_b
    # the L1 budget of the paper: within ||x_b - x||_1 + delta_plus of x
    assert np.abs(cf[0] - x[0]).sum() <= np.abs(xb - x[0]).sum() + rbr.delta_plus + 1e-9
    # robustness: further inside the accepted side than the boundary point
    assert model.score(cf)[0] > model.score(xb[None])[0]


def test_rbr_determinism_immutables_unreached_and_model_in_force():
    from policies.generators.rbr import RBR

    rng = np.random.default_rng(4)
    X_train = np.c_[rng.uniform(-2, 2, (300, 2)), rng.integers(0, 2, 300)]
    X_train[X_train[:, 2] == 1, 0] = np.minimum(X_train[X_train[:, 2] == 1, 0], 0.0)
    model = _Linear(np.array([3.0, 0.0, 0.0]), -1.5)  # accepted: x0 > 0.5
    ctx = _ctx(X_train, model, [-2, -2, 0], [2, 2, 1], immutable=[False, False, True])
    rbr = RBR(num_samples=50, max_iter=200)
    rbr.prepare(ctx)
    X = np.array([[-1.0, 0.0, 0.0], [-1.0, 0.0, 1.0], [1.5, 0.0, 0.0]])
    g = np.full(3, 0.5)
    a = rbr.recommend(X, g, np.random.default_rng(1))
    b = rbr.recommend(X, g, np.random.default_rng(1))
    np.testing.assert_array_equal(np.nan_to_num(a, nan=-9), np.nan_to_num(b, nan=-9))
    assert a[0, 2] == 0.0 and model.score(a[:1])[0] >= 0.5
    assert (a[0] >= [-2, -2, 0]).all() and (a[0] <= [2, 2, 1]).all()
    assert a[1, 2] == 1.0 and model.score(a[1:2])[0] >= 0.5  # keeps the row's group
    assert np.isnan(rbr.recommend(X[:1], np.array([0.9999]), np.random.default_rng(1))).all()
    np.testing.assert_array_equal(a[2], X[2])
    strict = _Linear(np.array([3.0, 0.0, 0.0]), -4.5)  # accepted: x0 > 1.5
    rbr.ctx = ctx.with_model(strict)
    rbr.model_changed()
    c = rbr.recommend(X[:1], g[:1], np.random.default_rng(1))
    assert strict.score(c)[0] >= 0.5


def test_face_graph_is_symmetric_so_directed_search_is_the_undirected_one():
    # recommend() walks G as a directed graph (half the work): exact only because G holds
    # every link both ways with one weight
    from scipy.sparse.csgraph import dijkstra

    rng = np.random.default_rng(37)
    X_train = rng.random((400, 4))
    for mode, extra in (("knn", {"k": 6}), ("epsilon", {"radius": 0.25})):
        face = Face(mode=mode, **extra)
        face.prepare(_ctx(X_train, _Linear(np.ones(4), -2.0), np.zeros(4), np.ones(4)))
        assert (face.G != face.G.T).nnz == 0
        for _ in range(5):
            targets = np.sort(rng.choice(400, size=int(rng.integers(1, 60)), replace=False))
            runs = [
                dijkstra(
                    face.G, directed=d, indices=targets, min_only=True, return_predecessors=True
                )
                for d in (False, True)
            ]
            for a, b in zip(*runs, strict=True):
                np.testing.assert_array_equal(a, b)


def test_face_graphs_are_built_once_per_nodes_and_settings(monkeypatch):
    """Every FACE prepared on the same training rows with the same settings shares one graph
    (a study's episodes of a world); other rows, immutables or settings build their own;
    the advice is what a graph built anew gives."""
    from policies.generators import face as face_module

    monkeypatch.setattr(face_module, "_GRAPHS", {})
    rng = np.random.default_rng(41)
    X_train = rng.random((300, 3))
    model = _Linear(np.ones(3), -1.5)

    def prepared(X=X_train, immutable=None, **settings):
        f = Face(k=8, **settings)
        f.prepare(_ctx(X, model, np.zeros(3), np.ones(3), immutable))
        return f

    a, b = prepared(), prepared()
    assert a.G is b.G and a.nn is b.nn and len(face_module._GRAPHS) == 1
    others = [
        prepared(X_train + 1e-9),
        prepared(immutable=[False, False, True]),
        prepared(density=False),
        prepared(mode="epsilon", radius=0.3),
    ]
    assert all(o.G is not a.G for o in others) and len(face_module._GRAPHS) == 5
    X = rng.random((12, 3)) * 0.5
    advice = b.recommend(X, np.full(12, 0.6), np.random.default_rng(0))
    monkeypatch.setattr(face_module, "_GRAPHS", {})
    fresh = prepared()
    assert fresh.G is not a.G
    np.testing.assert_array_equal(fresh.recommend(X, np.full(12, 0.6), None), advice)
    assert np.isfinite(advice).all(axis=1).any()
