"""Exact capped recomputation on a series-parallel class by a knapsack DP.

The class ("nested-skip chains", docs/reductions.md section 3). A graph is in
the class when

1. its operator DAG is two-terminal series-parallel (checked with
   memsched.solvers.special.series_parallel; otherwise :class:`NotSeriesParallel`);
2. every operator has exactly one output tensor, and consecutive operators of
   the order feed each other (a Hamiltonian path v_0 -> v_1 -> ... -> v_{m-1},
   hence the topological order is unique and free-order = given-order);
3. the tensor of v_a is read by v_{a+1} and by at most one more operator v_b
   (b > a + 1: a *skip edge*); skip edges never cross (implied by 1 and 2);
4. required outputs are graph inputs or the last operator's tensor;
5. a *droppable* skip edge (positive size, cap(v_a) >= 1, b >= a + 3) has a
   source v_a without workspace whose inputs are pinned or zero-byte tensors.

Then every schedule is dominated by the canonical one for a set D of dropped
skip edges: run the order; free the tensor of each dropped edge right after
its early use and recompute v_a just before v_b. The memory of step k is
``base_k + sum of retained droppable edges spanning k`` and the compute is
``baseline + sum_{D} w_a``. Skip edges are laminar, so

    f_A(u) = sum over child edges C of min(f_C(u + s_C), w_C + f_C(u))

over the laminar tree, where ``u`` is the memory used by retained ancestors and
``f_A(u) = inf`` once a step directly under A has ``base_k + u > B``. This is a
knapsack DP: O(#edges x B) time, exact in integers (costs with a common
power-of-two denominator are scaled; the result says so). The peak objective
(least peak with extra compute <= E) is answered by binary search on B.
The knapsack gadget (instances.gadgets.knapsack_gadget) is the nested chain
of this class.
"""
from __future__ import annotations

import math
from functools import reduce
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from memsched.formulations import Graph, MemschedError, Schedule
from memsched.formulations.schedule import COMPUTE, FREE
from memsched.solvers.result import SolveResult, Status, Timer, make_result
from memsched.solvers.special.series_parallel import NotSeriesParallel, decompose_graph

__all__ = ["OutsideClass", "SPClass", "analyze", "solve", "normalize_caps", "SCOPE"]

# The class solved exactly: every schedule of a graph in the class above, free order
# (the graph's topological order is unique, so the free and the given order coincide),
# with the caps as given (docs/claims.md).
SCOPE = "free"


class OutsideClass(MemschedError):
    """The graph is series-parallel but outside the class the knapsack DP covers."""


def normalize_caps(graph: Graph, cap) -> list:
    """None (unbounded), an int for every operator, a dict {name: int} (others
    unbounded) or a list per operator -> list of int|None (memsched.solvers.remat.dispatch.resolve_caps)."""
    from memsched.solvers.remat.dispatch import resolve_caps

    return resolve_caps(graph, cap) or [None] * graph.n_ops


@dataclass
class Arc:
    a: int  # position of the producer
    b: int  # position of the late consumer
    size: int
    cost: object  # exact cost (int or Fraction)
    droppable: bool


@dataclass
class SPClass:
    order: list[int]
    base: list[int]  # memory of step k with every droppable edge dropped
    initial: int
    arcs: list[Arc]  # droppable edges only
    baseline: object


def _exact(c: float):
    return int(c) if float(c).is_integer() else Fraction(c)


