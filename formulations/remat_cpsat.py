"""Rematerialization as a CP-SAT model with O(n) interval variables (Moccasin-style).

Problem (docs/remat.md). Given a graph, a memory budget ``B`` and per-operator
recompute caps ``c_v`` (operator v may run at most ``1 + c_v`` times), find a
schedule with peak <= B of least total compute; or (``objective="peak"``) the
least peak whose compute is at most a given budget.

Encoding (after Bartan et al., "Moccasin", ICML 2023, but with a free order of
first computations instead of Checkmate's fixed stages):

* Time is a sequence of ``T = n + sum_v K_v - n`` unit *compute slots*, where
  ``K_v = 1 + c_v`` is the number of *occurrences* operator v may have
  (occurrence 0 is mandatory, the others optional with presence literals
  ``p[v][k]``, ``p[v][k] => p[v][k-1]``).
* Occurrence (v, k) runs at slot ``s[v][k]`` (a unit compute interval; all
  compute intervals are in one no-overlap constraint) and keeps each output
  tensor t in memory over the *retention interval* ``[s[v][k], e[t][k])``.
  The next occurrence starts only after every output of the previous one was
  freed (``s[v][k] >= e[t][k-1]``): recompute only after free.
* A computation of c at slot s needs each input tensor t (produced by u)
  resident: a Boolean ``x[u,k -> c,m]`` chooses the occurrence of u that
  serves occurrence m of c, with ``s[u][k] < s[c][m] < e[t][k]``.
* Memory: one cumulative constraint over all retention intervals (demand =
  tensor bytes), the unit compute intervals of operators with workspace
  (demand = workspace) and the retention of non-pinned graph inputs
  (``[0, e_j)``); the capacity is ``B`` minus the always-resident bytes
  (pinned inputs, inputs that are required outputs). While v runs at slot s,
  the load at s is exactly the evaluator's memory: everything resident
  (v's inputs included) + v's outputs + v's workspace.
* Present computations occupy slots ``0 .. m-1`` with no gaps (``m`` = number
  of computations), so the schedule decoded from the slots has exactly the
  model's memory profile.
* Objective: ``sum_{v,k} cost_v * p[v][k]`` (costs scaled to integers), or the
  cumulative capacity when minimizing peak.

Size: ``sum_v K_v`` occurrences, each with one start, one end per output and
one presence literal (O(n) variables for bounded caps), plus
``K_u * K_c`` assignment literals per edge. Unlike the stage formulation,
the order of first computations is free, so the optimum is never worse than
Checkmate's on the same caps.

Multi-output operators, workspace, pinned inputs and required outputs are all
supported.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce

from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["RematCP", "build_remat_cp", "cost_scale"]


def cost_scale(costs) -> tuple[int, list[int]]:
    """Integer costs for CP-SAT: ``(divisor, ints)`` with ``cost ~= ints * 1/divisor``.

    Integer costs are divided by their gcd (returned as a negative divisor
    meaning "multiply back by -divisor"); fractional costs are scaled by 10**6
    and rounded (the objective is then exact only up to that rounding; the
    solver drivers recompute the true cost from the schedule)."""
    if all(float(c).is_integer() for c in costs):
        ints = [int(c) for c in costs]
        g = reduce(math.gcd, ints, 0) or 1
        return -g, [c // g for c in ints]
    return 10**6, [int(round(c * 10**6)) for c in costs]


@dataclass
class RematCP:
    """A built model plus the variables needed to hint it and decode solutions."""

    model: object
    graph: Graph
    T: int
    K: list[int]
    pres: list[list]  # presence literals (occurrence 0: a constant-true literal)
    start: list[list]
    end: dict  # (tensor, k) -> IntVar
    input_end: dict  # input tensor -> IntVar
    assign: dict  # (u, k, c, m) -> BoolVar
    ncomp: object
    objective_expr: object
    capacity: object  # int (compute objective) or IntVar (peak objective)
    mem_unit: int  # bytes per model memory unit (gcd)
    const_bytes: int  # always-resident bytes (not in the cumulative)
    cost_div: int
    icost: list[int]
    objective: str
    lo: list[int] = field(default_factory=list)  # least slot of each first computation
    info: dict = field(default_factory=dict)

    # -------------------------------------------------------------- hinting
    def hint_from_schedule(self, schedule: Schedule) -> bool:
        """Add a solution hint from a valid schedule; False if it does not fit the model
        (more computations of some operator than its occurrences allow)."""
        g = self.graph
        comps = schedule.computes()
        counts = [0] * g.n_ops
        for i in comps:
            counts[i] += 1
        if any(counts[i] > self.K[i] for i in range(g.n_ops)) or len(comps) > self.T:
            return False
        occ_now = [-1] * g.n_ops
        s_val: dict = {}
        e_val: dict = {}
        in_end: dict = {}
        x_val: dict = {}
        slot = 0
        for kind, x in schedule.events:
            if kind == COMPUTE:
                occ_now[x] += 1
                k = occ_now[x]
                s_val[(x, k)] = slot
                for j in g.op_in[x]:
                    u = g.producer[j]
                    if u != -1:
                        x_val[(u, occ_now[u], x, k)] = 1
                slot += 1
            else:  # FREE
                u = g.producer[x]
                if u == -1:
                    in_end[x] = max(slot, 1)
                else:
                    e_val[(x, occ_now[u])] = slot
        m = slot
        md = self.model
        md.ClearHints()
        for v in range(g.n_ops):
            for k in range(self.K[v]):
                present = (v, k) in s_val
                if k > 0:
                    md.AddHint(self.pres[v][k], present)
                sv = s_val.get((v, k), self.lo[v] + k)
                md.AddHint(self.start[v][k], sv)
                for j in g.op_out[v]:
                    md.AddHint(self.end[(j, k)], e_val.get((j, k), self.T) if present else sv + 1)
        for j, var in self.input_end.items():
            md.AddHint(var, in_end.get(j, self.T))
        for key, var in self.assign.items():
            md.AddHint(var, x_val.get(key, 0))
        md.AddHint(self.ncomp, m)
        return True

    # -------------------------------------------------------------- decoding
    def decode(self, value, boolean) -> Schedule:
        """The schedule of a solution (``value``/``boolean`` are the solver's accessors)."""
        g = self.graph
        slots: dict[int, tuple[int, int]] = {}
        for v in range(g.n_ops):
            for k in range(self.K[v]):
                if k == 0 or boolean(self.pres[v][k]):
                    slots[value(self.start[v][k])] = (v, k)
        m = len(slots)
        free_at: dict[int, list[int]] = {}
        keep = g.pinned_idx | g.output_idx
        events: list[tuple[int, int]] = []
        for j, var in self.input_end.items():
            free_at.setdefault(min(value(var), m) - 1, []).append(j)
        for j in g.input_idx:
            if j not in keep and j not in self.input_end:
                events.append((FREE, j))
        for t in sorted(slots):
            v, k = slots[t]
            for j in g.op_out[v]:
                if j in g.output_idx and (k + 1 >= self.K[v] or not boolean(self.pres[v][k + 1])):
                    continue  # final copy of a required output stays
                free_at.setdefault(min(value(self.end[(j, k)]), m) - 1, []).append(j)
        for t in range(m):
            v, _k = slots[t]
            events.append((COMPUTE, v))
            for j in sorted(free_at.get(t, ())):
                events.append((FREE, j))
        return Schedule(tuple(events))


def build_remat_cp(graph: Graph, budget: int | None, caps: list[int], *, objective: str = "compute",
                   compute_budget: float | None = None, fix_order: list[int] | None = None,
                   prune_useless: bool = True) -> RematCP:
    """Build the model. ``budget`` (bytes) bounds memory for ``objective="compute"``;
    for ``objective="peak"`` the capacity is a variable (upper-bounded by ``budget``
    when given) and ``compute_budget`` bounds total compute. ``fix_order`` (operator
    indices) fixes the order of first computations, as Checkmate and Moccasin do
    (with every operator listed the model is exactly the class "first computations
    in this order"; its slots are then tightened: the i-th first computation has at
    least i computations before it and at most i + the extra occurrences of the
    operators before it). ``prune_useless`` adds the dominance rule that every extra
    occurrence serves some computation or is the final copy of a required output
    (dropping one that does neither keeps a schedule valid, lowers memory, and does
    not raise compute; docs/remat.md), so optimal values and infeasibility are unchanged."""
    from ortools.sat.python import cp_model

    g = graph
    n = g.n_ops
    md = cp_model.CpModel()
    succ, pred = g.op_succ(), g.op_pred()
    full_order = fix_order is not None and sorted(fix_order) == list(range(n))
    # operators whose outputs nobody reads and nobody requires never need a second run
    K = []
    for v in range(n):
        useful = any(g.consumers[j] or j in g.output_idx for j in g.op_out[v])
        K.append(1 + (max(0, int(caps[v])) if useful else 0))
    T = sum(K)
    # ancestor / descendant counts tighten the first-computation slots
    topo = g.topological_order()
    anc = [0] * n
    anc_sets: list[set] = [set() for _ in range(n)]
    for v in topo:
        for u in pred[v]:
            anc_sets[v] |= anc_sets[u]
            anc_sets[v].add(u)
        anc[v] = len(anc_sets[v])
    desc_sets: list[set] = [set() for _ in range(n)]
    for v in reversed(topo):
        for w in succ[v]:
            desc_sets[v] |= desc_sets[w]
            desc_sets[v].add(w)
    desc = [len(d) for d in desc_sets]
    del anc_sets, desc_sets

    # memory units
    const_bytes = g.always_resident()
    var_sizes = [g.size[j] for j in range(g.n_tensors)] + [w for w in g.workspace]
    unit = reduce(math.gcd, [s for s in var_sizes if s > 0], 0) or 1
    sz = [s // unit for s in g.size]
    ws = [w // unit for w in g.workspace]
    total_units = sum(sz) * max(K) + max(ws + [0])

    true_lit = md.NewConstant(1)
    pres: list[list] = []
    start: list[list] = []
    end: dict = {}
    comp_iv, comp_dem = [], []
    ret_iv, ret_dem = [], []
    ncomp = md.NewIntVar(n, T, "ncomp")
    # a full order of first computations: the i-th has >= i computations before it, and
    # before it only the operators first computed earlier can have run again
    pos_lo, pos_hi = [0] * n, [T - 1] * n
    if full_order:
        extra_before = 0
        for i, v in enumerate(fix_order):
            pos_lo[v], pos_hi[v] = i, i + extra_before
            extra_before += K[v] - 1
    for v in range(n):
        pv, sv = [], []
        lo, hi = max(anc[v], pos_lo[v]), n - 1 - desc[v]
        anc[v] = lo
        for k in range(K[v]):
            p = true_lit if k == 0 else md.NewBoolVar(f"p_{v}_{k}")
            if k == 0:
                s = md.NewIntVar(lo, max(lo, min(hi + (T - n), T - 1, pos_hi[v])), f"s_{v}_0")
            else:
                s = md.NewIntVar(lo + k, T - 1, f"s_{v}_{k}")
            pv.append(p)
            sv.append(s)
            civ = (md.NewIntervalVar(s, 1, s + 1, f"c_{v}_{k}") if k == 0
                   else md.NewOptionalFixedSizeIntervalVar(s, 1, p, f"c_{v}_{k}"))
            comp_iv.append(civ)
            if ws[v]:
                comp_dem.append((civ, ws[v]))
            # gapless slots: every present computation lies before ncomp
            md.Add(s < ncomp).OnlyEnforceIf(p)
            for j in g.op_out[v]:
                e = md.NewIntVar(lo + k + 1, T, f"e_{j}_{k}")
                end[(j, k)] = e
                ln = md.NewIntVar(1, T, f"l_{j}_{k}")
                if k == 0:
                    iv = md.NewIntervalVar(s, ln, e, f"r_{j}_{k}")
                else:
                    iv = md.NewOptionalIntervalVar(s, ln, e, p, f"r_{j}_{k}")
                if sz[j]:
                    ret_iv.append((iv, sz[j]))
                md.Add(e >= s + 1)
                if j in g.output_idx and k + 1 == K[v]:
                    md.Add(e == T).OnlyEnforceIf(p)
                if k > 0:
                    md.Add(s >= end[(j, k - 1)]).OnlyEnforceIf(p)
            if k > 0:
                md.AddImplication(p, pv[k - 1])
                # absent occurrences are pinned to one value (no symmetric search)
                md.Add(s == lo + k).OnlyEnforceIf(p.Not())
                for j in g.op_out[v]:
                    md.Add(end[(j, k)] == lo + k + 1).OnlyEnforceIf(p.Not())
                md.Add(s >= sv[k - 1] + 1).OnlyEnforceIf(p)
        pres.append(pv)
        start.append(sv)
    # required outputs: the final present copy stays to the end
    for v in range(n):
        for j in g.op_out[v]:
            if j not in g.output_idx:
                continue
            for k in range(K[v] - 1):
                md.Add(end[(j, k)] == T).OnlyEnforceIf([pres[v][k], pres[v][k + 1].Not()])
    if fix_order is not None:
        for a, b in zip(fix_order, fix_order[1:]):
            md.Add(start[a][0] + 1 <= start[b][0])
    md.Add(ncomp == sum(pres[v][k] for v in range(n) for k in range(1, K[v])) + n)
    md.AddNoOverlap(comp_iv)

    # graph inputs that are freed after their last use
    input_end: dict = {}
    for j in g.input_idx:
        if j in g.pinned_idx or j in g.output_idx or not g.consumers[j]:
            continue
        e = md.NewIntVar(1, T, f"in_{j}")
        input_end[j] = e
        if sz[j]:
            ret_iv.append((md.NewIntervalVar(0, e, e, f"ri_{j}"), sz[j]))
        for c in g.consumers[j]:
            for m in range(K[c]):
                md.Add(e >= start[c][m] + 1).OnlyEnforceIf(pres[c][m])

    # data dependencies: some occurrence of the producer serves every computation
    assign: dict = {}
    for c in range(n):
        for u in pred[c]:
            for m in range(K[c]):
                lits = []
                for k in range(K[u]):
                    x = md.NewBoolVar(f"x_{u}_{k}_{c}_{m}")
                    assign[(u, k, c, m)] = x
                    lits.append(x)
                    md.AddImplication(x, pres[u][k])
                    md.Add(start[u][k] + 1 <= start[c][m]).OnlyEnforceIf(x)
                    for j in g.op_out[u]:
                        if c in g.consumers[j]:
                            md.Add(end[(j, k)] >= start[c][m] + 1).OnlyEnforceIf(x)
                md.AddBoolOr(lits).OnlyEnforceIf(pres[c][m])
                if m == 0:
                    md.Add(start[u][0] + 1 <= start[c][0])
    if prune_useless:
        # dominance: an extra occurrence serves a computation or is a required output's final copy
        serves: dict = {}
        for (u, k, _c, _m), x in assign.items():
            serves.setdefault((u, k), []).append(x)
        for v in range(n):
            if any(j in g.output_idx for j in g.op_out[v]):
                continue
            for k in range(1, K[v]):
                md.AddBoolOr(serves.get((v, k), [])).OnlyEnforceIf(pres[v][k])

    # memory
    initial_units = sum(sz[j] for j in g.input_idx if j not in g.pinned_idx and j not in g.output_idx)
    demands = ret_iv + comp_dem
    if objective == "compute":
        if budget is None:
            from .errors import MemschedError

            raise MemschedError("remat cp: objective 'compute' needs a memory budget")
        cap_units = (budget - const_bytes) // unit
        capacity = cap_units
    else:
        hi_units = total_units if budget is None else max(0, (budget - const_bytes) // unit)
        capacity = md.NewIntVar(0, max(hi_units, 0), "peak")
        md.Add(capacity >= initial_units)
    md.AddCumulative([iv for iv, _ in demands], [d for _, d in demands], capacity)

    div, icost = cost_scale(g.cost)
    obj = sum(icost[v] * pres[v][k] for v in range(n) for k in range(1, K[v])) + sum(icost)
    if objective == "compute":
        md.Minimize(obj)
    else:
        if compute_budget is not None:
            lim = compute_budget / -div if div < 0 else compute_budget * div
            md.Add(obj <= int(math.floor(lim + 1e-9)))
        md.Minimize(capacity)
    info = {"occurrences": T, "slots": T, "assign_literals": len(assign), "intervals": len(comp_iv) + len(ret_iv),
            "mem_unit": unit}
    return RematCP(model=md, graph=g, T=T, K=K, pres=pres, start=start, end=end, input_end=input_end,
                   assign=assign, ncomp=ncomp, objective_expr=obj, capacity=capacity, mem_unit=unit,
                   const_bytes=const_bytes, cost_div=div, icost=icost, objective=objective, lo=anc, info=info)
