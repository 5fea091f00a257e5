"""The down-set covering bound of one moment, by Lagrangian relaxation and minimum cuts: a
free-order lower bound on remat compute that scales to real training graphs (docs/remat.md,
"One moment by minimum cuts").

The down-set covering program (:mod:`.downset_bound`) asks, at the first computation of an
operator x, which operators ran before x (a down-set D), which of them run again after x,
and which tensors are resident at x; it is an integer program that CP-SAT does not solve on
graphs of hundreds of operators. Written with three Booleans per operator and one per
tensor, every constraint of one moment's program is an implication between two Booleans:

* ``D_v`` (v's first computation precedes x's), ``K_v`` (v is in D and does not run after x),
  ``F_t`` (tensor t, made by the last computation of its producer before x, is gone at x);
* ``K_v -> D_v``; ``D_v -> D_u`` for u a producer of an input of v (D is a down-set);
  ``F_t -> K_p`` (p the producer of t) and ``F_t -> K_c`` for every reader c of t (a tensor
  gone at x is read by nobody after x); ``D_v -> K_v`` when v may not run again (cap 0);
  ``F_t = 0`` for a required output; the ancestors of x in D, x and its descendants out.

Extra compute: ``sum_v cost_v (D_v - K_v)``; memory at x beyond x's own need:
``sum_t size_t (K_p - F_t)`` (graph inputs: ``K_p = 1``). With the memory row moved into
the objective with a multiplier lambda >= 0, the program is a minimum-weight closure, a
minimum cut (Picard 1976), and its value minus ``lambda * room`` is a lower bound on the
least extra compute of every schedule within B (weak duality). The best lambda is found by
the intersection of the lines of two minimizers (the dual is concave, piecewise linear).

The cut is computed with integer capacities rounded down: a maximum flow of the rounded
network is a flow of the exact one, so its value is at most the exact minimum cut (the
bound stays a bound). Holds for every schedule within B, any order, any caps (caps enter
only as cap 0), so for both order scopes. Tests: tests/test_remat_lagrange_bound.py
(against the brute-force referee).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memsched.formulations import Graph

__all__ = ["MomentLagrange", "moment_lagrange_bound", "lagrange_bound"]

#: the largest integer capacity used (sums of capacities stay below 2**63)
_CAP_TOTAL = 2 ** 60


@dataclass
class MomentLagrange:
    """The bound of one moment: ``extra`` (proven least extra compute), ``infeasible`` (no
    choice fits: no schedule fits B), ``lam`` the multiplier that gave it, ``cuts`` the
    number of minimum cuts solved."""
    moment: int
    extra: float = 0.0
    infeasible: bool = False
    lam: float = 0.0
    cuts: int = 0
    before: list | None = None  # the down-set D of a minimizer that fits (a guess; proves nothing)


class _Closure:
    """One moment's program as Boolean nodes, weights and implications."""

    def __init__(self, g: Graph, x: int, caps, anc: int, desc: int):
        n = g.n_ops
        self.g = g
        self.anc = anc
        self.last_sel: set = set()  # the source side of the last cut solved
        always = g.always_resident_idx()
        xin, xout = set(g.op_in[x]), set(g.op_out[x])
        self.need = sum(g.size[j] for j in always) + sum(g.size[j] for j in xin if j not in always) \
            + sum(g.size[j] for j in xout) + g.workspace[x]
        # state of each operator: 2 = in D for sure (ancestor), 0 = out (x, descendant), 1 = free
        state = [1] * n
        for v in range(n):
            if (anc >> v) & 1:
                state[v] = 2
            elif v == x or (desc >> v) & 1:
                state[v] = 0
        again = [(caps is None or caps[v] is None or caps[v] > 0) for v in range(n)]
        self.nodes = 0
        self.D: dict[int, int] = {}
        self.K: dict[int, int] = {}
        self.cost_terms: list[tuple[int, float]] = []  # (node, weight per unit cost) with sign
        self.mem_terms: list[tuple[int, float]] = []  # (node, weight per unit lambda) with sign
        self.const_cost = 0.0
        self.const_mem = 0.0
        self.edges: list[tuple[int, int]] = []  # implication a -> b (a selected => b selected)
        self.fixed_zero: set[int] = set()  # nodes that must be 0 (implication into nothing)

        def node():
            self.nodes += 1
            return self.nodes - 1

        for v in range(n):
            if state[v] == 0:
                continue
            if state[v] == 1:
                self.D[v] = node()
            if again[v]:
                self.K[v] = node()
            # K_v absent: v may not run again, so K_v = D_v
        # cost: cost_v (D_v - K_v); only operators that may run again contribute
        for v in range(n):
            if state[v] == 0 or not again[v] or g.cost[v] == 0:
                continue
            if state[v] == 2:
                self.const_cost += g.cost[v]
            else:
                self.cost_terms.append((self.D[v], g.cost[v]))
            self.cost_terms.append((self.K[v], -g.cost[v]))
        for v, kv in self.K.items():  # K_v -> D_v
            if v in self.D:
                self.edges.append((kv, self.D[v]))
        for v, dv in self.D.items():  # down-set; cap 0: D_v -> K_v is K_v = D_v (no K node)
            for i in g.op_in[v]:
                u = g.producer[i]
                if u >= 0 and state[u] == 1:
                    self.edges.append((dv, self.D[u]))
                elif u >= 0 and state[u] == 0:
                    self.fixed_zero.add(dv)

        def k_lit(v):
            """('const', 0/1) or ('node', id) for K_v."""
            if v < 0:
                return ("const", 1)  # a graph input: made before everything, never again
            if state[v] == 0:
                return ("const", 0)
            if v in self.K:
                return ("node", self.K[v])
            if state[v] == 2:
                return ("const", 1)
            return ("node", self.D[v])  # cap 0: K_v = D_v

        for j in range(g.n_tensors):
            if j in always or g.size[j] == 0 or j in xin or j in xout:
                continue
            p = g.producer[j]
            kp = k_lit(p)
            if kp == ("const", 0):
                continue
            s = g.size[j]
            if kp[0] == "const":
                self.const_mem += s
            else:
                self.mem_terms.append((kp[1], s))
            if j in g.output_idx:
                continue  # F_t = 0
            reads = [k_lit(c) for c in g.consumers[j]]
            if any(r == ("const", 0) for r in reads):
                continue  # a reader after x: F_t = 0
            f = node()
            self.mem_terms.append((f, -s))
            if kp[0] == "node":
                self.edges.append((f, kp[1]))
            for r in reads:
                if r[0] == "node":
                    self.edges.append((f, r[1]))

    def before(self, sel) -> list[int]:
        """The operators in D for the selection ``sel``: the ancestors of x and the selected
        free operators."""
        return sorted([v for v in range(self.g.n_ops) if (self.anc >> v) & 1]
                      + [v for v, nd in self.D.items() if nd in sel])

    def solve(self, lam: float):
        """min over closures of cost + lam * mem: (lower bound on the minimum, the
        minimizer's cost and mem, the magnitude of the terms summed). The bound is a flow
        value of the rounded-down network."""
        from ortools.graph.python import max_flow

        N = self.nodes
        w = [0.0] * N
        for a, c in self.cost_terms:
            w[a] += c
        for a, s in self.mem_terms:
            w[a] += lam * s
        const = self.const_cost + lam * self.const_mem
        total = sum(abs(v) for v in w) or 1.0
        kappa = _CAP_TOTAL / (4.0 * total)
        src, snk = N, N + 1
        big = _CAP_TOTAL
        mf = max_flow.SimpleMaxFlow()
        neg = 0.0
        for i, wi in enumerate(w):
            if wi < 0:
                neg += wi
                c = int(math.floor(-wi * kappa))
                if c > 0:
                    mf.add_arc_with_capacity(src, i, c)
            elif wi > 0:
                c = int(math.floor(wi * kappa))
                if c > 0:
                    mf.add_arc_with_capacity(i, snk, c)
        for a, b in self.edges:
            mf.add_arc_with_capacity(a, b, big)
        for a in self.fixed_zero:
            mf.add_arc_with_capacity(a, snk, big)
        mf.add_arc_with_capacity(snk, src, 0)  # both ends exist: else OR-Tools reports an empty source side
        if N == 0:
            return const, self.const_cost, self.const_mem, abs(const)
        status = mf.solve(src, snk)
        if status != mf.OPTIMAL:
            raise RuntimeError(f"max flow: status {status}")
        flow = mf.optimal_flow()
        if flow >= big:  # every closure selects a node fixed at 0: cannot happen (all-zero is a closure)
            raise RuntimeError("max flow: the all-zero closure was cut off")
        lower = const + neg + flow / kappa
        sel = set(mf.get_source_side_min_cut())
        self.last_sel = sel
        cost = self.const_cost + sum(c for a, c in self.cost_terms if a in sel)
        mem = self.const_mem + sum(s for a, s in self.mem_terms if a in sel)
        return lower, cost, mem, abs(const) + abs(neg) + flow / kappa


