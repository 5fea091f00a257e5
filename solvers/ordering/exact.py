"""Exact peak-minimizing operator order with a certificate of optimality.

:func:`solve_exact` combines, cheapest first, and stops as soon as the best order's
peak (upper bound, judged by the evaluator) meets the best proven lower bound:

1. **bounds** (:mod:`memsched.solvers.ordering.bounds`): initial state, per operator, forward trap
   (minimum cuts), pair traps; **heuristics**
   (:data:`memsched.solvers.ordering.heuristics.HEURISTICS`) and a beam search over down-sets
   give the upper bound. When they meet, the order is certified with no search.
2. **decomposition at forced splits**: a prefix P of a topological order such that
   every operator after P descends from every operator of P runs first in *every*
   order (a cut vertex, where everything must pass, gives two such splits). The
   segments between consecutive splits are independent subproblems: the memory while
   an operator of a segment runs is a constant (tensors passing through) plus the
   memory of the segment's own subproblem, whose inputs are the tensors it reads from
   earlier segments and whose required outputs are those read later. Each segment
   only has to reach the global lower bound ``theta``.
3. per segment, until it reaches ``theta`` or is proven optimal:
   a. the down-set DP (:mod:`memsched.solvers.ordering.downset_dp`) as a decision procedure at
      ``theta`` and then as an optimizer, with a state cap (exact for narrow graphs);
   b. **trap splitting**: the operator with the largest trap value must run from a
      state of least resident bytes in any order of that peak; the search commits to
      its minimum-cut state and recurses on "before", the operator, and "after"
      (a heuristic that keeps the peak at ``theta`` when the cut is the one used by an
      optimal order); pieces are solved by heuristics and the DP;
   c. the CP-SAT model (:mod:`formulations.cpsat_order`) with the trap bound as the
      objective's floor, position domains from ancestor/descendant counts, the best
      order as hint, stopping at the first order that meets the floor.

A timed-out or interrupted (Ctrl-C) solve returns the best order and bound so far
with status ``timeout``; ``certified`` is true exactly when peak == lower_bound.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from memsched.formulations import Graph, Schedule, evaluate, order_peak
from memsched.solvers.result import SolveResult, SolverDisagreement, Status, make_result

from . import bounds as B
from .downset_dp import beam_order, downset_dp
from .heuristics import run_heuristics

__all__ = ["Part", "forced_segments", "forced_segments_quadratic", "make_part", "solve_exact"]


# ------------------------------------------------------------ subproblems
@dataclass
class Part:
    """A set of operators that runs contiguously, as its own subproblem: memory while
    any of its operators runs = ``offset`` + the subproblem's memory at that step."""

    ops: list[int]  # global operator indices; sub operator i is ops[i]
    graph: Graph
    offset: int


def make_part(g: Graph, before_mask: int, ops: list[int]) -> Part:
    """The subproblem of ``ops`` when exactly the operators of ``before_mask`` ran before
    them (down-closed) and all others run after. Inputs: tensors produced before (or
    graph inputs) that ``ops`` read, pinned when still needed afterwards (or kept);
    required outputs: tensors of ``ops`` that are kept or read afterwards; offset:
    bytes resident throughout (produced before, read only afterwards, or kept)."""
    inpart = set(ops)
    kept = g.pinned_idx | g.output_idx
    tens: list[int] = []
    pinned, outputs = [], []
    offset = 0
    for j in range(g.n_tensors):
        p = g.producer[j]
        cons = g.consumers[j]
        if p != -1 and p in inpart:
            tens.append(j)
            if j in kept or any(c not in inpart for c in cons):
                outputs.append(g.tensors[j].name)
            continue
        if p != -1 and not (before_mask >> p) & 1:
            continue  # produced after the part
        in_cons = any(c in inpart for c in cons)
        later = any(c not in inpart and not (before_mask >> c) & 1 for c in cons)
        if not (j in kept or in_cons or later):
            continue  # already freed
        if in_cons:
            tens.append(j)
            if j in kept or later:
                pinned.append(g.tensors[j].name)
        else:
            offset += g.size[j]
    pos = {v: k for k, v in enumerate(g.given_order())}
    ops = list(ops)
    order = tuple(g.ops[i].name for i in sorted(ops, key=pos.__getitem__))
    sub = Graph([g.ops[i] for i in ops], [g.tensors[j] for j in tens], pinned=frozenset(pinned),
                outputs=tuple(outputs), order=order, name=f"{g.name}[{len(ops)} ops]")
    return Part(ops, sub, offset)


