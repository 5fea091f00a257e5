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
3. per segment, until it reaches ``theta`` or is proven optimal (:func:`_solve_segment`):
   a. the down-set DP (:mod:`memsched.solvers.ordering.downset_dp`) as a decision procedure at
      ``theta`` and then as an optimizer, with a small state cap (exact for narrow graphs);
   b. **trap splitting**: the operator with the largest trap value must run from a
      state of least resident bytes in any order of that peak; the search commits to
      its minimum-cut state and recurses on "before", the operator, and "after"
      (a heuristic that keeps the peak at ``theta`` when the cut is the one used by an
      optimal order); pieces are solved by heuristics and the DP;
   c. window search (large-neighbourhood search with the DP on windows of the
      incumbent) and DP decisions at a few levels between bound and incumbent;
   c'. on wide segments (more than ``BISECT_WIDE_OPS`` operators), right after c,
      **shaving aimed at the incumbent** (:func:`_stage_shave`, docs/bounds.md 4): learned
      precedences at ``incumbent - 1`` (a refutation certifies it), then galloping up from
      the bound, then the **search guided by the learned precedences** (the driver on the
      precedence graph, docs/bounds.md 4b), within ``SHAVE_SHARE`` of the time left;
   d. **DP decisions near the incumbent** (:func:`_stage_bisect`): depth-first down-set
      searches with a large state cap (lookahead pruning, docs/bounds.md 6a), first at
      ``incumbent - 1``, then a quarter of the gap below it: each finds a better order or
      proves a higher bound (on segments of at most ``BISECT_WIDE_OPS`` operators this
      stage runs before c);
   e. the breadth-first DP below the incumbent, then shaving with learned precedences;
   e'. on wide segments, after c', the
      **window bound** (:mod:`memsched.solvers.ordering.window_bound`, docs/bounds.md 9):
      induced subproblems of bands of layers around the incumbent's peak, solved by this
      driver within ``window_share`` of the time left; their proven bounds are bounds of
      the segment;
   f. the CP-SAT model (:mod:`formulations.cpsat_order`) with the bound as the
      objective's floor, position domains from ancestor/descendant counts, the best
      order as hint, stopping at the first order that meets the floor.

A timed-out or interrupted (Ctrl-C) solve returns the best order and bound so far
with status ``timeout``; ``certified`` is true exactly when peak == lower_bound.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from memsched.formulations import Graph, Schedule, order_peak
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


# ------------------------------------------------------ peak splitting
def _peak_split(g: Graph, order: list[int], deadline: float, *, depth: int = 0, max_depth: int = 3,
                rounds: int = 50, stats: dict | None = None) -> list[int]:
    """Trap descent at the incumbent's peak (an upper-bound heuristic; docs/bounds.md 8).

    Let v be an operator at the peak of ``order``. Its trap value (a minimum cut) is the
    least memory of any order while v runs, reached by running a minimum-cut state S*
    first (state lemma). When it is below the peak, rebuild the order as
    "S* first, then v, then the rest" (three subproblems, :func:`make_part`), each piece
    ordered by the better of the incumbent's own order restricted to it and the
    heuristics, and pieces still at or above the old peak by the same descent,
    recursively (``max_depth``). The new order is kept when its evaluated peak is lower;
    repeat at the new peak. On training graphs this moves the weight-gradient operators
    that an order ran early past the moment where the big embedding gradients meet.

    Returns an order whose peak is at most that of ``order`` (never worse).

    Complexity: per round one minimum cut, three :func:`make_part` calls and the
    heuristics on the pieces, O((n + E) log n) besides the cut; at most ``rounds``
    rounds, stops at ``deadline``."""
    n = g.n_ops
    if n < 3:
        return list(order)
    order = list(order)
    peak = order_peak(g, order)
    ts = None
    for _ in range(rounds):
        if time.perf_counter() > deadline:
            break
        mem = B.order_step_memory(g, order)
        k = max(range(n), key=lambda i: mem[order[i]])
        v = order[k]
        if mem[v] < peak:  # the peak is the initial state: no operator moment to lower
            break
        if ts is None:
            ts = B.trap_solver(g)
        val, S = ts.trap(v, want_set=True)
        if val >= peak:  # v's moment is at its least over all orders: the peak is optimal
            break
        pos = {u: i for i, u in enumerate(order)}
        s_ops = sorted(S, key=pos.__getitem__)
        mask = 0
        for u in s_ops:
            mask |= 1 << u
        rest = [u for u in order if u != v and u not in S]
        new: list[int] = []
        for ops, before in ((s_ops, 0), ([v], mask), (rest, mask | (1 << v))):
            if not ops:
                continue
            P = make_part(g, before, ops)
            idx = {u: i for i, u in enumerate(P.ops)}
            cur = [idx[u] for u in ops]
            cands = [("incumbent", cur, order_peak(P.graph, cur))]
            if len(ops) > 1:
                cands += run_heuristics(P.graph, deadline=deadline)
            so, pk = min(cands, key=lambda r: r[2])[1:]
            if depth < max_depth and len(ops) > 2 and pk + P.offset >= peak:
                so = _peak_split(P.graph, so, deadline, depth=depth + 1, max_depth=max_depth, rounds=rounds,
                                 stats=stats)
            new += [P.ops[i] for i in so]
        if stats is not None:
            stats["peak_split_rounds"] = stats.get("peak_split_rounds", 0) + 1
        npk = order_peak(g, new)
        if npk >= peak:
            break
        order, peak = new, npk
    return order


