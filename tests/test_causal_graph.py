"""The causal graph (world extensions §4): validation, SEM generation, propagation.

Known answers are the spec's §8.5 chain; generation is checked by regressing each
feature on its parents; propagation against a plain per-row reference and invariants.
"""

from __future__ import annotations

import dataclasses
import pickle

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abm.causal import CausalGraph
from abm.validation import ConfigError

CHAIN = ((0, 1, 0.5), (1, 2, -0.4))  # §8.5


def chain() -> CausalGraph:
    graph = CausalGraph.from_edges(CHAIN, 3)
    assert graph is not None
    return graph


# -- known answers (§8.5) ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("x", "x_new", "intervened", "expected"),
    [
        # x_0 -> 0.5: Δ_0 = 0.2, x_1 = 0.5 + 0.5·0.2, x_2 = 0.5 - 0.4·0.1
        ((0.3, 0.5, 0.5), (0.5, 0.5, 0.5), (1, 0, 0), (0.5, 0.6, 0.46)),
        # x_1 = 0.95 + 0.1 clips to 1, so only 0.05 reaches x_2
        ((0.3, 0.95, 0.5), (0.5, 0.95, 0.5), (1, 0, 0), (0.5, 1.0, 0.48)),
        # x_1 is intervened too: fixed at 0.7, x_2 sees Δ_1 = 0.2 alone
        ((0.3, 0.5, 0.5), (0.5, 0.7, 0.5), (1, 1, 0), (0.5, 0.7, 0.42)),
    ],
)
def test_propagation_known_answers(x, x_new, intervened, expected):
    out = chain().propagate(np.array([x]), np.array([x_new]), np.array([intervened], bool))
    np.testing.assert_allclose(out, [expected], rtol=0, atol=1e-12)


def test_propagation_known_answers_together_row_by_row():
    # the three rows at once give what each gives alone
    X = np.array([[0.3, 0.5, 0.5], [0.3, 0.95, 0.5], [0.3, 0.5, 0.5]])
    X_new = np.array([[0.5, 0.5, 0.5], [0.5, 0.95, 0.5], [0.5, 0.7, 0.5]])
    fixed = np.array([[1, 0, 0], [1, 0, 0], [1, 1, 0]], bool)
    out = chain().propagate(X, X_new, fixed)
    expected = [[0.5, 0.6, 0.46], [0.5, 1.0, 0.48], [0.5, 0.7, 0.42]]
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)


def test_propagation_sums_paths_of_a_diamond():
    # 0 -> 1 -> 3 and 0 -> 2 -> 3: x_3 moves by Δ_0 (w01 w13 + w02 w23), no clipping
    graph = CausalGraph.from_edges(((0, 1, 0.5), (0, 2, -0.3), (1, 3, 0.4), (2, 3, 0.8)), 4)
    X = np.full((1, 4), 0.5)
    X_new = X.copy()
    X_new[0, 0] = 0.6
    fixed = np.array([[True, False, False, False]])
    out = graph.propagate(X, X_new, fixed)
    expected = [0.6, 0.55, 0.47, 0.5 + 0.1 * (0.5 * 0.4 - 0.3 * 0.8)]
    np.testing.assert_allclose(out, [expected], rtol=0, atol=1e-12)


def test_intervening_a_sink_moves_nothing_else():
    X = np.array([[0.3, 0.5, 0.5]])
    X_new = np.array([[0.3, 0.5, 0.9]])
    out = chain().propagate(X, X_new, np.array([[False, False, True]]))
    assert out.tobytes() == X_new.tobytes()


