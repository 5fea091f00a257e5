"""Rematerialization under a memory budget: the dispatcher and the CLI helpers.

Problem (docs/remat.md): given a graph, a memory budget ``B`` and per-operator
recompute caps ``c_v`` (v runs at most ``1 + c_v`` times), find a schedule of
least total compute whose peak is at most ``B`` (``objective="compute"``); or
the least peak whose compute is at most ``(1 + eps) x`` the no-recompute
baseline (``objective="peak"``).

Methods (one module each, one result type):

* ``cp``: the Moccasin-style CP-SAT interval model with a free order
  (formulations/remat_cpsat.py, driven by solvers/remat/cp.py), or the given order of
  first computations with ``order="given"``; exact within finite caps. Without a cap it
  solves a capped model (internal cap, raised while the capped model is infeasible and
  time is left) whose answers are claims about that capped class only.
* ``milp``: Checkmate's stage MILP over the given order (formulations/remat_milp.py),
  any Pyomo solver; exact in Checkmate's stage class (first computations in the
  given order, recomputations of a stage in given-order position), a class
  narrower than both ``order="free"`` and ``order="given"``.
* ``checkpoint-all``, ``chen-sqrt``, ``revolve``, ``dtr-greedy``: baselines
  (solvers/remat/).
* ``sp-knapsack``, ``width-dp``: special-class algorithms written elsewhere,
  dispatched lazily.

Budgets and caps are resolved in solvers/remat/budgets.py, local refutations live in
solvers/remat/infeasibility.py, warm starts in solvers/remat/warm_start.py; their names
are re-exported here for the callers that import them from this module.

Every schedule is re-checked by the evaluator (solvers.result.make_result) and
must satisfy ``peak <= B`` and the caps; an infeasible budget is a result with
status ``infeasible`` and the reason in ``message``, never an exception.

Claims (docs/claims.md). ``solve_remat`` answers the *asked* problem
(formulations/problems.py: budget, objective, caps as given, order scope).
Each method reports what it proved in its own class (``scope``,
``class_status``, ``class_lower_bound``); :func:`lift_claims` turns that into
``status`` and ``lower_bound`` for the asked problem: a proof carries over only
when the method's class is the asked problem; otherwise the status is
``feasible`` (a schedule), ``unknown`` or ``timeout`` (none), unless a bound
valid for the asked problem meets the schedule's value.
"""
from __future__ import annotations

import math
import sys
import time

from memsched.formulations import Graph, MemschedError
from memsched.formulations.problems import RematProblem, check_order_scope, first_computations_follow, \
    unique_topological_order
from memsched.solvers.remat.budgets import check_caps, effective_caps, given_peak, resolve_budget, resolve_caps
from memsched.solvers.remat.cp import DEFAULT_CP_CAP, INTERRUPTED, MAX_CP_CAP, solve_cp
from memsched.solvers.remat.infeasibility import (local_infeasibility, local_peak_bound, order_lower_bound,
                                                  pebbling_infeasibility, useful)
from memsched.solvers.remat.warm_start import candidate_orders
from memsched.solvers.result import SolveResult, SolverDisagreement, Status, bound_above, make_result, same_value

__all__ = ["METHODS", "resolve_budget", "resolve_caps", "solve_remat", "result_json",
           "pareto_sweep", "local_infeasibility", "pebbling_infeasibility", "check_caps",
           "DEFAULT_CP_CAP", "MAX_CP_CAP", "METHOD_SCOPE", "lift_claims", "asked_lower_bound",
           "given_peak", "order_lower_bound", "candidate_orders", "effective_caps", "local_peak_bound"]

METHODS = ("cp", "milp", "checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy", "sp-knapsack", "width-dp", "scale")

# The class each method searches (docs/claims.md); cp names its own (order, internal cap).
METHOD_SCOPE = {"milp": "given-order-stages", "width-dp": "given-order-stages", "sp-knapsack": "free",
                "checkpoint-all": "heuristic", "chen-sqrt": "heuristic", "revolve": "heuristic",
                "dtr-greedy": "heuristic"}


