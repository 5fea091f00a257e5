"""Baseline: Griewank-Walther binomial checkpoint placement (revolve) along the given order.

Reference: A. Griewank, A. Walther, "Algorithm 799: revolve", ACM TOMS 2000.
For a chain of ``l`` steps reversed with ``s`` checkpoint slots, revolve's
repetition number is the least ``t`` with ``C(s + t, s) >= l``, and its first
sweep advances ``m = max(1, min(C(s + t - 1, s), l - C(s + t - 1, s - 1)))``
steps before taking the next checkpoint, recursively with ``s - 1`` slots.

What we implement (and what not): the *first sweep* of revolve on the given
order: the operators at those binomial positions keep their outputs; every
other tensor is dropped after a use unless the very next operator reads it,
and is recomputed on demand when a later (backward) operator needs it, a
recomputed segment being kept until its last use (the later sweeps of full
revolve re-place checkpoints inside each segment; ours recompute each segment
once, as Chen's method does). We sweep ``s`` and keep the cheapest schedule
that fits the budget and the caps (``params["slots"]``). Meant for chain-like
graphs (a forward chain followed by its backward pass); on others it is valid
but weak. O(n) per ``s``.
"""
from __future__ import annotations

from math import comb

from memsched.solvers.remat.executor import Executor, best_of_family

SOLVER = "remat-revolve"


def binomial_positions(l: int, s: int) -> list[int]:
    """Positions (0-based step indices in 1..l-1) of revolve's first-sweep checkpoints."""
    out, base = [], 0
    while s > 0 and l > 1:
        t = 0
        while comb(s + t, s) < l:
            t += 1
        m = max(1, min(comb(s + t - 1, s) if t > 0 else 1, l - (comb(s + t - 1, s - 1) if t > 0 else 0)))
        m = min(m, l - 1)
        base += m
        out.append(base)
        l -= m
        s -= 1
    return out


def schedule_for(graph, slots, caps=None, order=None):
    order = graph.given_order() if order is None else order
    n = len(order)
    ckpt = {order[p - 1] for p in binomial_positions(n, slots)}
    drop = {j for j in range(graph.n_tensors) if graph.producer[j] != -1 and graph.producer[j] not in ckpt}
    return Executor(graph, order, caps=caps, drop_after_use=drop).execute()


def solve(graph, budget, *, caps=None, objective="compute", eps=0.0):
    n = graph.n_ops
    slots = sorted(s for s in {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, n // 4, n // 2, n} if 0 < s <= n)
    return best_of_family(graph, ((s, lambda s=s: schedule_for(graph, s, caps)) for s in slots), budget=budget,
                          caps=caps, objective=objective, eps=eps, solver=SOLVER, knob="slots", tried_key="slots_tried",
                          none_fits="revolve: no number of checkpoint slots fits budget")
