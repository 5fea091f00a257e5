"""Baseline: checkpoint everything (no recomputation).

Runs the given order (or, with ``order=``, any order) and keeps every tensor
until its last use. Its peak is the budget's reference point: ``--budget 1.0``
is exactly this peak. Feasible iff that peak fits the budget. O(n + edges).
"""
from __future__ import annotations

from memsched.formulations import Schedule, evaluate
from memsched.solvers.result import Status, make_result

SOLVER = "remat-checkpoint-all"


def solve(graph, budget, *, caps=None, objective="compute", eps=0.0, order=None):
    order = graph.given_order() if order is None else order
    sched = Schedule.from_order(graph, order)
    ev = evaluate(graph, sched)
    if objective == "compute" and budget is not None and ev.peak > budget:
        return make_result(graph, None, solver=SOLVER, status=Status.INFEASIBLE, objective=objective,
                           message=f"checkpoint-all: the given order's peak {ev.peak} > budget {budget}")
    if objective == "peak" and budget is not None and ev.peak > budget:
        return make_result(graph, None, solver=SOLVER, status=Status.INFEASIBLE, objective=objective,
                           message=f"checkpoint-all: the given order's peak {ev.peak} > budget {budget}")
    # compute is the baseline, which is a lower bound on any schedule's compute
    lb = graph.total_cost() if objective == "compute" else None
    return make_result(graph, sched, solver=SOLVER, status=Status.OPTIMAL if objective == "compute" else Status.FEASIBLE,
                       objective=objective, claimed=graph.total_cost() if objective == "compute" else ev.peak,
                       lower_bound=lb)
