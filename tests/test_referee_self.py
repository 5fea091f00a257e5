"""The referee (tests/referee.py) checked against itself and against the explicit-event search.

``remat`` folds every free into the compute that last touched the tensor and prunes
dominated states; ``naive_remat`` makes every free its own event and prunes nothing. Equal
answers on random tiny graphs check the canonical-form argument (docs/referee.md). The
search in tests/test_special_brute.py (another author's, explicit events) is a third opinion
for the free and stage classes.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from memsched.formulations import evaluate
from memsched.formulations import order_peak as peak_of_order

from referee import CAPS, Truth, all_topological_orders, in_class, least_peak, naive_remat, order_peak, remat
from referee_strategies import tiny_instances
from strategies import random_graphs, single_output_graphs
from test_special_brute import brute_remat

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


@settings(max_examples=70, **SET)
@given(inst=tiny_instances(max_ops=4, max_size=8))
def test_canonical_search_equals_explicit_event_search(inst):
    g, B = inst
    for order in ("free", "given", "stage"):
        for cap in CAPS:
            r = remat(g, B, cap, order)
            n = naive_remat(g, B, cap, order)
            assert (r.compute is None) == (n is None), (order, cap, r.compute, n)
            if n is not None:
                assert r.compute == pytest.approx(n)
                ev = evaluate(g, r.schedule)
                assert ev.peak <= B and in_class(g, r.schedule, order)
                assert cap is None or max(ev.compute_counts) <= cap + 1


@settings(max_examples=70, **SET)
@given(inst=tiny_instances(max_ops=4, max_size=8), caps=st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_per_operator_caps_agree_with_the_explicit_event_search(inst, caps):
    """A list of caps, one per operator (used by tests/test_remat_cost_caps.py)."""
    g, B = inst
    caps = caps[:g.n_ops]
    for order in ("free", "given"):
        r = remat(g, B, caps, order)
        n = naive_remat(g, B, caps, order)
        assert (r.compute is None) == (n is None), (order, caps, r.compute, n)
        if n is not None:
            assert r.compute == pytest.approx(n)
            counts = evaluate(g, r.schedule).compute_counts
            assert all(c <= 1 + k for c, k in zip(counts, caps)), (counts, caps)


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=5, max_size=8))
def test_agrees_with_the_special_class_brute_force(inst):
    """tests/test_special_brute.py's search counts ``caps`` as extra runs too; its
    fixed_order class is the stage class. (Its state keeps every recompute count, so
    without a cap its state space is infinite: finite caps only.)"""
    g, B = inst
    for cap in (0, 1, 2):
        for order, fixed in (("free", False), ("stage", True)):
            r = remat(g, B, cap, order)
            b = brute_remat(g, B, cap, fixed_order=fixed)
            assert (r.compute is None) == (b is None), (order, cap, r.compute, b)
            if b is not None:
                assert r.compute == pytest.approx(b)


@settings(max_examples=400, **SET)
@given(g=st.one_of(random_graphs(max_ops=7), single_output_graphs(max_ops=7)))
def test_least_peak_is_the_least_over_every_topological_order(g):
    """(a)'s down-set DP, the brute-force optimum of the ordering property tests, equals the
    minimum of the evaluator's peak over an explicit enumeration of every topological order
    (every graph feature: inputs, pinned, multi-output, workspace, required outputs)."""
    assert least_peak(g) == min(peak_of_order(g, o) for o in all_topological_orders(g))


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=8))
def test_order_peak_is_the_least_budget_without_recomputation(inst):
    """(a) and (b) agree: cap 0 fits at the optimal order peak and not one byte below."""
    g, _ = inst
    opt, order = order_peak(g)
    assert sorted(order) == list(range(g.n_ops))
    at = remat(g, opt, 0, "free")
    assert at.compute is not None and at.compute == pytest.approx(g.total_cost())
    below = remat(g, opt - 1, 0, "free")
    assert below.compute is None


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=8))
def test_classes_and_caps_are_nested_and_shortcuts_are_exact(inst):
    """free <= given <= stage and cap 0 >= 1 >= 2 >= unbounded; and Truth's shortcuts
    (answers inferred from a superclass) equal a direct search."""
    g, B = inst
    inf = float("inf")
    t = Truth(g, B)
    val = {}
    for o in ("free", "given", "stage"):
        for c in CAPS:
            direct = remat(g, B, c, o).compute
            assert t(o, c).compute == (pytest.approx(direct) if direct is not None else None)
            val[o, c] = inf if direct is None else direct
    for c in CAPS:
        assert val["free", c] <= val["given", c] <= val["stage", c]
    for o in ("free", "given", "stage"):
        vs = [val[o, c] for c in CAPS]
        assert vs == sorted(vs, reverse=True)
