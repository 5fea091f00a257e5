"""Rematerialization to proven optimality, side by side with Moccasin (issue 14).

Protocol (Moccasin's): the Checkmate train graphs and random_layered n100/n250 from
../shared/data/graphs, budgets r in {0.9, 0.8, 0.7, 0.6} of the given order's peak, at
most 2 computations per operator (``--cap 1``), ``--time-limit`` seconds per instance
for memsched and per phase for Moccasin, the same number of CP-SAT workers for both.

Per row: memsched ``--order given`` (value, status, time to proof), memsched
``--order free`` (value, status, lower bound, gap, time to first / best schedule) and
Moccasin (value, status, time), run from an unmodified scratch checkout
(``--moccasin-dir``, default /work/scratch/moccasin; fetched from haoming-codes/moccasin,
never part of this repository). Moccasin is driven through its ``remat`` function by a
small loader here, because its main.py needs a networkx API that networkx 3 removed
(``node_link_graph(attrs=...)``), its model passes generators that OR-Tools 9.15 rejects (so it runs
in a scratch venv with OR-Tools 9.7, ``--moccasin-python``), and its module imports ``rockmate`` for a function the
benchmark does not call (a stub module stands in). Its CP-SAT worker count (16, fixed in
its code) is set to ``--workers`` by wrapping the solver class, not by editing its file.
Moccasin's budget is ``ceil(r x its topological-order memory)`` in its own memory model
(outputs only); memsched's is ``floor(r x P)`` in memsched's (docs/semantics.md); both are
listed.

Every memsched schedule is re-checked by the evaluator (solve_remat does it). Results go to
benchmarks/results/remat_proofs.jsonl (one line per row and tool, resumable) and
benchmarks/sections/45-remat-proofs.md.

    nice .venv/bin/python benchmarks/bench_remat_proofs.py --time-limit 60 --workers 2 \\
        [--rows VGG16:0.9,fcn_8:0.8 ...] [--tools given,free,moccasin]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = (ROOT / ".." / "shared" / "data" / "graphs").resolve()
RESULTS = ROOT / "benchmarks" / "results" / "remat_proofs.jsonl"
SECTION = ROOT / "benchmarks" / "sections" / "45-remat-proofs.md"
GRAPHS = {
    "VGG16": "checkmate/VGG16_256_2242243_train_nx.json",
    "VGG19": "checkmate/VGG19_256_2242243_train_nx.json",
    "fcn_8": "checkmate/fcn_8_vgg_32_4166083_train_nx.json",
    "segnet": "checkmate/segnet_32_4166083_train_nx.json",
    "vgg_unet": "checkmate/vgg_unet_32_4166083_train_nx.json",
    "MobileNet": "checkmate/MobileNet_512_2242243_train_nx.json",
    "ResNet50": "checkmate/ResNet50_256_2242243_train_nx.json",
    "rl_n100": "random_layered/random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
    "rl_n250": "random_layered/random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
}
RATIOS = (0.9, 0.8, 0.7, 0.6)
# graphs whose schedules are run by `memsched run` on numpy (--run-check): the VGG and fcn_8 rows
RUN_CHECK = ("VGG16", "VGG19", "fcn_8")
RUN_CHECK_FILES = {Path(GRAPHS[g]).name for g in RUN_CHECK}
RUN_SCALE = 64  # tensor sizes divided by this (rounded up) so that the programs fit in memory
ROWS_23 = ("VGG16:0.9,VGG19:0.9,VGG19:0.8,fcn_8:0.9,fcn_8:0.8,fcn_8:0.7,segnet:0.9,segnet:0.8,vgg_unet:0.9,"
           "vgg_unet:0.8,rl_n100:0.9,rl_n100:0.6,rl_n250:0.6,MobileNet:0.9,ResNet50:0.9,VGG16:0.8,VGG19:0.7,VGG19:0.6,"
           "fcn_8:0.6,rl_n250:0.9,rl_n100:0.8,rl_n250:0.8,MobileNet:0.8")
EARLIER_RUN = "nice .venv/bin/python benchmarks/bench_remat_proofs.py --time-limit 60 --workers 2 --rows " + ROWS_23


# ------------------------------------------------------------------ Moccasin (subprocess)
def run_moccasin_here(path: str, r: float, time_limit: float, workers: int, mdir: str) -> dict:
    """Run Moccasin's remat on one instance in this process (called in a child process)."""
    import types

    import networkx as nx
    from ortools.sat.python import cp_model

    stub = types.ModuleType("rockmate")
    stub.def_op = types.ModuleType("rockmate.def_op")
    for name in ("RunOp", "DelOp", "OpSchedule"):
        setattr(stub.def_op, name, type(name, (), {}))
    sys.modules["rockmate"], sys.modules["rockmate.def_op"] = stub, stub.def_op
    sys.path.insert(0, str(Path(mdir) / "src"))
    from moccasin import cp as mcp  # noqa: E402
    from moccasin.util import get_mem_from_schedule  # noqa: E402

    class Solver(cp_model.CpSolver):  # the same number of workers as memsched
        def Solve(self, *a, **k):
            self.parameters.num_search_workers = 0
            self.parameters.num_workers = workers
            self.parameters.log_search_progress = False
            return super().Solve(*a, **k)

        def SolveWithSolutionCallback(self, *a, **k):
            self.parameters.num_search_workers = 0
            self.parameters.num_workers = workers
            self.parameters.log_search_progress = False
            return super().SolveWithSolutionCallback(*a, **k)

    mcp.cp_model.CpSolver = Solver
    data = json.loads(Path(path).read_text())
    rl = "random_layered" in path
    G = nx.node_link_graph(data, directed=True, multigraph=False, edges="links",
                           **({"source": "0", "target": "1"} if rl else {}))
    if G.graph["name"].startswith("random_layered"):
        for _v, d in G.nodes(data=True):
            d["cost_ram"] = d.pop("out_cost")
            d["cost_cpu"] = d.pop("duration")
    topo = G.graph["order"] if "order" in G.graph else list(nx.topological_sort(G))
    topo_mem, _ = get_mem_from_schedule(G, topo)
    B = math.ceil(topo_mem * r)
    t0 = time.perf_counter()
    import contextlib
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as td, contextlib.redirect_stdout(io.StringIO()) as out:
        cwd = os.getcwd()
        os.chdir(td)
        try:
            res = mcp.remat(G=G, B=B, C=2, timeout=time_limit, discretized=True, reservoir=True, use_end_global=False,
                            use_stage=True, topo_order=topo, phase1=True, use_interval_length_domain=True,
                            use_gcd=True, reservoir_option=2, log_dir=td)
        finally:
            os.chdir(cwd)
    wall = time.perf_counter() - t0
    log = out.getvalue()
    phase1 = "Phase 1 Status = " + log.split("Phase 1 Status = ")[1].split()[0] if "Phase 1 Status = " in log else None
    return {"moccasin_budget": B, "moccasin_topo_mem": topo_mem, "status": res.get("status"),
            "value": res.get("obj_val"), "wall_s": round(wall, 3), "phase1": phase1,
            "schedule_len": len(res.get("schedule", []) or [])}


