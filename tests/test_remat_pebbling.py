"""The backward pebbling bound (memsched.solvers.remat.dispatch.pebbling_infeasibility): sound on
schedules that exist, and stronger than the local bound on a hand-made graph."""
import random

from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import Graph, Schedule, evaluate
from memsched.instances.generators import random_dag, random_multi_output
from memsched.solvers.remat.dispatch import local_infeasibility, pebbling_infeasibility, solve_remat
from memsched.solvers.remat.local_search import cut_peak

SET = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def random_topo_order(g, rng):
    pred = g.op_pred()
    done, order = set(), []
    while len(order) < g.n_ops:
        ready = [v for v in range(g.n_ops) if v not in done and all(p in done for p in pred[v])]
        v = rng.choice(ready)
        done.add(v)
        order.append(v)
    return order


@st.composite
def graphs(draw, max_n=8):
    n = draw(st.integers(2, max_n))
    seed = draw(st.integers(0, 10_000))
    if draw(st.booleans()):
        return random_multi_output(n, seed, max_size=draw(st.sampled_from([9, 50])))
    return random_dag(n, seed, edge_prob=draw(st.sampled_from([0.2, 0.4, 0.6])), max_size=draw(st.sampled_from([9, 50])))


@settings(max_examples=200, **SET)
@given(graphs(), st.integers(0, 1000))
def test_never_refutes_the_peak_of_an_existing_schedule(g, seed):
    """Every schedule's peak (plain orders and orders with recomputations inserted by the
    peak-cutting search towards budget 0) is a budget the bound must not refute."""
    rng = random.Random(seed)
    for _ in range(3):
        order = random_topo_order(g, rng)
        for s in (Schedule.from_order(g, order), cut_peak(g, order, 0, None, time_limit=0.5, best_effort=True)):
            pk = evaluate(g, s).peak
            assert pebbling_infeasibility(g, pk, depth=8) is None
            assert local_infeasibility(g, pk) is None


@settings(max_examples=25, **SET)
@given(graphs(max_n=5))
def test_never_refutes_the_least_peak_with_recomputation(g):
    """The least peak with up to 2 extra computations per operator (CP-SAT, proven) is feasible,
    so the bound must not refute it; refuting a budget implies the CP finds nothing there."""
    r = solve_remat(g, None, method="cp", cap=2, objective="peak", eps=10.0, time_limit=30, workers=1)
    assert r.schedule is not None
    assert pebbling_infeasibility(g, r.peak) is None
    if r.status == "optimal" and r.peak > 1 and pebbling_infeasibility(g, r.peak - 1) is not None:
        c = solve_remat(g, r.peak - 1, method="cp", cap=2, time_limit=30, workers=1)
        assert c.status == "infeasible" and c.schedule is None


def fork_graph():
    """x (10 bytes) feeds a and b (1 byte each); v reads a and b. Whichever of a, b is
    computed last runs while x, the other one and its own output are resident:
    10 + 1 + 1 = 12 bytes, whatever is recomputed; no single operator needs more
    than 11 (x + a), so the local bound allows 11."""
    nodes = [("x", 10, 1.0), ("a", 1, 1.0), ("b", 1, 1.0), ("v", 1, 1.0)]
    edges = [("x", "a"), ("x", "b"), ("a", "v"), ("b", "v")]
    return Graph.from_single_output(nodes, edges, name="fork", order=["x", "a", "b", "v"])


def test_fork_is_refuted_at_11_and_not_at_12():
    g = fork_graph()
    assert local_infeasibility(g, 11) is None
    why = pebbling_infeasibility(g, 11)
    assert why is not None and "'v'" in why and "11" in why
    assert pebbling_infeasibility(g, 12) is None
    r = solve_remat(g, 11, method="cp", cap=2, time_limit=10, workers=1)
    assert r.status == "infeasible" and r.message == why
    r = solve_remat(g, 12, method="cp", cap=2, time_limit=10, workers=1)
    assert r.status == "optimal" and r.peak == 12
