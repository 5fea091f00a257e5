"""The down-set covering bound (solvers/remat/downset_bound.py; docs/remat.md, "Down-set
covering bound") against the brute-force referee (tests/referee.py) on random tiny graphs
with every graph feature: it never passes the least compute of any schedule within B (free
order, caps 0, 1 and unbounded), says "infeasible" only when the referee finds no schedule,
and proves more than the moment-cut covering bound on some instances."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.solvers.remat.cut_bound import cut_cover_bound
from memsched.solvers.remat.downset_bound import downset_cover_bound

from referee import check_free_compute_bound
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _check(g, B, cap):
    b, ref = check_free_compute_bound(g, B, cap, lambda g, B, caps: downset_cover_bound(g, B, caps, time_limit=30))
    if ref.compute is not None:
        assert b.complete, b.stats
    return b, ref


@settings(max_examples=150, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_the_bound_never_exceeds_the_optimum(inst):
    g, B = inst
    for cap in (0, 1, None):
        _check(g, B, cap)


def test_seeded_instances_all_caps_and_against_the_moment_cut_bound():
    """3,000 seeded instances, caps 0, 1 and unbounded: never above the referee's optimum,
    infeasible only when the referee has no schedule; above the moment-cut covering bound
    (free order) on some of them, and it refutes some budgets. The moment-cut bound with the
    down-set stage (its default) keeps the larger of the two, still below the optimum."""
    above_cut = infeasible = tried = 0
    for seed in range(3000):
        g, B = random_tiny_graph(seed, max_ops=7)
        for cap in (0, 1, None):
            b, ref = _check(g, B, cap)
            infeasible += b.infeasible
            if cap is None and ref.compute is not None and ref.compute > g.total_cost():
                tried += 1
                cut = cut_cover_bound(g, B, None, "free", time_limit=30, downset=False)
                both = cut_cover_bound(g, B, None, "free", time_limit=30)
                assert both.lower_bound >= max(cut.lower_bound, g.total_cost() + b.extra) - 1e-6, seed
                assert both.lower_bound <= ref.compute + 1e-6, seed
                above_cut += b.extra > cut.extra + 1e-9
    assert tried >= 100, tried
    assert above_cut > 0, (above_cut, tried)
    assert infeasible > 0
