"""The position relaxation (formulations/remat_position_relax.py): a relaxation of
rematerialization over every order, the order of first computations as position variables.
Judged by the brute-force referee (tests/referee.py, class "free") on random tiny graphs:

* its least extra compute never exceeds the referee's free-order optimum (caps 1 and 2) and it
  is infeasible only when no schedule fits (so its infeasibility refutes a budget for every
  order and the caps);
* the referee's optimal schedule (when it recomputes nothing uselessly) satisfies it;
* it rises above the baseline, and refutes budgets, on a part of the seeded instances.
"""
from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings

from memsched.formulations.remat_position_relax import build_position_relaxation
from memsched.solvers.engines.cpsat import solve_cpsat

from referee import remat
from referee_strategies import random_tiny_graph, tiny_instances

SET = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
           phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _usable(g, B) -> bool:
    return B - g.always_resident() >= 0 and all(float(c).is_integer() for c in g.cost)


def _optimum(g, B, cap):
    rx = build_position_relaxation(g, B, [cap] * g.n_ops)
    run = solve_cpsat(rx.model, time_limit=60, workers=1)
    assert run.status in ("optimal", "infeasible"), run.status
    return None if run.status == "infeasible" else g.total_cost() + run.solver.ObjectiveValue() * rx.cost_div


@settings(max_examples=30, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_position_relaxation_is_below_the_free_optimum(inst):
    g, B = inst
    if not _usable(g, B):
        return
    for cap in (1, 2):
        truth = remat(g, B, cap=cap, order="free").compute
        got = _optimum(g, B, cap)
        if truth is None:
            continue
        assert got is not None, ("relaxation infeasible but a schedule fits", cap, truth)
        assert got <= truth + 1e-6, (cap, got, truth)


@settings(max_examples=40, **SET)
@given(inst=tiny_instances(max_ops=7))
def test_the_optimal_schedule_satisfies_the_position_relaxation(inst):
    g, B = inst
    if not _usable(g, B):
        return
    ref = remat(g, B, cap=1, order="free")
    if ref.schedule is None:
        return
    rx = build_position_relaxation(g, B, [1] * g.n_ops, objective=False)
    if not rx.hint(ref.schedule):
        return
    run = solve_cpsat(rx.model, time_limit=60, workers=1, params={"fix_variables_to_their_hinted_value": True})
    assert run.status in ("optimal", "feasible"), ref.schedule.to_names(g)


def test_position_relaxation_bounds_and_refutes_on_seeded_instances():
    above = refuted = 0
    for seed in range(300):
        g, B = random_tiny_graph(seed, max_ops=7)
        if not _usable(g, B):
            continue
        truth = remat(g, B, cap=1, order="free").compute
        got = _optimum(g, B, 1)
        if truth is None:
            refuted += got is None
            continue
        assert got is not None and got <= truth + 1e-6
        above += got > g.total_cost()
    assert above >= 5 and refuted >= 10, (above, refuted)
