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


def _run(graph: Graph, B: int, caps, U, deadline: float, max_states: int):
    """Least compute for budget B: (cost, events) or (None, reason)."""
    order = graph.given_order()
    m = len(order)
    size = graph.size
    pinned = graph.pinned_idx
    const = sum(size[j] for j in pinned)
    cost = [_exact(c) for c in graph.cost]
    op_in, op_out, ws = graph.op_in, graph.op_out, graph.workspace
    initial = graph.resident_at_start()
    if initial > B:
        return None, f"the graph inputs alone need {initial} bytes > budget {B}"
    memo: dict[int, int] = {0: 0}

    def mem(mask: int) -> int:
        r = memo.get(mask)
        if r is None:
            r = 0
            x = mask
            while x:
                low = x & -x
                r += size[low.bit_length() - 1]
                x ^= low
            memo[mask] = r
        return r

    def bits(ids) -> int:
        b = 0
        for j in ids:
            b |= 1 << j
        return b

    in_bits = [bits(j for j in op_in[v] if j not in pinned) for v in range(graph.n_ops)]
    out_bits = [bits(op_out[v]) for v in range(graph.n_ops)]
    out_size = [sum(size[j] for j in op_out[v]) for v in range(graph.n_ops)]
    u_bits = [bits(u) for u in U]
    zero_bits = bits(j for j in range(graph.n_tensors) if size[j] == 0)
    tracked = [v for v in range(graph.n_ops) if caps[v] is not None and caps[v] > 0]
    # state: (mask, counts) -> (cost, trail); trail is a linked list (prev, event)
    start = bits(j for j in graph.input_idx if j not in pinned)
    trail = None
    for j in graph.input_idx:
        if j not in pinned and not (u_bits[0] >> j & 1):
            trail = (trail, (FREE, j))
    states = {(start & u_bits[0], ()): (0, trail)}

    def put(d, key, c, tr):
        old = d.get(key)
        if old is None or c < old[0]:
            d[key] = (c, tr)

    def branch_frees(d, key, c, tr, touched: int, forced: int):
        """Expand frees of the tensors in `touched` (keep/free each), forced ones freed."""
        mask, cnt = key
        items = [(mask, tr)]
        x = touched & mask
        while x:
            low = x & -x
            x ^= low
            j = low.bit_length() - 1
            nxt = []
            for mk, t2 in items:
                if forced & low:
                    nxt.append((mk & ~low, (t2, (FREE, j))))
                else:
                    nxt.append((mk, t2))
                    nxt.append((mk & ~low, (t2, (FREE, j))))
            items = nxt
        for mk, t2 in items:
            put(d, (mk, cnt), c, t2)

    for k in range(m):
        if time.perf_counter() > deadline:
            raise _Timeout
        vk = order[k]
        uk, uk1 = u_bits[k], u_bits[k + 1]
        cand = [u for u in order[:k] if caps[u] != 0 and out_bits[u] & uk]
        ops = cand + [vk]
        # what later micro-ops of this stage may read, for forced frees
        later_need = [0] * (len(ops) + 1)
        for t in range(len(ops) - 1, -1, -1):
            later_need[t] = later_need[t + 1] | in_bits[ops[t]]
        cur = states  # no frees at stage start: a tensor is freed at its last touch (dominance)
        for t, o in enumerate(ops):
            nxt: dict = {}
            first = o == vk
            keep_after = uk1 | later_need[t + 1]
            for key, (c, tr) in cur.items():
                mask, cnt = key
                if not first:
                    put(nxt, key, c, tr)  # skip
                if in_bits[o] & ~mask:
                    continue
                res_out = out_bits[o] & mask
                if res_out:  # recompute only after freeing; zero-byte outputs are freed here for free
                    if res_out & ~zero_bits:
                        continue
                    mask &= ~res_out
                    x = res_out
                    while x:
                        low = x & -x
                        x ^= low
                        tr = (tr, (FREE, low.bit_length() - 1))
                cd = dict(cnt)
                if not first:
                    used = cd.get(o, 0)
                    if caps[o] is not None and used >= caps[o]:
                        continue
                    if caps[o] is not None:
                        cd[o] = used + 1
                if const + mem(mask) + out_size[o] + ws[o] > B:
                    continue
                nk = (mask | out_bits[o], tuple(sorted(cd.items())))
                touched = in_bits[o] | out_bits[o]
                forced = touched & ~keep_after
                branch_frees(nxt, nk, c + cost[o], (tr, (COMPUTE, o)), (touched & ~zero_bits) | forced, forced)
            cur = nxt
            if len(cur) > max_states:
                raise MemschedError(f"width-dp: more than {max_states} states at step {k}; the width is too large")
        # boundary k+1: drop useless tensors, project counts onto operators that may still rerun
        alive_ops = {u for u in tracked if out_bits[u] & uk1}
        states = {}
        for (mask, cnt), (c, tr) in cur.items():
            extra = mask & ~uk1
            x = extra
            while x:
                low = x & -x
                x ^= low
                tr = (tr, (FREE, low.bit_length() - 1))
            put(states, (mask & uk1, tuple((o, n) for o, n in cnt if o in alive_ops)), c, tr)
        if not states:
            return None, f"no schedule in the given-order class keeps step {k} ({graph.ops[vk].name!r}) within budget {B}"
    need = bits(j for j in graph.output_idx if j not in pinned)
    best = None
    for (mask, cnt), (c, tr) in states.items():
        if mask & need == need and (best is None or c < best[0]):
            best = (c, tr)
    if best is None:
        return None, f"no schedule keeps the required outputs within budget {B}"
    evs = []
    tr = best[1]
    while tr is not None:
        tr, e = tr
        evs.append(e)
    evs.reverse()
    return best[0], Schedule(tuple(evs))


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
                if extra_compute is not None:
                    if extra_compute < 0:
                        raise MemschedError(f"width-dp: extra compute allowance must be >= 0, got {extra_compute}")
                    allow = baseline + Fraction(extra_compute)
                else:
                    if eps < 0:
                        raise MemschedError(f"width-dp: eps must be >= 0, got {eps}")
                    allow = Fraction(1 + eps) * Fraction(float(baseline))
                    allow += Fraction(1, 10 ** 9) * max(1, abs(allow))
                from memsched.formulations import evaluate
                hi = evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak
                lo = graph.resident_at_start()
                for v in range(graph.n_ops):
                    lo = max(lo, sum(graph.size[j] for j in graph.op_in[v] if j not in graph.pinned_idx)
                             + sum(graph.size[j] for j in graph.op_out[v]) + graph.workspace[v]
                             + sum(graph.size[j] for j in graph.pinned_idx))
                lo = min(lo, hi)
                found = None
                while lo < hi:
                    mid = (lo + hi) // 2
                    b2, s2 = _run(graph, mid, caps, U, deadline, max_states)
                    if b2 is not None and b2 <= allow:
                        hi, found = mid, s2
                    else:
                        lo = mid + 1
                if found is None:
                    b2, found = _run(graph, lo, caps, U, deadline, max_states)
                sched = found
                claimed = lo
                params["extra_compute_allowed"] = float(allow - baseline)
        except _Timeout:
            return make_result(graph, None, solver="width-dp", scope=SCOPE, status=Status.TIMEOUT, objective=objective,
                               wall_s=tm.elapsed(), params=params, message=f"time limit {time_limit} s reached")
    return make_result(graph, sched, solver="width-dp", scope=SCOPE, status=Status.OPTIMAL, objective=objective, claimed=claimed,
                       lower_bound=claimed, wall_s=tm.s, params=params,
                       extra={"baseline_compute": float(baseline), "width": w})
