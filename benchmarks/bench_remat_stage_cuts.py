"""Stage no-good cuts in the given-order driver, side by side with the driver without them.

``memsched remat GRAPH --budget r --cap 1 --order given`` (solve_remat, cp driver, 2 CP-SAT
workers) on the rows given, twice each, one arm after the other: ``with`` is the driver as is
(the given-order relaxation solved with stage no-good cuts, solvers/remat/stage_cuts.py;
docs/remat.md, "Stage no-good cuts"), ``without`` has ``cp.STAGE_CUTS`` off (one solve of the
relaxation, the driver before 2026-12-05). Every schedule is re-checked by the evaluator
(peak <= B, at most 2 computations per operator, first computations in the given order).
Before each row an untimed 5 s solve of it warms up imports and compiled kernels.

Writes benchmarks/results/remat_stage_cuts.json and benchmarks/sections/48-remat-stage-cuts.md.

    nice .venv/bin/python benchmarks/bench_remat_stage_cuts.py --rows rl_n100:0.7 --time-limit 900
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_remat_proofs import DATA, GRAPHS  # noqa: E402  (the Moccasin table's graphs and names)

RESULTS = ROOT / "benchmarks" / "results" / "remat_stage_cuts.json"
SECTION = ROOT / "benchmarks" / "sections" / "48-remat-stage-cuts.md"


def run_rows(rows: list[tuple[str, float]], time_limit: float, workers: int) -> list[dict]:
    from memsched.formulations import evaluate
    from memsched.formulations.problems import first_computations_follow
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat import cp as cpmod
    from memsched.solvers.remat.dispatch import resolve_budget, solve_remat

    out = []
    for name, r in rows:
        path = DATA / GRAPHS[name]
        if not path.exists():
            print(f"bench_remat_stage_cuts: {path} not found (../shared/data is needed)", file=sys.stderr)
            sys.exit(2)
        g = load_graph(path)
        B = resolve_budget(g, r)
        row = {"graph": name, "r": r}
        # untimed warm-up (imports, compiled kernels), so that neither arm pays the one-time costs
        solve_remat(g, r, method="cp", cap=1, order="given", time_limit=5, workers=workers)
        for arm in ("with", "without"):
            cpmod.STAGE_CUTS = arm == "with"
            load = os.getloadavg()[0]
            t = time.perf_counter()
            try:
                res = solve_remat(g, r, method="cp", cap=1, order="given", time_limit=time_limit, workers=workers)
            finally:
                cpmod.STAGE_CUTS = True
            wall = time.perf_counter() - t
            rec = {"status": res.status, "compute": res.compute, "lower_bound": res.lower_bound, "wall_s": round(wall, 1),
                   "time_to_best_s": res.extra.get("time_to_best_s"), "time_to_proof_s": res.extra.get("time_to_proof_s"),
                   "load": round(load, 1), "budget": B,
                   "relaxation": res.params.get("given_relaxation")}
            if res.schedule is not None:
                ev = evaluate(g, res.schedule)
                assert ev.peak <= B and max(ev.compute_counts) <= 2 and first_computations_follow(g, res.schedule)
                rec["peak"] = ev.peak
            row[arm] = rec
            print(f"{name} {r} {arm}: {res.status} {res.compute} >= {res.lower_bound} [{wall:.1f} s]", flush=True)
        out.append(row)
    return out


def _fmt(x) -> str:
    return "-" if x is None else f"{x:g}" if isinstance(x, float) else str(x)


def _gap(rec) -> str:
    if rec["compute"] is None or rec["lower_bound"] is None:
        return "-"
    return f"{100 * (rec['compute'] - rec['lower_bound']) / rec['compute']:.3f}"


def _cuts(rec) -> str:
    sc = (rec.get("relaxation") or {}).get("stage_cuts")
    return "-" if sc is None else f"{sc['status']}, {sc['rounds']} rounds, {sc['cuts']} cuts"


def section(data: dict) -> str:
    L = ["## Given order with stage no-good cuts (issue 14)", ""]
    L.append(f"Reproduce: `{data['command']}` (results: benchmarks/results/remat_stage_cuts.json; "
             f"{data['started']} to {data['ended']} UTC, Python {data['python']}). `memsched remat GRAPH --budget r "
             f"--cap 1 --order given --time-limit {data['time_limit']:g} --workers {data['workers']}` through "
             "solve_remat, two arms per row one after the other: `with` is the driver as is (the given-order "
             "relaxation solved with stage no-good cuts, docs/remat.md \"Stage no-good cuts\"), `without` "
             "switches them off (`cp.STAGE_CUTS = False`: one relaxation solve, the driver before 2026-12-05). "
             "`optimal` holds for the given-order class with at most 2 computations per operator. Every schedule "
             "re-checked by the evaluator. Load: the 1-minute load average when the arm started.")
    L.append("")
    L.append("| graph | r | budget | with: status | compute | lower bound | gap % | s | stage cuts | "
             "without: status | compute | lower bound | gap % | s | load with / without |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in data["rows"]:
        w, o = row["with"], row["without"]
        L.append(f"| {row['graph']} | {row['r']} | {w['budget']} | {w['status']} | {_fmt(w['compute'])} | "
                 f"{_fmt(w['lower_bound'])} | {_gap(w)} | {w['wall_s']} | {_cuts(w)} | {o['status']} | "
                 f"{_fmt(o['compute'])} | {_fmt(o['lower_bound'])} | {_gap(o)} | {o['wall_s']} | {w['load']} / {o['load']} |")
    L.append("")
    for row in data["rows"]:
        w = row["with"]
        rel = w.get("relaxation") or {}
        rounds = "; ".join(f"{c[1]} ({c[2]:g} s)" for c in rel.get("checks", []))
        L.append(f"* {row['graph']} {row['r']}, with: time to best {_fmt(w['time_to_best_s'])} s, to proof "
                 f"{_fmt(w['time_to_proof_s'])} s; the cut loop's rounds (seconds from its start): {rounds or '-'}.")
    L.append("")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default="rl_n100:0.7", help="comma list of GRAPH:r (graphs: " + ", ".join(GRAPHS) + ")")
    ap.add_argument("--time-limit", type=float, default=900.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="re-render the section from the stored results")
    a = ap.parse_args(argv)
    if a.report_only:
        SECTION.write_text(section(json.loads(RESULTS.read_text())))
        return 0
    rows = []
    for spec in a.rows.split(","):
        name, r = spec.split(":")
        if name not in GRAPHS:
            ap.error(f"unknown graph {name!r} (known: {', '.join(GRAPHS)})")
        rows.append((name, float(r)))
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    data = {"command": "nice .venv/bin/python benchmarks/bench_remat_stage_cuts.py " + " ".join(argv or sys.argv[1:]),
            "started": started, "time_limit": a.time_limit, "workers": a.workers,
            "python": platform.python_version(), "rows": run_rows(rows, a.time_limit, a.workers)}
    data["ended"] = time.strftime("%H:%M", time.gmtime())
    RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    SECTION.write_text(section(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
