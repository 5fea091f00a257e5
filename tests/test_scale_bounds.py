"""Bounds without ancestor bitmasks (the path taken above REACH_MASK_MAX_OPS operators) give
the same values as with them; budgets stop bounds early with a valid value."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.instances.generators import random_layered
from memsched.solvers.ordering import bounds as B
from strategies import random_graphs, single_output_graphs
from test_bounds_properties import brute

graphs = st.one_of(random_graphs(max_ops=9), single_output_graphs(max_ops=9))


def fresh(g):
    for attr in ("_memsched_reach", "_memsched_trap"):
        if hasattr(g, attr):
            delattr(g, attr)
    return g


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs, st.data())
def test_search_path_equals_bitmask_path(g, data):
    with_masks = fresh(g)
    ts = B.trap_solver(with_masks)
    assert ts.reach is not None
    traps = [ts.trap(v) for v in range(g.n_ops)]
    rev = [B.reverse_trap_value(g, v) for v in range(g.n_ops)]
    pairs = []
    if g.n_ops >= 2:
        u, v = data.draw(st.lists(st.integers(0, g.n_ops - 1), min_size=2, max_size=2, unique=True))
        pairs = [ts.trap(v, extra_in=1 << u), ts.trap(u, extra_out=1 << v), ts.closure_in(1 << u),
                 ts.closure_out(1 << v)]
    pb = B.pair_bound(g, time_budget=10.0)
    mp = pytest.MonkeyPatch()
    mp.setattr(B, "REACH_MASK_MAX_OPS", 0)
    try:
        fresh(g)
        ts2 = B.trap_solver(g)
        assert ts2.reach is None
        assert [ts2.trap(v) for v in range(g.n_ops)] == traps
        assert [B.reverse_trap_value(g, v) for v in range(g.n_ops)] == rev
        if pairs:
            assert [ts2.trap(v, extra_in=1 << u), ts2.trap(u, extra_out=1 << v), ts2.closure_in(1 << u),
                    ts2.closure_out(1 << v)] == pairs
        assert B.pair_bound(g, time_budget=10.0) == pb
    finally:
        mp.undo()
        fresh(g)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_budgeted_bounds_stay_below_optimum(g):
    opt = brute(g)[0]
    info: dict = {}
    assert B.trap_bound(g, time_budget=0.0, info=info) <= opt
    assert B.reverse_bound(g, time_budget=0.0) <= opt
    assert B.pair_bound(g, time_budget=0.0) <= opt
    assert B.trap_bound(g, time_budget=0.0) <= B.trap_bound(g)


def test_zero_budget_stops_at_once_and_says_so():
    g = random_layered(300, 0, edge_density=0.01)
    info: dict = {}
    lb0 = B.trap_bound(g, time_budget=0.0, info=info)
    assert info["complete"] is False and info["queries"] == 0
    assert lb0 == B.initial_bound(g)
    full: dict = {}
    lb = B.trap_bound(g, info=full)
    assert full["complete"] is True and full["queries"] > 0 and lb >= lb0
    pinfo: dict = {}
    B.pair_bound(g, base=lb, time_budget=0.0, info=pinfo)
    assert pinfo["complete"] is False and pinfo["pairs"] == 0
    rep = B.bound_report(g, pair_budget=0.0, trap_budget=0.0)
    assert "budget" in rep["bounds"]["trap"]["note"]
    assert rep["lower_bound"] >= B.per_op_bound(g)


def test_precedence_skipped_with_reason_on_large_graphs(monkeypatch):
    g = random_layered(60, 1, edge_density=0.05)
    monkeypatch.setattr(B, "REACH_MASK_MAX_OPS", 10)
    info: dict = {}
    assert B.precedence_bound(g, 5, 10**9, time_budget=5.0, info=info) == 5
    assert "skipped" in info["skipped"]
    assert B.reachability(fresh(g)) is None
    assert B.precedence_refutes(g, 0) in (True, None)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=12), single_output_graphs(max_ops=12)), st.data())
def test_fast_step_memory_equals_the_evaluator(g, data):
    from strategies import topological_orders

    order = data.draw(topological_orders(g))
    assert B.order_step_memory(g, order) == B.step_memory(g, order)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=8), single_output_graphs(max_ops=8)))
def test_exact_driver_without_bitmasks_is_still_exact(g):
    """solve_exact on the no-bitmask path (as above 20,000 operators): same optimum."""
    from memsched.solvers.ordering.exact import solve_exact

    opt = brute(g)[0]
    mp = pytest.MonkeyPatch()
    mp.setattr(B, "REACH_MASK_MAX_OPS", 0)
    try:
        fresh(g)
        res = solve_exact(g, time_limit=20, workers=1)
    finally:
        mp.undo()
        fresh(g)
    assert res.lower_bound <= opt <= res.peak
    assert res.status == "optimal" and res.peak == opt


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=7)))
def test_final_bound_is_the_least_last_moment(g):
    """final_bound equals, over all orders, the least memory while the last operator runs
    (so it is below the optimum, and not trivially)."""
    from test_bounds_properties import all_orders, simulate

    if g.n_ops == 0:
        return
    least_last = min(simulate(g, o)[1][o[-1]] for o in all_orders(g))
    assert B.final_bound(g) == least_last
