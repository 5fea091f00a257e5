"""Series-parallel recognition: against random compositions (always SP, the tree
must reproduce the edge set) and against an independent recursive definition
on random small DAGs."""
from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from memsched.solvers.special.series_parallel import NotSeriesParallel, decompose, decompose_graph, is_series_parallel


def random_sp(rng: random.Random, n_ops: int) -> nx.MultiDiGraph:
    """Random TTSP multigraph by random series/parallel compositions; terminals 0 and 1."""
    G = nx.MultiDiGraph()
    G.add_edge(0, 1)
    nxt = 2
    for _ in range(n_ops):
        u, v, k = rng.choice(list(G.edges(keys=True)))
        if rng.random() < 0.5:  # series: subdivide
            G.remove_edge(u, v, k)
            G.add_edge(u, nxt)
            G.add_edge(nxt, v)
            nxt += 1
        else:  # parallel: add a path u -> w -> v (keeps a simple graph)
            G.add_edge(u, nxt)
            G.add_edge(nxt, v)
            nxt += 1
    return G


def _simple(G) -> nx.DiGraph:
    D = nx.DiGraph()
    D.add_nodes_from(G.nodes)
    D.add_edges_from((u, v) for u, v in G.edges())
    return D


def ref_is_sp(edges: list[tuple], s, t) -> bool:
    """Independent recursive definition: one edge s->t; or a parallel split (the
    edges fall into >= 2 groups connected through internal vertices); or a series
    split at a vertex every s-t path passes through."""
    if not edges:
        return False
    if len(edges) == 1:
        return edges[0] == (s, t)
    # parallel split: union-find over internal vertices
    groups: dict = {}
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x
    for k, (u, v) in enumerate(edges):
        ends = [x for x in (u, v) if x not in (s, t)]
        key = ("e", k) if not ends else ends[0]
        for x in ends[1:]:
            parent[find(x)] = find(key)
        groups[k] = key
    comp: dict = {}
    for k, key in groups.items():
        comp.setdefault(find(key), []).append(edges[k])
    if len(comp) >= 2:
        return all(ref_is_sp(es, s, t) for es in comp.values())
    D = nx.DiGraph(edges)
    if s not in D or t not in D or not nx.has_path(D, s, t):
        return False
    for w in D.nodes:
        if w in (s, t):
            continue
        H = D.copy()
        H.remove_node(w)
        if not nx.has_path(H, s, t):  # w is a cut vertex: no edge bypasses it
            left = nx.ancestors(D, w) | {w}
            e1 = [(u, v) for u, v in edges if u in left and v in left]
            e2 = [(u, v) for u, v in edges if not (u in left and v in left)]
            return ref_is_sp(e1, s, w) and ref_is_sp(e2, w, t)
    return False


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10 ** 9), st.integers(1, 25))
def test_random_compositions_are_recognized_with_their_edges(seed, n):
    G = _simple(random_sp(random.Random(seed), n))
    tree = decompose(G)
    assert tree.source == 0 and tree.sink == 1
    assert sorted(tree.leaves()) == sorted(G.edges())


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 10 ** 9), st.integers(3, 8), st.floats(0.2, 0.7))
def test_matches_the_recursive_definition_on_random_dags(seed, n, p):
    rng = random.Random(seed)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or rng.random() < p:
                G.add_edge(i, j)
    # single source 0 and sink n-1 (path edges guarantee it)
    assert ref_is_sp(list(G.edges()), 0, n - 1) == is_series_parallel(G)


def test_wheatstone_bridge_is_rejected_with_a_reason():
    G = nx.DiGraph([("s", "a"), ("s", "b"), ("a", "b"), ("a", "t"), ("b", "t")])
    with pytest.raises(NotSeriesParallel, match="stuck"):
        decompose(G)


def test_two_sources_named():
    G = nx.DiGraph([("a", "c"), ("b", "c")])
    with pytest.raises(NotSeriesParallel, match="2 sources"):
        decompose(G)


def test_gadget_graphs_are_series_parallel():
    from memsched.instances.gadgets import knapsack_gadget, three_partition_gadget

    g, _ = knapsack_gadget([{"size": 3, "cost": 1}, {"size": 2, "cost": 2}], 2)
    assert decompose_graph(g).kind in ("series", "parallel")
    g, _ = three_partition_gadget([5, 5, 6, 4, 5, 5], cap=2)
    tree = decompose_graph(g)
    assert len(tree.leaves()) == g.op_digraph().number_of_edges()
