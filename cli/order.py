"""``memsched order`` and ``memsched bound``: text tables of ordering results and bound reports."""
from __future__ import annotations

from memsched.cli.fmt import fmt_bytes, table
from memsched.formulations import Graph, Schedule, evaluate
from memsched.solvers.result import SolveResult


def format_result(graph: Graph, res: SolveResult, max_order: int = 40) -> str:
    """A human-readable table of an ordering result (with the given order's peak for scale)."""
    given = evaluate(graph, Schedule.from_order(graph, graph.given_order())).peak
    rows = [
        ("graph", f"{graph.name} ({graph.n_ops} operators, {graph.n_tensors} tensors)"),
        ("method", res.solver + (f" (chose {res.extra['chosen']})" if "chosen" in res.extra else "")),
        ("status", res.status),
        ("peak", fmt_bytes(res.peak)),
        ("given-order peak", fmt_bytes(given)),
        ("peak / given", f"{res.peak / given:.4f}" if res.peak is not None and given else "-"),
    ]
    if res.lower_bound is not None:
        rows.append(("lower bound", fmt_bytes(res.lower_bound)))
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
            lines.append(f"{name.ljust(9)}  {fmt_bytes(p)}{mark}")
    if res.schedule is not None:
        names = res.schedule.order_names(graph)
        shown = ", ".join(names[:max_order]) + (f", ... ({len(names) - max_order} more)" if len(names) > max_order else "")
        lines.append("")
        lines.append(f"order: {shown}")
    return "\n".join(lines)


def format_report(g: Graph, rep: dict) -> str:
    """Human-readable table of ``bound_report``'s result."""
    names = {"initial": "initial state (graph inputs)", "per_op": "per operator (inputs+outputs+workspace)",
             "trap": "forward trap (min cut per operator)", "reverse": "reverse trap (min cut from the end)",
             "pair": "pair trap (two operators, both orders)", "final": "final moment (required outputs, last sink)",
             "precedence": "learned precedences (shaving)"}
    rows = [(names.get(k, k), str(b["value"]), f"{b['wall_s']:.3f}") for k, b in rep["bounds"].items()]
    w0 = max(len(r[0]) for r in rows + [("bound", "", "")])
    w1 = max(len(r[1]) for r in rows + [("", "bytes", "")])
    lines = [f"lower bounds on the optimal peak of {g.name} ({g.n_ops} operators)",
             f"{'bound'.ljust(w0)}  {'bytes'.rjust(w1)}  wall_s",
             f"{'-' * w0}  {'-' * w1}  ------"]
    lines += [f"{a.ljust(w0)}  {b.rjust(w1)}  {c}" for a, b, c in rows]
    lines.append(f"lower bound: {rep['lower_bound']}")
    return "\n".join(lines)
