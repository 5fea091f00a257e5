"""The down-set covering bound: a free-order lower bound on remat compute (docs/remat.md,
"Down-set covering bound").

The moment-cut covering bound (:mod:`.cut_bound`) looks at each operator x's first
computation and counts only the tensors whose producer is an ancestor of x and whose reader
is a descendant: those cross x in every order. Here the operators that run before x are a
choice of the program: a down-set D of operators with every ancestor of x in it and x and
its descendants out. A tensor made in D that a reader outside D (or the end: a required
output) still needs is resident at x, or its producer runs again after x; a producer that
runs again after x reads its inputs then, so each of them is resident at x or made again
after x too (closure). One program over the moments whose trap value (the least memory any
order has while x runs, :func:`memsched.solvers.ordering.bounds.trap_values`) exceeds B,
sharing the "runs twice" Booleans y, minimizing the cost of the operators that run twice.
A moment whose trap value is at most B never binds (y = 0 meets its row), so leaving it out
loses nothing.

Holds for every schedule within B (any order, any caps: caps enter only as y = 0 for cap
0), so for both order scopes. Tests: tests/test_remat_downset_bound.py (against the
brute-force referee).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memsched.formulations import Graph

__all__ = ["DownsetBound", "downset_cover_bound", "MAX_MOMENTS"]

#: at most this many moments (the highest trap values first)
MAX_MOMENTS = 64
#: seconds at most for each moment's program alone
SINGLE_S = 2.0


@dataclass
class DownsetBound:
    """``extra``: proven least extra compute of every schedule within B (any order);
    ``infeasible``: no schedule fits B; ``complete``: the program over every moment whose
    trap value exceeds B was solved to optimality; ``stats``: sizes and times."""
    extra: float = 0.0
    infeasible: bool = False
    reason: str | None = None
    complete: bool = False
    stats: dict = field(default_factory=dict)


def downset_cover_bound(graph: Graph, B: int, caps=None, *, time_limit: float = 10.0, workers: int = 1,
                        seed: int = 0, max_moments: int = MAX_MOMENTS) -> DownsetBound:
    """The down-set covering bound (module docstring) for budget ``B`` (bytes); ``caps``:
    extra computations per operator (None or None entries: unbounded; only cap 0 matters).
    Stops at ``time_limit`` seconds with the bound proven so far (0 if none)."""
    from ortools.sat.python import cp_model

    from memsched.solvers.engines.cpsat import solve_cpsat
    from memsched.solvers.ordering.bounds import trap_solver
    from memsched.solvers.remat.cut_bound import _int_costs

    t0 = time.perf_counter()
    deadline = t0 + max(0.0, float(time_limit))
    g = graph
    n = g.n_ops
    out = DownsetBound()
    if n == 0:
        out.complete = True
        return out
    B = int(B)
    ts = trap_solver(g)
    tight = []
    for v in range(n):
        if time.perf_counter() > deadline:
            out.stats["trap_values"] = f"{v} of {n} in time"
            return out
        tv = ts.trap(v)
        if tv > B:
            tight.append((tv, v))
    tight.sort(key=lambda t: (-t[0], t[1]))
    moments = [v for _tv, v in tight[:max_moments]]
    out.stats.update({"tight_moments": len(tight), "moments": len(moments)})
    if not moments:
        out.complete = True
        out.stats["s"] = round(time.perf_counter() - t0, 3)
        return out
    anc, desc = g.reach_masks()
    always = g.always_resident_idx()
    const = sum(g.size[j] for j in always)
    outs = g.output_idx
    scale, ic = _int_costs([g.cost[v] for v in range(n)])
    again = [(caps is None or caps[v] is None or caps[v] > 0) for v in range(n)]

    def build(xs):
        """(model, None) for the moments ``xs``; (None, reason) when one of them alone
        refutes B; (None, None) past the deadline."""
        m = cp_model.CpModel()
        y: dict[int, object] = {}

        def Y(p):
            if p not in y:
                y[p] = m.NewBoolVar(f"y{p}")
            return y[p]

        for x in xs:
            need = const + sum(g.size[j] for j in set(g.op_in[x]) if j not in always) \
                + sum(g.size[j] for j in g.op_out[x]) + g.workspace[x]
            room = B - need
            if room < 0:  # x's own need (the local facts catch this first)
                return None, f"no schedule fits budget {B}: operator {g.ops[x].name!r} needs {need} bytes " \
                    "with its inputs and outputs (and the always-resident inputs)"
            A, Dd, xin, xout = anc[x], desc[x], set(g.op_in[x]), set(g.op_out[x])
            d: dict[int, object] = {}
            r: dict[int, object] = {}
            a: dict[int, object] = {}
            terms = []

            def D(w, A=A, Dd=Dd, x=x, d=d):  # 1, 0 or a literal: w's first run precedes x's
                if (A >> w) & 1:
                    return 1
                if w == x or (Dd >> w) & 1:
                    return 0
                if w not in d:
                    d[w] = m.NewBoolVar("")
                return d[w]

            def R(j, r=r, terms=terms):  # tensor j resident at x (counted in the memory row)
                if j not in r:
                    r[j] = m.NewBoolVar("")
                    terms.append((g.size[j], r[j]))
                return r[j]

            def Again(p, a=a):  # p runs after x: a second run (its first precedes x's), so y_p
                if p not in a:
                    a[p] = m.NewBoolVar("")
                    m.AddImplication(a[p], Y(p))
                return a[p]

            for j in range(g.n_tensors):
                if j in always or g.size[j] == 0 or j in xin or j in xout:
                    continue
                p = g.producer[j]
                dp = 1 if p == -1 else D(p)
                if isinstance(dp, int) and dp == 0:
                    continue  # made after x
                req = j in outs
                dcs = [D(c) for c in g.consumers[j] if c != x]
                if not req and all(isinstance(dc, int) and dc == 1 for dc in dcs):
                    continue  # no reader after x (or none at all): it may be gone
                if p != -1 and again[p] and ic[p] == 0:
                    continue  # running p again costs nothing: no row can charge for it
                rj = R(j)
                back = Again(p) if (p != -1 and again[p]) else 0
                if req:
                    m.Add(rj >= dp - back)
                else:
                    for dc in dcs:
                        if not (isinstance(dc, int) and dc == 1):
                            m.Add(rj >= dp - dc - back)
            # closure: an operator run again after x reads its inputs then
            done: set[int] = set()
            while len(done) < len(a):
                for p in [q for q in a if q not in done]:
                    done.add(p)
                    for u in set(g.op_in[p]):
                        if u in always or g.size[u] == 0 or u in xin or u in xout:
                            continue  # resident at x anyway (counted in need_x) or weighs nothing
                        q = g.producer[u]
                        if q == -1:  # a graph input freed before x never comes back
                            m.Add(R(u) >= a[p])
                            continue
                        dq = D(q)
                        if isinstance(dq, int) and dq == 0:
                            continue  # made after x by q's first run
                        if again[q] and ic[q] == 0:
                            continue  # made again for free (its own inputs not followed: a relaxation)
                        if again[q]:
                            m.Add(R(u) >= a[p] + dq - 1 - Again(q))
                        else:
                            m.Add(R(u) >= a[p] + dq - 1)
            closed: set[int] = set()
            while len(closed) < len(d):  # D is a down-set (D(p) below may add operators)
                for w, lit in [(w, lit) for w, lit in d.items() if w not in closed]:
                    closed.add(w)
                    for i in g.op_in[w]:
                        p = g.producer[i]
                        if p == -1:
                            continue
                        dp = D(p)
                        if isinstance(dp, int):
                            if dp == 0:
                                m.Add(lit == 0)
                        else:
                            m.AddImplication(lit, dp)
            if terms:
                m.Add(sum(s * v for s, v in terms) <= room)
            if time.perf_counter() > deadline:
                return None, None
        m.Minimize(sum(ic[p] * lit for p, lit in y.items()))
        return m, None

    def solve(m, limit):
        """(extra proven, status); status "infeasible" refutes B."""
        run = solve_cpsat(m, time_limit=limit, workers=workers, seed=seed, name="remat-downset-cover")
        if run.interrupted:
            raise KeyboardInterrupt
        if run.status == "infeasible":
            return 0.0, "infeasible"
        bound = run.solver.BestObjectiveBound()
        return (max(0.0, math.ceil(bound - 1e-6) / scale) if math.isfinite(bound) else 0.0), run.status

    refuted = ("no schedule fits budget {B}: at the first computation of {what} every choice of the "
               "operators run before it leaves more resident bytes than the budget, whatever runs again "
               "(docs/remat.md, \"Down-set covering bound\")")
    # each moment alone first (a program with fewer rows: a weaker bound, often solved at once),
    # the most demanding first, each with a share of half the time; then all of them together
    singles = 0
    single_status = "not solved"
    for k, x in enumerate(moments):
        left = (deadline - time.perf_counter()) / 2
        if left < 0.05:
            break
        m, why = build([x])
        if m is None:
            if why is None:
                break
            out.infeasible = out.complete = True
            out.reason = why
            return out
        val, status = solve(m, min(left / (len(moments) - k), SINGLE_S))
        singles += 1
        single_status = status
        if status == "infeasible":
            out.infeasible = out.complete = True
            out.reason = refuted.format(B=B, what=repr(g.ops[x].name))
            return out
        out.extra = max(out.extra, val)
    out.stats["single_moments"] = singles
    out.stats["single_extra"] = out.extra
    if len(moments) > 1:
        m, why = build(moments)
        if m is None:
            if why is not None:
                out.infeasible = out.complete = True
                out.reason = why
            return out
        out.stats.update({"variables": len(m.Proto().variables), "constraints": len(m.Proto().constraints),
                          "build_s": round(time.perf_counter() - t0, 3)})
        left = deadline - time.perf_counter()
        if left < 0.05:
            return out
        val, status = solve(m, left)
        if status == "infeasible":
            out.infeasible = out.complete = True
            out.reason = refuted.format(B=B, what=f"one of {len(moments)} operators")
            return out
        out.extra = max(out.extra, val)
    else:
        status = single_status
    out.complete = status == "optimal" and len(moments) == len(tight)
    out.stats.update({"status": status, "s": round(time.perf_counter() - t0, 3)})
    return out
