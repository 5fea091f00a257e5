"""The last-of-a-set bound (solvers/ordering/bounds.py: last_of_set_value / _bound; proof:
docs/bounds.md section 4a) against brute force over every topological order: the value
of a set X equals the least memory, over all orders, while the last-run operator of X
runs; the bound never exceeds the optimal peak; and on the shipped Llama-style training
step it meets the best order found (a certificate the trap, pair and final-moment bounds
do not give)."""
from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import order_peak
from memsched.instances import load_graph
from memsched.instances.extract_models import CORPUS_DIR
from memsched.solvers.ordering import bounds as B
from memsched.solvers.ordering.exact import _peak_split
from memsched.solvers.ordering.heuristics import run_heuristics
from referee import all_topological_orders as all_orders, least_peak
from strategies import random_graphs, single_output_graphs

GRAPHS = st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=7))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRAPHS, st.data())
def test_value_is_the_least_memory_at_the_last_of_the_set(g, data):
    X = data.draw(st.sets(st.integers(0, g.n_ops - 1), min_size=1))
    least = None
    for o in all_orders(g):
        mem = B.step_memory(g, o)
        last = max(X, key=o.index)
        least = mem[last] if least is None else min(least, mem[last])
    assert B.last_of_set_value(g, X) == least


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRAPHS)
def test_bound_never_exceeds_the_optimum(g):
    opt = least_peak(g)
    assert B.last_of_set_bound(g, base=0) <= opt
    assert B.bound_report(g)["lower_bound"] <= opt


def test_certifies_the_llama_training_step():
    g = load_graph(CORPUS_DIR / "llama_8l_b1_s128_train.json.gz")
    o = min(run_heuristics(g), key=lambda r: r[2])[1]
    o = _peak_split(g, o, deadline=1e18)
    ub = order_peak(g, o)
    old = max(B.final_bound(g), B.trap_bound(g, [o]))
    assert old < ub  # the earlier bounds leave a gap here
    assert B.last_of_set_bound(g, [o], base=old, time_budget=60) == ub
