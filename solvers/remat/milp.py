"""Solve the Checkmate stage MILP (memsched.formulations.remat_milp) with any Pyomo solver.

HiGHS by default (``highspy``); any other Pyomo solver by name. The model is built by
:func:`memsched.formulations.remat_milp.build_remat_milp`, solved here, decoded by
:func:`memsched.formulations.remat_milp.decode_milp`, and re-checked by the evaluator.
"""
from __future__ import annotations

import math

from memsched.formulations.remat_milp import MIP_SOLVERS, build_remat_milp, decode_milp
from memsched.formulations.graph import Graph
from memsched.formulations.schedule import COMPUTE, FREE, Schedule


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
        # prove optimality, not a 0.01 % gap (HiGHS' default mip_rel_gap is 1e-4)
        opt.highs_options = {"mip_rel_gap": 0.0, "mip_abs_gap": 1e-9}
        if warm_start is not None and set_warm_start(g, model, info, warm_start):
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
                           message=f"{mip_solver}: no solution in {time_limit:g} s ({tc})", params=params, wall_s=wall)
    sched = decode_milp(g, model, info)
    if objective == "compute":
        claimed = sum(g.cost[i] for i in sched.computes())
        lbv = None if lb is None else max(baseline, _round_bound(g, float(lb)))
        # HiGHS stops at a relative gap (mip_rel_gap): "optimal" only when the bound meets the value
        optimal = optimal and lbv is not None and math.isclose(lbv, claimed, rel_tol=1e-9, abs_tol=1e-9)
        return make_result(g, sched, solver=solver_name, status=Status.OPTIMAL if optimal else Status.FEASIBLE,
                           objective="compute", claimed=claimed, lower_bound=lbv, params=params, wall_s=wall,
                           extra={"model_compute": pyo.value(model.obj)})
    p_model = int(round(pyo.value(model.P))) * info["unit"] + info["const_bytes"]
    lbv = None if lb is None else int(math.ceil(float(lb) - 1e-6)) * info["unit"] + info["const_bytes"]
    if optimal and lbv is not None and lbv < p_model and p_model - lbv < info["unit"]:
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


def set_warm_start(g, model, info, sched) -> bool:
    """Give every variable of the stage MILP (R, S, F, M and P) the value of ``sched`` and
    return True when that assignment satisfies every constraint of the model; otherwise
    leave the values unset (None) and return False. Only schedules of the stage class
    (first computations in the model's order, each stage's recomputations in increasing
    position, nothing after the last stage) can be represented; the model may also count
    more memory than the evaluator (a tensor it can free only at a reader or producer of
    the stage), in which case a schedule within the budget can still be rejected."""
    import pyomo.environ as pyo

    pi = info["order"]
    n = g.n_ops
    pos = {v: k for k, v in enumerate(pi)}
    S_set, tens, ppos, cons_pos = info["S_set"], info["tens"], info["ppos"], info["cons_pos"]
    unit = info["unit"]
    keep_const = {j for j in g.input_idx if j in g.pinned_idx or j in g.output_idx}
    # 1. stages: R[t, i]
    R = {(t, i): 0 for t in range(n) for i in range(t + 1)}
    stage, last, seen = 0, -1, set()
    resident = set(j for j in g.input_idx)
    S = {}
    starts: dict[int, set] = {0: set(resident)}
    for kind, x in sched.events:
        if kind == COMPUTE:
            if stage >= n:
                return _clear(model)  # a computation after the last first computation
            k = pos[x]
            if k <= last or k > stage or (k < stage and x not in seen) or (k == stage and x in seen):
                return _clear(model)
            R[stage, k] = 1
            last = k
            resident.update(g.op_out[x])
            if k == stage:
                seen.add(x)
                stage += 1
                last = -1
                starts[stage] = set(resident)
        else:
            resident.discard(x)
        if stage < n and stage in starts and kind == FREE and last == -1:
            starts[stage].discard(x)  # frees before the stage's first computation
    if stage != n:
        return _clear(model)
    for (t, j) in S_set:
        S[t, j] = 1 if (j in starts.get(t, set()) and not (ppos[j] >= 0 and R.get((t, ppos[j]), 0))) else 0
    for j in tens:  # inputs: resident at the start (fixed to 1 in the model)
        if ppos[j] == -1:
            S[0, j] = 1

    # 2. frees: at the last position of the stage that touches j, unless retained
    F = {key: 0 for key in model.F}
    req_end = {j for j in tens if j in g.output_idx}
    for t in range(n):
        for j in tens:
            present = S.get((t, j), 0) or (ppos[j] >= 0 and ppos[j] <= t and R[t, ppos[j]])
            if not present:
                continue
            kept = S.get((t + 1, j), 0) if t + 1 < n else (j in req_end)
            if kept:
                continue
            spots = [k for k in set(cons_pos[j]) | ({ppos[j]} if ppos[j] >= 0 else set()) if k <= t and R[t, k]]
            if spots and (t, j, max(spots)) in F:
                F[t, j, max(spots)] = 1
    # 3. memory
    sz = {j: g.size[j] // unit for j in tens}
    out_units = [sum(g.size[j] for j in g.op_out[pi[k]]) // unit for k in range(n)]
    M = {}
    frees_at: dict = {}
    for (t, j, k), val in F.items():
        if val:
            frees_at.setdefault((t, k), []).append(j)
    for t in range(n):
        prev = sum(sz[j] * S.get((t, j), 0) for j in tens if (t, j) in S_set)
        for k in range(t + 1):
            M[t, k] = prev + out_units[k] * R[t, k] - sum(sz[j] for j in frees_at.get((t, k), ()))
            prev = M[t, k]
    def put(var, v):
        if not var.fixed:
            var.set_value(v)

    for (t, i), v in R.items():
        put(model.R[t, i], v)
    for key in model.S:
        put(model.S[key], S.get(key, 0))
    for key, v in F.items():
        put(model.F[key], v)
    for key, v in M.items():
        put(model.M[key], max(0, v))
    if hasattr(model, "P"):
        ws_units = [g.workspace[pi[k]] // unit for k in range(n)]
        need = max([0] + [(M[t, k - 1] if k else sum(sz[j] * S.get((t, j), 0) for j in tens if (t, j) in S_set))
                          + (out_units[k] + ws_units[k]) * R[t, k] for t in range(n) for k in range(t + 1)])
        init = sum(g.size[j] for j in g.input_idx if j not in keep_const) // unit
        model.P.set_value(max(need, init))
    for con in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body, exception=False)
        if body is None:
            return _clear(model)
        if (con.has_lb() and body < pyo.value(con.lower) - 1e-6) or (con.has_ub() and body > pyo.value(con.upper) + 1e-6):
            return _clear(model)
    return True


def _clear(model) -> bool:
    import pyomo.environ as pyo

    for v in model.component_data_objects(pyo.Var):
        if not v.fixed:
            v.set_value(None, skip_validation=True)
    return False
