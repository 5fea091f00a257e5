"""Exact peak-minimizing order by dynamic programming over down-sets (Serenity-style).

Reference: B. H. Ahn, J. Lee, J. M. Lin, H.-P. Cheng, J. Hou, H. Esmaeilzadeh,
"Ordering Chaos: Memory-Aware Scheduling of Irregularly Wired Neural Networks for
Edge Devices", MLSys 2020 (dynamic programming over the sets of scheduled nodes,
divide-and-conquer, soft budgeting).

For a plain order with frees after last use, the tensors resident after the
operators of a down-closed set S ran depend on S alone (``resident(S)``), and so
does the memory of running an available operator v next:
``resident(S) + out(v) + ws(v)``. Hence

    best[S ∪ {v}] = min over available v of max(best[S], resident(S) + out(v) + ws(v))

over the lattice of down-sets, processed by increasing size. The number of
down-sets is exponential in the graph's width, so the search is pruned:

* **bound pruning**: a state whose peak so far already reaches the incumbent
  (or the target) is dropped; the answer stays exact for everything below it;
* **free moves** (a dominance rule, proof in docs/bounds.md): if an available
  operator w runs within ``max(best[S], lower_bound)`` and does not increase the
  resident bytes, some optimal completion of S runs w first, so S is replaced by
  S ∪ {w} without branching;
* **memory cap**: ``max_states`` stored states in all; when it is hit the search
  stops and says so (``exact=False``), never claiming optimality.

``downset_decide(theta)`` is the decision version (is there an order of peak <=
theta?) by depth-first search with a visited set, ``downset_optimize`` bisects
on it, ``beam_order`` is the recursion keeping only the ``width`` best states
per size (a heuristic), and ``solve_dp`` wraps the DP as a solver returning a
SolveResult.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from memsched.formulations import Graph

__all__ = ["DPResult", "downset_dp", "downset_decide", "downset_optimize", "beam_order", "solve_dp", "DPTables"]


@dataclass
class DPResult:
    order: list[int] | None  # an order of peak ``value`` (None: nothing below the incumbent)
    value: int | None  # its peak
    exact: bool  # search completed: ``value`` is optimal, or (order None) nothing < upper_bound exists
    states: int  # states stored
    wall_s: float
    reason: str = ""
    stats: dict = field(default_factory=dict)


class DPTables:
    """Per-operator bit masks and byte counts for fast state transitions."""

    def __init__(self, g: Graph):
        n = g.n_ops
        self.n = n
        kept = g.pinned_idx | g.output_idx
        pred = g.op_pred()
        succ = g.op_succ()
        self.pred_mask = [0] * n
        for v in range(n):
            m = 0
            for p in pred[v]:
                m |= 1 << p
            self.pred_mask[v] = m
        self.succ = succ
        self.run = [sum(g.size[j] for j in g.op_out[v]) + g.workspace[v] for v in range(n)]
        self.alloc = [sum(g.size[j] for j in g.op_out[v] if (g.consumers[j] or j in kept)) for v in range(n)]
        # non-kept inputs of v: (mask of their other consumers, size)
        self.frees: list[list[tuple[int, int]]] = []
        for v in range(n):
            lst = []
            for j in g.op_in[v]:
                if j in kept or g.size[j] == 0:
                    continue
                m = 0
                for c in g.consumers[j]:
                    if c != v:
                        m |= 1 << c
                lst.append((m, g.size[j]))
            self.frees.append(lst)
        self.initial = sum(g.size[j] for j in g.input_idx)
        self.resident0 = sum(g.size[j] for j in g.input_idx if g.consumers[j] or j in kept)
        self.ready0 = 0
        for v in range(n):
            if not self.pred_mask[v]:
                self.ready0 |= 1 << v
        self.full = (1 << n) - 1

    def step(self, S: int, v: int) -> tuple[int, int]:
        """(memory while v runs minus resident(S), change of resident bytes) for v at S."""
        done = S | (1 << v)
        freed = 0
        for m, sz in self.frees[v]:
            if not (m & ~done):
                freed += sz
        return self.run[v], self.alloc[v] - freed

    def new_ready(self, S: int, ready: int, v: int) -> int:
        done = S | (1 << v)
        r = ready & ~(1 << v)
        pm = self.pred_mask
        for s in self.succ[v]:
            if not (pm[s] & ~done):
                r |= 1 << s
        return r


def _bits(m: int):
    while m:
        b = m & -m
        yield b.bit_length() - 1
        m ^= b


def _free_moves(T: DPTables, S: int, ready: int, res: int, peak: int, floor: int):
    """Apply free moves greedily; return (S, ready, res, peak, moved ops)."""
    moved = []
    limit = max(peak, floor)
    changed = True
    while changed and ready:
        changed = False
        for v in _bits(ready):
            run, delta = T.step(S, v)
            if delta <= 0 and res + run <= limit:
                ready = T.new_ready(S, ready, v)
                S |= 1 << v
                res += delta
                if res - delta + run > peak:
                    peak = res - delta + run
                moved.append(v)
                changed = True
    return S, ready, res, peak, moved


#: Bytes the compiled decision's visited set may take (:mod:`.downset_jit`).
DP_TABLE_BYTES = 2 << 30
#: Above this many operators the lookahead table (an n x n int64 matrix) is not built.
LOOKAHEAD_MAX_OPS = 2_000
_MASKED = -(1 << 60)  # the entry of an operator already run: never the maximum


class Lookahead:
    """State-conditioned lower bounds on the memory of every operator not yet run
    (docs/bounds.md, "Lookahead pruning in the down-set DP").

    For a down-set S and an operator v outside it, every completion of S runs v after a
    set containing ``S ∪ anc(v)`` and nothing of ``{v} ∪ desc(v)``; a tensor produced in
    ``S ∪ anc(v)`` (or a graph input) that is kept or read by v or a descendant of v is
    resident while v runs. So ``mem(v) >= cond_S(v) = base(v) + sum_{u in S} W[u][v]``
    (``base``: run(v) and the tensors of inputs and ancestors; ``W[u][v]``: the tensors
    of u counted for v when u is not an ancestor of v). ``cond`` is kept as a numpy
    vector, updated by one row per operator added (``W[u][u]`` masks u itself), and a
    state whose ``max(cond)`` exceeds the target is pruned.

    Complexity: O(n^2) memory and O(n (n + T)) time to build; O(n) per update."""

    def __init__(self, g: Graph):
        import numpy as np

        n = g.n_ops
        anc, desc = g.reach_masks()
        kept = g.pinned_idx | g.output_idx
        full = (1 << n) - 1

        def vec(m: int):
            b = np.frombuffer(m.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
            return np.unpackbits(b, bitorder="little")[:n].astype(bool)

        base = np.zeros(n, dtype=np.int64)
        W = np.zeros((n, n), dtype=np.int64)
        for v in range(n):
            base[v] = sum(g.size[j] for j in g.op_out[v]) + g.workspace[v]
        for j in range(g.n_tensors):
            sz = g.size[j]
            if sz == 0:
                continue
            if j in kept:
                up = full
            else:
                up = 0
                for c in g.consumers[j]:
                    up |= anc[c] | (1 << c)  # v with a reader of j in {v} ∪ desc(v)
                if not up:
                    continue
            p = g.producer[j]
            if p == -1:
                base += sz * vec(up)
            else:
                base += sz * vec(up & desc[p])  # p is an ancestor of v
                W[p] += sz * vec(up & ~desc[p] & ~(1 << p) & full)
        for u in range(n):
            W[u, u] = _MASKED
        self.base, self.W = base, W

    def start(self, S: int):
        """``cond`` of the down-set S."""
        c = self.base.copy()
        m = S
        while m:
            b = m & -m
            c += self.W[b.bit_length() - 1]
            m ^= b
        return c

    def add(self, cond, ops):
        """``cond`` after the operators ``ops`` ran (a new vector)."""
        c = cond + self.W[ops[0]]
        for u in ops[1:]:
            c += self.W[u]
        return c


def _lookahead(g: Graph, on: bool) -> Lookahead | None:
    return Lookahead(g) if on and 0 < g.n_ops <= LOOKAHEAD_MAX_OPS else None


def _expand(T: DPTables, L: Lookahead | None, S: int, pk: int, res: int, ready: int, cond, ub: int | None,
            floor: int, free_moves: bool, buckets: dict, parent: dict) -> int:
    """Every successor of the down-set S (one available operator, then free moves) into
    ``buckets`` (by size) and ``parent``, keeping the least peak per down-set and dropping
    successors whose peak or lookahead reaches ``ub``. Returns the number of new down-sets.
    O(available operators x (n / 64 + free-move work))."""
    new = 0
    for v in _bits(ready):
        run, delta = T.step(S, v)
        npk = max(pk, res + run)
        if ub is not None and npk >= ub:
            continue
        nS = S | (1 << v)
        nready = T.new_ready(S, ready, v)
        nres = res + delta
        ops = (v,)
        if free_moves:
            nS, nready, nres, npk, mv = _free_moves(T, nS, nready, nres, npk, floor)
            if mv:
                ops = (v, *mv)
        ncond = None
        if L is not None:
            ncond = L.add(cond, ops)
            if int(ncond.max()) >= ub:
                continue
        bk = buckets.setdefault(nS.bit_count(), {})
        old = bk.get(nS)
        if old is None or npk < old[0]:
            new += old is None
            bk[nS] = (npk, nres, nready, ncond)
            parent[nS] = (S, ops)
    return new


def _path(parent: dict, S: int) -> list[int]:
    """The operators along the parent links from the initial down-set to S, in order."""
    order: list[int] = []
    while S != -1:
        prev, ops = parent[S]
        order[:0] = ops
        S = prev
    return order


def downset_dp(g: Graph, *, upper_bound: int | None = None, lower_bound: int = 0, max_states: int = 2_000_000,
               time_limit: float | None = None, free_moves: bool = True, beam: int | None = None,
               lookahead: bool = True) -> DPResult:
    """Exact minimum peak over all topological orders, or a proof that none is below
    ``upper_bound``.

    ``upper_bound``: only orders with peak < upper_bound are sought (states whose peak so
    far reaches it are pruned). ``lower_bound``: a proven lower bound on the optimum (used
    by the free-move rule and to stop at the first order that reaches it).
    ``beam``: keep only the ``beam`` states of least resident bytes per size (a heuristic
    search; ``exact`` is then False whenever a layer was truncated).
    ``lookahead``: prune states from which some operator must run at ``upper_bound`` or
    more (:class:`Lookahead`; up to ``LOOKAHEAD_MAX_OPS`` operators).
    Returns a :class:`DPResult`; ``exact`` is False when ``max_states``, ``time_limit`` or
    the beam cut the search.
    """
    t0 = time.perf_counter()
    n = g.n_ops
    T = DPTables(g)
    if n == 0:
        return DPResult([], T.initial, True, 0, 0.0)
    ub = upper_bound if upper_bound is not None else None
    floor = max(lower_bound, T.initial)
    # buckets[size] = {S: (peak, res, ready)}; parent[S] = (prevS, ops tuple)
    buckets: dict[int, dict[int, tuple[int, int, int]]] = {}
    parent: dict[int, tuple[int, tuple[int, ...]]] = {}
    S0, r0, res0, pk0, mv0 = _free_moves(T, 0, T.ready0, T.resident0, T.initial, floor) if free_moves else (
        0, T.ready0, T.resident0, T.initial, [])
    L = _lookahead(g, lookahead and ub is not None)
    c0 = L.start(S0) if L is not None else None
    if c0 is not None and int(c0.max()) >= ub:
        return DPResult(None, None, True, 1, time.perf_counter() - t0, "no order below the upper bound (lookahead)")
    buckets[S0.bit_count()] = {S0: (pk0, res0, r0, c0)}
    parent[S0] = (-1, tuple(mv0))
    stored = 1
    full = T.full
    best_full = None
    exact = True
    reason = ""
    size = 0
    expanded = 0
    while size <= n:
        layer = buckets.pop(size, None)
        if layer is None:
            size += 1
            continue
        if size == n:
            best_full = layer[full][0]
            if ub is not None and best_full >= ub:
                best_full = None
            break
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            exact, reason = False, "time limit"
            break
        items = layer.items()
        if beam is not None and len(layer) > beam:
            items = sorted(items, key=lambda kv: (kv[1][1], kv[1][0]))[:beam]
            exact, reason = False, "beam"
        for S, (pk, res, ready, cond) in items:
            if ub is not None and pk >= ub:
                continue
            stored += _expand(T, L, S, pk, res, ready, cond, ub, floor, free_moves, buckets, parent)
            if stored > max_states:
                exact, reason = False, f"state cap {max_states} reached"
                break
            expanded += 1
            if time_limit is not None and (expanded & 63) == 0 and time.perf_counter() - t0 > time_limit:
                exact, reason = False, "time limit"
                break
        if stored > max_states or reason == "time limit":
            break
        size += 1
    wall = time.perf_counter() - t0
    if best_full is None:
        return DPResult(None, None, exact, stored, wall, reason or "no order below the upper bound")
    return DPResult(_path(parent, full), best_full, exact, stored, wall, reason)


def downset_decide(g: Graph, theta: int, *, max_states: int = 2_000_000, time_limit: float | None = None,
                   free_moves: bool = True, lookahead: bool = True, engine: str = "auto") -> DPResult:
    """Decision version: an order with peak <= ``theta``, or a proof that none exists.

    Depth-first search over down-sets with a visited set: a down-set, once expanded, is
    either on the current path or known to lead nowhere (whether a down-set can be
    completed within ``theta`` depends on the set alone), so each is expanded at most
    once and an exhausted search proves infeasibility; the search dives, so a feasible
    order is usually found after few states. Children are tried in order of least
    resident bytes after the step. Free moves use ``theta`` as the limit (docs/bounds.md).
    ``lookahead``: a down-set from which some operator must run above ``theta`` is not
    expanded (:class:`Lookahead`).
    ``exact`` is True when the answer is definitive (an order, or a completed proof).
    ``engine``: "jit" runs the same search compiled (:mod:`.downset_jit`: the same answer,
    the same state count, many times faster), "python" this interpreted loop, "auto" the
    compiled one when numba is available (and free moves are on)."""
    t0 = time.perf_counter()
    n = g.n_ops
    T = DPTables(g)
    if T.initial > theta:
        return DPResult(None, None, True, 0, 0.0, "initial state above theta")
    if n == 0:
        return DPResult([], T.initial, True, 0, 0.0)

    def moves(S, ready, res):
        if not free_moves:
            return S, ready, res, []
        S2, r2, res2, _, mv = _free_moves(T, S, ready, res, theta, theta)
        return S2, r2, res2, mv

    S0, r0, res0, mv0 = moves(0, T.ready0, T.resident0)
    L = _lookahead(g, lookahead)
    c0 = L.start(S0) if L is not None else None
    if c0 is not None and int(c0.max()) > theta:
        return DPResult(None, None, True, 1, time.perf_counter() - t0, "no order within theta (lookahead)")
    if engine not in ("auto", "jit", "python"):
        raise ValueError(f"engine must be auto, jit or python, got {engine!r}")
    from . import downset_jit

    if engine == "jit" and not (downset_jit.AVAILABLE and free_moves):
        raise ValueError("engine='jit' needs numba and free moves on")
    if engine != "python" and downset_jit.AVAILABLE and free_moves:
        deadline = None if time_limit is None else t0 + time_limit
        order, code, states = downset_jit.decide(T, L, theta, S0, r0, res0, mv0, c0, max_states=max_states,
                                                 deadline=deadline, max_table_bytes=DP_TABLE_BYTES)
        wall = time.perf_counter() - t0
        if order is not None:
            from memsched.formulations import order_peak

            pk = order_peak(g, order)
            if pk > theta or sorted(order) != list(range(n)):
                raise AssertionError(f"compiled down-set decision returned an order of peak {pk} > theta {theta}")
            return DPResult(order, pk, True, states, wall)
        if code == "exhausted":
            return DPResult(None, None, True, states, wall, "no order within theta")
        reason = {"state cap": f"state cap {max_states} reached",
                  "memory cap": f"visited-set memory cap {DP_TABLE_BYTES} bytes reached"}.get(code, code)
        return DPResult(None, None, False, states, wall, reason)
    seen = {S0}
    full = T.full
    path_ops: list[tuple[int, ...]] = [tuple(mv0)]

    def children(S, ready, res):
        out = []
        for v in _bits(ready):
            run, delta = T.step(S, v)
            if res + run > theta:
                continue
            out.append((delta, run, v))
        out.sort()
        return [c[2] for c in out]

    stack = [(S0, r0, res0, children(S0, r0, res0), 0, c0)]
    stored = 1
    while stack:
        S, ready, res, kids, k, cond = stack[-1]
        if S == full:
            order = [v for ops in path_ops for v in ops]
            from memsched.formulations import order_peak

            return DPResult(order, order_peak(g, order), True, stored, time.perf_counter() - t0)
        if k >= len(kids):
            stack.pop()
            path_ops.pop()
            continue
        stack[-1] = (S, ready, res, kids, k + 1, cond)
        v = kids[k]
        run, delta = T.step(S, v)
        nS = S | (1 << v)
        nready = T.new_ready(S, ready, v)
        nres = res + delta
        nS, nready, nres, mv = moves(nS, nready, nres)
        if nS in seen:
            continue
        seen.add(nS)
        stored += 1
        if stored > max_states:
            return DPResult(None, None, False, stored, time.perf_counter() - t0, f"state cap {max_states} reached")
        if time_limit is not None and (stored & 255) == 0 and time.perf_counter() - t0 > time_limit:
            return DPResult(None, None, False, stored, time.perf_counter() - t0, "time limit")
        ncond = None
        if L is not None:
            ncond = L.add(cond, (v, *mv))
            if int(ncond.max()) > theta:
                continue  # (marked seen: no completion of nS stays within theta)
        path_ops.append((v, *mv))
        stack.append((nS, nready, nres, children(nS, nready, nres), 0, ncond))
    return DPResult(None, None, True, stored, time.perf_counter() - t0, "no order within theta")


def downset_optimize(g: Graph, lower: int, upper: int, incumbent=None, *, max_states: int = 2_000_000,
                     deadline: float | None = None) -> tuple[list[int] | None, int, int, int]:
    """Binary search on theta with :func:`downset_decide` between a proven lower bound and
    an incumbent's peak ``upper``. Returns (best order found or the incumbent, its peak,
    proven lower bound, states used); the two peaks are equal when it finished."""
    lo, hi = lower, upper
    best = incumbent
    used = 0
    while lo < hi:
        if deadline is not None and time.perf_counter() > deadline:
            break
        mid = (lo + hi) // 2
        tl = None if deadline is None else max(0.01, deadline - time.perf_counter())
        r = downset_decide(g, mid, max_states=max_states, time_limit=tl)
        used += r.states
        if r.order is not None:
            best, hi = r.order, r.value
        elif r.exact:
            lo = mid + 1
        else:
            break
    return best, hi, lo, used


def beam_order(g: Graph, width: int = 64, *, lower_bound: int = 0, deadline: float | None = None) -> list[int] | None:
    """Heuristic: the down-set recursion keeping the ``width`` best states (least peak so
    far, then least resident bytes) of each size. O(n * width * degree) steps on
    n-bit state masks. None if ``time.perf_counter()`` passes ``deadline`` first."""
    import time

    n = g.n_ops
    if n == 0:
        return []
    T = DPTables(g)
    floor = max(lower_bound, T.initial)
    S0, r0, res0, pk0, mv0 = _free_moves(T, 0, T.ready0, T.resident0, T.initial, floor)
    layers: dict[int, dict[int, tuple]] = {S0.bit_count(): {S0: (pk0, res0, r0, tuple(mv0))}}
    size = 0
    while True:
        layer = layers.pop(size, None)
        if layer is None:
            size += 1
            continue
        if size == n:
            return list(layer[T.full][3])
        if deadline is not None and time.perf_counter() > deadline:
            return None
        if len(layer) > width:
            items = sorted(layer.items(), key=lambda kv: (kv[1][0], kv[1][1]))[:width]
        else:
            items = layer.items()
        for S, (pk, res, ready, seq) in items:
            for v in _bits(ready):
                run, delta = T.step(S, v)
                npk = max(pk, res + run)
                nS = S | (1 << v)
                nready = T.new_ready(S, ready, v)
                nres = res + delta
                nS, nready, nres, npk, mv = _free_moves(T, nS, nready, nres, npk, floor)
                k = nS.bit_count()
                bk = layers.setdefault(k, {})
                old = bk.get(nS)
                if old is None or (npk, nres) < (old[0], old[1]):
                    bk[nS] = (npk, nres, nready, seq + (v, *mv))
        size += 1


def solve_dp(g: Graph, *, time_limit: float | None = 60.0, max_states: int = 2_000_000, upper_bound_order=None):
    """The down-set DP as a solver: SolveResult with status optimal when the search
    completed, else the incumbent with status timeout."""
    from memsched.formulations import Schedule, order_peak
    from memsched.solvers.result import Status, make_result

    from .bounds import trap_bound

    t0 = time.perf_counter()
    lb = trap_bound(g)
    inc = list(upper_bound_order) if upper_bound_order is not None else beam_order(g, 16, lower_bound=lb)
    inc_peak = order_peak(g, inc)
    if inc_peak <= lb:
        r = DPResult(None, None, True, 0, 0.0)
    else:
        r = downset_dp(g, upper_bound=inc_peak, lower_bound=lb, max_states=max_states, time_limit=time_limit)
    order, claimed = inc, inc_peak
    if r.order is not None:
        order, claimed = r.order, r.value
    if r.exact:
        status, bound = Status.OPTIMAL, claimed
    else:
        status, bound = Status.TIMEOUT, lb
    return make_result(g, Schedule.from_order(g, order), solver="downset-dp", status=status, claimed=claimed,
                       lower_bound=bound, wall_s=time.perf_counter() - t0,
                       params={"max_states": max_states, "time_limit": time_limit},
                       extra={"certified": r.exact, "states": r.states, "message": r.reason})