def forced_segments(g: Graph) -> list[list[int]]:
    """Split the operators into the maximal segments that every topological order runs
    one after the other, in O(n + E) (docs/bounds.md, "Forced splits in linear time").

    Along a topological order, let P be the first k operators, M the maximal operators of
    P (no successor inside P) and R the ready operators (not in P, every predecessor in
    P). The split after k is forced (every later operator descends from every operator
    of P) iff every operator of R has exactly k ancestors, iff every operator of R has
    every operator of M as a direct predecessor. With ``c[r]`` the number of
    predecessors of r in M, the second form holds iff ``sum(c[r] for r in R) ==
    |R| * |M|`` (each ``c[r] <= |M|``); M, R, c and the sum are updated in O(degree)
    per operator as the prefix grows (each operator leaves M at most once)."""
    n = g.n_ops
    if n == 0:
        return []
    topo = g.topological_order()
    pred, succ = g.op_pred(), g.op_succ()
    missing = [len(p) for p in pred]  # predecessors not yet in P
    in_m = [False] * n
    ready = [False] * n
    c = [0] * n
    n_m = n_r = total = 0
    for v in range(n):
        if missing[v] == 0:
            ready[v] = True
            n_r += 1  # c[v] = 0: M is empty
    segs, cur = [], []
    for k, v in enumerate(topo):
        cur.append(v)
        # v leaves R and joins P as a maximal operator; its predecessors stop being maximal
        ready[v] = False
        n_r -= 1
        total -= c[v]
        for m in pred[v]:
            if in_m[m]:
                in_m[m] = False
                n_m -= 1
                for s in succ[m]:
                    if ready[s]:
                        c[s] -= 1
                        total -= 1
        in_m[v] = True
        n_m += 1
        for s in succ[v]:
            missing[s] -= 1
            if missing[s] == 0:
                ready[s] = True
                n_r += 1
                cs = 0
                for p in pred[s]:
                    if in_m[p]:
                        cs += 1
                c[s] = cs
                total += cs
        if k + 1 < n and n_r > 0 and total == n_r * n_m:
            segs.append(cur)
            cur = []
    segs.append(cur)
    return segs


def forced_segments_quadratic(g: Graph) -> list[list[int]]:
    """Reference for tests: the same segments from ancestor bitmasks, O(n * n / 64) time
    and O(n^2 / 8) bytes (the split after k is forced iff every operator after position
    k of a topological order has the first k operators among its ancestors)."""
    n = g.n_ops
    if n == 0:
        return []
    topo = g.topological_order()
    anc, _ = g.reach_masks()
    pos = [0] * n
    for k, v in enumerate(topo):
        pos[v] = k
    gap = [0] * n  # first position (in topo) that is not an ancestor of topo[k]
    for k, v in enumerate(topo):
        m = 0
        a = anc[v]
        while a:
            b = a & -a
            m |= 1 << pos[b.bit_length() - 1]
            a ^= b
        gap[k] = ((~m) & (m + 1)).bit_length() - 1
    segs, cur = [], []
    suffix_min = [0] * (n + 1)
    suffix_min[n] = n
    for k in range(n - 1, -1, -1):
        suffix_min[k] = min(gap[k], suffix_min[k + 1])
    for k, v in enumerate(topo):
        if k > 0 and suffix_min[k] >= k and cur:
            segs.append(cur)
            cur = []
        cur.append(v)
    segs.append(cur)
    return segs


# ------------------------------------------------------------- heuristics
def _heuristics(g: Graph, lb: int, deadline: float, beam_width: int = 16) -> tuple[list[int], int, str, dict]:
    """Best order among the project's heuristics and the down-set beam search."""
    runs = run_heuristics(g, stop_at=lb, deadline=deadline)
    if not (min(p for _, _, p in runs) <= lb or time.perf_counter() > deadline):
        now = time.perf_counter()
        o = beam_order(g, beam_width, lower_bound=lb, deadline=now + 0.1 * (deadline - now))
        if o is not None:
            runs.append((f"beam{beam_width}", o, order_peak(g, o)))
    best = min(runs, key=lambda r: r[2])
    peaks = {nm: p for nm, _, p in runs}
    best = (best[1], best[2], best[0])
    return best[0], best[1], best[2], peaks


