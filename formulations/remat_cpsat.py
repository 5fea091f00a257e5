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

import bisect
import math
from dataclasses import dataclass, field
from functools import reduce

from .errors import MemschedError
from .graph import Graph
from .schedule import COMPUTE, FREE, Schedule

__all__ = ["RematCP", "build_remat_cp", "cost_scale", "occurrence_counts"]


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
    # stage_class=True: the time of every computation is a stage event (module docstring)
    stage_class: bool = False
    absent: list = field(default_factory=list)  # [v][k]: the start an absent occurrence is pinned to
    order_pos: list = field(default_factory=list)  # [v]: position of v in the fixed order (stage_class)
    domains: dict = field(default_factory=dict)  # (v, k) -> allowed start times of a recomputation (stage_class)

    def event_time(self, stage: int, pos: int) -> int:
        """Stage-class time of the event at position ``pos`` of stage ``stage`` (pos <= stage)."""
        return stage * self.graph.n_ops + pos

    def _times(self, schedule: Schedule):
        """The model time of each computation of ``schedule`` in order, or None when the
        schedule lies outside the model's time structure (stage class: not a stage schedule)."""
        comps = schedule.computes()
        if not self.stage_class:
            return list(range(len(comps)))
        n = self.graph.n_ops
        seen = [False] * n
        nfirst, prev, out = 0, -1, []
        for v in comps:
            p = self.order_pos[v]
            if not seen[v]:
                seen[v] = True
                if p != nfirst:
                    return None
                t = self.event_time(p, p)
                nfirst += 1
            else:
                if nfirst >= n:
                    return None  # nothing runs after the last first computation
                t = self.event_time(nfirst, p)
            if t <= prev:
                return None
            out.append(t)
            prev = t
        return out

    # -------------------------------------------------------------- hinting
    def hint(self, schedule: Schedule) -> bool:
        """Replace the model's solution hint by ``schedule`` (a valid schedule); False if it
        does not fit the model (more computations of some operator than its occurrences
        allow). O(model size)."""
        g = self.graph
        comps = schedule.computes()
        counts = [0] * g.n_ops
        for i in comps:
            counts[i] += 1
        if any(counts[i] > self.K[i] for i in range(g.n_ops)) or len(comps) > self.T:
            return False
        times = self._times(schedule)
        if times is None:
            return False
        occ_now = [-1] * g.n_ops
        s_val: dict = {}
        e_val: dict = {}
        in_end: dict = {}
        x_val: dict = {}
        slot = 0  # index of the next computation; its model time is times[slot]
        after = 0  # model time just after the last computation so far
        for kind, x in schedule.events:
            if kind == COMPUTE:
                occ_now[x] += 1
                k = occ_now[x]
                if self.absent and k >= len(self.absent[x]):
                    return False
                if self.stage_class and k > 0 and times[slot] not in self.domains.get((x, k), ()):
                    return False  # a recomputation the model's domains leave out
                s_val[(x, k)] = times[slot]
                for j in g.op_in[x]:
                    u = g.producer[j]
                    if u != -1:
                        x_val[(u, occ_now[u], x, k)] = 1
                after = times[slot] + 1
                slot += 1
            else:  # FREE
                u = g.producer[x]
                if u == -1:
                    in_end[x] = max(after, 1)
                else:
                    e_val[(x, occ_now[u])] = after
        m = slot
        md = self.model
        md.ClearHints()
        for v in range(g.n_ops):
            for k in range(self.K[v]):
                present = (v, k) in s_val
                if k > 0:
                    md.AddHint(self.pres[v][k], present)
                sv = s_val.get((v, k), self.absent[v][k] if self.absent else self.lo[v] + k)
                md.AddHint(self.start[v][k], sv)
                for j in g.op_out[v]:
                    md.AddHint(self.end[(j, k)], e_val.get((j, k), self.T) if present else sv + 1)
        for j, var in self.input_end.items():
            md.AddHint(var, in_end.get(j, self.T))
        for key, var in self.assign.items():
            md.AddHint(var, x_val.get(key, 0))
        md.AddHint(self.ncomp, m)
        return True

    hint_from_schedule = hint  # the earlier name

    # -------------------------------------------------------------- decoding
    def decode(self, value, boolean) -> Schedule:
        """The schedule of a solution: computations in slot order, each tensor freed right
        after the slot where its retention interval ends. ``value``/``boolean`` are the
        solver's accessors (``CpSolver.Value``, ``CpSolver.BooleanValue``). O(T log T)."""
        g = self.graph
        slots: dict[int, tuple[int, int]] = {}
        for v in range(g.n_ops):
            for k in range(self.K[v]):
                if k == 0 or boolean(self.pres[v][k]):
                    slots[value(self.start[v][k])] = (v, k)
        times = sorted(slots)  # 0 .. m-1 in the slot model; stage events in the stage class
        free_at: dict[int, list[int]] = {}
        keep = g.pinned_idx | g.output_idx
        events: list[tuple[int, int]] = []

        def last_before(e):  # index of the last computation at a time < e (the copy is freed after it)
            return max(0, bisect.bisect_left(times, e) - 1)

        for j, var in self.input_end.items():
            free_at.setdefault(last_before(value(var)), []).append(j)
        for j in g.input_idx:
            if j not in keep and j not in self.input_end:
                events.append((FREE, j))
        for t in times:
            v, k = slots[t]
            for j in g.op_out[v]:
                if j in g.output_idx and (k + 1 >= self.K[v] or not boolean(self.pres[v][k + 1])):
                    continue  # final copy of a required output stays
                free_at.setdefault(last_before(value(self.end[(j, k)])), []).append(j)
        for i, t in enumerate(times):
            v, _k = slots[t]
            events.append((COMPUTE, v))
            for j in sorted(free_at.get(i, ())):
                events.append((FREE, j))
        return Schedule(tuple(events))


