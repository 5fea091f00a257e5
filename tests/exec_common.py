"""Shared helpers of the tests/test_exec_*.py files (not a test module)."""
from __future__ import annotations

from pathlib import Path

from memsched.formulations import Schedule, evaluate
from memsched.instances import generators as gen
from memsched.solvers.executors import recompute_schedule, scaled_graph

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "instances" / "shipped"
SCALE_TO = 1 << 20  # shipped graphs are scaled so that every tested schedule peaks at <= 1 MiB


# the shipped instances that the executor tests run: all but the four largest models (402-738
# operators: inception_v3 train and inference, deeplabv3 and resnet50 train), whose programs
# benchmarks/bench_exec.py runs (FX programs, realized == modeled to the byte, both measures)
EXEC_MAX_OPS = 400


def shipped_graphs(max_ops: int | None = None):
    """Every graph file under instances/shipped (recursively), loaded; with ``max_ops``, only
    those of at most that many operators."""
    from memsched.instances import load_graph
    from memsched.instances.formats import InputError

    out = []
    for p in sorted(SHIPPED.rglob("*.json")):
        try:
            g = load_graph(p)
        except InputError:
            continue  # answer files and other non-graph JSON
        if max_ops is None or g.n_ops <= max_ops:
            out.append((p.relative_to(SHIPPED).as_posix(), g))
    return out


def schedules_for(g, *, exact_ops: int = 12):
    """(label, schedule) for the given order, the best heuristic, the exact order when the
    driver exists and the graph is small, and a recomputing schedule when one exists."""
    out = [("given", Schedule.from_order(g, g.given_order()))]
    try:
        from memsched.solvers.ordering.heuristics import best_order
    except ImportError:
        best_order = None
    if best_order is not None:
        out.append(("best", Schedule.from_order(g, best_order(g))))
    if g.n_ops <= exact_ops:
        try:
            from memsched.solvers.ordering.exact import solve_exact
        except ImportError:
            solve_exact = None
        if solve_exact is not None:
            res = solve_exact(g, time_limit=5.0, workers=1)
            if res.schedule is not None:
                out.append(("exact", res.schedule))
    rs = recompute_schedule(g, g.given_order())
    if rs is not None:
        out.append(("recompute", rs))
    return out


def scale_for(g, schedules) -> int:
    peak = max(evaluate(g, s).peak for _, s in schedules)
    s = 1
    while evaluate(scaled_graph(g, s), schedules[0][1]).peak > SCALE_TO or \
            max(evaluate(scaled_graph(g, s), sc).peak for _, sc in schedules) > SCALE_TO:
        s = max(2 * s, -(-peak // SCALE_TO))
    return s


def random_graphs(n: int):
    """n small deterministic random graphs of several families (zero sizes, workspace,
    multi-output operators, pinned inputs and required outputs included)."""
    out = []
    for seed in range(n):
        k = seed % 4
        if k == 0:
            out.append(gen.random_multi_output(4 + seed % 11, seed))
        elif k == 1:
            out.append(gen.random_dag(3 + seed % 12, seed, edge_prob=0.35))
        elif k == 2:
            out.append(gen.tree(3 + seed % 10, seed))
        else:
            out.append(gen.random_multi_output(8 + seed % 7, seed, max_size=3))  # many zero/1-byte tensors
    return out
