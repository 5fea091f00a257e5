"""``memsched emit`` and ``memsched run``: thin command bodies over the executors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from memsched.cli.fmt import fmt_bytes, table
from memsched.cli.interrupts import interrupted
from memsched.cli.options import graph_parent, json_parent, load_graph, program_parent, size
from memsched.cli.paths import check_output
from memsched.formulations import Graph, Schedule, evaluate


__all__ = ["emit", "run", "schedule_for", "load_checked_schedule"]


def schedule_for(graph: Graph, method: str = "given", *, time_limit: float = 60.0) -> tuple[Schedule, str]:
    """The schedule that ``--method`` names: ``given`` (the program's order), any ordering
    heuristic of ``memsched order`` (dfs, bfs, lpmf, greedy, liu, best) or ``exact`` (CP-SAT).
    Returns (schedule, description)."""
    from memsched.solvers.executors.runner import ExecError

    if method == "given":
        return Schedule.from_order(graph, graph.given_order()), "given order"
    from memsched.solvers.ordering import dispatch as ordering
    from memsched.solvers.ordering.heuristics import UnknownMethod

    if method != "exact" and method not in ordering.METHODS:
        raise UnknownMethod(f"unknown method {method!r}; valid: {', '.join(ordering.METHODS + ('exact',))}")
    res = ordering.solve_order(graph, method=method, exact=(method == "exact"), time_limit=time_limit, workers=1)
    if interrupted():  # Ctrl-C stopped the solver (it handed back its best so far): stop here, write and run nothing
        raise KeyboardInterrupt
    if res.schedule is None:
        raise ExecError(f"--method {method}: the solver returned no schedule ({res.status})")
    return res.schedule, f"{method} ({res.status})"


def load_checked_schedule(graph: Graph, path) -> Schedule:
    """The schedule in ``path``, validated by the evaluator (inputs resident, no use after
    free, no double free, every required output present): one line naming the file otherwise."""
    from memsched.formulations.evaluator import ScheduleError
    from memsched.instances import load_schedule

    sched = load_schedule(graph, path)
    try:
        evaluate(graph, sched)
    except ScheduleError as e:
        raise ScheduleError(f"{path}: invalid schedule for {graph.name}: {e}") from None
    return sched


def _schedule(args, graph: Graph) -> tuple[Schedule, str]:
    if getattr(args, "schedule", None):
        return load_checked_schedule(graph, args.schedule), f"schedule file {args.schedule}"
    return schedule_for(graph, getattr(args, "method", "given") or "given",
                        time_limit=getattr(args, "time_limit", 60.0) or 60.0)


def _scale(args) -> int:
    from memsched.solvers.executors.runner import ExecError

    s = getattr(args, "scale", 1)
    s = 1 if s is None else s
    if s < 1:
        raise ExecError(f"--scale must be a positive integer, got {s}")
    return s


def emit(args) -> int:
    from memsched.solvers.executors.arena import plan_arena
    from memsched.solvers.executors.emit import emit_program
    from memsched.solvers.executors.runner import ExecError, scaled_graph

    g = load_graph(args.graph)
    sched, what = _schedule(args, g)
    backend = args.backend
    device = getattr(args, "device", "cpu") or "cpu"
    if backend not in ("numpy", "torch"):
        raise ExecError(f"--backend must be numpy or torch, got {backend!r}")
    if backend == "numpy" and device != "cpu":
        raise ExecError("--device cuda needs --backend torch")
    g2 = scaled_graph(g, _scale(args))
    plan = plan_arena(g2, sched) if args.arena else None
    src = emit_program(g2, sched, backend=backend, device=device, arena=plan)
    out = Path(args.output)
    try:
        out.write_text(src)
    except OSError as e:
        raise ExecError(f"-o {out}: cannot write: {e}") from None
    extra = f", arena {plan.size} bytes ({plan.method}, {plan.status})" if plan else ""
    print(f"wrote {out}: {g.name}, {what}, {len(sched)} events, backend {backend}{extra}; run: python {out}")
    return 0


def run(args) -> int:
    from memsched.solvers.executors.runner import DEFAULT_MAX_BYTES, check_backend, mismatch, run_schedule

    g = load_graph(args.graph)
    check_backend(args.backend, args.device)
    sched, what = _schedule(args, g)
    max_bytes = getattr(args, "max_bytes", DEFAULT_MAX_BYTES)
    res = run_schedule(g, sched, backend=args.backend, device=args.device, arena=args.arena, scale=_scale(args),
                       max_bytes=max_bytes, keep_program=getattr(args, "keep", None))
    res["schedule"] = what
    problem = mismatch(res)  # CPU and CUDA alike: every path measures exact requested bytes
    ok = problem is None
    res["match"] = ok
    if args.json:
        print(json.dumps(res))
    else:

        rows = [["schedule", what], ["backend / device", f"{res['backend']} / {res['device']}"],
                ["modeled peak", fmt_bytes(res["modeled_peak"])], ["realized peak", fmt_bytes(res["realized_peak"])],
                ["difference", str(res["difference"])]]
        if "realized_peak_without_temporaries" in res:
            rows.append(["without kernel temporaries", f"{fmt_bytes(res['realized_peak_without_temporaries'])} "
                         f"(largest temporary in one kernel: {res['kernel_temporary_max']} bytes)"])
        if "allocated_peak" in res:
            rows.append(["allocated / reserved peak", f"{fmt_bytes(res['allocated_peak'])} / "
                         f"{fmt_bytes(res['reserved_peak'])} (caching allocator blocks)"])
        if res.get("scale", 1) != 1:
            rows.append(["scale", f"sizes / {res['scale']} (unscaled modeled peak {fmt_bytes(res['modeled_peak_unscaled'])})"])
        if args.arena:
            rows.append(["arena", f"{fmt_bytes(res['arena_size'])} ({res['arena_method']}, {res['arena_status']})"])
        rows += [["output hash", res["output_hash"]], ["wall", f"{res['wall_s']:.4f} s"], ["measured by", res["measure"]]]
        if res["recompute_mismatch"]:
            rows.append(["RECOMPUTE MISMATCH", ", ".join(res["recompute_mismatch"])])
        print(table(rows, ["run", "value"]))
    if problem is not None:
        print(f"memsched run: MISMATCH {problem}", file=sys.stderr)
    return 0 if ok else 1


def add_parsers(sub) -> None:
    g, prog = graph_parent(), program_parent()
    s = sub.add_parser("emit", parents=[g, prog], help="write a standalone program that runs a schedule",
                       description="Write a standalone Python program that runs the schedule (numpy or torch "
                                   "backend) and prints its measured peak and output hashes (docs/executors.md).")
    s.add_argument("-o", "--output", metavar="PROG.py", required=True,
                   help="the program file to write (its directory must exist; checked before any work)")
    s.set_defaults(func=cmd_emit)

    s = sub.add_parser("run", parents=[g, prog, json_parent()], help="emit and run a schedule; measure the realized peak",
                       description="Emit the schedule as a program, run it in a subprocess and compare the realized "
                                   "peak (every numpy allocation, kernel temporaries included / the torch allocator) "
                                   "with the modeled one. Exit 1 when they differ.")
    s.add_argument("--max-bytes", type=size, default=1 << 30, metavar="SIZE",
                   help="refuse schedules whose modeled peak exceeds this many bytes (an integer or a number with "
                        "a unit: 512MiB, 2GiB; default 1 GiB); see --scale")
    s.add_argument("--keep", metavar="PROG.py", help="also write the emitted program here")
    s.set_defaults(func=cmd_run)


def cmd_emit(args) -> int:
    check_output(args.output, "-o")
    return emit(args)  # a SCHEDULE file is validated as run does (one line naming it, exit 2)


def cmd_run(args) -> int:
    if getattr(args, "keep", None):
        check_output(args.keep, "--keep")
    return run(args)