def analyze(graph: Graph, cap=None) -> SPClass:
    """Check the class and compute per-step base memory and the droppable edges.
    Raises NotSeriesParallel or OutsideClass with the reason."""
    nm = graph.ops
    try:
        decompose_graph(graph)
    except NotSeriesParallel as e:
        raise NotSeriesParallel(f"sp-knapsack: graph {graph.name!r} is not series-parallel ({e})") from None
    caps = normalize_caps(graph, cap)
    m = graph.n_ops
    for v in range(m):
        if len(graph.op_out[v]) != 1:
            raise OutsideClass(f"sp-knapsack: operator {nm[v].name!r} has {len(graph.op_out[v])} outputs; the class needs one")
    order = graph.given_order()
    pos = [0] * m
    for k, v in enumerate(order):
        pos[v] = k
    out = [graph.op_out[v][0] for v in order]  # tensor of step k
    for k in range(m - 1):
        if out[k] not in graph.op_in[order[k + 1]]:
            raise OutsideClass(f"sp-knapsack: operator {nm[order[k]].name!r} does not feed {nm[order[k + 1]].name!r}; "
                               "the class needs a Hamiltonian path (a unique topological order)")
    size = graph.size
    keep_inputs = graph.pinned_idx | graph.output_idx
    for j in graph.output_idx:
        p = graph.producer[j]
        if p != -1 and pos[p] != m - 1:
            raise OutsideClass(f"sp-knapsack: required output {graph.tensors[j].name!r} is not produced by the last operator")
    const = sum(size[j] for j in graph.input_idx if j in keep_inputs)
    initial = sum(size[j] for j in graph.input_idx)
    last_use = {}
    for j in graph.input_idx:
        if j not in keep_inputs:
            last_use[j] = max((pos[c] for c in graph.consumers[j]), default=-1)
    arcs_all = []
    for k in range(m):
        cons = sorted(pos[c] for c in graph.consumers[out[k]])
        far = [p for p in cons if p != k + 1]
        if len(far) > 1:
            raise OutsideClass(f"sp-knapsack: tensor {graph.tensors[out[k]].name!r} has {len(far)} late consumers; "
                               "the class allows one skip edge per tensor")
        if far:
            b = far[0]
            v = order[k]
            c = caps[v]
            drop = size[out[k]] > 0 and (c is None or c >= 1) and b >= k + 3
            if drop:
                bad = [graph.tensors[j].name for j in graph.op_in[v] if j not in graph.pinned_idx and size[j] > 0]
                if bad or graph.workspace[v]:
                    why = f"reads {bad[0]!r} ({size[graph.tensor_index[bad[0]]]} bytes)" if bad else "has workspace"
                    raise OutsideClass(f"sp-knapsack: operator {nm[v].name!r} starts a droppable skip edge but {why}; "
                                       "the class needs its inputs pinned or zero-byte")
            arcs_all.append(Arc(k, b, size[out[k]], _exact(graph.cost[v]), drop))
    # non-crossing check (implied by series-parallel + Hamiltonian path; kept as a guard)
    st = []
    for arc in sorted(arcs_all, key=lambda x: (x.a, -x.b)):
        while st and st[-1].b <= arc.a:
            st.pop()
        if st and arc.b > st[-1].b:
            raise OutsideClass(f"sp-knapsack: skip edges from {nm[order[st[-1].a]].name!r} and {nm[order[arc.a]].name!r} cross")
        st.append(arc)
    diff = [0] * (m + 1)  # mandatory edges spanning their interior
    for arc in arcs_all:
        if not arc.droppable and arc.b > arc.a + 2:
            diff[arc.a + 2] += arc.size
            diff[arc.b] -= arc.size
    ends = [0] * m
    for arc in arcs_all:
        ends[arc.b] += arc.size
    base = []
    run = 0
    for k in range(m):
        run += diff[k]
        v = order[k]
        mem = const + run + size[out[k]] + graph.workspace[v] + ends[k]
        if k > 0:
            mem += size[out[k - 1]]
        mem += sum(size[j] for j, lu in last_use.items() if lu >= k)
        base.append(mem)
    baseline = sum(_exact(c) for c in graph.cost)
    return SPClass(order, base, initial, [x for x in arcs_all if x.droppable], baseline)


def _scale(costs) -> tuple[int, list[int]] | None:
    den = 1
    for c in costs:
        if isinstance(c, Fraction):
            den = den * c.denominator // math.gcd(den, c.denominator)
    if den > 2 ** 30:
        return None
    sc = [int(c * den) for c in costs]
    if sum(sc) >= 2 ** 60:
        return None
    return den, sc