def test_propagation_leaves_its_inputs_alone():
    X = np.array([[0.3, 0.5, 0.5]])
    X_new = np.array([[0.5, 0.5, 0.5]])
    fixed = np.array([[True, False, False]])
    copies = X.copy(), X_new.copy(), fixed.copy()
    out = chain().propagate(X, X_new, fixed)
    assert out is not X_new
    for before, after in zip(copies, (X, X_new, fixed), strict=True):
        np.testing.assert_array_equal(before, after)


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("edges", "kwargs", "said"),
    [
        (((0, 3, 0.5),), {}, "integers i, j in [0, 2]"),
        (((-1, 0, 0.5),), {}, "integers i, j in [0, 2]"),
        (((0.0, 1, 0.5),), {}, "integers i, j in [0, 2]"),
        (((True, 1, 0.5),), {}, "integers i, j in [0, 2]"),
        (((1, 1, 0.5),), {}, "self-loop"),
        (((0, 1, 0.5), (1, 2, 0.1), (0, 1, -0.2)), {}, "repeats the pair (0, 1)"),
        (((0, 1, float("nan")),), {}, "finite"),
        (((0, 1, float("inf")),), {}, "finite"),
        (((0, 1, "0.5"),), {}, "finite"),
        (((0, 1),), {}, "a triple (i, j, w)"),
        ((0, 1, 0.5), {}, "a triple (i, j, w)"),
        (5, {}, "a list of edges"),
        (((0, 1, 0.5),), {"immutable": (1,)}, "immutable features have no parent"),
        (((0, 1, 0.5),), {"noncausal": (0,)}, "non-causal features have no edge"),
        (((0, 1, 0.5),), {"noncausal": (1,)}, "non-causal features have no edge"),
        (((0, 1, 0.5), (1, 2, 0.5), (2, 0, 0.5)), {}, "has the cycle 0 -> 1 -> 2 -> 0"),
        (((1, 2, 0.5), (2, 0, 0.5), (0, 1, 0.5)), {}, "has the cycle 0 -> 1 -> 2 -> 0"),
        (((0, 1, 0.5), (1, 0, 0.5)), {}, "has the cycle 0 -> 1 -> 0"),
    ],
)
def test_bad_graphs_are_one_line_errors_naming_the_field(edges, kwargs, said):
    with pytest.raises(ConfigError) as caught:
        CausalGraph.from_edges(edges, 3, **kwargs)
    text = str(caught.value)
    assert text.startswith("causal_graph")
    assert said in text
    assert "\n" not in text


def test_immutable_features_may_be_parents():
    graph = CausalGraph.from_edges(((1, 0, 0.5),), 3, immutable=(1,), noncausal=(2,))
    assert graph is not None and graph.parents == ((1,), (), ())


def test_no_edges_is_no_graph():
    assert CausalGraph.from_edges((), 3) is None
    assert CausalGraph.from_edges([], 5, immutable=(0,), noncausal=(1,)) is None


def test_toml_lists_and_numpy_scalars_are_accepted():
    graph = CausalGraph.from_edges([[np.int64(0), 1, np.float64(0.5)], [1, 2, -0.4]], 3)
    assert graph == chain()
    assert graph.edges == CHAIN
    assert all(type(i) is int and type(j) is int and type(w) is float for i, j, w in graph.edges)


# -- structure -----------------------------------------------------------------------------
def test_fields_of_the_chain():
    graph = chain()
    np.testing.assert_array_equal(graph.order, [0, 1, 2])
    assert graph.order.dtype == np.int64
    expected_W = np.zeros((3, 3))
    expected_W[0, 1], expected_W[1, 2] = 0.5, -0.4
    np.testing.assert_array_equal(graph.W, expected_W)
    assert graph.W.dtype == np.float64
    assert graph.parents == ((), (0,), (1,))


def test_order_is_lexicographic_topological():
    # roots 1 and 2 before 0, the smaller first; 3 is isolated and comes as early as allowed
    graph = CausalGraph.from_edges(((2, 0, 0.1), (1, 0, 0.2), (4, 2, 0.3)), 5)
    np.testing.assert_array_equal(graph.order, [1, 3, 4, 2, 0])
    assert graph.parents == ((1, 2), (), (4,), (), ())


