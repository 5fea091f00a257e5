"""Baseline: a static greedy that evicts by DTR's score.

Walks an order (the given one, or the best no-recompute order found by the
ordering heuristics); before each computation it evicts resident tensors
until the operator's outputs and workspace fit the budget, choosing the least
``h = cost(producer) / (bytes x staleness)`` (Kirisame et al., "Dynamic
Tensor Rematerialization", ICLR 2021, with the producer's cost standing in
for the evicted neighbourhood); a missing input is recomputed on demand.
Tensors that are still needed are only evicted if their producer may still
run again under its cap. Dead tensors are freed immediately.

A heuristic: it may fail where a schedule exists (status ``infeasible`` with
the reason "greedy could not fit"), and its compute is an upper bound only.
Cost: O(events x tensors).
"""
from __future__ import annotations

from memsched.formulations import Schedule, evaluate
from memsched.solvers.remat.executor import ExecutionFailed, Executor
from memsched.solvers.result import Status, make_result

SOLVER = "remat-dtr-greedy"


def greedy_schedule(graph, budget, caps, order, score="dtr", deadline=None):
    """A schedule within ``budget`` and ``caps`` following ``order``, or None.
    ``score="belady"`` replaces staleness by the distance to the next use (offline).
    ``deadline``: a ``time.perf_counter()`` value; past it, None."""
    try:
        s = Executor(graph, order, budget=budget, caps=caps, evict=True, score=score, deadline=deadline).execute()
    except ExecutionFailed:
        return None
    ev = evaluate(graph, s)
    if budget is not None and ev.peak > budget:
        return None
    if caps is not None and any(c is not None and n > 1 + c for c, n in zip(caps, ev.compute_counts)):
        return None
    return s


def solve(graph, budget, *, caps=None, objective="compute", eps=0.0, orders=None):
    from memsched.solvers.remat.warm_start import candidate_orders

    if orders is None:
        orders = [o for _, o, _ in candidate_orders(graph)[:3]]
    if objective == "peak":
        return _solve_peak(graph, budget, caps, eps, orders)
    best = None
    for order in orders:
        s = greedy_schedule(graph, budget, caps, order)
        if s is not None:
            c = evaluate(graph, s).compute
            if best is None or c < best[0]:
                best = (c, s)
    if best is None:
        return make_result(graph, None, solver=SOLVER, status=Status.INFEASIBLE, objective="compute",
                           message=f"dtr-greedy could not fit budget {budget} (a heuristic: a schedule may still exist)")
    return make_result(graph, best[1], solver=SOLVER, status=Status.FEASIBLE, objective="compute", claimed=best[0],
                       lower_bound=graph.total_cost())


def _solve_peak(graph, budget, caps, eps, orders):
    """Least budget (bisection on bytes) at which the greedy stays within the compute limit."""
    limit = (1 + eps) * graph.total_cost()
    lo = max(graph.resident_at_start(), 0)
    ref = min(evaluate(graph, Schedule.from_order(graph, o)).peak for o in orders)
    hi = ref if budget is None else min(ref, budget)
    best = None

    def attempt(b):
        out = None
        for order in orders:
            s = greedy_schedule(graph, b, caps, order)
            if s is not None:
                ev = evaluate(graph, s)
                if ev.compute <= limit * (1 + 1e-12) and (out is None or ev.peak < out[0]):
                    out = (ev.peak, s)
        return out

    best = attempt(hi)
    if best is None:
        return make_result(graph, None, solver=SOLVER, status=Status.INFEASIBLE, objective="peak",
                           message="dtr-greedy found no schedule within the compute limit")
    hi = best[0]
    while lo < hi - 1:
        mid = (lo + hi) // 2
        r = attempt(mid)
        if r is None:
            lo = mid
        else:
            best, hi = r, r[0]
    return make_result(graph, best[1], solver=SOLVER, status=Status.FEASIBLE, objective="peak", claimed=best[0])
