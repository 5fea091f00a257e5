"""Baseline: Chen et al.'s sqrt(n) checkpointing ("Training Deep Nets with
Sublinear Memory Cost", 2016), generalized to any graph.

The given order is cut into segments of ``k`` operators; the output of the
last operator of each segment is a checkpoint, every other tensor is dropped
right after a use unless the very next operator reads it, and is recomputed
on demand (from the nearest resident ancestors) when a later operator needs
it; a recomputed tensor is kept until its last use, so each segment is
re-run once for the backward pass of a chain. Chen's choice is
``k = ceil(sqrt(n))``; we try that and a sweep of segment lengths and keep
the cheapest schedule that fits the budget and the caps (reported in
``params["segment"]``). Meant for chain-like graphs; on others it is valid but
weak. O(n) per segment length, O(n sqrt n) overall.
"""
from __future__ import annotations

import math

from formulations import evaluate
from solvers.remat_executor import ExecutionFailed, Executor
from solvers.result import Status, make_result

SOLVER = "remat-chen-sqrt"


def schedule_for(graph, k, caps=None, order=None):
    order = graph.given_order() if order is None else order
    g = graph
    ckpt = {order[i] for i in range(k - 1, len(order), k)}
    drop = {j for j in range(g.n_tensors) if g.producer[j] != -1 and g.producer[j] not in ckpt}
    return Executor(g, order, caps=caps, drop_after_use=drop).execute()


def solve(graph, budget, *, caps=None, objective="compute", eps=0.0):
    n = graph.n_ops
    sq = max(1, math.ceil(math.sqrt(n)))
    ks = sorted({sq} | {max(1, int(round(sq * f))) for f in (0.25, 0.5, 0.75, 1.5, 2, 3, 4)} | {1, 2, 3, n})
    limit = (1 + eps) * graph.total_cost()
    best = None
    tried = []
    for k in ks:
        try:
            s = schedule_for(graph, k, caps)
        except ExecutionFailed:
            continue
        ev = evaluate(graph, s)
        if caps is not None and any(c is not None and m > 1 + c for c, m in zip(caps, ev.compute_counts)):
            continue
        tried.append((k, ev.peak, ev.compute))
        if objective == "compute":
            ok = budget is None or ev.peak <= budget
            key = (ev.compute, ev.peak, k != sq)
        else:
            ok = ev.compute <= limit * (1 + 1e-12) and (budget is None or ev.peak <= budget)
            key = (ev.peak, ev.compute, k != sq)
        if ok and (best is None or key < best[0]):
            best = (key, k, s, ev)
    params = {"segments_tried": tried}
    if best is None:
        return make_result(graph, None, solver=SOLVER, status=Status.INFEASIBLE, objective=objective, params=params,
                           message=f"chen-sqrt: no segment length fits budget {budget}"
                           + (f" (least peak {min(p for _, p, _ in tried)})" if tried else ""))
    _, k, s, ev = best
    params["segment"] = k
    return make_result(graph, s, solver=SOLVER, status=Status.FEASIBLE, objective=objective,
                       claimed=ev.compute if objective == "compute" else ev.peak, params=params)