def test_graph_is_frozen_and_its_arrays_read_only():
    graph = chain()
    with pytest.raises(ValueError):
        graph.W[0, 1] = 1.0
    with pytest.raises(ValueError):
        graph.order[0] = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        graph.W = np.zeros((3, 3))


def test_equality_hash_and_pickle_follow_the_edges():
    graph = chain()
    shuffled = CausalGraph.from_edges(CHAIN[::-1], 3)
    assert graph == shuffled and hash(graph) == hash(shuffled)
    assert graph != CausalGraph.from_edges(((0, 1, 0.5), (1, 2, -0.3)), 3)
    assert graph != CausalGraph.from_edges(CHAIN, 4)
    copy = pickle.loads(pickle.dumps(graph))
    assert copy == graph
    assert not copy.W.flags.writeable
    np.testing.assert_array_equal(copy.order, graph.order)


def test_to_networkx_has_every_edge_with_its_weight():
    graph = CausalGraph.from_edges(((2, 0, 0.1), (1, 0, -0.2)), 4)
    g = graph.to_networkx()
    assert isinstance(g, nx.DiGraph)
    assert sorted(g.nodes) == [0, 1, 2, 3]
    assert sorted(g.edges(data="weight")) == [(1, 0, -0.2), (2, 0, 0.1)]
    g.add_edge(0, 3)  # a copy: the graph itself does not change
    assert graph.to_networkx().number_of_edges() == 2


