"""The "free after last use" dominance rule of the CP-SAT remat model
(``build_remat_cp(..., free_after_last_use=True)``, docs/remat.md): each copy of a tensor that
is not a required output ends right after its last reader. Judged by the brute-force referee
(tests/referee.py) on random tiny graphs: with the rule the model's optimum and its
infeasibility are the referee's, for the given-order class and for free order, caps 0, 1, 2,
and for the least-peak objective the least peak is unchanged."""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from ortools.sat.python import cp_model

from memsched.formulations import evaluate
from memsched.formulations.problems import first_computations_follow
from memsched.formulations.remat_cpsat import build_remat_cp

from referee import remat
from referee_strategies import tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _solve(cp):
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = 120  # generous: the 2-core machine is shared
    code = s.Solve(cp.model)
    assert code in (cp_model.OPTIMAL, cp_model.INFEASIBLE), s.StatusName(code)
    return (None, None) if code == cp_model.INFEASIBLE else (s, cp.decode(s.Value, s.BooleanValue))


def _usable(g, B):
    return B - sum(g.size[j] for j in g.input_idx if j in g.pinned_idx or j in g.output_idx) >= 0


@settings(max_examples=25, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_free_after_last_use_keeps_the_optimum(inst):
    g, B = inst
    if not _usable(g, B):
        return
    for order in ("given", "free"):
        for cap in (0, 1, 2):
            truth = remat(g, B, cap=cap, order=order).compute
            cp = build_remat_cp(g, B, [cap] * g.n_ops, objective="compute",
                                fix_order=g.given_order() if order == "given" else None, free_after_last_use=True)
            _s, sched = _solve(cp)
            if truth is None:
                assert sched is None, (order, cap)
                continue
            assert sched is not None, (order, cap, truth)
            ev = evaluate(g, sched)
            assert ev.peak <= B and max(ev.compute_counts) <= 1 + cap
            assert order == "free" or first_computations_follow(g, sched)
            assert abs(ev.compute - truth) < 1e-6, (order, cap, ev.compute, truth)


@settings(max_examples=25, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_free_after_last_use_keeps_the_least_peak(inst):
    g, B = inst
    for cap in (0, 1):
        peaks = []
        for rule in (False, True):
            cp = build_remat_cp(g, None, [cap] * g.n_ops, objective="peak", fix_order=g.given_order(),
                                free_after_last_use=rule)
            s, sched = _solve(cp)
            assert sched is not None
            peaks.append(s.Value(cp.capacity))
        assert peaks[0] == peaks[1], (cap, peaks)
