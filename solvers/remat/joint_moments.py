"""Several moments at once: a lower bound on remat compute for the given-order class
(docs/remat.md, "Several moments at once").

The one-moment program of :mod:`.lagrange_bound` asks, at the first computation of an
operator x, which operators run again after x (``K_v = 0``) and which tensors are gone for
good (``F_t``); in the given-order class the operators before x are known (the given prefix).
One moment at a time, an operator's rerun may serve every moment. Here the programs of the
tightest moments share one objective and are tied together:

* ``K_v`` at an earlier moment implies ``K_v`` at a later one (no run after x1 means none
  after x2);
* each operator's rerun is paid once, at the first chosen moment after its first
  computation;
* for an operator v that may run only twice (cap 1): if v runs again after x2, that is its
  only rerun, so the copy of an output t that a first computation between x1 (excluded) and
  x2 (included) reads is the one v's first computation made, resident at x1; the memory
  row of x1 gets ``size_t (1 - K_v at x2)`` (t is not counted there otherwise: ``K_v`` at x1
  is 0 too).

Every schedule of the given-order class within B and the caps gives a solution whose
objective is at most its extra compute; so CP-SAT's proven bound on the joint program is a
lower bound for the class, and a program with no solution refutes B for the class. The
program grows: the tightest few moments first, then twice as many while each is solved to
optimality within its share of the time and raises the bound.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from memsched.formulations import Graph

__all__ = ["JointMomentBound", "joint_moment_bound", "build_joint_program"]

#: moments in the first program; each later program doubles it
FIRST_MOMENTS = 4


@dataclass
class JointMomentBound:
    """``extra``: proven least extra compute of every schedule of the given-order class within
    B and the caps; ``infeasible``: no such schedule (``reason`` says why); ``moments``: the
    moments of the program that proved ``extra``; ``checks``: (extra, what, seconds) per
    program solved; ``resume``: the program size that was cut short by the time limit (a
    later call with more time may start there), None when the growth ended by its own rules
    (every moment taken, or a doubling that proved nothing more)."""
    extra: float = 0.0
    infeasible: bool = False
    reason: str | None = None
    moments: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    resume: int | None = None


def build_joint_program(graph: Graph, B: int, caps, moments, *, couple: bool = True):
    """The joint program (module docstring) of ``moments`` (operators) as a CP-SAT model.

    Returns ``(model, objective, scale, infeasible_at)``: the objective's integer costs are
    ``scale`` times the graph's (``cut_bound._int_costs``), so a bound on it divided by
    ``scale`` bounds the extra compute; ``infeasible_at`` is a moment whose own need exceeds
    B (then no schedule of the class fits B, and the model is None). ``couple=False`` leaves
    out the cap-1 rows (a weaker program, still a bound)."""
    from ortools.sat.python import cp_model

    from memsched.solvers.remat.cut_bound import _int_costs
    from memsched.solvers.remat.lagrange_bound import _Closure, _given_masks

    g = graph
    pos = {v: i for i, v in enumerate(g.given_order())}
    xs = sorted(set(int(x) for x in moments), key=lambda v: pos[v])
    before, after = _given_masks(g)
    md = cp_model.CpModel()
    K: dict[tuple[int, int], object] = {}  # (moment, op) -> K literal
    rows = {}
    for x in xs:
        cl = _Closure(g, x, caps, before[x], after[x])
        room = int(B) - cl.need
        if room < 0:
            return None, None, 1.0, x
        lit = [md.NewBoolVar(f"m{x}_{i}") for i in range(cl.nodes)]
        for a, b in cl.edges:
            md.AddImplication(lit[a], lit[b])
        for a in cl.fixed_zero:
            md.Add(lit[a] == 0)
        for v, node in cl.K.items():
            K[(x, v)] = lit[node]
        terms = [s * lit[a] for a, s in cl.mem_terms]
        rows[x] = (terms, room - int(cl.const_mem))  # whole bytes (the closure keeps them as floats)
    for x1, x2 in zip(xs, xs[1:]):  # no run after x1 => none after x2
        for v in range(g.n_ops):
            if (x1, v) in K and (x2, v) in K:
                md.AddImplication(K[(x1, v)], K[(x2, v)])
    if couple and caps is not None:
        from bisect import bisect_left

        always = g.always_resident_idx()
        xpos = [pos[x] for x in xs]
        for i, x1 in enumerate(xs):
            terms, _room = rows[x1]
            xin = set(g.op_in[x1])
            for v in range(g.n_ops):
                if caps[v] != 1 or (x1, v) not in K:
                    continue
                for t in g.op_out[v]:
                    if t in always or t in xin or not g.size[t]:
                        continue
                    later = [pos[c] for c in g.consumers[t] if pos[c] > pos[x1]]
                    if not later:
                        continue
                    k = bisect_left(xpos, min(later), lo=i + 1)  # the first chosen x2 at or after that read
                    if k < len(xs) and (xs[k], v) in K:
                        terms.append(g.size[t] * (1 - K[(xs[k], v)]))
    for x in xs:
        terms, room = rows[x]
        md.Add(sum(terms) <= room)
    scale, icost = _int_costs(g.cost)
    first = {}
    for x in xs:  # the first chosen moment after each operator's first computation
        for v in range(g.n_ops):
            if (x, v) in K and v not in first:
                first[v] = K[(x, v)]
    obj = sum(icost[v] * (1 - k) for v, k in first.items() if icost[v])
    md.Minimize(obj)
    return md, obj, scale, None


def joint_moment_bound(graph: Graph, B: int, caps=None, *, time_limit: float = 10.0, workers: int = 1,
                       seed: int = 0, upto: float | None = None, moments=None, couple: bool = True,
                       start: int | None = None, known: float = 0.0) -> JointMomentBound:
    """The joint bound (module docstring) for the given-order class, within ``time_limit``
    seconds: programs of the ``FIRST_MOMENTS`` tightest moments, then twice as many, ... (or
    of ``moments``, tightest first), each solved by the relaxation's two-phase CP-SAT solve
    with half the time left (the last one with all of it), until one is not solved to
    optimality or, past the first, proves no more than the one before; the best bound proven
    is kept.
    ``upto``: stop once the bound reaches it (an incumbent's extra compute). ``couple=False``:
    without the cap-1 rows. ``start`` and ``known``: resume an earlier call (its ``resume`` and
    ``extra``): the first program has ``start`` moments, each program gets all the time left
    (finishing one that was cut short comes first), and a program past it must prove more
    than ``known`` for the growth to go on (``extra`` reports only what this call proved)."""
    from memsched.solvers.remat.lagrange_bound import _given_tight
    from memsched.solvers.remat.proofs import _stop_if_interrupted, solve_relaxation

    t0 = time.perf_counter()
    out = JointMomentBound()
    g = graph
    tight = list(moments) if moments is not None else _given_tight(g, int(B))
    if not tight:
        return out
    size = min(FIRST_MOMENTS if start is None else max(FIRST_MOMENTS, int(start)), len(tight))
    while True:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0.2:
            out.resume = size
            break
        last = size >= len(tight)
        md, obj, scale, bad = build_joint_program(g, B, caps, tight[:size], couple=couple)
        if bad is not None:
            out.infeasible, out.moments = True, [bad]
            out.reason = (f"at the first computation of {g.ops[bad].name!r} its inputs, outputs and workspace "
                          f"and the always-resident tensors exceed budget {int(B)}")
            return out
        share = left if last or start is not None else left / 2  # a resumed call: finish what was cut short
        run = solve_relaxation(md, obj, time_limit=share, workers=workers, seed=seed, name="remat-joint-moments")
        _stop_if_interrupted(run)
        took = round(time.perf_counter() - t0, 3)
        if run.status == "infeasible":
            out.infeasible, out.moments = True, tight[:size]
            out.reason = (f"no schedule whose first computations follow the given order fits budget {int(B)}: "
                          f"the memory rows of {size} moments together admit no choice of reruns "
                          f"(docs/remat.md, \"Several moments at once\")")
            out.checks.append((out.extra, f"{size} moments: infeasible", took))
            return out
        bound, before = run.bound, max(out.extra, known)
        if math.isfinite(bound) and bound > 0:
            val = math.ceil(bound - 1e-6) / scale
            if val > out.extra:
                out.extra, out.moments = val, tight[:size]
        out.checks.append((out.extra, f"{size} moments: {run.status}", took))
        if run.status != "optimal":
            out.resume = size  # cut short by its share of the time
        if last or run.status != "optimal" or (upto is not None and out.extra >= upto - 1e-9):
            break
        if size > FIRST_MOMENTS and out.extra <= before:
            break  # twice the moments proved nothing more: the next doubling is not tried
        size = min(2 * size, len(tight))
    return out