# ------------------------------------------------------- trap splitting
def _split_search(g: Graph, theta: int, deadline: float, cap: int, depth: int = 0, stats: dict | None = None):
    """An order of ``g`` with peak <= theta, or None (not found: no proof)."""
    n = g.n_ops
    if n == 0:
        return []
    if time.perf_counter() > deadline:
        return None
    lb, v = B.trap_bound(g, want_critical=True, time_budget=max(0.0, deadline - time.perf_counter()))
    if lb > theta:
        return None
    o, pk, _, _ = _heuristics(g, theta, deadline, beam_width=16)
    if pk <= theta:
        return o
    r = downset_dp(g, upper_bound=theta + 1, lower_bound=lb, max_states=cap,
                   time_limit=max(0.01, deadline - time.perf_counter()))
    if stats is not None:
        stats["dp_states"] = stats.get("dp_states", 0) + r.states
    if r.order is not None:
        return r.order
    if r.exact or v < 0 or n < 3:
        return None
    ts = B.trap_solver(g)
    _, S = ts.trap(v, want_set=True)
    S = sorted(S)
    Sset = set(S)
    rest = [u for u in range(n) if u != v and u not in Sset]
    mask = 0
    for u in S:
        mask |= 1 << u
    order: list[int] = []
    for ops, bm in ((S, 0), ([v], mask), (rest, mask | (1 << v))):
        if not ops:
            continue
        P = make_part(g, bm, ops)
        sub = _split_search(P.graph, theta - P.offset, deadline, cap, depth + 1, stats)
        if sub is None:
            return None
        order += [P.ops[i] for i in sub]
    return order


