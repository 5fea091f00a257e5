"""Exact capped recomputation over the given order, exponential only in a width.

Class (Checkmate's stage class; Jain et al., MLSys 2020). Let v_0..v_{m-1} be
the graph's given order. A schedule is in the class when its compute events
split into m consecutive *stages*; stage k ends with the first computation of
v_k and before it recomputes some operators of positions < k, each at most
once and in increasing position; frees are arbitrary. So first computations
keep the given order and recomputations are inserted before consumers.
Every operator v runs at most 1 + cap(v) times.  Memory is the evaluator's.

Width. With recomputation, a tensor produced before step k matters at the
boundary before step k if it is a required output, or is read by an operator
that may still run: v_j for j >= k, or (transitively) an earlier operator with
cap >= 1 one of whose outputs matters. Call that set U_k; the width is
``max_k |U_k|``. Resident tensors outside U_k are useless and freeing them is
free, so the resident subset of U_k (plus the recompute counts of the
operators that may still rerun, when caps are finite) is a complete state.
Without recomputation (all caps 0) U_k is the set of tensors live across the
boundary in the usual sense.

Algorithm. Dynamic programming over boundaries; inside a stage, over the
candidate recomputations in position order, each "compute or skip", then v_k;
after each compute, each tensor it touched is kept or freed (freeing a tensor
anywhere else is dominated by freeing it at its last touch; zero-byte tensors
are kept and freed only when their producer reruns). States are merged by
(resident set, counts) keeping the least compute.

Complexity: O(m * c * 2^w * w) state updates with c = the candidates per stage
(<= w) and, for finite caps, a factor (1 + cap)^w in the state count; linear
in m for bounded width. The peak objective binary-searches the budget.
"""
from __future__ import annotations

import time
from fractions import Fraction

from memsched.formulations import Graph, MemschedError, Schedule
from memsched.formulations.schedule import COMPUTE, FREE
from memsched.solvers.result import SolveResult, Status, Timer, make_result
from memsched.solvers.special.sp_knapsack import normalize_caps

__all__ = ["useful_sets", "width", "solve", "SCOPE"]

# The class this module solves exactly (docs/claims.md): Checkmate's stage class. Its
# "optimal"/"infeasible" are statements about that class; memsched.solvers.remat.dispatch
# reports them as class_status and answers the asked (free or given order) problem apart.
SCOPE = "given-order-stages"


def useful_sets(graph: Graph, caps=None) -> list[set[int]]:
    """U_k for k = 0..m (U_m: at the end) over the given order; pinned tensors excluded."""
    caps = normalize_caps(graph, caps) if not isinstance(caps, list) or len(caps) != graph.n_ops else caps
    order = graph.given_order()
    m = len(order)
    pos = [0] * graph.n_ops
    for k, v in enumerate(order):
        pos[v] = k
    pinned = graph.pinned_idx
    avail_pos = [(-1 if graph.producer[j] == -1 else pos[graph.producer[j]]) for j in range(graph.n_tensors)]
    out = []
    for k in range(m + 1):
        Q = {j for j in graph.output_idx if j not in pinned}
        for v in order[k:]:
            Q.update(j for j in graph.op_in[v] if j not in pinned)
        for u in reversed(order[:k]):
            if caps[u] != 0 and any(j in Q for j in graph.op_out[u]):
                Q.update(j for j in graph.op_in[u] if j not in pinned)
        out.append({j for j in Q if avail_pos[j] < k})
    return out


def width(graph: Graph, cap=None) -> int:
    """The width max_k |U_k| (see the module docstring)."""
    return max(len(u) for u in useful_sets(graph, normalize_caps(graph, cap)))


def _exact(c: float):
    return int(c) if float(c).is_integer() else Fraction(c)


class _Timeout(Exception):
    pass


def _bits(ids) -> int:
    b = 0
    for j in ids:
        b |= 1 << j
    return b