def moment_lagrange_bound(graph: Graph, B: int, x: int, caps=None, *, iters: int = 40,
                          masks=None) -> MomentLagrange:
    """The bound of the moment of ``x`` (module docstring) for budget ``B``."""
    g = graph
    anc, desc = masks if masks is not None else g.reach_masks()
    cl = _Closure(g, x, caps, anc[x], desc[x])
    out = MomentLagrange(moment=x)
    room = int(B) - cl.need
    if room < 0:
        out.infeasible = True
        return out
    lo_m, _c, _m, size = _min_memory(cl)  # the least memory of any choice, costs ignored
    out.cuts += 1
    if lo_m - 1e-9 * size > room + 0.5:  # memory is a whole number of bytes; the half byte absorbs float rounding
        out.infeasible = True
        return out

    def value(lam):
        """(L(lam) less the float margin, the minimizer's cost, its memory, the margin);
        L(lam) = min (cost + lam mem) - lam room."""
        lo, c, m, size = cl.solve(lam)
        out.cuts += 1
        # float rounding, on the safe side: a relative 1e-9 of every term summed
        margin = 1e-9 * (size + lam * abs(room) + 1.0)
        return lo - lam * room - margin, c, m, margin

    best, c0, m0, _ = value(0.0)
    if m0 <= room:  # the cheapest choice fits: its cost (0 but for forced reruns) is the bound
        out.extra = _whole(g, best)
        return out
    # a multiplier where the minimizer fits: grow from a byte worth all the compute
    lam_hi = (sum(abs(c) for _a, c in cl.cost_terms) + cl.const_cost + 1.0) / max(1.0, m0 - room)
    for _ in range(60):
        v, c_hi, m_hi, _ = value(lam_hi)
        if v > best:
            best, out.lam = v, lam_hi
        if m_hi <= room:
            out.before = cl.before(cl.last_sel)
            break
        lam_hi *= 4.0
    else:
        out.extra = _whole(g, best)
        return out
    lam_lo, line_lo, line_hi = 0.0, (c0, m0), (c_hi, m_hi)
    for _ in range(iters):
        (c1, m1), (c2, m2) = line_lo, line_hi
        lam = (c2 - c1) / (m1 - m2)  # where the lines c + lam (m - room) of the two minimizers meet
        if not (lam_lo < lam < lam_hi):
            lam = 0.5 * (lam_lo + lam_hi)
        v, c, m, margin = value(lam)
        if v > best:
            best, out.lam = v, lam
        pred = c1 + lam * (m1 - room)
        if v + 2 * margin >= pred:
            break  # no minimizer below the two lines (up to float rounding): lam is the dual's maximum
        if m > room:
            lam_lo, line_lo = lam, (c, m)
        else:
            lam_hi, line_hi = lam, (c, m)
            out.before = cl.before(cl.last_sel)
    out.extra = _whole(g, best)
    return out


