"""The given-order CP-SAT model (formulations/remat_cpsat.py with a full ``fix_order``) and
``--order given`` answers, judged by the brute-force referee (tests/referee.py).

* the model's optimum (with and without the no-useless-recomputation dominance rule and the
  slot domains from the order) equals the referee's optimum of the class "first computations
  in the given order" for caps 0, 1, 2; its infeasibility is the referee's;
* Checkmate's stage class (Moccasin's model fixes each occurrence to a stage event, which is
  that class) is never better than the given class;
* solve_remat(order="given") reports the anytime figures, and its optimal/infeasible are true.
"""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from ortools.sat.python import cp_model

from memsched.formulations import evaluate
from memsched.formulations.problems import first_computations_follow
from memsched.formulations.remat_cpsat import build_remat_cp
from memsched.solvers.remat.dispatch import solve_remat

from referee import remat
from referee_strategies import tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _solve_model(g, B, cap, prune):
    cp = build_remat_cp(g, B, [cap] * g.n_ops, objective="compute", fix_order=g.given_order(), prune_useless=prune)
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = 120  # generous: the 2-core machine is shared
    code = s.Solve(cp.model)
    assert code in (cp_model.OPTIMAL, cp_model.INFEASIBLE), s.StatusName(code)
    if code == cp_model.INFEASIBLE:
        return None
    sched = cp.decode(s.Value, s.BooleanValue)
    ev = evaluate(g, sched)
    assert ev.peak <= B and first_computations_follow(g, sched)
    assert max(ev.compute_counts) <= 1 + cap
    return ev.compute


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_given_model_optimum_is_the_referee_optimum(inst):
    g, B = inst
    if B - sum(g.size[j] for j in g.input_idx if j in g.pinned_idx or j in g.output_idx) < 0:
        return  # the model's capacity would be negative: the dispatcher rules such budgets out first
    for cap in (0, 1, 2):
        truth = remat(g, B, cap=cap, order="given").compute
        for prune in (True, False):
            got = _solve_model(g, B, cap, prune)
            if truth is None:
                assert got is None, (cap, prune)
            else:
                assert got is not None and abs(got - truth) < 1e-6, (cap, prune, got, truth)


@settings(max_examples=30, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_stage_class_is_never_better_than_given(inst):
    g, B = inst
    for cap in (1, 2):
        given_c = remat(g, B, cap=cap, order="given").compute
        stage_c = remat(g, B, cap=cap, order="stage").compute
        if stage_c is not None:
            assert given_c is not None and given_c <= stage_c + 1e-9


@settings(max_examples=15, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_given_order_solve_claims_and_anytime(inst):
    g, B = inst
    for cap in (0, 1):
        truth = remat(g, B, cap=cap, order="given").compute
        res = solve_remat(g, B, method="cp", cap=cap, order="given", time_limit=20)
        ex = res.extra
        if res.status == "optimal":
            assert abs(res.compute - truth) < 1e-9 and ex["gap"] == 0.0
            assert ex["time_to_proof_s"] is not None
            assert ex["time_to_first_s"] <= ex["time_to_best_s"] <= res.wall_s + 1e-3
        if res.status == "infeasible":
            assert truth is None and ex["time_to_proof_s"] is not None and ex["time_to_first_s"] is None
        if truth is None:
            assert res.schedule is None
        if res.schedule is not None:
            assert first_computations_follow(g, res.schedule)
