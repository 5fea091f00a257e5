"""Rematerialization as a MILP over stages of a fixed order (Checkmate).

Reference: P. Jain, A. Jain, A. Nrusimha, A. Gholami, P. Abbeel, K. Keutzer,
I. Stoica, J. Gonzalez, "Checkmate: Breaking the Memory Wall with Optimal
Tensor Rematerialization", MLSys 2020 (the "stage" formulation, Sec. 4).

Let ``pi = (o_0, ..., o_{n-1})`` be the given order. Stage ``t`` ends with the
first computation of ``o_t``; inside a stage, operators run in the order of
``pi``. Variables (all indices are positions in ``pi``):

* ``R[t,i]`` (binary, i <= t): ``o_i`` is computed in stage t; ``R[t,t] = 1``.
* ``S[t,j]`` (binary): tensor j is resident when stage t starts (j produced by
  an operator of position < t, or a non-pinned graph input).
* ``F[t,j,k]`` (continuous in [0,1], k a consumer of j or its producer):
  j is freed right after position k of stage t. Upper bounds make it 1 only
  when that is allowed: ``F <= R[t,k]``, ``F <= 1 - S[t+1,j]``,
  ``F <= 1 - R[t,c]`` for every later consumer c of j in the stage.
* ``M[t,k]`` (continuous): resident bytes after position k of stage t.

Constraints: a computation needs its inputs (``R[t,c] <= S[t,j] + R[t,p(j)]``),
retention needs presence (``S[t+1,j] <= S[t,j] + R[t,p(j)]``), recompute only
after free (``R[t,p(j)] + S[t,j] <= 1``), caps (``sum_t R[t,i] <= 1 + c_i``),
required outputs resident at the end, and memory: while ``o_k`` runs in
stage t, ``M[t,k-1] + R[t,k] * (out_k + ws_k) <= B`` with
``M[t,k] = M[t,k-1] + R[t,k] out_k - sum_j size_j F[t,j,k]``.

What it can express: any schedule whose *first* computations follow ``pi``,
with any recomputations in between (at most one computation of each operator
per stage), multi-output operators, workspace, pinned inputs, required
outputs, per-operator caps (unbounded caps are exact: at most n runs each).
What it cannot: a different order of first computations (the main
limitation: the CP model of formulations/remat_cpsat.py lifts it), or two
computations of one operator within one stage (never useful: the second
could reuse the first's outputs only if they were kept). The memory it
accounts is an upper bound of the evaluator's (a tensor kept across a stage
that does not use it counts until the stage ends); the decoded schedule frees
every tensor right after its last use in the stage, so its evaluated peak is
at most the model's and its compute equals the model's objective exactly.

Size: O(n^2) binaries R and S, O(n x edges) continuous F.
"""
from __future__ import annotations

import math
from functools import reduce

from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["build_remat_milp", "decode_milp", "solve_remat_milp", "MIP_SOLVERS"]

MIP_SOLVERS = ("highs", "appsi_highs", "cbc", "glpk", "gurobi", "cplex", "scip", "xpress")


