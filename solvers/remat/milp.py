"""Solve the Checkmate stage MILP (memsched.formulations.remat_milp) with any Pyomo solver.

HiGHS by default (``highspy``); any other Pyomo solver by name. The model is built by
:func:`memsched.formulations.remat_milp.build_remat_milp`, solved here, decoded by
:func:`memsched.formulations.remat_milp.decode_milp`, and re-checked by the evaluator.
"""
from __future__ import annotations

import math

from memsched.formulations.remat_milp import MIP_SOLVERS, build_remat_milp, decode_milp
from memsched.formulations.graph import Graph
from memsched.formulations.schedule import COMPUTE, Schedule


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
    from memsched.solvers.remat.dispatch import local_infeasibility
    from memsched.solvers.result import Status, make_result

    g = graph
    t0 = time.perf_counter()
    solver_name = f"remat-milp[{mip_solver}]"
    params = {"mip_solver": mip_solver, "scope": "fixed order of first computations (the given order)"}
    _check_solver(mip_solver)
    if budget is not None:
        why = local_infeasibility(g, budget)
        if why:
            return make_result(g, None, solver=solver_name, status=Status.INFEASIBLE, objective=objective,
                               message=why, params=params)
    baseline = g.total_cost()
    compute_budget = (1 + eps) * baseline if objective == "peak" else None
    model, info = build_remat_milp(g, budget, caps, objective=objective, compute_budget=compute_budget)
    params["build_s"] = round(time.perf_counter() - t0, 3)
    params.update({k: info[k] for k in ("binaries", "continuous", "constraints")})
    # handing the model to the solver costs about as much as building it: keep it inside the limit
    build = time.perf_counter() - t0
    remaining = max(1.0, time_limit - 2.0 * build)
    lb = None
    name = mip_solver.lower()
    if name in ("highs", "appsi_highs"):
        from pyomo.contrib.appsi.solvers import Highs

        opt = Highs()
        if not opt.available():
            raise MemschedError("remat: MIP solver 'highs' is not available (pip install highspy)")
        opt.config.time_limit = remaining
        opt.config.stream_solver = bool(progress)
        opt.config.load_solution = False
        if warm_start is not None:
            _set_warm_start(g, model, info, warm_start)
            opt.config.warmstart = True
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
            msg = (f"no schedule that keeps the given order of first computations fits budget {budget}"
                   if objective == "compute" else f"no fixed-order schedule has compute <= {compute_budget:g}")
            return make_result(g, None, solver=solver_name, status=Status.INFEASIBLE, objective=objective,
                               message=msg + f" (proved by {mip_solver})", params=params, wall_s=wall)
        return make_result(g, None, solver=solver_name, status=Status.TIMEOUT, objective=objective,
                           message=f"{mip_solver}: no solution in {time_limit:g} s ({tc})", params=params, wall_s=wall)
    sched = decode_milp(g, model, info)
    if objective == "compute":
        claimed = sum(g.cost[i] for i in sched.computes())
        lbv = None if lb is None else max(baseline, float(lb))
        return make_result(g, sched, solver=solver_name, status=Status.OPTIMAL if optimal else Status.FEASIBLE,
                           objective="compute", claimed=claimed, lower_bound=lbv, params=params, wall_s=wall,
                           extra={"model_compute": pyo.value(model.obj)})
    p_model = int(round(pyo.value(model.P))) * info["unit"] + info["const_bytes"]
    lbv = None if lb is None else int(math.ceil(float(lb) - 1e-6)) * info["unit"] + info["const_bytes"]
    res = make_result(g, sched, solver=solver_name, status=Status.OPTIMAL if optimal else Status.FEASIBLE,
                      objective="peak", lower_bound=lbv, params=params, wall_s=wall, extra={"model_peak": p_model})
    assert res.peak <= p_model, "MILP decode exceeds the model's peak"
    return res


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


def _set_warm_start(g, model, info, sched):
    """Values for R and S from a schedule that keeps the given order of first
    computations (other schedules are ignored)."""
    pi = info["order"]
    n = g.n_ops
    pos = {v: k for k, v in enumerate(pi)}
    comps = sched.computes()
    seen = set()
    firsts = []
    for v in comps:
        if v not in seen:
            seen.add(v)
            firsts.append(v)
    if firsts != list(pi):
        return
    for (t, i) in model.R:
        if not model.R[t, i].fixed:
            model.R[t, i].set_value(0)
    for key in model.S:
        if not model.S[key].fixed:
            model.S[key].set_value(0)
    stage = -1
    resident = set(g.input_idx)
    done = set()
    for kind, x in sched.events:
        if kind == COMPUTE:
            if x not in done:
                stage = pos[x]
                done.add(x)
                # stage start: record retained tensors
                for j in resident:
                    if (stage, j) in info["S_set"] and not model.S[stage, j].fixed:
                        model.S[stage, j].set_value(1)
            elif stage >= 0 and pos[x] <= stage:
                # recomputation inside the current stage: it belongs to stage+1's prefix in Checkmate terms
                pass
            for j in g.op_out[x]:
                resident.add(j)
        else:
            resident.discard(x)
