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

from memsched.solvers.remat.executor import Executor, best_of_family

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
    return best_of_family(graph, ((k, lambda k=k: schedule_for(graph, k, caps)) for k in ks), budget=budget,
                          caps=caps, objective=objective, eps=eps, solver=SOLVER, knob="segment", preferred=sq,
                          none_fits="chen-sqrt: no segment length fits budget")
