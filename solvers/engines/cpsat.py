"""The one CP-SAT runner: parameters, workers, Ctrl-C, incumbents.

Every CP-SAT model of the project (the ordering model, the remat models) is solved through
:func:`solve_cpsat`. The search runs in a helper thread while the calling thread waits in
Python, so that Ctrl-C (SIGINT; CP-SAT's own handler is switched off) raises
KeyboardInterrupt in the calling thread: the search is then stopped, and the outcome says
``interrupted`` and keeps the solver, whose incumbent values remain readable.

Reference: OR-Tools CP-SAT, ``CpSolver.solve(model, callback)``; the parameters are
``SatParameters`` (max_time_in_seconds, num_workers, random_seed, log_search_progress).
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

__all__ = ["CpsatOutcome", "solve_cpsat", "resolve_workers"]


@dataclass
class CpsatOutcome:
    """What one CP-SAT solve ended with. ``status`` is CP-SAT's own verdict about the model
    (``optimal``, ``feasible``, ``infeasible``, ``unknown`` or ``invalid``); what it means for
    the asked problem is the caller's business. ``solver`` keeps the incumbent's values;
    ``bound`` is CP-SAT's best objective bound (a caller that proved a better one by other
    means, as ``proofs.solve_relaxation`` over its two phases, may raise it)."""
    status: str
    solver: object  # ortools.sat.python.cp_model.CpSolver
    wall_s: float
    interrupted: bool
    bound: float = float("nan")

    @property
    def has_solution(self) -> bool:
        return self.status in ("optimal", "feasible")


def resolve_workers(workers: int) -> int:
    """``workers`` >= 1 as given; 0 (or less) means one worker per CPU core."""
    return int(workers) if int(workers) >= 1 else max(1, os.cpu_count() or 1)


def solve_cpsat(model, *, time_limit: float, workers: int = 0, seed: int = 0, log: bool = False,
                params: dict | None = None, callback=None, name: str = "cp-sat") -> CpsatOutcome:
    """Solve ``model`` (a ``cp_model.CpModel``) within ``time_limit`` seconds.

    ``callback`` is an optional ``CpSolverSolutionCallback`` called on every incumbent;
    ``params`` sets further ``SatParameters`` fields by name (a list replaces a repeated
    field, e.g. ``subsolvers``). Returns a
    :class:`CpsatOutcome`; an exception inside the solve is re-raised here."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = max(0.01, float(time_limit))
    p.num_workers = resolve_workers(workers)
    if not -2 ** 31 <= int(seed) < 2 ** 31:
        from memsched.formulations import MemschedError

        raise MemschedError(f"{name}: random seed must be a 32-bit integer (0 to 2^31-1), got {seed}")
    p.random_seed = int(seed)
    p.log_search_progress = bool(log)
    for k, v in (params or {}).items():
        if isinstance(v, (list, tuple)):  # a repeated field (e.g. subsolvers): replaced, not assigned
            getattr(p, k).clear()
            getattr(p, k).extend(v)
        else:
            setattr(p, k, v)
    p.catch_sigint_signal = False
    out: dict = {}
    done = threading.Event()

    def run():
        try:
            out["code"] = solver.solve(model, callback) if callback is not None else solver.solve(model)
        except BaseException as e:  # pragma: no cover - handed to the caller's thread
            out["error"] = e
        finally:
            done.set()

    t0 = time.perf_counter()
    threading.Thread(target=run, name=name, daemon=True).start()
    interrupted = False
    try:
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupted = True
        solver.stop_search()
        while not done.wait(0.05):
            solver.stop_search()
    if "error" in out:
        raise out["error"]
    code = out.get("code", cp_model.UNKNOWN)
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
              cp_model.MODEL_INVALID: "invalid"}.get(code, "unknown")
    return CpsatOutcome(status, solver, time.perf_counter() - t0, interrupted, solver.BestObjectiveBound())