# ------------------------------------------------------------- dispatch
def solve_remat(graph: Graph, budget, method: str = "cp", cap=None, time_limit: float = 60.0,
                mip_solver: str = "highs", objective: str = "compute", eps: float = 0.0, seed: int = 0,
                progress: bool = False, workers: int = 1, order: str = "free") -> SolveResult:
    """Solve rematerialization with ``method`` (see module docstring).

    ``objective="compute"``: least compute with peak <= budget.
    ``objective="peak"``: least peak with compute <= (1 + eps) x baseline (the
    budget, if given, is an upper limit on the peak as well).
    ``cap``: extra computations per operator (None: unbounded).
    ``order``: "free" (any schedule) or "given" (first computations in the given order).
    ``status``/``lower_bound`` of the result refer to this asked problem; ``scope``,
    ``class_status`` and ``class_lower_bound`` to the class the method searched."""
    if method not in METHODS:
        raise MemschedError(f"remat: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if objective not in ("compute", "peak"):
        raise MemschedError(f"remat: objective must be 'compute' or 'peak', got {objective!r}")
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise MemschedError(f"remat: eps must be a non-negative number, got {eps!r}")
    if not (time_limit and time_limit > 0):
        raise MemschedError(f"remat: time limit must be positive, got {time_limit!r}")
    check_order_scope(order)
    B = resolve_budget(graph, budget) if (budget is not None or objective == "compute") else None
    caps = resolve_caps(graph, cap)
    problem = RematProblem(budget=B, objective=objective, eps=eps, caps=None if caps is None else tuple(caps),
                           order=order)
    t0 = time.perf_counter()
    params = {"budget": B, "cap": cap, "objective": objective, "time_limit": time_limit, "order": order}
    if objective == "peak":
        params["eps"] = eps
    if method in ("sp-knapsack", "width-dp"):
        import importlib

        mod = importlib.import_module("memsched.solvers.special.sp_knapsack" if method == "sp-knapsack" else "memsched.solvers.special.width_dp")
        res = mod.solve(graph, B, cap=cap, objective=objective, eps=eps, time_limit=time_limit)
    elif method == "cp":
        INTERRUPTED.clear()
        try:
            res = solve_cp(graph, B, caps, objective, eps, time_limit, seed, progress, workers, t0, order)
        except KeyboardInterrupt:  # Ctrl-C between phases of the driver: nothing to return yet
            INTERRUPTED.set()
            res = make_result(graph, None, solver="remat-cp", status=Status.TIMEOUT, objective=objective,
                              message="interrupted before a schedule within the budget was found",
                              params={"stop": "interrupted"})
        if INTERRUPTED.is_set() and res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIMEOUT):
            # an interrupted solve keeps its best schedule and bound, but never claims more
            res.status = Status.TIMEOUT
            res.message = ("interrupted; best schedule so far" if res.schedule is not None else "interrupted") \
                + (f" ({res.message})" if res.message else "")
    elif method == "scale":
        # free order, unbounded recomputation, least compute: its floor, its threshold bound and
        # its "optimal" (bound = compute) are proofs for exactly that problem (docs/remat-scale.md)
        if cap is not None or order != "free" or objective != "compute":
            raise MemschedError("remat: --method scale answers free order, unbounded recomputation, least compute "
                                "only (no --cap, --order free, --objective compute)")
        from memsched.solvers.remat.scale import solve_scale

        def say(text, c0=t0):
            print(f"  [scale] {time.perf_counter() - c0:7.2f}s  {text}", file=sys.stderr, flush=True)

        res = solve_scale(graph, B, time_limit=time_limit, progress=say if progress else None)
        res.scope = "free"
    elif method == "milp":
        from memsched.solvers.remat.milp import solve_remat_milp

        res = solve_remat_milp(graph, B, caps, objective=objective, eps=eps, time_limit=time_limit,
                               mip_solver=mip_solver, progress=progress)
    else:
        import importlib

        mod = importlib.import_module("memsched.solvers.remat." + method.replace("-", "_"))
        kw = {}
        if order == "given" and method == "dtr-greedy":  # keep the asked class: only the given order
            kw["orders"] = [graph.given_order()]
        res = mod.solve(graph, B, caps=caps, objective=objective, eps=eps, **kw)
    res.wall_s = time.perf_counter() - t0
    for k, v in params.items():
        res.params.setdefault(k, v)
    res.params.setdefault("method", method)
    if res.scope is None:
        res.scope = METHOD_SCOPE.get(method, "heuristic")
    _check_result(graph, res, B, caps, objective, eps)
    # a solve stopped by Ctrl-C computes no further bound for its claims (remembered ones count)
    lift_claims(graph, res, problem, stopped=method == "cp" and INTERRUPTED.is_set())
    anytime(res)
    return res