def build_remat_milp(graph: Graph, budget: int | None, caps: list[int | None], *, objective: str = "compute",
                     compute_budget: float | None = None, order: list[int] | None = None):
    """Build the Pyomo model; returns (model, info)."""
    import pyomo.environ as pyo

    g = graph
    n = g.n_ops
    pi = list(order) if order is not None else g.given_order()
    pos = [0] * n
    for k, v in enumerate(pi):
        pos[v] = k
    keep_const = {j for j in g.input_idx if j in g.pinned_idx or j in g.output_idx}
    const_bytes = sum(g.size[j] for j in keep_const)
    # tensors modelled: produced ones, and consumed free-able inputs
    tens = [j for j in range(g.n_tensors)
            if (g.producer[j] != -1) or (j not in keep_const and g.consumers[j])]
    ppos = {j: (pos[g.producer[j]] if g.producer[j] != -1 else -1) for j in tens}
    cons_pos = {j: sorted(pos[c] for c in g.consumers[j]) for j in tens}
    unit = reduce(math.gcd, [s for s in g.size + g.workspace if s > 0], 0) or 1
    sz = {j: g.size[j] // unit for j in tens}
    out_units = [sum(g.size[j] for j in g.op_out[pi[k]]) // unit for k in range(n)]
    ws_units = [g.workspace[pi[k]] // unit for k in range(n)]

    m = pyo.ConcreteModel(name="checkmate-stage")
    R_idx = [(t, i) for t in range(n) for i in range(t + 1)]
    # S[t,j]: stage t >= 1 and producer position < t; inputs from stage 0
    S_idx = [(t, j) for j in tens for t in range(max(ppos[j] + 1, 0), n)]
    m.R = pyo.Var(R_idx, domain=pyo.Binary)
    m.S = pyo.Var(S_idx, domain=pyo.Binary)
    S_set = set(S_idx)
    F_idx = []
    for j in tens:
        spots = sorted(set(cons_pos[j]) | ({ppos[j]} if ppos[j] >= 0 else set()))
        for t in range(max(ppos[j], 0), n):
            for k in spots:
                if k <= t:
                    F_idx.append((t, j, k))
    m.F = pyo.Var(F_idx, bounds=(0, 1))
    m.M = pyo.Var(R_idx, bounds=(0, None))
    m.c = pyo.ConstraintList()
    c = m.c
    R, S, F, M = m.R, m.S, m.F, m.M

    def Sv(t, j):
        return S[t, j] if (t, j) in S_set else 0

    def Rp(t, j):  # R of j's producer in stage t (0 for inputs / not yet available)
        p = ppos[j]
        return R[t, p] if 0 <= p <= t else 0

    for t in range(n):
        R[t, t].fix(1)
    for j in tens:
        if ppos[j] == -1:
            S[0, j].fix(1)
    # dependencies
    for t in range(n):
        for k in range(t + 1):
            v = pi[k]
            for j in g.op_in[v]:
                if j in keep_const:
                    continue
                c.add(R[t, k] <= Sv(t, j) + Rp(t, j))
    # retention and recompute-after-free
    for j in tens:
        for t in range(max(ppos[j] + 1, 0), n - 1):
            c.add(S[t + 1, j] <= Sv(t, j) + Rp(t, j))
        if ppos[j] >= 0:
            for t in range(ppos[j] + 1, n):
                c.add(R[t, ppos[j]] + S[t, j] <= 1)
    # required outputs at the end
    req_end = set(j for j in tens if j in g.output_idx)
    for j in req_end:
        c.add(Sv(n - 1, j) + Rp(n - 1, j) >= 1)
    # caps
    for i in range(n):
        cap = caps[pi[i]] if caps is not None else None
        if cap is not None and cap < n - 1 - i:
            c.add(sum(R[t, i] for t in range(i, n)) <= 1 + cap)
    # frees: F[t,j,k] <= R[t,k]; <= 1 - S[t+1,j]; <= 1 - R[t,c'] for later consumers c' <= t
    for (t, j, k) in F_idx:
        c.add(F[t, j, k] <= R[t, k])
        if t + 1 < n:
            if (t + 1, j) in S_set:
                c.add(F[t, j, k] <= 1 - S[t + 1, j])
        elif j in req_end:
            F[t, j, k].fix(0)
        for q in cons_pos[j]:
            if k < q <= t:
                c.add(F[t, j, k] <= 1 - R[t, q])
    # memory
    frees_at: dict = {}
    for (t, j, k) in F_idx:
        frees_at.setdefault((t, k), []).append(j)
    cap_expr = None
    if objective == "compute":
        cap_units = (budget - const_bytes) // unit
        cap_expr = cap_units
    else:
        m.P = pyo.Var(bounds=(0, None))
        cap_expr = m.P
        if budget is not None:
            c.add(m.P <= (budget - const_bytes) // unit)
        c.add(m.P >= sum(sz[j] for j in tens if ppos[j] == -1))
    for t in range(n):
        start = sum(sz[j] * S[t, j] for j in tens if (t, j) in S_set)
        prev = start
        for k in range(t + 1):
            c.add(prev + (out_units[k] + ws_units[k]) * R[t, k] <= cap_expr)
            c.add(M[t, k] == prev + out_units[k] * R[t, k] - sum(sz[j] * F[t, j, k] for j in frees_at.get((t, k), ())))
            prev = M[t, k]
    cost = [g.cost[pi[i]] for i in range(n)]
    compute_expr = sum(cost[i] * R[t, i] for (t, i) in R_idx)
    if objective == "compute":
        m.obj = pyo.Objective(expr=compute_expr, sense=pyo.minimize)
    else:
        if compute_budget is not None:
            c.add(compute_expr <= compute_budget)
        m.obj = pyo.Objective(expr=m.P, sense=pyo.minimize)
    info = {"order": pi, "tens": tens, "ppos": ppos, "cons_pos": cons_pos, "unit": unit, "const_bytes": const_bytes,
            "S_set": S_set, "binaries": len(R_idx) + len(S_idx), "continuous": len(F_idx) + len(R_idx),
            "constraints": len(c)}
    return m, info


def decode_milp(graph: Graph, model, info) -> Schedule:
    """The schedule of the MILP solution: stage by stage, computations in order,
    every tensor freed right after its last use within the stage unless retained."""
    g = graph
    n = g.n_ops
    pi = info["order"]
    S_set = info["S_set"]
    R = {(t, i): model.R[t, i].value is not None and model.R[t, i].value > 0.5 for t in range(n) for i in range(t + 1)}

    def Sv(t, j):
        return (t, j) in S_set and model.S[t, j].value is not None and model.S[t, j].value > 0.5

    keep = g.pinned_idx | g.output_idx
    resident = bytearray(g.n_tensors)
    events: list[tuple[int, int]] = []
    for j in g.input_idx:
        resident[j] = 1
        if j not in keep and not g.consumers[j]:
            events.append((FREE, j))
            resident[j] = 0
    posv = {v: k for k, v in enumerate(pi)}
    for t in range(n):
        comp = [k for k in range(t + 1) if R[(t, k)]]
        # last position in this stage at which each tensor is read
        last_use: dict[int, int] = {}
        for k in comp:
            for j in g.op_in[pi[k]]:
                last_use[j] = k

        def retained(j):
            if t + 1 < n:
                return Sv(t + 1, j)
            return j in g.output_idx

        # tensors not read in this stage and not retained: free at the stage start
        for j in range(g.n_tensors):
            if resident[j] and j not in g.pinned_idx and j not in last_use and not retained(j) \
                    and not (g.producer[j] != -1 and R.get((t, posv[g.producer[j]]), False)):
                if j in g.input_idx and j in g.output_idx:
                    continue
                events.append((FREE, j))
                resident[j] = 0
        for k in comp:
            v = pi[k]
            events.append((COMPUTE, v))
            for j in g.op_out[v]:
                resident[j] = 1
            for j in list(g.op_in[v]) + list(g.op_out[v]):
                if not resident[j] or j in g.pinned_idx or (j in g.input_idx and j in g.output_idx):
                    continue
                if last_use.get(j, -1) <= k and not retained(j):
                    events.append((FREE, j))
                    resident[j] = 0
    return Schedule(tuple(events))


def _time_option(name: str, limit: float) -> dict:
    name = name.lower()
    if "highs" in name:
        return {"time_limit": limit}
    return {"cbc": {"seconds": limit}, "glpk": {"tmlim": int(math.ceil(limit))}, "gurobi": {"TimeLimit": limit},
            "gurobi_direct": {"TimeLimit": limit}, "cplex": {"timelimit": limit}, "scip": {"limits/time": limit},
            "xpress": {"maxtime": int(math.ceil(limit))}}.get(name, {})


def solve_remat_milp(graph: Graph, budget, caps, *, objective="compute", eps=0.0, time_limit=60.0,
                     mip_solver="highs", progress=False, warm_start: Schedule | None = None):
    """Build, solve and decode; returns a SolveResult (see solvers/remat.py)."""
    import time

    import pyomo.environ as pyo

    from formulations.errors import MemschedError
    from solvers.remat import local_infeasibility
    from solvers.result import Status, make_result

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

    from formulations.errors import MemschedError

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
