"""Property tests of the lower bounds (solvers/ordering/bounds.py) and the down-set DP against a
brute force over every topological order, written here independently of the code under
test (its own memory simulation, cross-checked with the evaluator)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.formulations import Graph, Schedule, evaluate, order_peak
from memsched.cli.order import format_report
from memsched.solvers.ordering import bounds as B
from memsched.solvers.ordering.downset_dp import beam_order, downset_decide, downset_dp, downset_optimize
from referee import least_peak
from strategies import random_graphs, single_output_graphs


def all_orders(g: Graph):
    """Every topological order (generator)."""
    pred = g.op_pred()
    n = g.n_ops
    order, done = [], [False] * n

    def rec():
        if len(order) == n:
            yield list(order)
            return
        for v in range(n):
            if not done[v] and all(done[p] for p in pred[v]):
                done[v] = True
                order.append(v)
                yield from rec()
                order.pop()
                done[v] = False

    yield from rec()


def simulate(g: Graph, order):
    """(peak, memory while each operator runs) of a plain order, frees after last use."""
    kept = set(g.pinned) | set(g.outputs)
    name = [t.name for t in g.tensors]
    left = [len(c) for c in g.consumers]
    res = set(g.input_idx)
    mem = sum(g.size[j] for j in res)
    peak = mem
    for j in list(res):
        if left[j] == 0 and name[j] not in kept:
            res.discard(j)
            mem -= g.size[j]
    during = [0] * g.n_ops
    for v in order:
        out = sum(g.size[j] for j in g.op_out[v])
        during[v] = mem + out + g.workspace[v]
        peak = max(peak, during[v])
        mem += out
        res.update(g.op_out[v])
        for j in g.op_in[v]:
            left[j] -= 1
        for j in list(g.op_in[v]) + list(g.op_out[v]):
            if j in res and left[j] == 0 and name[j] not in kept:
                res.discard(j)
                mem -= g.size[j]
    return peak, during


def brute(g: Graph):
    """(optimal peak, an optimal order, per-operator least memory over all orders)."""
    best, best_o = None, None
    least = [None] * g.n_ops
    for o in all_orders(g):
        pk, during = simulate(g, o)
        if best is None or pk < best:
            best, best_o = pk, o
        for v, m in enumerate(during):
            if least[v] is None or m < least[v]:
                least[v] = m
    if best is None:  # no operators
        best, best_o = simulate(g, [])[0], []
    assert evaluate(g, Schedule.from_order(g, best_o)).peak == best  # the simulation agrees with the judge
    return best, best_o, least


graphs = st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=8))


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_bounds_below_brute_force_optimum(g):
    opt, _, least = brute(g)
    rep = B.bound_report(g, pair_budget=0.05)
    assert rep["lower_bound"] <= opt
    for name, b in rep["bounds"].items():
        assert b["value"] <= opt, name
    # the trap value of v is exactly the least memory any order has while v runs
    tv = B.trap_values(g)
    assert tv == least
    assert [B.reverse_trap_value(g, v) for v in range(g.n_ops)] == least
    assert B.trap_bound(g) == max([B.initial_bound(g)] + least)
    assert B.pair_bound(g, time_budget=10.0) <= opt


def brute_pair_bound(g: Graph) -> int:
    """The pair bound by its definition, over every order: for incomparable u, v and the
    case "u before v", the least memory while v runs and the least memory while u runs
    among the orders with u before v; the case costs the larger of the two, the pair the
    cheaper case; the bound is the largest pair value (and the trap bound)."""
    orders = list(all_orders(g))
    durs = [(o, simulate(g, o)[1]) for o in orders]
    anc, desc = g.reach_masks()
    best = max([B.initial_bound(g)] + [min(d[v] for _, d in durs) for v in range(g.n_ops)])
    for u in range(g.n_ops):
        for v in range(u + 1, g.n_ops):
            if ((anc[u] | desc[u]) >> v) & 1:
                continue
            cases = []
            for a, b in ((u, v), (v, u)):
                sel = [d for o, d in durs if o.index(a) < o.index(b)]
                cases.append(max(min(d[b] for d in sel), min(d[a] for d in sel)))
            best = max(best, min(cases))
    return best


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=6), single_output_graphs(max_ops=7)))
def test_pair_bound_equals_its_definition_over_all_orders(g):
    """Not just below the optimum (a bound that returns 0 would pass that): equal to the
    pair bound computed by brute force from its definition (docs/bounds.md)."""
    assert B.pair_bound(g, time_budget=10.0) == brute_pair_bound(g)


def two_chains() -> Graph:
    """a1 (10 B) -> a2 (1 B, required), b1 (10 B) -> b2 (1 B, required). Every operator
    alone can run with 11 B (trap bound 11: a1 and a2 resident while a2 runs), but the
    chain that runs second has the other chain's 1 B output resident: the optimum is 12,
    and the pair (a2, b2) proves it."""
    return Graph.from_single_output([("a1", 10, 1.0), ("a2", 1, 1.0), ("b1", 10, 1.0), ("b2", 1, 1.0)],
                                    [("a1", "a2"), ("b1", "b2")], outputs=["a2", "b2"])


def test_pair_bound_beats_the_trap_bound_where_pairs_matter():
    g = two_chains()
    opt, _, _ = brute(g)
    assert opt == 12 and B.trap_bound(g) == 11
    assert B.pair_bound(g, time_budget=10.0) == 12
    assert B.bound_report(g)["lower_bound"] == 12
    assert B.precedence_refutes(g, 11, time_budget=10.0) is True
    assert B.precedence_bound(g, 11, 12, time_budget=10.0) == 12


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs, st.booleans())
def test_downset_dp_equals_brute_force(g, free_moves):
    opt = least_peak(g)
    r = downset_dp(g, free_moves=free_moves)
    assert r.exact and r.value == opt
    assert order_peak(g, r.order) == opt
    lb = B.trap_bound(g)
    r2 = downset_dp(g, upper_bound=opt, lower_bound=lb)  # nothing strictly below the optimum
    assert r2.exact and r2.order is None
    r3 = downset_dp(g, upper_bound=opt + 1, lower_bound=lb)
    assert r3.order is not None and order_peak(g, r3.order) == opt
    assert order_peak(g, beam_order(g, 2, lower_bound=lb)) >= opt
    d = downset_decide(g, opt, free_moves=free_moves)
    assert d.exact and d.order is not None and order_peak(g, d.order) <= opt
    d = downset_decide(g, opt - 1, free_moves=free_moves)
    assert d.exact and d.order is None
    o, hi, lo, _ = downset_optimize(g, lb, order_peak(g, g.given_order()), g.given_order())
    assert hi == lo == opt and order_peak(g, o) == opt


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(random_graphs(max_ops=18, min_ops=10, max_fan_in=2), single_output_graphs(max_ops=18, min_ops=10)))
def test_bounds_below_dp_optimum_medium(g):
    r = downset_dp(g)
    assert r.exact
    opt = r.value
    assert order_peak(g, r.order) == opt
    rep = B.bound_report(g, pair_budget=0.05)
    for name, b in rep["bounds"].items():
        assert b["value"] <= opt, name
    assert B.pair_bound(g, time_budget=0.2) <= opt


def test_naive_reversal_is_unsound():
    """The forward trap bound run on the reversed graph exceeds the true optimum of a fork
    a -> b, a -> c (docs/bounds.md): reversed, a runs while the outputs of b and c are
    both resident, which never happens forward (b's and c's outputs die at once)."""
    g = Graph.from_single_output([("a", 3, 1.0), ("b", 2, 1.0), ("c", 2, 1.0)], [("a", "b"), ("a", "c")])
    opt, _, _ = brute(g)
    assert B.naive_reversed_graph_bound(g) > opt
    assert B.trap_bound(g) <= opt and B.reverse_bound(g) <= opt


def test_random_layered_bounds_below_the_dp_optimum_and_report_consistent():
    """On a generated layered graph of 60 operators (too big for brute force, exact by the
    down-set DP) every bound in the report is at most the optimum, the report's bound is
    their maximum, and the text report shows it."""
    from memsched.instances.generators import random_layered

    g = random_layered(60, 3)
    r = downset_dp(g)
    assert r.exact and order_peak(g, r.order) == r.value
    rep = B.bound_report(g)
    assert set(rep["bounds"]) == {"initial", "per_op", "final", "trap", "reverse", "pair", "last_of_set"}
    for name, b in rep["bounds"].items():
        assert b["value"] <= r.value, name
    assert rep["lower_bound"] == max(b["value"] for b in rep["bounds"].values())
    assert rep["bounds"]["trap"]["value"] >= max(rep["bounds"]["initial"]["value"], rep["bounds"]["per_op"]["value"])
    text = format_report(g, rep)
    assert str(rep["lower_bound"]) in text and "trap" in text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_learned_precedences_never_refute_a_feasible_peak(g):
    opt, _, _ = brute(g)
    assert B.precedence_refutes(g, opt, time_budget=30.0) is not True
    lb = B.trap_bound(g)
    got = B.precedence_bound(g, lb, max(lb, opt) + 3, time_budget=30.0)
    assert lb <= got <= opt
    if opt > 0:
        # on graphs this small the fixpoint finishes well within the time budget
        assert B.precedence_refutes(g, opt - 1, time_budget=30.0) is not None
