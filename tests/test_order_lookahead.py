"""Lookahead pruning of the down-set DP (solvers/ordering/downset_dp.py: Lookahead) and
the DP-decision stage of solve_exact, against brute force over all topological orders
(proof: docs/bounds.md, sections 6a and 6b)."""
from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import order_peak
from memsched.solvers.ordering import exact as E
from memsched.solvers.ordering.bounds import step_memory
from memsched.solvers.ordering.downset_dp import Lookahead, downset_decide, downset_dp
from referee import all_topological_orders as all_orders, least_peak
from strategies import random_graphs, single_output_graphs, topological_orders



@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=7)), st.data())
def test_lookahead_never_exceeds_the_least_memory_of_any_completion(g, data):
    order = data.draw(topological_orders(g))
    k = data.draw(st.integers(0, g.n_ops - 1))
    S = set(order[:k])
    mask = sum(1 << v for v in S)
    la = Lookahead(g)
    cond = la.add(la.start(0), order[:k]) if k else la.start(mask)
    assert list(cond) == list(la.start(mask))  # incremental == from scratch
    least = {}
    for o in all_orders(g):
        if set(o[:k]) != S:
            continue  # not a completion of S
        mem = step_memory(g, o)
        for v in o[k:]:
            least[v] = min(least.get(v, mem[v]), mem[v])
    for v in order[k:]:
        assert cond[v] <= least[v], (v, cond[v], least[v])
    # and it is exact on the operator that runs next... at least as strong as its own
    # step's outputs: cond[v] >= bytes v writes plus its workspace
    for v in order[k:]:
        assert cond[v] >= sum(g.size[j] for j in g.op_out[v]) + g.workspace[v]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=8), single_output_graphs(max_ops=8)))
def test_dp_with_lookahead_is_exact(g):
    opt = least_peak(g)
    for la in (True, False):
        r = downset_decide(g, opt, lookahead=la)
        assert r.order is not None and order_peak(g, r.order) <= opt
        r = downset_decide(g, opt - 1, lookahead=la)
        assert r.exact and r.order is None
        r = downset_dp(g, upper_bound=opt + 1, lookahead=la)
        assert r.exact and r.value == opt
        r = downset_dp(g, upper_bound=opt, lookahead=la)
        assert r.exact and r.order is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=8), single_output_graphs(max_ops=8)), st.data())
def test_bisect_stage_reaches_the_optimum_and_never_claims_too_much(g, data):
    opt = least_peak(g)
    order = data.draw(topological_orders(g))
    lb = data.draw(st.integers(0, opt))
    s = E._Segment(g, order, lb, deadline=1e18, dp_states=10_000, stats={}, say=lambda m: None, offset=0)
    by = E._stage_bisect(s)
    assert by == "dp" and s.cur == s.lb == opt == order_peak(g, s.so)
