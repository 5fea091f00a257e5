"""``memsched info``, ``eval``, ``order`` and ``bound``: graphs, schedules, orderings and bounds."""
from __future__ import annotations

import time

from memsched.cli.fmt import emit_json, fmt_bytes, fmt_num, solver_output_to_stderr, table
from memsched.cli.interrupts import interrupted, mark_interrupted
from memsched.cli.options import (SEED_HELP, graph_parent, json_parent, load_graph, nonneg_float, positive_float, seed,
                                  workers)
from memsched.formulations import Graph, Schedule, evaluate
from memsched.solvers.result import SolveResult


def add_parsers(sub) -> None:
    g, j = graph_parent(), json_parent()
    s = sub.add_parser("info", parents=[g, j], help="summarize a graph and the peak of its given order")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("eval", parents=[g], help="validate a schedule and report its peak and compute")
    s.add_argument("schedule", metavar="SCHEDULE", help="JSON with 'events' [[kind, name], ...] or 'order' [op, ...] "
                   "(e.g. the --json output of order/remat)")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("order", parents=[g, j], help="find an operator order with low peak memory (heuristic or exact)")
    s.add_argument("--method", default="best",
                   help="given, dfs, bfs, lpmf, greedy, liu (trees), best (lowest of all heuristics); default best")
    s.add_argument("--exact", action="store_true", help="solve to optimality with CP-SAT and certify with lower bounds")
    s.add_argument("--time-limit", type=positive_float, default=60.0, help="seconds for --exact (default 60)")
    s.add_argument("--workers", type=workers, default=2, help="CP-SAT workers for --exact (default 2; 0: one per CPU core)")
    s.add_argument("--seed", type=seed, default=0, help=SEED_HELP)
    s.set_defaults(func=cmd_order)

    s = sub.add_parser("bound", parents=[g, j], help="lower bounds on the optimal peak (no search)")
    s.add_argument("--shave", type=nonneg_float, default=0.0, metavar="SECONDS",
                   help="also run the learned-precedence (shaving) bound for up to SECONDS (default 0: off)")
    s.set_defaults(func=cmd_bound)


def cmd_info(args) -> int:
    g = load_graph(args.graph)
    s = g.summary()
    t0 = time.perf_counter()
    ev = evaluate(g, Schedule.from_order(g, g.given_order()))
    wall = time.perf_counter() - t0
    s["given_order_peak"] = ev.peak
    s["given_order_peak_op"] = ev.peak_op
    s["resident_at_start"] = g.resident_at_start()
    s["is_tree"] = g.is_tree()
    if args.json:
        emit_json({"status": "ok", "method": "given", "peak": ev.peak, "compute": ev.compute, "wall_s": wall,
                   **s, "order": list(g.order)})
    else:
        rows = [[k, fmt_bytes(v) if k in ("total_bytes", "given_order_peak") else fmt_num(v)] for k, v in s.items()]
        print(table(rows, ["property", "value"]))
    return 0


def cmd_eval(args) -> int:
    from memsched.cli.run import load_checked_schedule

    g = load_graph(args.graph)
    sched = load_checked_schedule(g, args.schedule)
    t0 = time.perf_counter()
    ev = evaluate(g, sched)
    wall = time.perf_counter() - t0
    out = {"status": "valid", "method": "eval", "peak": ev.peak, "compute": ev.compute, "peak_event": ev.peak_event,
           "peak_op": ev.peak_op, "recomputations": ev.recomputations, "events": len(sched), "wall_s": wall,
           "schedule": sched.to_names(g)}
    if sched.is_plain_order():
        out["order"] = sched.order_names(g)
    if args.json:
        emit_json(out)
    else:
        print(table([["peak", fmt_bytes(ev.peak)], ["peak at", f"event {ev.peak_event} ({ev.peak_op})"],
                     ["compute", fmt_num(ev.compute)], ["recomputations", str(ev.recomputations)],
                     ["events", str(len(sched))]], ["schedule", "value"]))
    return 0


def cmd_order(args) -> int:
    from memsched.solvers.ordering import dispatch as ordering

    from memsched.cli.progress import TimeBar

    g = load_graph(args.graph)
    with solver_output_to_stderr(), TimeBar("order --exact", args.time_limit, enabled=args.exact and not args.json):
        res = ordering.solve_order(g, method=args.method, exact=args.exact, time_limit=args.time_limit,
                                   workers=args.workers, seed=args.seed, progress=not args.json)
    mark_interrupted(res)
    if args.json:
        emit_json(res.to_json(g))
    else:
        print(format_result(g, res))
    return 130 if interrupted() else 0


def _check_bound_report(g, rep) -> None:
    """Strict certificates: a lower bound above the evaluated peak of the given order is a bug."""
    from memsched.solvers.result import SolverDisagreement

    given = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    for name, b in [("lower_bound", {"value": rep["lower_bound"]})] + list(rep.get("bounds", {}).items()):
        if b.get("value") is not None and b["value"] > given:
            raise SolverDisagreement(f"bound {name} = {b['value']} is above the peak {given} of the given order")


def cmd_bound(args) -> int:
    from memsched.solvers.ordering import bounds

    g = load_graph(args.graph)
    with solver_output_to_stderr():
        rep = bounds.bound_report(g, shave_budget=args.shave)
        _check_bound_report(g, rep)
    if args.json:
        emit_json(rep)
    else:
        print(format_report(g, rep))
    return 0


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
             "last_of_set": "last of a gradient set (min cut)", "precedence": "learned precedences (shaving)"}
    rows = [(names.get(k, k), str(b["value"]), f"{b['wall_s']:.3f}") for k, b in rep["bounds"].items()]
    w0 = max(len(r[0]) for r in rows + [("bound", "", "")])
    w1 = max(len(r[1]) for r in rows + [("", "bytes", "")])
    lines = [f"lower bounds on the optimal peak of {g.name} ({g.n_ops} operators)",
             f"{'bound'.ljust(w0)}  {'bytes'.rjust(w1)}  wall_s",
             f"{'-' * w0}  {'-' * w1}  ------"]
    lines += [f"{a.ljust(w0)}  {b.rjust(w1)}  {c}" for a, b, c in rows]
    lines.append(f"lower bound: {rep['lower_bound']}")
    return "\n".join(lines)
