"""A relaxation of rematerialization over every order of first computations, with the order
as position variables (free order, scales to graphs with many down-sets).

The free-order stage relaxation (:mod:`.remat_free_relax`) has one stage per down-set, which
is exact about orders but has as many nodes as the DAG has down-sets. Here stage ``k``
(0 <= k <= n) is the stretch between the k-th and the (k+1)-th first computation, whatever
operators they are: ``P[k,v]`` says v is the operator whose first computation is the k-th
(0-based; an assignment, with the precedence of the DAG on the positions).

Variables (Booleans): ``P[k,v]``; ``F[k,u]`` (u first-computed at a position < k:
``F[k+1,u] = F[k,u] + P[k,u]``); ``R[k,u]`` (u recomputed in stage k; ``R <= F``);
``S[k,j]`` (tensor j resident right after the k-th first computation, before the frees
after it; for k = 0 the initial state, every graph input); ``T[k,j]`` (j resident through all
of stage k). Stage k lies between positions k-1 and k.

Constraints (docs/remat.md, "Position relaxation", has the proof): ``P[k,v]`` => each input j
of v is ``S[k,j]`` or ``R[k,p(j)]``; the same for ``R[k,u]``; ``S[k+1,j]`` => ``S[k,j]`` or
``R[k,p(j)]`` or ``P[k,p(j)]``; ``S[k,j] <= F[k,p(j)]``; memory while the k-th first
computation runs: ``P[k,v]`` => (bytes of ``S[k+1]``) - (those of v's inputs and outputs) +
v's inputs, outputs and workspace fit; ``S[k,j] and not R[k,p(j)] and (S[k+1,j] or P[k,v] for a
reader v of j)`` => ``T[k,j]`` (for k = n: j a required output); ``R[k,u]`` => (bytes of
``T[k]``) - (those of u's inputs and outputs) + u's inputs, outputs and workspace fit;
required outputs ``S[n,j] or R[n,p(j)]``; ``sum_k R[k,u] <= cap_u``.

Objective (optional): least ``sum cost_u R[k,u]``. Without one the model is a feasibility
test: no solution means no schedule within B and the caps, in any order.

Size: O(n^2 + n x tensors) Booleans; each memory constraint has O(degree) terms (one load
variable per stage).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import MemschedError
from .graph import Graph
from .remat_given_relax import walk_stages
from .schedule import Schedule

__all__ = ["PositionRelaxation", "build_position_relaxation"]


def _is_constant(var) -> bool:
    return isinstance(var, int)


@dataclass
class PositionRelaxation:
    """The built relaxation (module docstring)."""

    model: object
    graph: Graph
    P: dict  # (k, v) -> BoolVar
    F: dict  # (k, u) -> BoolVar or 0
    R: dict  # (k, u) -> BoolVar
    S: dict  # (k, j) -> BoolVar or 1
    T: dict  # (k, j) -> BoolVar
    icost: list
    cost_div: int
    objective_expr: object
    stats: dict = field(default_factory=dict)

    def assignment(self, schedule: Schedule) -> dict | None:
        """The value of every variable for ``schedule`` (valid, any order), or None when it
        recomputes an operator that has no variable."""
        g = self.graph
        n = g.n_ops
        pos: dict = {}

        def advance(k, x):  # x is the k-th first computation
            pos[x] = k
            return k + 1

        walked = walk_stages(g, schedule, self.R, advance)
        if walked is None:
            return None
        s_val, r_val = walked
        at = {p: v for v, p in pos.items()}
        vals = {}
        for (kk, v), var in self.P.items():
            vals[var.Index()] = int(pos.get(v) == kk)
        for (kk, u), var in self.F.items():
            if not _is_constant(var):
                vals[var.Index()] = int(pos[u] < kk)
        for key, var in self.R.items():
            vals[var.Index()] = r_val.get(key, 0)
        for key, var in self.S.items():
            if not _is_constant(var):
                vals[var.Index()] = s_val.get(key, 0)
        for (kk, j), var in self.T.items():
            t = 0
            if s_val.get((kk, j), 0) and not r_val.get((kk, g.producer[j]), 0):
                if kk == n:
                    t = int(j in g.output_idx)
                else:
                    t = int(j in g.op_in[at[kk]] or s_val.get((kk + 1, j), 0))
            vals[var.Index()] = t
        return vals

    def hint(self, schedule: Schedule) -> bool:
        vals = self.assignment(schedule)
        if vals is None:
            return False
        self.model.ClearHints()
        for d in (self.P, self.F, self.R, self.S, self.T):
            for var in d.values():
                if not _is_constant(var):
                    self.model.AddHint(var, vals[var.Index()])
        return True

    def decode(self, boolean) -> tuple[list[int], dict]:
        """(order of first computations, {position: [operators recomputed before it]})."""
        n = self.graph.n_ops
        order = [next(v for v in range(n) if (k, v) in self.P and boolean(self.P[(k, v)])) for k in range(n)]
        rec: dict = {}
        for (k, u), var in sorted(self.R.items()):
            if boolean(var):
                rec.setdefault(k, []).append(u)
        return order, rec


def build_position_relaxation(graph: Graph, budget: int, caps: list[int], *, objective: bool = True,
                              max_extra: float | None = None) -> PositionRelaxation:
    """Build the relaxation (module docstring) for ``budget`` bytes and finite ``caps``.
    ``objective``: minimize the extra compute (else a feasibility model). ``max_extra``: as in
    :func:`.remat_free_relax.build_free_relaxation` (only solutions with extra compute at most
    that; integer costs needed).

    Complexity: O(n^2 + n x tensors) variables, constraints of O(degree) terms."""
    from functools import reduce
    from math import gcd

    from ortools.sat.python import cp_model

    g = graph
    n = g.n_ops
    md = cp_model.CpModel()
    integer = all(float(c).is_integer() for c in g.cost)
    if (objective or max_extra is not None) and not integer:
        raise MemschedError("remat: the position relaxation's objective needs integer operator costs")
    div = (reduce(gcd, [int(c) for c in g.cost], 0) or 1) if integer else 1
    icost = [int(c) // div for c in g.cost] if integer else [0] * n
    caps = list(caps)
    lim = None
    if max_extra is not None:
        lim = int(max_extra // div)
        caps = [c if icost[u] == 0 else min(c, lim // icost[u]) for u, c in enumerate(caps)]
    keep = g.always_resident_idx()
    unit = g.memory_unit()
    cap = (budget - g.always_resident()) // unit
    sz = [s // unit for s in g.size]
    ws = [w // unit for w in g.workspace]
    prod = g.producer
    useful = [any(g.consumers[j] or j in g.output_idx for j in g.op_out[v]) for v in range(n)]
    tens = [j for j in range(g.n_tensors) if j not in keep and (prod[j] != -1 or g.consumers[j])]
    # earliest / latest positions from ancestor and descendant counts
    pred = g.op_pred()
    anc = [0] * n
    for v in g.topological_order():
        m = 0
        for u in pred[v]:
            m |= anc[u] | (1 << u)
        anc[v] = m
    desc_n = [0] * n
    for v in range(n):
        for u in range(n):
            if (anc[v] >> u) & 1:
                desc_n[u] += 1
    lo = [bin(anc[v]).count("1") for v in range(n)]
    hi = [n - 1 - desc_n[v] for v in range(n)]
    P = {(k, v): md.NewBoolVar(f"P_{k}_{v}") for v in range(n) for k in range(lo[v], hi[v] + 1)}
    for k in range(n):
        md.AddExactlyOne([P[(k, v)] for v in range(n) if (k, v) in P])
    for v in range(n):
        md.AddExactlyOne([P[(k, v)] for k in range(lo[v], hi[v] + 1)])
    posv = [sum(k * P[(k, v)] for k in range(lo[v], hi[v] + 1)) for v in range(n)]
    for v in range(n):
        for u in pred[v]:
            md.Add(posv[u] + 1 <= posv[v])
    F: dict = {}
    for u in range(n):
        for k in range(n + 1):
            if k <= lo[u]:
                F[(k, u)] = 0
            elif k > hi[u]:
                F[(k, u)] = 1
            else:
                F[(k, u)] = md.NewBoolVar(f"F_{k}_{u}")
        for k in range(n):
            if not (_is_constant(F[(k + 1, u)]) and _is_constant(F[(k, u)])):
                md.Add(F[(k + 1, u)] == F[(k, u)] + (P[(k, u)] if (k, u) in P else 0))
    R = {}
    for k in range(1, n + 1):
        for u in range(n):
            if useful[u] and caps[u] > 0 and not (_is_constant(F[(k, u)]) and F[(k, u)] == 0):
                R[(k, u)] = r = md.NewBoolVar(f"R_{k}_{u}")
                if not _is_constant(F[(k, u)]):
                    md.AddImplication(r, F[(k, u)])
    S: dict = {}
    for j in tens:
        p = prod[j]
        for k in range(n + 1):
            if p == -1:
                S[(k, j)] = 1 if k == 0 else md.NewBoolVar(f"S_{k}_{j}")
            else:
                f = F[(k, p)]
                if _is_constant(f) and f == 0:
                    continue
                S[(k, j)] = s = md.NewBoolVar(f"S_{k}_{j}")
                if not _is_constant(f):
                    md.AddImplication(s, f)

    def avail(k, j):
        lits = []
        s = S.get((k, j))
        if s is not None:
            lits.append(s)
        p = prod[j]
        if p != -1 and (k, p) in R:
            lits.append(R[(k, p)])
        return lits

    def need(k, j, when):
        lits = avail(k, j)
        if any(_is_constant(x) for x in lits):
            return
        if not lits:
            md.AddBoolOr([w.Not() for w in when]) if when else md.AddBoolOr([])
            return
        c = md.AddBoolOr(lits)
        if when:
            c.OnlyEnforceIf(when)

    for (k, v), pv in P.items():
        for j in set(g.op_in[v]) - keep:
            need(k, j, [pv])
    for (k, u), r in R.items():
        for j in set(g.op_in[u]) - keep:
            need(k, j, [r])
    for j in g.output_idx:
        if j not in keep:
            need(n, j, [])
    # retention
    for (k1, j), s in S.items():
        if _is_constant(s) or k1 == 0:
            continue
        k = k1 - 1
        lits = avail(k, j)
        p = prod[j]
        if p != -1 and (k, p) in P:
            lits.append(P[(k, p)])
        if any(_is_constant(x) for x in lits):
            continue
        md.AddBoolOr(lits + [s.Not()])
    # memory at first computations: one load variable per position
    for k in range(n):
        terms = [(j, S[(k + 1, j)]) for j in tens if (k + 1, j) in S and sz[j]]
        load = md.NewIntVar(0, sum(sz[j] for j, _ in terms), f"load1_{k}")
        md.Add(load == sum(sz[j] * s for j, s in terms if not _is_constant(s)) +
               sum(sz[j] for j, s in terms if _is_constant(s)))
        for v in range(n):
            if (k, v) not in P:
                continue
            io = (set(g.op_in[v]) - keep) | set(g.op_out[v])
            sub = [sz[j] * S[(k + 1, j)] for j in io if (k + 1, j) in S and sz[j] and not _is_constant(S[(k + 1, j)])]
            subc = sum(sz[j] for j in io if (k + 1, j) in S and sz[j] and _is_constant(S[(k + 1, j)]))
            md.Add(load - sum(sub) - subc + sum(sz[j] for j in io) + ws[v] <= cap).OnlyEnforceIf(P[(k, v)])
    # memory at recomputations
    T: dict = {}
    for k in range(1, n + 1):
        rec = [u for u in range(n) if (k, u) in R]
        if not rec:
            continue
        Tk = {}
        for j in tens:
            s = S.get((k, j))
            if s is None or not sz[j]:
                continue
            p = prod[j]
            base = [] if _is_constant(s) else [s.Not()]
            if p != -1 and (k, p) in R:
                base.append(R[(k, p)])
            if k == n:
                if j not in g.output_idx:
                    continue
                t = md.NewBoolVar(f"T_{k}_{j}")
                md.AddBoolOr([t] + base)
            else:
                t = md.NewBoolVar(f"T_{k}_{j}")
                ends = []
                s2 = S.get((k + 1, j))
                if s2 is not None:
                    ends.append(s2)
                ends += [P[(k, c)] for c in set(g.consumers[j]) if (k, c) in P]
                for e in ends:
                    if _is_constant(e):
                        md.AddBoolOr([t] + base)
                    else:
                        md.AddBoolOr([t] + base + [e.Not()])
            Tk[j] = t
            T[(k, j)] = t
        load = md.NewIntVar(0, sum(sz[j] for j in Tk), f"loadT_{k}")
        md.Add(load == sum(sz[j] * t for j, t in Tk.items()))
        for u in rec:
            io = (set(g.op_in[u]) - keep) | set(g.op_out[u])
            md.Add(load - sum(sz[j] * Tk[j] for j in io if j in Tk) + sum(sz[j] for j in io) + ws[u] <= cap) \
                .OnlyEnforceIf(R[(k, u)])
    for u in range(n):
        lits = [r for (k, v), r in R.items() if v == u]
        if lits:
            md.Add(sum(lits) <= caps[u])
    obj = sum(icost[u] * r for (k, u), r in R.items())
    if lim is not None:
        md.Add(obj <= lim)
    if objective:
        md.Minimize(obj)
    return PositionRelaxation(model=md, graph=g, P=P, F=F, R=R, S=S, T=T, icost=icost, cost_div=div,
                              objective_expr=obj, stats={"positions": n, "recompute_literals": len(R)})
