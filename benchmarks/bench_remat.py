"""Rematerialization benchmark: memsched CP and MILP side by side with Moccasin.

Runs memsched's free-order CP-SAT model (``cp``) and Checkmate's fixed-order
MILP (``milp``, HiGHS) on every ``_train`` graph of ../shared/data/graphs and
on random_layered n100/n250, at budgets ratio x the given order's peak, with
C = 2 computations per operator (``cap=1``), and writes
benchmarks/sections/40-remat.md.

Moccasin (haoming-codes/moccasin) is GPL code that must not enter this
repository: it is run from a scratch checkout by a separate runner, whose
JSON lines (one per graph and ratio: status, compute, peak, overhead_pct,
time_to_best_s, wall_s) are passed with ``--moccasin FILE``; the section
shows them next to ours.

    .venv/bin/python benchmarks/bench_remat.py [--quick] [--ratios 0.9 0.8] [--moccasin results.jsonl]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "graphs"

TRAIN = ["VGG16_256_2242243_train_nx.json", "VGG19_256_2242243_train_nx.json", "fcn_8_vgg_32_4166083_train_nx.json",
         "segnet_32_4166083_train_nx.json", "vgg_unet_32_4166083_train_nx.json", "MobileNet_512_2242243_train_nx.json",
         "ResNet50_256_2242243_train_nx.json"]
RL = ["random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json", "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json"]
MILP_MAX_OPS = 200  # the stage MILP's Pyomo build alone exceeds the time limit beyond this


def short(name: str) -> str:
    return name.split("_nx")[0].replace("_256_2242243", "").replace("_32_4166083", "").replace("_512_2242243", "") \
        .replace("_w0.27_nlv0.75_ed0.2_scd0.14.json", "").replace("_w0.43_nlv0.75_ed0.2_scd0.14.json", "")


def load():
    return float(open("/proc/loadavg").read().split()[0]) if os.path.exists("/proc/loadavg") else None


def run_one(path, ratio, method, time_limit, workers):
    from memsched.instances import load_graph
    from memsched.solvers.remat.dispatch import given_peak, solve_remat

    g = load_graph(path)
    # Moccasin's protocol rounds the ratio budget up (memsched's own rule, formulations.ratio_budget,
    # rounds down): both sides of this comparison get the same ceil(r x P) bytes
    B = int(math.ceil(ratio * given_peak(g) - 1e-9))
    t0 = time.perf_counter()
    r = solve_remat(g, B, method=method, cap=1, time_limit=time_limit, workers=workers)
    wall = time.perf_counter() - t0
    base = g.total_cost()
    ttb = r.extra.get("time_to_best_s") if method == "cp" else None
    if r.schedule is not None and ttb is None:
        ttb = round(wall, 2)  # no incumbent log: the whole run is an upper bound
    return {"graph": short(path.name), "ratio": ratio, "method": method, "budget": B, "status": r.status,
            "peak": r.peak, "compute": r.compute, "overhead_pct": None if r.compute is None else 100 * (r.compute - base) / base,
            "lower_bound": r.lower_bound, "time_to_best_s": ttb, "wall_s": round(wall, 2), "message": r.message,
            "load": load()}


def fmt_ov(r):
    if r is None:
        return "not run"
    if r.get("overhead_pct") is None:
        st = r.get("status", "?").lower()
        return {"unknown": "no solution", "timeout": "no solution"}.get(st, st)
    return f"+{r['overhead_pct']:.3f}%"


def fmt_st(r):
    if r is None:
        return "-"
    st = str(r.get("status", "")).lower()
    return st


def write_section(rows, mocc, args, path):
    lines = ["## Rematerialization: memsched CP / MILP vs Moccasin", "",
             "What: least compute with peak <= B = ceil(r x P) (P = peak of the given order, Moccasin's protocol), "
             "at most C = 2 computations per operator (`--cap 1`). memsched `cp` = free-order CP-SAT interval model "
             "(formulations/remat_cpsat.py), `milp` = Checkmate's fixed-order stage MILP with HiGHS "
             "(formulations/remat_milp.py); Moccasin = haoming-codes/moccasin run from a scratch checkout with local "
             "patches for ortools 9.15 / networkx 3.6 (rockmate import dropped, generators listed for AddCumulative, "
             "`clear_objective()`, `Solve(model, callback)`), fixed given order (`use_stage=True`), 60 s per phase.",
             "",
             f"Machine: 2 CPU cores shared with other jobs (1-minute load average {min(r['load'] for r in rows if r['load']):.1f}"
             f"-{max(r['load'] for r in rows if r['load']):.1f} during our runs), CP-SAT with {args.workers} worker(s) for both "
             f"memsched and Moccasin, time limit {args.time_limit:g} s per solve for memsched (model build and warm starts "
             "included).", "",
             f"Reproduce: `.venv/bin/python benchmarks/bench_remat.py --ratios {' '.join(map(str, args.ratios))} "
             f"--time-limit {args.time_limit:g} --workers {args.workers} --moccasin MOCCASIN.jsonl`", "",
             "Columns: overhead = extra compute over the no-recompute baseline; time to best = seconds from the call "
             "to the best schedule found (for the MILP, whose solver reports no incumbent times, its total wall time); "
             "status optimal = proven within the method's model (MILP: among schedules that keep the given order).", "",
             "| graph | r | budget B | memsched CP | status | peak | t best (s) | MILP | status | t best (s) | Moccasin | status | t best (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    by = {(r["graph"], r["ratio"], r["method"]): r for r in rows}
    keys = sorted({(r["graph"], r["ratio"]) for r in rows}, key=lambda k: (k[0], -k[1]))
    ttb_cp, ttb_mo, better, worse, eq = [], [], 0, 0, 0
    for gname, ratio in keys:
        c, m = by.get((gname, ratio, "cp")), by.get((gname, ratio, "milp"))
        mo = mocc.get((gname, ratio))
        B = c["budget"] if c else m["budget"]
        lines.append(f"| {gname} | {ratio} | {B} | {fmt_ov(c)} | {fmt_st(c)} | {c['peak'] if c and c['peak'] else '-'} | "
                     f"{c['time_to_best_s'] if c and c['time_to_best_s'] is not None else '-'} | {fmt_ov(m)} | {fmt_st(m)} | "
                     f"{m['time_to_best_s'] if m and m.get('time_to_best_s') is not None else '-'} | {fmt_ov(mo)} | {fmt_st(mo)} | "
                     f"{mo.get('time_to_best_s') if mo and mo.get('time_to_best_s') is not None else '-'} |")
        if c and mo and c.get("overhead_pct") is not None and mo.get("overhead_pct") is not None:
            d = c["overhead_pct"] - mo["overhead_pct"]
            better += d < -1e-9
            worse += d > 1e-9
            eq += abs(d) <= 1e-9
            if c["time_to_best_s"] is not None and mo.get("time_to_best_s"):
                ttb_cp.append(c["time_to_best_s"])
                ttb_mo.append(mo["time_to_best_s"])
    lines.append("")
    if ttb_cp:
        mc, mm = statistics.median(ttb_cp), statistics.median(ttb_mo)
        lines.append(f"Where both found a schedule ({len(ttb_cp)} instances): memsched CP overhead lower on {better}, equal "
                     f"on {eq}, higher on {worse}; median time to best {mc:.2f} s vs Moccasin {mm:.2f} s "
                     f"(ratio {mc / mm:.3f}).")
    solved_cp = sum(1 for r in rows if r["method"] == "cp" and r["status"] in ("optimal", "feasible", "infeasible"))
    n_cp = sum(1 for r in rows if r["method"] == "cp")
    lines.append(f"memsched CP answered {solved_cp}/{n_cp} instances (optimal, feasible with a bound, or certified "
                 "infeasible with its reason) within the limit.")
    inf = [r for r in rows if r["method"] == "cp" and r["status"] == "infeasible"]
    for r in inf:
        lines.append(f"* {r['graph']} at {r['ratio']}: infeasible: {r['message']}")
    if args.notes:
        lines += ["", "Notes:"] + [f"* {n}" for n in args.notes]
    lines.append("")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n100 and VGG19 only, 20 s limit")
    ap.add_argument("--ratios", type=float, nargs="+", default=[0.9, 0.8])
    ap.add_argument("--graphs", nargs="*", help="substrings selecting graphs")
    ap.add_argument("--methods", nargs="+", default=["cp", "milp"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--moccasin", help="JSON lines from the Moccasin runner")
    ap.add_argument("--jsonl", default=str(ROOT / "benchmarks" / "results" / "remat.jsonl"), help="raw rows (appended)")
    ap.add_argument("--section", default=str(ROOT / "benchmarks" / "sections" / "40-remat.md"))
    ap.add_argument("--from-jsonl", action="store_true", help="only rebuild the section from --jsonl")
    ap.add_argument("--notes", nargs="*", default=[], help="lines appended to the section")
    args = ap.parse_args(argv)
    if not DATA.exists():
        print("../shared/data is absent: nothing to benchmark", file=sys.stderr)
        return 0
    files = [DATA / "checkmate" / f for f in TRAIN] + [DATA / "random_layered" / f for f in RL]
    if args.quick:
        files = [DATA / "random_layered" / RL[0], DATA / "checkmate" / TRAIN[1]]
        args.time_limit = min(args.time_limit, 20.0)
    if args.graphs:
        files = [f for f in files if any(s in f.name for s in args.graphs)]
    Path(args.jsonl).parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if args.from_jsonl and Path(args.jsonl).exists():
        rows = [json.loads(l) for l in open(args.jsonl) if l.strip()]
    else:
        with open(args.jsonl, "a") as out:
            for f in files:
                for ratio in args.ratios:
                    for method in args.methods:
                        from memsched.instances import load_graph

                        if method == "milp" and load_graph(f).n_ops > MILP_MAX_OPS:
                            continue
                        r = run_one(f, ratio, method, args.time_limit, args.workers)
                        rows.append(r)
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                        print(f"{r['graph']:24s} {ratio} {method:5s} {r['status']:10s} {fmt_ov(r):>12s} "
                              f"ttb {r['time_to_best_s']} wall {r['wall_s']} load {r['load']}", flush=True)
    mocc = {}
    if args.moccasin and Path(args.moccasin).exists():
        for l in open(args.moccasin):
            if l.strip():
                d = json.loads(l)
                mocc[(short(d["graph"]), d["ratio"])] = d
    write_section(rows, mocc, args, args.section)
    print(f"wrote {args.section}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