def _set_split(g: Graph, order: list[int], deadline: float, *, max_sets: int = 16, depth: int = 0,
               target: int | None = None, stats: dict | None = None) -> list[int]:
    """Peak splitting at the last operator of a set (docs/bounds.md 4a and 8): for each set
    X_t of :func:`bounds.last_of_set_bound` (producers of required outputs of at least t
    bytes) whose value is below the incumbent's peak, take the minimizing w and its
    minimum-cut state S*, and rebuild the order as "S* first, w, the rest", each piece by
    the heuristics and :func:`_peak_split` (and, one level down, this function). Keeps the
    best order found; never worse than ``order``; stops once the peak is at most ``target``
    (a proven lower bound). On training graphs this is "finish the
    big weight gradients, then let the gradients with the cheapest inputs run last".

    Complexity: per set one minimum cut per member (as the bound) plus three subproblems."""
    order = list(order)
    peak = order_peak(g, order)
    if g.n_ops < 3:
        return order
    ts = B.trap_solver(g)
    sizes = sorted({g.size[j] for j in g.output_idx if g.producer[j] != -1}, reverse=True)[:max_sets]
    for t in sizes:
        if time.perf_counter() > deadline or (target is not None and peak <= target):
            break
        X = sorted({g.producer[j] for j in g.output_idx if g.producer[j] != -1 and g.size[j] >= t})
        if len(X) < 2:
            continue  # one operator: its trap value, already used by peak splitting
        xmask = 0
        for u in X:
            xmask |= 1 << u
        best = None
        for w in X:
            if time.perf_counter() > deadline:
                return order
            val = ts.trap(w, extra_in=xmask & ~(1 << w))
            if val is not None and (best is None or val < best[0]):
                best = (val, w)
        if best is None or best[0] >= peak:
            continue
        w = best[1]
        _, S = ts.trap(w, extra_in=xmask & ~(1 << w), want_set=True)
        pos = {u: i for i, u in enumerate(order)}
        s_ops = sorted(S, key=pos.__getitem__)
        mask = 0
        for u in s_ops:
            mask |= 1 << u
        rest = [u for u in order if u != w and u not in S]
        new: list[int] = []
        for ops, before in ((s_ops, 0), ([w], mask), (rest, mask | (1 << w))):
            if not ops:
                continue
            P = make_part(g, before, ops)
            idx = {u: i for i, u in enumerate(P.ops)}
            cands = [("incumbent", [idx[u] for u in ops], None)]
            if len(ops) > 1:
                cands += run_heuristics(P.graph, deadline=deadline)
            so = min(cands, key=lambda r: order_peak(P.graph, r[1]) if r[2] is None else r[2])[1]
            so = _peak_split(P.graph, so, deadline, stats=stats)
            if depth < 1:
                so = _set_split(P.graph, so, deadline, max_sets=max_sets, depth=depth + 1, stats=stats)
            new += [P.ops[i] for i in so]
        if stats is not None:
            stats["set_split_rounds"] = stats.get("set_split_rounds", 0) + 1
        npk = order_peak(g, new)
        if npk < peak:
            order, peak = new, npk
    return order


# ------------------------------------------------- window improvement
#: window search with the compiled down-set decision (docs/bounds.md 8): its state cap and
#: the wider windows it adds
LNS_JIT_CAP = 200_000
LNS_JIT_WIDTHS = (96, 128, 192)


def _window_lns(g: Graph, order: list[int], theta: int, deadline: float, cap: int = 20_000,
                widths=(16, 32, 48, 64), stats: dict | None = None, compiled: bool | None = None) -> list[int]:
    """Large-neighbourhood search: repeatedly take a window of consecutive operators of
    the incumbent around a step at the peak, re-solve that window (its own subproblem:
    inputs from the prefix, outputs to the suffix) below the current peak, and splice the
    result in. Stops at ``theta``, at the deadline, or when no window around a peak step
    improves. With the compiled decision (:mod:`.downset_jit`) a window is re-solved by
    the depth-first decision "an order of the window below the current peak?" (the
    first such order, ``LNS_JIT_CAP`` states) and the windows grow to ``LNS_JIT_WIDTHS``
    as well; otherwise by the breadth-first DP (the window's best order below the peak,
    ``cap`` states); ``compiled`` False forces the latter (None: the former when numba is
    available). A heuristic: every spliced order is evaluated by the caller."""
    from . import downset_jit
    from .bounds import step_memory
    from .downset_dp import downset_decide

    jit = downset_jit.AVAILABLE if compiled is None else (compiled and downset_jit.AVAILABLE)
    if jit:
        cap = max(cap, LNS_JIT_CAP)
        widths = tuple(widths) + tuple(w for w in LNS_JIT_WIDTHS if w > max(widths))
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
                    tl = max(0.01, deadline - time.perf_counter())
                    if jit:
                        r = downset_decide(P.graph, peak - 1 - P.offset, max_states=cap, time_limit=tl)
                    else:
                        r = downset_dp(P.graph, upper_bound=peak - P.offset, lower_bound=max(0, theta - P.offset),
                                       max_states=cap, time_limit=tl)
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
#: segments up to this many operators run the DP-decision stage right after the first DP
#: decision with 60 % of the time left; larger ones after the window search with 20 %
BISECT_WIDE_OPS = 200
#: share of the time left for the learned-precedence stage on wide segments, aimed at the
#: incumbent (:func:`_stage_shave`), and the seconds at most of its first fixpoint (at the
#: incumbent - 1; when that one does not end, only a short guided search follows): on the
#: random layered graphs a fixpoint takes 3-58 s; on the 409-operator segment of
#: bert_base_b1_s128_train none ended in 115 s in one run, while in a later one (at its
#: optimum - 1) it ended in 8 s learning nothing (docs/bounds.md 4, 4b)
SHAVE_SHARE = 0.4
SHAVE_MAX_S = 60.0
#: share of the learned-precedence stage's time left kept for the guided search
GUIDED_SHARE = 0.3