def _whole(g: Graph, extra: float) -> float:
    """``extra`` (a proven lower bound, >= 0), rounded up to a whole number when every cost is
    one: then so is every schedule's extra compute."""
    extra = max(0.0, extra)
    if all(float(c).is_integer() for c in g.cost):
        return float(math.ceil(extra - 1e-6))
    return extra


def _min_memory(cl: _Closure):
    """``_Closure.solve`` with the costs left out: (lower bound on the least memory of any
    choice, 0, the minimizer's memory, magnitude)."""
    saved = cl.cost_terms, cl.const_cost
    cl.cost_terms, cl.const_cost = [], 0.0
    try:
        return cl.solve(1.0)
    finally:
        cl.cost_terms, cl.const_cost = saved


@dataclass
class LagrangeBound:
    """The largest one-moment bound: ``extra`` (proven least extra compute), ``infeasible`` and
    ``reason`` (a moment where no choice fits), ``moment`` (the operator whose moment gave it),
    ``before`` (its fitting minimizer's down-set: a guess for the schedule searches), ``stats``
    (moments done, of how many, seconds)."""
    extra: float = 0.0
    infeasible: bool = False
    reason: str | None = None
    moment: int | None = None
    before: list | None = None  # the best moment's minimizer that fits: the operators it runs first
    stats: dict = field(default_factory=dict)


