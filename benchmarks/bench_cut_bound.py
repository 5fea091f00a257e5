"""The moment-cut covering bound with and without its single-row LP stage (section 28-cut-bound).

``cut_cover_bound`` (solvers/remat/cut_bound.py, docs/remat.md "Single-row LP bound")
first takes the best Dantzig LP of single covering rows over the most demanding
moments, then solves the covering program round by round. This script runs the bound
both ways on the same graphs and budgets in one process, side by side (with the LP
stage, then with ``SINGLE_ROW_MOMENTS = 0``, alternating which goes first per row),
free order, unbounded recomputation, and records per run: the proven extra compute at
the end, the first positive bound and when it came, and the wall time.

Graphs: forward/backward training chains of 1,000 and 5,000 layers (2,000 and 10,000
operators; tests/test_remat_properties.train_chain, seed 0) at r x the given order's
peak, and two shipped corpus graphs (ResNet-50 b2, GPT-2 small b1 s128) at
F + r x (P - F) (F: the final-state floor, P: the best heuristic order's peak), as in
section 27.

    .venv/bin/python benchmarks/bench_cut_bound.py [--time-limit 10] [--no-write]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
SECTION = ROOT / "benchmarks" / "sections" / "28-cut-bound.md"
RESULTS = ROOT / "benchmarks" / "results" / "cut_bound.jsonl"


#: what the measurements say (written after reading them; keep in step with the table)
NOTES = [
    "",
    "Reading (run of 2026-12-01, load about 1):",
    "",
    "* The LP stage changes no final bound within 10 s (the covering program reaches the same value): what it "
    "buys is the time to the first bound, 0.5-0.6 s against 6.4 s on the 10,000-operator chains (about 11x; "
    "0.64 against 7.8-7.9 s in an earlier run of the same script), 0.1 s against 1.1-2.3 s on the 2,000-operator "
    "ones, and the first bound is already the final one or within 2 of it. On ResNet-50 the first LP bound is weaker than the program's first round (the program "
    "is solved in a tenth of a second there); it matters only when the time share is small, as in the claims "
    "path (5 s) and solve_scale on large graphs.",
    "* On GPT-2 small no moment forces recomputation at these budgets (`tight` 0): the bound is 0 with or without "
    "the LP stage. The moment-cut argument needs a moment whose must-keep tensors exceed B; transformer training "
    "graphs have none here (section 27's transformer rows get their bounds elsewhere).",
]


def instances():
    from memsched.formulations import Schedule, evaluate
    from memsched.instances import load_graph
    from memsched.solvers.ordering.dispatch import solve_order
    from memsched.solvers.remat.scale import final_state_floor
    from test_remat_properties import train_chain

    for k in (1000, 5000):
        g = train_chain(k, 0)
        P = evaluate(g, Schedule.from_order(g, g.given_order())).peak
        for r in (0.5, 0.2):
            yield f"train_chain k={k}", g, r, "r x P", int(r * P)
    for name in ("resnet50_b2", "gpt2_small_b1_s128"):
        g = load_graph(ROOT / "instances" / "shipped" / "corpus" / f"{name}_train.json.gz")
        P, F = solve_order(g, method="best").peak, final_state_floor(g)
        for r in (0.8, 0.4, 0.2):
            yield name, g, r, "F + r (P - F)", int(F + r * (P - F))


def run_one(g, B, single: bool, time_limit: float) -> dict:
    import memsched.solvers.remat.cut_bound as cb

    keep = cb.SINGLE_ROW_MOMENTS
    cb.SINGLE_ROW_MOMENTS = keep if single else 0
    try:
        t = time.perf_counter()
        out = cb.cut_cover_bound(g, B, None, "free", time_limit=time_limit)
        wall = time.perf_counter() - t
    finally:
        cb.SINGLE_ROW_MOMENTS = keep
    first = next(((v, s) for v, _what, s in out.checks if v > 0), (None, None))
    return {"extra": out.extra, "infeasible": out.infeasible, "wall_s": round(wall, 3),
            "first_bound": first[0], "first_s": first[1], "tight_moments": out.stats.get("tight_moments"),
            "pct": 100 * out.extra / g.total_cost() if g.total_cost() else 0.0}


def _cell(d: dict) -> str:
    if d["infeasible"]:
        return "infeasible"
    first = "-" if d["first_bound"] is None else f"{d['first_bound']:.6g} at {d['first_s']:.2f} s"
    return f"{d['extra']:.6g} ({d['pct']:.3f} %) / {first} / {d['wall_s']:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=10.0, help="seconds per bound (default 10)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave the section and results alone")
    a = ap.parse_args()
    load0 = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    rows = []
    for i, (name, g, r, rule, B) in enumerate(instances()):
        sides = (True, False) if i % 2 == 0 else (False, True)
        res = {s: run_one(g, B, s, a.time_limit) for s in sides}
        row = {"graph": name, "n": g.n_ops, "r": r, "rule": rule, "budget": B, "with": res[True], "without": res[False]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    load1 = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "## Moment-cut covering bound: the single-row LP stage side by side", "",
        "`cut_cover_bound` (free order, unbounded recomputation) with its single-row LP stage (docs/remat.md, "
        f"\"Single-row LP bound\") and without it (`SINGLE_ROW_MOMENTS = 0`), {a.time_limit:g} s each, one process, "
        "alternating which side runs first. Each cell: proven extra compute at the end (share of the baseline "
        "compute) / the first positive bound and when it came / wall seconds. Budgets: `r x P` (P the given "
        "order's peak) for the training chains, `F + r (P - F)` for the corpus graphs (F the final-state floor, P "
        "the best heuristic order's peak, as in section 27). `tight` = moments whose row forces recomputation.", "",
        f"Load average (1, 5, 15 min) at start {load0}, at end {load1} (2 cores).", "",
        "Reproduce: `.venv/bin/python benchmarks/bench_cut_bound.py" +
        (f" --time-limit {a.time_limit:g}" if a.time_limit != 10.0 else "") + "`", "",
        "| graph | operators | r | budget | tight | with the LP stage | without | time to first bound: with / without |",
        "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        w, o = row["with"], row["without"]
        ratio = "-"
        if w["first_s"] is not None and o["first_s"] is not None:
            ratio = f"{w['first_s']:.2f} / {o['first_s']:.2f} s"
        lines.append(f"| {row['graph']} | {row['n']} | {row['r']} ({row['rule']}) | {row['budget']} | "
                     f"{w['tight_moments'] if w['tight_moments'] is not None else '-'} | {_cell(w)} | {_cell(o)} | {ratio} |")
    same = sum(1 for row in rows if abs(row["with"]["extra"] - row["without"]["extra"]) <= 1e-9 * max(1.0, row["with"]["extra"]))
    lines += ["", f"Same final bound on {same} of {len(rows)} rows."] + NOTES
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_write:
        RESULTS.write_text("".join(json.dumps(r) + "\n" for r in rows))
        SECTION.write_text(text)


if __name__ == "__main__":
    main()
