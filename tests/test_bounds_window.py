"""The induced-subproblem (window) bound (solvers/ordering/window_bound.py; proof:
docs/bounds.md section 9) against brute force over every topological order of small random
graphs (multi-output operators, pinned inputs, unpinned inputs, required outputs,
workspace) and random operator sets S:

* the proof's map (restrict_order) sends every order of G to a valid order of G_S whose
  peak is at most G's peak (the statement proved, moment by moment);
* hence opt(G_S) <= opt(G), and the window value (the exact solver on G_S) never exceeds
  opt(G); with S = all operators G_S has G's optimum (nothing is relaxed but the initial
  state of unread inputs);
* in solve_exact the window stage only ever reports a bound <= the evaluated peak."""
from hypothesis import HealthCheck, given, settings, strategies as st

from memsched.formulations import order_peak
from memsched.instances.generators import random_layered
from memsched.solvers.ordering import bounds as B
from memsched.solvers.ordering.heuristics import run_heuristics
from memsched.solvers.ordering.window_bound import restrict_order, window_bound, window_graph, window_value
from referee import all_topological_orders as all_orders, least_peak, order_peak as ref_order_peak
from strategies import random_graphs, single_output_graphs

GRAPHS = st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=7))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(GRAPHS, st.data())
def test_every_order_maps_to_a_window_order_with_no_higher_peak(g, data):
    S = data.draw(st.sets(st.integers(0, g.n_ops - 1), min_size=1))
    virtual = data.draw(st.booleans())
    wg = window_graph(g, S, virtual=virtual)
    orders = list(all_orders(g))
    opt, best = ref_order_peak(g)
    # the map on every order of small graphs, on 200 random ones (and an optimal one) of larger
    # graphs (up to 5040 orders): the per-order evaluation dominates the run time
    sample = orders if len(orders) <= 200 else data.draw(st.randoms(use_true_random=False)).sample(orders, 200)
    for o in sample + [best]:
        so = restrict_order(g, wg, o)
        assert order_peak(wg.graph, so) <= order_peak(g, o)  # also checks validity (evaluator)
    sub_opt = least_peak(wg.graph)
    assert sub_opt <= opt
    if len(S) == g.n_ops:
        assert max(sub_opt, g.resident_at_start()) == opt


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRAPHS, st.data())
def test_window_value_never_exceeds_the_optimum(g, data):
    S = data.draw(st.sets(st.integers(0, g.n_ops - 1), min_size=1))
    opt = least_peak(g)
    o = g.given_order()
    assert window_value(g, S, o, time_limit=5) <= opt
    assert window_bound(g, o, 0, time_budget=5, sizes=(3, 5)) <= opt
    assert window_bound(g, o, 0, time_budget=5, sizes=(3, 5), kind="position") <= opt


def test_window_bound_on_a_layered_graph_is_sound():
    g = random_layered(60, 3)
    o = min(run_heuristics(g), key=lambda r: r[2])[1]
    ub = order_peak(g, o)
    for kind in ("band", "position"):
        info: dict = {}
        lb = window_bound(g, o, 0, time_budget=6, sizes=(20, 40), kind=kind, info=info)
        assert B.initial_bound(g) <= lb <= ub
        solved = [w for w in info["windows"] if "skipped" not in w]  # skipped: cannot raise the bound
        assert solved and all(0 < w["lower_bound"] <= ub for w in solved)
        assert all(w["lower_bound"] == 0 and w["upper_bound"] <= lb for w in info["windows"] if "skipped" in w)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRAPHS, st.data())
def test_a_window_is_skipped_only_when_it_cannot_raise_the_floor(g, data):
    """window_value(floor=f) skips G_S when the restricted order already peaks <= f; then
    the brute-force optimum of G_S is <= f too (the window could not have raised f)."""
    S = data.draw(st.sets(st.integers(0, g.n_ops - 1), min_size=1))
    o = data.draw(st.sampled_from(list(all_orders(g))[:50]))
    floor = data.draw(st.integers(1, max(1, order_peak(g, o) + 2)))
    info: dict = {}
    v = window_value(g, S, o, time_limit=5, floor=floor, info=info)
    wg = window_graph(g, S, o)
    sub_opt = least_peak(wg.graph)
    assert v <= sub_opt
    if "skipped" in info:
        assert v == 0 and sub_opt <= floor
    else:
        assert order_peak(wg.graph, restrict_order(g, wg, o)) > floor