def _set_bits(x: int):
    """The indices of the set bits of ``x``, lowest first."""
    while x:
        low = x & -x
        x ^= low
        yield low.bit_length() - 1


class _StageDP:
    """The dynamic program of the module docstring for one budget ``B``.

    A state is ``(resident mask of useful tensors, recompute counts)`` mapped to
    ``(least compute, trail)``; the trail is a linked list ``(previous, event)`` of the
    schedule's events. :meth:`stage` runs the micro-steps of one stage (each candidate
    recomputation computed or skipped, then the stage's operator), :meth:`boundary` drops
    the tensors that stopped being useful. Raises ``_Timeout`` past ``deadline``."""

    def __init__(self, graph: Graph, B: int, caps, U, deadline: float, max_states: int):
        self.g, self.B, self.caps = graph, B, caps
        self.deadline, self.max_states = deadline, max_states
        self.order = graph.given_order()
        size, pinned, n = graph.size, graph.pinned_idx, graph.n_ops
        self.size = size
        self.const = sum(size[j] for j in pinned)
        self.cost = [_exact(c) for c in graph.cost]
        self.ws = graph.workspace
        self.in_bits = [_bits(j for j in graph.op_in[v] if j not in pinned) for v in range(n)]
        self.out_bits = [_bits(graph.op_out[v]) for v in range(n)]
        self.out_size = [sum(size[j] for j in graph.op_out[v]) for v in range(n)]
        self.u_bits = [_bits(u) for u in U]
        self.zero_bits = _bits(j for j in range(graph.n_tensors) if size[j] == 0)
        self.tracked = [v for v in range(n) if caps[v] is not None and caps[v] > 0]
        self.memo: dict[int, int] = {0: 0}

    def mem(self, mask: int) -> int:
        """Bytes of the tensors in ``mask`` (memoized)."""
        r = self.memo.get(mask)
        if r is None:
            r = self.memo[mask] = sum(self.size[j] for j in _set_bits(mask))
        return r

    @staticmethod
    def put(d, key, c, tr) -> None:
        old = d.get(key)
        if old is None or c < old[0]:
            d[key] = (c, tr)

    def initial_states(self) -> dict:
        """The graph inputs resident, the useless ones freed at once."""
        g, pinned = self.g, self.g.pinned_idx
        trail = None
        for j in g.input_idx:
            if j not in pinned and not (self.u_bits[0] >> j & 1):
                trail = (trail, (FREE, j))
        start = _bits(j for j in g.input_idx if j not in pinned)
        return {(start & self.u_bits[0], ()): (0, trail)}

    def branch_frees(self, d, key, c, tr, touched: int, forced: int) -> None:
        """Expand frees of the tensors in ``touched`` (keep/free each), ``forced`` ones freed."""
        mask, cnt = key
        items = [(mask, tr)]
        for j in _set_bits(touched & mask):
            low = 1 << j
            nxt = []
            for mk, t2 in items:
                if not forced & low:
                    nxt.append((mk, t2))
                nxt.append((mk & ~low, (t2, (FREE, j))))
            items = nxt
        for mk, t2 in items:
            self.put(d, (mk, cnt), c, t2)

    def compute(self, nxt: dict, key, c, tr, o: int, first: bool, keep_after: int) -> None:
        """Run operator ``o`` from state ``key`` (a first computation when ``first``), if
        its inputs are resident, its cap allows and it fits the budget."""
        mask, cnt = key
        if self.in_bits[o] & ~mask:
            return
        res_out = self.out_bits[o] & mask
        if res_out:  # recompute only after freeing; zero-byte outputs are freed here for free
            if res_out & ~self.zero_bits:
                return
            mask &= ~res_out
            for j in _set_bits(res_out):
                tr = (tr, (FREE, j))
        cd = dict(cnt)
        cap = self.caps[o]
        if not first and cap is not None:
            used = cd.get(o, 0)
            if used >= cap:
                return
            cd[o] = used + 1
        if self.const + self.mem(mask) + self.out_size[o] + self.ws[o] > self.B:
            return
        nk = (mask | self.out_bits[o], tuple(sorted(cd.items())))
        touched = self.in_bits[o] | self.out_bits[o]
        forced = touched & ~keep_after
        self.branch_frees(nxt, nk, c + self.cost[o], (tr, (COMPUTE, o)), (touched & ~self.zero_bits) | forced, forced)

    def stage(self, k: int, states: dict) -> dict:
        """Stage k: candidate recomputations (each computed or skipped), then ``order[k]``.
        No frees at the stage start: a tensor is freed at its last touch (dominance)."""
        vk, uk, uk1 = self.order[k], self.u_bits[k], self.u_bits[k + 1]
        ops = [u for u in self.order[:k] if self.caps[u] != 0 and self.out_bits[u] & uk] + [vk]
        later_need = [0] * (len(ops) + 1)  # what later micro-steps of this stage read: forced frees
        for t in range(len(ops) - 1, -1, -1):
            later_need[t] = later_need[t + 1] | self.in_bits[ops[t]]
        cur = states
        for t, o in enumerate(ops):
            nxt: dict = {}
            first = o == vk
            for key, (c, tr) in cur.items():
                if not first:
                    self.put(nxt, key, c, tr)  # skip this recomputation
                self.compute(nxt, key, c, tr, o, first, uk1 | later_need[t + 1])
            cur = nxt
            if len(cur) > self.max_states:
                raise MemschedError(f"width-dp: more than {self.max_states} states at step {k}; the width is too large")
        return cur

    def boundary(self, k: int, cur: dict) -> dict:
        """Boundary k+1: free the tensors no longer useful, keep the counts of the
        operators that may still rerun."""
        uk1 = self.u_bits[k + 1]
        alive_ops = {u for u in self.tracked if self.out_bits[u] & uk1}
        states: dict = {}
        for (mask, cnt), (c, tr) in cur.items():
            for j in _set_bits(mask & ~uk1):
                tr = (tr, (FREE, j))
            self.put(states, (mask & uk1, tuple((o, n) for o, n in cnt if o in alive_ops)), c, tr)
        return states

    def best(self, states: dict):
        """(least compute, schedule) among the final states that hold the required outputs."""
        need = _bits(j for j in self.g.output_idx if j not in self.g.pinned_idx)
        best = min(((c, tr) for (mask, _), (c, tr) in states.items() if mask & need == need),
                   key=lambda ct: ct[0], default=None)
        if best is None:
            return None
        evs = []
        tr = best[1]
        while tr is not None:
            tr, e = tr
            evs.append(e)
        return best[0], Schedule(tuple(reversed(evs)))


