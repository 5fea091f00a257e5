"""Option types and the option groups that several commands share (argparse parent parsers).

Every user error in an option value is one line and exit status 2 (argparse's own, or
:class:`UsageError`)."""
from __future__ import annotations

import argparse
import math

from memsched.cli.fmt import solver_output_to_stderr
from memsched.cli.interrupts import interrupted
from memsched.cli.paths import BUDGET_HELP, parse_budget
from memsched.formulations import MemschedError

__all__ = ["EXIT_USER_ERROR", "UsageError", "ratio_or_bytes", "positive_float", "nonneg_float", "size", "seed", "workers",
           "SEED_HELP",
           "check_mip_solver", "load_graph", "graph_parent", "json_parent", "remat_parent", "program_parent",
           "BUDGET_HELP", "ORDER_HELP"]

EXIT_USER_ERROR = 2

ORDER_HELP = ("free: any schedule (default); given: first computations keep the graph's given order "
              "(Checkmate's and Moccasin's class). optimal/infeasible/lower bound refer to this choice")


GRAPH_HELP = ("graph file: memsched-graph JSON or Checkmate/Moccasin node-link JSON, optionally gzipped "
              "(format detected from the content; docs/format.md)")
SEED_HELP = "random seed of the solvers (CP-SAT), 0 to 2^31-1 (default 0); the same seed gives the same answer"


class UsageError(MemschedError):
    """A bad command-line option value."""


def ratio_or_bytes(text: str):
    """--budget: the one budget rule (cli.paths.parse_budget); a ratio (float <= 1) or bytes (int >= 2)."""
    try:
        return parse_budget(text, option="").value()
    except MemschedError as e:
        raise argparse.ArgumentTypeError(str(e).lstrip(" ")) from None


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return v


def nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return v


SEED_MAX = 2 ** 31 - 1  # CP-SAT's random_seed is a signed 32-bit integer


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def seed(text: str) -> int:
    """--seed: an integer 0 <= s < 2^31 (CP-SAT's seed is 32 bits)."""
    v = _int(text)
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to {SEED_MAX}, got {text!r}")
    return v


def workers(text: str) -> int:
    """--workers: 0 (one per CPU core) or a positive count."""
    v = _int(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU core) or a positive count, got {text!r}")
    return v


def size(text: str) -> int:
    """A byte count: an integer, or a number with a unit (512MiB, 2GiB, 1.5GB)."""
    try:
        b = parse_budget(text, option="")
    except MemschedError as e:
        raise argparse.ArgumentTypeError(str(e).lstrip(" ")) from None
    if b.bytes is None:
        raise argparse.ArgumentTypeError(f"expected bytes (e.g. 2GiB, 512MiB, 1000000), got {text!r}")
    return b.bytes


def check_mip_solver(args) -> None:
    """--mip-solver is checked before any work, with Pyomo's own warnings silenced
    (they would print a traceback): one line, exit 2."""
    if getattr(args, "method", None) != "milp":
        if getattr(args, "mip_solver", None) is not None:
            raise MemschedError(f"--mip-solver applies to --method milp only (method {args.method!r})")
        return
    if args.mip_solver is None:
        args.mip_solver = "highs"
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


def load_graph(path):
    from memsched.instances import load_graph

    return load_graph(path)


# --------------------------------------------------------- option groups
def graph_parent() -> argparse.ArgumentParser:
    """GRAPH, the positional argument of every command that reads a graph."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("graph", metavar="GRAPH", help=GRAPH_HELP)
    return p


def json_parent(help: str = "print one JSON object") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--json", action="store_true", help=help)
    return p


def remat_parent(*, time_limit: float, method_help: str) -> argparse.ArgumentParser:
    """The asked remat problem and how to solve it: remat and pareto."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--method", default="cp", help=method_help)
    p.add_argument("--cap", type=int, default=None, help="max extra computations per operator (default unbounded)")
    p.add_argument("--order", choices=["free", "given"], default="free", help=ORDER_HELP)
    p.add_argument("--mip-solver", default=None,
                   help="Pyomo solver for --method milp: highs (via highspy, default), cbc, glpk, gurobi, scip, ...")
    p.add_argument("--time-limit", type=positive_float, default=time_limit, help=f"seconds (default {time_limit:g})")
    p.add_argument("--workers", type=workers, default=0, help="CP-SAT workers for --method cp (default 0: one per CPU core)")
    p.add_argument("--seed", type=seed, default=0, help=SEED_HELP)
    return p


def program_parent() -> argparse.ArgumentParser:
    """Which schedule to emit and how: emit and run."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("schedule", metavar="SCHEDULE", nargs="?",
                   help="schedule JSON ('events' or 'order', e.g. the --json output of order/remat); default: --method")
    p.add_argument("--method", default="given",
                   help="without SCHEDULE: given (default), an ordering heuristic (dfs, bfs, lpmf, greedy, liu, best) or exact")
    p.add_argument("--time-limit", type=positive_float, default=60.0, help="seconds for --method exact (default 60)")
    p.add_argument("--backend", choices=["numpy", "torch"], default="numpy",
                   help="array library of the emitted program (default numpy; torch for --device cuda)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="torch backend only")
    p.add_argument("--arena", action="store_true", help="plan one static arena and use views")
    p.add_argument("--scale", type=int, default=1, help="divide every tensor size by N (rounded up)")
    return p
