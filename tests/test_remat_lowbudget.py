"""Low budgets decided (memsched.solvers.remat.lowbudget): the exhaustive backward reachability
search with unbounded recomputation, against the brute-force referee (tests/referee.py).

* soundness on every graph the strategies draw: "infeasible" only where the referee finds no
  schedule with any amount of recomputation; "feasible" only with a schedule the evaluator
  accepts within the budget;
* exactness where the search is complete (every graph input always resident): the status
  equals the referee's at the least feasible budget and one byte below it;
* the creation-order bound is a lower bound on the peak of every prefix ending with a set
  resident (checked on random valid schedules, moment by moment);
* on random_layered n100 (../shared/data) at r = 0.6: feasible with unbounded recomputation,
  and 25050 is the least feasible budget."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

import referee
from memsched.formulations import Graph, evaluate
from memsched.formulations.schedule import COMPUTE
from memsched.solvers.remat.lowbudget import ReachSearch, decide_unbounded, refute_capped, refute_low_budget
from strategies import random_graphs, single_output_graphs, valid_schedules

SET = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                   HealthCheck.filter_too_much])


def inputs_kept(g: Graph) -> Graph:
    """The same graph with every graph input pinned (the class where the search is complete)."""
    names = frozenset(g.tensors[j].name for j in g.input_idx)
    return Graph(g.ops, g.tensors, pinned=g.pinned | names, outputs=g.outputs, order=g.order, name=g.name)


def least_budget(g: Graph) -> int:
    """The least budget with a schedule (unbounded recomputation), by the referee."""
    lo, hi = 0, referee.order_peak(g)[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if referee.remat(g, mid, None).compute is not None:
            hi = mid
        else:
            lo = mid + 1
    return lo


def check_sound(g: Graph, B: int, truth_feasible: bool, **kw):
    r = decide_unbounded(g, B, time_limit=30, **kw)
    if r.status == "infeasible":
        assert not truth_feasible, f"refuted B={B} but the referee has a schedule: {r.reason}"
    if r.status == "feasible":
        assert truth_feasible
        ev = evaluate(g, r.schedule)
        assert ev.peak <= B and ev.peak == r.peak
    return r


@settings(max_examples=700, **SET)
@given(random_graphs(max_ops=6, max_size=12), st.integers(0, 60))
def test_never_wrong_on_any_graph(g, B):
    """Any budget on graphs with every feature (unpinned inputs, multi-output, workspace,
    required outputs): a verdict never contradicts the referee."""
    truth = referee.remat(g, B, None).compute is not None
    check_sound(g, B, truth)


@settings(max_examples=500, **SET)
@given(st.one_of(random_graphs(max_ops=6, max_size=12).map(inputs_kept), single_output_graphs(max_ops=7, max_size=30)))
def test_exact_where_complete(g):
    """Every graph input always resident: the search decides the least feasible budget and
    one byte below it exactly (never unknown)."""
    b = least_budget(g)
    r = check_sound(g, b, True)
    assert r.status == "feasible", r.reason
    if b > 0:
        r = check_sound(g, b - 1, False)
        assert r.status == "infeasible", r.reason


@settings(max_examples=600, **SET)
@given(st.data())
def test_order_bound_is_a_lower_bound_on_every_prefix(data):
    """At every moment of a valid schedule, the creation-order bound of the resident set is at
    most the peak of the schedule up to that moment."""
    g = data.draw(random_graphs(max_ops=7, max_size=15))
    s = data.draw(valid_schedules(g))
    rs = ReachSearch(g, 10**9, witnesses=False, orders=[])
    resident = set(g.input_idx)
    pk = 0
    for kind, x in s.events:
        if kind == COMPUTE:
            resident |= set(g.op_out[x])
            now = sum(g.size[j] for j in resident) + g.workspace[x]
            pk = max(pk, now)
        else:
            resident.discard(x)
        S = sum(1 << j for j in resident)
        assert rs.order_bound(S) <= max(pk, sum(g.size[j] for j in g.input_idx))
        assert rs.m(S) <= max(pk, sum(g.size[j] for j in g.input_idx))


N100 = "graphs/random_layered/random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json"


def test_random_layered_n100_unbounded(shared_data):
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.dispatch import resolve_budget

    g = load_graph(str(shared_data / N100))
    B = resolve_budget(g, 0.6)
    r = decide_unbounded(g, B, time_limit=120)
    assert r.status == "feasible" and evaluate(g, r.schedule).peak <= B
    r = decide_unbounded(g, 25050, time_limit=120)
    assert r.status == "feasible" and evaluate(g, r.schedule).peak == 25050
    r = decide_unbounded(g, 25049, time_limit=120)
    assert r.status == "infeasible"


def test_fork_is_decided_at_11_and_12():
    """x (10 bytes) feeds a and b (1 byte each); v reads a and b: 12 bytes are needed and enough."""
    nodes = [("x", 10, 1.0), ("a", 1, 1.0), ("b", 1, 1.0), ("v", 1, 1.0)]
    edges = [("x", "a"), ("x", "b"), ("a", "v"), ("b", "v")]
    g = Graph.from_single_output(nodes, edges, name="fork", order=["x", "a", "b", "v"])
    assert decide_unbounded(g, 11).status == "infeasible"
    r = decide_unbounded(g, 12)
    assert r.status == "feasible" and evaluate(g, r.schedule).peak <= 12


def test_a_timeout_is_unknown_never_a_verdict(shared_data):
    from memsched.instances.formats import load_graph

    g = load_graph(str(shared_data / "graphs/random_layered/random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json"))
    r = decide_unbounded(g, 88104, time_limit=0.5)
    assert r.status == "unknown" and r.schedule is None


# ----------------------------------------------------------------- chains under a cap
@settings(max_examples=700, **SET)
@given(random_graphs(max_ops=6, max_size=12), st.integers(0, 60), st.sampled_from([0, 1, 2]))
def test_capped_refutation_never_wrong(g, B, cap):
    """A capped refutation only where the referee finds no schedule with that cap."""
    r = refute_capped(g, B, [cap] * g.n_ops, time_limit=30)
    assert r.status in ("infeasible", "unknown") and r.schedule is None
    if r.status == "infeasible":
        assert referee.remat(g, B, cap).compute is None, r.reason


@settings(max_examples=600, **SET)
@given(single_output_graphs(max_ops=7, max_size=20), st.sampled_from([0, 1]))
def test_capped_refutation_at_the_capped_threshold(g, cap):
    """At the least budget with the cap (referee) the chain search must not refute."""
    lo, hi = 0, referee.order_peak(g)[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if referee.remat(g, mid, cap).compute is not None:
            hi = mid
        else:
            lo = mid + 1
    assert refute_capped(g, lo, [cap] * g.n_ops, time_limit=30).status == "unknown"


def test_the_cap_refutes_what_unbounded_recomputation_allows():
    """The cap adds refutations: on 60 random DAGs (7 operators), at the largest budget where no
    schedule without recomputation fits (referee) but one with unbounded recomputation does
    (decide_unbounded, re-judged), the cap-0 chain search refutes it at least 5 times."""
    found = 0
    from memsched.instances.generators import random_dag

    for seed in range(60):
        g = random_dag(7, seed, edge_prob=0.4, max_size=20)
        for B in range(referee.order_peak(g)[0] - 1, 0, -1):
            if referee.remat(g, B, 0).compute is not None:
                continue
            if decide_unbounded(g, B).status != "feasible":
                break
            if refute_capped(g, B, [0] * g.n_ops, time_limit=30).status == "infeasible":
                found += 1
            break
    assert found >= 5, found


@settings(max_examples=800, **SET)
@given(random_graphs(max_ops=6, max_size=12), st.integers(0, 60), st.sampled_from([None, 0, 1]))
def test_refute_low_budget_never_wrong(g, B, cap):
    """The driver's entry point: a reason only where the referee has no schedule with the cap."""
    why = refute_low_budget(g, B, None if cap is None else [cap] * g.n_ops, time_limit=20)
    if why is not None:
        assert referee.remat(g, B, cap).compute is None, why