def _run(graph: Graph, B: int, caps, U, deadline: float, max_states: int):
    """Least compute for budget B in the class: (cost, schedule), or (None, the reason why
    nothing fits). O(m * c * states) (module docstring)."""
    initial = graph.resident_at_start()
    if initial > B:
        return None, f"the graph inputs alone need {initial} bytes > budget {B}"
    dp = _StageDP(graph, B, caps, U, deadline, max_states)
    states = dp.initial_states()
    for k, vk in enumerate(dp.order):
        if time.perf_counter() > deadline:
            raise _Timeout
        states = dp.boundary(k, dp.stage(k, states))
        if not states:
            return None, f"no schedule in the given-order class keeps step {k} ({graph.ops[vk].name!r}) within budget {B}"
    found = dp.best(states)
    if found is None:
        return None, f"no schedule keeps the required outputs within budget {B}"
    return found


def _allowance(baseline, eps: float, extra_compute):
    """The compute allowed to the peak objective: baseline + ``extra_compute``, else
    (1 + eps) x baseline (with a 1e-9 relative slack for the float eps), exactly."""
    if extra_compute is not None:
        if extra_compute < 0:
            raise MemschedError(f"width-dp: extra compute allowance must be >= 0, got {extra_compute}")
        return baseline + Fraction(extra_compute)
    if eps < 0:
        raise MemschedError(f"width-dp: eps must be >= 0, got {eps}")
    allow = Fraction(1 + eps) * Fraction(float(baseline))
    return allow + Fraction(1, 10 ** 9) * max(1, abs(allow))


