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


from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["build_remat_milp", "decode_milp", "MIP_SOLVERS"]

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
    unit = g.memory_unit()
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
        # the evaluator's peak includes the initial state: every graph input is resident
        # before the first event, read or not (an unread input is freed only afterwards)
        c.add(m.P >= sum(g.size[j] for j in g.input_idx if j not in keep_const) // unit)
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