def test_the_cp_driver_uses_the_refutation():
    """A 16-operator random DAG at a budget the depth-6 pebbling bound does not refute but the
    exhaustive search does: the CP driver (cap 1) ends infeasible with that reason."""
    from memsched.instances.generators import random_dag
    from memsched.solvers.remat.dispatch import solve_remat
    from memsched.solvers.remat.infeasibility import local_infeasibility, pebbling_infeasibility

    g = random_dag(16, 22, edge_prob=0.3, max_size=20)
    assert local_infeasibility(g, 76) is None and pebbling_infeasibility(g, 76) is None
    assert referee.remat(g, 76, None, max_states=5_000_000).compute is None
    r = solve_remat(g, 76, method="cp", cap=1, time_limit=60, workers=1)
    assert r.status == "infeasible" and "exhaustive backward reachability search" in r.message
    # without a cap cp searches a capped class, but this refutation holds for any recomputation:
    # it is a claim about the asked problem, not only about cp's class
    u = solve_remat(g, 76, method="cp", time_limit=60, workers=1)
    assert u.status == "infeasible" and "exhaustive backward reachability search" in u.message


def test_an_overlong_emission_is_unknown():
    """The fork graph at 12 bytes needs a few computations; with room for one event the emitted
    schedule does not fit the limit: unknown, no schedule."""
    nodes = [("x", 10, 1.0), ("a", 1, 1.0), ("b", 1, 1.0), ("v", 1, 1.0)]
    edges = [("x", "a"), ("x", "b"), ("a", "v"), ("b", "v")]
    g = Graph.from_single_output(nodes, edges, name="fork", order=["x", "a", "b", "v"])
    r = decide_unbounded(g, 12, max_events=1)
    assert r.status == "unknown" and r.schedule is None and "events" in r.reason
    assert decide_unbounded(g, 12).status == "feasible"


