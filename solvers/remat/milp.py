"""Solve the Checkmate stage MILP (memsched.formulations.remat_milp) with any Pyomo solver.

HiGHS by default (``highspy``); any other Pyomo solver by name. The model is built by
:func:`memsched.formulations.remat_milp.build_remat_milp`, solved here, decoded by
:func:`memsched.formulations.remat_milp.decode_milp`, and re-checked by the evaluator.
"""
from __future__ import annotations

import math

from memsched.formulations.remat_milp import MIP_SOLVERS, BuildDeadline, build_remat_milp
from memsched.formulations.graph import Graph
from memsched.formulations.schedule import Schedule


# Handing a built Pyomo model to the solver (Pyomo's translation to HiGHS, or writing the
# LP/NL file) costs about this many times the build itself (measured 3.3x on
# random_layered n100; docs/remat.md). The build must leave room for it inside the limit.
HANDOVER_FACTOR = 4.0


def _time_option(name: str, limit: float) -> dict:
    name = name.lower()
    if "highs" in name:
        return {"time_limit": limit}
    return {"cbc": {"seconds": limit}, "glpk": {"tmlim": int(math.ceil(limit))}, "gurobi": {"TimeLimit": limit},
            "gurobi_direct": {"TimeLimit": limit}, "cplex": {"timelimit": limit}, "scip": {"limits/time": limit},
            "xpress": {"maxtime": int(math.ceil(limit))}}.get(name, {})


