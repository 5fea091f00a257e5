"""Heuristic operator orderings (no recomputation).

Every heuristic is a plain function ``f(graph) -> list[int]`` returning a
topological order of operator indices; :data:`HEURISTICS` maps the method
names used by ``memsched order --method`` to them.

* ``given``  -- the program's order (``graph.given_order()``).
* ``dfs``    -- PyTorch Inductor's ``topological_sort_dfs`` key: a depth-first
  post-order that visits roots, and each node's predecessors, in ascending
  order of "memory touched" (output bytes + workspace + bytes of non-pinned
  inputs). O(n log n + E log E).
* ``bfs``    -- Inductor's ``topological_sort_bfs`` key: among ready operators
  take the one whose predecessors were executed earliest (lexicographic
  comparison of the sorted execution positions of its predecessors), a FIFO
  rule that shortens lifetimes. O(E log n) comparisons.
* ``lpmf``   -- Inductor's ``topological_sort_lpmf`` ("least peak memory
  first", after Kwon et al., DAC 2006): with ``live`` the resident bytes and
  ``M`` the peak so far, pick the ready operator minimizing
  ``(max(live + alloc_v, M), alloc_v - free_v, index)`` where ``alloc_v`` is
  the bytes held while v runs (outputs + workspace), ``free_v`` the bytes
  released right after v (inputs whose last pending consumer is v, outputs
  nobody needs) and ``index`` the position in the given order. Inductor scans
  all ready nodes (O(n^2)); here a segment tree over operators sorted by
  ``alloc_v`` finds the same choice in O(log n): O((n + E) log n).
* ``greedy`` -- minimum-increase list scheduling: pick the ready operator with
  the smallest net memory change ``out_v - free_v``, ties by the memory while
  it runs, then by given-order position. Lazy heap, O((n + E) log n).
* ``liu``    -- Liu's optimal algorithm for in-trees (:mod:`memsched.solvers.ordering.liu`).
* ``best``   -- the lowest evaluated peak among all applicable heuristics.

"Index" ties are always broken by the operator's position in the given order,
as Inductor does, so every heuristic is deterministic.

Reference: torch/_inductor/memory.py (``reorder_for_peak_memory``), read for
the keys only; this is an independent implementation on memsched's model.
"""
from __future__ import annotations

import heapq
import time
from bisect import bisect_right
from typing import Callable

from memsched.formulations import Graph, MemschedError, order_peak

__all__ = ["HEURISTICS", "given_order", "dfs_order", "bfs_order", "lpmf_order", "greedy_order", "best_order",
           "best_with_peaks", "applicable", "is_topological"]


# ----------------------------------------------------------------- helpers
def _positions(g: Graph) -> list[int]:
    """pos[i] = position of operator i in the given order (the tie-break index)."""
    pos = [0] * g.n_ops
    for k, i in enumerate(g.given_order()):
        pos[i] = k
    return pos


def _out_bytes(g: Graph) -> list[int]:
    size = g.size
    return [sum(size[j] for j in outs) for outs in g.op_out]


def _never_freed(g: Graph) -> list[bool]:
    """Tensors that are never freed by a plain order: pinned inputs and required outputs."""
    keep = [False] * g.n_tensors
    for j in g.pinned_idx:
        keep[j] = True
    for j in g.output_idx:
        keep[j] = True
    return keep


def is_topological(g: Graph, order) -> bool:
    """True if ``order`` lists every operator exactly once, after all its predecessors."""
    if len(order) != g.n_ops or sorted(order) != list(range(g.n_ops)):
        return False
    pos = [0] * g.n_ops
    for k, i in enumerate(order):
        pos[i] = k
    return all(pos[p] < pos[i] for i in range(g.n_ops) for p in g.op_pred()[i])


# ------------------------------------------------------------------- given
def given_order(g: Graph) -> list[int]:
    """The program's given order."""
    return g.given_order()


# --------------------------------------------------------------------- dfs
def dfs_order(g: Graph) -> list[int]:
    """Depth-first post-order; roots and predecessors visited in ascending order of
    (output bytes + workspace + non-pinned input bytes, given position). Iterative."""
    pos = _positions(g)
    out = _out_bytes(g)
    size = g.size
    pinned = g.pinned_idx
    touch = [out[i] + g.workspace[i] + sum(size[j] for j in g.op_in[i] if j not in pinned) for i in range(g.n_ops)]

    def key(i):
        return (touch[i], pos[i])

    pred = [sorted(p, key=key) for p in g.op_pred()]
    seen = [False] * g.n_ops
    order: list[int] = []
    for root in sorted(range(g.n_ops), key=key):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, 0)]
        while stack:
            v, k = stack[-1]
            ps = pred[v]
            while k < len(ps) and seen[ps[k]]:
                k += 1
            if k < len(ps):
                stack[-1] = (v, k + 1)
                u = ps[k]
                seen[u] = True
                stack.append((u, 0))
            else:
                stack.pop()
                order.append(v)
    return order


