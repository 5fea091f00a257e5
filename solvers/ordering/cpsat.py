"""Solve the CP-SAT ordering model (memsched.formulations.cpsat_order) through the one
CP-SAT runner (memsched.solvers.engines.cpsat)."""
from __future__ import annotations

import time
from typing import Callable

from memsched.formulations.cpsat_order import OrderModel, OrderSolution
from memsched.solvers.engines.cpsat import solve_cpsat

__all__ = ["solve_order_model"]


def solve_order_model(om: OrderModel, *, time_limit: float = 60.0, workers: int = 2, seed: int = 0,
                      log: bool = False, stop_at: int | None = None,
                      on_solution: Callable[[int, float, float], None] | None = None,
                      params: dict | None = None) -> OrderSolution:
    """Solve the model. ``stop_at``: stop as soon as an order of peak <= stop_at is found
    (a proven lower bound: nothing better exists). ``on_solution(peak, bound, wall_s)``
    is called on every improving order. A KeyboardInterrupt (or SIGINT caught by CP-SAT)
    ends the search and returns the best order found so far with ``interrupted`` set."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    n = om.graph.n_ops
    best: dict = {"order": None, "peak": None}

    class _CB(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self):
            pk = int(self.value(om.peak))
            if best["peak"] is None or pk < best["peak"]:
                vals = [self.value(x) for x in om.pos]
                best["order"] = sorted(range(n), key=vals.__getitem__)
                best["peak"] = pk
                if on_solution is not None:
                    on_solution(pk, self.best_objective_bound, time.perf_counter() - t0)
            if stop_at is not None and pk <= stop_at:
                best["stopped"] = True
                self.stop_search()

    run = solve_cpsat(om.model, time_limit=time_limit, workers=workers, seed=seed, log=log, params=params,
                      callback=_CB(), name="cpsat-order")
    solver, interrupted, wall = run.solver, run.interrupted, run.wall_s
    status = run.status if run.status != "invalid" else "unknown"
    bound = om.lower_bound
    if run.status == "infeasible":
        bound = om.upper_bound if om.upper_bound is not None else bound
    elif not interrupted:
        bound = max(bound, int(round(solver.best_objective_bound)))
    if best["peak"] is not None and run.status == "optimal":
        bound = max(bound, best["peak"])
    if best["peak"] is not None and best["peak"] == bound:
        status = "optimal"  # certified only when the bound meets the peak; a bound above it is
        # returned as is, and the caller (solvers/ordering/exact.py) reports the disagreement
    return OrderSolution(status, best["order"], best["peak"], bound, wall, interrupted,
                         {"branches": solver.num_branches, "conflicts": solver.num_conflicts,
                          "precedences": om.n_precedences, "symmetry": om.n_symmetry})
