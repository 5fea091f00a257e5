"""The threshold and hitting-set lower bounds on remat compute (solvers/remat/proofs.py, docs/remat.md)
judged by the brute-force referee (tests/referee.py) on tiny graphs.

For every random (graph, budget), cap in {0, 1, 2} and order scope in {free, given}:
the bound never exceeds the true optimum of the class (when one exists), each threshold
it passed was a restricted problem that truly has no schedule, and the dispatcher's
lower bound and 'optimal' claims (which use it) agree with the referee. A deterministic
example shows the bound rising above the baseline to the optimum.
"""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.formulations import Graph, Operator, Tensor
from memsched.solvers.remat.dispatch import solve_remat
from memsched.formulations import evaluate
from memsched.solvers.remat.proofs import hitting_set_bound, recomputable, threshold_bound

from referee import remat
from referee_strategies import tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_threshold_bound_never_above_the_optimum(inst):
    g, B = inst
    base = g.total_cost()
    for cap in (0, 1, 2):
        for order in ("free", "given"):
            truth = remat(g, B, cap=cap, order=order)
            tb = threshold_bound(g, B, [cap] * g.n_ops, order, time_limit=10.0)
            assert tb.lower_bound >= base
            if truth.compute is not None:
                assert tb.lower_bound <= truth.compute + 1e-9, (cap, order, tb.checks, truth.compute)
            # every threshold passed names an operator cost (a sound witness of 'some op of cost >= t reruns')
            rec = recomputable(g, [cap] * g.n_ops)
            assert tb.extra == 0 or any(abs(g.cost[v] - tb.extra) < 1e-12 for v in rec)
            hb = hitting_set_bound(g, B, [cap] * g.n_ops, order, time_limit=10.0, start=tb)
            if truth.compute is None:
                assert hb.schedule is None
            else:
                assert not hb.infeasible, (cap, order, hb.checks)
                assert hb.lower_bound <= truth.compute + 1e-9, (cap, order, hb.checks, hb.certificates, truth.compute)
                if hb.schedule is not None:  # a schedule at the bound: the optimum of the class
                    ev = evaluate(g, hb.schedule)
                    assert ev.peak <= B and abs(ev.compute - truth.compute) < 1e-9


@settings(max_examples=25, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_cp_lower_bound_and_optimal_agree_with_referee(inst):
    g, B = inst
    for cap in (1, 2):
        for order in ("free", "given"):
            truth = remat(g, B, cap=cap, order=order).compute
            res = solve_remat(g, B, method="cp", cap=cap, order=order, time_limit=20)
            if truth is None:
                assert res.schedule is None
                continue
            if res.lower_bound is not None:
                assert res.lower_bound <= truth + 1e-9
            if res.status == "optimal":
                assert abs(res.compute - truth) < 1e-9
            assert res.extra["gap"] is None or res.extra["gap"] >= 0


def _chain_with_skip() -> Graph:
    """a -> b -> c -> d with a's output also read by d: without recomputation a's output
    (size 6) stays resident across b and c; the rerun that fits a budget of 12 is a's (cost 2)."""
    ts = [Tensor("x", 1), Tensor("ta", 6), Tensor("tb", 4), Tensor("tc", 4), Tensor("td", 1)]
    ops = [Operator("a", ("x",), ("ta",), 2.0, 0), Operator("b", ("ta",), ("tb",), 5.0, 0),
           Operator("c", ("tb",), ("tc",), 5.0, 0), Operator("d", ("tc", "ta"), ("td",), 1.0, 0)]
    return Graph(ops, ts, pinned=frozenset({"x"}), outputs=("td",), name="skip")


def test_threshold_bound_rises_to_the_optimum():
    g = _chain_with_skip()
    # given order peak: at c, x + ta + tb + tc = 15; budget 12 forces a's rerun (cost 2)
    B = 12
    truth = remat(g, B, cap=1, order="free").compute
    assert truth == g.total_cost() + 2.0
    tb = threshold_bound(g, B, [1] * g.n_ops, "free", time_limit=10.0)
    assert tb.lower_bound == truth, tb.checks
    res = solve_remat(g, B, method="cp", cap=1, order="free", time_limit=10)
    assert res.status == "optimal" and res.compute == truth and res.extra["gap"] == 0.0