# --------------------------------------------------------------------- bfs
def bfs_order(g: Graph) -> list[int]:
    """Ready operator whose (sorted) predecessor execution positions are smallest first."""
    n = g.n_ops
    pos = _positions(g)
    pred, succ = g.op_pred(), g.op_succ()
    indeg = [len(p) for p in pred]
    executed_at = [-1] * n
    heap = [((), pos[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, _, v = heapq.heappop(heap)
        executed_at[v] = len(order)
        order.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (tuple(sorted(executed_at[p] for p in pred[s])), pos[s], s))
    return order


# -------------------------------------------------- shared memory bookkeeping
class _Tracker:
    """Pending-consumer counts and 'bytes freed if run now' for list schedulers.

    ``free_now[v]`` = bytes of v's inputs for which v is the last pending consumer
    (never pinned inputs or required outputs) + bytes of v's outputs nobody consumes
    (unless required). ``on_change(u)`` is called when ``free_now[u]`` grows."""

    def __init__(self, g: Graph):
        self.g = g
        keep = _never_freed(g)
        self.keep = keep
        self.pending = [len(c) for c in g.consumers]
        size = g.size
        self.free_now = [0] * g.n_ops
        for v in range(g.n_ops):
            f = 0
            for j in g.op_in[v]:
                if not keep[j] and self.pending[j] == 1:
                    f += size[j]
            for j in g.op_out[v]:
                if not keep[j] and self.pending[j] == 0:
                    f += size[j]
            self.free_now[v] = f
        # live memory after the head frees of Schedule.from_order (unconsumed free-able inputs)
        self.live = sum(size[j] for j in g.input_idx if keep[j] or self.pending[j] > 0)
        self.initial = g.resident_at_start()

    def run(self, v: int, done: list[bool], on_change: Callable[[int], None]) -> None:
        g, size, keep, pending = self.g, self.g.size, self.keep, self.pending
        for j in g.op_in[v]:
            pending[j] -= 1
            if pending[j] == 1 and not keep[j]:
                for u in g.consumers[j]:
                    if not done[u]:
                        self.free_now[u] += size[j]
                        on_change(u)


# -------------------------------------------------------------------- lpmf
class _MinTree:
    """Iterative segment tree of ints with point assignment and prefix minimum."""

    def __init__(self, n: int, inf: int):
        m = 1
        while m < max(1, n):
            m *= 2
        self.m, self.inf = m, inf
        self.t = [inf] * (2 * m)

    def set(self, i: int, val: int) -> None:
        t = self.t
        i += self.m
        t[i] = val
        i >>= 1
        while i:
            a, b = t[2 * i], t[2 * i + 1]
            m = a if a < b else b
            if t[i] == m:  # ancestors above are unchanged too
                break
            t[i] = m
            i >>= 1

    def prefix_min(self, r: int) -> int:
        """min over leaves [0, r)."""
        t, res = self.t, self.inf
        lo, hi = self.m, self.m + r
        while lo < hi:
            if lo & 1:
                if t[lo] < res:
                    res = t[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                if t[hi] < res:
                    res = t[hi]
            lo >>= 1
            hi >>= 1
        return res


def lpmf_order(g: Graph) -> list[int]:
    """Least peak memory first (Inductor's key), O((n + E) log n)."""
    n = g.n_ops
    if n == 0:
        return []
    pos = _positions(g)
    out = _out_bytes(g)
    alloc = [out[i] + g.workspace[i] for i in range(n)]
    tr = _Tracker(g)
    # leaves sorted by (alloc, pos); a leaf holds net*n + pos for a ready operator, else INF
    leaf_of = [0] * n
    by_alloc = sorted(range(n), key=lambda i: (alloc[i], pos[i]))
    sorted_alloc = [alloc[i] for i in by_alloc]
    for k, i in enumerate(by_alloc):
        leaf_of[i] = k
    inf = (max(out) + 1) * n + n + 1  # above every encoding (net <= out); a small int compares fast
    tree = _MinTree(n, inf)
    ready = [False] * n
    done = [False] * n
    ready_by_alloc: list[tuple[int, int, int]] = []  # lazy heap (alloc, pos, op)
    indeg = [len(p) for p in g.op_pred()]
    succ = g.op_succ()
    op_at_pos = [0] * n
    for i in range(n):
        op_at_pos[pos[i]] = i

    def enc(i):
        return (out[i] - tr.free_now[i]) * n + pos[i]

    def make_ready(i):
        ready[i] = True
        tree.set(leaf_of[i], enc(i))
        heapq.heappush(ready_by_alloc, (alloc[i], pos[i], i))

    def changed(u):
        if ready[u]:
            tree.set(leaf_of[u], enc(u))

    for i in range(n):
        if indeg[i] == 0:
            make_ready(i)
    live = tr.live
    peak = max(tr.initial, sum(g.size[j] for j in g.output_idx))
    order: list[int] = []
    while len(order) < n:
        threshold = peak - live
        r = bisect_right(sorted_alloc, threshold)
        best = tree.prefix_min(r) if r > 0 else inf
        if best == inf:
            while not ready[ready_by_alloc[0][2]]:
                heapq.heappop(ready_by_alloc)
            a_min = ready_by_alloc[0][0]
            best = tree.prefix_min(bisect_right(sorted_alloc, a_min))
        v = op_at_pos[best % n]
        ready[v] = False
        done[v] = True
        tree.set(leaf_of[v], inf)
        order.append(v)
        if live + alloc[v] > peak:
            peak = live + alloc[v]
        live += out[v] - tr.free_now[v]
        tr.run(v, done, changed)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                make_ready(s)
    return order


# ------------------------------------------------------------------ greedy
def greedy_order(g: Graph) -> list[int]:
    """Minimum-increase list scheduler: ready operator with the smallest net memory
    change (outputs kept minus bytes freed), then smallest memory while running,
    then given-order position. Lazy-deletion heap, O((n + E) log n)."""
    n = g.n_ops
    pos = _positions(g)
    out = _out_bytes(g)
    alloc = [out[i] + g.workspace[i] for i in range(n)]
    tr = _Tracker(g)
    version = [0] * n
    ready = [False] * n
    done = [False] * n
    heap: list[tuple[int, int, int, int, int]] = []

    def push(i):
        heapq.heappush(heap, (out[i] - tr.free_now[i], alloc[i], pos[i], version[i], i))

    def changed(u):
        version[u] += 1
        if ready[u]:
            push(u)

    indeg = [len(p) for p in g.op_pred()]
    succ = g.op_succ()
    for i in range(n):
        if indeg[i] == 0:
            ready[i] = True
            push(i)
    order: list[int] = []
    while heap:
        *_, ver, v = heapq.heappop(heap)
        if done[v] or ver != version[v]:
            continue
        done[v] = True
        ready[v] = False
        order.append(v)
        tr.run(v, done, changed)
        for s in succ[v]:
            indeg[s] -= 1
            if indeg[s] == 0:
                ready[s] = True
                push(s)
    return order


# -------------------------------------------------------------------- best
def _liu(g: Graph) -> list[int]:
    from memsched.solvers.ordering.liu import liu_order

    return liu_order(g)


def applicable(g: Graph) -> list[str]:
    """Names of the heuristics that apply to ``g`` (all but ``best``; ``liu`` only on trees)."""
    return [m for m in HEURISTICS if m != "best" and (m != "liu" or g.is_tree())]


def run_heuristics(g: Graph, names: list[str] | None = None, *, stop_at: int | None = None,
                   deadline: float | None = None) -> list[tuple[str, list[int], int]]:
    """The one heuristic runner: run ``names`` (default: :func:`applicable`) in order and
    return ``[(name, order, evaluated peak), ...]`` in the order they ran.

    Stops early, after at least one heuristic, once a peak <= ``stop_at`` is found or
    ``time.perf_counter()`` passes ``deadline``. A heuristic that raises is a bug and
    propagates. Complexity: the sum of the heuristics' own costs plus one evaluation each."""
    out: list[tuple[str, list[int], int]] = []
    for name in applicable(g) if names is None else names:
        if out and ((stop_at is not None and min(p for _, _, p in out) <= stop_at)
                    or (deadline is not None and time.perf_counter() > deadline)):
            break
        order = list(HEURISTICS[name](g))
        out.append((name, order, order_peak(g, order)))
    return out


def best_with_peaks(g: Graph) -> tuple[str, list[int], dict[str, int]]:
    """Run every applicable heuristic; return (winner, its order, {name: peak}).
    Ties go to the first in :data:`HEURISTICS` order."""
    runs = run_heuristics(g)
    name, order, _ = min(runs, key=lambda r: r[2])  # min keeps the first of equal peaks
    return name, order, {nm: p for nm, _, p in runs}


def best_order(g: Graph) -> list[int]:
    """The order with the lowest evaluated peak among all applicable heuristics."""
    return best_with_peaks(g)[1]


HEURISTICS: dict[str, Callable[[Graph], list[int]]] = {
    "given": given_order,
    "dfs": dfs_order,
    "bfs": bfs_order,
    "lpmf": lpmf_order,
    "greedy": greedy_order,
    "liu": _liu,
    "best": best_order,
}


class UnknownMethod(MemschedError):
    """An ordering method name that does not exist."""