def lagrange_bound(graph: Graph, B: int, caps=None, *, time_limit: float = 10.0, moments=None,
                   order: str = "free") -> LagrangeBound:
    """The largest one-moment bound over ``moments`` (default: every operator whose trap value
    exceeds B, highest first), within ``time_limit`` seconds.

    ``order="given"``: for the schedules whose first computations follow the given order, where
    the operators run before x are exactly those before x in that order (D fixed; docs/remat.md,
    "One moment by minimum cuts"); default moments: those whose memory in the given order without
    recomputation exceeds B, highest first."""
    from memsched.solvers.ordering.bounds import trap_solver

    if order not in ("free", "given"):
        raise ValueError(f"lagrange_bound: order must be 'free' or 'given', got {order!r}")
    t0 = time.perf_counter()
    g = graph
    out = LagrangeBound()
    if order == "given":
        masks = _given_masks(g)
        if moments is None:
            moments = _given_tight(g, B)
    elif moments is None:
        ts = trap_solver(g)
        tight = []
        for v in range(g.n_ops):
            if time.perf_counter() - t0 > time_limit:
                break
            tv = ts.trap(v)
            if tv > B:
                tight.append((tv, v))
        tight.sort(key=lambda t: (-t[0], t[1]))
        moments = [v for _tv, v in tight]
    if order == "free":
        masks = g.reach_masks()
    done = 0
    for x in moments:
        if time.perf_counter() - t0 > time_limit:
            break
        r = moment_lagrange_bound(g, B, x, caps, masks=masks)
        done += 1
        if r.infeasible:
            out.infeasible, out.moment = True, x
            out.reason = f"no schedule fits budget {B}: at the first computation of {g.ops[x].name!r} every " \
                         "choice of what ran before, what runs again and what stays resident exceeds it" + \
                         (" (first computations in the given order)" if order == "given" else "")
            break
        if r.extra > out.extra:
            out.extra, out.moment, out.before = r.extra, x, r.before
    out.stats = {"moments": done, "of": len(moments), "s": round(time.perf_counter() - t0, 3)}
    return out


def _given_masks(g: Graph) -> tuple[list[int], list[int]]:
    """Per operator x: the bitmask of the operators before x in the given order (in D) and of
    those after it (out of D), in place of ancestors and descendants."""
    pi = g.given_order()
    before, after = [0] * g.n_ops, [0] * g.n_ops
    m = 0
    for v in pi:
        before[v], m = m, m | (1 << v)
    m = 0
    for v in reversed(pi):
        after[v], m = m, m | (1 << v)
    return before, after


def _given_tight(g: Graph, B: int) -> list[int]:
    """The operators whose memory while they run, in the given order without recomputation,
    exceeds B, highest first: elsewhere the program has a solution with no rerun (the order
    itself), so the bound is 0."""
    from memsched.formulations import Schedule, evaluate
    from memsched.formulations.schedule import COMPUTE

    sched = Schedule.from_order(g, g.given_order())
    ev = evaluate(g, sched)
    mem = [(ev.timeline[e], x) for e, (kind, x) in enumerate(sched.events) if kind == COMPUTE]
    return [x for m, x in sorted(mem, key=lambda t: (-t[0], t[1])) if m > B]
