"""Low budgets decided (issue 14, deliverable 3): random_layered n100 / n250 at r = 0.6.

For each instance (../shared/data/graphs/random_layered, as in bench_remat_proofs.py) at
B = floor(0.6 x P) (memsched's rounding; P = the given order's peak):

* unbounded recomputation: ``decide_unbounded`` (exhaustive backward reachability search;
  a "feasible" comes with an emitted schedule re-judged by the evaluator);
* the least budget with unbounded recomputation, by bisection between the local bound and
  B (only when every probe is decided);
* cap 1 (at most 2 computations per operator): ``refute_capped`` (backward chains with at
  most 2 computations of each operator) at B and at the least unbounded-feasible budget;
* the refutation-only exhaustive search (witnesses off) at B on n250, to show how far it gets.

With ``--free-bounds ROWS``: the free-order compute lower bound (deliverable 2) side by side,
``memsched remat --order free --cap 1`` (solve_remat, 60 s, 2 CP-SAT workers) on Checkmate
train graphs with several topological orders, with and without the free-order stage
relaxation phase of the cp driver (``_free_relaxation``; docs/remat.md, "Free-order stage
relaxation"), the two arms of a row run one after the other.

With ``--fallback ROWS`` (random_layered rows, e.g. rl_n100:0.6): ``memsched remat --order free``
without a cap (solve_remat, 60 s, 2 CP-SAT workers) side by side, the cp driver as is ("with": the
reachability search's schedule as a fallback, ``cp._decide_unbounded``) and with
``cp.UNBOUNDED_SHARE = 0`` ("without": the driver before it), one after the other.

Writes benchmarks/results/remat_lowbudget.json and benchmarks/sections/46-remat-low-budgets.md.

    nice .venv/bin/python benchmarks/bench_remat_lowbudget.py [--time-limit 120]
    nice .venv/bin/python benchmarks/bench_remat_lowbudget.py --free-bounds fcn_8:0.9,fcn_8:0.8,fcn_8:0.7
    nice .venv/bin/python benchmarks/bench_remat_lowbudget.py --fallback rl_n100:0.6,rl_n100:0.62,rl_n250:0.6
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
DATA = (ROOT / ".." / "shared" / "data" / "graphs" / "random_layered").resolve()
RESULTS = ROOT / "benchmarks" / "results" / "remat_lowbudget.json"
SECTION = ROOT / "benchmarks" / "sections" / "46-remat-low-budgets.md"
GRAPHS = {
    "rl_n100": "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
    "rl_n250": "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
}
CHECKMATE = (ROOT / ".." / "shared" / "data" / "graphs" / "checkmate").resolve()
FREE_GRAPHS = {"fcn_8": "fcn_8_vgg_32_4166083_train_nx.json", "ResNet50": "ResNet50_256_2242243_train_nx.json"}
# least cap-1 peaks found before this work (docs/remat.md, "random_layered n100/n250 at 0.6"); not re-run here
KNOWN_CAP1_PEAK = {"rl_n100": 30350, "rl_n250": 95520}


def _row(r) -> dict:
    return {"status": r.status, "budget": r.budget, "peak": r.peak, "wall_s": round(r.wall_s, 2),
            "reason": r.reason[:160], "stats": r.stats}


def run(time_limit: float) -> dict:
    from memsched.formulations import evaluate
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.dispatch import given_peak, resolve_budget
    from memsched.solvers.remat.infeasibility import local_peak_bound
    from memsched.solvers.remat.lowbudget import ReachSearch, _deep, _Timeout, decide_unbounded, refute_capped

    out = {}
    for name, fn in GRAPHS.items():
        g = load_graph(str(DATA / fn))
        P, B = given_peak(g), resolve_budget(g, 0.6)
        row: dict = {"P": P, "B": B, "ops": g.n_ops, "local_bound": local_peak_bound(g), "time_limit": time_limit}
        print(f"{name}: P={P} B={B}", file=sys.stderr, flush=True)
        r = decide_unbounded(g, B, time_limit=time_limit)
        if r.schedule is not None:
            ev = evaluate(g, r.schedule)
            assert ev.peak <= B
            row["unbounded_computations"] = len(r.schedule.computes())
        row["unbounded"] = _row(r)
        # least budget with unbounded recomputation: bisection, every probe must be decided
        lo, hi = local_peak_bound(g), (B if r.status == "feasible" else None)
        probes = []
        if hi is not None:
            while lo < hi:
                mid = (lo + hi) // 2
                p = decide_unbounded(g, mid, time_limit=time_limit)
                probes.append((mid, p.status, round(p.wall_s, 2)))
                if p.status == "feasible":
                    hi = mid
                elif p.status == "infeasible":
                    lo = mid + 1
                else:
                    break
            if lo == hi:
                row["unbounded_least_budget"] = lo
        row["unbounded_probes"] = probes
        # upper side with unbounded recomputation when B is not decided: descending ratios
        ups = []
        if r.status != "feasible":
            for rr in (0.65, 0.64, 0.63, 0.62):
                Bu = resolve_budget(g, rr)
                p = decide_unbounded(g, Bu, time_limit=2 * time_limit)
                ups.append((rr, Bu, p.status, p.peak, round(p.wall_s, 2)))
                print(f"  unbounded at {rr}: {p.status}", file=sys.stderr, flush=True)
                if p.status != "feasible":
                    break
                assert evaluate(g, p.schedule).peak <= Bu
                row["unbounded_least_peak_found"] = p.peak
        row["unbounded_upper_probes"] = ups
        # cap 1
        row["cap1_at_B"] = _row(refute_capped(g, B, [1] * g.n_ops, time_limit=time_limit))
        if row.get("unbounded_least_budget"):
            row["cap1_at_least_unbounded"] = _row(refute_capped(g, row["unbounded_least_budget"], [1] * g.n_ops,
                                                               time_limit=time_limit))
        if r.status == "unknown":  # refutation only: no witnesses, exhaustive
            rs = ReachSearch(g, B, time_limit=time_limit, witnesses=False, orders=[])
            worst = max(range(g.n_ops), key=lambda v: rs.m(rs.inmask[v] | rs.outmask[v]))
            t0 = time.perf_counter()
            try:
                got = _deep(lambda: rs.reach(rs.inmask[worst]))
            except _Timeout:
                got = "timeout"
            row["refute_only"] = {"operator": g.ops[worst].name, "result": got, "calls": rs.calls,
                                  "unreachable_sets": len(rs.bad), "pruned_by_order_bound": rs.pruned,
                                  "wall_s": round(time.perf_counter() - t0, 2)}
        out[name] = row
    return out


def probe(name: str, ratios: list, search_s: float) -> None:
    """Unbounded-recomputation probes at ``ratios`` on ``name``, added to the saved results."""
    from memsched.formulations import evaluate
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.dispatch import resolve_budget
    from memsched.solvers.remat.lowbudget import decide_unbounded

    saved = json.loads(RESULTS.read_text())
    row = saved["rows"][name]
    g = load_graph(str(DATA / GRAPHS[name]))
    load0 = os.getloadavg()[0]
    for rr in ratios:
        Bu = resolve_budget(g, rr)
        p = decide_unbounded(g, Bu, time_limit=search_s)
        if p.schedule is not None:
            assert evaluate(g, p.schedule).peak <= Bu
            best = row.get("unbounded_least_peak_found")
            if best is None or p.peak < best:
                row["unbounded_least_peak_found"] = p.peak
            if Bu == row["B"]:
                row["unbounded_at_B_probe"] = _row(p)
        row.setdefault("extra_probes", []).append(
            {"r": rr, "budget": Bu, "status": p.status, "peak": p.peak, "wall_s": round(p.wall_s, 2),
             "search_s": search_s, "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
             "command": f"nice .venv/bin/python benchmarks/bench_remat_lowbudget.py --probe {name} {rr:g} "
                        f"--probe-s {search_s:g}"})
        print(f"{name} unbounded at {rr}: {p.status} {p.peak} {p.wall_s:.1f} s", file=sys.stderr, flush=True)
    RESULTS.write_text(json.dumps(saved, indent=1, default=str) + "\n")


def free_bounds(rows: list, time_limit: float, workers: int) -> dict:
    """Each row (graph, r) with the cp driver as is ("with") and with its free-order relaxation
    phase switched off ("without"), one after the other; figures from the result (every
    schedule re-judged by solve_remat)."""
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat import cp as cpmod
    from memsched.solvers.remat.dispatch import solve_remat

    out = []
    real = cpmod._free_relaxation
    for name, r in rows:
        g = load_graph(str(CHECKMATE / FREE_GRAPHS[name]))
        row = {"graph": name, "r": r, "load": round(os.getloadavg()[0], 1)}
        for arm in ("with", "without"):
            cpmod._free_relaxation = real if arm == "with" else (lambda s: None)
            try:
                res = solve_remat(g, r, method="cp", cap=1, order="free", time_limit=time_limit, workers=workers)
            finally:
                cpmod._free_relaxation = real
            row["budget"] = res.params.get("budget")
            row[arm] = {"status": str(res.status), "compute": res.compute, "lower_bound": res.lower_bound,
                        "gap": res.extra.get("gap"), "time_to_first_s": res.extra.get("time_to_first_s"),
                        "time_to_best_s": res.extra.get("time_to_best_s"),
                        "time_to_proof_s": res.extra.get("time_to_proof_s"), "wall_s": round(res.wall_s, 2),
                        "free_relaxation": res.params.get("free_relaxation")}
            print(f"{name} {r} {arm}: {row[arm]['status']} {res.compute} lb {res.lower_bound}", file=sys.stderr,
                  flush=True)
        out.append(row)
    return out


def fallback_rows(rows: list, time_limit: float, workers: int) -> list:
    """Each random_layered row (name, r) without a cap, free order, with the driver as is and with
    ``cp.UNBOUNDED_SHARE = 0``, one after the other (every schedule re-judged by solve_remat)."""
    from memsched.formulations import Schedule, evaluate
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat import cp as cpmod
    from memsched.solvers.remat.dispatch import solve_remat

    out, share = [], cpmod.UNBOUNDED_SHARE
    for name, r in rows:
        g = load_graph(str(DATA / GRAPHS[name]))
        B = int(r * evaluate(g, Schedule.from_order(g, g.given_order())).peak)
        row = {"graph": name, "r": r, "budget": B, "load": round(os.getloadavg()[0], 1)}
        for arm in ("with", "without"):
            cpmod.UNBOUNDED_SHARE = share if arm == "with" else 0.0
            try:
                res = solve_remat(g, B, method="cp", order="free", time_limit=time_limit, workers=workers)
            finally:
                cpmod.UNBOUNDED_SHARE = share
            row[arm] = {"status": str(res.status), "compute": res.compute, "lower_bound": res.lower_bound,
                        "recomputations": None if res.schedule is None else len(res.schedule.computes()) - g.n_ops,
                        "time_to_first_s": res.extra.get("time_to_first_s"), "wall_s": round(res.wall_s, 2),
                        "reachability_search": res.params.get("reachability_search")}
            print(f"{name} {r} {arm}: {res.status} {res.compute} lb {res.lower_bound}", file=sys.stderr, flush=True)
        out.append(row)
    return out


def drop_timing(name: str, r: float) -> dict:
    """One pass of ``drop_recomputations`` on the reachability search's schedule of (name, r)
    (dead computations dropped first), the incremental pass against the evaluating one (the pass
    before it), timed side by side on the same sequence; their outputs must be equal."""
    from memsched.formulations import Schedule, evaluate
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.local_search import _drop_pass, _drop_pass_by_evaluation, drop_dead_computations
    from memsched.solvers.remat.lowbudget import decide_unbounded

    g = load_graph(str(DATA / GRAPHS[name]))
    B = int(r * evaluate(g, Schedule.from_order(g, g.given_order())).peak)
    seq = drop_dead_computations(g, list(decide_unbounded(g, B, time_limit=60).schedule.computes()))
    t = time.perf_counter()
    fast = _drop_pass(g, seq, B, None)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = _drop_pass_by_evaluation(g, seq, B, None)
    t_slow = time.perf_counter() - t
    if fast != slow:
        raise SystemExit("the two drop passes disagree")
    return {"graph": name, "r": r, "length": len(seq), "after": len(fast), "incremental_s": round(t_fast, 3),
            "evaluating_s": round(t_slow, 2), "ratio": round(t_slow / t_fast, 1)}


def fallback_section(fb: dict) -> list:
    def cell(x):
        return "-" if x is None else f"{x:.6g}"

    L = ["", "## No cap, free order: the reachability search's schedule as a fallback", "",
         f"Reproduce: `{fb['command']}` ({fb['load']}). `memsched remat GRAPH --budget r --order free --time-limit "
         f"{fb['time_limit']:g} --workers {fb['workers']}` (no cap) through solve_remat, side by side in one run: "
         "`with` is the cp driver as is, `without` has `cp.UNBOUNDED_SHARE = 0` (the driver before "
         "`_decide_unbounded`; docs/remat-low-budgets.md, section 5).", "",
         "| graph | r | budget | with: status | compute | lower bound | recomputations | first s | search | "
         "without: status | compute | lower bound | load |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in fb["rows"]:
        w, o = row["with"], row["without"]
        rs = w["reachability_search"] or {}
        L.append(f"| {row['graph']} | {row['r']} | {row['budget']} | {w['status']} | {cell(w['compute'])} | "
                 f"{cell(w['lower_bound'])} | {w['recomputations'] if w['recomputations'] is not None else '-'} | "
                 f"{w['time_to_first_s'] if w['time_to_first_s'] is not None else '-'} | "
                 f"{rs.get('status', '-')} ({rs.get('s', '-')} s) | {o['status']} | {cell(o['compute'])} | "
                 f"{cell(o['lower_bound'])} | {row['load']} |")
    d = fb.get("drop_timing")
    if d:
        L += ["", f"One pass of `drop_recomputations` on the search's schedule of {d['graph']} at {d['r']} "
                  f"({d['length']} computations after the dead ones are dropped, {d['after']} after the pass; the "
                  f"same output from both): the incremental pass {d['incremental_s']} s, the evaluating pass (the one "
                  f"before) {d['evaluating_s']} s, {d['ratio']}x."]
    return L


def free_section(fb: dict) -> list:
    def pct(x):
        return "-" if x is None else f"{100 * x:.3f}"

    L = ["", "## Free-order compute lower bounds (issue 14, deliverable 2)", "",
         f"Reproduce: `{fb['command']}` ({fb['load']}). `memsched remat GRAPH --budget r --cap 1 --order free "
         f"--time-limit {fb['time_limit']:g} --workers {fb['workers']}` through solve_remat, side by side in one run: "
         "`with` is the cp driver as is, `without` has its free-order stage relaxation phase switched off (the driver "
         "before it). The lower bound holds for every schedule within the budget with at most 2 computations per "
         "operator, in any order (docs/remat.md, \"Free-order stage relaxation\"). 1-minute load average at the "
         "start of each row in the last column.", "",
         "| graph | r | budget | with: status | compute | lower bound | gap % | proof s | without: status | "
         "compute | lower bound | gap % | load |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in fb["rows"]:
        w, o = row["with"], row["without"]
        L.append(f"| {row['graph']} | {row['r']} | {row['budget']} | {w['status']} | {w['compute']:.6g} | "
                 f"{w['lower_bound']:.6g} | {pct(w['gap'])} | {w['time_to_proof_s'] if w['time_to_proof_s'] is not None else '-'} | "
                 f"{o['status']} | {o['compute']:.6g} | {o['lower_bound']:.6g} | {pct(o['gap'])} | {row['load']} |")
    L.append("")
    for row in fb["rows"]:
        L.append(f"* {row['graph']} {row['r']}: free relaxation phase {row['with']['free_relaxation']}.")
    return L


def res_tl(res: dict) -> float:
    return next(iter(res.values())).get("time_limit", 60.0)


def write_section(res: dict, cmd: str, load: str, fb: dict | None = None, fbk: dict | None = None) -> None:
    L = ["## Low budgets: random_layered n100 / n250 at r = 0.6", "",
         f"Reproduce: `{cmd}` (results: benchmarks/results/remat_lowbudget.json). Machine: 2 CPU cores shared with "
         f"other jobs ({load}); one run. Methods: solvers/remat/lowbudget.py; proofs: docs/remat-low-budgets.md.",
         "", "| instance | P | B = floor(0.6 P) | unbounded recomputation at B | least budget, unbounded | "
         "least peak found, unbounded | cap 1 at B | lower side: every schedule peaks at least | "
         "upper side: least cap-1 peak found |",
         "|---|---|---|---|---|---|---|---|---|"]
    for name, row in res.items():
        u = row["unbounded"]
        ustr = u["status"] + (f" (peak {u['peak']}, {row.get('unbounded_computations')} computations)"
                              if u["status"] == "feasible" else "") + f", {u['wall_s']} s"
        if "unbounded_at_B_probe" in row:
            pu = row["unbounded_at_B_probe"]
            ustr += f"; extra probe: {pu['status']} (peak {pu['peak']}), {pu['wall_s']} s"
        least = row.get("unbounded_least_budget")
        c = row["cap1_at_B"]
        lower = f"{least} (least unbounded budget)" if least else f"{row['local_bound']} (local bound)"
        # a decided least budget was met by an emitted schedule (the bisection's last feasible probe)
        upk = least if least else (u["peak"] if u["status"] == "feasible" else row.get("unbounded_least_peak_found", "-"))
        L.append(f"| {name} | {row['P']} | {row['B']} | {ustr} | {least if least else 'not decided'} | {upk} | "
                 f"{c['status']}, {c['wall_s']} s | {lower} | {KNOWN_CAP1_PEAK[name]} (docs/remat.md, not re-run) |")
    L.append("")
    for name, row in res.items():
        L.append(f"* {name}: bisection probes (budget, status, s): {row['unbounded_probes']}.")
        if row.get("unbounded_upper_probes"):
            L.append(f"  Unbounded recomputation at lower ratios (r, budget, status, peak, s; "
                     f"{2 * res_tl(res)} s each): {row['unbounded_upper_probes']}.")
        for x in row.get("extra_probes", []):
            L.append(f"  Extra probe (`{x['command']}`, load {x['load']}): r = {x['r']:g}, budget {x['budget']}: "
                     f"{x['status']}" + (f", peak {x['peak']}" if x["peak"] is not None else "") + f", {x['wall_s']} s.")
        if "cap1_at_least_unbounded" in row:
            c = row["cap1_at_least_unbounded"]
            L.append(f"  Cap 1 at the least unbounded budget: {c['status']} ({c['reason']}; {c['wall_s']} s).")
        if "refute_only" in row:
            L.append(f"  Refutation-only exhaustive search at B: {row['refute_only']}.")
        L.append(f"  Unbounded search at B: {row['unbounded']['reason']} {row['unbounded']['stats']}.")
    L.append("")
    if fb:
        L += free_section(fb)
    if fbk:
        L += fallback_section(fbk)
    SECTION.write_text("\n".join(L) + "\n")


def _rows(ap, opt: str, spec: str, known: dict) -> list:
    """GRAPH:R,GRAPH:R,... as [(GRAPH, R)], or an argparse error (exit 2) naming what is wrong."""
    rows = []
    for x in spec.split(","):
        name, _, r = x.partition(":")
        try:
            ratio = float(r)
        except ValueError:
            ratio = None
        if name not in known or ratio is None or not 0 < ratio <= 1:
            ap.error(f"{opt}: {x!r} is not GRAPH:R with GRAPH one of {', '.join(sorted(known))} and 0 < R <= 1")
        rows.append((name, ratio))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per search (default 120)")
    ap.add_argument("--report", action="store_true", help="rewrite the section from the saved results only")
    ap.add_argument("--probe", nargs="+", metavar=("NAME", "R"),
                    help="extra unbounded-recomputation probes on one instance at ratios R (added to the saved "
                         "results, with --probe-s seconds of search each)")
    ap.add_argument("--probe-s", type=float, default=250.0)
    ap.add_argument("--free-bounds", metavar="ROWS",
                    help="free-order lower bounds with and without the free-order relaxation, e.g. fcn_8:0.9,fcn_8:0.8 "
                         "(saved with the other results; the low-budget rows are not re-run)")
    ap.add_argument("--free-time-limit", type=float, default=60.0)
    ap.add_argument("--fallback", metavar="ROWS",
                    help="no cap, free order, with and without the reachability search's fallback schedule, e.g. "
                         "rl_n100:0.6,rl_n250:0.6 (saved with the other results; the low-budget rows are not re-run)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"{DATA} is absent")
    if a.probe:
        probe(a.probe[0], [float(x) for x in a.probe[1:]], a.probe_s)
        a.report = True
    for key, opt, spec, fn, known in (("free_bounds", "--free-bounds", a.free_bounds, free_bounds, FREE_GRAPHS),
                                      ("fallback", "--fallback", a.fallback, fallback_rows, GRAPHS)):
        if not spec:
            continue
        rows = _rows(ap, opt, spec, known)
        load0 = os.getloadavg()[0]
        extra = {"drop_timing": drop_timing("rl_n100", 0.6)} if key == "fallback" else {}
        out = fn(rows, a.free_time_limit, a.workers)
        saved = json.loads(RESULTS.read_text())
        saved[key] = {
            "rows": out, **extra, "time_limit": a.free_time_limit, "workers": a.workers,
            "command": f"nice .venv/bin/python benchmarks/bench_remat_lowbudget.py {opt} {spec}"
                       + (f" --free-time-limit {a.free_time_limit:g}" if a.free_time_limit != 60.0 else "")
                       + (f" --workers {a.workers}" if a.workers != 2 else ""),
            "load": f"1-minute load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end; "
                    f"Python {platform.python_version()}"}
        RESULTS.write_text(json.dumps(saved, indent=1, default=str) + "\n")
        a.report = True
    if a.report:
        saved = json.loads(RESULTS.read_text())
        res, load, a.time_limit = saved["rows"], saved["load"], saved["time_limit"]
    else:
        load0 = os.getloadavg()[0]
        res = run(a.time_limit)
        load = f"1-minute load average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end; " \
               f"Python {platform.python_version()}"
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"rows": res, "load": load, "time_limit": a.time_limit}, indent=1,
                                      default=str) + "\n")
    cmd = "nice .venv/bin/python benchmarks/bench_remat_lowbudget.py" + \
        (f" --time-limit {a.time_limit:g}" if a.time_limit != 120.0 else "")
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    write_section(res, cmd, load, saved.get("free_bounds"), saved.get("fallback"))
    print(SECTION.read_text())


if __name__ == "__main__":
    main()
