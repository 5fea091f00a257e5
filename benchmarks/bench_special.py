"""Benchmark of the special-class solvers (issue 5); writes benchmarks/sections/50-special.md.

1. Knapsack gadgets with 10..2000 items: the exact DP (sp-knapsack) vs the MILP
   and CP referees (time limit per solve, default 20 s). Once a referee fails to
   finish at some size it is not run on larger sizes (stated in the table).
2. 500 random instances of the sp-knapsack class: DP vs MILP vs CP optima.
3. Width DP vs MILP on random instances of width <= 8.
4. 3-PARTITION gadgets (caps 1 and 2): the MILP referee vs the known answer.

    .venv/bin/python benchmarks/bench_special.py [--quick] [--time-limit 20]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from memsched.instances.gadgets import knapsack_gadget, random_knapsack, random_three_partition, three_partition_gadget  # noqa: E402
from memsched.solvers.special import sp_knapsack, width_dp  # noqa: E402
from memsched.solvers.remat.dispatch import solve_remat  # noqa: E402


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1].strip()
    except OSError:
        return "?"


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def fmt_t(x):
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def bench_gadgets(sizes, tl, lines):
    lines += ["## Knapsack gadgets: DP vs MILP vs CP", "",
              f"Compute objective (least compute within B = H + W), items with sizes 1..50 and costs 1..20, "
              f"W = half the total size, seed = n, cap 1. MILP/CP time limit {tl:g} s each (wall time includes model "
              "building). Ratio = referee time / DP time ('>=' when the referee did not prove its answer).", "",
              "| items | operators | DP s | DP compute | MILP s | MILP | CP s | CP | MILP/DP | CP/DP |",
              "|---:|---:|---:|---:|---:|---|---:|---|---:|---:|"]
    dead = {"milp": None, "cp": None}
    for n in sizes:
        items, W = random_knapsack(n, n)
        g, ans = knapsack_gadget(items, W, "compute")
        r, tdp = timed(lambda: sp_knapsack.solve(g, ans["budget"], cap=1))
        assert r.status == "optimal" and r.compute == ans["optimum"]
        row = [str(n), str(g.n_ops), fmt_t(tdp), f"{r.compute:g}"]
        ratios = []
        for m in ("milp", "cp"):
            if dead[m] is not None:
                row += ["-", f"not run (not proven at n={dead[m]})"]
                ratios.append("-")
                continue
            try:
                rr, tt = timed(lambda: solve_remat(g, ans["budget"], method=m, cap=1, time_limit=tl))
                st = rr.status
                ok = st == "optimal" and abs(rr.compute - ans["optimum"]) < 1e-6
                desc = f"optimal = {rr.compute:g}" if ok else (f"{st}" + (f", compute {rr.compute:g}" if rr.compute else ""))
                if st != "optimal":
                    dead[m] = n
                if st == "optimal" and not ok:
                    desc += f" MISMATCH (known {ans['optimum']})"
            except Exception as e:  # a referee crash is a finding, not a benchmark failure
                tt, st, desc = float("nan"), "error", f"error: {type(e).__name__}: {str(e)[:60]}"
                dead[m] = n
            row += [fmt_t(tt), desc]
            ratios.append(("" if st == "optimal" else ">= ") + f"{tt / tdp:.0f}x" if tt == tt else "-")
        row += ratios
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], flush=True)
    lines.append("")
    only = [m for m, v in dead.items() if v is not None]
    if only:
        lines.append("Where a referee does not prove its answer within the limit, only the DP finishes: "
                     + "; ".join(f"{m.upper()} from n = {dead[m]}" for m in only) + ".")
    else:
        lines.append("All three finished at every size measured.")
    lines.append("")


def bench_class(count, tl, lines):
    from test_special_knapsack import _class_cases

    cases = _class_cases(count, start=10_000)
    agree = {"milp": 0, "cp": 0}
    other = {"milp": [], "cp": []}
    tsum = {"dp": 0.0, "milp": 0.0, "cp": 0.0}
    rec = 0
    for g, caps, B, seed in cases:
        r, t = timed(lambda: sp_knapsack.solve(g, B, cap=caps))
        tsum["dp"] += t
        rec += r.compute > g.total_cost()
        for m in ("milp", "cp"):
            rr, tt = timed(lambda: solve_remat(g, B, method=m, cap=caps, time_limit=tl))
            tsum[m] += tt
            if rr.status == "optimal" and abs(rr.compute - r.compute) < 1e-6:
                agree[m] += 1
            else:
                other[m].append((seed, rr.status, rr.compute, r.compute))
    lines += ["## Random instances of the sp-knapsack class: DP vs MILP vs CP", "",
              f"{count} instances (tests/test_special_brute.py `random_class_instance`, seeds from 10000, kept when the "
              f"all-recompute limit is below the no-recompute peak; budget uniform in between; caps 0/1/2). "
              f"{rec} of them need recomputation at the optimum.", "",
              "| referee | same optimum as the DP | other | total time s | DP total time s |", "|---|---:|---|---:|---:|"]
    for m in ("milp", "cp"):
        lines.append(f"| {m.upper()} | {agree[m]}/{count} | {other[m][:3] or '-'} | {tsum[m]:.1f} | {tsum['dp']:.2f} |")
    lines.append("")
    print("\n".join(lines[-4:]), flush=True)


def bench_width(count, tl, lines):
    from test_special_width import _cases

    cases = _cases(count, start=5000)
    agree = 0
    bad = []
    tdp = tm = 0.0
    widths = []
    for g, caps, B, seed in cases:
        widths.append(width_dp.width(g, caps))
        r, t = timed(lambda: width_dp.solve(g, B, cap=caps))
        tdp += t
        rr, t2 = timed(lambda: solve_remat(g, B, method="milp", cap=caps, time_limit=tl))
        tm += t2
        same = r.status == rr.status and (r.status != "optimal" or abs(r.compute - rr.compute) < 1e-6)
        agree += same
        if not same:
            bad.append((seed, r.status, r.compute, rr.status, rr.compute))
    lines += ["## Width DP vs MILP (given-order class)", "",
              f"{count} random small DAGs (multi-output operators, workspace, caps 0..2) of width <= 8 "
              f"(max width seen {max(widths)}), budgets mostly below the given order's no-recompute peak.", "",
              "| same status and optimum | disagreements | width-DP total s | MILP total s |", "|---:|---|---:|---:|",
              f"| {agree}/{count} | {bad[:3] or '-'} | {tdp:.2f} | {tm:.1f} |", ""]
    print("\n".join(lines[-4:]), flush=True)


def bench_3partition(tl, lines, quick):
    tl = 3 * tl  # the cap-2 instances need longer; still bounded
    lines += ["## 3-PARTITION gadgets: MILP referee vs the known answer", "",
              "Given-order semantics (docs/reductions.md section 4). Known answer from exact 3-partition search; "
              f"MILP time limit {tl:g} s.", "",
              "| numbers | cap | operators | answer | known optimum | MILP status | MILP compute | MILP s |",
              "|---|---:|---:|---|---:|---|---:|---:|"]
    cases = [([10, 10, 10], 1), ([10, 10, 10], 2), (random_three_partition(6, 0), 1), (random_three_partition(6, 1), 1)]
    if not quick:
        cases += [(random_three_partition(6, 0), 2), (random_three_partition(6, 1), 2)]
    for nums, cap in cases:
        g, ans = three_partition_gadget(nums, cap=cap)
        rr, t = timed(lambda: solve_remat(g, ans["budget"], method="milp", cap=cap, time_limit=tl))
        lines.append(f"| {nums} | {cap} | {g.n_ops} | {ans['answer']} | {ans['optimum'] if ans['optimum'] else 'infeasible'} "
                     f"| {rr.status} | {rr.compute if rr.compute is not None else '-'} | {fmt_t(t)} |")
        print(lines[-1], flush=True)
    lines.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=20.0)
    a = ap.parse_args()
    tl = a.time_limit
    sizes = [10, 50, 200, 2000] if a.quick else [10, 20, 50, 100, 200, 500, 1000, 2000]
    lines = ["# Special classes: series-parallel knapsack DP, width DP, gadgets", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared); "
             f"load average at start: {load()}.", "",
             f"Reproduce: `.venv/bin/python benchmarks/bench_special.py{' --quick' if a.quick else ''}` "
             f"(MILP = HiGHS via Pyomo, CP = CP-SAT, 1 worker, as dispatched by memsched.solvers.remat.dispatch).", ""]
    bench_gadgets(sizes, tl, lines)
    bench_class(100 if a.quick else 500, tl, lines)
    bench_width(40 if a.quick else 150, tl, lines)
    bench_3partition(tl, lines, a.quick)
    lines += [f"Load average at end: {load()}.", ""]
    out = ROOT / "benchmarks" / "sections" / "50-special.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
