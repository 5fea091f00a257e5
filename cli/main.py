"""The memsched command line. It only parses, calls library functions, and prints.

Every command that takes a GRAPH accepts any supported graph format (detected
from the content). ``--json`` prints one JSON object for machines. A user
error prints one line on stderr and exits with status 2.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from memsched.cli.fmt import emit_json, fmt_bytes, fmt_num, solver_output_to_stderr, table
from memsched.cli.paths import BUDGET_HELP, check_output, check_output_dir, check_plot, parse_budget
from memsched.formulations import MemschedError, Schedule, evaluate

EXIT_USER_ERROR = 2


class UsageError(MemschedError):
    """A bad command-line option value."""


# ------------------------------------------------------------------ Ctrl-C
class Interrupts:
    """Ctrl-C during a command: the first one raises KeyboardInterrupt in the main thread
    (solvers catch it, stop their search and return the best result so far, which the
    command prints with status ``interrupted`` and exit status 130); a second one exits at
    once (status 130), even while the main thread is inside native code: a watcher thread
    reads the signal from ``signal.set_wakeup_fd``, which the C-level handler writes at
    the moment the signal arrives."""

    count = 0  # Ctrl-C seen by the Python handler during this command

    def __init__(self):
        self.old_handler = None
        self.old_wakeup = None
        self.pipe = None

    def _handler(self, signum, frame):
        Interrupts.count += 1
        if Interrupts.count >= 2:
            self._exit_now()
        print("memsched: interrupted; stopping (Ctrl-C again to quit at once)", file=sys.stderr, flush=True)
        raise KeyboardInterrupt

    @staticmethod
    def _exit_now():
        import os

        try:
            os.write(2, b"memsched: interrupted again; exiting\n")
        finally:
            os._exit(130)

    def _watch(self, fd):
        import os
        import signal as S

        seen = 0
        try:
            while True:
                try:
                    data = os.read(fd, 64)
                except OSError:
                    return
                if not data:  # the command ended (write end closed)
                    return
                seen += data.count(bytes([int(S.SIGINT)]))
                if seen >= 2:
                    self._exit_now()
        finally:
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        import os
        import signal as S
        import threading

        Interrupts.count = 0
        if threading.current_thread() is not threading.main_thread():
            return self
        current = S.getsignal(S.SIGINT)
        if current is S.SIG_IGN:  # started in the background (nohup ... &): leave it so
            return self
        self.old_handler = S.signal(S.SIGINT, self._handler)
        try:
            r, w = os.pipe()
            os.set_blocking(w, False)
            self.old_wakeup = S.set_wakeup_fd(w, warn_on_full_buffer=False)
            self.pipe = (r, w)
            threading.Thread(target=self._watch, args=(r,), daemon=True, name="memsched-sigint").start()
        except (ValueError, OSError):
            self.pipe = None
        return self

    def __exit__(self, *exc):
        import os
        import signal as S

        if self.pipe is not None:
            S.set_wakeup_fd(self.old_wakeup if self.old_wakeup is not None else -1)
            os.close(self.pipe[1])  # the watcher reads EOF and ends
            self.pipe = None
        if self.old_handler is not None:
            S.signal(S.SIGINT, self.old_handler)
            self.old_handler = None
        return False


def interrupted() -> bool:
    """True once Ctrl-C was pressed during the current command."""
    return Interrupts.count > 0


def _mark_interrupted(res) -> None:
    """An interrupted solve keeps its best schedule and bound; its status says it was interrupted
    (a proof found before the interrupt, optimal or infeasible, stands)."""
    from memsched.solvers.result import Status

    if interrupted() and res is not None and res.status not in (Status.OPTIMAL, Status.INFEASIBLE):
        res.status = Status.INTERRUPTED


# ------------------------------------------------------------------ output








def _ratio_or_bytes(text: str):
    """--budget: the one budget rule (cli.paths.parse_budget); a ratio (float <= 1) or bytes (int >= 2)."""
    try:
        return parse_budget(text, option="").value()
    except MemschedError as e:
        raise argparse.ArgumentTypeError(str(e).lstrip(" ")) from None


def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


def _size(text: str) -> int:
    """A byte count: an integer, or a number with a unit (512MiB, 2GiB, 1.5GB)."""
    try:
        b = parse_budget(text, option="")
    except MemschedError as e:
        raise argparse.ArgumentTypeError(str(e).lstrip(" ")) from None
    if b.bytes is None:
        raise argparse.ArgumentTypeError(f"expected bytes (e.g. 2GiB, 512MiB, 1000000), got {text!r}")
    return b.bytes


def _check_mip_solver(args) -> None:
    """--mip-solver is checked before any work, with Pyomo's own warnings silenced
    (they would print a traceback): one line, exit 2."""
    if getattr(args, "method", None) != "milp":
        return
    import logging

    from memsched.solvers.remat.milp import _check_solver

    logging.disable(logging.CRITICAL)
    try:
        with solver_output_to_stderr():
            _check_solver(args.mip_solver)
    except MemschedError:
        if interrupted():  # Ctrl-C while Pyomo loaded the solver: not a missing solver
            raise KeyboardInterrupt from None
        raise
    finally:
        logging.disable(logging.NOTSET)


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return v


def _load(path):
    from memsched.instances import load_graph

    return load_graph(path)


# ============================================================ info / eval
def cmd_info(args) -> int:
    g = _load(args.graph)
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
    from memsched.instances import load_schedule

    g = _load(args.graph)
    sched = load_schedule(g, args.schedule)
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


# ================================================================= order
def cmd_order(args) -> int:
    from memsched.cli.order import format_result as format_order
    from memsched.solvers.ordering import dispatch as ordering

    g = _load(args.graph)
    with solver_output_to_stderr():
        res = ordering.solve_order(g, method=args.method, exact=args.exact, time_limit=args.time_limit,
                                   workers=args.workers, seed=args.seed, progress=not args.json)
    _mark_interrupted(res)
    if args.json:
        emit_json(res.to_json(g))
    else:
        print(format_order(g, res))
    return 130 if interrupted() else 0


def _check_bound_report(g, rep) -> None:
    """Strict certificates: a lower bound above the evaluated peak of the given order is a bug."""
    from memsched.solvers.result import SolverDisagreement

    given = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    for name, b in [("lower_bound", {"value": rep["lower_bound"]})] + list(rep.get("bounds", {}).items()):
        if b.get("value") is not None and b["value"] > given:
            raise SolverDisagreement(f"bound {name} = {b['value']} is above the peak {given} of the given order")


def cmd_bound(args) -> int:
    from memsched.cli.order import format_report as format_bound_report
    from memsched.solvers.ordering import bounds

    g = _load(args.graph)
    with solver_output_to_stderr():
        rep = bounds.bound_report(g, shave_budget=args.shave)
        _check_bound_report(g, rep)
    if args.json:
        emit_json(rep)
    else:
        print(format_bound_report(g, rep))
    return 0


# ================================================================= remat
def cmd_remat(args) -> int:
    from memsched.cli import remat as remat_out
    from memsched.solvers.remat import dispatch as remat

    g = _load(args.graph)
    t0 = time.perf_counter()
    try:
        _check_mip_solver(args)
        with solver_output_to_stderr():
            res = remat.solve_remat(g, budget=args.budget, method=args.method, cap=args.cap,
                                    time_limit=args.time_limit, mip_solver=args.mip_solver, objective=args.objective,
                                    eps=args.eps, seed=args.seed, progress=args.progress, workers=args.workers, order=args.order)
    except KeyboardInterrupt:  # the method had nothing to hand back (e.g. Ctrl-C while its model was built)
        from memsched.solvers.result import SolveResult, Status

        res = SolveResult(solver=f"remat-{args.method}", status=Status.INTERRUPTED, objective=args.objective,
                          wall_s=time.perf_counter() - t0, message="interrupted before a schedule was found",
                          params={"method": args.method, "budget": remat.resolve_budget(g, args.budget)
                                  if args.objective == "compute" else args.budget})
    _mark_interrupted(res)
    if args.json:
        d = remat.result_json(g, res)
        d["stopped"] = remat_out.stop_reason(res, args.time_limit)
        emit_json(d)
    else:
        print(remat_out.format_result(g, res, args.time_limit))
    return 130 if interrupted() else 0


def cmd_pareto(args) -> int:
    from memsched.cli import remat as remat_out
    from memsched.solvers.remat import dispatch as remat

    if args.plot:
        check_plot(args.plot)
    _check_mip_solver(args)
    budgets = args.budgets if args.budgets is not None else [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    g = _load(args.graph)
    rows = []
    with solver_output_to_stderr():
        for b in budgets:  # one budget at a time: Ctrl-C keeps the points already solved
            try:
                more = remat.pareto_sweep(g, budgets=[b], method=args.method, cap=args.cap, order=args.order,
                                          time_limit=args.time_limit, progress=not args.json,
                                          mip_solver=args.mip_solver, workers=args.workers, seed=args.seed)
            except KeyboardInterrupt:
                more = []
            if interrupted():
                for r in more:
                    if r.get("status") not in ("optimal", "infeasible"):
                        r["status"] = "interrupted"
                rows += more
                break
            rows += more
    if args.plot:
        remat_out.plot_pareto(g, rows, args.plot, method=args.method)
    if args.json:
        emit_json({"graph": g.name, "points": rows, **({"status": "interrupted"} if interrupted() else {})})
    else:
        print(remat_out.format_pareto(g, rows))
        if interrupted():
            done = sum(1 for r in rows if r.get("status") != "interrupted")
            print(f"interrupted: {done} of {len(budgets)} budgets solved")
        if args.plot:
            print(f"plot written to {args.plot}")
    return 130 if interrupted() else 0


# ================================================================ gadget
def cmd_gadget(args) -> int:
    from memsched.cli.gadget import cli_gadget

    return cli_gadget(args)


# =================================================================== dtr
def cmd_dtr(args) -> int:
    from memsched.cli import dtr as dtr_cli

    return dtr_cli.run(args)


# ============================================================ emit / run
def cmd_emit(args) -> int:
    from memsched.cli import run as exec_cli

    check_output(args.output, "-o")
    if getattr(args, "schedule", None):  # validate a given schedule as run does (one line, exit 2)
        from memsched.instances import load_schedule

        g = _load(args.graph)
        evaluate(g, load_schedule(g, args.schedule))

    return exec_cli.emit(args)


def cmd_run(args) -> int:
    from memsched.cli import run as exec_cli

    if getattr(args, "keep", None):
        check_output(args.keep, "--keep")

    return exec_cli.run(args)


# ========================================================= bench / report
def cmd_bench(args) -> int:
    from memsched.cli import harness as bench_cli

    return bench_cli.bench(args)


def cmd_report(args) -> int:
    from memsched.cli import harness as bench_cli

    return bench_cli.report(args)


# ============================================================ crosscheck
def cmd_crosscheck(args) -> int:
    from memsched.cli.crosscheck import cli

    return cli(args)


# ================================================================ parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memsched",
        description="Memory-constrained scheduling of computation graphs: peak-memory orderings with certificates, "
                    "rematerialization under a budget, DTR replay, executable schedules.",
        epilog="GRAPH is a memsched-graph JSON file or Checkmate/Moccasin node-link JSON (format detected from content). "
               "User errors exit with status 2.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("info", help="summarize a graph and the peak of its given order")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_info)

    s = sub.add_parser("eval", help="validate a schedule and report its peak and compute")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("schedule", metavar="SCHEDULE", help="JSON with 'events' [[kind, name], ...] or 'order' [op, ...]")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("order", help="find an operator order with low peak memory (heuristic or exact)")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--method", default="best",
                   help="given, dfs, bfs, lpmf, greedy, liu (trees), best (lowest of all heuristics); default best")
    s.add_argument("--exact", action="store_true", help="solve to optimality with CP-SAT and certify with lower bounds")
    s.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds for --exact (default 60)")
    s.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_order)

    s = sub.add_parser("bound", help="lower bounds on the optimal peak (no search)")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--shave", type=_nonneg_float, default=0.0, metavar="SECONDS",
                   help="also run the learned-precedence (shaving) bound for up to SECONDS (default 0: off)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bound)

    s = sub.add_parser("remat", help="rematerialization: least compute within a memory budget (or least peak within a compute budget)")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--budget", type=_ratio_or_bytes, default=0.8, help=BUDGET_HELP + " (default 0.8)")
    s.add_argument("--method", default="cp", help="cp, milp, checkpoint-all, chen-sqrt, revolve, dtr-greedy, sp-knapsack, width-dp")
    s.add_argument("--cap", type=int, default=None, help="max extra computations per operator (default unbounded)")
    s.add_argument("--order", choices=["free", "given"], default="free",
                   help="free: any schedule (default); given: first computations keep the graph's given order "
                        "(Checkmate's and Moccasin's class). optimal/infeasible/lower bound refer to this choice")
    s.add_argument("--objective", choices=["compute", "peak"], default="compute",
                   help="compute: least compute with peak <= budget; peak: least peak with compute <= (1+eps) x baseline")
    s.add_argument("--eps", type=float, default=0.0, help="extra compute allowed with --objective peak (default 0)")
    s.add_argument("--mip-solver", default="highs",
                   help="Pyomo solver for --method milp: highs (via highspy, default), cbc, glpk, gurobi, scip, ...")
    s.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds (default 60)")
    s.add_argument("--workers", type=int, default=0, help="CP-SAT workers for --method cp (default 0: one per CPU core)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--progress", action="store_true", help="print each improving solution on stderr")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_remat)

    s = sub.add_parser("pareto", help="budget sweep: extra compute vs peak (table and plot)")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--budgets", type=_ratio_or_bytes, nargs="+", default=None,
                   help="budgets, each as for remat --budget: " + BUDGET_HELP + " (default 1.0 0.9 0.8 0.7 0.6 0.5)")
    s.add_argument("--method", default="cp", help="any remat method (default cp)")
    s.add_argument("--cap", type=int, default=None, help="max extra computations per operator (default unbounded)")
    s.add_argument("--order", choices=["free", "given"], default="free",
                   help="free: any schedule (default); given: first computations keep the graph's given order "
                        "(Checkmate's and Moccasin's class). optimal/infeasible/lower bound refer to this choice")
    s.add_argument("--time-limit", type=_positive_float, default=30.0, help="seconds per budget")
    s.add_argument("--mip-solver", default="highs", help="Pyomo solver for --method milp (default highs)")
    s.add_argument("--workers", type=int, default=1, help="CP-SAT workers (default 1)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--plot", metavar="PNG", help="write the Pareto plot here (.png, .pdf or .svg; checked before solving)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_pareto)

    s = sub.add_parser("gadget", help="generate NP-hardness gadget instances with known optima")
    s.set_defaults(func=cmd_gadget, gadget_parser=s)
    s.add_argument("kind", choices=["knapsack", "3partition"])
    s.add_argument("--items", metavar="FILE", help="source problem JSON: knapsack {'items': [{'size':..,'cost':..}], "
                   "'capacity': W}; 3partition {'numbers': [...]}")
    s.add_argument("--random", type=int, metavar="N", help="random source problem with N items (3partition: N numbers, a multiple of 3)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--objective", choices=["compute", "peak"], default="compute",
                   help="compute: least compute within a peak budget; peak: least peak within an extra-compute allowance")
    s.add_argument("--cap", type=int, default=1, help="recompute cap of the 3-partition gadget (default 1)")
    s.add_argument("-o", "--output", metavar="FILE", help="write the instance (and FILE.answer.json with the known optimum)")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("dtr", help="DTR online eviction: replay traces, sweep budgets, explain feasibility holes")
    s.set_defaults(func=cmd_dtr, dtr_parser=s)
    dsub = s.add_subparsers(dest="dtr_command", metavar="SUBCOMMAND")
    d = dsub.add_parser("replay", help="replay a trace (or a GRAPH) under a budget")
    d.add_argument("trace", metavar="TRACE", help="DTR log, or a memsched GRAPH file (replayed in its given order)")
    d.add_argument("--ratio", type=_positive_float, default=None,
                   help="budget = int(ratio x baseline memory) (default 1.0); for a GRAPH: ratio x given-order peak")
    d.add_argument("--budget-bytes", type=int, default=None, help="absolute budget in bytes instead of --ratio")
    d.add_argument("--heuristic", default="dtr",
                   help="dtr, dtr-eqclass, dtr-local, lru, size, msps, random, ab-*, lookahead-K, belady")
    d.add_argument("--overhead-limit", default="2.0", help="thrash limit as a multiple of baseline compute, or inf")
    d.add_argument("--seed", type=int, default=0, help="seed of the random heuristic")
    d.add_argument("--start", choices=["auto", "yes", "no"], default="auto",
                   help="honour ANNOTATE START (auto: manifest.json has_start, else if present)")
    d.add_argument("--allocator", default="bytes",
                   help="bytes (default, simrd's byte counting), first-fit, best-fit, caching (address-aware)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("sweep", help="dense budget sweeps (traces x heuristics in parallel), find holes")
    d.add_argument("trace", metavar="TRACE", nargs="+", help="one or more DTR logs; every (trace, heuristic) is swept")
    d.add_argument("--heuristic", default="dtr", help="a heuristic, or several separated by commas")
    d.add_argument("--lo", type=float, default=0.1)
    d.add_argument("--hi", type=float, default=1.0)
    d.add_argument("--step", type=float, default=None,
                   help="quick look: a coarse grid of this step, refined only where outcomes change (misses holes "
                        "between equal coarse outcomes); default: dense, every --resolution step")
    d.add_argument("--resolution", type=float, default=1e-4, help="sampling resolution (default 1e-4)")
    d.add_argument("--allocator", default="bytes",
                   help="bytes (default, simrd's byte counting), first-fit, best-fit, caching (address-aware)")
    d.add_argument("--no-share", action="store_true",
                   help="replay every sample (default: samples inside an equal replay's budget interval reuse it)")
    d.add_argument("--repeats", type=int, default=3, help="runs per point next to an outcome change (default 3)")
    d.add_argument("--run-timeout", type=_positive_float, default=60.0, help="seconds per run; later: unresolved")
    d.add_argument("--overhead-limit", default="2.0")
    d.add_argument("--jobs", type=int, default=2, help="harness worker processes (at most 2 unless --dask)")
    d.add_argument("--dask", metavar="ADDRESS", help="run the replays on a Dask scheduler (tcp://host:8786)")
    d.add_argument("--results", metavar="FILE.jsonl", help="append one JSON line per replay (see --resume)")
    d.add_argument("--resume", action="store_true", help="reuse the replays already in --results, append the rest")
    d.add_argument("--fsync", action="store_true", help="fsync --results after every row (survives a power cut)")
    d.add_argument("--refine", choices=["scan", "bisect"], default="scan",
                   help="scan every resolution step of a change interval (default) or bisect it")
    d.add_argument("--plot", metavar="PNG", help="write the feasibility map (several sweeps: PNG-<trace>-<heuristic>.png)")
    d.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    d.add_argument("--json", action="store_true", help="one JSON object per sweep (one line each)")
    d = dsub.add_parser("report", help="feasibility summary of a sweep results file (--results of dtr sweep)")
    d.add_argument("results", metavar="RESULTS", nargs="+", help="results files (JSON lines)")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("explain", help="explain a feasibility hole: replay two budgets side by side")
    d.add_argument("trace", metavar="TRACE")
    d.add_argument("--budget", type=_positive_float, required=True, help="failing budget (ratio)")
    d.add_argument("--vs", type=_positive_float, required=True, help="smaller feasible budget (ratio)")
    d.add_argument("--heuristic", default="dtr")
    d.add_argument("--overhead-limit", default="2.0")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("to-graph", help="convert a trace into a memsched graph (forward+backward DAG)")
    d.add_argument("trace", metavar="TRACE")
    d.add_argument("-o", "--output", metavar="FILE", required=True)

    _sched_help = "schedule JSON ('events' or 'order', e.g. the --json output of order/remat); default: --method"
    _method_help = "without SCHEDULE: given (default), an ordering heuristic (dfs, bfs, lpmf, greedy, liu, best) or exact"
    s = sub.add_parser("emit", help="write a standalone program that runs a schedule",
                       description="Write a standalone Python program that runs the schedule (numpy or torch "
                                   "backend) and prints its measured peak and output hashes (docs/executors.md).")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("schedule", metavar="SCHEDULE", nargs="?", help=_sched_help)
    s.add_argument("--method", default="given", help=_method_help)
    s.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds for --method exact")
    s.add_argument("--backend", choices=["numpy", "torch"], default="numpy")
    s.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="torch backend only")
    s.add_argument("--arena", action="store_true", help="plan one static arena and use views")
    s.add_argument("--scale", type=int, default=1, help="divide every tensor size by N (rounded up)")
    s.add_argument("-o", "--output", metavar="PROG.py", required=True)
    s.set_defaults(func=cmd_emit)

    s = sub.add_parser("run", help="emit and run a schedule; measure the realized peak",
                       description="Emit the schedule as a program, run it in a subprocess and compare the realized "
                                   "peak (measured by tracemalloc / the torch allocator) with the modeled one. "
                                   "Exit 1 when they differ on CPU.")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("schedule", metavar="SCHEDULE", nargs="?", help=_sched_help)
    s.add_argument("--method", default="given", help=_method_help)
    s.add_argument("--time-limit", type=_positive_float, default=60.0, help="seconds for --method exact")
    s.add_argument("--backend", choices=["numpy", "torch"], default="numpy")
    s.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    s.add_argument("--arena", action="store_true", help="plan one static arena and use views")
    s.add_argument("--scale", type=int, default=1, help="divide every tensor size by N (rounded up)")
    s.add_argument("--max-bytes", type=int, default=1 << 30,
                   help="refuse schedules whose modeled peak exceeds this (default 1 GiB); see --scale")
    s.add_argument("--keep", metavar="PROG.py", help="also write the emitted program here")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_run)

    from memsched.cli import arena as arena_cli  # memsched arena: static memory planning (docs/arena.md)
    arena_cli.add_parser(sub)

    s = sub.add_parser("bench", help="run a benchmark sweep from a TOML/YAML spec (JSON lines out)",
                       description="Run every instance x solver x budget of SPEC (docs/harness.md). One JSON line "
                                   "per run is appended and flushed as it ends; a run past its hard limit is "
                                   "killed and recorded as timeout, a crash as error, and the sweep goes on.")
    s.add_argument("spec", metavar="SPEC", help="sweep spec, .toml (or .yaml/.yml with PyYAML)")
    s.add_argument("-o", "--output", metavar="RESULTS.jsonl",
                   help="results file (default: the spec's 'output', else NAME.jsonl)")
    s.add_argument("--jobs", type=int, default=None, help="local worker processes (default: the spec's 'jobs', else 2)")
    s.add_argument("--dask", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786) instead of locally")
    s.add_argument("--resume", action="store_true", help="skip runs already in the results file, append the rest")
    s.add_argument("--fsync", action="store_true", help="fsync the results file after every row (survives a power cut)")
    s.add_argument("--memory-limit", type=_size, default=None, metavar="SIZE",
                   help="address-space cap per run in its worker (RLIMIT_AS), e.g. 4GiB; a run past it is "
                        "recorded with status 'memory' and the sweep goes on")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress line on stderr")
    s.add_argument("--json", action="store_true", help="print the sweep summary as one JSON object")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("report", help="render tables and plots from benchmark results",
                       description="Markdown tables (per instance: best known, best bound, certified optimum, "
                                   "each solver's gap; per solver; per family). With -o DIR: report.md, CSV "
                                   "tables and PNG plots in DIR; else the markdown on stdout.")
    s.add_argument("results", metavar="RESULTS", nargs="+", help="results files (JSON lines) from memsched bench")
    s.add_argument("-o", "--output-dir", metavar="DIR", default=None)
    s.add_argument("--no-plots", action="store_true", help="tables only")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("crosscheck", help="solve one instance every way and check all answers against each other")
    s.add_argument("graph", metavar="GRAPH")
    s.add_argument("--budget", type=_ratio_or_bytes, default=None, help=BUDGET_HELP)
    s.add_argument("--order", choices=["free", "given"], default="free",
                   help="free: any schedule (default); given: first computations keep the graph's given order "
                        "(Checkmate's and Moccasin's class). optimal/infeasible/lower bound refer to this choice")
    s.add_argument("--time-limit", type=_positive_float, default=30.0)
    s.add_argument("--plot", metavar="PNG", help="memory timelines plot (.png, .pdf or .svg; checked before solving)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_crosscheck)
    return p


def main(argv=None) -> int:
    from memsched.solvers.result import SolverDisagreement

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USER_ERROR
    try:
        with Interrupts():
            return int(args.func(args) or 0)
    except SolverDisagreement as e:  # a claim contradicted by the evaluator: a bug, one line, exit 1
        print(f"memsched {args.command}: solver disagreement: {e}", file=sys.stderr)
        return 1
    except MemschedError as e:
        print(f"memsched {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"memsched {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:  # a write that failed after the checks (disk full, file removed): one line
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        print(f"memsched {args.command}: error:{where} {e.strerror or e}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
