"""The stage MILP's warm start gives every variable (R, S, F, M, P) a value that satisfies
every constraint of the model, for schedules of the stage class; and the peak objective
counts the initial state (an input that nothing reads)."""
from __future__ import annotations

import pytest

pytest.importorskip("pyomo")
pytest.importorskip("highspy")

import pyomo.environ as pyo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsched.formulations import Graph, Operator, Schedule, Tensor, evaluate
from memsched.formulations.remat_milp import build_remat_milp
from memsched.solvers.remat.dispatch import solve_remat
from tests.strategies import random_graphs


def _solve(model):
    from pyomo.contrib.appsi.solvers import Highs

    opt = Highs()
    opt.config.load_solution = False
    res = opt.solve(model)
    if res.best_feasible_objective is None:
        return False
    res.solution_loader.load_vars()
    return True


def _all_satisfied(model) -> bool:
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        if con.has_lb() and body < pyo.value(con.lower) - 1e-6:
            return False
        if con.has_ub() and body > pyo.value(con.upper) + 1e-6:
            return False
    return True


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(g=random_graphs(max_ops=6), frac=st.sampled_from([0.7, 0.85, 1.0]))
def test_warm_start_of_a_solved_schedule_satisfies_every_constraint(g, frac):
    peak = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    B = max(g.resident_at_start(), int(frac * peak))
    enc = build_remat_milp(g, B, [None] * g.n_ops, objective="compute")
    if not _solve(enc.model):
        return
    sched = enc.decode()
    enc2 = build_remat_milp(g, B, [None] * g.n_ops, objective="compute")
    m2 = enc2.model
    assert enc2.hint(sched)
    assert _all_satisfied(m2)
    # R + S <= 1 and the F/M variables all carry values
    assert all(v.value is not None for v in m2.F.values()) and all(v.value is not None for v in m2.M.values())


def test_warm_start_rejects_a_schedule_outside_the_stage_class():
    g = Graph([Operator("a", ("x",), ("y",)), Operator("b", ("x",), ("z",))],
              [Tensor("x", 1), Tensor("y", 1), Tensor("z", 1)], outputs=["y", "z"], order=("a", "b"))
    enc = build_remat_milp(g, 10, [None, None])
    assert not enc.hint(Schedule.from_order(g, [1, 0]))  # first computations b, a
    assert enc.hint(Schedule.from_order(g, [0, 1]))
    assert _all_satisfied(enc.model)


def test_peak_objective_counts_an_unread_input():
    """Issue 13: the peak floor left out an input that nothing reads -> AssertionError.
    True answer by hand: the initial state holds u (50) and x (5): peak 55 at the start;
    afterwards at most x + y = 10 or y + z = 10."""
    g = Graph([Operator("a", ("x",), ("y",)), Operator("b", ("y",), ("z",))],
              [Tensor("u", 50), Tensor("x", 5), Tensor("y", 5), Tensor("z", 5)], outputs=["z"])
    r = solve_remat(g, None, method="milp", objective="peak", time_limit=20)
    assert r.peak == 55 and r.class_status == "optimal" and r.class_lower_bound == 55
    assert r.status == "optimal" and r.lower_bound == 55  # the initial state is a bound for every schedule