def anytime(res: SolveResult) -> SolveResult:
    """Anytime figures in ``res.extra`` (in place): ``time_to_first_s`` (the first schedule that
    answers the asked problem), ``time_to_best_s`` (the returned one), ``time_to_proof_s``
    (optimal or infeasible for the asked problem: the end of the solve) and ``gap``
    ((value - lower bound) / value, 0 when proven optimal). Times a method did not record are the wall time."""
    ex = res.extra
    has = res.schedule is not None
    wall = round(res.wall_s, 3)
    if not has:
        ex["time_to_first_s"] = ex["time_to_best_s"] = None
    else:
        if ex.get("time_to_best_s") is None:
            ex["time_to_best_s"] = wall
        if ex.get("time_to_first_s") is None or ex["time_to_first_s"] > ex["time_to_best_s"]:
            ex["time_to_first_s"] = ex["time_to_best_s"]
    ex["time_to_proof_s"] = wall if res.status in (Status.OPTIMAL, Status.INFEASIBLE) else None
    gap = None
    if has and res.status == Status.OPTIMAL:
        gap = 0.0
    elif has and res.lower_bound is not None and res.value:
        gap = max(0.0, (res.value - res.lower_bound) / res.value)
    ex["gap"] = None if gap is None else round(gap, 9)
    return res


def _check_result(graph, res, B, caps, objective, eps):
    """The guarantees every method must give; a failure is a bug (SolverDisagreement), not a user error."""
    if res.schedule is None:
        return

    def fail(msg):
        raise SolverDisagreement(f"{res.solver}: {msg}")

    if objective == "compute" and B is not None and res.peak > B:
        fail(f"schedule peak {res.peak} exceeds budget {B}")
    if objective == "peak":
        lim = (1 + eps) * graph.total_cost()
        if res.compute > lim * (1 + 1e-9) + 1e-9:
            fail(f"compute {res.compute} exceeds {lim}")
        if B is not None and res.peak > B:
            fail(f"schedule peak {res.peak} exceeds budget {B}")
    msg = check_caps(graph, res.schedule, caps)
    if msg is not None:
        fail(msg)
    for what, lb in (("lower bound", res.lower_bound), ("class lower bound", res.class_lower_bound)):
        if bound_above(lb, res.value, objective):
            fail(f"{what} {lb} is above the evaluated {objective} {res.value}")


# ---------------------------------------------------------------- claims
def covers(scope: str | None, problem: RematProblem, graph: Graph) -> bool:
    """True if a method that searched class ``scope`` searched the whole asked problem
    (so its proofs are proofs about the asked problem). docs/claims.md lists the scopes."""
    if scope is None or scope == "heuristic" or "capped:" in scope:
        return False
    if scope == "free":
        return problem.order == "free" or unique_topological_order(graph)
    if scope == "given-first-computations":
        return problem.order == "given" or unique_topological_order(graph)
    return False  # "given-order-stages" and anything else: narrower than both order scopes


