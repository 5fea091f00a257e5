"""A relaxation of rematerialization in the given-order class, for lower bounds on compute.

Class (docs/claims.md, ``given-first-computations``): the first computations follow the
given order ``pi``; recomputations may run anywhere, in any order. Stage ``i`` (0 <= i <= n)
is the stretch between the first computations of ``pi[i-1]`` and ``pi[i]`` (stage n: after
the last one).

Variables (Booleans):

* ``R[i,u]`` (``pos(u) < i``, u may run again and its outputs serve someone): u is
  recomputed in stage i;
* ``S[i,j]``: tensor j is resident right after the first computation of ``pi[i-1]`` (for
  i = 0: in the initial state), before the frees that follow it;
* ``T[i,j]``: j is resident during all of stage i (``S[i,j]``, still resident at its end,
  not recomputed in it).

Constraints, each implied by every schedule of the class (docs/remat.md, "Given-order
stage relaxation", has the proof):

* a computation in stage i (the first computation of ``pi[i]``, or a recomputation) needs
  each input j resident at the start of the stage or recomputed in the stage:
  ``S[i,j] or R[i,p(j)]``;
* ``S[i+1,j] => S[i,j] or R[i,p(j)]`` unless ``pi[i]`` produces j;
* required outputs are resident at the end: ``S[n,j] or R[n,p(j)]``;
* memory while ``pi[i]`` runs: the tensors of ``S[i+1]`` it did not produce, its inputs, its
  outputs and its workspace fit ``B`` (minus the always-resident bytes);
* memory while u is recomputed in stage i: ``T[i,*]``, u's inputs, outputs and workspace fit;
* ``sum_i R[i,u] <= cap_u``.

What is left out: the order of the recomputations inside a stage (the memory at a
recomputation counts only what stays resident through the whole stage). So the model is a
relaxation: its least ``baseline + sum cost_u R[i,u]`` is a lower bound on the compute of
every schedule of the class within B that has no useless recomputation (and some optimal
schedule has none). It is not a schedule model: :meth:`GivenRelaxation.decode` returns the
recomputation sets per stage, not a schedule.

Size: O(n^2) R, O(n x tensors) S and T; one linear constraint per stage and per
recomputation literal, of O(tensors) terms (O(n^2 x tensors) in all: ResNet50-train, 353
operators, takes ~100 s to build, so callers pass a deadline). ``compact=True`` writes the
same constraints with one load variable per stage, O(degree) terms per literal
(O(n x tensors + n^2 x degree) in all: ResNet50-train builds in a few seconds). After the stage formulation of Checkmate (Jain et al., MLSys 2020)
and the fixed stage events of Moccasin (Bartan et al., ICML 2023), with the order inside a
stage relaxed instead of fixed, which keeps it a bound for the whole given-order class.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .errors import MemschedError
from .graph import Graph
from .schedule import COMPUTE, Schedule

__all__ = ["GivenRelaxation", "build_given_relaxation", "given_relaxation_size", "BuildDeadline", "walk_stages"]

def walk_stages(g: Graph, schedule: Schedule, R: dict, advance):
    """The stage values of ``schedule`` shared by the stage relaxations (given order, free
    order over down-sets, positions): ``s_val[(stage, j)] = 1`` when tensor j is resident as
    ``stage`` begins, ``r_val[(stage, v)] = 1`` when operator v is recomputed within ``stage``.
    ``advance(stage, v)`` gives the stage after the first computation of v (None: outside the
    relaxation's class). None when a recomputation has no variable in ``R`` or ``advance``
    refuses. O(events x tensors)."""
    stage, seen = 0, set()
    resident = set(g.input_idx)
    s_val = {(0, j): 1 for j in g.input_idx}
    r_val: dict = {}
    for kind, x in schedule.events:
        if kind != COMPUTE:
            resident.discard(x)
            continue
        resident.update(g.op_out[x])
        if x in seen:
            if (stage, x) not in R:
                return None
            r_val[(stage, x)] = 1
            continue
        seen.add(x)
        stage = advance(stage, x)
        if stage is None:
            return None
        for j in resident:
            s_val[(stage, j)] = 1
    return s_val, r_val



@dataclass
class GivenRelaxation:
    """The built relaxation: the CP-SAT model and its variables (module docstring)."""

    model: object  # cp_model.CpModel
    graph: Graph
    order: list
    R: dict  # (stage, op) -> BoolVar
    S: dict  # (stage, tensor) -> BoolVar or constant
    T: dict  # (stage, tensor) -> BoolVar
    icost: list  # integer cost per operator (costs divided by their gcd)
    cost_div: int  # the gcd: compute = baseline + cost_div * objective
    objective_expr: object
    stats: dict = field(default_factory=dict)
    window: tuple | None = None  # the stages (a, b) the model holds; None or (0, n): all of them

    def assignment(self, schedule: Schedule) -> dict | None:
        """The value of every variable for ``schedule`` (a valid schedule whose first
        computations follow the order), or None when it recomputes an operator that has no
        variable (a useless recomputation, or one beyond its cap) or leaves the order.
        O(events x tensors)."""
        g = self.graph
        pi = self.order
        # recomputations in stages outside a window have no variable and need none
        R = self.R if self.window in (None, (0, len(pi))) else _OutsideWindow(self.R, *self.window)
        walked = walk_stages(g, schedule, R,
                             lambda stage, x: stage + 1 if stage < len(pi) and pi[stage] == x else None)
        if walked is None:
            return None
        s_val, r_val = walked
        vals = {}
        for key, var in self.R.items():
            vals[var.Index()] = r_val.get(key, 0)
        for key, var in self.S.items():
            if not _is_constant(var):
                vals[var.Index()] = s_val.get(key, 0)
        for (i, j), var in self.T.items():
            p = g.producer[j]
            end = (1 if j in g.output_idx else 0) if i == len(pi) else \
                (1 if j in g.op_in[pi[i]] else s_val.get((i + 1, j), 0))
            vals[var.Index()] = int(s_val.get((i, j), 0) and end and not r_val.get((i, p), 0))
        return vals

    def hint(self, schedule: Schedule) -> bool:
        """Replace the model's hint by ``schedule``'s assignment; False when it has none."""
        vals = self.assignment(schedule)
        if vals is None:
            return False
        self.model.ClearHints()
        for var in list(self.R.values()) + [v for v in self.S.values() if not _is_constant(v)] + list(self.T.values()):
            self.model.AddHint(var, vals[var.Index()])
        return True

    def hint_solution(self, boolean) -> None:
        """Replace the model's hint by a solution's values (``boolean``: the solver's accessor)."""
        self.model.ClearHints()
        for var in list(self.R.values()) + [v for v in self.S.values() if not _is_constant(v)] + list(self.T.values()):
            self.model.AddHint(var, boolean(var))

    def decode(self, boolean) -> dict:
        """{stage: [operators recomputed in it]} of a solution (``boolean``: the solver's accessor)."""
        out: dict = {}
        for (i, u), var in sorted(self.R.items()):
            if boolean(var):
                out.setdefault(i, []).append(u)
        return out


def given_relaxation_size(graph: Graph, caps: list[int], *, prune: bool = True) -> dict:
    """The size of :func:`build_given_relaxation`'s model without building it: the numbers of
    ``R`` and ``S`` literals and ``terms``, the sum over stages of (recomputation literals x
    tensor literals) of the stage, which the memory-at-recomputation constraints hold and
    which the build time follows (MobileNet-train: 2.1 M terms, ~10 s; random_layered n100:
    0.33 M), and ``compact_terms``, the same for ``compact=True`` (per stage with a
    recomputation literal: its tensor literals plus, per literal, its inputs and outputs and
    one); ``R_by_stage`` and ``compact_terms_by_stage`` split the counts by stage (a tail
    window ``(a, n)`` holds the stages ``a..n`` of them). O(n^2 + n x tensors)."""
    b = _Relax(graph, None, graph.always_resident(), caps, prune=prune)
    rec = [0] * (graph.n_ops + 1)
    ten = [0] * (graph.n_ops + 1)
    io = [0] * (graph.n_ops + 1)
    for i, u in b.R:
        rec[i] += 1
        io[i] += len(graph.op_in[u]) + len(graph.op_out[u]) + 1
    for i, _j in b.S:
        ten[i] += 1
    compact = [t + k if r else 0 for t, k, r in zip(ten, io, rec)]
    return {"R": len(b.R), "S": len(b.S), "terms": sum(r * t for r, t in zip(rec, ten)),
            "compact_terms": sum(compact), "R_by_stage": rec, "compact_terms_by_stage": compact}


class _OutsideWindow:
    """``key in`` for :func:`walk_stages`: the window's recomputation literals, and every
    (stage, op) of a stage outside the window (its recomputations are not modeled)."""

    def __init__(self, R: dict, a: int, b: int):
        self.R, self.a, self.b = R, a, b

    def __contains__(self, key) -> bool:
        return key in self.R or not self.a <= key[0] <= self.b


class BuildDeadline(Exception):
    """:func:`build_given_relaxation` passed its deadline before the model was complete."""


def _is_constant(var) -> bool:
    return isinstance(var, int)


def build_given_relaxation(graph: Graph, budget: int, caps: list[int], *, deadline: float | None = None,
                           prune: bool = True, compact: bool = False, objective: bool = True,
                           window: tuple[int, int] | None = None) -> GivenRelaxation:
    """Build the relaxation (module docstring) for budget ``budget`` (bytes) and finite
    per-operator ``caps``; the objective is the extra compute over the baseline
    (``objective=False``: no objective, a feasibility test, any costs).

    ``deadline`` (a ``time.perf_counter()`` value) is checked between stages. ``prune``
    (default) creates no ``R[i,u]`` past the last stage at which a recomputation of u can
    serve a reader, and no ``S[i,j]`` past the last stage at which j can be read
    (docs/remat.md, "Pruning"; removes no schedule that matters).

    ``window=(a, b)`` (0 <= a <= b <= n) keeps only the stages a..b: the literals ``R[i,*]``
    of those stages, the constraints of those stages' computations, retention into stages
    a+1..b+1 (``S[a,*]`` is free), the required outputs only when ``b = n``, and readers only
    at stages <= b for the pruning. Its constraints are a subset of the whole model's and its
    objective a part of the whole one's, so its least extra compute is at most the whole
    model's, still a lower bound for the class (docs/remat.md, "Windows of stages"); so is the
    sum of the least extra computes of disjoint windows.

    Raises
    ------
    MemschedError
        Costs that are not integers (the bound would need rounding), or a window outside
        ``0 <= a <= b <= n``.
    BuildDeadline
        The deadline passed before the model was complete.

    Complexity
    ----------
    O(n^2 + n x tensors) variables and constraints of O(tensors) terms each.
    """
    from math import gcd
    from functools import reduce

    from ortools.sat.python import cp_model

    if objective and not all(float(c).is_integer() for c in graph.cost):
        raise MemschedError("remat: the given-order relaxation needs integer operator costs")
    b = _Relax(graph, cp_model.CpModel(), budget, caps, deadline, prune, compact, window)
    b.add_dependencies()
    b.add_retention()
    b.add_memory_at_first_computations()
    b.add_memory_at_recomputations()
    for u in range(graph.n_ops):
        lits = [r for (i, v), r in b.R.items() if v == u]
        if lits:
            b.md.Add(sum(lits) <= caps[u])
    if objective:
        div = reduce(gcd, [int(c) for c in graph.cost], 0) or 1
        icost = [int(c) // div for c in graph.cost]
        obj = sum(icost[u] * r for (i, u), r in b.R.items())
        b.md.Minimize(obj)
    else:
        div, icost, obj = 1, None, None
    return GivenRelaxation(model=b.md, graph=graph, order=b.pi, R=b.R, S=b.S, T=b.T, icost=icost, cost_div=div,
                           objective_expr=obj, stats={"recompute_literals": len(b.R), "stages": b.b - b.a + 1},
                           window=(b.a, b.b))


class _Relax:
    """The pieces of :func:`build_given_relaxation`."""

    def __init__(self, g: Graph, md, budget: int, caps, deadline=None, prune: bool = True, compact: bool = False,
                 window: tuple[int, int] | None = None):
        self.g, self.md, self.deadline, self.compact = g, md, deadline, compact
        self.n = n = g.n_ops
        self.a, self.b = (0, n) if window is None else window
        if not 0 <= self.a <= self.b <= n:
            raise MemschedError(f"remat: a window of stages needs 0 <= a <= b <= {n}, got {window}")
        self.pi = g.given_order()
        self.pos = {v: i for i, v in enumerate(self.pi)}
        self.keep = g.always_resident_idx()
        unit = g.memory_unit()
        self.cap = (budget - g.always_resident()) // unit
        self.sz = [s // unit for s in g.size]
        self.ws = [w // unit for w in g.workspace]
        useful = [any(g.consumers[j] or j in g.output_idx for j in g.op_out[v]) for v in range(n)]
        recomputable = [useful[u] and caps[u] > 0 for u in range(n)]
        # last stage at which a recomputation of u / a resident copy of j can serve a reader
        # ("Pruning" in docs/remat.md); without pruning, every stage
        last_rec, last_use = [n] * n, {}
        if prune:
            for u in reversed(self.pi):
                last_rec[u] = max([self._last_read(j, recomputable, last_rec) for j in g.op_out[u]] + [-1])
        new = md.NewBoolVar if md is not None else (lambda name: None)  # md None: the index sets only
        a, b = self.a, self.b
        self.R = {(i, u): new(f"R_{i}_{u}") for i in range(a, b + 1) for u in range(n)
                  if self.pos[u] < i <= last_rec[u] and recomputable[u]}
        self.tens = [j for j in range(g.n_tensors) if j not in self.keep and (g.producer[j] != -1 or g.consumers[j])]
        self.birth = {j: (self.pos[g.producer[j]] + 1 if g.producer[j] != -1 else 0) for j in self.tens}
        self.S = {}
        for j in self.tens:
            last_use[j] = self._last_read(j, recomputable, last_rec) if prune else n
            for i in range(max(self.birth[j], a), min(last_use[j], b + 1) + 1):
                self.S[(i, j)] = 1 if i == 0 else new(f"S_{i}_{j}")
        self.T: dict = {}

    def _last_read(self, j: int, recomputable, last_rec) -> int:
        """The last stage at which some computation can read tensor j: n for a required output,
        else the latest of its consumers' first computations and (for a recomputable consumer)
        the last stage its recomputation can serve someone; -1 when nothing reads it."""
        if j in self.g.output_idx and self.b == self.n:
            return self.n
        return max([max(self.pos[c] if self.pos[c] <= self.b else -1, last_rec[c] if recomputable[c] else -1)
                    for c in self.g.consumers[j]] + [-1])

    def avail(self, i: int, j: int) -> list:
        """Literals of 'j is resident at the start of stage i or recomputed in it' (1 = true)."""
        lits = []
        s = self.S.get((i, j))
        if s is not None:
            lits.append(s)
        p = self.g.producer[j]
        if p != -1 and (i, p) in self.R:
            lits.append(self.R[(i, p)])
        return lits

    def _need(self, i: int, j: int, when=None) -> None:
        lits = self.avail(i, j)
        if any(_is_constant(x) for x in lits):
            return
        if not lits:
            if when is None:
                self.md.AddBoolOr([])  # no way to have j: the relaxation is infeasible
            else:
                self.md.Add(when == 0)
            return
        c = self.md.AddBoolOr(lits)
        if when is not None:
            c.OnlyEnforceIf(when)

    def add_dependencies(self) -> None:
        g = self.g
        for i in range(self.a, self.b + 1):
            if i < self.n:
                for j in set(g.op_in[self.pi[i]]) - self.keep:
                    self._need(i, j)
            for u in range(self.n):
                if (i, u) in self.R:
                    for j in set(g.op_in[u]) - self.keep:
                        self._need(i, j, self.R[(i, u)])
        for j in g.output_idx:
            if j not in self.keep and j in self.birth and self.b == self.n:
                self._need(self.n, j)

    def add_retention(self) -> None:
        g = self.g
        for (i1, j), s in self.S.items():
            i = i1 - 1
            if _is_constant(s) or i < self.birth[j] or i < self.a:
                continue
            p = g.producer[j]
            if p != -1 and self.pos[p] == i:
                continue  # pi[i] makes j
            self._need(i, j, s)

    def check_deadline(self, where: str) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise BuildDeadline(f"the relaxation's build reached its deadline at {where}")

    def add_memory_at_first_computations(self) -> None:
        g = self.g
        for i in range(self.a, min(self.b + 1, self.n)):
            if i % 16 == 0:
                self.check_deadline(f"stage {i}")
            v = self.pi[i]
            ins = set(g.op_in[v]) - self.keep
            outs = set(g.op_out[v])
            terms = [self.sz[j] * self.S[(i + 1, j)] for j in self.tens
                     if (i + 1, j) in self.S and j not in ins and j not in outs and self.sz[j]]
            self.md.Add(sum(terms) + sum(self.sz[j] for j in ins | outs) + self.ws[v] <= self.cap)

    def add_memory_at_recomputations(self) -> None:
        g, md = self.g, self.md
        for i in range(max(1, self.a), self.b + 1):
            rec = [u for u in range(self.n) if (i, u) in self.R]
            if not rec:
                continue
            T = {}
            for j in self.tens:
                s = self.S.get((i, j))
                if s is None or not self.sz[j]:
                    continue
                if i == self.n:
                    end = 1 if j in g.output_idx else 0
                else:
                    end = 1 if j in g.op_in[self.pi[i]] else self.S.get((i + 1, j), 0)
                if _is_constant(end) and end == 0:
                    continue
                t = md.NewBoolVar(f"T_{i}_{j}")
                p = g.producer[j]
                lits = [t, s.Not()] + ([] if _is_constant(end) else [end.Not()])
                if p != -1 and (i, p) in self.R:
                    lits.append(self.R[(i, p)])
                md.AddBoolOr(lits)  # S and end and not recomputed => T
                T[j] = t
                self.T[(i, j)] = t
            if self.compact:
                # one load variable per stage, O(degree) terms per literal (the same constraints:
                # load - the literal's own inputs and outputs among T + those in full)
                load = md.NewIntVar(0, sum(self.sz[j] for j in T), f"L_{i}")
                md.Add(load == sum(self.sz[j] * T[j] for j in T))
                for u in rec:
                    io = (set(g.op_in[u]) - self.keep) | set(g.op_out[u])
                    md.Add(load - sum(self.sz[j] * T[j] for j in io if j in T) + sum(self.sz[j] for j in io)
                           + self.ws[u] <= self.cap).OnlyEnforceIf(self.R[(i, u)])
                self.check_deadline(f"stage {i}")
                continue
            # written out per literal: one shared variable for the stage's load (O(degree) terms
            # per literal, ``compact``) was measured much slower to solve (segnet-train 0.8: no
            # proof in 30 s against 11 s), so it is used only where this form is too large
            for u in rec:
                io = (set(g.op_in[u]) - self.keep) | set(g.op_out[u])
                md.Add(sum(self.sz[j] * T[j] for j in T if j not in io) + sum(self.sz[j] for j in io) + self.ws[u]
                       <= self.cap).OnlyEnforceIf(self.R[(i, u)])
                self.check_deadline(f"stage {i}")