@settings(max_examples=400, **SET)
@given(single_output_graphs(max_ops=7, max_size=30))
def test_exact_with_plain_witnesses_only(g):
    """tree_events=0: every tensor's witness strategy is a plain order of its ancestors (the
    choice made on large graphs, where tree strategies would emit too much); still exact."""
    b = least_budget(g)
    assert check_sound(g, b, True, tree_events=0).status == "feasible"
    if b > 0:
        assert check_sound(g, b - 1, False, tree_events=0).status == "infeasible"


@settings(max_examples=600, **SET)
@given(st.data())
def test_dropping_dead_computations_never_raises_the_peak(data):
    """``drop_dead_computations`` on the compute sequence of any valid schedule (every feature,
    recomputations included): the schedule of what is left is valid, runs every operator,
    computes no more and peaks no higher than the schedule of the whole sequence."""
    from memsched.solvers.remat.local_search import drop_dead_computations, schedule_from_sequence

    g = data.draw(random_graphs(max_ops=6, max_size=12))
    seq = list(data.draw(valid_schedules(g, max_events=40)).computes())
    whole = evaluate(g, schedule_from_sequence(g, seq))
    kept = drop_dead_computations(g, seq)
    ev = evaluate(g, schedule_from_sequence(g, kept))  # raises on an invalid schedule
    assert set(kept) == set(range(g.n_ops))
    assert ev.peak <= whole.peak and ev.compute <= whole.compute + 1e-9


