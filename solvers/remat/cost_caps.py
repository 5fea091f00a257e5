"""Caps from a known compute: finite caps per operator that lose no schedule cheaper than a
known one (docs/remat.md, "Caps from a known compute").

With unbounded recomputation the CP model still needs a finite number of occurrences per
operator, so its claims used to hold only for a capped class ("capped:2"). This module turns
such a claim into one about the unbounded problem, for the compute objective once a schedule
of compute X within the budget is known, and for the peak objective (compute at most
(1 + eps) x baseline) from the start:

* :func:`drop_useless` removes every computation, other than an operator's first, whose
  outputs are freed, or remade, before anything reads them and that leaves no required output
  at the end. The result is a valid schedule with the same first computations in the same
  order, memory no higher at any point and compute no higher.
* :func:`caps_from_compute` bounds the computations of each operator in any schedule so
  reduced whose compute is below X: an operator of positive cost ``c`` runs again at most
  ``floor((X - baseline) / c)`` times; and every computation but the first is read by some
  computation of a consumer or leaves a required output at the end. A computation of v needs
  all of v's outputs absent, so every output of v resident at one time comes from v's latest
  computation: one computation of a consumer reads from one computation of v, and the end
  state holds outputs of one. So ``R_v <= 1 + sum_u R_u + [v makes a required output]`` over
  the consumers u (computed from the sinks up).

So the class with these caps holds a schedule as cheap as any schedule of the asked problem
cheaper than X (and the known one, reduced); its optimum is the asked problem's, and any
lower bound of the class is one of the asked problem.
"""
from __future__ import annotations

import math

from memsched.formulations import COMPUTE, Graph, Schedule

__all__ = ["drop_useless", "caps_from_compute", "occurrences"]


def drop_useless(graph: Graph, schedule: Schedule) -> Schedule:
    """``schedule`` without its useless computations (module docstring), repeated until none
    is left (dropping one may leave an input copy unread). The first computation of every
    operator is kept, so the order of first computations is unchanged. O(rounds x events)."""
    g = graph
    events = list(schedule.events)
    required = g.output_idx
    while True:
        first_seen: set[int] = set()
        creator: dict[int, int] = {}  # tensor -> event that made its resident copy
        freed_copy: dict[int, int] = {}  # free event -> event that made the copy it frees
        useful: set[int] = set()
        for i, (kind, x) in enumerate(events):
            if kind == COMPUTE:
                for t in g.op_in[x]:
                    if t in creator:
                        useful.add(creator[t])
                if x not in first_seen:
                    first_seen.add(x)
                    useful.add(i)
                for t in g.op_out[x]:
                    creator[t] = i
            else:
                c = creator.pop(x, None)
                if c is not None:
                    freed_copy[i] = c
        for t, i in creator.items():
            if t in required:
                useful.add(i)
        drop = {i for i, (kind, _x) in enumerate(events) if kind == COMPUTE and i not in useful}
        if not drop:
            return Schedule(tuple(events))
        events = [e for i, e in enumerate(events) if i not in drop and freed_copy.get(i) not in drop]


def caps_from_compute(graph: Graph, X: float, caps=None) -> list[int]:
    """Extra computations per operator that every schedule of compute below ``X``, reduced by
    :func:`drop_useless`, stays within (module docstring); ``caps``: the asked caps (None or
    None entries: unbounded), never exceeded. ``X`` below the baseline gives all zeros.
    O(n + edges)."""
    g = graph
    n = g.n_ops
    base = g.total_cost()
    room = max(0.0, float(X) - base)
    runs = [0] * n
    for v in reversed(g.topological_order()):
        outs = set(g.op_out[v])
        users = {u for t in outs for u in g.consumers[t]}
        r = 1 + sum(runs[u] for u in users) + (1 if outs & g.output_idx else 0)
        c = g.cost[v]
        if c > 0:
            r = min(r, 1 + math.floor(room * (1 + 1e-9) / c + 1e-9))
        cap = None if caps is None else caps[v]
        if cap is not None:
            r = min(r, 1 + int(cap))
        runs[v] = r
    return [r - 1 for r in runs]


def occurrences(caps) -> int:
    """Slots of the CP model with these caps (one per computation allowed)."""
    return sum(1 + c for c in caps)
