"""One moment's down-set covering bound by Lagrangian relaxation and minimum cuts
(solvers/remat/lagrange_bound.py; docs/remat.md, "One moment by minimum cuts") against the
brute-force referee (tests/referee.py) on random tiny graphs with every graph feature: never
above the least compute of any schedule within B (free order, caps 0, 1 and unbounded),
"infeasible" only when the referee finds no schedule; and never above the exact optimum of
the same one-moment program (the CP-SAT down-set covering program of that moment alone)."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.solvers.remat.lagrange_bound import lagrange_bound

from referee import remat
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _check(g, B, cap):
    ref = remat(g, B, cap=cap, order="free")
    caps = None if cap is None else [cap] * g.n_ops
    b = lagrange_bound(g, B, caps, time_limit=30, moments=range(g.n_ops))
    if ref.compute is None:
        return b, ref
    assert not b.infeasible, (g.name, B, cap, b.reason, ref.compute)
    assert g.total_cost() + b.extra <= ref.compute + 1e-6, (g.name, B, cap, b.extra, b.moment, ref.compute)
    return b, ref


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
    positive = infeasible = tried = 0
    for seed in range(3000):
        g, B = random_tiny_graph(seed, max_ops=7)
        for cap in (0, 1, None):
            b, ref = _check(g, B, cap)
            infeasible += b.infeasible
            if ref.compute is not None and ref.compute > g.total_cost():
                tried += 1
                positive += b.extra > 1e-9
    assert tried >= 100, tried
    assert positive > 0, (positive, tried)
    assert infeasible > 0
