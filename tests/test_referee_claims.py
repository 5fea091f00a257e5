"""Every claim of every remat method and of the exact ordering solver, judged by brute force.

The referee (tests/referee.py) searches every schedule of graphs of at most 8 operators;
it shares no code with the solvers. For each random (graph, budget) and each method x cap
(0, 1, 2, unbounded) x order scope (free, given):

* a schedule must be valid, within the budget, the caps and the asked order class;
* ``optimal`` must equal the true optimum of the asked problem; ``infeasible`` must be
  true; ``lower_bound`` must not exceed the true optimum;
* what a method proved about its own class (``scope``, ``class_status``,
  ``class_lower_bound``) is checked against the referee's answer for that class.

CI runs a derandomized set (settings(derandomize=True)); benchmarks/bench_referee.py is
the slow run on 10,000 seeded instances. A missing solver dependency (highspy, ortools)
fails these tests: nothing here skips.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from memsched.formulations import Graph, Operator, Schedule, Tensor, evaluate
from memsched.solvers.ordering import bounds as order_bounds
from memsched.solvers.ordering.exact import solve_exact
from memsched.solvers.remat.dispatch import solve_remat

from referee import CAPS, Truth, check_remat_claims, in_class, order_peak, remat
from referee_strategies import tiny_graphs, tiny_instances

# no shrinking: a failure prints its instance in full (judge's message), and shrinking a
# solver-backed test can take minutes
SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])
# "cp-phases": the cp driver without its exhaustive search of small graphs, which would
# otherwise decide these tiny instances before its CP-SAT phases run
EXACT = ("cp", "cp-phases", "milp", "width-dp", "sp-knapsack")
BASELINES = ("dtr-greedy", "checkpoint-all", "chen-sqrt", "revolve")
ORDERS = ("free", "given")


def _not_applicable(method, exc) -> bool:
    """sp-knapsack covers one graph class; outside it, it says so (a MemschedError)."""
    from memsched.solvers.special.series_parallel import NotSeriesParallel
    from memsched.solvers.special.sp_knapsack import OutsideClass

    return method == "sp-knapsack" and isinstance(exc, (NotSeriesParallel, OutsideClass))


def judge(g, B, method, cap, order, truth, time_limit=20):
    from memsched.solvers.remat import cp

    share = cp.EXHAUSTIVE_SHARE
    try:
        if method == "cp-phases":
            cp.EXHAUSTIVE_SHARE = 0.0
        res = solve_remat(g, B, method="cp" if method == "cp-phases" else method, cap=cap,
                          order=order, time_limit=time_limit)
    except Exception as e:  # noqa: BLE001
        if _not_applicable(method, e):
            return None
        raise
    finally:
        cp.EXHAUSTIVE_SHARE = share
    bad = check_remat_claims(g, B, cap, order, res, truth)
    assert not bad, f"{method} cap={cap} order={order} B={B} on {_describe(g)}: {bad}; status {res.status}, " \
                    f"compute {res.compute}, lb {res.lower_bound}, scope {res.scope}, class {res.class_status}"
    return res


def _describe(g: Graph) -> str:
    ops = "; ".join(f"{o.name}{list(o.inputs)}->{list(o.outputs)} c={o.cost} ws={o.workspace}" for o in g.ops)
    ts = ", ".join(f"{t.name}:{t.size}" for t in g.tensors)
    return f"[{ops}] tensors {ts} pinned {sorted(g.pinned)} required {list(g.outputs)} order {list(g.order)}"


@pytest.mark.parametrize("method", EXACT)
@settings(max_examples=30, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_exact_methods_agree_with_brute_force(method, inst):
    g, B = inst
    truth = Truth(g, B)
    for cap in CAPS:
        for order in ORDERS:
            judge(g, B, method, cap, order, truth)


@pytest.mark.parametrize("method", BASELINES)
@settings(max_examples=12, **SET)
@given(inst=tiny_instances(max_ops=8))
def test_baselines_claim_nothing_false(method, inst):
    g, B = inst
    truth = Truth(g, B)
    for cap in CAPS:
        for order in ORDERS:
            judge(g, B, method, cap, order, truth)


@pytest.mark.parametrize("method", ("milp", "width-dp", "cp", "cp-phases"))
@settings(max_examples=25, **SET)
@given(g=tiny_graphs(max_ops=7))
def test_where_the_given_order_binds(method, g):
    """The bug class of issue 13: budgets at which a free order fits without recomputation
    but the given order does not. A stage-class method must not call its class answer
    optimal or infeasible for the free-order problem."""
    opt, _ = order_peak(g)
    given_pk = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    if not (2 <= opt < given_pk):
        return
    truth = Truth(g, opt)
    assert truth("free", 0).compute == pytest.approx(g.total_cost())
    for cap in CAPS:
        for order in ORDERS:
            judge(g, opt, method, cap, order, truth)


# ------------------------------------------------------------- regression examples (issue 13)
def _g(nodes, edges, order):
    return Graph.from_single_output(nodes, edges, order=order)


def test_milp_free_order_is_not_optimal_when_a_cheaper_free_schedule_exists():
    """v0 (13, 5), v1 (12, 3), v2 (19, 1); v0 -> v1; given order v0, v2, v1; budget 25, cap 2.
    The stage MILP recomputes v0 (compute 14); the free order v2, free v2, v0, v1 costs 9."""
    g = _g([("v0", 13, 5.0), ("v1", 12, 3.0), ("v2", 19, 1.0)], [("v0", "v1")], ["v0", "v2", "v1"])
    truth = Truth(g, 25)
    assert truth("free", 2).compute == 9.0
    assert truth("given", 2).compute == 14.0
    res = judge(g, 25, "milp", 2, "free", truth)
    assert res.status != "optimal" or res.compute == 9.0
    assert res.lower_bound is None or res.lower_bound <= 9.0
    res = judge(g, 25, "cp", 2, "free", truth)
    assert res.status == "optimal" and res.compute == 9.0
    res = judge(g, 25, "cp", 2, "given", truth)
    assert res.status == "optimal" and res.compute == 14.0


def test_width_dp_free_order_is_not_infeasible_when_a_free_order_fits():
    """v0 (13, 1), v1 (17, 3), v2 (14, 3); v2 -> v0; order v2, v1, v0; budget 27, cap 0:
    the order v2, v0, v1 fits (compute 7); the given order does not."""
    g = _g([("v0", 13, 1.0), ("v1", 17, 3.0), ("v2", 14, 3.0)], [("v2", "v0")], ["v2", "v1", "v0"])
    truth = Truth(g, 27)
    assert truth("free", 0).compute == 7.0
    assert truth("given", 0).compute is None
    for method in ("width-dp", "milp", "cp"):
        res = judge(g, 27, method, 0, "free", truth)
        assert res.status != "infeasible"
        res = judge(g, 27, method, 0, "given", truth)
        assert res.status in ("infeasible", "unknown", "timeout")
    res = judge(g, 27, "cp", 0, "free", truth)
    assert res.status == "optimal" and res.compute == 7.0


def four_runs_graph() -> Graph:
    """a: p -> x (10 B); c_i reads x (and z_{i-1}) and writes y_i (1 B); h_i: y_i -> z_i
    (1 B, 100 B workspace); i = 1..4; z_4 required. At budget 102 x cannot stay resident
    across any h_i, so a runs before each c_i: 4 times (3 extra); all costs 1."""
    ts = [Tensor("p", 0), Tensor("x", 10)]
    ops = [Operator("a", ("p",), ("x",), 1.0, 0)]
    for i in range(1, 5):
        ts += [Tensor(f"y{i}", 1), Tensor(f"z{i}", 1)]
        ops.append(Operator(f"c{i}", ("x",) + ((f"z{i - 1}",) if i > 1 else ()), (f"y{i}",), 1.0, 0))
        ops.append(Operator(f"h{i}", (f"y{i}",), (f"z{i}",), 1.0, 100))
    return Graph(ops, ts, pinned=frozenset({"p"}), outputs=("z4",), name="four_runs")


def test_cp_without_cap_is_not_infeasible_when_an_operator_must_run_four_times():
    g = four_runs_graph()
    truth = Truth(g, 102)
    assert truth("free", None).compute == 12.0  # 4 x a, 4 x c, 4 x h
    assert truth("free", 2).compute is None and truth("free", 3).compute == 12.0
    res = judge(g, 102, "cp", None, "free", truth)
    assert res.status in ("optimal", "feasible", "timeout", "unknown")
    res = judge(g, 102, "cp", 2, "free", truth, time_limit=5)
    assert res.status in ("infeasible", "timeout", "unknown") and res.schedule is None
    for method in ("milp", "dtr-greedy"):
        judge(g, 102, method, None, "free", truth)


def test_dtr_greedy_unbounded_required_outputs_over_budget_is_a_result_not_a_crash():
    """Two required outputs of 1 and 2 bytes cannot both be resident at budget 2: no
    schedule exists (the truth: infeasible). dtr-greedy must return a result (any status
    but optimal/feasible), not raise the evaluator's ScheduleError."""
    g = Graph([Operator("a", (), ("x",), 1.0, 0), Operator("b", (), ("y",), 1.0, 0)],
              [Tensor("x", 1), Tensor("y", 2)], outputs=("x", "y"))
    truth = Truth(g, 2)
    assert all(truth("free", c).compute is None for c in CAPS)
    for cap in CAPS:
        res = judge(g, 2, "dtr-greedy", cap, "free", truth)
        assert res.schedule is None


# ------------------------------------------------------------- ordering: exact solver and bounds
@settings(max_examples=40, **SET)
@given(g=tiny_graphs(max_ops=8))
def test_exact_order_and_every_bound_agree_with_brute_force(g):
    opt, witness = order_peak(g)
    rep = order_bounds.bound_report(g, pair_budget=0.05)
    for name, b in rep["bounds"].items():
        assert b["value"] <= opt, f"bound {name} = {b['value']} > optimal peak {opt}"
    assert rep["lower_bound"] <= opt
    res = solve_exact(g, time_limit=20, workers=1)
    ev = evaluate(g, res.schedule)
    assert res.schedule.is_plain_order() and ev.peak == res.peak
    assert res.peak >= opt
    assert res.lower_bound is not None and res.lower_bound <= opt
    if res.status == "optimal" or res.extra.get("certified"):
        assert res.peak == opt and res.lower_bound == opt
    assert res.status == "optimal", "tiny graphs are always certified within the time limit"


def test_four_runs_witness_lies_in_the_given_class():
    g = four_runs_graph()
    r = remat(g, 102, 3, "given")
    assert r.compute == 12.0 and in_class(g, r.schedule, "given")
    assert max(evaluate(g, r.schedule).compute_counts) == 4
