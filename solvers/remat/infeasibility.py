"""Facts that refute a memory budget, or bound a schedule's peak, without a search model.

* :func:`local_infeasibility`: the initial memory, one operator's own need while it runs
  (inputs, outputs, workspace, always-resident bytes), or the final state (the pinned inputs
  and every required output, :func:`final_state_floor`) exceeds the budget;
* :func:`pebbling_infeasibility`: the backward pebbling bound (docs/remat.md, "Backward
  pebbling bound"), valid with any amount of recomputation;
* :func:`order_lower_bound`: the ordering lower bound on peak, valid for plain orders
  (no recomputation) only;
* :func:`local_peak_bound`: a peak every schedule reaches.
"""
from __future__ import annotations

import time

from memsched.formulations import Graph

__all__ = ["local_infeasibility", "pebbling_infeasibility", "order_lower_bound", "local_peak_bound", "useful",
           "final_state_floor"]


def _own_need(graph: Graph, v: int) -> int:
    """Bytes resident while v runs in any schedule: its inputs (once each), outputs,
    workspace and the always-resident bytes."""
    keep = graph.pinned_idx | graph.output_idx
    return (sum(graph.size[j] for j in set(graph.op_in[v]) if j not in keep)
            + sum(graph.size[j] for j in graph.op_out[v]) + graph.workspace[v] + graph.always_resident())


def final_state_floor(g: Graph) -> int:
    """Bytes resident when the last computation of any schedule runs: the pinned inputs and
    every required output (each at most once). No schedule has a smaller peak
    (docs/remat-scale.md, "Final-state floor"). O(tensors)."""
    keep = set(g.pinned_idx) | set(g.output_idx)
    if not g.n_ops:
        return g.resident_at_start()
    return sum(g.size[j] for j in keep)


def local_infeasibility(graph: Graph, B: int) -> str | None:
    """A reason why no schedule at all (any recomputation) fits ``B``, from local facts:
    the initial memory, each operator's own need while it runs, and the final state; None
    if none applies. O(tensors + edges)."""
    init = graph.resident_at_start()
    if init > B:
        return f"the graph inputs alone need {init} bytes > budget {B}"
    const = graph.always_resident()
    keep = graph.pinned_idx | graph.output_idx
    worst = None
    for v in range(graph.n_ops):
        need = (sum(graph.size[j] for j in graph.op_in[v] if j not in keep) + sum(graph.size[j] for j in graph.op_out[v])
                + graph.workspace[v] + const)
        if need > B and (worst is None or need > worst[1]):
            worst = (v, need)
    if worst:
        v, need = worst
        extra = f" (+{const} always-resident)" if const else ""
        return f"operator {graph.ops[v].name!r} needs inputs+output+workspace = {need} bytes{extra} > budget {B}"
    floor = final_state_floor(graph)
    if floor > B:
        return f"the pinned inputs and the required outputs alone need {floor} bytes > budget {B} (final state)"
    return None


def pebbling_infeasibility(graph: Graph, B: int, depth: int = 6, time_limit: float = 1.0) -> str | None:
    """A reason why no schedule (any recomputation) fits ``B``, from a backward search over
    the sets of tensors that must be resident together (docs/remat.md, "Backward pebbling
    bound"); None when none is found within ``depth`` steps back and ``time_limit`` seconds
    (the search is then inconclusive, never wrong).

    Complexity: exponential in ``depth`` in the worst case (memoized on the set), cut off
    after ``time_limit`` seconds."""
    size, prod, op_in, op_out, ws = graph.size, graph.producer, graph.op_in, graph.op_out, graph.workspace
    const = graph.always_resident()
    keep = frozenset(graph.always_resident_idx())
    t0 = time.perf_counter()
    memo: dict = {}

    class _Out(Exception):
        pass

    def sz(X):
        return sum(size[j] for j in X if j not in keep) + const

    def reachable(S, d):
        """False only if every way to have S resident at once exceeds B (within d steps back)."""
        if sz(S) > B:
            return False
        prods = {prod[j] for j in S if prod[j] != -1}
        if not prods or d == 0:
            return True
        got = memo.get(S)  # (depth searched, result): True survives d' >= d steps, False dies within d' <= d
        if got is not None and ((got[1] and got[0] >= d) or (not got[1] and got[0] <= d)):
            return got[1]
        if time.perf_counter() - t0 > time_limit:
            raise _Out
        res = False
        for u in sorted(prods, key=lambda u: (sum(size[j] for j in op_in[u]), u)):
            T = (S - frozenset(op_out[u])) | frozenset(op_in[u])
            if sz(T | frozenset(op_out[u])) + ws[u] > B:
                continue
            if reachable(T, d - 1):
                res = True
                break
        memo[S] = (d, res)
        return res

    try:
        for v in range(graph.n_ops):
            S = frozenset(op_in[v])
            if sz(S | frozenset(op_out[v])) + ws[v] > B or not reachable(S, depth):
                return (f"operator {graph.ops[v].name!r}: every way to have its inputs resident together "
                        f"needs more than budget {B} (backward pebbling bound, {depth} steps)")
    except _Out:
        return None
    return None


def order_lower_bound(graph: Graph) -> int:
    """The ordering lower bound on peak (``memsched.solvers.ordering.bounds.bound_report``),
    valid for plain orders, i.e. schedules without recomputation (docs/bounds.md)."""
    from memsched.solvers.ordering.bounds import bound_report

    return int(bound_report(graph)["lower_bound"])


def useful(graph: Graph, v: int) -> bool:
    """Only an operator with an output someone reads or requires can usefully run twice."""
    return any(graph.consumers[j] or j in graph.output_idx for j in graph.op_out[v])


def local_peak_bound(graph: Graph) -> int:
    """max(initial memory, the final state, each operator's own need while it runs): every schedule reaches it
    (docs/remat.md). O(tensors + edges)."""
    lb = max(graph.resident_at_start(), final_state_floor(graph))
    for v in range(graph.n_ops):
        lb = max(lb, _own_need(graph, v))
    return lb
