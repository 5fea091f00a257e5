"""The memsched command line. It only parses, calls library functions, and prints.

One module per command group (memsched.cli.order, .remat, .run, .dtr, .harness,
.crosscheck, .gadget, .arena), each with ``add_parsers(sub)``; the options several commands
share are argparse parent parsers in :mod:`memsched.cli.options`. Every command that takes
a GRAPH accepts any supported graph format (detected from the content). ``--json`` prints
one JSON object for machines. A user error prints one line on stderr and exits with
status 2; a solver disagreement (a bug) exits with 1; Ctrl-C with 130.
"""
from __future__ import annotations

import argparse
import sys

from memsched.cli import arena, crosscheck, gadget, harness, order, remat, run
from memsched.cli.interrupts import Interrupts
from memsched.cli.options import EXIT_USER_ERROR, positive_float
from memsched.formulations import MemschedError

GROUPS = (order, remat, gadget, run, arena, harness, crosscheck)  # in the order --help lists them


def cmd_dtr(args) -> int:
    from memsched.cli import dtr as dtr_cli

    return dtr_cli.run(args)


def _add_dtr_parsers(sub) -> None:
    s = sub.add_parser("dtr", help="DTR online eviction: replay traces, sweep budgets, explain feasibility holes")
    s.set_defaults(func=cmd_dtr, dtr_parser=s)
    dsub = s.add_subparsers(dest="dtr_command", metavar="SUBCOMMAND")
    d = dsub.add_parser("replay", help="replay a trace (or a GRAPH) under a budget")
    d.add_argument("trace", metavar="TRACE", help="DTR log, or a memsched GRAPH file (replayed in its given order)")
    d.add_argument("--ratio", type=positive_float, default=None,
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
    d.add_argument("--run-timeout", type=positive_float, default=60.0, help="seconds per run; later: unresolved")
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
    d.add_argument("--budget", type=positive_float, required=True, help="failing budget (ratio)")
    d.add_argument("--vs", type=positive_float, required=True, help="smaller feasible budget (ratio)")
    d.add_argument("--heuristic", default="dtr")
    d.add_argument("--overhead-limit", default="2.0")
    d.add_argument("--json", action="store_true")
    d = dsub.add_parser("to-graph", help="convert a trace into a memsched graph (forward+backward DAG)")
    d.add_argument("trace", metavar="TRACE")
    d.add_argument("-o", "--output", metavar="FILE", required=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memsched",
        description="Memory-constrained scheduling of computation graphs: peak-memory orderings with certificates, "
                    "rematerialization under a budget, DTR replay, executable schedules.",
        epilog="GRAPH is a memsched-graph JSON file or Checkmate/Moccasin node-link JSON (format detected from content). "
               "User errors exit with status 2.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.add_parsers(sub)
    _add_dtr_parsers(sub)
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
