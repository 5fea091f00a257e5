"""The asked problem: what the user posed, before any method narrows it.

A rematerialization problem is ``(graph, budget, objective, eps, caps, order)``:

* ``budget``: memory budget in bytes (``objective="compute"``: peak <= budget;
  ``objective="peak"``: an optional upper limit on the peak);
* ``objective``: ``"compute"`` (least total compute with peak <= budget) or
  ``"peak"`` (least peak with compute <= (1 + eps) x the no-recompute baseline);
* ``caps``: per-operator caps on extra computations as the user gave them
  (operator v runs at most 1 + caps[v] times); ``None`` (or a None entry) is
  unbounded, and unbounded means unbounded;
* ``order``: ``"free"`` (every schedule the evaluator accepts) or ``"given"``
  (Checkmate's and Moccasin's class: the first computations of the operators
  follow ``graph.given_order()``; recomputations anywhere).

``optimal``, ``infeasible`` and ``lower_bound`` in a result are statements about
this problem (docs/claims.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import MemschedError
from .graph import Graph
from .schedule import Schedule

__all__ = ["ORDER_SCOPES", "RematProblem", "check_order_scope", "first_computations_follow", "unique_topological_order"]

ORDER_SCOPES = ("free", "given")


def check_order_scope(order) -> str:
    if order not in ORDER_SCOPES:
        raise MemschedError(f"remat: --order must be one of {', '.join(ORDER_SCOPES)}, got {order!r}")
    return order


@dataclass(frozen=True)
class RematProblem:
    budget: int | None
    objective: str = "compute"
    eps: float = 0.0
    caps: tuple | None = None  # per operator: int or None (unbounded); None = all unbounded
    order: str = "free"

    def __post_init__(self):
        check_order_scope(self.order)

    @property
    def unbounded(self) -> bool:
        return self.caps is None or any(c is None for c in self.caps)

    def describe(self) -> str:
        what = (f"least compute with peak <= {self.budget}" if self.objective == "compute"
                else f"least peak with compute <= (1 + {self.eps:g}) x baseline"
                + (f" and peak <= {self.budget}" if self.budget is not None else ""))
        if self.caps is None or all(c is None for c in self.caps):
            caps = "unbounded recomputation"
        elif len(set(self.caps)) == 1:
            caps = f"at most {self.caps[0]} extra computation(s) per operator"
        else:
            caps = "per-operator caps"
        order = "free order" if self.order == "free" else "first computations in the given order"
        return f"{what}, {caps}, {order}"


def first_computations_follow(graph: Graph, schedule: Schedule, order: list[int] | None = None) -> bool:
    """True if the first computations of ``schedule`` follow ``order`` (default: the given order)."""
    order = graph.given_order() if order is None else list(order)
    seen: set[int] = set()
    firsts = []
    for v in schedule.computes():
        if v not in seen:
            seen.add(v)
            firsts.append(v)
    return firsts == order


def unique_topological_order(graph: Graph) -> bool:
    """True if the operator DAG has exactly one topological order (consecutive operators of
    the given order are joined by an edge); then the free and the given order classes coincide."""
    order = graph.given_order()
    succ = graph.op_succ()
    return all(b in succ[a] for a, b in zip(order, order[1:]))