def solve_remat_milp(graph: Graph, budget, caps, *, objective="compute", eps=0.0, time_limit=60.0,
                     mip_solver="highs", progress=False, warm_start: Schedule | None = None):
    """Build, solve and decode; returns a SolveResult (see solvers/remat/dispatch.py)."""
    import time

    import pyomo.environ as pyo

    from memsched.formulations.errors import MemschedError
    from memsched.solvers.remat.infeasibility import local_infeasibility
    from memsched.solvers.result import SolverDisagreement, Status, make_result

    g = graph
    t0 = time.perf_counter()
    solver_name = f"remat-milp[{mip_solver}]"
    params = {"mip_solver": mip_solver,
              "scope": "Checkmate's stage class: first computations in the given order, each stage's "
                       "recomputations in given-order position"}
    _check_solver(mip_solver)
    if budget is not None:
        why = local_infeasibility(g, budget)
        if why:
            return make_result(g, None, solver=solver_name, status=Status.INFEASIBLE, objective=objective,
                               message=why, params=params)
    baseline = g.total_cost()
    compute_budget = (1 + eps) * baseline if objective == "peak" else None
    deadline = t0 + time_limit

    def out_of_time(why):
        params["stop"] = f"time limit ({time_limit:g} s) reached: {why}"
        return make_result(g, None, solver=solver_name, status=Status.TIMEOUT, objective=objective,
                           message=f"no solution in {time_limit:g} s: {why}", params=params,
                           wall_s=time.perf_counter() - t0)

    try:  # the build and the hand-over to the solver fit the limit, or nothing is solved
        enc = build_remat_milp(g, budget, caps, objective=objective, compute_budget=compute_budget,
                               deadline=t0 + time_limit / (1 + HANDOVER_FACTOR))
    except BuildDeadline as e:
        return out_of_time(f"{e.args[0]} ({time.perf_counter() - t0:.1f} s; handing the model to the solver "
                           f"would take about {HANDOVER_FACTOR:g}x as long again)")
    model = enc.model
    params["build_s"] = round(time.perf_counter() - t0, 3)
    params.update(enc.stats)
    lb = None
    name = mip_solver.lower()
    if name in ("highs", "appsi_highs"):
        from pyomo.contrib.appsi.solvers import Highs

        opt = Highs()
        if not opt.available():
            raise MemschedError("remat: MIP solver 'highs' is not available (pip install highspy)")
        th = time.perf_counter()
        opt.set_instance(model)  # Pyomo's translation, timed on its own
        params["handover_s"] = round(time.perf_counter() - th, 3)
        for k in ("check_for_new_or_removed_constraints", "check_for_new_or_removed_vars",
                  "check_for_new_or_removed_params", "check_for_new_objective", "update_constraints", "update_vars",
                  "update_params", "update_named_expressions"):
            setattr(opt.update_config, k, False)  # the instance is complete: solve() re-reads nothing
        remaining = deadline - time.perf_counter()
        if remaining < 0.2:
            return out_of_time(f"the model build ({params['build_s']:g} s) and its hand-over to HiGHS "
                               f"({params['handover_s']:g} s) used the time")
        opt.config.time_limit = remaining
        opt.config.stream_solver = bool(progress)
        opt.config.load_solution = False
        # prove optimality, not a 0.01 % gap (HiGHS' default mip_rel_gap is 1e-4)
        opt.highs_options = {"mip_rel_gap": 0.0, "mip_abs_gap": 1e-9}
        if warm_start is not None and enc.hint(warm_start):
            opt.config.warmstart = True
            params["warm_start"] = "accepted"
        res = opt.solve(model)
        tc = str(res.termination_condition).lower()
        has = res.best_feasible_objective is not None
        if has:
            res.solution_loader.load_vars()
        lb = res.best_objective_bound
        optimal = "optimal" in tc
        infeasible = "infeasible" in tc and not has
    else:
        opt = pyo.SolverFactory(mip_solver)
        try:
            ok = opt.available(exception_flag=False)
        except Exception:
            ok = False
        if not ok:
            raise MemschedError(f"remat: MIP solver {mip_solver!r} is not available to Pyomo; "
                                f"try one of {', '.join(MIP_SOLVERS)} that is installed")
        # the file written for the solver takes about HANDOVER_FACTOR x the build; the solver gets the rest
        remaining = deadline - time.perf_counter() - HANDOVER_FACTOR * params["build_s"]
        if remaining < 0.2:
            return out_of_time(f"the model build ({params['build_s']:g} s) leaves no time to hand it to {mip_solver}")
        r = opt.solve(model, tee=bool(progress), load_solutions=False, options=_time_option(name, remaining))
        tc = str(r.solver.termination_condition).lower()
        has = len(r.solution) > 0
        if has:
            model.solutions.load_from(r)
        try:
            lb = float(r.problem.lower_bound)
            if not math.isfinite(lb):
                lb = None
        except Exception:
            lb = None
        optimal = tc == "optimal"
        infeasible = "infeasible" in tc and not has
    wall = time.perf_counter() - t0
    if not has:
        if infeasible:
            msg = (f"no schedule of Checkmate's stage class (given order) fits budget {budget}"
                   if objective == "compute" else f"no schedule of the stage class has compute <= {compute_budget:g}")
            return make_result(g, None, solver=solver_name, status=Status.INFEASIBLE, objective=objective,
                               message=msg + f" (proved by {mip_solver})", params=params, wall_s=wall)
        return make_result(g, None, solver=solver_name, status=Status.TIMEOUT, objective=objective,
                           message=f"{mip_solver}: no solution after {wall:.1f} s (limit {time_limit:g} s; {tc})",
                           params=params, wall_s=wall)
    sched = enc.decode()
    if objective == "compute":
        claimed = sum(g.cost[i] for i in sched.computes())
        lbv = None if lb is None else max(baseline, _round_bound(g, float(lb)))
        # HiGHS stops at a relative gap (mip_rel_gap): "optimal" only when the bound meets the value
        optimal = optimal and lbv is not None and math.isclose(lbv, claimed, rel_tol=1e-9, abs_tol=1e-9)
        return make_result(g, sched, solver=solver_name, status=Status.OPTIMAL if optimal else Status.FEASIBLE,
                           objective="compute", claimed=claimed, lower_bound=lbv, params=params, wall_s=wall,
                           extra={"model_compute": pyo.value(model.obj)})
    p_model = int(round(pyo.value(model.P))) * enc.unit + enc.const_bytes
    lbv = None if lb is None else int(math.ceil(float(lb) - 1e-6)) * enc.unit + enc.const_bytes
    if optimal and lbv is not None and lbv < p_model and p_model - lbv < enc.unit:
        lbv = p_model
    res = make_result(g, sched, solver=solver_name, status=Status.OPTIMAL if optimal else Status.FEASIBLE,
                      objective="peak", lower_bound=lbv, params=params, wall_s=wall, extra={"model_peak": p_model})
    if res.peak > p_model:
        raise SolverDisagreement(f"{solver_name}: decoded schedule peak {res.peak} exceeds the model's peak {p_model}")
    if optimal and lbv != res.peak:
        res.status = Status.FEASIBLE  # certified only when the bound meets the evaluated value
    return res


def _integral_costs(g) -> bool:
    return all(float(c).is_integer() for c in g.cost)


def _round_bound(g, lb: float) -> float:
    """A MIP bound on total compute, rounded up to the next reachable value when costs are
    integers (the solver's bound carries a feasibility tolerance of about 1e-6)."""
    if _integral_costs(g):
        return float(math.ceil(lb - 1e-6))
    return lb


def _check_solver(mip_solver: str) -> None:
    import pyomo.environ as pyo

    from memsched.formulations.errors import MemschedError

    name = mip_solver.lower()
    if name in ("highs", "appsi_highs"):
        from pyomo.contrib.appsi.solvers import Highs

        ok = bool(Highs().available())
    else:
        try:
            ok = bool(pyo.SolverFactory(mip_solver).available(exception_flag=False))
        except Exception:
            ok = False
    if not ok:
        raise MemschedError(f"remat: MIP solver {mip_solver!r} is not available to Pyomo; "
                            f"try one of {', '.join(MIP_SOLVERS)} that is installed (highs comes with highspy)")
