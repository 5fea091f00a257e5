"""The sp-knapsack DP counts bytes in units of the gcd of the sizes it adds: the same
instance with every byte figure multiplied by 2^30 (gigabyte budgets) gives the same
choice, and indexing by raw bytes (arrays of 2^30 * B entries) is never attempted."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from memsched.formulations import Graph, Operator, Tensor
from memsched.instances.gadgets import knapsack_gadget
from memsched.solvers.special import sp_knapsack

GIB = 1 << 30


def scaled(g: Graph, k: int) -> Graph:
    return Graph([Operator(o.name, o.inputs, o.outputs, o.cost, o.workspace * k) for o in g.ops],
                 [Tensor(t.name, t.size * k) for t in g.tensors], pinned=g.pinned, outputs=g.outputs,
                 order=g.order, name=g.name + "_scaled")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 15)), min_size=1, max_size=8), st.integers(0, 120))
def test_gigabyte_budgets_give_the_same_optimum(items, W):
    g, ans = knapsack_gadget([{"size": s, "cost": w} for s, w in items], W, "compute")
    small = sp_knapsack.solve(g, ans["budget"], cap=1)
    big = sp_knapsack.solve(scaled(g, GIB), ans["budget"] * GIB, cap=1)
    assert big.status == small.status == "optimal"
    assert big.compute == small.compute == ans["optimum"]
    assert big.peak == small.peak * GIB <= ans["budget"] * GIB
    # a budget that is not a multiple of the unit rounds down, never up
    off = sp_knapsack.solve(scaled(g, GIB), ans["budget"] * GIB + GIB - 1, cap=1)
    assert off.compute == ans["optimum"]