class _Segment:
    """The incumbent order of one segment and its proven bound, shared by the stages of
    :func:`_solve_segment` (each stage improves ``so`` or raises ``lb``)."""

    def __init__(self, sg: Graph, so: list[int], lb: int, deadline: float, dp_states: int, stats: dict, say,
                 offset: int):
        self.sg, self.so, self.cur, self.lb = sg, so, order_peak(sg, so), lb
        self.deadline, self.dp_states, self.stats, self.say, self.offset = deadline, dp_states, stats, say, offset

    def take(self, order, by: str) -> None:
        """Keep ``order`` if its evaluated peak is below the incumbent's."""
        pk = order_peak(self.sg, order)
        if pk < self.cur:
            self.so, self.cur = order, pk
            self.say(f"  {by}: segment peak {self.cur + self.offset} B")

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def closed(self) -> bool:
        return self.cur <= self.lb

    def count(self, r) -> None:
        self.stats["dp_states"] = self.stats.get("dp_states", 0) + r.states


def _stage_decide(s: _Segment) -> str | None:
    """Stage a/b of :func:`_solve_segment`: the down-set DP as a depth-first decision at
    the bound; if the decision is settled negatively (a narrow segment), the breadth-first
    DP below the incumbent; otherwise trap splitting at the bound.

    Returns
    -------
    str or None
        The method that closed the segment ("dp", "split"), or None.

    Complexity: bounded by the DP state caps and a share of the time left."""
    from .downset_dp import downset_decide

    r = downset_decide(s.sg, s.lb, max_states=min(20_000, s.dp_states), time_limit=max(0.01, 0.2 * s.left()))
    s.count(r)
    if r.order is not None:
        s.take(r.order, "dp")
        return "dp"
    if r.exact:
        s.lb += 1
        s.say(f"  DP: no order of peak {s.lb - 1 + s.offset} B")
        # a narrow segment (the decision was settled within the small cap): the
        # breadth-first DP below the incumbent usually settles the optimum as well
        r = downset_dp(s.sg, upper_bound=s.cur, lower_bound=s.lb, max_states=min(100_000, s.dp_states),
                       time_limit=max(0.01, 0.3 * s.left()))
        s.count(r)
        if r.exact:
            if r.order is not None:
                s.take(r.order, "dp")
            s.lb = s.cur
            s.say(f"  DP: segment optimum {s.cur + s.offset} B")
            return "dp"
        return None
    sp = _split_search(s.sg, s.lb, time.perf_counter() + 0.25 * s.left(), cap=5_000, stats=s.stats)
    if sp is not None:
        s.take(sp, "trap splitting")
        if s.closed():
            return "split"
    return None


def _stage_improve(s: _Segment) -> str | None:
    """Stage c: window search around the peak, then depth-first DP decisions at a few
    levels between the bound and the incumbent (each either finds a better order or,
    exhausted, raises the bound).

    Returns
    -------
    str or None
        "lns" or "dp" when the segment is closed, else None."""
    from .downset_dp import downset_decide

    s.take(_peak_split(s.sg, s.so, time.perf_counter() + 0.1 * s.left(), stats=s.stats), "peak splitting")
    if s.closed():
        return "lns"
    s.take(_window_lns(s.sg, s.so, s.lb, time.perf_counter() + 0.2 * s.left(), stats=s.stats), "window search")
    if s.closed():
        return "lns"
    for f in (1 / 32, 1 / 8, 1 / 2):
        if s.left() <= 0 or s.closed():
            break
        th = s.lb + int((s.cur - s.lb) * f)
        if th >= s.cur:
            continue
        r = downset_decide(s.sg, th, max_states=min(20_000, s.dp_states), time_limit=max(0.01, 0.1 * s.left()))
        s.count(r)
        if r.order is not None:
            s.take(r.order, "dp search")
        elif r.exact:
            s.lb = max(s.lb, th + 1)
    return "dp" if s.closed() else None