def test_dead_computations_are_dropped():
    """a -> b -> c and a -> c. Run as a, b, a, c: b reads the first a and c the second, so
    everything is live. As a, b, a, b, c the first b (c reads the second) and then the first a
    are dead; as a, a, b, c the first a is."""
    from memsched.solvers.remat.local_search import drop_dead_computations

    g = Graph.from_single_output([("a", 4, 1.0), ("b", 2, 1.0), ("c", 1, 1.0)],
                                 [("a", "b"), ("b", "c"), ("a", "c")], name="chain")
    a, b, c = (g.op_index[x] for x in "abc")
    assert drop_dead_computations(g, [a, b, a, c]) == [a, b, a, c]
    assert drop_dead_computations(g, [a, b, a, b, c]) == [a, b, c]
    assert drop_dead_computations(g, [a, a, b, c]) == [a, b, c]


def _no_cp_search(monkeypatch):
    """The CP driver with no warm start beyond the plain orders, no exhaustive search and a
    CP-SAT that finds nothing: only the reachability search can give a schedule."""
    from memsched.solvers.remat import cp

    monkeypatch.setattr(cp, "EXHAUSTIVE_SHARE", 0.0)
    monkeypatch.setattr(cp, "greedy_warm_start", lambda *a, **k: None)
    monkeypatch.setattr(cp, "run_cpsat", lambda *a, **k: ("unknown", None, None, 0.0, []))


def test_the_cp_driver_returns_the_reachability_schedule_without_a_cap(monkeypatch):
    """No cap, free order, a budget no plain order meets and the CP search finding nothing:
    the driver returns the schedule the reachability search emitted (dead computations
    dropped), valid within the budget, feasible for the asked problem, at least the referee's
    least compute; at the referee's least budget on 14 random DAGs."""
    from memsched.instances.generators import random_dag
    from memsched.solvers.remat import cp
    from memsched.solvers.remat.dispatch import solve_remat

    _no_cp_search(monkeypatch)
    seen = 0
    for seed in range(14):
        g = random_dag(9, seed, edge_prob=0.35, max_size=20)
        B = least_budget(g)
        if referee.order_peak(g)[0] <= B:
            continue  # a plain order fits: no recomputation, nothing for the search to do
        seen += 1
        r = solve_remat(g, B, method="cp", time_limit=30, workers=1)
        assert r.schedule is not None and r.scope == "free", (seed, r.status, r.message)
        assert "reachability search" in r.message and r.params["reachability_search"]["status"] == "feasible"
        ev = evaluate(g, r.schedule)
        assert ev.peak <= B
        best = referee.remat(g, B, None).compute
        assert ev.compute >= best - 1e-9
        assert r.status == ("optimal" if abs(ev.compute - best) < 1e-9 and r.lower_bound == ev.compute else "feasible")
    assert seen >= 5
    # with a cap the search's schedule answers another question: nothing is returned
    g = random_dag(9, 0, edge_prob=0.35, max_size=20)
    r = solve_remat(g, least_budget(g), method="cp", cap=1, time_limit=10, workers=1)
    assert r.schedule is None and "reachability_search" not in r.params
    assert cp.UNBOUNDED_SHARE > 0


def test_a_refutation_beside_the_reachability_schedule_is_a_disagreement():
    """The fallback and a refutation of the asked problem cannot both stand."""
    import pytest

    from memsched.formulations.schedule import Schedule
    from memsched.solvers.remat.cp import _fallback_result
    from memsched.solvers.result import SolveResult, SolverDisagreement, Status

    g = Graph.from_single_output([("a", 4, 1.0), ("b", 2, 1.0)], [("a", "b")], name="ab")
    res = SolveResult(solver="remat-cp", status=Status.INFEASIBLE, schedule=None, objective="compute",
                      params={"refutes_asked_problem": True}, message="refuted")
    with pytest.raises(SolverDisagreement):
        _fallback_result(g, res, {"fallback": Schedule.from_order(g, g.given_order())})
    res.params = {}
    out = _fallback_result(g, res, {"fallback": Schedule.from_order(g, g.given_order()), "fallback_s": 0.1})
    assert out.status == Status.FEASIBLE and out.scope == "free" and out.extra["time_to_first_s"] == 0.1
