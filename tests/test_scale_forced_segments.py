"""forced_segments in O(n + E): equal to the quadratic bitmask reference and to a brute
force over all topological orders (a split is forced iff every order has the same set of
operators before it), on random small DAGs; linear in practice on long graphs."""
from __future__ import annotations

from itertools import permutations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.instances.generators import chain, random_dag, random_layered
from memsched.solvers.ordering import exact as E
from strategies import random_graphs, single_output_graphs


def all_topological_orders(g):
    pred = g.op_pred()
    n = g.n_ops
    out = []

    def rec(prefix, placed):
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for v in range(n):
            if not placed[v] and all(placed[p] for p in pred[v]):
                placed[v] = True
                prefix.append(v)
                rec(prefix, placed)
                prefix.pop()
                placed[v] = False

    rec([], [False] * n)
    return out


def brute_segments(g):
    """Positions k (0 < k < n) where every topological order has the same first-k set."""
    orders = all_topological_orders(g)
    n = g.n_ops
    cuts = [k for k in range(1, n) if len({frozenset(o[:k]) for o in orders}) == 1]
    o = orders[0]
    bounds = [0] + cuts + [n]
    return [sorted(o[a:b]) for a, b in zip(bounds, bounds[1:])]


def canon(segs):
    return [sorted(s) for s in segs]


graphs = st.one_of(random_graphs(max_ops=9), single_output_graphs(max_ops=9))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_linear_equals_brute_force(g):
    assert canon(E.forced_segments(g)) == brute_segments(g)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=30, min_ops=10), single_output_graphs(max_ops=30, min_ops=10)))
def test_linear_equals_quadratic_reference(g):
    assert E.forced_segments(g) == E.forced_segments_quadratic(g)


def test_structured_cases():
    assert len(E.forced_segments(chain(50))) == 50  # every split of a chain is forced
    for seed in range(5):
        g = random_dag(40, seed, edge_prob=0.08)
        assert E.forced_segments(g) == E.forced_segments_quadratic(g)
        g = random_layered(300, seed, edge_density=0.01)
        assert E.forced_segments(g) == E.forced_segments_quadratic(g)


def test_long_graph_runs_without_bitmasks(monkeypatch):
    """The linear version never builds ancestor bitmasks (O(n^2 / 8) bytes)."""
    g = random_layered(5000, 1, edge_density=0.002)

    def boom(*a, **k):
        raise AssertionError("reach_masks called")

    monkeypatch.setattr(type(g), "reach_masks", boom)
    segs = E.forced_segments(g)
    assert sorted(v for s in segs for v in s) == list(range(g.n_ops))
