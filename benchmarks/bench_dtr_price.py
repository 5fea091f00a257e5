"""Price of online on the real DTR training traces (issue 6, deliverable 6).

For each trace in ../shared/data/dtr-traces, the training step is converted to a memsched
graph (``solvers.dtr.trace_to_graph``) and, at each budget, the online policy DTR (H = 0)
is compared with offline schedules and lower bounds of the offline optimum, all on the
SAME graph, the SAME bytes and the SAME memory semantics (the memsched evaluator judges
every schedule through ``make_result``):

* budget: ``B = ceil(r x P)``, P = the converted graph's given-order peak (evaluator, no
  recomputation), as ``memsched.solvers.remat.dispatch.resolve_budget`` does for ratios;
* online: ``replay_graph(g, B, "dtr", overhead_limit=inf)``; for reference the trace-level
  replay ``solvers.dtr.replay(trace, budget=B, overhead_limit=inf)`` with the same bytes
  (simrd's semantics on the log itself; docs/dtr.md section 6 says why it differs);
* offline upper bounds (any valid schedule bounds the optimum from above; DTR's own
  schedule is one, so the price is >= 1): memsched's remat baselines (checkpoint-all,
  chen-sqrt, revolve, dtr-greedy through ``solve_remat``; the executor greedy with the
  offline Belady score; the peak-cutting local search), the offline replays
  ``lookahead-inf`` and ``belady`` (they know the future), the best in hindsight of the
  other online heuristics, and on small graphs the free-order CP-SAT model (cap 2
  recomputations per operator, hinted with the best schedule found);
* lower bounds on the offline optimum: infeasibility (``local_infeasibility``: one
  operator's inputs + outputs + workspace + pinned bytes > B; ``pebbling_infeasibility``);
  the compute of one pass (every operator runs once); one pass + the cheapest operator
  when the ordering lower bound on the no-recompute peak exceeds B (some operator must
  run twice). The CP model's proven bound holds only for schedules within its cap and is
  reported separately (it is not a bound on the unbounded optimum);
* price of online = DTR compute / optimum compute, bracketed by
  ``DTR / best upper bound <= price <= DTR / best lower bound``; exact when the two
  bounds meet.

    .venv/bin/python benchmarks/bench_dtr_price.py [--quick] [--traces resnet32,lstm]
        [--ratios 0.2,0.3,0.5,0.7] [--cp-fixed-time 20] [--cp-time 40] [--ls-time 10] [--exec-max-ops 1500]
        [--replay-timeout 90] [--hindsight-timeout 20] [--append]

Writes benchmarks/sections/60-dtr/price_traces.json and price_traces.md.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"
OUT_DIR = ROOT / "benchmarks" / "sections" / "60-dtr"

from memsched.formulations import evaluate  # noqa: E402
from memsched.solvers.dtr.graph import replay_graph, trace_to_graph  # noqa: E402
from memsched.solvers.result import Status, make_result  # noqa: E402

RATIOS = [0.2, 0.3, 0.5, 0.7]
# online heuristics replayed for the "best in hindsight" offline upper bound
HINDSIGHT = ["dtr-eqclass", "dtr-local", "msps", "lru", "size", "lookahead-10"]
OFFLINE_REPLAYS = ["lookahead-inf", "belady"]
REMAT_METHODS = ["checkpoint-all", "chen-sqrt", "revolve", "dtr-greedy"]
CP_CAP = 2
TRACE_ORDER = ["resnet32", "transformer", "treelstm", "lstm"]


def _runs_max(schedule) -> int:
    return max(Counter(schedule.computes()).values(), default=0)


def _cell(res, base) -> dict:
    """A SolveResult as a table cell (compute and overhead only for a schedule)."""
    d = {"status": res.status, "wall_s": round(res.wall_s, 3)}
    if res.schedule is not None:
        d.update(compute=res.compute, peak=res.peak, overhead=res.compute / base)
    if res.message:
        d["message"] = res.message[:200]
    return d


def memory_infeasible(g, B, pebble_time: float = 1.0) -> str | None:
    """A proof that no schedule at all fits B (None: no proof found)."""
    from memsched.solvers.remat.dispatch import local_infeasibility, pebbling_infeasibility

    return local_infeasibility(g, B) or pebbling_infeasibility(g, B, time_limit=pebble_time)


def compute_lower_bound(g, B, order_lb: int | None) -> tuple[float, str]:
    """A lower bound on the least compute of any schedule within B (assuming one exists):
    one pass, plus the cheapest operator when no plain order fits (ordering lower bound > B:
    every schedule within B then computes some operator twice)."""
    base = g.total_cost()
    if order_lb is not None and order_lb > B and g.n_ops:
        return base + min(g.cost), "one pass + cheapest op (ordering bound > B)"
    return base, "one pass"


def bracket(dtr: float | None, ub: float | None, lb: float | None, infeasible: bool) -> dict:
    """Price-of-online bracket from DTR's compute, the best offline upper bound (DTR's own
    schedule included) and the best lower bound. ``kind``: 'range', 'exact', 'inf' (DTR
    fails where an offline schedule exists), 'n/a' (no schedule fits at all),
    'unknown' (DTR fails and no offline schedule was found, none excluded)."""
    if infeasible:
        return {"kind": "n/a", "lo": None, "hi": None}
    if dtr is None:
        return {"kind": "inf", "lo": math.inf, "hi": math.inf} if ub is not None else \
            {"kind": "unknown", "lo": None, "hi": math.inf}
    ub = dtr if ub is None else min(ub, dtr)
    lb = min(lb, ub)
    lo, hi = dtr / ub, dtr / lb
    return {"kind": "exact" if math.isclose(ub, lb, rel_tol=1e-12) else "range", "lo": lo, "hi": hi}


def family_schedules(g, method: str, time_budget: float) -> list:
    """(knob, schedule) of a budget-independent baseline family (chen-sqrt segment lengths,
    revolve slots): computed once per graph, then the cheapest one within each budget is
    taken. Stops trying further knobs after ``time_budget`` seconds."""
    from memsched.solvers.remat import chen_sqrt as remat_chen_sqrt, revolve as remat_revolve
    from memsched.solvers.remat.executor import ExecutionFailed

    n = g.n_ops
    if method == "chen-sqrt":
        sq = max(1, math.ceil(math.sqrt(n)))
        knobs = [sq] + sorted({max(1, int(round(sq * f))) for f in (0.25, 0.5, 0.75, 1.5, 2, 3, 4)} - {sq})
        build = remat_chen_sqrt.schedule_for
    else:
        knobs = sorted(s for s in {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, n // 4, n // 2, n} if 0 < s <= n)
        build = remat_revolve.schedule_for
    out, t0 = [], time.perf_counter()
    for k in knobs:
        if time.perf_counter() - t0 > time_budget:
            break
        try:
            s = build(g, k)
        except ExecutionFailed:
            continue
        ev = evaluate(g, s)
        out.append((k, s, ev.peak, ev.compute))
    return out


def price_cell(g, B: int, *, trace=None, order_lb: int | None = None, families: dict | None = None,
               hindsight=HINDSIGHT, offline_replays=OFFLINE_REPLAYS, cp_time: float = 0.0, cp_max_ops: int = 400,
               cp_fixed_time: float = 0.0, replay_timeout: float | None = None,
               hindsight_timeout: float | None = None,
               ls_time: float = 10.0, exec_max_ops: int = 1500, remat_methods=REMAT_METHODS,
               keep_schedules: bool = False, log=lambda *a: None) -> dict:
    """DTR vs the offline optimum at budget ``B`` bytes on graph ``g``: one row of the table.

    Every schedule is re-checked by the evaluator (make_result). ``families``: the output of
    :func:`family_schedules` per method (computed once per graph); methods in
    ``remat_methods`` not in ``families`` go through ``solve_remat`` when the graph has at
    most ``exec_max_ops`` operators. ``keep_schedules``: ``row["schedules"]`` lists
    (method, schedule) of every schedule found (for re-checking)."""
    from memsched.solvers.remat.dispatch import solve_remat
    from memsched.solvers.remat.dtr_greedy import greedy_schedule
    from memsched.solvers.remat.local_search import cut_peak

    base = g.total_cost()
    row: dict = {"ops": g.n_ops, "budget": B, "base": base, "offline": {}, "online": {}}
    scheds = []  # (compute, name, schedule) of every valid schedule within B

    kept = []

    def keep(name, res):
        if res.schedule is not None:
            assert res.peak <= B, f"{name}: peak {res.peak} > budget {B}"
            scheds.append((res.compute, name, res.schedule))
            kept.append((name, res.schedule))

    t = time.perf_counter()
    dtr = replay_graph(g, B, "dtr", overhead_limit=math.inf)
    row["dtr"] = _cell(dtr, base)
    if keep_schedules:
        row["schedules"] = kept
    if dtr.schedule is not None:
        row["dtr"]["max_runs"] = _runs_max(dtr.schedule)
        kept.append(("dtr", dtr.schedule))
    log(f"    dtr {row['dtr'].get('overhead', 'OOM')} ({time.perf_counter() - t:.1f} s)")
    if trace is not None:
        from memsched.solvers.dtr.replay import replay

        rr = replay(trace, budget=B, heuristic="dtr", overhead_limit=math.inf, timeout=replay_timeout)
        row["trace_dtr"] = {"outcome": rr.outcome, "clock": rr.clock, "baseline_compute": rr.baseline_compute,
                            "baseline_memory": rr.baseline_memory, "ratio_of_baseline": B / rr.baseline_memory,
                            "overhead": (rr.clock - 1) / rr.baseline_compute, "peak": rr.peak,
                            "wall_s": round(rr.wall_s, 3)}
        log(f"    trace-level dtr {rr.outcome} {row['trace_dtr']['overhead']:.4f} ({rr.wall_s:.1f} s)")
    why = memory_infeasible(g, B)
    lb, lb_src = compute_lower_bound(g, B, order_lb)
    row["infeasible"] = why
    row["lb"] = {"compute": lb, "overhead": lb / base, "source": lb_src}
    if why:
        assert dtr.schedule is None, "DTR found a schedule where a lower bound proves none exists"
        row["bracket"] = bracket(None, None, None, True)
        log(f"    no schedule fits: {why}")
        return row
    # offline replays (future known) and online heuristics in hindsight
    for h in list(offline_replays) + list(hindsight):
        t = time.perf_counter()
        r = replay_graph(g, B, h, overhead_limit=math.inf,
                         timeout=replay_timeout if h in offline_replays else hindsight_timeout)
        (row["offline"] if h in offline_replays else row["online"])[h] = _cell(r, base)
        keep(h, r)
        log(f"    {h} {r.compute / base if r.schedule is not None else r.status} ({time.perf_counter() - t:.1f} s)")
    ok = [(row["online"][h]["compute"], h) for h in hindsight if "compute" in row["online"][h]]
    row["offline"]["hindsight"] = {"status": "feasible" if ok else "infeasible",
                                   "timeouts": [h for h in hindsight if row["online"][h]["status"] == "timeout"],
                                   **({"compute": min(ok)[0], "overhead": min(ok)[0] / base, "policy": min(ok)[1]}
                                      if ok else {})}
    # memsched's remat baselines
    families = families or {}
    for m in remat_methods:
        t = time.perf_counter()
        if m in families:
            fit = [(c, k, s) for k, s, pk, c in families[m] if pk <= B]
            if fit:
                c, k, s = min(fit, key=lambda x: (x[0], x[1]))
                res = make_result(g, s, solver=f"remat-{m}", status=Status.FEASIBLE, objective="compute", claimed=c,
                                  params={"knob": k}, wall_s=time.perf_counter() - t)
            else:
                res = make_result(g, None, solver=f"remat-{m}", status=Status.INFEASIBLE, objective="compute",
                                  message=f"{m}: no member of the family fits budget {B}")
        elif m == "checkpoint-all" or g.n_ops <= exec_max_ops:
            res = solve_remat(g, B, method=m, time_limit=60)
        else:
            row["offline"][m] = {"status": "skipped", "message": f"graph over {exec_max_ops} operators (too slow)"}
            continue
        row["offline"][m] = _cell(res, base)
        keep(m, res)
        got = res.compute / base if res.schedule is not None else res.status
        log(f"    {m} {got} ({time.perf_counter() - t:.1f} s)")
    # executor greedy with the offline Belady score (distance to the next use)
    t = time.perf_counter()
    s = greedy_schedule(g, B, None, g.given_order(), score="belady")
    res = make_result(g, s, solver="greedy-belady", status=Status.FEASIBLE if s is not None else Status.INFEASIBLE,
                      objective="compute", wall_s=time.perf_counter() - t,
                      message="" if s is not None else "greedy could not fit")
    row["offline"]["greedy-belady"] = _cell(res, base)
    keep("greedy-belady", res)
    log(f"    greedy-belady {res.compute / base if s is not None else 'fail'} ({time.perf_counter() - t:.1f} s)")
    # peak-cutting local search from the given order
    if ls_time > 0 and g.n_ops <= exec_max_ops:
        t = time.perf_counter()
        s = cut_peak(g, g.given_order(), B, None, time_limit=ls_time)
        if s is not None and evaluate(g, s).peak > B:
            s = None
        res = make_result(g, s, solver="local-search", status=Status.FEASIBLE if s is not None else Status.INFEASIBLE,
                          objective="compute", wall_s=time.perf_counter() - t,
                          message="" if s is not None else f"no schedule within B in {ls_time} s")
        row["offline"]["local-search"] = _cell(res, base)
        keep("local-search", res)
        log(f"    local-search {res.compute / base if s is not None else 'fail'} ({time.perf_counter() - t:.1f} s)")
    else:
        row["offline"]["local-search"] = {"status": "skipped"}
    all_s = sorted(scheds, key=lambda x: x[0])
    if dtr.schedule is not None:
        all_s = sorted(all_s + [(dtr.compute, "dtr", dtr.schedule)], key=lambda x: x[0])
    # CP-SAT, free order, cap CP_CAP, hinted with the cheapest schedule that fits its caps
    if cp_time > 0 and g.n_ops <= cp_max_ops:
        if cp_fixed_time > 0:
            row["cp_fixed"] = run_cp(g, B, all_s, cp_fixed_time, base, fix_order=g.given_order())
            if row["cp_fixed"].get("compute") is not None:
                s = row["cp_fixed"].pop("schedule")
                scheds.append((row["cp_fixed"]["compute"], "cp-fixed", s))
                kept.append(("cp-fixed", s))
                all_s = sorted(all_s + [(row["cp_fixed"]["compute"], "cp-fixed", s)], key=lambda x: x[0])
            log(f"    cp-fixed {row['cp_fixed']['status']} {row['cp_fixed'].get('overhead')} "
                f"({row['cp_fixed']['wall_s']} s)")
        row["cp"] = run_cp(g, B, all_s, cp_time, base)
        if row["cp"].get("compute") is not None:
            s = row["cp"].pop("schedule")
            scheds.append((row["cp"]["compute"], "cp", s))
            kept.append(("cp", s))
        log(f"    cp {row['cp']['status']} {row['cp'].get('overhead')} bound(cap {CP_CAP}) "
            f"{row['cp'].get('bound_overhead')} ({row['cp']['wall_s']} s)")
    best = min(scheds, key=lambda x: x[0]) if scheds else None
    row["best_offline"] = None if best is None else {"compute": best[0], "overhead": best[0] / base, "method": best[1]}
    row["bracket"] = bracket(dtr.compute if dtr.schedule is not None else None,
                             best[0] if best else None, lb, False)
    if row.get("cp", {}).get("bound") is not None and dtr.schedule is not None:
        # with CP's bound: a bracket valid for the optimum among schedules within the cap
        cb = row["cp"]["bound"]
        row["bracket_cap"] = {"hi": dtr.compute / max(cb, lb), "cap": CP_CAP,
                              "dtr_within_cap": row["dtr"]["max_runs"] <= 1 + CP_CAP}
    return row


def run_cp(g, B, candidates, cp_time, base, fix_order=None) -> dict:
    """CP-SAT (cap CP_CAP extra computations per operator, 1 worker) hinted with the
    cheapest candidate schedule that fits the caps; its schedule goes through make_result.
    Free order (``fix_order=None``): the proven bound holds for every schedule within the
    cap. ``fix_order``: first computations in that order (Checkmate's / Moccasin's class):
    an upper-bound search only, its bound is not reported."""
    from memsched.formulations.remat_cpsat import build_remat_cp
    from memsched.solvers.remat.cp import lb_compute as _lb_compute, run_cpsat as _run_cpsat

    t = time.perf_counter()
    cp = build_remat_cp(g, B, [CP_CAP] * g.n_ops, objective="compute", fix_order=fix_order)
    hinted = None
    for c, name, s in candidates:
        if cp.hint_from_schedule(s):
            hinted = name
            break
    st, sol, bound, _wall, _log = _run_cpsat(cp, cp_time, 0, 1, False, "cp")
    d = {"status": st, "hint": hinted, "cap": CP_CAP, "time_limit": cp_time}
    if sol is not None:
        res = make_result(g, sol[0], solver="remat-cp", status=Status.FEASIBLE, objective="compute")
        assert res.peak <= B
        d.update(compute=res.compute, overhead=res.compute / base, schedule=res.schedule)
    if bound is not None and fix_order is None:
        lbc = _lb_compute(cp, bound, base)
        d.update(bound=lbc, bound_overhead=lbc / base)
    d["wall_s"] = round(time.perf_counter() - t, 2)
    return d


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv=None) -> int:
    from memsched.instances.dtr_trace import parse_trace
    from memsched.solvers.remat.dispatch import given_peak, order_lower_bound

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=",".join(TRACE_ORDER))
    ap.add_argument("--ratios", default=",".join(map(str, RATIOS)))
    ap.add_argument("--cp-time", type=float, default=40.0, help="CP-SAT seconds per cell (graphs <= --cp-max-ops)")
    ap.add_argument("--cp-max-ops", type=int, default=400)
    ap.add_argument("--cp-fixed-time", type=float, default=20.0,
                    help="CP-SAT seconds per cell with the given order of first computations fixed")
    ap.add_argument("--ls-time", type=float, default=10.0, help="local search seconds per cell")
    ap.add_argument("--exec-max-ops", type=int, default=1500,
                    help="chen-sqrt / revolve / dtr-greedy / local search only on graphs up to this size")
    ap.add_argument("--family-time", type=float, default=60.0, help="seconds per graph for chen-sqrt / revolve knobs")
    ap.add_argument("--replay-timeout", type=float, default=90.0,
                    help="seconds per offline replay (lookahead-inf, belady) and trace-level replay")
    ap.add_argument("--hindsight-timeout", type=float, default=20.0, help="seconds per hindsight replay")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of other traces already in price_traces.json (rerun only --traces)")
    ap.add_argument("--quick", action="store_true", help="resnet32 only, ratios 0.3 and 0.5, CP 10 s")
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    if a.quick:
        a.traces, a.ratios, a.cp_time, a.cp_fixed_time = "resnet32", "0.3,0.5", 10.0, 5.0
    if not DATA.is_dir():
        print(f"skipped: {DATA} is absent")
        return 0
    manifest = json.loads((DATA / "manifest.json").read_text())["models"]
    ratios = [float(x) for x in a.ratios.split(",")]
    wanted = [t.strip() for t in a.traces.split(",") if t.strip()]
    out_dir = Path(a.out_dir)
    t_all = time.perf_counter()
    run = {"traces": wanted, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_start": _load(),
           "command": ".venv/bin/python benchmarks/bench_dtr_price.py " + " ".join(argv if argv is not None
                                                                                   else sys.argv[1:])}
    out = {"runs": [run], "replay_timeout": a.replay_timeout, "hindsight_timeout": a.hindsight_timeout,
           "ratios": ratios, "cp_time": a.cp_time, "cp_cap": CP_CAP, "cp_fixed_time": a.cp_fixed_time,
           "cp_max_ops": a.cp_max_ops, "ls_time": a.ls_time,
           "exec_max_ops": a.exec_max_ops, "hindsight": HINDSIGHT, "rows": [], "graphs": {}}
    old = out_dir / "price_traces.json"
    if a.append and old.is_file():
        prev = json.loads(old.read_text())
        out["runs"] = [r for r in prev.get("runs", []) if set(r["traces"]) - set(wanted)] + [run]
        for r in out["runs"][:-1]:
            r["traces"] = [t for t in r["traces"] if t not in wanted]
        out["rows"] = [r for r in prev.get("rows", []) if r["trace"] not in wanted]
        out["graphs"] = {k: v for k, v in prev.get("graphs", {}).items() if k not in wanted}
    for stem in wanted:
        m = next((m for m in manifest if m["log"].startswith(stem + "-")), None)
        if m is None:
            print(f"no trace {stem!r} in the manifest", file=sys.stderr)
            return 2
        tr = parse_trace(DATA / m["log"], start=m.get("has_start", True))
        g = trace_to_graph(tr, name=stem)
        P = given_peak(g)
        t = time.perf_counter()
        olb = order_lower_bound(g)
        info = {"ops": g.n_ops, "tensors": g.n_tensors, "trace_ops": len(tr.ops), "given_peak": P,
                "base": g.total_cost(), "order_lower_bound": olb, "order_lb_s": round(time.perf_counter() - t, 2),
                "pinned_bytes": g.resident_at_start()}
        families = {}
        if g.n_ops <= a.exec_max_ops:
            for meth in ("chen-sqrt", "revolve"):
                t = time.perf_counter()
                families[meth] = family_schedules(g, meth, a.family_time)
                info[f"{meth}_family"] = [(k, pk / P, c / g.total_cost()) for k, _s, pk, c in families[meth]]
                info[f"{meth}_s"] = round(time.perf_counter() - t, 2)
        out["graphs"][stem] = info
        print(f"{stem}: {len(tr.ops)} trace ops -> {g.n_ops} graph ops, P = {P}, ordering LB = {olb}, "
              f"load {_load():.1f}", flush=True)
        for r in ratios:
            B = int(math.ceil(r * P - 1e-9))
            print(f"  r = {r}: B = {B}", flush=True)
            t = time.perf_counter()
            row = price_cell(g, B, trace=tr, order_lb=olb, families=families, cp_time=a.cp_time,
                             cp_max_ops=a.cp_max_ops, cp_fixed_time=a.cp_fixed_time, replay_timeout=a.replay_timeout,
                             hindsight_timeout=a.hindsight_timeout, ls_time=a.ls_time, exec_max_ops=a.exec_max_ops,
                             log=lambda s: print(s, flush=True))
            row.update(trace=stem, ratio=r, given_peak=P, wall_s=round(time.perf_counter() - t, 1))
            out["rows"].append(row)
            b = row["bracket"]
            print(f"  -> bracket {b} ({row['wall_s']} s)", flush=True)
            if not a.no_write:
                _write(out, out_dir)
    run["load_end"] = _load()
    run["total_s"] = round(time.perf_counter() - t_all, 1)
    order = {t: k for k, t in enumerate(TRACE_ORDER)}
    out["rows"].sort(key=lambda r: (order.get(r["trace"], 99), r["ratio"]))
    out["graphs"] = dict(sorted(out["graphs"].items(), key=lambda kv: order.get(kv[0], 99)))
    if not a.no_write:
        _write(out, out_dir)
    print(f"done in {run['total_s']} s, load {run['load_start']:.1f} -> {run['load_end']:.1f}")
    return 0


def _write(out, out_dir: Path):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "price_traces.json").write_text(json.dumps(out, indent=1, default=str))
    (out_dir / "price_traces.md").write_text("\n".join(render(out)) + "\n")
    if out_dir.resolve() == (ROOT / "benchmarks" / "sections" / "60-dtr").resolve():
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_dtr

        bench_dtr.refresh_extras()  # the DTR section includes this subsection


def _f(x, nd=3):
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{nd}f}"


def _ov(c: dict | None) -> str:
    if not c:
        return "-"
    if c.get("status") == "skipped":
        return "skip"
    if c.get("status") == "timeout":
        return "t/o"
    return _f(c["overhead"]) if c.get("overhead") is not None else "x"


def render(out) -> list[str]:
    L = ["### Price of online on the training traces", "",
         "DTR (H = 0) against the offline optimum on the memsched graph of each trace "
         "(`trace_to_graph`: views collapsed, constants pinned inputs). Budget B = ceil(r x P), P = the "
         "graph's given-order peak (evaluator, no recomputation); DTR and every offline method see the same "
         "graph, the same B and the evaluator's memory semantics; every schedule is re-checked by the "
         "evaluator (`make_result`). Numbers are overheads = compute / compute of one pass "
         "(1.000 = no recomputation); `x` = no schedule within B, `skip` = not run (graph too large for the "
         "method in the time budget).",
         "",
         "Measured on 2 shared cores: " + "; ".join(
             f"{', '.join(r['traces'])} on {r['date']}, load {r['load_start']:.1f} at start"
             + (f", {r['load_end']:.1f} at end, {r['total_s']} s" if "load_end" in r else "")
             + f" (`{r['command'].strip()}`)" for r in out["runs"]) + ". "
         + "Reproduce all: `.venv/bin/python benchmarks/bench_dtr_price.py` "
         f"(CP-SAT, 1 worker, cap {out['cp_cap']}, graphs <= {out['cp_max_ops']} ops: "
         f"{out['cp_fixed_time']} s with the "
         f"given order of first computations fixed, then {out['cp_time']} s free order, each hinted with the "
         "cheapest schedule so far that fits the cap; "
         f"local search {out['ls_time']} s; chen-sqrt, revolve, dtr-greedy, local search on graphs <= "
         f"{out['exec_max_ops']} ops; timeouts {out['replay_timeout']} s per offline or trace-level replay, "
         f"{out['hindsight_timeout']} s per hindsight replay, shown `t/o`).", "",
         "Graphs: " + "; ".join(f"{k} {v['trace_ops']} trace ops -> {v['ops']} graph ops, P = {v['given_peak']:,} B "
                                f"(ordering lower bound {v['order_lower_bound']:,} B)"
                                for k, v in out["graphs"].items()) + ".", "",
         "**Online vs offline upper bounds** (`trace dtr` = the trace-level replay `solvers.dtr.replay` with the "
         "same bytes, overhead (clock - 1) / baseline compute, views included; `hindsight` = best of "
         f"{', '.join(out['hindsight'])} replayed on the graph, chosen after the fact):", "",
         "| trace | ops | r | B (bytes) | dtr | trace dtr | lookahead-inf | belady | hindsight | checkpoint-all | "
         "chen-sqrt | revolve | dtr-greedy | greedy-belady | local-search | cp fixed order | cp free order |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in out["rows"]:
        o = row["offline"]
        td = row.get("trace_dtr")
        tds = "-" if td is None else (_f(td["overhead"]) if td["outcome"] == "ok" else td["outcome"])
        hs = o.get("hindsight")
        hss = "-" if not hs else (f"{_f(hs['overhead'])} ({hs['policy']})" if hs.get("overhead") else "x")
        if hs and hs.get("timeouts"):
            hss += f" ({', '.join(hs['timeouts'])} t/o)"
        cp = row.get("cp")
        if cp is None:
            cps = "skip"
        elif cp.get("overhead") is not None:
            cps = _f(cp["overhead"]) + ("*" if cp["status"] == "optimal" else "")
        else:
            cps = cp["status"]
        cf = row.get("cp_fixed")
        cfs = "skip" if cf is None else (_f(cf.get("overhead")) if cf.get("overhead") is not None else cf["status"])
        if row.get("infeasible"):
            L.append(f"| {row['trace']} | {row['ops']} | {row['ratio']} | {row['budget']:,} | {_ov(row['dtr'])} | "
                     f"{tds} | no schedule fits (lower bound) ||||||||||||")
            continue
        L.append(f"| {row['trace']} | {row['ops']} | {row['ratio']} | {row['budget']:,} | {_ov(row['dtr'])} | {tds} | "
                 f"{_ov(o.get('lookahead-inf'))} | {_ov(o.get('belady'))} | {hss} | {_ov(o.get('checkpoint-all'))} | "
                 f"{_ov(o.get('chen-sqrt'))} | {_ov(o.get('revolve'))} | {_ov(o.get('dtr-greedy'))} | "
                 f"{_ov(o.get('greedy-belady'))} | {_ov(o.get('local-search'))} | {cfs} | {cps} |")
    L += ["", "**Price of online** = DTR / offline optimum. DTR's own schedule is a valid offline schedule, so "
          "the best upper bound is min(DTR, best offline) and the price is >= 1; lower bound: "
          "the compute of one pass, + the cheapest operator when the ordering lower bound on the "
          "no-recompute peak exceeds B. `cp bound` = CP-SAT's proven bound, valid only among schedules "
          f"with at most {out['cp_cap']} recomputations per operator; `hi (cap)` = DTR / that bound "
          "(a bracket end for the capped optimum, not for the unbounded one).", "",
          "| trace | r | dtr | best offline (method) | lower bound | price bracket | cp bound (cap) | hi (cap) |",
          "|---|---|---|---|---|---|---|---|"]
    for row in out["rows"]:
        b = row["bracket"]
        if b["kind"] == "n/a":
            br = "n/a (no schedule fits)"
        elif b["kind"] == "inf":
            br = "inf (DTR OOM, offline feasible)"
        elif b["kind"] == "unknown":
            br = "unknown (DTR OOM, no offline schedule found)"
        elif b["kind"] == "exact":
            br = f"{_f(b['lo'], 4)} (exact)"
        else:
            br = f"[{_f(b['lo'], 4)}, {_f(b['hi'], 4)}]"
        bo = row.get("best_offline")
        bos = "-" if not bo else f"{_f(bo['overhead'], 4)} ({bo['method']})"
        cp = row.get("cp") or {}
        bc = row.get("bracket_cap")
        L.append(f"| {row['trace']} | {row['ratio']} | {_f(row['dtr'].get('overhead'), 4)} | {bos} | "
                 f"{_f(row['lb']['overhead'], 5)} | {br} | {_f(cp.get('bound_overhead'), 5)} | "
                 f"{_f(bc['hi'], 4) if bc else '-'} |")
    return L + [""]


if __name__ == "__main__":
    raise SystemExit(main())