def _least_peak(graph: Graph, caps, U, allow, deadline: float, max_states: int):
    """(least budget B whose least compute is <= ``allow``, its schedule): binary search
    between the per-operator lower bound and the given order's peak (feasible at no
    extra compute). O(log(peak) * one DP)."""
    from memsched.formulations import evaluate
    from memsched.solvers.ordering.bounds import per_op_bound

    hi = evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak
    lo = min(per_op_bound(graph), hi)  # no schedule peaks lower (every operator runs once)
    found = None
    while lo < hi:
        mid = (lo + hi) // 2
        b2, s2 = _run(graph, mid, caps, U, deadline, max_states)
        if b2 is not None and b2 <= allow:
            hi, found = mid, s2
        else:
            lo = mid + 1
    if found is None:
        _, found = _run(graph, lo, caps, U, deadline, max_states)
    return lo, found


def solve(graph: Graph, budget_bytes=None, cap=None, objective: str = "compute", eps: float = 0.0,
          time_limit: float = 60.0, *, extra_compute=None, max_width: int = 20,
          max_states: int = 2_000_000) -> SolveResult:
    """Exact selective recomputation in the given-order stage class (module docstring;
    ``scope`` "given-order-stages": status and bound hold for that class only).

    ``objective="compute"``: least compute with peak <= ``budget_bytes``.
    ``objective="peak"``: least peak with compute <= (1 + eps) x baseline (or
    baseline + ``extra_compute``). Status optimal / infeasible / timeout.
    Raises MemschedError when the width exceeds ``max_width``.
    """
    if objective not in ("compute", "peak"):
        raise MemschedError(f"width-dp: objective must be 'compute' or 'peak', got {objective!r}")
    caps = normalize_caps(graph, cap)
    with Timer() as tm:
        U = useful_sets(graph, caps)
        w = max(len(u) for u in U)
        if w > max_width:
            raise MemschedError(f"width-dp: graph {graph.name!r} has width {w} > {max_width} (tensors that may be needed "
                                "across a step of the given order); use --method milp or cp")
        deadline = time.perf_counter() + time_limit
        params = {"objective": objective, "cap": cap, "width": w}
        baseline = sum(_exact(c) for c in graph.cost)
        try:
            if objective == "compute":
                if budget_bytes is None:
                    raise MemschedError("width-dp: a budget in bytes is required for objective 'compute'")
                B = int(budget_bytes)
                params["budget"] = B
                best, info = _run(graph, B, caps, U, deadline, max_states)
                if best is None:
                    return make_result(graph, None, solver="width-dp", scope=SCOPE, status=Status.INFEASIBLE, objective=objective,
                                       wall_s=tm.elapsed(), params=params, message=info)
                claimed = float(best)
                sched = info
            else:
                allow = _allowance(baseline, eps, extra_compute)
                claimed, sched = _least_peak(graph, caps, U, allow, deadline, max_states)
                params["extra_compute_allowed"] = float(allow - baseline)
        except _Timeout:
            return make_result(graph, None, solver="width-dp", scope=SCOPE, status=Status.TIMEOUT, objective=objective,
                               wall_s=tm.elapsed(), params=params, message=f"time limit {time_limit} s reached")
    return make_result(graph, sched, solver="width-dp", scope=SCOPE, status=Status.OPTIMAL, objective=objective, claimed=claimed,
                       lower_bound=claimed, wall_s=tm.s, params=params,
                       extra={"baseline_compute": float(baseline), "width": w})