def test_shapes_are_checked():
    graph = chain()
    with pytest.raises(ValueError, match="shape"):
        graph.generate(np.zeros((4, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        graph.generate(np.zeros((4, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        graph.propagate(np.zeros((4, 3)), np.zeros((3, 3)), np.zeros((4, 3), bool))


# -- generation ----------------------------------------------------------------------------
def test_generation_known_answer():
    # the §8.5 chain read as a SEM: e = (0.7, 0.5, 0.5) around ν = 0.5
    nu = np.full(3, 0.5)
    E = np.array([[0.7, 0.5, 0.5], [0.3, 0.95, 0.5], [1.3, 0.5, 0.5]])
    X = chain().generate(E, nu)
    expected = [
        [0.7, 0.6, 0.46],
        [0.3, 0.85, 0.5 - 0.4 * 0.35],
        [1.0, 0.75, 0.4],  # the root clips to 1 before its child reads it
    ]
    np.testing.assert_allclose(X, expected, rtol=0, atol=1e-12)


def test_generated_roots_are_clipped_base_values_and_rows_stay_in_unit_box():
    graph = CausalGraph.from_edges(((0, 2, 1.5), (1, 2, -1.5), (2, 3, 2.0)), 5)
    E = np.random.default_rng(3).normal(0.5, 0.6, size=(500, 5))
    X = graph.generate(E, np.full(5, 0.5))
    for root in (0, 1, 4):
        np.testing.assert_array_equal(X[:, root], np.clip(E[:, root], 0.0, 1.0))
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert (X[:, 2] == 0.0).any() and (X[:, 2] == 1.0).any()  # clipping was exercised
    assert graph.generate(E, np.full(5, 0.5)).tobytes() == X.tobytes()


def test_generated_slopes_match_the_weights():
    # 0 -> 1 -> 2 -> 3 and 0 -> 3; small noise around ν keeps every value off the bounds
    edges = ((0, 1, 0.6), (1, 2, -0.4), (0, 3, 0.3), (2, 3, 0.5))
    graph = CausalGraph.from_edges(edges, 4)
    nu = np.array([0.5, 0.45, 0.55, 0.5])
    E = nu + 0.05 * np.random.default_rng(20240518).standard_normal((20_000, 4))
    X = graph.generate(E, nu)
    assert 0.0 < X.min() and X.max() < 1.0
    for j in (1, 2, 3):
        parents = list(graph.parents[j])
        A = np.column_stack([np.ones(len(X)), X[:, parents] - nu[parents]])
        coef, *_ = np.linalg.lstsq(A, X[:, j], rcond=None)
        resid = X[:, j] - A @ coef
        se = np.sqrt(np.diag(np.linalg.inv(A.T @ A)) * resid.var(ddof=A.shape[1]))
        assert se[1:].max() < 0.01  # the test can tell 0.6 from 0.5
        truth = np.array([nu[j], *(graph.W[i, j] for i in parents)])
        # within 4 standard errors and within 0.03 of the weight
        assert np.all(np.abs(coef - truth) <= 4 * se), (j, coef, truth, se)
        assert np.all(np.abs(coef[1:] - truth[1:]) <= 0.03)


# -- propagation invariants (hypothesis) ---------------------------------------------------
@st.composite
def graphs_and_rows(draw):
    """A random DAG (edges oriented along a random permutation) and rows to implement."""
    z = draw(st.integers(2, 6))
    rank = draw(st.permutations(range(z)))
    pairs = [(rank[a], rank[b]) for a in range(z) for b in range(a + 1, z)]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, unique=True))
    weight = st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False)
    edges = tuple((i, j, draw(weight)) for i, j in chosen)
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X_old = rng.random((n, z))
    X_old[rng.random((n, z)) < 0.1] = 1.0  # some features start on a bound
    X_old[rng.random((n, z)) < 0.1] = 0.0
    fixed = rng.random((n, z)) < draw(st.sampled_from([0.1, 0.3, 0.7]))
    fixed[0] = False  # at least one row without intervention
    X_new = np.where(fixed, rng.random((n, z)), X_old)
    return CausalGraph.from_edges(edges, z), X_old, X_new, fixed


def reference_propagate(graph, X_old, X_new, fixed):
    """Plain per-row, per-feature version of §4 in Python floats."""
    out = X_new.copy()
    z = graph.n_features
    for r in range(len(out)):
        delta = [X_new[r, i] - X_old[r, i] if fixed[r, i] else 0.0 for i in range(z)]
        for j in graph.order:
            if fixed[r, j]:
                continue
            shift = sum(graph.W[i, j] * delta[i] for i in range(z) if graph.W[i, j] != 0)
            before = out[r, j]
            out[r, j] = min(1.0, max(0.0, before + shift))
            delta[j] = out[r, j] - before
    return out


@settings(max_examples=60, deadline=None)
@given(graphs_and_rows())
def test_propagation_invariants(case):
    graph, X_old, X_new, fixed = case
    out = graph.propagate(X_old, X_new, fixed)
    assert out.shape == X_new.shape and out.dtype == np.float64
    assert out.min() >= 0.0 and out.max() <= 1.0
    assert out[fixed].tobytes() == X_new[fixed].tobytes()
    idle = ~fixed.any(axis=1)
    assert idle[0]
    assert out[idle].tobytes() == X_new[idle].tobytes()
    assert graph.propagate(X_old, X_new, fixed).tobytes() == out.tobytes()
    np.testing.assert_allclose(
        out, reference_propagate(graph, X_old, X_new, fixed), rtol=0, atol=1e-12
    )
    # a feature downstream of no intervention in its row keeps its bits
    g = graph.to_networkx()
    for r in range(len(out)):
        reached = set()
        for i in np.flatnonzero(fixed[r]):
            reached |= nx.descendants(g, int(i))
        for j in set(range(graph.n_features)) - reached - set(np.flatnonzero(fixed[r])):
            assert out[r, j].tobytes() == X_new[r, j].tobytes()


@settings(max_examples=40, deadline=None)
@given(graphs_and_rows())
def test_topological_order_respects_every_edge(case):
    graph = case[0]
    z = graph.n_features
    assert sorted(graph.order.tolist()) == list(range(z))
    position = {int(v): k for k, v in enumerate(graph.order)}
    assert all(position[i] < position[j] for i, j, _ in graph.edges)
    assert list(graph.order) == list(nx.lexicographical_topological_sort(graph.to_networkx()))
    for j in range(z):
        assert list(graph.parents[j]) == sorted(i for i, jj, _ in graph.edges if jj == j)
