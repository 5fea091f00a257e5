"""A relaxation of rematerialization over every order of first computations (free order),
for lower bounds on compute.

The given-order stage relaxation (:mod:`.remat_given_relax`) cuts a schedule into stages
between consecutive first computations of a fixed order. Here the order is a variable: the
first computations of any schedule, in the order they happen, grow the set of operators
computed so far one operator at a time, through *down-sets* (sets closed under
predecessors) from the empty set to all operators. This model has one stage per down-set
``D`` (the stretch after the first computation that completed D, before the next first
computation) and chooses a path through the down-set lattice.

Variables (Booleans):

* ``X[D,v]`` (D a down-set, v not in D, ``D + v`` a down-set): v is the next operator computed
  for the first time after D; ``Y[D]``: D is on the path (``Y[{}] = 1``; one edge leaves every
  node on the path except the full set, one enters every node on it except the empty set);
* ``R[D,u]`` (u in D, u may run again and its outputs serve someone): u is recomputed in
  stage D;
* ``S[D,j]``: tensor j is resident right after the first computation that completed D
  (for D = {}: the initial state, every graph input), before the frees that follow it;
* ``T[D,j]``: j is resident during all of stage D.

Constraints (docs/remat.md, "Free-order stage relaxation", has the proof):

* ``X[D,v]`` => each input j of v is ``S[D,j]`` or ``R[D,p(j)]``; ``R[D,u]`` => the same for u's
  inputs; the required outputs: ``S[all,j]`` or ``R[all,p(j)]``;
* ``X[D,v] and S[D+v,j]`` => ``S[D,j] or R[D,p(j)]`` unless v produces j;
* ``X[D,v]`` => memory while v runs (the tensors of ``S[D+v]`` it did not produce, its inputs,
  outputs and workspace) fits B minus the always-resident bytes;
* ``X[D,v] and S[D,j] and not R[D,p(j)] and (j in in(v) or S[D+v,j])`` => ``T[D,j]`` (for the
  full set: j a required output); ``R[D,u]`` => ``T[D,*]`` plus u's inputs, outputs and
  workspace fit;
* ``sum_D R[D,u] <= cap_u``; ``R[D,u] => Y[D]``, ``S[D,j] => Y[D]``.

Objective: least ``sum cost_u R[D,u]``; baseline + its optimum is a lower bound on the
compute of every schedule within B and the caps (any order).

Size: one node per down-set; O(down-sets x tensors) Booleans and O(down-sets x
recomputable x tensors) terms. Practical when the graph has few down-sets (fcn_8-train:
163, ResNet50-train: 481); ``max_downsets`` refuses the rest. After the stage formulation
of Checkmate (Jain et al., MLSys 2020), with the stage order a path in the down-set lattice
instead of fixed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .errors import MemschedError
from .graph import Graph
from .remat_given_relax import walk_stages
from .schedule import Schedule

__all__ = ["FreeRelaxation", "build_free_relaxation", "downsets", "TooManyDownsets", "FreeBuildDeadline"]


class TooManyDownsets(MemschedError):
    """The graph has more down-sets than the caller allowed."""


class FreeBuildDeadline(Exception):
    """:func:`build_free_relaxation` passed its deadline before the model was complete."""


def downsets(graph: Graph, limit: int | None = None) -> tuple[list[int], list[tuple[int, int, int]]]:
    """The down-sets of the operator DAG (bit masks, the empty set first, in order of size)
    and the lattice edges ``(index of D, v, index of D + v)``. Raises TooManyDownsets past
    ``limit``. O(down-sets x n)."""
    n = graph.n_ops
    pred = [sum(1 << u for u in graph.op_pred()[v]) for v in range(n)]
    index = {0: 0}
    nodes = [0]
    edges = []
    k = 0
    while k < len(nodes):
        D = nodes[k]
        for v in range(n):
            if not (D >> v) & 1 and pred[v] & D == pred[v]:
                E = D | (1 << v)
                if E not in index:
                    if limit is not None and len(nodes) >= limit:
                        raise TooManyDownsets(f"remat: the graph has more than {limit} down-sets")
                    index[E] = len(nodes)
                    nodes.append(E)
                edges.append((k, v, index[E]))
        k += 1
    return nodes, edges


def _is_constant(var) -> bool:
    return isinstance(var, int)


@dataclass
class FreeRelaxation:
    """The built relaxation (module docstring): the CP-SAT model and its variables."""

    model: object  # cp_model.CpModel
    graph: Graph
    nodes: list  # down-sets as bit masks
    edges: list  # (node, v, node)
    X: dict  # (node, v) -> BoolVar
    Y: dict  # node -> BoolVar or 1
    R: dict  # (node, op) -> BoolVar
    S: dict  # (node, tensor) -> BoolVar or 1
    T: dict  # (node, tensor) -> BoolVar
    icost: list
    cost_div: int  # compute = baseline + cost_div * objective
    objective_expr: object
    stats: dict = field(default_factory=dict)

    def assignment(self, schedule: Schedule) -> dict | None:
        """The value of every variable for ``schedule`` (valid, any order), or None when it
        recomputes an operator that has no variable (a useless recomputation, or a cap of 0).
        O(events x tensors)."""
        g = self.graph
        index = {D: i for i, D in enumerate(self.nodes)}
        path_nodes, path_edges = {0}, set()

        def advance(node, x):  # the down-set grows by x: the path takes edge (node, x)
            path_edges.add((node, x))
            nxt = index[self.nodes[node] | (1 << x)]
            path_nodes.add(nxt)
            return nxt

        walked = walk_stages(g, schedule, self.R, advance)
        if walked is None:
            return None
        s_val, r_val = walked
        nxt = {a: v for (a, v) in path_edges}
        vals = {}
        for key, var in self.X.items():
            vals[var.Index()] = int(key in path_edges)
        for key, var in self.Y.items():
            if not _is_constant(var):
                vals[var.Index()] = int(key in path_nodes)
        for key, var in self.R.items():
            vals[var.Index()] = r_val.get(key, 0)
        for key, var in self.S.items():
            if not _is_constant(var):
                vals[var.Index()] = s_val.get(key, 0)
        full = len(self.nodes) - 1
        for (a, j), var in self.T.items():
            t = 0
            if a in path_nodes and s_val.get((a, j), 0) and not r_val.get((a, g.producer[j]), 0):
                if a == full:
                    t = int(j in g.output_idx)
                else:
                    v = nxt[a]
                    t = int(j in g.op_in[v] or s_val.get((index[self.nodes[a] | (1 << v)], j), 0))
            vals[var.Index()] = t
        return vals

    def hint(self, schedule: Schedule) -> bool:
        """Replace the model's hint by ``schedule``'s assignment; False when it has none."""
        vals = self.assignment(schedule)
        if vals is None:
            return False
        self.model.ClearHints()
        for d in (self.X, self.Y, self.R, self.S, self.T):
            for var in d.values():
                if not _is_constant(var):
                    self.model.AddHint(var, vals[var.Index()])
        return True

    def decode(self, boolean) -> tuple[list[int], dict]:
        """(the order of first computations, {position: [operators recomputed before the
        operator at that position]}; position n = after the last) of a solution."""
        out_edge = {a: v for (a, v), x in self.X.items() if boolean(x)}
        order, node, pos_of = [], 0, {0: 0}
        index = {D: i for i, D in enumerate(self.nodes)}
        while node in out_edge:
            v = out_edge[node]
            order.append(v)
            node = index[self.nodes[node] | (1 << v)]
            pos_of[node] = len(order)
        rec: dict = {}
        for (a, u), var in sorted(self.R.items()):
            if boolean(var) and a in pos_of:
                rec.setdefault(pos_of[a], []).append(u)
        return order, rec


def build_free_relaxation(graph: Graph, budget: int, caps: list[int], *, max_downsets: int = 2000,
                          max_extra: float | None = None, shared_load_terms: int = 3_000_000,
                          max_literals: int | None = None, deadline: float | None = None) -> FreeRelaxation:
    """Build the relaxation (module docstring) for budget ``budget`` (bytes) and finite
    per-operator ``caps``; the objective is the extra compute over the baseline.

    ``max_extra`` (cost units): only solutions with extra compute at most this are kept
    (the objective is constrained to it, and an operator whose single recomputation costs
    more gets no recomputation literal, and at most ``max_extra // cost`` of them). The
    least objective is then a lower bound on the extra compute of every schedule whose
    extra compute is at most ``max_extra``; callers pass a known schedule's extra compute,
    so that the bound holds for every schedule (the others cost more than that schedule).

    ``max_literals``: refuse (TooManyDownsets) a model with more recomputation literals.

    ``shared_load_terms``: when the memory constraints at recomputations would have more
    terms than this, each stage's resident load is one variable and each recomputation's
    constraint subtracts only its own inputs and outputs (the same constraints, fewer terms).

    Raises
    ------
    MemschedError
        Costs that are not integers.
    TooManyDownsets
        More than ``max_downsets`` down-sets.
    FreeBuildDeadline
        ``deadline`` (a ``time.perf_counter()`` value) passed during the build.

    Complexity
    ----------
    O(down-sets x (recomputable + 1) x tensors) terms.
    """
    from functools import reduce
    from math import gcd

    from ortools.sat.python import cp_model

    if not all(float(c).is_integer() for c in graph.cost):
        raise MemschedError("remat: the free-order relaxation needs integer operator costs")
    nodes, edges = downsets(graph, max_downsets)
    div = reduce(gcd, [int(c) for c in graph.cost], 0) or 1
    icost = [int(c) // div for c in graph.cost]
    caps = list(caps)
    lim = None
    if max_extra is not None:
        lim = int(max_extra // div)
        caps = [c if icost[u] == 0 else min(c, lim // icost[u]) for u, c in enumerate(caps)]
    if max_literals is not None:
        elig = [u for u in range(graph.n_ops) if caps[u] > 0]
        n_lit = sum(1 for D in nodes for u in elig if (D >> u) & 1)
        if n_lit > max_literals:
            raise TooManyDownsets(f"remat: the free-order relaxation would have {n_lit} recomputation literals "
                                  f"(more than {max_literals})")
    b = _FreeRelax(graph, cp_model.CpModel(), budget, caps, nodes, edges, deadline)
    b.shared_load_terms = shared_load_terms
    b.add_path()
    b.add_dependencies()
    b.add_retention()
    b.add_memory_at_first_computations()
    b.add_memory_at_recomputations()
    for u in range(graph.n_ops):
        lits = [r for (a, v), r in b.R.items() if v == u]
        if lits:
            b.md.Add(sum(lits) <= caps[u])
    obj = sum(icost[u] * r for (a, u), r in b.R.items())
    if lim is not None:
        b.md.Add(obj <= lim)
    b.md.Minimize(obj)
    return FreeRelaxation(model=b.md, graph=graph, nodes=nodes, edges=edges, X=b.X, Y=b.Y, R=b.R, S=b.S, T=b.T,
                          icost=icost, cost_div=div, objective_expr=obj,
                          stats={"downsets": len(nodes), "edges": len(edges), "recompute_literals": len(b.R),
                                 "shared_load": getattr(b, "stats_shared", False)})


class _FreeRelax:
    """The pieces of :func:`build_free_relaxation`."""

    def __init__(self, g: Graph, md, budget, caps, nodes, edges, deadline):
        self.g, self.md, self.nodes, self.edges, self.deadline = g, md, nodes, edges, deadline
        self.n = n = g.n_ops
        self.full = len(nodes) - 1
        self.keep = g.always_resident_idx()
        unit = g.memory_unit()
        self.cap = (budget - g.always_resident()) // unit
        self.sz = [s // unit for s in g.size]
        self.ws = [w // unit for w in g.workspace]
        useful = [any(g.consumers[j] or j in g.output_idx for j in g.op_out[v]) for v in range(n)]
        self.tens = [j for j in range(g.n_tensors) if j not in self.keep and (g.producer[j] != -1 or g.consumers[j])]
        self.X = {(a, v): md.NewBoolVar(f"X_{a}_{v}") for (a, v, _b) in edges}
        self.Y = {a: (1 if a == 0 else md.NewBoolVar(f"Y_{a}")) for a in range(len(nodes))}
        self.R, self.S = {}, {}
        for a, D in enumerate(nodes):
            for u in range(n):
                if (D >> u) & 1 and useful[u] and caps[u] > 0:
                    self.R[(a, u)] = r = md.NewBoolVar(f"R_{a}_{u}")
                    md.AddImplication(r, self.Y[a])  # a > 0: D holds u
            for j in self.tens:
                p = g.producer[j]
                if p == -1 or (D >> p) & 1:
                    if a == 0:
                        self.S[(a, j)] = 1
                    else:
                        self.S[(a, j)] = s = md.NewBoolVar(f"S_{a}_{j}")
                        md.AddImplication(s, self.Y[a])
        self.T: dict = {}
        self.out_edges: dict = {}
        for (a, v, c) in edges:
            self.out_edges.setdefault(a, []).append((v, c))

    def check_deadline(self, where: str) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise FreeBuildDeadline(f"the free-order relaxation's build reached its deadline at {where}")

    def add_path(self) -> None:
        md = self.md
        incoming: dict = {}
        for (a, v, c) in self.edges:
            incoming.setdefault(c, []).append(self.X[(a, v)])
        for a in range(len(self.nodes)):
            if a != self.full:
                md.Add(sum(self.X[(a, v)] for v, _c in self.out_edges[a]) == self.Y[a])
            if a != 0:
                md.Add(sum(incoming[a]) == self.Y[a])

    def avail(self, a: int, j: int) -> list:
        lits = []
        s = self.S.get((a, j))
        if s is not None:
            lits.append(s)
        p = self.g.producer[j]
        if p != -1 and (a, p) in self.R:
            lits.append(self.R[(a, p)])
        return lits

    def _need(self, a: int, j: int, when: list) -> None:
        lits = self.avail(a, j)
        if any(_is_constant(x) for x in lits):
            return
        if not lits:
            if not when:
                self.md.AddBoolOr([])  # j cannot be had: the relaxation is infeasible
            else:
                self.md.AddBoolOr([w.Not() for w in when])
            return
        c = self.md.AddBoolOr(lits)
        if when:
            c.OnlyEnforceIf(when)

    def add_dependencies(self) -> None:
        g = self.g
        for (a, v, _c) in self.edges:
            for j in set(g.op_in[v]) - self.keep:
                self._need(a, j, [self.X[(a, v)]])
        for (a, u), r in self.R.items():
            for j in set(g.op_in[u]) - self.keep:
                self._need(a, j, [r])
        for j in g.output_idx:
            if j not in self.keep and (self.full, j) in self.S:
                self._need(self.full, j, [])

    def add_retention(self) -> None:
        g = self.g
        for (a, v, c) in self.edges:
            x = self.X[(a, v)]
            for j in self.tens:
                s2 = self.S.get((c, j))
                if s2 is None or g.producer[j] == v:
                    continue
                self._need(a, j, [x, s2])

    def add_memory_at_first_computations(self) -> None:
        g = self.g
        for k, (a, v, c) in enumerate(self.edges):
            if k % 64 == 0:
                self.check_deadline(f"edge {k}")
            ins = set(g.op_in[v]) - self.keep
            outs = set(g.op_out[v])
            terms = [self.sz[j] * self.S[(c, j)] for j in self.tens
                     if (c, j) in self.S and j not in ins and j not in outs and self.sz[j]]
            self.md.Add(sum(terms) + sum(self.sz[j] for j in ins | outs) + self.ws[v] <= self.cap) \
                .OnlyEnforceIf(self.X[(a, v)])

    def add_memory_at_recomputations(self) -> None:
        g, md = self.g, self.md
        rec_at: dict = {}
        for (a, u) in self.R:
            rec_at.setdefault(a, []).append(u)
        n_terms = sum(len(rec) for rec in rec_at.values()) * len(self.tens)
        shared = n_terms > self.shared_load_terms
        self.stats_shared = shared
        for a, rec in sorted(rec_at.items()):
            self.check_deadline(f"down-set {a}")
            T = {}
            for j in self.tens:
                s = self.S.get((a, j))
                if s is None or not self.sz[j]:
                    continue
                p = g.producer[j]
                rlit = self.R.get((a, p)) if p != -1 else None
                base = [] if _is_constant(s) else [s.Not()]
                if rlit is not None:
                    base.append(rlit)
                if a == self.full:
                    if j not in g.output_idx:
                        continue
                    t = md.NewBoolVar(f"T_{a}_{j}")
                    md.AddBoolOr([t] + base)
                else:
                    t = None
                    for v, c in self.out_edges[a]:
                        if j in g.op_in[v]:
                            end = []
                        else:
                            s2 = self.S[(c, j)]
                            end = [] if _is_constant(s2) else [s2.Not()]
                        if t is None:
                            t = md.NewBoolVar(f"T_{a}_{j}")
                        md.AddBoolOr([t] + base + end).OnlyEnforceIf(self.X[(a, v)])
                T[j] = t
                self.T[(a, j)] = t
            if shared:
                load = md.NewIntVar(0, sum(self.sz[j] for j in T), f"load_{a}")
                md.Add(load == sum(self.sz[j] * T[j] for j in T))
            for u in rec:
                io = (set(g.op_in[u]) - self.keep) | set(g.op_out[u])
                if shared:
                    rest = load - sum(self.sz[j] * T[j] for j in T if j in io)
                else:
                    rest = sum(self.sz[j] * T[j] for j in T if j not in io)
                md.Add(rest + sum(self.sz[j] for j in io) + self.ws[u] <= self.cap).OnlyEnforceIf(self.R[(a, u)])