def run_moccasin(path, r, time_limit, workers, mdir, python) -> dict:
    cmd = [python, __file__, "--moccasin-one", path, str(r), str(time_limit), str(workers), mdir]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=2 * time_limit + 120)
    except subprocess.TimeoutExpired:
        return {"status": "killed", "wall_s": 2 * time_limit + 120}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"status": "error", "error": (p.stderr or p.stdout)[-300:]}
    return json.loads(lines[-1])


# ------------------------------------------------------------------ memsched
def run_memsched(path, r, order, time_limit, workers) -> dict:
    from memsched.instances.formats import load_graph
    from memsched.solvers.remat.dispatch import solve_remat

    import ortools.sat.python.cp_model  # noqa: F401  (imported before timing, as in the Moccasin child)

    g = load_graph(path)
    t0 = time.perf_counter()
    res = solve_remat(g, r, method="cp", cap=1, time_limit=time_limit, workers=workers, order=order)
    ex = res.extra
    return {"status": res.status, "value": res.compute, "lower_bound": res.lower_bound, "gap": ex.get("gap"),
            "budget": res.params.get("budget"), "wall_s": round(time.perf_counter() - t0, 3),
            "time_to_first_s": ex.get("time_to_first_s"), "time_to_best_s": ex.get("time_to_best_s"),
            "time_to_proof_s": ex.get("time_to_proof_s"), "peak": res.peak, "baseline": g.total_cost(),
            "scope": res.scope, "class_status": res.class_status, "message": (res.message or "")[:200],
            "stopped": res.params.get("stop"), "given_relaxation": res.params.get("given_relaxation"),
            # kept for the `memsched run` check (--run-check) on the graphs it covers
            "schedule": (res.schedule.to_names(g)
                         if res.schedule is not None and Path(path).name in RUN_CHECK_FILES else None)}


