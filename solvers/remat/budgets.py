"""The asked remat problem's numbers: budgets in bytes, recompute caps, cap checks.

A ratio budget ``r <= 1`` is a share of the peak ``P`` of the graph's given order
(``floor(r x P)``, the one rounding rule: :func:`memsched.formulations.ratio_budget`);
a larger number is bytes. A cap is the number of *extra* computations an operator may
have (it runs at most ``1 + cap`` times); None is unbounded (docs/remat.md).
"""
from __future__ import annotations

import math

from memsched.formulations import Graph, MemschedError, Schedule, evaluate

__all__ = ["given_peak", "resolve_budget", "resolve_caps", "effective_caps", "check_caps"]


def given_peak(graph: Graph) -> int:
    """Peak of the graph's given order as a plain order (frees after last use). O(events)."""
    return evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak


def resolve_budget(graph: Graph, budget) -> int:
    """Budget in bytes.

    Parameters
    ----------
    budget : float or int
        ``<= 1.0``: a ratio r of the given order's peak P (``floor(r * P)``); ``> 1``:
        bytes (rounded down).

    Raises
    ------
    MemschedError
        None, not a number, not finite, or not positive.
    """
    if budget is None:
        raise MemschedError("remat: a budget is required (a ratio <= 1 or bytes)")
    try:
        b = float(budget)
    except (TypeError, ValueError):
        raise MemschedError(f"remat: budget must be a number, got {budget!r}") from None
    if not math.isfinite(b) or b <= 0:
        raise MemschedError(f"remat: budget must be positive, got {budget!r}")
    if b <= 1.0:
        from memsched.formulations import ratio_budget

        return ratio_budget(budget, given_peak(graph))
    return int(math.floor(b))


def resolve_caps(graph: Graph, cap) -> list[int] | None:
    """Per-operator caps (extra computations allowed), or None for unbounded.

    ``cap`` is None, an int for every operator, a list (one entry per operator, None =
    unbounded) or a dict ``{operator name: int}`` (operators not named are unbounded).

    Raises
    ------
    MemschedError
        An unknown operator name, a list of the wrong length, a negative or non-integer cap.
    """
    if cap is None:
        return None
    if isinstance(cap, dict):
        out = [None] * graph.n_ops
        for name, c in cap.items():
            if name not in graph.op_index:
                raise MemschedError(f"remat: cap names unknown operator {name!r}")
            out[graph.op_index[name]] = _check_cap(c)
        return out
    if isinstance(cap, (list, tuple)):
        if len(cap) != graph.n_ops:
            raise MemschedError(f"remat: cap list has {len(cap)} entries for {graph.n_ops} operators")
        return [None if c is None else _check_cap(c) for c in cap]
    c = _check_cap(cap)
    return [c] * graph.n_ops


def _check_cap(c) -> int:
    if isinstance(c, bool) or not isinstance(c, int) or c < 0:
        raise MemschedError(f"remat: --cap must be a non-negative integer, got {c!r}")
    return c


def effective_caps(caps, n: int, default: int) -> list[int]:
    """``caps`` with every unbounded entry replaced by ``default`` (an internal cap)."""
    if caps is None:
        return [default] * n
    return [default if c is None else c for c in caps]


def check_caps(graph: Graph, schedule: Schedule, caps) -> str | None:
    """None if every operator runs at most ``1 + caps[v]`` times, else a message naming one
    that runs more. O(events)."""
    if caps is None:
        return None
    counts = [0] * graph.n_ops
    for i in schedule.computes():
        counts[i] += 1
    for i, c in enumerate(counts):
        if caps[i] is not None and c > 1 + caps[i]:
            return f"operator {graph.ops[i].name!r} runs {c} times > 1 + cap {caps[i]}"
    return None
