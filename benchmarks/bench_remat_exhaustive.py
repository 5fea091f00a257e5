"""The exhaustive search for small graphs in the cp driver, side by side (docs/remat.md,
"Exhaustive search for small graphs").

The cp driver as it is (*with*: ``EXHAUSTIVE_SHARE = 0.1``) and without the search (*without*:
``EXHAUSTIVE_SHARE = 0``, the driver before), alternating which runs first from row to row, in
one process, each on a freshly loaded graph with the moment-cut bound's cache emptied. Every
schedule is re-checked by the evaluator (``solve_remat``) and every claim holds for the asked
problem (``lift_claims``).

Rows: the shipped graphs the search applies to (at most ``exhaustive.MAX_OPS`` operators and
``MAX_TENSORS`` tensors), budgets r x P (P = the given order's peak), compute objective, in
three classes: no cap and free order (the CLI's default), ``--cap 1`` free, ``--cap 1 --order
given`` (Moccasin's class). Then ``--generated N`` random DAGs of 22 operators
(``instances.generators.random_dag(22, seed=s)``, s < N) at ``--generated-ratios``, the same
three classes. Then the peak objective (least peak with compute at most (1 + eps) x baseline)
on the shipped graphs at ``--peak-eps``, without a cap and with ``--cap 1``, free order.

    .venv/bin/python benchmarks/bench_remat_exhaustive.py --time-limit 20 --workers 2

Writes benchmarks/sections/42-remat-exhaustive.md and benchmarks/results/remat_exhaustive.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_remat_cost_caps import fmt  # noqa: E402 - the same table cells

SHIPPED = ["unet_small", "chain_12", "multi_output_12", "tree_15", "random_layered_n30"]
CLASSES = [(None, "free"), (1, "free"), (1, "given")]
SECTION = ROOT / "benchmarks" / "sections" / "42-remat-exhaustive.md"
RESULTS = ROOT / "benchmarks" / "results" / "remat_exhaustive.jsonl"
SIDES = {"with": 0.1, "without": 0.0}


def load(path):
    """A shipped graph by path, or a generated one by ("random_dag", n, seed)."""
    from memsched.instances.formats import load_graph
    from memsched.instances.generators import random_dag

    return random_dag(path[1], seed=path[2]) if isinstance(path, tuple) else load_graph(path)


def run_one(path, r, cap, order, side, time_limit, workers, eps=None):
    import memsched.solvers.remat.cp as cp
    from memsched.solvers.remat import cut_bound
    from memsched.solvers.remat.dispatch import solve_remat

    cut_bound._CACHE.clear()
    g = load(path)
    cp.EXHAUSTIVE_SHARE = SIDES[side]
    t = time.perf_counter()
    if eps is None:
        res = solve_remat(g, r, method="cp", cap=cap, order=order, time_limit=time_limit, workers=workers)
    else:
        res = solve_remat(g, None, method="cp", cap=cap, order=order, objective="peak", eps=eps,
                          time_limit=time_limit, workers=workers)
    wall = time.perf_counter() - t
    ex = res.params.get("exhaustive")
    return {"status": res.status, "compute": res.compute, "peak": res.peak, "lower_bound": res.lower_bound,
            "scope": res.scope,
            "proof_s": res.extra.get("time_to_proof_s"), "wall_s": round(wall, 2), "exhaustive": ex}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ratios", default="0.9,0.8,0.7,0.6")
    ap.add_argument("--graphs", default=None, help="comma-separated shipped names (default: all that apply)")
    ap.add_argument("--generated", type=int, default=8, help="random DAGs of 22 operators, seeds 0..N-1")
    ap.add_argument("--generated-ratios", default="0.7")
    ap.add_argument("--peak-eps", default="0,0.1,0.3", help="extra compute allowed in the peak-objective rows")
    a = ap.parse_args(argv)
    from memsched.solvers.remat.exhaustive import fits_exhaustive

    ratios = [float(x) for x in a.ratios.split(",")]
    want = None if a.graphs is None else set(a.graphs.split(","))
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows, k = [], 0
    todo = [(name, ROOT / "instances" / "shipped" / f"{name}.json", ratios) for name in SHIPPED
            if want is None or name in want]
    todo += [(f"random_dag22_s{s}", ("random_dag", 22, s), [float(x) for x in a.generated_ratios.split(",")])
             for s in range(a.generated)]
    for name, path, rs in todo:
        g = load(path)
        if not fits_exhaustive(g):
            continue
        for cap, order in CLASSES:
            for r in rs:
                sides = ["with", "without"] if k % 2 == 0 else ["without", "with"]
                k += 1
                out = {"graph": name, "n": g.n_ops, "r": r, "cap": cap, "order": order,
                       "load": round(os.getloadavg()[0], 1), "first": sides[0]}
                for side in sides:
                    out[side] = run_one(path, r, cap, order, side, a.time_limit, a.workers)
                rows.append(out)
                w, wo = out["with"], out["without"]
                print(f"{name} cap={cap} {order} {r}: with {w['status']} {w['compute']} lb {w['lower_bound']} "
                      f"({w['wall_s']} s); without {wo['status']} {wo['compute']} lb {wo['lower_bound']} "
                      f"({wo['wall_s']} s)", flush=True)
    peak_rows = []
    for name in SHIPPED:
        path = ROOT / "instances" / "shipped" / f"{name}.json"
        if (want is not None and name not in want) or not fits_exhaustive(load(path)):
            continue
        for cap in (None, 1):
            for eps in [float(x) for x in a.peak_eps.split(",")]:
                sides = ["with", "without"] if k % 2 == 0 else ["without", "with"]
                k += 1
                out = {"graph": name, "n": load(path).n_ops, "eps": eps, "cap": cap, "order": "free",
                       "objective": "peak", "load": round(os.getloadavg()[0], 1), "first": sides[0]}
                for side in sides:
                    out[side] = run_one(path, None, cap, "free", side, a.time_limit, a.workers, eps=eps)
                peak_rows.append(out)
                w, wo = out["with"], out["without"]
                print(f"{name} peak cap={cap} eps={eps}: with {w['status']} {w['peak']} lb {w['lower_bound']} "
                      f"({w['wall_s']} s); without {wo['status']} {wo['peak']} lb {wo['lower_bound']} "
                      f"({wo['wall_s']} s)", flush=True)
    rows += peak_rows
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        for row in rows:
            f.write(json.dumps({"started": started, "time_limit": a.time_limit, "workers": a.workers, **row}) + "\n")
    write_section(rows, a, started)
    return 0


def search_cell(ex) -> str:
    """What the search of a *with* run ended with: status / states / seconds, or "-"."""
    return "-" if not ex else f"{ex['status']} / {ex['states']} / {ex['s']:.2f}"


def write_section(rows, a, started):
    cmd = (f"nice .venv/bin/python benchmarks/bench_remat_exhaustive.py --time-limit {a.time_limit:g} "
           f"--workers {a.workers} --ratios {a.ratios} --generated {a.generated} --generated-ratios "
           f"{a.generated_ratios} --peak-eps {a.peak_eps}" + (f" --graphs {a.graphs}" if a.graphs else ""))
    L = ["## Exhaustive search for small graphs (docs/remat.md)", "",
         f"Measured {started} with `{cmd}` (results: benchmarks/results/remat_exhaustive.jsonl). "
         f"`solve_remat(method='cp')`, {a.time_limit:g} s and {a.workers} CP-SAT worker(s) per run, compute "
         "objective. *with*: the driver as is (`EXHAUSTIVE_SHARE = 0.1`); *without*: the driver without the "
         "search (`EXHAUSTIVE_SHARE = 0`, as before 2026-12-05 evening). The two run one after the other on "
         "each row, alternating which goes first (column *first*), each on a freshly loaded graph with the "
         "moment-cut bound's cache emptied; 1-minute load average at the start of the row. Every status and "
         "lower bound is a claim about the asked problem (cap and order as listed; cap `-` = unbounded). "
         "*search*: what the exhaustive search of the *with* side ended with (`-`: not run, the row was "
         "decided before it). Budgets: floor(r x P), P = the given order's peak. `random_dag22_s<k>`: "
         "`instances.generators.random_dag(22, seed=k)`, generated in the run.", "",
         "| graph | n | cap | order | r | with: status | with: compute | with: lower bound | with: proof s "
         "| search: status / states / s | without: status | without: compute | without: lower bound "
         "| without: proof s | first | load |",
         "|---|---:|---|---|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|---:|"]
    peak_rows = [r for r in rows if r.get("objective") == "peak"]
    rows = [r for r in rows if r.get("objective") != "peak"]
    for row in rows:
        w, wo = row["with"], row["without"]
        es = search_cell(w["exhaustive"])
        L.append(f"| {row['graph']} | {row['n']} | {fmt(row['cap'])} | {row['order']} | {row['r']} | {w['status']} | "
                 f"{fmt(w['compute'], 0)} | {fmt(w['lower_bound'], 0)} | {fmt(w['proof_s'])} | {es} | {wo['status']} | "
                 f"{fmt(wo['compute'], 0)} | {fmt(wo['lower_bound'], 0)} | {fmt(wo['proof_s'])} | {row['first']} | "
                 f"{row['load']} |")

    def decided(side):
        return sum(r[side]["status"] in ("optimal", "infeasible") for r in rows)

    both = [r for r in rows if r["with"]["proof_s"] is not None and r["without"]["proof_s"] is not None]
    L += ["", f"* Rows: {len(rows)}. Decided (optimal or infeasible): {decided('with')} with, "
              f"{decided('without')} without.",
          f"* Rows the search ran on: {sum(bool(r['with']['exhaustive']) for r in rows)}; rows both decide: "
          f"{len(both)}, summed time to proof {sum(r['with']['proof_s'] for r in both):.1f} s with, "
          f"{sum(r['without']['proof_s'] for r in both):.1f} s without."]
    for r in rows:
        if r["with"]["status"] in ("optimal", "infeasible") and r["without"]["status"] in ("optimal", "infeasible"):
            same = r["with"]["status"] == r["without"]["status"] and (
                r["with"]["compute"] is None or abs(r["with"]["compute"] - r["without"]["compute"]) <= 1e-9)
            if not same:
                L.append(f"* DISAGREEMENT: {r['graph']} cap={r['cap']} {r['order']} {r['r']}")
    if peak_rows:
        L += ["", "Peak objective (least peak with compute at most (1 + eps) x baseline; free order; the same "
                  "sides, time limit and alternation). *search*: the bisection on the budget "
                  "(`exhaustive.least_peak_exact`) of the *with* side.", "",
              "| graph | n | cap | eps | with: status | with: peak | with: lower bound | with: wall s "
              "| search: status / states / s | without: status | without: peak | without: lower bound "
              "| without: wall s | first | load |",
              "|---|---:|---|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|---:|"]
        for row in peak_rows:
            w, wo = row["with"], row["without"]
            es = search_cell(w["exhaustive"])
            L.append(f"| {row['graph']} | {row['n']} | {fmt(row['cap'])} | {row['eps']} | {w['status']} | "
                     f"{fmt(w['peak'])} | {fmt(w['lower_bound'], 0)} | {w['wall_s']} | {es} | {wo['status']} | "
                     f"{fmt(wo['peak'])} | {fmt(wo['lower_bound'], 0)} | {wo['wall_s']} | {row['first']} | "
                     f"{row['load']} |")
        for r in peak_rows:
            if r["with"]["status"] == r["without"]["status"] == "optimal" and r["with"]["peak"] != r["without"]["peak"]:
                L.append(f"* DISAGREEMENT: {r['graph']} peak cap={r['cap']} eps={r['eps']}")
        L.append(f"* Peak rows: {len(peak_rows)}; optimal: {sum(r['with']['status'] == 'optimal' for r in peak_rows)} "
                 f"with, {sum(r['without']['status'] == 'optimal' for r in peak_rows)} without; summed wall "
                 f"{sum(r['with']['wall_s'] for r in peak_rows):.1f} s with, "
                 f"{sum(r['without']['wall_s'] for r in peak_rows):.1f} s without.")
    SECTION.write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    sys.exit(main())