# ------------------------------------------------------------------ memsched run (numpy)
def run_check(path: str, schedule: list, tag: str) -> dict:
    """Emit ``schedule`` as a numpy program with ``memsched run``, run it and compare the realized
    peak with the modeled one (both at ``RUN_SCALE``); the command exits 1 when they differ."""
    import tempfile

    exe = str(ROOT / ".venv" / "bin" / "memsched")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"format": "memsched-schedule", "version": 1, "events": schedule}, f)
        sched_file = f.name
    cmd = [exe, "run", path, sched_file, "--backend", "numpy", "--scale", str(RUN_SCALE), "--max-bytes",
           str(2 ** 31), "--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {"run_status": "timeout"}
    finally:
        os.unlink(sched_file)
    try:
        d = json.loads(p.stdout)
    except ValueError:
        return {"run_status": "error", "rc": p.returncode, "error": (p.stderr or p.stdout)[-300:]}
    return {"run_status": "ran", "rc": p.returncode, "match": d.get("match"), "modeled_peak": d.get("modeled_peak"),
            "realized_peak": d.get("realized_peak"), "modeled_peak_unscaled": d.get("modeled_peak_unscaled"),
            "recomputations": d.get("recomputations"), "scale": RUN_SCALE, "of": tag}


# ------------------------------------------------------------------ report
def load_results() -> dict:
    """The last line of each (graph, r, tool); the first line of the same key (the earliest run,
    e.g. before a change, kept by ``--rerun``) is attached as ``earlier``."""
    out = {}
    if RESULTS.exists():
        for ln in RESULTS.read_text().splitlines():
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            key = (d["graph"], d["r"], d["tool"])
            if key in out:
                d["earlier"] = out[key].get("earlier") or out[key]
            out[key] = d
    return out


def _v(x, nd=6):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}g}"
    return str(x)


def _t(x):
    return "-" if x is None else f"{x:.1f}"


def _optimal_medians(both) -> str:
    opt = [b for b in both if b[4] == "optimal"]
    if not opt:
        return "* Rows both prove optimal: none timed."
    return (f"* Over the {len(opt)} rows both prove optimal (infeasible rows left out): median memsched time to proof "
            f"{statistics.median(b[2] for b in opt):.1f} s, median Moccasin wall time "
            f"{statistics.median(b[3] for b in opt):.1f} s, median ratio "
            f"{statistics.median(b[2] / max(1e-3, b[3]) for b in opt):.2f}.")


def _loads(res: dict) -> str:
    """The load averages (1 min) at the start of the rows of each tool's latest run, in words."""
    out = []
    for tool in ("given", "free", "moccasin"):
        ls = [d["load1"] for k, d in res.items() if k[2] == tool and d.get("load1") is not None]
        if ls:
            out.append(f"`{tool}` rows started at load {min(ls):.1f}-{max(ls):.1f} ({len(ls)} rows recorded)")
    return ("Load average (1 min) at the start of each row: " + "; ".join(out) + "." if out
            else "The load average was not recorded for these rows.")