# ------------------------------------------------- window improvement
def _window_lns(g: Graph, order: list[int], theta: int, deadline: float, cap: int = 20_000,
                widths=(16, 32, 48, 64), stats: dict | None = None) -> list[int]:
    """Large-neighbourhood search: repeatedly take a window of consecutive operators of
    the incumbent around a step at the peak, re-solve that window exactly with the
    down-set DP (its own subproblem: inputs from the prefix, outputs to the suffix)
    below the current peak, and splice the result in. Stops at ``theta``, at the
    deadline, or when no window around a peak step improves."""
    from .bounds import step_memory

    n = g.n_ops
    order = list(order)
    while time.perf_counter() < deadline:
        mem = step_memory(g, order)
        steps = [mem[v] for v in order]
        peak = max(steps)
        if peak <= theta:
            break
        hot = [k for k, m in enumerate(steps) if m == peak]
        improved = False
        for w in widths:
            if w > n:
                w = n
            for k in hot[:1]:
                for shift in (w // 2, w // 4, 3 * w // 4):
                    a = max(0, min(k - shift, n - w))
                    ops = order[a:a + w]
                    before = 0
                    for u in order[:a]:
                        before |= 1 << u
                    P = make_part(g, before, ops)
                    r = downset_dp(P.graph, upper_bound=peak - P.offset, lower_bound=max(0, theta - P.offset),
                                   max_states=cap, time_limit=max(0.01, deadline - time.perf_counter()))
                    if stats is not None:
                        stats["lns_windows"] = stats.get("lns_windows", 0) + 1
                    if r.order is not None:
                        order[a:a + w] = [P.ops[i] for i in r.order]
                        improved = True
                        break
                    if time.perf_counter() > deadline:
                        return order
                if improved:
                    break
            if improved or w == n:
                break
        if not improved:
            break
    return order


# ------------------------------------------------------------ one segment
def _solve_segment(sg: Graph, so: list[int], theta: int, deadline: float, *, workers: int, seed: int,
                   dp_states: int, use_cpsat: bool, stats: dict, say, offset: int = 0):
    """Improve the order ``so`` of the segment ``sg`` until its peak reaches ``theta`` (a
    global lower bound, minus the segment's offset) or is proven optimal.

    Returns (order, proven lower bound of the segment's optimum or ``theta``, the method
    that closed the gap or "", interrupted)."""
    from .downset_dp import downset_decide

    cur = order_peak(sg, so)
    lb = max(theta, B.trap_bound(sg, [so], time_budget=0.2 * max(0.0, deadline - time.perf_counter())))
    if cur <= lb:
        return so, lb, "", False

    def take(order, by):
        nonlocal so, cur
        pk = order_peak(sg, order)
        if pk < cur:
            so, cur = order, pk
            say(f"  {by}: segment peak {cur + offset}")

    def left():
        return deadline - time.perf_counter()

    # a. the DP as a depth-first decision at the bound (small state cap)
    r = downset_decide(sg, lb, max_states=min(20_000, dp_states), time_limit=max(0.01, 0.2 * left()))
    stats["dp_states"] = stats.get("dp_states", 0) + r.states
    if r.order is not None:
        take(r.order, "dp")
        return so, lb, "dp", False
    if r.exact:
        lb += 1
        say(f"  DP: no order of peak {lb - 1 + offset}")
        # a narrow segment (the decision was settled within the small cap): the
        # breadth-first DP below the incumbent usually settles the optimum as well
        r = downset_dp(sg, upper_bound=cur, lower_bound=lb, max_states=min(100_000, dp_states),
                       time_limit=max(0.01, 0.3 * left()))
        stats["dp_states"] = stats.get("dp_states", 0) + r.states
        if r.exact:
            if r.order is not None:
                take(r.order, "dp")
            say(f"  DP: segment optimum {cur + offset}")
            return so, cur, "dp", False
    else:
        # b. trap splitting at the bound
        sp = _split_search(sg, lb, time.perf_counter() + 0.25 * left(), cap=5_000, stats=stats)
        if sp is not None:
            take(sp, "trap splitting")
            if cur <= lb:
                return so, lb, "split", False
    # c. better orders: window search around the peak, then depth-first decisions at a few
    # levels between the bound and the peak
    take(_window_lns(sg, so, lb, time.perf_counter() + 0.2 * left(), stats=stats), "window search")
    if cur <= lb:
        return so, lb, "lns", False
    for f in (1 / 32, 1 / 8, 1 / 2):
        if left() <= 0 or cur <= lb:
            break
        th = lb + int((cur - lb) * f)
        if th >= cur:
            continue
        r = downset_decide(sg, th, max_states=min(20_000, dp_states), time_limit=max(0.01, 0.1 * left()))
        stats["dp_states"] = stats.get("dp_states", 0) + r.states
        if r.order is not None:
            take(r.order, "dp search")
        elif r.exact:
            lb = max(lb, th + 1)
    if cur <= lb:
        return so, lb, "dp", False
    # d. proof (or a better order) by the breadth-first DP below the incumbent
    r = downset_dp(sg, upper_bound=cur, lower_bound=lb, max_states=dp_states, time_limit=max(0.01, 0.4 * left()))
    stats["dp_states"] = stats.get("dp_states", 0) + r.states
    if r.exact:
        if r.order is not None:
            take(r.order, "dp")
        say(f"  DP: segment optimum {cur + offset}")
        return so, cur, "dp", False
    # e. shaving with learned precedences raises the bound (galloping, bounded time)
    if left() > 0 and cur > lb:
        nlb = B.precedence_bound(sg, lb, cur, time_budget=min(0.1 * left(), 5.0))
        if nlb > lb:
            say(f"  learned precedences: segment optimum >= {nlb + offset}")
            lb = nlb
        if cur <= lb:
            return so, lb, "bounds", False
    # f. more window search, then CP-SAT
    if left() > 0:
        take(_window_lns(sg, so, lb, time.perf_counter() + (0.3 if use_cpsat else 1.0) * left(), stats=stats,
                         widths=(24, 40, 56, 72)), "window search")
        if cur <= lb:
            return so, lb, "lns", False
    interrupted = False
    if use_cpsat and sg.n_ops > B.REACH_MASK_MAX_OPS:
        stats["cpsat_skipped"] = f"segment of {sg.n_ops} operators: the CP-SAT model needs O(n^2) ancestor bitmasks"
    elif use_cpsat and left() > 0:
        from memsched.formulations.cpsat_order import build_order_model
        from memsched.solvers.ordering.cpsat import solve_order_model

        om = build_order_model(sg, lower_bound=lb, hint=so)
        cb = (lambda p, b, w: say(f"  CP-SAT order {p + offset} bound {b + offset:.0f}"))
        sol = solve_order_model(om, time_limit=max(0.1, left()), workers=workers, seed=seed, stop_at=lb,
                                on_solution=cb)
        interrupted = sol.interrupted
        if sol.order is not None:
            take(sol.order, "CP-SAT")
        if not interrupted:
            lb = max(lb, sol.bound)
        if cur <= lb:
            return so, lb, "cpsat", interrupted
    return so, lb, "", interrupted


# ------------------------------------------------------------------ driver
class _Progress:
    def __init__(self, on: bool, t0: float):
        self.on, self.t0 = on, t0

    def __call__(self, msg: str) -> None:
        if self.on:
            print(f"[exact {time.perf_counter() - self.t0:7.2f}s] {msg}", file=sys.stderr, flush=True)


def solve_exact(graph: Graph, time_limit: float = 60.0, workers: int = 2, seed: int = 0,
                progress: bool = False, *, dp_states: int = 300_000, use_cpsat: bool = True,
                pair_budget: float | None = None) -> SolveResult:
    """Minimum-peak order of ``graph`` with a proof: see the module docstring.

    Returns a SolveResult (evaluated by make_result) with ``lower_bound`` set and extra
    keys ``certified`` (peak == lower_bound), ``certified_by`` (bounds | dp | split |
    cpsat | none), ``upper_bound_by``, ``segments``, ``time_to_certify_s``, ``heuristics``
    (peak of each heuristic) and ``bounds``. Status: optimal when certified, timeout
    when the time limit or an interrupt stopped it first, feasible otherwise."""
    t0 = time.perf_counter()
    deadline = t0 + float(time_limit)
    say = _Progress(progress, t0)
    g = graph
    n = g.n_ops
    params = {"time_limit": time_limit, "workers": workers, "seed": seed, "dp_states": dp_states}
    state = {"order": g.given_order(), "peak": None, "lb": B.initial_bound(g), "by": "none", "ub_by": "given",
             "seg_orders": None, "interrupted": False, "timed_out": False, "certify_t": None}
    info: dict = {"heuristics": {}, "bounds": {}, "segments": 0, "stats": {}}

    def finish():
        order = state["order"]
        peak = state["peak"]
        if peak is None:
            peak = order_peak(g, order)
        lb = state["lb"]  # never clipped: a bound above the evaluated peak is a bug (make_result raises)
        cert = peak == lb
        if cert:
            status = Status.OPTIMAL
        elif state["interrupted"] or state["timed_out"] or time.perf_counter() - t0 >= 0.95 * time_limit:
            status = Status.TIMEOUT
        else:
            status = Status.FEASIBLE
        extra = {"certified": cert, "certified_by": state["by"] if cert else "none",
                 "upper_bound_by": state["ub_by"], "segments": info["segments"],
                 "time_to_certify_s": round(state["certify_t"], 6) if cert and state["certify_t"] is not None else None,
                 "heuristics": info["heuristics"], "bounds": info["bounds"], "interrupted": state["interrupted"]}
        extra.update(info["stats"])
        msg = "certified optimal" if cert else ("interrupted" if state["interrupted"] else
                                                ("time limit reached" if status == Status.TIMEOUT else "not certified"))
        return make_result(g, Schedule.from_order(g, order), solver="exact", status=status, claimed=peak,
                           lower_bound=lb, wall_s=time.perf_counter() - t0, params=params, message=msg, extra=extra)

    def certified() -> bool:
        if state["peak"] is not None and state["peak"] < state["lb"]:
            raise SolverDisagreement(f"exact: lower bound {state['lb']} is above the peak {state['peak']} of an order "
                                     f"it found (upper bound by {state['ub_by']})")
        if state["peak"] is not None and state["peak"] == state["lb"]:
            if state["certify_t"] is None:
                state["certify_t"] = time.perf_counter() - t0
            return True
        return False

    try:
        if n == 0:
            state["peak"] = B.initial_bound(g)
            state["by"] = "bounds"
            certified()
            return finish()
        # 1. bounds and heuristics
        tinfo: dict = {}
        trap, _ = B.trap_bound(g, want_critical=True, time_budget=0.25 * time_limit, info=tinfo)
        info["bounds"] = {"initial": B.initial_bound(g), "per_op": B.per_op_bound(g), "final": B.final_bound(g),
                          "trap": trap}
        if not tinfo.get("complete", True):
            info["bounds"]["trap_stopped_by_budget"] = True
        state["lb"] = max(state["lb"], trap, info["bounds"]["per_op"], info["bounds"]["final"])
        o, pk, nm, peaks = _heuristics(g, state["lb"], deadline)
        info["heuristics"] = peaks
        state.update(order=o, peak=pk, ub_by=nm)
        say(f"lower bound {state['lb']} (trap), best heuristic {nm}: {pk}")
        if certified():
            state["by"] = "bounds"
            return finish()
        t = time.perf_counter()
        pb = B.pair_bound(g, [o, g.given_order()], base=state["lb"],
                          time_budget=pair_budget if pair_budget is not None else min(2.0, 0.05 * time_limit))
        info["bounds"]["pair"] = pb
        if pb > state["lb"]:
            state["lb"] = pb
            say(f"pair bound raises the lower bound to {pb} ({time.perf_counter() - t:.2f}s)")
            if certified():
                state["by"] = "bounds"
                return finish()
        # 2. segments
        segs = forced_segments(g)
        info["segments"] = len(segs)
        parts = []
        before = 0
        pos = {v: k for k, v in enumerate(state["order"])}
        for s in segs:
            P = make_part(g, before, s)
            for u in s:
                before |= 1 << u
            sub_order = sorted(range(len(s)), key=lambda i: pos[P.ops[i]])
            parts.append([P, sub_order, order_peak(P.graph, sub_order) + P.offset])
        say(f"{len(segs)} forced segment(s); largest has {max(len(s) for s in segs)} operators")
        state["seg_orders"] = parts

        def assemble():
            order = []
            for P, so, _ in parts:
                order += [P.ops[i] for i in so]
            state["order"] = order
            state["peak"] = max([B.initial_bound(g)] + [pk for _, _, pk in parts])

        # hardest segments first
        todo = sorted(range(len(parts)), key=lambda k: -parts[k][2])
        for k in todo:
            P, so, seg_peak = parts[k]
            if seg_peak <= state["lb"]:
                continue
            sg = P.graph
            theta = state["lb"] - P.offset  # the segment only has to reach the global bound
            if sg.n_ops < 0.9 * n:  # (the whole graph's heuristics already ran)
                o, pk, nm, _ = _heuristics(sg, theta, deadline)
                if pk < order_peak(sg, so):
                    so = o
            parts[k][1], parts[k][2] = so, order_peak(sg, so) + P.offset
            if parts[k][2] <= state["lb"]:
                continue
            say(f"segment of {sg.n_ops} operators: peak {parts[k][2]}, target {state['lb']}")
            so, seg_lb, by, interrupted = _solve_segment(sg, so, theta, deadline, workers=workers, seed=seed,
                                                         dp_states=dp_states, use_cpsat=use_cpsat, stats=info["stats"],
                                                         say=say, offset=P.offset)
            state["lb"] = max(state["lb"], seg_lb + P.offset)
            if by:
                state["by"] = by
            if interrupted:
                state["interrupted"] = True
            parts[k][1], parts[k][2] = so, order_peak(sg, so) + P.offset
            assemble()
            if state["interrupted"]:
                break
            if time.perf_counter() > deadline and not certified():
                state["timed_out"] = True
                break
        assemble()
        certified()
        return finish()
    except KeyboardInterrupt:
        state["interrupted"] = True
        if state["seg_orders"] is not None:
            parts = state["seg_orders"]
            order = []
            for P, so, _ in parts:
                order += [P.ops[i] for i in so]
            state["order"], state["peak"] = order, None
        return finish()
