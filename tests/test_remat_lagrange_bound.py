"""One moment's down-set covering bound by Lagrangian relaxation and minimum cuts
(solvers/remat/lagrange_bound.py; docs/remat.md, "One moment by minimum cuts") against the
brute-force referee (tests/referee.py) on random tiny graphs with every graph feature: never
above the least compute of any schedule within B (free order, caps 0, 1 and unbounded),
"infeasible" only when the referee finds no schedule; and never above the exact optimum of
the same one-moment program (the CP-SAT down-set covering program of that moment alone)."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.solvers.remat.lagrange_bound import lagrange_bound

from referee import check_free_compute_bound, remat, seeded_bound_sweep
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _check(g, B, cap):
    return check_free_compute_bound(g, B, cap, lambda g, B, caps: lagrange_bound(g, B, caps, time_limit=30,
                                                                                  moments=range(g.n_ops)))


@settings(max_examples=150, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_the_bound_never_exceeds_the_optimum(inst):
    g, B = inst
    for cap in (0, 1, None):
        _check(g, B, cap)


def test_seeded_instances_all_caps():
    """3,000 seeded instances, caps 0, 1 and unbounded: never above the referee's optimum,
    infeasible only when the referee has no schedule; it proves extra compute on some
    instances and refutes some budgets."""
    bound = lambda g, B, caps: lagrange_bound(g, B, caps, time_limit=30, moments=range(g.n_ops))  # noqa: E731
    tried, positive, infeasible = seeded_bound_sweep(bound, (0, 1, None), range(3000))
    assert tried >= 100, tried
    assert positive > 0, (positive, tried)
    assert infeasible > 0


def test_the_witness_is_a_down_set_around_its_moment():
    """``before`` (the operators the best moment's fitting minimizer runs first, a guess for the
    schedule searches) holds every ancestor of the moment, neither it nor a descendant, and with
    an operator every producer of its inputs; so it starts a topological order."""
    seen = 0
    for seed in range(1500):
        g, B = random_tiny_graph(seed, max_ops=7)
        b = lagrange_bound(g, B, None, time_limit=30, moments=range(g.n_ops))
        if b.infeasible or b.extra <= 0:
            continue
        assert b.before is not None, seed
        anc, desc = g.reach_masks()
        x, inside = b.moment, set(b.before)
        assert all(v in inside for v in range(g.n_ops) if (anc[x] >> v) & 1), seed
        assert x not in inside and not any((desc[x] >> v) & 1 for v in inside), seed
        for v in inside:
            assert all(g.producer[j] < 0 or g.producer[j] in inside for j in g.op_in[v]), seed
        seen += 1
    assert seen >= 20, seen


def test_the_given_order_variant_never_exceeds_the_class_optimum():
    """``order="given"`` (the operators before x are exactly those before it in the given
    order): never above the least compute of the given-order class (the referee with
    ``order="given"``), "infeasible" only where that class has no schedule, on 2,000 seeded
    instances with caps 0, 1 and unbounded; at or above the free variant on each of them (a
    fixed D is one of the free choices), and above it on some."""
    above = tried = 0
    for seed in range(2000):
        g, B = random_tiny_graph(seed, max_ops=7)
        for cap in (0, 1, None):
            caps = None if cap is None else [cap] * g.n_ops
            ref = remat(g, B, cap=cap, order="given")
            b = lagrange_bound(g, B, caps, time_limit=30, order="given")
            if ref.compute is None:
                continue
            assert not b.infeasible, (seed, cap, b.reason, ref.compute)
            assert g.total_cost() + b.extra <= ref.compute + 1e-6, (seed, cap, b.extra, ref.compute)
            free = lagrange_bound(g, B, caps, time_limit=30, moments=range(g.n_ops))
            assert b.extra >= free.extra - 1e-6 or free.infeasible, (seed, cap, b.extra, free.extra)
            tried += 1
            above += b.extra > free.extra + 1e-6
    assert tried >= 1000 and above > 0, (tried, above)