def write_section(res: dict, cmd: str, time_limit, workers) -> None:
    keys = sorted({(g, r) for g, r, _t in res}, key=lambda k: (list(GRAPHS).index(k[0]), -k[1]))
    cmds: list = []
    for key in sorted(res, key=lambda k: res[k].get("cmd") is not None):
        c = res[key].get("cmd") or EARLIER_RUN
        if c not in cmds:
            cmds.append(c)
    if cmd is not None and cmd not in cmds:
        cmds.append(cmd)
    lines = ["## Remat to proven optimality, side by side with Moccasin", "",
             "Reproduce (the commands that produced the rows shown, in order; each runs only what its "
             "`--tools`/`--rerun` name): " + "; ".join(f"`{c}`" for c in cmds)
             + " (results: benchmarks/results/remat_proofs.jsonl). "
             f"{time_limit:g} s per instance for memsched (each order), {time_limit:g} s per phase for Moccasin, "
             f"{workers} CP-SAT workers for both, `--cap 1` (at most 2 computations per operator). "
             "The machine (2 cores) was shared with five other helpers' jobs during every run, so times are noisy: "
             + _loads(res) + " "
             "Each row and tool shows the last command that ran it (the jsonl keeps every run, with the time it "
             "started and the load average then).",
             "",
             "The `given` columns answer `--order given`: their `optimal`/`infeasible` hold for the given-order class "
             "(first computations in the given order, recomputations anywhere, at most 2 computations per operator), "
             "never for free order; the `free` columns answer `--order free`. `given, first run` is the first result "
             "of the same row in benchmarks/results/remat_proofs.jsonl (kept by `--rerun given`): for the 23 rows of "
             "the first table the run before the given-order stage relaxation existed (03:00-03:48 UTC), for the 13 "
             "rows added later the run before the relaxation got its larger time share (07:06-07:20 UTC).", "",
             ("All rows of the protocol (every graph, every r) ran. " if len(keys) == len(GRAPHS) * len(RATIOS)
              else "Only the rows listed ran. ")
             + "memsched budgets are floor(r x P) in memsched's memory model; Moccasin's are "
             "ceil(r x its topological-order memory) in its own (operator outputs only), listed as `B (Moccasin)`. "
             "Moccasin's model fixes every computation to a stage event (use_stage=True), i.e. Checkmate's stage class, "
             "which is narrower than the given-order class memsched decides; its optimum can be higher "
             "(tests/test_remat_given_cp.py checks stage >= given by brute force).", "",
             "| graph | r | budget | given: value | given: status | given: proof s | given, first run: status / "
             "proof s | free: value | free: status | "
             "free: lower bound | free: gap % | free: first / best s | B (Moccasin) | Moccasin: value | "
             "Moccasin: status | Moccasin: s |",
             "|" + "---|" * 16]
    both, ratios_t, same, only_m = [], [], [], []
    for g, r in keys:
        gv = res.get((g, r, "given"), {})
        fv = res.get((g, r, "free"), {})
        mv = res.get((g, r, "moccasin"), {})
        gap = fv.get("gap")
        lines.append(" | ".join([
            f"| {g}", f"{r:g}", _v(gv.get("budget") or fv.get("budget")), _v(gv.get("value")), gv.get("status", "not run"),
            _t(gv.get("time_to_proof_s")),
            "-" if not gv.get("earlier") else f"{gv['earlier'].get('status')} / {_t(gv['earlier'].get('time_to_proof_s'))}",
            _v(fv.get("value")), fv.get("status", "not run"), _v(fv.get("lower_bound")),
            "-" if gap is None else f"{100 * gap:.3f}",
            f"{_t(fv.get('time_to_first_s'))} / {_t(fv.get('time_to_best_s'))}",
            _v(mv.get("moccasin_budget")), _v(mv.get("value")), mv.get("status", "not run"), _t(mv.get("wall_s"))]) + " |")
        if gv.get("status") == "optimal" and mv.get("status") == "OPTIMAL":
            same.append(gv.get("value") == mv.get("value"))
        if mv.get("status") in ("OPTIMAL", "INFEASIBLE") and gv.get("status") not in ("optimal", "infeasible"):
            only_m.append(f"{g} {r:g}")
        if gv.get("status") in ("optimal", "infeasible") and mv.get("status") in ("OPTIMAL", "INFEASIBLE"):
            both.append((g, r, gv.get("time_to_proof_s") or 0.0, mv.get("wall_s") or 0.0, gv.get("status")))
            ratios_t.append((gv.get("time_to_proof_s") or 0.0) / max(1e-3, mv.get("wall_s") or 1e-3))
    gvals = [res[k] for k in res if k[2] == "given"]
    fvals = [res[k] for k in res if k[2] == "free"]
    decided = sum(1 for d in gvals if d["status"] in ("optimal", "infeasible"))
    gaps = [d["gap"] for d in fvals if d.get("gap") is not None]
    lines += ["", f"* `--order given`: {decided} of {len(gvals)} rows decided (optimal or infeasible) within the limit.",
              f"* `--order free`: {sum(1 for d in fvals if d['status'] in ('optimal', 'infeasible'))} of {len(fvals)} "
              f"rows decided; median final gap over rows with a schedule "
              f"{'-' if not gaps else f'{100 * statistics.median(gaps):.3f} %'} ({len(gaps)} rows).",
              f"* Rows both memsched (given) and Moccasin decide: {len(both)}"
              + ("" if not ratios_t else f"; median ratio of memsched's time to proof to Moccasin's wall time "
                                         f"{statistics.median(ratios_t):.2f}; median times "
                                         f"{statistics.median(b[2] for b in both):.1f} s against "
                                         f"{statistics.median(b[3] for b in both):.1f} s"),
              _optimal_medians(both),
              f"* Rows both prove optimal: {len(same)}, with identical values on {sum(same)}.",
              "* Rows Moccasin decides (in its stage class) and memsched `--order given` does not within the limit: "
              + (", ".join(only_m) if only_m else "none") + ".", ""]
    open_rows = [(g, r, res[(g, r, "given")]) for g, r in keys if (g, r, "given") in res
                 and res[(g, r, "given")].get("status") not in ("optimal", "infeasible")]
    if open_rows:
        lines += ["### `--order given`: the rows left open, and what is missing", "",
                  "`missing` says which side did not close: `bound` (a schedule within the budget is known, the lower "
                  "bound did not reach it), `schedule` (no schedule within the budget found, and no refutation). "
                  "`relaxation` is the given-order stage relaxation's part: its proven extra compute over the baseline, "
                  "whether it was solved, its seconds (`-`: it did not run, as when no schedule was found first; `skipped`: too large to build in its share; `compact form`: built with one load variable per stage, docs/remat.md; `compact, stages a..n form`: its tail window of stages, docs/remat.md \"Windows of stages\"; `expanded, stage cuts, before a schedule form`: the relaxation with stage no-good cuts run before any schedule within the budget was known, docs/remat.md \"The cut loop before the first schedule\").", "",
                  "| graph | r | value | lower bound | gap % | missing | relaxation: extra / solved / s | note |",
                  "|" + "---|" * 8]
        for g, r, d in open_rows:
            rx = d.get("given_relaxation") or {}
            rxs = ("-" if not rx else f"skipped ({rx['skipped']})" if rx.get("skipped") else f"{_v(rx.get('extra'))} / {'yes' if rx.get('complete') else 'no'} / "
                   f"{_t(rx.get('s'))}" + (" (not built)" if any("not built" in str(c) for c in rx.get("checks", ()))
                                           else "") + (f" ({rx['form']} form)" if str(rx.get("form", "")).startswith(("compact", "expanded, stage cuts")) else ""))
            gap = d.get("gap")
            lines.append(f"| {g} | {r:g} | {_v(d.get('value'))} | {_v(d.get('lower_bound'))} | "
                         f"{'-' if gap is None else f'{100 * gap:.3f}'} | "
                         f"{'bound' if d.get('value') is not None else 'schedule'} | {rxs} | "
                         f"{(d.get('message') or '').replace('|', '/')[:120]} |")
        lines.append("")
        longer = ROOT / "benchmarks" / "results" / "remat_stage_cuts.json"
        if longer.exists():  # open rows decided with a longer limit (bench_remat_stage_cuts.py)
            data = json.loads(longer.read_text())
            later = {(row["graph"], row["r"]): row["with"] for row in data["rows"]}
            for g, r, _d in open_rows:
                w = later.get((g, r))
                if w and w["status"] in ("optimal", "infeasible"):
                    lines.append(f"* {g} {r:g}: decided with a {data['time_limit']:g} s limit in the section \"Given "
                                 f"order with stage no-good cuts\": {w['status']}"
                                 + (f" at {_v(w['compute'])}" if w["compute"] is not None else "")
                                 + f" in {w['wall_s']} s ({data['started']} UTC).")
            lines.append("")
    runs = [((g, r, t), res[(g, r, t)]) for g, r in keys for t in ("run:given", "run:free") if (g, r, t) in res]
    if runs:
        lines += ["### The schedules run (`memsched run`, numpy)", "",
                  f"Each stored schedule of the {', '.join(RUN_CHECK)} rows emitted as a numpy program and run "
                  f"(`memsched run GRAPH SCHEDULE --backend numpy --scale {RUN_SCALE}`: tensor sizes divided by "
                  f"{RUN_SCALE}, rounded up, so the programs fit in memory), realized peak (every numpy allocation) "
                  "against the evaluator's peak of the same scaled graph; `--run-check` of the script. A check whose "
                  "schedule is no longer the row's (a later re-run) is marked stale.", "",
                  "| graph | r | order | compute | peak (model, unscaled) | modeled peak (scaled) | realized peak | "
                  "realized = modeled |", "|" + "---|" * 8]
        nmatch = 0
        for (g, r, tool), c in runs:
            row = res.get((g, r, tool.split(":")[1]), {})
            stale = row.get("value") != c.get("value") or row.get("peak") != c.get("peak")
            ok = c.get("match") is True and c.get("rc") == 0
            nmatch += ok and not stale
            lines.append(f"| {g} | {r:g} | {tool.split(':')[1]} | {_v(c.get('value'))} | {_v(c.get('modeled_peak_unscaled'))}"
                         f" | {_v(c.get('modeled_peak'))} | {_v(c.get('realized_peak'))} | "
                         f"{'yes' if ok else 'NO (' + str(c.get('run_status')) + ')'}{' (stale)' if stale else ''} |")
        lines += ["", f"* {nmatch} of {len(runs)} schedules run with realized peak = modeled peak.", ""]
    SECTION.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", default=None, help="comma list of GRAPH:r (default: every graph x r)")
    ap.add_argument("--tools", default="given,free,moccasin")
    ap.add_argument("--moccasin-dir", default="/work/scratch/moccasin")
    ap.add_argument("--moccasin-python", default="/work/scratch/moccasin/venv/bin/python",
                    help="a Python with the OR-Tools Moccasin was written for (9.7; 9.15 rejects its generators)")
    ap.add_argument("--moccasin-one", nargs=5, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--run-check", action="store_true",
                    help="after the solves, run each stored VGG/fcn_8 schedule with `memsched run` on numpy")
    ap.add_argument("--rerun", default="", help="comma list of tools to run again on the rows although results exist "
                                                "(the earlier result stays in the file and in the table)")
    a = ap.parse_args(argv)
    if a.moccasin_one:
        path, r, tl, w, mdir = a.moccasin_one
        print(json.dumps(run_moccasin_here(path, float(r), float(tl), int(w), mdir)))
        return 0
    if not DATA.is_dir():
        print(f"bench_remat_proofs: {DATA} is absent", file=sys.stderr)
        return 2
    rows = [(g, r) for g in GRAPHS for r in RATIOS] if not a.rows else \
        [(x.split(":")[0], float(x.split(":")[1])) for x in a.rows.split(",")]
    tools = a.tools.split(",")
    done = load_results()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    cmd = "nice .venv/bin/python benchmarks/bench_remat_proofs.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rerun_done: set = set()
    if not a.report_only:
        for g, r in rows:
            path = str(DATA / GRAPHS[g])
            for tool in tools:
                if (g, r, tool) in done and tool not in a.rerun.split(",") or (g, r, tool) in rerun_done:
                    continue
                rerun_done.add((g, r, tool))
                load1 = round(os.getloadavg()[0], 2)  # the machine is shared: its load when this row started
                if tool == "moccasin":
                    if not Path(a.moccasin_dir, "src", "moccasin", "cp.py").exists():
                        continue
                    d = run_moccasin(path, r, a.time_limit, a.workers, a.moccasin_dir, a.moccasin_python)
                else:
                    d = run_memsched(path, r, tool, a.time_limit, a.workers)
                d.update({"graph": g, "r": r, "tool": tool, "time_limit": a.time_limit, "workers": a.workers,
                          "cmd": cmd, "load1": load1, "started": time.strftime("%H:%M", time.gmtime())})
                if (g, r, tool) in done:
                    d["earlier"] = done[(g, r, tool)].get("earlier") or done[(g, r, tool)]
                done[(g, r, tool)] = d
                with RESULTS.open("a") as f:
                    f.write(json.dumps({k: v for k, v in d.items() if k != "earlier"}) + "\n")
                print(f"{g} {r} {tool}: {d.get('status')} {d.get('value')} [{d.get('wall_s')} s]", flush=True)
                write_section(done, cmd, a.time_limit, a.workers)
    if a.run_check:
        for g, r in rows:
            for tool in ("given", "free"):
                d = done.get((g, r, tool))
                if g not in RUN_CHECK or not d or not d.get("schedule"):
                    continue
                c = run_check(str(DATA / GRAPHS[g]), d["schedule"], tool)
                c.update({"graph": g, "r": r, "tool": f"run:{tool}", "value": d.get("value"), "peak": d.get("peak"),
                          "cmd": cmd})
                done[(g, r, c["tool"])] = c
                with RESULTS.open("a") as f:
                    f.write(json.dumps(c) + "\n")
                print(f"{g} {r} run {tool}: match {c.get('match')} modeled {c.get('modeled_peak')} "
                      f"realized {c.get('realized_peak')}", flush=True)
    write_section(done, None if a.report_only else cmd, a.time_limit, a.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
