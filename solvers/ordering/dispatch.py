"""The ordering problem: a topological order of the operators (no recomputation)
with the lowest peak memory.

:func:`solve_order` runs one heuristic from
:data:`memsched.solvers.ordering.heuristics.HEURISTICS` (or, with ``exact=True``, the
CP-SAT driver :func:`memsched.solvers.ordering.exact.solve_exact`) and returns a
:class:`~solvers.result.SolveResult` checked by the evaluator.
The command line (memsched.cli.order) renders it as a table.
"""
from __future__ import annotations

import time

from memsched.formulations import Graph, Schedule
from memsched.solvers.result import SolveResult, Status, make_result

from .heuristics import HEURISTICS, UnknownMethod, best_with_peaks

__all__ = ["solve_order", "METHODS"]

METHODS = tuple(HEURISTICS)


def solve_order(graph: Graph, method: str = "best", exact: bool = False, time_limit: float = 60.0,
                workers: int = 2, seed: int = 0, progress: bool = False) -> SolveResult:
    """Order ``graph``'s operators to minimize peak memory.

    ``method`` names a heuristic (given, dfs, bfs, lpmf, greedy, liu, best). Heuristics
    return status "feasible"; ``liu`` returns "optimal" (lower bound = its peak) when
    :func:`memsched.solvers.ordering.liu.liu_is_exact` holds. ``exact=True`` delegates to
    ``memsched.solvers.ordering.exact.solve_exact`` (CP-SAT) and ignores ``method``.
    Raises :class:`MemschedError` for an unknown method or ``liu`` on a non-tree."""
    if exact:
        from memsched.solvers.ordering.exact import solve_exact

        return solve_exact(graph, time_limit=time_limit, workers=workers, seed=seed, progress=progress)
    if method not in HEURISTICS:
        raise UnknownMethod(f"unknown ordering method {method!r}; valid: {', '.join(HEURISTICS)}")
    t0 = time.perf_counter()
    params = {"method": method}
    extra: dict = {}
    claimed = None
    lower = None
    status = Status.FEASIBLE
    if method == "best":
        chosen, order, peaks = best_with_peaks(graph)
        extra = {"chosen": chosen, "candidates": peaks}
        claimed = peaks[chosen]
        if "liu" in peaks and peaks["liu"] == claimed:
            from .liu import liu_is_exact

            if liu_is_exact(graph):
                status, lower = Status.OPTIMAL, claimed
    elif method == "liu":
        from .liu import liu_is_exact, liu_order, liu_peak_claim

        order = liu_order(graph)
        if liu_is_exact(graph):
            claimed = liu_peak_claim(graph)
            status, lower = Status.OPTIMAL, claimed
    else:
        order = HEURISTICS[method](graph)
    wall = time.perf_counter() - t0
    sched = Schedule.from_order(graph, order)
    res = make_result(graph, sched, solver=method, status=status, claimed=claimed, lower_bound=lower,
                      wall_s=wall, params=params, extra=extra)
    return res




