"""forced_segments in O(n + E): equal to the quadratic bitmask reference and to a brute
force over all topological orders (a split is forced iff every order has the same set of
operators before it), on random small DAGs; linear in practice on long graphs."""
from __future__ import annotations


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.instances.generators import chain, random_dag, random_layered
from memsched.solvers.ordering import exact as E
from strategies import random_graphs, single_output_graphs


def down_sets_by_size(g):
    """level[k]: every set of k operators closed under predecessors (a down-set). The first-k
    sets of the topological orders are exactly these: a prefix of an order is a down-set, and a
    down-set S followed by the rest (each part in a topological order of its own) is an order.
    Enumerated level by level, every set explicitly (at most 2^n of them, n <= 9)."""
    pred = g.op_pred()
    level = [{frozenset()}]
    for _ in range(g.n_ops):
        level.append({S | {v} for S in level[-1] for v in range(g.n_ops)
                      if v not in S and all(p in S for p in pred[v])})
    return level


def brute_segments(g):
    """Positions k (0 < k < n) where every topological order has the same first-k set."""
    level = down_sets_by_size(g)
    n = g.n_ops
    cuts = [k for k in range(1, n) if len(level[k]) == 1]
    bounds = [0] + cuts + [n]
    (at,) = zip(*(level[k] for k in bounds))  # the one down-set of each bound's size
    return [sorted(at[i + 1] - at[i]) for i in range(len(bounds) - 1)]


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