def _stage_prove(s: _Segment) -> str | None:
    """Stage e: the breadth-first DP below the incumbent (exact when it ends within
    its state cap), then shaving with learned precedences (bounded time).

    Returns
    -------
    str or None
        "dp" or "bounds" when the segment is closed, else None."""
    r = downset_dp(s.sg, upper_bound=s.cur, lower_bound=s.lb, max_states=s.dp_states,
                   time_limit=max(0.01, 0.4 * s.left()))
    s.count(r)
    if r.exact:
        if r.order is not None:
            s.take(r.order, "dp")
        s.lb = s.cur
        s.say(f"  DP: segment optimum {s.cur + s.offset} B")
        return "dp"
    if s.left() > 0 and not s.closed():
        nlb = B.precedence_bound(s.sg, s.lb, s.cur, time_budget=min(0.1 * s.left(), 5.0))
        if nlb > s.lb:
            s.say(f"  learned precedences: segment optimum >= {nlb + s.offset} B")
            s.lb = nlb
    return "bounds" if s.closed() else None


def _stage_shave(s: _Segment, *, share: float, workers: int = 1, seed: int = 0, guided: bool = True) -> str | None:
    """Stage c': learned precedences (:func:`bounds.learn_precedences`, docs/bounds.md 4)
    aimed at the incumbent, then the search they guide (docs/bounds.md 4b).

    1. theta = incumbent - 1, within ``SHAVE_MAX_S`` seconds: a refutation certifies the
       incumbent. Otherwise what it learned (the fixpoint, or what it learned before its
       time ran out: each precedence holds on its own) guides a short search on the
       precedence graph (:func:`_stage_guided`, ``GUIDED_SHARE`` of the stage's time left):
       its orders are orders of the segment, its lower bound L gives ``min(L, theta + 1)``.
    2. If that fixpoint ended and the search found nothing better, gallop up from the
       bound: each refuted theta raises the bound to theta + 1 (these are cheap); the
       first theta not refuted is where the fixpoint learns the most, and its precedences
       guide a search for the rest of the stage's time.
    3. When a search lowers the incumbent, back to 1 with a new share of the time left.

    Each fixpoint starts from the strongest relation already learned at a theta' >= its
    theta (``learn_precedences(..., initial=)``, docs/bounds.md 4c).

    The whole stage has ``share`` of the time left. On random_layered(250, 2) step 1
    refutes theta = 108,496 in 3.3 s (galloping from 104,529 needed 123 s); on
    random_layered(1000, 1) the precedences learned at incumbent - 1 guide nothing better,
    the gallop refutes 388,297 and 388,431, and on the precedence graph of theta = 388,699
    the driver finds an order of peak 388,655 (the window search had 392,552) and proves it
    optimal there (docs/bounds.md 4b).

    Returns
    -------
    str or None
        "bounds" when a refutation closes the segment, "guided" when the guided search
        does, else None."""
    if share <= 0 or s.closed() or s.left() <= 0.5:
        return None
    end = time.perf_counter() + share * s.left()
    st = s.stats.setdefault("shave", {"fixpoints": 0, "refuted": 0, "probes": [], "guided": []})

    known: dict = {}  # theta -> the relation learned there (each holds at every lower theta too)

    def learn(theta: int, budget: float):
        t = time.perf_counter()
        above = [th for th in known if th >= theta]
        warm = known[min(above)] if above else None  # the strongest relation valid at theta
        res, before = B.learn_precedences(s.sg, theta, time_budget=budget, initial=warm)
        st["fixpoints"] += 1
        st["refuted"] += res is True
        st["probes"].append({"theta": theta + s.offset, "refuted": res, "warm": warm is not None,
                             "wall_s": round(time.perf_counter() - t, 3)})
        if before is not None:
            known[theta] = before
        return res, before

    while not s.closed():
        left = (end - time.perf_counter()) * (1 - GUIDED_SHARE)
        if left <= 0.5:
            break
        top = s.cur - 1
        res, before = learn(top, min(left, SHAVE_MAX_S))
        if res is True:
            s.lb = max(s.lb, top + 1)
            s.say(f"  learned precedences: no order of peak {top + s.offset} B")
            break
        if before is None:
            break
        was = s.cur
        if guided:  # a short search first: at incumbent - 1 it often suffices
            quick = time.perf_counter() + GUIDED_SHARE * (end - time.perf_counter())
            if _stage_guided(s, top, before, end=quick, workers=workers, seed=seed):
                return "guided"
        if s.cur < was:
            end = max(end, time.perf_counter() + share * s.left())  # a better incumbent: a new share
            continue
        if res is not False:  # the fixpoint at incumbent - 1 did not end: lower ones cost more
            break
        fix = None
        step = max(1, (top - s.lb) // 64)
        while s.lb < top:
            left = (end - time.perf_counter()) * (1 - GUIDED_SHARE)
            if left <= 0.5:
                break
            th = min(s.lb + step - 1, top - 1)
            res, bf = learn(th, left)
            if res is True:
                s.lb = th + 1
                step *= 2
                s.say(f"  learned precedences: no order of peak {th + s.offset} B")
                continue
            fix = (th, bf) if bf is not None else None  # a partial result (time out) holds too
            break
        if fix is None or s.closed() or not guided:
            break
        if _stage_guided(s, fix[0], fix[1], end=end, workers=workers, seed=seed):
            return "guided"
        if s.cur >= was:
            break
        end = max(end, time.perf_counter() + share * s.left())
    st.update(lower_bound=s.lb + s.offset)
    return "bounds" if s.closed() else None


def _stage_guided(s: _Segment, theta: int, before: list[int], *, end: float, workers: int, seed: int) -> bool:
    """The exact driver (without the window bound and without a guided search of its own)
    on the segment's precedence graph for ``theta`` (:func:`guided.precedence_graph`) until
    ``end``: its best order is an order of the segment (re-evaluated there by ``take``), and
    its proven lower bound L raises the segment's to ``min(L, theta + 1)`` (docs/bounds.md
    4b). Skipped when nothing was learned (the precedence graph is the segment). True when
    that closes the segment."""
    from .guided import precedence_graph

    left = end - time.perf_counter()
    if left <= 0.5:
        return False
    t = time.perf_counter()
    pg = precedence_graph(s.sg, before)
    if pg.n_tensors == s.sg.n_tensors:  # nothing learned: the same graph, no guidance
        s.stats["shave"]["guided"].append({"theta": theta + s.offset, "learned": 0, "skipped": "nothing learned"})
        return False
    res = solve_exact(pg, time_limit=left, workers=workers, seed=seed, window_share=0.0, guided=False)
    if res.schedule is not None:
        s.take(list(res.schedule.computes()), "search guided by learned precedences")
    lb = int(res.lower_bound) if res.lower_bound is not None else 0
    if min(lb, theta + 1) > s.lb:
        s.lb = min(lb, theta + 1)
        s.say(f"  guided search: segment optimum >= {s.lb + s.offset} B")
    s.stats["shave"]["guided"].append({"theta": theta + s.offset, "learned": pg.n_tensors - s.sg.n_tensors,
                                       "peak": res.peak + s.offset if res.peak is not None else None,
                                       "lower_bound": lb + s.offset, "certified_by": res.extra.get("certified_by"),
                                       "wall_s": round(time.perf_counter() - t, 3)})
    if res.extra.get("interrupted"):
        raise KeyboardInterrupt
    return s.closed()


def _stage_bisect(s: _Segment, *, share: float = 0.6, cap: int = 2_000_000) -> str | None:
    """Stage d: close the gap by depth-first DP decisions (:func:`downset_decide`) with a
    large state cap, within ``share`` of the time left. A decision that finds an order
    lowers the incumbent; one that is exhausted proves ``peak > theta`` and raises the
    bound. Feasible decisions are cheap (the search dives) and exhausted ones expensive,
    so theta is placed near the top: first ``incumbent - 1`` (one exhausted decision
    certifies an optimal incumbent), then a quarter of the gap below the incumbent.

    Returns
    -------
    str or None
        "dp" when the segment is closed, else None (time or state cap reached).

    Complexity: each decision visits every down-set at most once, at most ``cap``."""
    from .downset_dp import downset_decide

    end = time.perf_counter() + share * max(0.0, s.left())
    first = True
    while not s.closed() and time.perf_counter() < end:
        gap = s.cur - s.lb
        th = s.cur - 1 if first else s.cur - max(1, (gap + 3) // 4)
        first = False
        r = downset_decide(s.sg, th, max_states=cap, time_limit=max(0.01, end - time.perf_counter()))
        s.count(r)
        if r.order is not None:
            s.take(r.order, "dp decision")
        elif r.exact:
            s.lb = th + 1
            s.say(f"  DP decision: no order of peak {th + s.offset} B")
        else:
            break
    return "dp" if s.closed() else None


def _stage_window(s: _Segment, *, share: float, seed: int) -> str | None:
    """Stage e': the window bound (docs/bounds.md 9) on the segment, within ``share`` of
    the time left: windows of consecutive operators of the incumbent around its peak, each
    an induced subproblem solved by :func:`solve_exact` (without this stage); a proven
    bound of a window's subproblem is a bound of the segment.

    Returns
    -------
    str or None
        "window" when the segment is closed, else None."""
    from .window_bound import window_bound

    if share <= 0 or s.left() <= 1.0 or B.reachability(s.sg) is None:
        return None
    t = time.perf_counter()
    winfo: dict = {}
    v = window_bound(s.sg, s.so, s.lb, time_budget=share * s.left(), seed=seed, info=winfo,
                     say=lambda m: s.say(f"  {m}"))
    s.stats["window_bound"] = {"value": v + s.offset, "raised": v > s.lb, "wall_s": round(time.perf_counter() - t, 3),
                               "windows": [dict(w) if "skipped" in w else dict(w, lower_bound=w["lower_bound"] + s.offset)
                                           for w in winfo["windows"]]}
    if v > s.lb:
        s.say(f"  window bound: segment optimum >= {v + s.offset} B")
        s.lb = v
    return "window" if s.closed() else None


def _stage_cpsat(s: _Segment, *, workers: int, seed: int, use_cpsat: bool) -> tuple[str | None, bool]:
    """Stage f: more window search, then the CP-SAT model with the bound as floor and the
    incumbent as hint, for the time left.

    Returns
    -------
    (str or None, bool)
        The closing method ("lns", "cpsat") or None, and whether CP-SAT was interrupted
        (then its bound is not used)."""
    if s.left() > 0:
        s.take(_window_lns(s.sg, s.so, s.lb, time.perf_counter() + (0.3 if use_cpsat else 1.0) * s.left(),
                           stats=s.stats, widths=(24, 40, 56, 72)), "window search")
        if s.closed():
            return "lns", False
    if use_cpsat and s.sg.n_ops > B.REACH_MASK_MAX_OPS:
        s.stats["cpsat_skipped"] = f"segment of {s.sg.n_ops} operators: the CP-SAT model needs O(n^2) ancestor bitmasks"
        return None, False
    if not use_cpsat or s.left() <= 0:
        return None, False
    from memsched.formulations.cpsat_order import build_order_model
    from memsched.solvers.ordering.cpsat import solve_order_model

    om = build_order_model(s.sg, lower_bound=s.lb, hint=s.so)
    cb = (lambda p, b, w: s.say(f"  CP-SAT order {p + s.offset} B, bound {b + s.offset:.0f} B"))
    sol = solve_order_model(om, time_limit=max(0.1, s.left()), workers=workers, seed=seed, stop_at=s.lb,
                            on_solution=cb)
    if sol.order is not None:
        s.take(sol.order, "CP-SAT")
    if not sol.interrupted:
        s.lb = max(s.lb, sol.bound)
    return ("cpsat" if s.closed() else None), sol.interrupted


def _solve_segment(sg: Graph, so: list[int], theta: int, deadline: float, *, workers: int, seed: int,
                   dp_states: int, use_cpsat: bool, stats: dict, say, offset: int = 0, window_share: float = 0.0,
                   guided: bool = True):
    """Improve the order of one segment until its peak reaches ``theta`` or is proven
    optimal.

    Parameters
    ----------
    sg : Graph
        The segment's subproblem (:func:`make_part`).
    so : list of int
        Its incumbent order.
    theta : int
        A global lower bound minus the segment's offset: the segment need not go lower.
    deadline : float
        ``time.perf_counter()`` value at which to stop.
    workers, seed, use_cpsat : CP-SAT settings. dp_states : state cap of the DP.
    stats : dict
        Counters, updated in place. say : progress callback. offset : for messages.
    window_share : float
        Share of the time left for the window bound on wide segments (0: none).
    guided : bool
        Run the search guided by learned precedences in the learned-precedence stage.

    Returns
    -------
    (order, lower bound, method, interrupted)
        The best order, a proven lower bound of the segment's optimum (or ``theta``), the
        method that closed the gap or "", and whether an interrupt stopped CP-SAT.

    Complexity: each stage is bounded by a share of the time left (stages in the module
    docstring); the bound is only ever raised by proofs (trap, DP exhaustion, precedences,
    CP-SAT's bound)."""
    lb = max(theta, B.trap_bound(sg, [so], time_budget=0.2 * max(0.0, deadline - time.perf_counter())))
    s = _Segment(sg, so, lb, deadline, dp_states, stats, say, offset)
    if s.closed():
        return s.so, s.lb, "", False
    # the DP decisions close narrow segments (there they run right after the first decision,
    # before the window search); on wide ones (hundreds of operators) they rarely finish a
    # proof and come after it, with a small share, CP-SAT's bound getting the rest
    try:
        if sg.n_ops <= BISECT_WIDE_OPS:
            by = _stage_decide(s) or _stage_bisect(s, share=0.6) or _stage_improve(s) or _stage_prove(s)
        else:
            by = (_stage_decide(s) or _stage_improve(s)
                  or _stage_shave(s, share=SHAVE_SHARE, workers=workers, seed=seed, guided=guided)
                  or _stage_window(s, share=window_share, seed=seed) or _stage_bisect(s, share=0.2)
                  or _stage_prove(s))
        if by:
            return s.so, s.lb, by, False
        by, interrupted = _stage_cpsat(s, workers=workers, seed=seed, use_cpsat=use_cpsat)
    except KeyboardInterrupt:
        # Ctrl-C in a stage: the segment's incumbent (evaluated) and bound (proven) so far
        return s.so, s.lb, "", True
    return s.so, s.lb, by or "", interrupted


# ------------------------------------------------------------------ driver
class _Progress:
    def __init__(self, on: bool, t0: float):
        self.on, self.t0 = on, t0

    def __call__(self, msg: str) -> None:
        if self.on:
            print(f"[exact {time.perf_counter() - self.t0:7.2f}s] {msg}", file=sys.stderr, flush=True)


class _Run:
    """The state of one :func:`solve_exact` call: incumbent order and peak, proven lower
    bound, who found / proved them, the segments, and what ended the run."""

    def __init__(self, g: Graph, time_limit: float, params: dict, progress: bool):
        self.g, self.time_limit, self.params = g, float(time_limit), params
        self.t0 = time.perf_counter()
        self.deadline = self.t0 + self.time_limit
        self.say = _Progress(progress, self.t0)
        self.order, self.peak, self.lb = g.given_order(), None, B.initial_bound(g)
        self.by, self.ub_by = "none", "given"
        self.parts: list | None = None  # [Part, sub-order, peak incl. offset] per segment
        self.interrupted = self.timed_out = False
        self.certify_t: float | None = None
        self.info: dict = {"heuristics": {}, "bounds": {}, "segments": 0, "stats": {}}

    def certified(self) -> bool:
        """True when the incumbent's peak meets the bound; a bound above it is a bug."""
        if self.peak is not None and self.peak < self.lb:
            raise SolverDisagreement(f"exact: lower bound {self.lb} is above the peak {self.peak} of an order "
                                     f"it found (upper bound by {self.ub_by})")
        if self.peak is not None and self.peak == self.lb:
            if self.certify_t is None:
                self.certify_t = time.perf_counter() - self.t0
            return True
        return False

    def assemble(self) -> None:
        """The whole order from the segments' orders (its peak: the largest segment peak)."""
        order = []
        for P, so, _ in self.parts:
            order += [P.ops[i] for i in so]
        self.order = order
        self.peak = max([B.initial_bound(self.g)] + [pk for _, _, pk in self.parts])

    def finish(self) -> SolveResult:
        """The evaluated result (``make_result`` re-judges the order)."""
        g, info = self.g, self.info
        peak = self.peak if self.peak is not None else order_peak(g, self.order)
        cert = peak == self.lb  # never clipped: a bound above the evaluated peak is a bug (make_result raises)
        if cert:
            status = Status.OPTIMAL
        elif self.interrupted or self.timed_out or time.perf_counter() - self.t0 >= 0.95 * self.time_limit:
            status = Status.TIMEOUT
        else:
            status = Status.FEASIBLE
        extra = {"certified": cert, "certified_by": self.by if cert else "none",
                 "upper_bound_by": self.ub_by, "segments": info["segments"],
                 "time_to_certify_s": round(self.certify_t, 6) if cert and self.certify_t is not None else None,
                 "heuristics": info["heuristics"], "bounds": info["bounds"], "interrupted": self.interrupted}
        extra.update(info["stats"])
        msg = "certified optimal" if cert else ("interrupted" if self.interrupted else
                                                ("time limit reached" if status == Status.TIMEOUT else "not certified"))
        return make_result(g, Schedule.from_order(g, self.order), solver="exact", status=status, claimed=peak,
                           lower_bound=self.lb, wall_s=time.perf_counter() - self.t0, params=self.params,
                           message=msg, extra=extra)


def _bounds_and_heuristics(run: _Run, pair_budget: float | None) -> bool:
    """Step 1 of :func:`solve_exact`: trap, per-operator and final bounds, the heuristics
    and the beam search, then the pair bound. Returns True when they certify the order.

    Complexity: the trap bound within a quarter of the time limit; the pair bound within
    ``pair_budget`` (default: min(2 s, 5 % of the limit)); heuristics O((n + E) log n)."""
    g, info = run.g, run.info
    tinfo: dict = {}
    trap, _ = B.trap_bound(g, want_critical=True, time_budget=0.25 * run.time_limit, info=tinfo)
    info["bounds"] = {"initial": B.initial_bound(g), "per_op": B.per_op_bound(g), "final": B.final_bound(g),
                      "trap": trap}
    if not tinfo.get("complete", True):
        info["bounds"]["trap_stopped_by_budget"] = True
    run.lb = max(run.lb, trap, info["bounds"]["per_op"], info["bounds"]["final"])
    o, pk, nm, peaks = _heuristics(g, run.lb, run.deadline)
    info["heuristics"] = peaks
    run.order, run.peak, run.ub_by = o, pk, nm
    run.say(f"lower bound {run.lb} B (trap), best heuristic {nm}: {pk} B")
    if run.certified():
        run.by = "bounds"
        return True
    t = time.perf_counter()
    o2 = _peak_split(g, o, min(run.deadline, t + 0.1 * run.time_limit), stats=info["stats"])
    pk2 = order_peak(g, o2)
    info["stats"]["peak_split_s"] = round(time.perf_counter() - t, 4)
    if pk2 < run.peak:
        run.order, run.peak, run.ub_by = o2, pk2, "peak-split"
        run.say(f"peak splitting: {pk2} B ({time.perf_counter() - t:.2f}s)")
        if run.certified():
            run.by = "bounds"
            return True
    t = time.perf_counter()
    pb = B.pair_bound(g, [o, g.given_order()], base=run.lb,
                      time_budget=pair_budget if pair_budget is not None else min(2.0, 0.05 * run.time_limit))
    info["bounds"]["pair"] = pb
    if pb > run.lb:
        run.lb = pb
        run.say(f"pair bound raises the lower bound to {pb} B ({time.perf_counter() - t:.2f}s)")
        if run.certified():
            run.by = "bounds"
            return True
    t = time.perf_counter()
    ls = B.last_of_set_bound(g, [run.order, g.given_order()], base=run.lb,
                             time_budget=min(5.0, 0.05 * run.time_limit))
    info["bounds"]["last_of_set"] = ls
    if ls > run.lb:
        run.lb = ls
        run.say(f"last-of-set bound raises the lower bound to {ls} B ({time.perf_counter() - t:.2f}s)")
        if run.certified():
            run.by = "bounds"
            return True
    t = time.perf_counter()
    o3 = _set_split(g, run.order, min(run.deadline, t + 0.25 * run.time_limit), target=run.lb, stats=info["stats"])
    pk3 = order_peak(g, o3)
    if pk3 < run.peak:
        run.order, run.peak, run.ub_by = o3, pk3, "set-split"
        run.say(f"splitting at the last of a set: {pk3} B ({time.perf_counter() - t:.2f}s)")
        if run.certified():
            run.by = "bounds"
            return True
    return False


def _split_into_segments(run: _Run) -> None:
    """Step 2: the forced segments (:func:`forced_segments`), each as its own subproblem
    (:func:`make_part`) with the incumbent's order restricted to it. O(n (n + T)) for the
    subproblems (each reads every tensor once)."""
    g = run.g
    segs = forced_segments(g)
    run.info["segments"] = len(segs)
    parts = []
    before = 0
    pos = {v: k for k, v in enumerate(run.order)}
    for s in segs:
        P = make_part(g, before, s)
        for u in s:
            before |= 1 << u
        sub_order = sorted(range(len(s)), key=lambda i: pos[P.ops[i]])
        parts.append([P, sub_order, order_peak(P.graph, sub_order) + P.offset])
    run.say(f"{len(segs)} forced segment(s); largest has {max(len(s) for s in segs)} operators")
    run.parts = parts


def _solve_segments(run: _Run, *, workers: int, seed: int, dp_states: int, use_cpsat: bool,
                    window_share: float = 0.0, guided: bool = True) -> None:
    """Step 3: the segments whose peak is above the global bound, hardest first, each by
    its heuristics and :func:`_solve_segment`, down to the global bound only."""
    g, parts = run.g, run.parts
    n = g.n_ops
    for k in sorted(range(len(parts)), key=lambda k: -parts[k][2]):
        P, so, seg_peak = parts[k]
        if seg_peak <= run.lb:
            continue
        sg = P.graph
        theta = run.lb - P.offset  # the segment only has to reach the global bound
        if sg.n_ops < 0.9 * n:  # (the whole graph's heuristics already ran)
            o, pk, nm, _ = _heuristics(sg, theta, run.deadline)
            if pk < order_peak(sg, so):
                so = o
        parts[k][1], parts[k][2] = so, order_peak(sg, so) + P.offset
        if parts[k][2] <= run.lb:
            continue
        run.say(f"segment of {sg.n_ops} operators: peak {parts[k][2]} B, target {run.lb} B")
        so, seg_lb, by, interrupted = _solve_segment(sg, so, theta, run.deadline, workers=workers, seed=seed,
                                                     dp_states=dp_states, use_cpsat=use_cpsat,
                                                     window_share=window_share, guided=guided,
                                                     stats=run.info["stats"], say=run.say, offset=P.offset)
        run.lb = max(run.lb, seg_lb + P.offset)
        if by:
            run.by = by
        run.interrupted = run.interrupted or interrupted
        parts[k][1], parts[k][2] = so, order_peak(sg, so) + P.offset
        run.assemble()
        if run.interrupted:
            break
        if time.perf_counter() > run.deadline and not run.certified():
            run.timed_out = True
            break
    run.assemble()


def solve_exact(graph: Graph, time_limit: float = 60.0, workers: int = 2, seed: int = 0,
                progress: bool = False, *, dp_states: int = 300_000, use_cpsat: bool = True,
                pair_budget: float | None = None, window_share: float = 0.5,
                guided: bool = True) -> SolveResult:
    """Minimum-peak topological order of ``graph`` with a proof of optimality.

    Parameters
    ----------
    graph : Graph
    time_limit : float
        Seconds for the whole solve (wall clock).
    workers, seed : int
        CP-SAT workers and random seed.
    progress : bool
        Print progress lines to stderr.
    dp_states : int
        State cap of the down-set DP (past it the DP proves nothing).
    use_cpsat : bool
        Run the CP-SAT model on segments the other methods do not close.
    pair_budget : float, optional
        Seconds for the pair bound (default min(2, 5 % of the limit)).
    window_share : float
        Share of a wide segment's time left (after the DP stages) for the window bound
        (docs/bounds.md 9); 0 switches it off (the window subproblems are solved with 0).
    guided : bool
        Run the search guided by learned precedences on wide segments (docs/bounds.md 4b;
        off inside that search itself).

    Returns
    -------
    SolveResult
        Evaluated by ``make_result``, with ``lower_bound`` set and extra keys
        ``certified`` (peak == lower_bound), ``certified_by`` (bounds | dp | split |
        lns | window | guided | cpsat | none), ``window_bound`` when that stage ran (its value, whether it
        raised the bound, and per window: operators, virtual operators, bound, time), ``upper_bound_by``, ``segments``, ``time_to_certify_s``,
        ``heuristics`` (peak of each heuristic) and ``bounds``. Status: optimal when
        certified, timeout when the time limit or an interrupt stopped it first,
        feasible otherwise.

    Notes
    -----
    Steps (module docstring): :func:`_bounds_and_heuristics`, :func:`_split_into_segments`,
    :func:`_solve_segments`. A KeyboardInterrupt returns the best order so far.

    References
    ----------
    Proofs of the bounds and the decomposition: docs/bounds.md."""
    params = {"time_limit": time_limit, "workers": workers, "seed": seed, "dp_states": dp_states,
              "window_share": window_share}
    run = _Run(graph, time_limit, params, progress)
    try:
        if graph.n_ops == 0:
            run.peak, run.by = B.initial_bound(graph), "bounds"
            run.certified()
            return run.finish()
        if _bounds_and_heuristics(run, pair_budget):
            return run.finish()
        _split_into_segments(run)
        _solve_segments(run, workers=workers, seed=seed, dp_states=dp_states, use_cpsat=use_cpsat,
                        window_share=window_share, guided=guided)
        run.certified()
        return run.finish()
    except KeyboardInterrupt:
        run.interrupted = True
        if run.parts is not None:
            run.assemble()
            run.peak = None
        return run.finish()
