"""Benchmark: the evaluator and the ordering heuristics.

1. Scaling: time and peak of the evaluator (given order) and of every heuristic on
   generated graphs of 10^3, 10^4, 10^5 operators: sparse random layered graphs
   (Gagrani et al. construction, edge density lowered so the mean in-degree stays ~2),
   random in-trees (where Liu applies) and random multi-output DAGs.
2. Quality: each heuristic's peak against the given order's on every Checkmate and
   random-layered graph in ../shared/data/graphs (skipped when absent) and on the
   shipped instances.

Writes benchmarks/sections/20-orderings.md.

    .venv/bin/python benchmarks/bench_orderings.py [--quick]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memsched.formulations import Schedule, evaluate  # noqa: E402
from memsched.instances import SHIPPED, load_graph  # noqa: E402
from memsched.instances.generators import random_layered, random_multi_output, tree  # noqa: E402
from memsched.solvers.ordering.heuristics import HEURISTICS, applicable  # noqa: E402

DATA = ROOT / ".." / "shared" / "data" / "graphs"
OUT = ROOT / "benchmarks" / "sections" / "20-orderings.md"
NAMES = ["given", "dfs", "bfs", "lpmf", "greedy", "liu"]


def load() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unavailable"


def sparse_layered(n: int, seed: int = 0):
    w = 0.3
    layers = math.ceil(math.sqrt(n * (1 / w - 1)))
    width = max(1.0, n / layers)
    return random_layered(n, seed, width=w, edge_density=min(0.2, 1.0 / width), name=f"layered_sparse_n{n}")


def caterpillar(n: int, seed: int = 0):
    """An in-tree whose spine s_0 -> s_1 -> ... carries one leaf per spine node (n operators):
    every spine node merges a long segment list with a leaf's (Liu's harder shape)."""
    import random

    from memsched.formulations import Graph

    rng = random.Random(seed)
    k = n // 2
    nodes, edges = [], []
    for i in range(k):
        nodes += [(f"l{i}", rng.randint(1, 100), 1.0), (f"s{i}", rng.randint(1, 100), 1.0)]
        edges.append((f"l{i}", f"s{i}"))
        if i:
            edges.append((f"s{i - 1}", f"s{i}"))
    return Graph.from_single_output(nodes, edges, name=f"caterpillar_n{n}")


def timed(f, *a):
    t0 = time.perf_counter()
    r = f(*a)
    return r, time.perf_counter() - t0


def scaling(sizes) -> list[dict]:
    rows = []
    for n in sizes:
        for fam, make in (("layered", sparse_layered), ("tree", lambda n: tree(n, seed=0)),
                          ("caterpillar", caterpillar), ("multi-output", lambda n: random_multi_output(n, seed=0))):
            g = make(n)
            edges = sum(len(c) for c in g.consumers)
            sched, t_sched = timed(Schedule.from_order, g, g.given_order())
            ev, t_eval = timed(evaluate, g, sched)
            row = {"family": fam, "n": n, "edges": edges, "from_order_s": t_sched, "evaluate_s": t_eval,
                   "given_peak": ev.peak, "h": {}}
            for name in NAMES[1:]:
                if name not in applicable(g):
                    continue
                order, t = timed(HEURISTICS[name], g)
                p = evaluate(g, Schedule.from_order(g, order)).peak
                row["h"][name] = (t, p)
            rows.append(row)
            hs = " ".join(f"{k}={v[0]:.2f}s" for k, v in row["h"].items())
            print(f"n={n} {fam}: eval {t_eval:.3f}s {hs}  [{load()}]", flush=True)
    return rows


def quality(paths) -> list[dict]:
    rows = []
    for p in paths:
        g = load_graph(p)
        peaks = {}
        for name in applicable(g):
            peaks[name] = evaluate(g, Schedule.from_order(g, HEURISTICS[name](g))).peak
        rows.append({"graph": p.stem, "n": g.n_ops, "peaks": peaks})
    return rows


def fmt_s(x: float) -> str:
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^3 and 10^4 only")
    ap.add_argument("-o", "--output", default=str(OUT))
    args = ap.parse_args(argv)
    sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
    load_before = load()
    t0 = time.perf_counter()
    srows = scaling(sizes)
    files = sorted(DATA.glob("*/*.json")) if DATA.is_dir() else []
    qrows = quality(files)
    shipped = quality(sorted(SHIPPED.glob("*.json")))
    load_after = load()
    total = time.perf_counter() - t0

    L = ["# Orderings: evaluator and heuristics", ""]
    L.append("What: wall time and peak of the evaluator (given order: `Schedule.from_order` + `evaluate`) and of "
             "each ordering heuristic (`solvers/ordering/heuristics.py`: time to compute the order; its peak is "
             "then judged by the evaluator), and each heuristic's peak relative to the given order on real and "
             "synthetic benchmark graphs.")
    L.append("")
    L.append(f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             f"{os.cpu_count()} CPUs shared with other jobs; {load_before} before, {load_after} after "
             f"({total:.0f} s in all). Single runs, so timings carry the noise of that load.")
    L.append("")
    L.append("Reproduce: `.venv/bin/python benchmarks/bench_orderings.py" + (" --quick`" if args.quick else "`"))
    L.append("")
    L.append("## Scaling on generated graphs")
    L.append("")
    L.append("Families: `layered` = `random_layered(n, 0, width=0.3, edge_density=min(0.2, 1/mean layer width))` "
             "(Gagrani et al. construction made sparse: with the paper's density 0.2 a 10^5-node graph has "
             "~6.5M edges); `tree` = `tree(n, seed=0)` (random in-tree, Liu applies); `caterpillar` = a spine with one leaf per "
             "spine node, random sizes in [1, 100] (an in-tree on which every Liu merge meets a long segment "
             "list); `multi-output` = "
             "`random_multi_output(n, seed=0)` (1-2 outputs per op, inputs drawn from all earlier tensors, "
             "workspace, pinned input). Peaks in bytes; the ratio is peak / given-order peak.")
    L.append("")
    L.append("| family | n | edges | evaluator | given peak | " + " | ".join(NAMES[1:]) + " |")
    L.append("|---|---:|---:|---:|---:|" + "---|" * (len(NAMES) - 1))
    for r in srows:
        cells = []
        for name in NAMES[1:]:
            if name in r["h"]:
                t, p = r["h"][name]
                cells.append(f"{fmt_s(t)}; {p} ({p / r['given_peak']:.3f})")
            else:
                cells.append("n/a")
        L.append(f"| {r['family']} | {r['n']} | {r['edges']} | {fmt_s(r['from_order_s'] + r['evaluate_s'])} "
                 f"| {r['given_peak']} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Evaluator column = `Schedule.from_order` + `evaluate` of the given order. Heuristic cells: "
             "time to compute the order; peak (peak / given). `best` costs the sum of the others plus one "
             "evaluation each.")
    L.append("")

    def qtable(rows, title):
        if not rows:
            L.append(f"## {title}")
            L.append("")
            L.append("(skipped: ../shared/data/graphs is absent)")
            L.append("")
            return
        L.append(f"## {title}")
        L.append("")
        L.append("Peak of each heuristic's order divided by the peak of the given order (lower is better; "
                 "< 1 improves on the given order). `best` = the lowest of all.")
        L.append("")
        L.append("| graph | n | given peak | " + " | ".join(NAMES[1:]) + " | best |")
        L.append("|---|---:|---:|" + "---:|" * len(NAMES))
        ratios = {name: [] for name in NAMES[1:] + ["best"]}
        for r in rows:
            gp = r["peaks"]["given"]
            cells = []
            for name in NAMES[1:]:
                if name in r["peaks"]:
                    x = r["peaks"][name] / gp
                    ratios[name].append(x)
                    cells.append(f"{x:.3f}")
                else:
                    cells.append("n/a")
            b = min(r["peaks"].values()) / gp
            ratios["best"].append(b)
            L.append(f"| {r['graph']} | {r['n']} | {gp} | " + " | ".join(cells) + f" | {b:.3f} |")
        gm = []
        for name in NAMES[1:] + ["best"]:
            xs = ratios[name]
            gm.append(f"{math.exp(sum(math.log(x) for x in xs) / len(xs)):.3f}" if xs else "n/a")
        L.append("| geometric mean | | | " + " | ".join(gm) + " |")
        L.append("")
        L.append("Geometric means are over the graphs where the heuristic applies (liu: in-trees only).")
        L.append("")

    qtable(qrows, "Heuristics vs the given order on Checkmate and random layered graphs (../shared/data)")
    qtable(shipped, "Heuristics vs the given order on the shipped instances")

    L.append("## Observations (computed from the tables above)")
    L.append("")
    for r in srows:
        if "liu" in r["h"]:
            others = min(p for name, (_, p) in r["h"].items() if name != "liu")
            L.append(f"* {r['family']} n={r['n']}: Liu's optimal peak {r['h']['liu'][1]} vs best other heuristic "
                     f"{others} and given order {r['given_peak']}.")
    if qrows:
        flat = [r for r in qrows if min(r["peaks"].values()) == r["peaks"]["given"]]
        L.append(f"* Shared graphs: on {len(flat)} of {len(qrows)} no heuristic beats the given order; "
                 "the best improvement is a ratio of "
                 f"{min(min(r['peaks'].values()) / r['peaks']['given'] for r in qrows):.3f}.")
    L.append("")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text("\n".join(L) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
