"""The ordering problem: a topological order of the operators (no recomputation)
with the lowest peak memory.

:func:`solve_order` runs one heuristic from
:data:`solvers.ordering_heuristics.HEURISTICS` (or, with ``exact=True``, the
CP-SAT driver :func:`solvers.exact_order.solve_exact`) and returns a
:class:`~solvers.result.SolveResult` checked by the evaluator.
:func:`format_result` renders it as a human table.
"""
from __future__ import annotations

import time

from formulations import Graph, MemschedError, Schedule, evaluate
from solvers.result import SolveResult, Status, make_result

from .ordering_heuristics import HEURISTICS, UnknownMethod, best_with_peaks

__all__ = ["solve_order", "format_result", "METHODS"]

METHODS = tuple(HEURISTICS)


def solve_order(graph: Graph, method: str = "best", exact: bool = False, time_limit: float = 60.0,
                workers: int = 2, seed: int = 0, progress: bool = False) -> SolveResult:
    """Order ``graph``'s operators to minimize peak memory.

    ``method`` names a heuristic (given, dfs, bfs, lpmf, greedy, liu, best). Heuristics
    return status "feasible"; ``liu`` returns "optimal" (lower bound = its peak) when
    :func:`solvers.liu_tree.liu_is_exact` holds. ``exact=True`` delegates to
    ``solvers.exact_order.solve_exact`` (CP-SAT) and ignores ``method``.
    Raises :class:`MemschedError` for an unknown method, ``liu`` on a non-tree, or
    ``exact`` when the exact driver is not installed."""
    if exact:
        try:
            from solvers.exact_order import solve_exact
        except ImportError:
            raise MemschedError("exact ordering not available (solvers.exact_order is missing)") from None
        return solve_exact(graph, time_limit=time_limit, workers=workers, seed=seed, progress=progress)
    if method not in HEURISTICS:
        raise UnknownMethod(f"unknown ordering method {method!r}; valid: {', '.join(HEURISTICS)}")
    t0 = time.perf_counter()
    params = {"method": method}
    extra: dict = {}
    claimed = None
    lower = None
    status = Status.FEASIBLE
    if method == "best":
        chosen, order, peaks = best_with_peaks(graph)
        extra = {"chosen": chosen, "candidates": peaks}
        claimed = peaks[chosen]
        if "liu" in peaks and peaks["liu"] == claimed:
            from .liu_tree import liu_is_exact

            if liu_is_exact(graph):
                status, lower = Status.OPTIMAL, claimed
    elif method == "liu":
        from .liu_tree import liu_is_exact, liu_order, liu_peak_claim

        order = liu_order(graph)
        if liu_is_exact(graph):
            claimed = liu_peak_claim(graph)
            status, lower = Status.OPTIMAL, claimed
    else:
        order = HEURISTICS[method](graph)
    wall = time.perf_counter() - t0
    sched = Schedule.from_order(graph, order)
    res = make_result(graph, sched, solver=method, status=status, claimed=claimed, lower_bound=lower,
                      wall_s=wall, params=params, extra=extra)
    return res


def _fmt_bytes(n) -> str:
    if n is None:
        return "-"
    n = int(n)
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            break
        x /= 1024
    return str(n) if unit == "B" else f"{n} ({x:.1f} {unit})"


def format_result(graph: Graph, res: SolveResult, max_order: int = 40) -> str:
    """A human-readable table of an ordering result (with the given order's peak for scale)."""
    given = evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak
    rows = [
        ("graph", f"{graph.name} ({graph.n_ops} operators, {graph.n_tensors} tensors)"),
        ("method", res.solver + (f" (chose {res.extra['chosen']})" if "chosen" in res.extra else "")),
        ("status", res.status),
        ("peak", _fmt_bytes(res.peak)),
        ("given-order peak", _fmt_bytes(given)),
        ("peak / given", f"{res.peak / given:.4f}" if res.peak is not None and given else "-"),
    ]
    if res.lower_bound is not None:
        rows.append(("lower bound", _fmt_bytes(res.lower_bound)))
        if res.gap is not None:
            rows.append(("gap", f"{res.gap:.4%}"))
    if res.evaluation is not None and res.evaluation.peak_op is not None:
        rows.append(("peak at", f"event {res.evaluation.peak_event} ({res.evaluation.peak_op})"))
    rows.append(("compute", f"{res.compute:.6g}" if res.compute is not None else "-"))
    rows.append(("wall", f"{res.wall_s:.4f} s"))
    if res.message:
        rows.append(("message", res.message))
    w = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(w)}  {v}" for k, v in rows]
    if "candidates" in res.extra:
        lines.append("")
        lines.append("heuristic  peak")
        for name, p in res.extra["candidates"].items():
            mark = "  <- chosen" if name == res.extra.get("chosen") else ""
            lines.append(f"{name.ljust(9)}  {_fmt_bytes(p)}{mark}")
    if res.schedule is not None:
        names = res.schedule.order_names(graph)
        shown = ", ".join(names[:max_order]) + (f", ... ({len(names) - max_order} more)" if len(names) > max_order else "")
        lines.append("")
        lines.append(f"order: {shown}")
    return "\n".join(lines)