def asked_lower_bound(graph: Graph, problem: RematProblem, stopped: bool = False):
    """A lower bound valid for every schedule of the asked problem (any order, any
    recomputation), from facts that need no search; None when there is none.

    Compute objective: every operator runs at least once (the baseline); when no plain
    order fits the budget (ordering lower bound > B), some operator with a positive cap
    runs twice (docs/remat.md, "Compute floor"); the moment-cut covering bound
    (solvers/remat/cut_bound.py, docs/remat.md "Moment-cut covering bound": its free-order
    variant for every problem, its given-order variant when the given order is asked; each
    bounded by ``CUT_TIME`` seconds; with ``stopped`` (after Ctrl-C) only those already
    computed and remembered for this graph, budget and caps). Peak objective: the initial memory and each
    operator's own need while it runs (inputs, outputs, workspace, always-resident bytes), and
    the final state (pinned inputs and required outputs)."""
    if problem.objective == "compute":
        lb = graph.total_cost()
        B = problem.budget
        if B is not None:
            olb = order_lower_bound(graph)
            if problem.order == "given":  # without recomputation the given class holds one order
                olb = max(olb, given_peak(graph))
            if olb > B:
                caps = problem.caps
                extra = [graph.cost[v] for v in range(graph.n_ops)
                         if (caps is None or caps[v] is None or caps[v] > 0) and useful(graph, v)]
                if extra:
                    lb += float(min(extra))
            for cb in _cut_bounds(graph, problem, stopped):
                if not cb.infeasible:
                    lb = max(lb, cb.lower_bound)
        return lb
    return local_peak_bound(graph)


#: seconds each moment-cut covering bound may take in the claims (remembered per graph and budget)
CUT_TIME = 5.0


def _cut_bounds(graph: Graph, problem: RematProblem, stopped: bool = False) -> list:
    """The moment-cut covering bounds that hold for ``problem`` (free order: always; given
    order: when asked), for its budget and caps."""
    from memsched.solvers.remat.cut_bound import cached_cut_cover_bound

    caps = None if problem.caps is None else list(problem.caps)
    orders = ("free", "given") if problem.order == "given" else ("free",)
    # after Ctrl-C (``stopped``) only the bounds already computed count (a weaker bound, never a
    # wrong one): computing one more would keep the user waiting up to CUT_TIME seconds per order
    got = [cached_cut_cover_bound(graph, problem.budget, caps, o, time_limit=CUT_TIME, remembered_only=stopped)
           for o in orders]
    return [cb for cb in got if cb is not None]


def _cut_infeasibility(graph: Graph, problem: RematProblem, stopped: bool = False) -> str | None:
    """The moment-cut covering bound's refutation of the budget, when it has one for ``problem``."""
    if problem.budget is None:
        return None
    for cb in _cut_bounds(graph, problem, stopped):
        if cb.infeasible:
            return cb.reason
    return None


def lift_claims(graph: Graph, res: SolveResult, problem: RematProblem, stopped: bool = False) -> SolveResult:
    """Turn a method's claims about its own class into claims about the asked problem (in place).

    ``class_status``/``class_lower_bound`` keep what the method proved in ``res.scope``;
    ``status``/``lower_bound`` become statements about ``problem``."""
    res.class_status = res.status
    res.class_lower_bound = res.lower_bound
    if res.scope == "heuristic" and res.status != Status.FEASIBLE:
        res.class_status = None  # a heuristic that found nothing proved nothing, not even about itself
    if res.schedule is not None and problem.order == "given" and not first_computations_follow(graph, res.schedule):
        # a schedule outside the asked class answers a different problem: keep it out of the claims
        res.extra["schedule_outside_asked_class"] = res.schedule.to_names(graph)
        res.message = ("its schedule does not keep the given order of first computations"
                       + (f"; {res.message}" if res.message else ""))
        res.schedule = res.evaluation = None
        res.peak = res.compute = None
        res.class_status = None
    exact = covers(res.scope, problem, graph)
    glb = asked_lower_bound(graph, problem, stopped)
    lb = res.lower_bound if exact else None
    if glb is not None and (lb is None or glb > lb):
        lb = glb
    value = res.value if res.schedule is not None else None
    if res.schedule is not None:
        if same_value(lb, value, problem.objective):
            status = Status.OPTIMAL  # a bound valid for the asked problem meets the value: certified
        elif exact and res.status == Status.OPTIMAL:
            # the method calls it optimal but no bound equals the value: not certified
            status = Status.FEASIBLE
            res.message = "solver reported optimal, but its bound does not meet the value" + \
                (f"; {res.message}" if res.message else "")
        elif res.status in (Status.TIMEOUT,):
            status = Status.TIMEOUT
        else:
            status = Status.FEASIBLE
    else:
        if exact and res.status == Status.INFEASIBLE:
            status = Status.INFEASIBLE
        else:
            why = None
            if problem.budget is not None:
                why = local_infeasibility(graph, problem.budget) or pebbling_infeasibility(graph, problem.budget) \
                    or _cut_infeasibility(graph, problem, stopped)
                if not why and res.status == Status.INFEASIBLE and res.params.get("refutes_asked_problem"):
                    why = res.message  # the low-budget refutation (docs/remat-low-budgets.md)
            if why:
                status = Status.INFEASIBLE
                res.message = why if res.status == Status.INFEASIBLE and res.message == why else \
                    f"{why}" + (f"; {res.message}" if res.message else "")
            elif res.status in (Status.TIMEOUT, Status.ERROR):
                status = res.status
            else:
                status = Status.UNKNOWN
        lb = lb if status != Status.INFEASIBLE else None
    res.status = status
    res.lower_bound = lb
    if bound_above(lb, value, problem.objective):
        raise SolverDisagreement(f"{res.solver}: lower bound {lb} for the asked problem is above the evaluated "
                                 f"{problem.objective} {value}")
    res.params.setdefault("asked", problem.describe())
    return res