class BuildStopped(Exception):
    """``build_remat_cp(..., stop=f)`` ended early because ``f()`` returned True (Ctrl-C):
    no model exists, nothing is claimed."""


def build_remat_cp(graph: Graph, budget: int | None, caps: list[int], *, objective: str = "compute",
                   compute_budget: float | None = None, fix_order: list[int] | None = None,
                   prune_useless: bool = True, free_after_last_use: bool = False,
                   stage_class: bool = False, stop=None) -> RematCP:
    """Build the CP-SAT model of rematerialization (module docstring).

    Parameters
    ----------
    graph : Graph
    budget : int or None
        Memory budget in bytes. Bounds memory for ``objective="compute"`` (required
        then); for ``objective="peak"`` an optional upper limit of the capacity variable.
    caps : list of int
        Extra computations allowed per operator (finite: the model has ``1 + caps[v]``
        occurrences of v; an operator whose outputs nobody reads or requires gets one).
    objective : "compute" or "peak"
    compute_budget : float, optional
        With ``objective="peak"``: total compute at most this.
    fix_order : list of int, optional
        Fixes the order of first computations, as Checkmate and Moccasin do. With every
        operator listed the model is exactly the class "first computations in this
        order", and the first-computation slots are tightened (docs/remat.md, "Slot
        domains").
    prune_useless : bool
        The dominance rule: every extra occurrence serves some computation or is the
        final copy of a required output (removes no schedule that matters; docs/remat.md).
    free_after_last_use : bool
        The second dominance rule: each copy of a tensor that is not a required output ends
        right after the last computation that reads it, or right after it is made when none
        does (docs/remat.md, "Free after last use"; removes no schedule that matters).
    stage_class : bool
        Restrict the model to Checkmate's stage class (Moccasin's ``use_stage``; needs a full
        ``fix_order``): time is the grid of stage events ``t(i, p) = i(i+1)/2 + p``
        (stage i = 0..n-1, position p = 0..i); the first computation of ``fix_order[i]`` is
        at ``t(i, i)``, a recomputation of v at ``t(i, pos(v))`` for a stage i > pos(v), so
        within a stage the recomputations run in order position, each operator at most once,
        and nothing runs after the last first computation. A *narrower* class than the given
        order's: its optimum and infeasibility are claims about the stage class only
        (docs/remat.md, "Stage-class first phase"). With ``prune_useless`` a recomputation of
        v is only allowed up to the last stage where something can read it.

    Returns
    -------
    RematCP
        The model with its variables; :meth:`RematCP.hint` and :meth:`RematCP.decode`
        translate schedules in and out. Solving lives in ``memsched.solvers``.

    Raises
    ------
    MemschedError
        ``objective="compute"`` without a budget.

    Complexity
    ----------
    ``T = sum_v K_v`` occurrences with O(outputs) variables each, ``K_u K_c``
    assignment literals per edge; building is linear in the model size plus
    O(n * edges / 64) for the ancestor/descendant counts.

    References
    ----------
    Bartan, Li, Kaur, Kwon, Pilanci, "Moccasin: Efficient Tensor Rematerialization for
    Neural Networks", ICML 2023 (the retention-interval encoding).
    """
    from ortools.sat.python import cp_model

    if objective == "compute" and budget is None:
        raise MemschedError("remat cp: objective 'compute' needs a memory budget")
    if stage_class and (fix_order is None or sorted(fix_order) != list(range(graph.n_ops))):
        raise MemschedError("remat cp: the stage class needs a full order of first computations (fix_order)")
    b = _Builder(graph, cp_model.CpModel(), occurrence_counts(graph, caps))
    if stage_class:
        b.stage_grid(fix_order, prune_useless)
    else:
        b.first_slot_bounds(fix_order)
    def check() -> None:
        if stop is not None and stop():
            raise BuildStopped("remat cp: model build stopped")

    for v in range(graph.n_ops):
        if (v & 63) == 0:
            check()
        b.add_occurrences(v)
    check()
    b.add_required_outputs()
    b.add_order(fix_order)
    b.md.Add(b.ncomp == sum(b.pres[v][k] for v in range(graph.n_ops) for k in range(1, b.K[v])) + graph.n_ops)
    b.md.AddNoOverlap(b.comp_iv)
    check()
    b.add_input_retention()
    b.add_dependencies()
    check()
    if prune_useless:
        b.add_dominance()
    if free_after_last_use:
        b.add_free_after_last_use()
    check()
    capacity = b.add_memory(objective, budget)
    check()
    div, icost, obj = b.add_objective(objective, capacity, compute_budget)
    info = {"occurrences": sum(b.K), "slots": b.T, "assign_literals": len(b.assign),
            "intervals": len(b.comp_iv) + len(b.ret_iv), "mem_unit": b.unit}
    if stage_class:
        info["class"] = "stage"
    return RematCP(model=b.md, graph=graph, T=b.T, K=b.K, pres=b.pres, start=b.start, end=b.end,
                   input_end=b.input_end, assign=b.assign, ncomp=b.ncomp, objective_expr=obj, capacity=capacity,
                   mem_unit=b.unit, const_bytes=b.const_bytes, cost_div=div, icost=icost, objective=objective,
                   lo=b.lo, info=info, stage_class=stage_class, absent=b.absent, order_pos=b.order_pos,
                   domains={key: frozenset(d) for key, d in b.domains.items()})