def _dp(cls: SPClass, B: int, scaled: list[int]):
    """Min scaled extra compute for budget B, and the dropped arc indices; (None, reason) if infeasible."""
    m = len(cls.base)
    if cls.initial > B:
        return None, f"the graph inputs alone need {cls.initial} bytes > budget {B}"
    arcs = cls.arcs
    # laminar tree over interiors [a+2, b-1]; root = -1 with interior [0, m-1]
    idx = sorted(range(len(arcs)), key=lambda i: (arcs[i].a, -arcs[i].b))
    parent = {}
    children = {-1: []}
    st = []
    for i in idx:
        lo, hi = arcs[i].a + 2, arcs[i].b - 1
        while st and arcs[st[-1]].b - 1 < lo:
            st.pop()
        p = st[-1] if st else -1
        parent[i] = p
        children.setdefault(p, []).append(i)
        children.setdefault(i, [])
        st.append(i)
    # max base over each node's interior (prefix-max via sparse scan; small m)
    base = cls.base
    def interior(i):
        return (0, m - 1) if i == -1 else (arcs[i].a + 2, arcs[i].b - 1)
    M = {}
    for i in [-1] + idx:
        lo, hi = interior(i)
        M[i] = max(base[lo:hi + 1])
    if M[-1] > B:
        k = max(range(m), key=lambda k: base[k])
        return None, (f"step {k} needs {base[k]} bytes even with every droppable tensor recomputed > budget {B}")
    INF = np.int64(2 ** 62)
    # count bytes in units of the gcd of every size the DP adds (gigabyte budgets of
    # tensors that are multiples of, e.g., 512 bytes index arrays of B / 512 entries);
    # with every memory figure a multiple of it, fig <= B iff fig / unit <= B // unit
    unit = reduce(math.gcd, [x for x in list(base) + [a.size for a in arcs] if x > 0], 0) or 1
    f = {}
    choice = {}
    for i in reversed([-1] + idx):  # children (later in idx, deeper) are done first
        U = (B - M[i]) // unit
        acc = np.zeros(U + 1, dtype=np.int64)
        for c in children[i]:
            fc = f.pop(c)
            s, w = arcs[c].size // unit, scaled[c]
            keep = np.full(U + 1, INF, dtype=np.int64)
            n_ok = max(0, min(U + 1, len(fc) - s))
            if n_ok:
                keep[:n_ok] = fc[s:s + n_ok]
            drop = np.minimum(fc[:U + 1] + w, INF)
            ch = keep <= drop
            choice[c] = ch
            acc = np.minimum(acc + np.where(ch, keep, drop), INF)
        f[i] = acc
    best = int(f[-1][0])
    if best >= INF:
        return None, f"no choice of recomputed tensors fits budget {B}"
    dropped = []
    stack = [(-1, 0)]
    while stack:
        i, u = stack.pop()
        for c in children[i]:
            if choice[c][u]:
                stack.append((c, u + arcs[c].size // unit))
            else:
                dropped.append(c)
                stack.append((c, u))
    return best, sorted(dropped)


def canonical_schedule(graph: Graph, cls: SPClass, dropped: list[int]) -> Schedule:
    """Run the order; tensors of dropped skip edges are freed after their early use
    and recomputed just before their late use. Zero-byte tensors are never freed."""
    order = cls.order
    m = len(order)
    size = graph.size
    drop_at = {}  # late position -> producer positions to recompute
    dropped_pos = set()
    for i in dropped:
        arc = cls.arcs[i]
        drop_at.setdefault(arc.b, []).append(arc.a)
        dropped_pos.add(arc.a)
    pos = {v: k for k, v in enumerate(order)}
    keep = graph.pinned_idx | graph.output_idx
    last = {}
    for j in range(graph.n_tensors):
        if j in keep or size[j] == 0:
            continue
        cons = [pos[c] for c in graph.consumers[j]]
        if graph.producer[j] == -1:
            last[j] = max(cons, default=-1)
        else:
            p = pos[graph.producer[j]]
            far = [c for c in cons if c != p + 1]
            if far and p in dropped_pos:
                last[j] = p + 1  # freed after the early use; freed again after the late use
                last.setdefault(("late", far[0]), []).append(j)
            else:
                last[j] = max(cons, default=p)
    free_after = {}
    for j, k in last.items():
        if isinstance(j, tuple):
            continue
        free_after.setdefault(k, []).append(j)
    ev = [(FREE, j) for j in free_after.pop(-1, [])]
    for k in range(m):
        for a in sorted(drop_at.get(k, [])):
            ev.append((COMPUTE, order[a]))
        ev.append((COMPUTE, order[k]))
        for j in sorted(free_after.get(k, [])):
            ev.append((FREE, j))
        for j in sorted(last.get(("late", k), [])):
            ev.append((FREE, j))
    return Schedule(tuple(ev))


def solve(graph: Graph, budget_bytes=None, cap=None, objective: str = "compute", eps: float = 0.0,
          time_limit: float = 60.0, *, extra_compute=None) -> SolveResult:
    """Exact selective recomputation on the class above (module docstring).

    ``objective="compute"``: least compute with peak <= ``budget_bytes``.
    ``objective="peak"``: least peak with compute <= (1 + eps) x baseline, or
    <= baseline + ``extra_compute`` when that absolute allowance is given (the
    knapsack gadget's form); ``budget_bytes`` is then ignored.
    Status ``optimal`` (lower_bound = the optimum) or ``infeasible``.
    Raises NotSeriesParallel / OutsideClass for graphs outside the class.
    """
    if objective not in ("compute", "peak"):
        raise MemschedError(f"sp-knapsack: objective must be 'compute' or 'peak', got {objective!r}")
    with Timer() as tm:
        cls = analyze(graph, cap)
        costs = [a.cost for a in cls.arcs]
        sc = _scale(costs)
        if sc is None:
            raise MemschedError("sp-knapsack: operator costs have no small common denominator; scale them to integers")
        den, scaled = sc
        params = {"objective": objective, "cap": cap, "cost_scale": den, "droppable": len(cls.arcs)}
        if objective == "compute":
            if budget_bytes is None:
                raise MemschedError("sp-knapsack: a budget in bytes is required for objective 'compute'")
            B = int(budget_bytes)
            params["budget"] = B
            best, info = _dp(cls, B, scaled)
            if best is None:
                return make_result(graph, None, solver="sp-knapsack", scope=SCOPE, status=Status.INFEASIBLE, objective=objective,
                                   wall_s=tm.elapsed(), params=params, message=info)
            dropped = info
        else:
            if extra_compute is not None:
                if extra_compute < 0:
                    raise MemschedError(f"sp-knapsack: extra compute allowance must be >= 0, got {extra_compute}")
                allow = Fraction(extra_compute) * den
            else:
                if eps < 0:
                    raise MemschedError(f"sp-knapsack: eps must be >= 0, got {eps}")
                allow = Fraction(eps) * Fraction(float(cls.baseline)) * den
                allow += Fraction(1, 10 ** 9) * max(1, abs(allow))  # float eps: tolerate rounding
            params["extra_compute_allowed"] = float(allow / den)
            lo = max(max(cls.base), cls.initial)
            hi = lo + sum(a.size for a in cls.arcs)
            best, info = _dp(cls, hi, scaled)
            if best is None:  # every droppable edge kept fits hi by construction: a bug if not
                from memsched.solvers.result import SolverDisagreement

                raise SolverDisagreement(f"sp-knapsack: no solution at the all-retained peak {hi} ({info})")
            while lo < hi:
                mid = (lo + hi) // 2
                b2, i2 = _dp(cls, mid, scaled)
                if b2 is not None and b2 <= allow:
                    hi = mid
                else:
                    lo = mid + 1
            best, dropped = _dp(cls, lo, scaled)
            B = lo
        sched = canonical_schedule(graph, cls, dropped)
    extra = {"recompute": [graph.ops[cls.order[cls.arcs[i].a]].name for i in dropped],
             "baseline_compute": float(cls.baseline), "budget": B if objective == "compute" else None}
    claimed = float(cls.baseline + Fraction(best, den)) if objective == "compute" else B
    res = make_result(graph, sched, solver="sp-knapsack", scope=SCOPE, status=Status.OPTIMAL, objective=objective, claimed=claimed,
                      lower_bound=claimed, wall_s=tm.s, params=params, extra=extra)
    if objective == "compute" and res.peak > B:  # cannot happen (proof); guard against regressions
        from memsched.solvers.result import SolverDisagreement

        raise SolverDisagreement(f"sp-knapsack: schedule peak {res.peak} exceeds budget {B}")
    return res
