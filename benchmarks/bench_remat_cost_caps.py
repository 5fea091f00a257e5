"""Caps from a known compute, side by side (docs/remat.md, "Caps from a known compute").

The cp driver without a cap (unbounded recomputation, the CLI's default) as it is (*with*: internal
cap ``DEFAULT_CP_CAP = 1``, replaced by the caps derived from a known compute when the model at
most triples, ``COST_CAPS_GROWTH = 3``) and as it was (*without*: internal cap 2, no derived caps),
alternating which runs first from row to row, in one process. Every schedule is re-checked by the evaluator (``solve_remat``), and every claim holds
for the unbounded problem (``lift_claims``).

1. Graphs: the shipped instances and the Checkmate train graphs of ../shared/data (skipped when
   absent), budgets r x P (P = the given order's peak), compute objective, free order.
2. The referee sweep: seeded tiny instances (tests/referee_strategies.py), cp without a cap, free
   and given order, every claim judged by brute force (tests/referee.py); counts by status.

    .venv/bin/python benchmarks/bench_remat_cost_caps.py --time-limit 20 --workers 2

Writes benchmarks/sections/41-remat-cost-caps.md and benchmarks/results/remat_cost_caps.jsonl.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

SHIPPED = ["unet_small", "chain_12", "multi_output_12", "tree_15", "random_layered_n30", "random_layered_n100"]
CHECKMATE = {"VGG16": "VGG16_256_2242243_train_nx.json", "VGG19": "VGG19_256_2242243_train_nx.json",
             "fcn_8": "fcn_8_vgg_32_4166083_train_nx.json", "segnet": "segnet_32_4166083_train_nx.json",
             "vgg_unet": "vgg_unet_32_4166083_train_nx.json", "MobileNet": "MobileNet_512_2242243_train_nx.json",
             "ResNet50": "ResNet50_256_2242243_train_nx.json"}
CM_DIR = ROOT.parent / "shared" / "data" / "graphs" / "checkmate"
SECTION = ROOT / "benchmarks" / "sections" / "41-remat-cost-caps.md"
RESULTS = ROOT / "benchmarks" / "results" / "remat_cost_caps.jsonl"


def graphs():
    """(name, path) of every graph present."""
    for name in SHIPPED:
        yield name, ROOT / "instances" / "shipped" / f"{name}.json"
    for name, f in CHECKMATE.items():
        if (CM_DIR / f).exists():
            yield name, CM_DIR / f


#: (DEFAULT_CP_CAP, COST_CAPS_GROWTH) of each side
SIDES = {"with": (1, 3.0), "without": (2, 0.0)}


def run_one(path, r, side, time_limit, workers):
    """One solve on a freshly loaded graph with the moment-cut bound's cache emptied, so that
    neither side reuses what the other computed."""
    import memsched.solvers.remat.cp as cp
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat import cut_bound
    from memsched.solvers.remat.dispatch import solve_remat

    cut_bound._CACHE.clear()
    g = load_graph(path)
    cp.DEFAULT_CP_CAP, cp.COST_CAPS_GROWTH = SIDES[side]
    t = time.perf_counter()
    res = solve_remat(g, r, method="cp", cap=None, order="free", time_limit=time_limit, workers=workers)
    wall = time.perf_counter() - t
    cc = res.params.get("caps_from_compute")
    return {"status": res.status, "compute": res.compute, "lower_bound": res.lower_bound, "scope": res.scope,
            "class_status": res.class_status, "gap": res.extra.get("gap"),
            "proof_s": res.extra.get("time_to_proof_s"), "wall_s": round(wall, 2),
            "caps": cc if isinstance(cc, dict) else (None if cc is None else str(cc))}


def sweep(seeds, side):
    import memsched.solvers.remat.cp as cp
    from memsched.solvers.remat.dispatch import solve_remat
    from referee import Truth, check_remat_claims
    from referee_strategies import random_tiny_graph

    cp.DEFAULT_CP_CAP, cp.COST_CAPS_GROWTH = SIDES[side]
    c = collections.Counter()
    bad = 0
    t = time.perf_counter()
    for seed in range(seeds):
        g, B = random_tiny_graph(seed, max_ops=7)
        truth = Truth(g, B)
        for order in ("free", "given"):
            res = solve_remat(g, B, method="cp", cap=None, order=order, time_limit=20)
            bad += bool(check_remat_claims(g, B, None, order, res, truth))
            opt = truth(order, None).compute
            if opt is not None and opt > g.total_cost() + 1e-9:
                c[(order, res.status)] += 1
    return c, bad, round(time.perf_counter() - t, 1)


def fmt(x, nd=1):
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ratios", default="0.9,0.8,0.7,0.6")
    ap.add_argument("--graphs", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--seeds", type=int, default=2000, help="referee sweep instances (0: skip)")
    a = ap.parse_args(argv)
    ratios = [float(x) for x in a.ratios.split(",")]
    want = None if a.graphs is None else set(a.graphs.split(","))
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    k = 0
    from memsched.instances.formats import load_graph

    for name, path in graphs():
        if want is not None and name not in want:
            continue
        g = load_graph(path)
        for r in ratios:
            load = os.getloadavg()[0]
            sides = ["with", "without"]
            if k % 2:
                sides.reverse()
            k += 1
            out = {"graph": name, "n": g.n_ops, "r": r, "load": round(load, 1), "first": sides[0]}
            for side in sides:
                out[side] = run_one(path, r, side, a.time_limit, a.workers)
            rows.append(out)
            w, wo = out["with"], out["without"]
            print(f"{name} {r}: with {w['status']} {w['compute']} lb {w['lower_bound']} ({w['wall_s']} s); "
                  f"without {wo['status']} {wo['compute']} lb {wo['lower_bound']} ({wo['wall_s']} s)", flush=True)
    sw = {}
    if a.seeds:
        for side in ("with", "without"):
            sw[side] = sweep(a.seeds, side)
            print(side, sw[side], flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        for row in rows:
            f.write(json.dumps({"started": started, "time_limit": a.time_limit, "workers": a.workers, **row}) + "\n")
    write_section(rows, sw, a, started)
    return 0


def write_section(rows, sw, a, started):
    cmd = (f"nice .venv/bin/python benchmarks/bench_remat_cost_caps.py --time-limit {a.time_limit:g} "
           f"--workers {a.workers} --ratios {a.ratios} --seeds {a.seeds}" + (f" --graphs {a.graphs}" if a.graphs else ""))
    L = ["## Remat without a cap: caps from a known compute (docs/remat.md)", "",
         f"Measured {started} with `{cmd}` (results: benchmarks/results/remat_cost_caps.jsonl). "
         "`memsched remat` without `--cap` (unbounded recomputation, free order, compute objective) through "
         f"`solve_remat(method='cp')`, {a.time_limit:g} s and {a.workers} CP-SAT worker(s) per run. *with*: the "
         "driver as is (internal cap 1; the caps derived from the compute of the first schedule within B "
         "replace it when the model at most triples); *without*: the driver before, internal cap 2 and no "
         "derived caps (`DEFAULT_CP_CAP = 2`, `COST_CAPS_GROWTH = 0`). The two run one after the other on each row, alternating which goes first "
         "(column *first*), each on a freshly loaded graph with the moment-cut bound's cache emptied; 1-minute load average at the start of the row. Every status and lower bound is a "
         "claim about the unbounded problem; `(c)` after a status marks a class optimum of the capped class "
         "(capped:1 or capped:2) that is not a claim. Budgets: floor(r x P), P = the given order's peak.", "",
         "| graph | n | r | with: status | with: compute | with: lower bound | with: proof s | derived caps (max / slots) "
         "| without: status | without: compute | without: lower bound | without: proof s | first | load |",
         "|---|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|---:|"]
    for row in rows:
        w, wo = row["with"], row["without"]
        caps = w["caps"]
        cs = "-" if caps is None else (f"{caps['max_cap']} / {caps['slots']} (vs {caps['slots_internal_cap']})"
                                      if isinstance(caps, dict) else caps)
        ws, wos = (x["status"] + (" (c)" if x["class_status"] == "optimal" and x["status"] != "optimal" else "")
                   for x in (w, wo))
        L.append(f"| {row['graph']} | {row['n']} | {row['r']} | {ws} | {fmt(w['compute'], 0)} | "
                 f"{fmt(w['lower_bound'], 0)} | {fmt(w['proof_s'])} | {cs} | {wos} | {fmt(wo['compute'], 0)} | "
                 f"{fmt(wo['lower_bound'], 0)} | {fmt(wo['proof_s'])} | {row['first']} | {row['load']} |")
    opt_w = sum(r["with"]["status"] == "optimal" for r in rows)
    opt_wo = sum(r["without"]["status"] == "optimal" for r in rows)
    dec_w = sum(r["with"]["status"] in ("optimal", "infeasible") for r in rows)
    dec_wo = sum(r["without"]["status"] in ("optimal", "infeasible") for r in rows)
    L += ["", f"* Rows: {len(rows)}. Proven optimal for the unbounded problem: {opt_w} with, {opt_wo} without; "
              f"decided (optimal or infeasible): {dec_w} with, {dec_wo} without."]
    if sw:
        L += ["", f"Referee sweep: {a.seeds} seeded tiny instances (1-7 operators) x order free, given; cp without a "
                  "cap, 20 s limit, 1 worker; every claim judged by brute force. Counts over the instances whose "
                  "unbounded optimum recomputes:", "",
              "| side | order | optimal | feasible | other | disagreements (all instances) | wall s |",
              "|---|---|---:|---:|---:|---:|---:|"]
        for side, (c, bad, wall) in sw.items():
            for order in ("free", "given"):
                tot = sum(v for (o, _s), v in c.items() if o == order)
                L.append(f"| {side} | {order} | {c[(order, 'optimal')]} | {c[(order, 'feasible')]} | "
                         f"{tot - c[(order, 'optimal')] - c[(order, 'feasible')]} | {bad} | {wall} |")
    SECTION.write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    sys.exit(main())