def occurrence_counts(graph: Graph, caps) -> list[int]:
    """``K_v = 1 + caps[v]``, or 1 when no computation reads v's outputs and none is
    required (a second run of v could serve nothing). O(tensors)."""
    K = []
    for v in range(graph.n_ops):
        useful = any(graph.consumers[j] or j in graph.output_idx for j in graph.op_out[v])
        K.append(1 + (max(0, int(caps[v])) if useful else 0))
    return K


class _Builder:
    """The pieces of :func:`build_remat_cp`, one method per group of constraints; the
    variables are created in a fixed order (deterministic models)."""

    def __init__(self, g: Graph, md, K: list[int]):
        self.g, self.md, self.K = g, md, K
        self.n = g.n_ops
        self.T = sum(K)
        self.pred = g.op_pred()
        self.const_bytes = g.always_resident()
        self.unit = g.memory_unit()
        self.sz = [s // self.unit for s in g.size]
        self.ws = [w // self.unit for w in g.workspace]
        self.true_lit = md.NewConstant(1)
        self.pres: list[list] = []
        self.start: list[list] = []
        self.end: dict = {}
        self.comp_iv: list = []
        self.comp_dem: list = []
        self.ret_iv: list = []
        self.input_end: dict = {}
        self.assign: dict = {}
        self.ncomp = md.NewIntVar(self.n, self.T, "ncomp")
        self.stage = False
        self.absent: list = [[0] * k for k in K]  # filled by first_slot_bounds / stage_grid
        self.order_pos: list = []
        self.domains: dict = {}  # (v, k) -> allowed start times of a recomputation (stage class)

    def first_slot_bounds(self, fix_order) -> None:
        """Slot range of each first computation: at least #ancestors before it, at most
        n - 1 - #descendants first computations before it; with a full order of first
        computations, the i-th has >= i computations before it and before it only the
        operators first computed earlier can have run again."""
        g, n, T, K = self.g, self.n, self.T, self.K
        anc_m, desc_m = g.reach_masks()
        anc = [bin(a).count("1") for a in anc_m]
        desc = [bin(d).count("1") for d in desc_m]
        pos_lo, pos_hi = [0] * n, [T - 1] * n
        if fix_order is not None and sorted(fix_order) == list(range(n)):
            extra_before = 0
            for i, v in enumerate(fix_order):
                pos_lo[v], pos_hi[v] = i, i + extra_before
                extra_before += K[v] - 1
        self.lo = [max(anc[v], pos_lo[v]) for v in range(n)]
        self.hi = [max(self.lo[v], min(n - 1 - desc[v] + (T - n), T - 1, pos_hi[v])) for v in range(n)]
        self.absent = [[self.lo[v] + k for k in range(K[v])] for v in range(n)]

    def stage_grid(self, order, prune_useless: bool) -> None:
        """Stage class: time is the grid of stage events; each first computation is fixed to
        its own event, each recomputation ranges over the events of its position in later
        stages (up to the last stage where something can read it, with ``prune_useless``)."""
        g, n, K = self.g, self.n, self.K
        self.stage = True
        pos = [0] * n
        for i, v in enumerate(order):
            pos[v] = i
        self.order_pos = pos

        def t(i, p):  # lexicographic in (stage, position); affine in the stage
            return i * n + p

        self.T = t(n - 1, n - 1) + 1
        self.ncomp = self.md.NewIntVar(n, max(n, sum(K)), "ncomp_stage")
        # last stage whose events a recomputation of v can serve (a reader's first computation
        # at a stage >= it, or a reader's recomputation there); every stage for a required output
        last = [n - 1] * n
        if prune_useless:
            for v in reversed(order):
                L = -1
                for j in g.op_out[v]:
                    if j in g.output_idx:
                        L = n - 1
                    for c in g.consumers[j]:
                        L = max(L, pos[c], last[c] if K[c] > 1 else -1)
                last[v] = L
        self.lo = [t(pos[v], pos[v]) for v in range(n)]
        self.hi = list(self.lo)
        self.absent = []
        for v in range(n):
            row = [self.lo[v]]
            for k in range(1, K[v]):
                stages = range(pos[v] + k, min(n - 1, last[v]) + 1)
                times = [t(i, pos[v]) for i in stages]
                self.domains[(v, k)] = times
                row.append(times[0] if times else t(pos[v], pos[v]))  # never present then
            self.absent.append(row)

    def add_occurrences(self, v: int) -> None:
        """Occurrence k of v: presence, start slot, unit compute interval, and one retention
        interval ``[s, e)`` per output; recompute only after every output was freed;
        absent occurrences pinned to one value."""
        md, g, T, lo = self.md, self.g, self.T, self.lo[v]
        pv, sv = [], []
        for k in range(self.K[v]):
            p = self.true_lit if k == 0 else md.NewBoolVar(f"p_{v}_{k}")
            if k == 0:
                s = md.NewIntVar(lo, self.hi[v], f"s_{v}_0")
            elif self.stage:
                # s = n * stage + pos(v): a stage variable with an interval domain (a sparse domain
                # of start times made CP-SAT's presolve take 10 s on random_layered n250)
                dom = self.domains[(v, k)]
                n, pv_ = self.n, self.order_pos[v]
                if dom:
                    st = md.NewIntVar(min(dom) // n, max(dom) // n, f"st_{v}_{k}")
                    s = md.NewIntVar(min(dom), max(dom), f"s_{v}_{k}")
                    md.Add(s == n * st + pv_)
                else:
                    # a fixed variable of its own: CP-SAT caches NewConstant by value, so two
                    # pinned starts of one value would be one variable, hinted twice
                    a = self.absent[v][k]
                    s = md.NewIntVar(a, a, f"s_{v}_{k}")
                    md.Add(p == 0)  # no stage where this recomputation could serve a reader
            else:
                s = md.NewIntVar(lo + k, T - 1, f"s_{v}_{k}")
            pv.append(p)
            sv.append(s)
            civ = (md.NewIntervalVar(s, 1, s + 1, f"c_{v}_{k}") if k == 0
                   else md.NewOptionalFixedSizeIntervalVar(s, 1, p, f"c_{v}_{k}"))
            self.comp_iv.append(civ)
            if self.ws[v]:
                self.comp_dem.append((civ, self.ws[v]))
            if not self.stage:
                md.Add(s < self.ncomp).OnlyEnforceIf(p)  # gapless slots
            for j in g.op_out[v]:
                self._add_retention(v, k, j, s, p)
            if k > 0:
                a = self.absent[v][k]
                md.AddImplication(p, pv[k - 1])
                md.Add(s == a).OnlyEnforceIf(p.Not())
                for j in g.op_out[v]:
                    md.Add(self.end[(j, k)] == a + 1).OnlyEnforceIf(p.Not())
                md.Add(s >= sv[k - 1] + 1).OnlyEnforceIf(p)
        self.pres.append(pv)
        self.start.append(sv)

    def _add_retention(self, v, k, j, s, p) -> None:
        md, T = self.md, self.T
        e = md.NewIntVar(min(self.absent[v][k], self.lo[v] + k) + 1, T, f"e_{j}_{k}")
        self.end[(j, k)] = e
        ln = md.NewIntVar(1, T, f"l_{j}_{k}")
        iv = md.NewIntervalVar(s, ln, e, f"r_{j}_{k}") if k == 0 else md.NewOptionalIntervalVar(s, ln, e, p, f"r_{j}_{k}")
        if self.sz[j]:
            self.ret_iv.append((iv, self.sz[j]))
        md.Add(e >= s + 1)
        if j in self.g.output_idx and k + 1 == self.K[v]:
            md.Add(e == T).OnlyEnforceIf(p)
        if k > 0:
            md.Add(s >= self.end[(j, k - 1)]).OnlyEnforceIf(p)

    def add_required_outputs(self) -> None:
        """The final present copy of a required output stays to the end."""
        g, md = self.g, self.md
        for v in range(self.n):
            for j in g.op_out[v]:
                if j in g.output_idx:
                    for k in range(self.K[v] - 1):
                        md.Add(self.end[(j, k)] == self.T).OnlyEnforceIf([self.pres[v][k], self.pres[v][k + 1].Not()])

    def add_order(self, fix_order) -> None:
        if fix_order is not None:
            for a, b in zip(fix_order, fix_order[1:]):
                self.md.Add(self.start[a][0] + 1 <= self.start[b][0])

    def add_input_retention(self) -> None:
        """Graph inputs freed after their last use: kept over ``[0, e_j)``."""
        g, md = self.g, self.md
        for j in g.input_idx:
            if j in g.pinned_idx or j in g.output_idx or not g.consumers[j]:
                continue
            e = md.NewIntVar(1, self.T, f"in_{j}")
            self.input_end[j] = e
            if self.sz[j]:
                self.ret_iv.append((md.NewIntervalVar(0, e, e, f"ri_{j}"), self.sz[j]))
            for c in g.consumers[j]:
                for m in range(self.K[c]):
                    md.Add(e >= self.start[c][m] + 1).OnlyEnforceIf(self.pres[c][m])

    def add_dependencies(self) -> None:
        """Some occurrence of each producer serves every computation: ``x[u,k -> c,m]``."""
        g, md, K, start, end, pres = self.g, self.md, self.K, self.start, self.end, self.pres
        for c in range(self.n):
            for u in self.pred[c]:
                reads = [j for j in g.op_out[u] if c in g.consumers[j]]
                for m in range(K[c]):
                    lits = []
                    for k in range(K[u]):
                        x = md.NewBoolVar(f"x_{u}_{k}_{c}_{m}")
                        self.assign[(u, k, c, m)] = x
                        lits.append(x)
                        md.AddImplication(x, pres[u][k])
                        md.Add(start[u][k] + 1 <= start[c][m]).OnlyEnforceIf(x)
                        for j in reads:
                            md.Add(end[(j, k)] >= start[c][m] + 1).OnlyEnforceIf(x)
                    md.AddBoolOr(lits).OnlyEnforceIf(pres[c][m])
                    if m == 0:
                        md.Add(start[u][0] + 1 <= start[c][0])

    def add_dominance(self) -> None:
        """An extra occurrence serves a computation or is a required output's final copy."""
        serves: dict = {}
        for (u, k, _c, _m), x in self.assign.items():
            serves.setdefault((u, k), []).append(x)
        for v in range(self.n):
            if any(j in self.g.output_idx for j in self.g.op_out[v]):
                continue
            for k in range(1, self.K[v]):
                self.md.AddBoolOr(serves.get((v, k), [])).OnlyEnforceIf(self.pres[v][k])

    def add_free_after_last_use(self) -> None:
        """A copy (u, k) of a tensor j that is not a required output ends right after its last
        reader: ``e[j][k] == s[c][m] + 1`` for one reader (c, m) assigned to it, or
        ``e[j][k] == s[u][k] + 1`` (the copy nobody reads is freed at once). With the existing
        ``e >= s[c][m] + 1`` for every assigned reader this makes e the last reader's slot + 1."""
        g, md = self.g, self.md
        readers: dict = {}
        for (u, k, c, m), x in self.assign.items():
            for j in g.op_out[u]:
                if c in g.consumers[j]:
                    readers.setdefault((j, k), []).append((x, c, m))
        for v in range(self.n):
            for j in g.op_out[v]:
                if j in g.output_idx:
                    continue
                for k in range(self.K[v]):
                    e, sv = self.end[(j, k)], self.start[v][k]
                    y0 = md.NewBoolVar(f"f_{j}_{k}")
                    md.Add(e == sv + 1).OnlyEnforceIf(y0)
                    ys = [y0]
                    for x, c, m in readers.get((j, k), ()):
                        y = md.NewBoolVar(f"f_{j}_{k}_{c}_{m}")
                        md.AddImplication(y, x)
                        md.Add(e == self.start[c][m] + 1).OnlyEnforceIf(y)
                        ys.append(y)
                    md.AddBoolOr(ys).OnlyEnforceIf(self.pres[v][k])

    def add_memory(self, objective: str, budget):
        """One cumulative over retention and workspace intervals; returns the capacity
        (an int for the compute objective, an IntVar for the peak objective)."""
        g, md = self.g, self.md
        if objective == "compute":
            capacity = (budget - self.const_bytes) // self.unit
        else:
            total_units = sum(self.sz) * max(self.K) + max(self.ws + [0])
            hi_units = total_units if budget is None else max(0, (budget - self.const_bytes) // self.unit)
            capacity = md.NewIntVar(0, max(hi_units, 0), "peak")
            md.Add(capacity >= sum(self.sz[j] for j in g.input_idx if j not in g.pinned_idx and j not in g.output_idx))
        demands = self.ret_iv + self.comp_dem
        md.AddCumulative([iv for iv, _ in demands], [d for _, d in demands], capacity)
        return capacity

    def add_objective(self, objective: str, capacity, compute_budget):
        """``sum cost_v p[v][k]`` (scaled costs): minimized, or bounded by ``compute_budget``
        while the capacity is minimized."""
        div, icost = cost_scale(self.g.cost)
        obj = sum(icost[v] * self.pres[v][k] for v in range(self.n) for k in range(1, self.K[v])) + sum(icost)
        if objective == "compute":
            self.md.Minimize(obj)
        else:
            if compute_budget is not None:
                lim = compute_budget / -div if div < 0 else compute_budget * div
                self.md.Add(obj <= int(math.floor(lim + 1e-9)))
            self.md.Minimize(capacity)
        return div, icost, obj