# ---------------------------------------------------------- CLI helpers
def overhead_pct(compute, base: float):
    """Extra compute over the baseline in percent (None without a schedule). A zero baseline
    (every operator costs 0) has zero overhead: every schedule then computes 0."""
    if compute is None:
        return None
    if not base:
        return 0.0 if not compute else None
    return 100.0 * (compute - base) / base


def _ratio_text(ratio) -> str:
    return "-" if ratio is None else f"{ratio:.3f}"


def pareto_sweep(graph: Graph, budgets, method: str = "cp", cap=None, time_limit: float = 30.0,
                 progress: bool = False, **kw) -> list[dict]:
    """Solve at each budget (ratio or bytes); one row per budget."""
    rows = []
    P = given_peak(graph)
    base = graph.total_cost()
    for b in budgets:
        B = resolve_budget(graph, b)
        res = solve_remat(graph, b, method=method, cap=cap, time_limit=time_limit, **kw)
        rows.append({
            "budget_ratio": round(B / P, 6) if P else None, "budget": B, "status": res.status, "peak": res.peak,
            "compute": res.compute, "overhead_pct": overhead_pct(res.compute, base),
            "lower_bound": res.lower_bound, "scope": res.scope, "class_status": res.class_status,
            "class_lower_bound": res.class_lower_bound, "order": res.params.get("order"),
            "wall_s": round(res.wall_s, 3), "message": res.message,
        })
        if progress:
            r = rows[-1]
            print(f"  budget {B} ({_ratio_text(r['budget_ratio'])}): {r['status']}"
                  + ("" if r["overhead_pct"] is None else f", overhead {r['overhead_pct']:.3f} %") + f"  [{r['wall_s']} s]",
                  file=sys.stderr, flush=True)
    return rows


def result_json(graph: Graph, res: SolveResult) -> dict:
    base = graph.total_cost()
    d = {
        "status": res.status,
        "method": res.params.get("method", res.solver),
        "solver": res.solver,
        "objective": res.objective,
        "peak": res.peak,
        "compute": res.compute,
        "baseline_compute": base,
        "overhead_pct": None if (pct := overhead_pct(res.compute, base)) is None else round(pct, 6),
        "budget": res.params.get("budget"),
        "lower_bound": res.lower_bound,
        "order": res.params.get("order", "free"),
        "scope": res.scope,
        "class_status": res.class_status,
        "class_lower_bound": res.class_lower_bound,
        "wall_s": round(res.wall_s, 6),
        "schedule": res.schedule.to_names(graph) if res.schedule is not None else None,
        "recomputations": res.evaluation.recomputations if res.evaluation else None,
        "params": res.params,
    }
    if res.message:
        d["message"] = res.message
    for k, v in res.extra.items():
        d.setdefault(k, v)
    return d
