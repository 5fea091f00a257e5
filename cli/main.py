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

from memsched.cli import arena, crosscheck, dtr, gadget, harness, order, remat, run
from memsched.cli.interrupts import Interrupts, interrupted
from memsched.cli.options import EXIT_USER_ERROR
from memsched.formulations import MemschedError

GROUPS = (order, remat, gadget, dtr, run, arena, harness, crosscheck)  # in the order --help lists them


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
    return p


def main(argv=None) -> int:
    """Run one command; its exit status (0 ok, 1 solver disagreement, 2 user error, 130 Ctrl-C)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:  # Ctrl-C before the command started: one line, no traceback
        print("memsched: interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USER_ERROR
    return _run(args)


def _run(args) -> int:
    from memsched.solvers.result import SolverDisagreement

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
        if interrupted():
            print(f"memsched {args.command}: interrupted", file=sys.stderr)
            return 130
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        print(f"memsched {args.command}: error:{where} {e.strerror or e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception:
        # after Ctrl-C a library can fail on its way out (numba interrupted while it compiled:
        # "no compiled object yet"): the command was stopped, one line, no traceback
        if interrupted():
            print(f"memsched {args.command}: interrupted", file=sys.stderr)
            return 130
        raise


if __name__ == "__main__":
    sys.exit(main())
