"""Remat at scale: PyTorch's activation-memory-budget partitioner vs memsched (section 27).

For a corpus model (instances/extract_models.py: CORPUS builders, random weights, no
download) the training step ``loss = sum(model(x))`` is traced by AOTAutograd
(``aot_function``) into its joint forward + backward graph, the very graph PyTorch's
partitioner cuts. That joint graph becomes a memsched Graph (``joint_to_graph``: one
operator per ATen call that is not a view; views and ``getitem`` read their base tensor;
tensor bytes from the traced shapes and dtypes; operator cost = FLOPs counted by
``torch.utils.flop_counter``'s formulas and at least 1, as the partitioner's own runtime
estimator (``activation_memory_budget_runtime_estimator = "flops"``: ``max(flops, 1)``); parameters and the input pinned; the loss and every gradient required).

Then, per ``activation_memory_budget`` b, the unmodified
``torch._functorch.partitioners.min_cut_rematerialization_partition`` (min-cut plus the
knapsack, default "dp" solver) splits the joint graph. Its decision becomes a memsched
schedule: the forward module's operators in order, then the backward module's (a forward
operator found again in the backward module is a recomputation), each tensor copy freed
after its last read (``schedule_from_sequence``): exactly the saved / recomputed choice,
since a tensor is alive in the backward only if the forward returns it (saved) or the
backward recomputes it. The evaluator gives its peak and compute. memsched's remat
(``solve_remat``, CP-SAT, free order) then gets the same budget B = that peak and minimizes
compute; its result is re-checked by the evaluator too.

    PYTHONPATH=$TFPKGS .venv/bin/python benchmarks/bench_partitioner.py \\
        [--models resnet50,gpt2_small] [--budgets 1.0,0.8,0.6,0.4,0.2] [--time-limit 60] [--no-write]

(``transformers`` is needed for the Hugging Face models only, and is not a dependency of
memsched: ``pip install --target $TFPKGS transformers==5.23.0`` puts one in a folder of your
choice, outside the project, for PYTHONPATH.) Rows are merged per (model, budget) into
benchmarks/results/partitioner.json and rendered into benchmarks/sections/27-partitioner.md.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SECTION = ROOT / "benchmarks" / "sections" / "27-partitioner.md"
RESULTS = ROOT / "benchmarks" / "results" / "partitioner.json"


# --------------------------------------------------------------- partition
def partition_schedule(g, joint, inputs, kw: dict, budget: float):
    """Run the real partitioner at ``budget``; return (schedule, info)."""
    import torch._functorch.config as fcfg
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    from memsched.instances.corpus_aot import partition_sequence
    from memsched.solvers.remat.local_search import schedule_from_sequence

    t = time.perf_counter()
    with fcfg.patch(activation_memory_budget=budget):
        fw, bw = min_cut_rematerialization_partition(copy.deepcopy(joint), inputs, **kw)
    wall = time.perf_counter() - t
    seq = partition_sequence(g, fw, bw)
    fwd = {n.name for n in fw.graph.nodes if n.op == "call_function" and n.name in g.op_index}
    saved = len(list(fw.graph.nodes)[-1].args[0]) - kw.get("num_fwd_outputs", 1)
    recomputed = len(seq) - g.n_ops
    return schedule_from_sequence(g, seq), {"partition_s": wall, "saved": saved, "recomputed_ops": recomputed,
                                            "fwd_ops": len(fwd)}


# ------------------------------------------------------- memsched run (numpy)
def memsched_run(graph_path: Path, g, sched, what: str, tmp: Path, timeout: float = 600.0) -> dict:
    """``memsched run GRAPH SCHEDULE --backend numpy --json`` in a subprocess: the realized
    peak of the emitted program against the evaluator's."""
    import subprocess

    from memsched.instances.formats import save_json

    sp = tmp / f"{what}.json"
    save_json({"events": sched.to_names(g)}, sp)
    exe = ROOT / ".venv" / "bin" / "memsched"
    cmd = [str(exe) if exe.exists() else "memsched", "run", str(graph_path), str(sp), "--backend", "numpy", "--json",
           "--max-bytes", str(4 << 30)]
    t = time.perf_counter()
    try:
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ran": False, "why": f"ran past {timeout:g} s"}
    try:
        d = json.loads(cp.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ran": False, "why": (cp.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return {"ran": True, "modeled": d["modeled_peak"], "realized": d["realized_peak"], "match": bool(d["match"]),
            "run_s": round(time.perf_counter() - t, 2)}


# ---------------------------------------------------------------- one model
def _memsched(g, B: int, base: float, limit: float, workers: int, row: dict, method: str = "cp"):
    """memsched at budget B (``cp``: solve_remat's CP-SAT driver; ``scale``: the two-phase
    checkpoint search with its scalable bounds, solvers/remat/scale.py); fills ``row``,
    returns the schedule (or None)."""
    from memsched.formulations import evaluate

    t = time.perf_counter()
    if method == "cp":
        from memsched.solvers.remat.dispatch import solve_remat

        res = solve_remat(g, B, method="cp", time_limit=limit, workers=workers)
    else:
        from memsched.solvers.remat.scale import solve_scale

        res = solve_scale(g, B, time_limit=limit)
    row["ms_method"] = method
    row["ms_s"] = time.perf_counter() - t
    row["ms_status"] = str(res.status)
    if res.schedule is not None:
        ev2 = evaluate(g, res.schedule)  # the one judge, again
        row["ms_peak"], row["ms_extra"] = ev2.peak, ev2.compute - base
        row["ms_recomputed_ops"] = len(res.schedule.computes()) - g.n_ops
    row["ms_lower_bound"] = res.lower_bound
    row["ms_message"] = res.message
    if method == "scale":
        row["ms_bound_checks"] = res.extra.get("bound_checks")
        row["ms_floor"] = res.extra.get("final_state_floor")
    return res.schedule


def run_model(name: str, budgets: list[float], limit: float, workers: int, ratios=(), scale_limit: float = 60.0,
              execute: bool = True, floor_ratios=()) -> list[dict]:
    import tempfile

    from memsched.formulations import Schedule, evaluate
    from memsched.instances.corpus_aot import capture_joint, graph_name, joint_to_graph
    from memsched.instances.formats import save_graph

    t = time.perf_counter()
    joint, inputs, kw = capture_joint(name)
    cap_s = time.perf_counter() - t
    g = joint_to_graph(joint, graph_name(name))
    base = sum(g.cost)
    given = evaluate(g, Schedule.from_order(g, g.given_order())).peak
    tmp = Path(tempfile.mkdtemp(prefix="bench27-"))
    gpath = tmp / "graph.json"
    save_graph(g, gpath)

    def run(sched, what):
        return memsched_run(gpath, g, sched, what, tmp) if execute and sched is not None else None

    import shutil

    rows, plans = [], []
    for bud in budgets:
        sched, info = partition_schedule(g, joint, inputs, kw, bud)
        ev = evaluate(g, sched)
        row = {"model": name, "graph": g.name, "ops": g.n_ops, "tensors": g.n_tensors, "capture_s": cap_s,
               "measured": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
               "budget_knob": bud, "load": os.getloadavg()[0], "base_flops": base, "given_peak": given,
               "pt_peak": ev.peak, "pt_extra": ev.compute - base, **info}
        plans.append((ev.peak, ev.compute - base, bud))
        row["pt_run"] = run(sched, f"pytorch_{bud}")
        row["ms_run"] = run(_memsched(g, int(ev.peak), base, limit, workers, row), f"memsched_{bud}")
        rows.append(row)
        print(json.dumps(row), flush=True)
    p0 = next((r["pt_peak"] for r in rows if r["budget_knob"] == 1.0), None)
    if p0 is None:
        ratios, floor_ratios = (), ()
    from memsched.solvers.remat.scale import final_state_floor

    floor = final_state_floor(g)
    for kind, ratio in [("p0", x) for x in ratios] + [("floor", x) for x in floor_ratios]:
        # budgets r x P0 (P0 = the peak of PyTorch's knob-1.0 plan), or F + r x (P0 - F) with
        # F the final-state floor (the pinned inputs and the required outputs)
        B = int(ratio * p0) if kind == "p0" else int(floor + ratio * (p0 - floor))
        row = {"model": name, "graph": g.name, "ops": g.n_ops, "tensors": g.n_tensors, "capture_s": cap_s,
               "measured": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "budget_knob": None, "ratio": ratio, "rel": kind, "B": B, "load": os.getloadavg()[0],
               "base_flops": base, "given_peak": given, "floor": floor}
        # PyTorch's cheapest plan (over the knobs run) whose peak fits B, if any
        fit = sorted((x, pk, k) for pk, x, k in plans if pk <= B)
        row["pt_fit"] = {"knob": fit[0][2], "peak": fit[0][1], "extra": fit[0][0]} if fit else None
        sched = _memsched(g, B, base, scale_limit, workers, row, method="scale")
        if row["pt_fit"] is not None and row["ms_status"] not in ("optimal", "infeasible"):
            # a PyTorch plan fits: memsched's CP driver too, the cheaper schedule is memsched's answer
            alt: dict = {}
            s2 = _memsched(g, B, base, limit, workers, alt, method="cp")
            row["ms_s"] += alt["ms_s"]
            row["cp"] = {k: alt.get(k) for k in ("ms_status", "ms_extra", "ms_peak", "ms_s", "ms_lower_bound")}
            lbs = [x for x in (row.get("ms_lower_bound"), alt.get("ms_lower_bound")) if x is not None]
            if s2 is not None and ("ms_extra" not in row or alt["ms_extra"] < row["ms_extra"]):
                for k in ("ms_peak", "ms_extra", "ms_recomputed_ops", "ms_status"):
                    row[k] = alt[k]
                row["ms_message"] = "CP-SAT driver: " + (alt.get("ms_message") or "")
                row["ms_method"] = "cp"
                sched = s2
            row["ms_lower_bound"] = max(lbs) if lbs else None  # both bounds hold for the asked problem
            if row["ms_lower_bound"] is not None and "ms_extra" in row and \
                    row["ms_lower_bound"] >= base + row["ms_extra"]:
                row["ms_status"] = "optimal"
        row["ms_run"] = run(sched, f"{kind}_{ratio}")
        rows.append(row)
        print(json.dumps(row), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


# ------------------------------------------------------------------ report
def _pct(x, base):
    """Extra compute as FLOPs and share of the no-recompute FLOPs (tiny figures stay visible)."""
    if not base:
        return "-"
    return f"{x:,.0f} ({100.0 * x / base:.3f} %)"


def _lb(r):
    lb, base = r.get("ms_lower_bound"), r["base_flops"]
    return lb - base if isinstance(lb, (int, float)) and lb >= base else None


def _gap(r):
    lb = _lb(r)
    if "ms_extra" not in r or lb is None:
        return "-"
    return _pct(r["ms_extra"] - lb, r["base_flops"])


def _ran(x):
    if x is None:
        return "not run"
    if not x.get("ran"):
        return f"could not run: {x.get('why', '?')}"
    return ("= modeled" if x["match"] else f"MISMATCH {x['realized']} vs {x['modeled']}") + f" ({x['run_s']:.1f} s)"


def _dom(r):
    return "ms_peak" in r and r["ms_peak"] <= r["pt_peak"] and r["ms_extra"] <= r["pt_extra"]


def _ratio_dom(r: dict, rows: list[dict], mib: int) -> str:
    """Does a memsched schedule within B dominate PyTorch's cheapest plan within B? This row's
    own schedule, or memsched's schedule at that plan's knob row (budget = the plan's peak <= B)."""
    pf = r.get("pt_fit")
    if pf is None:
        return "no PyTorch plan fits"
    if "ms_peak" in r and r["ms_peak"] <= pf["peak"] and r["ms_extra"] <= pf["extra"]:
        return "yes"
    kr = next((x for x in rows if x["model"] == r["model"] and x.get("budget_knob") == pf["knob"]), None)
    if kr is not None and _dom(kr):
        return (f"yes, by memsched's schedule at knob {pf['knob']}'s peak: {kr['ms_peak'] / mib:,.2f} MiB, "
                f"{_pct(kr['ms_extra'], r['base_flops'])}")
    return "no"


def _ratio_row(r: dict, mib: int, rows: list[dict]) -> str:
    base = r["base_flops"]
    lb = _lb(r)
    pf = r.get("pt_fit")
    ms = "ms_peak" in r
    dom = _ratio_dom(r, rows, mib)
    fl = r.get("floor")
    return (f"| {r['graph']} | {r['ratio']} | {r['B'] / mib:,.2f} | {r['load']:.1f} | "
            + (f"{fl / mib:,.2f}" if fl else "-") + " | "
            + (f"knob {pf['knob']}: {pf['peak'] / mib:,.2f} MiB, {_pct(pf['extra'], base)}" if pf else "none")
            + " | "
            + (f"{r['ms_peak'] / mib:,.2f} | {_pct(r['ms_extra'], base)} | {r['ms_recomputed_ops']}"
               if ms else "- | - | -")
            + f" | {r['ms_status']} | " + (_pct(lb, base) if lb is not None else "-")
            + f" | {_gap(r)} | {r['ms_s']:.1f} | {_ran(r.get('ms_run'))} | {dom} | "
            + f"{(r.get('ms_message') or '')[:110]} |")


def _day(r: dict) -> str:
    """The UTC day a row was measured (rows of 2026-12-01 carry only the time)."""
    m = r.get("measured", "")
    return m[:10] if len(m) > 5 else "2026-12-01"


def render(rows: list[dict], cmd: str) -> str:
    mib = 1 << 20
    out = ["## Remat at scale: PyTorch's activation-memory-budget partitioner vs memsched (issue 17)", "",
           f"Measured on {', '.join(sorted({_day(r) for r in rows}))} (UTC) with `{cmd}` on the shared 2-core "
           "machine (1-minute load average at the start of each row). Graph: the AOTAutograd joint forward + "
           "backward graph of `loss = sum(model(x))` (the graph the partitioner cuts; corpus model builders, "
           "random weights), one memsched operator per non-view ATen call, cost = FLOPs by torch's flop-counter "
           "formulas (the partitioner's own runtime estimate `max(flops, 1)`: recomputing an operator without a "
           "FLOP formula, such as a pointwise one, costs 1 for both). *PyTorch*: the unmodified "
           "`min_cut_rematerialization_partition` at `activation_memory_budget` = knob; its forward/backward "
           "split turned into a memsched schedule (forward operators, then backward operators, recomputed "
           "forward operators counted again, every copy freed after its last read) and judged by the evaluator. "
           "*memsched* at the knob rows: `solve_remat(method='cp')` (CP-SAT, free order) at budget B = "
           "PyTorch's evaluated peak, minimizing compute; at the budget rows: `solve_scale` "
           "(solvers/remat/scale.py: two-phase checkpoint search, final-state floor, threshold order bound, "
           "moment-cut covering bound; docs/remat-scale.md, docs/remat.md). Every schedule is re-judged by the evaluator; *lower bound* is on the extra "
           "compute of every schedule within B of the asked problem (any order, any recomputation); *gap* = "
           "memsched's extra minus that bound (FLOPs, and % of the no-recompute FLOPs). *run*: `memsched run GRAPH "
           "SCHEDULE --backend numpy --json` executed the schedule as a program and measured its realized peak "
           "(every numpy allocation); '= modeled' means realized peak = the evaluator's peak to the byte. "
           "MiB = 2^20 bytes.", "",
           "Rows are kept per (model, budget) from the last run that measured them (same options): "
           + "; ".join(f"{m}: " + ", ".join(sorted({r.get('measured', '2026-12-01 before 11:00') for r in rows
                                                   if r['model'] == m})) + " UTC"
                       for m in sorted({r["model"] for r in rows}))
           + ". Rows measured from 2026-12-01 11:00 UTC on have the moment-cut covering bound "
           "(solvers/remat/cut_bound.py) in their lower bounds; earlier rows do not. Rows from 2026-12-04 on also "
           "have the on-demand eviction greedy among solve_scale's searches, and its best schedule drops the "
           "recomputations it can do without (docs/remat-scale.md).", "",
           "### At PyTorch's own peak, knob by knob", "",
           "| graph | operators | knob | load | PyTorch peak MiB | PyTorch extra | saved / recomputed ops | "
           "partition s | PyTorch run | memsched peak MiB | memsched extra | recomputed ops | status | "
           "lower bound (extra) | gap | memsched s | memsched run | dominates |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pt_rows = [r for r in rows if r.get("budget_knob") is not None]
    for r in pt_rows:
        base = r["base_flops"]
        ms = "ms_peak" in r
        lb = _lb(r)
        out.append(f"| {r['graph']} | {r['ops']:,} | {r['budget_knob']} | {r['load']:.1f} | "
                   f"{r['pt_peak'] / mib:,.2f} | {_pct(r['pt_extra'], base)} | {r['saved']} / "
                   f"{r['recomputed_ops']} | {r['partition_s']:.1f} | {_ran(r.get('pt_run'))} | "
                   + (f"{r['ms_peak'] / mib:,.2f} | {_pct(r['ms_extra'], base)} | {r['ms_recomputed_ops']}"
                      if ms else "- | - | -")
                   + f" | {r['ms_status']} | " + (_pct(lb, base) if lb is not None else "-")
                   + f" | {_gap(r)} | {r['ms_s']:.1f} | {_ran(r.get('ms_run'))} | {'yes' if _dom(r) else 'no'} |")
    n_dom = sum(1 for r in pt_rows if _dom(r))
    out += ["", f"memsched's (peak, extra compute) is at least as good in both coordinates on {n_dom} of "
            f"{len(pt_rows)} rows.", ""]
    out += ["*status* is `solve_remat`'s. Its optimality test compares total compute with a relative "
            "tolerance of 1e-9 (solvers/result.py `same_value`): on totals of 5-10 x 10^10 FLOPs that is 50-100 "
            "FLOPs, so a row marked optimal with a gap above 0 is optimal only up to that tolerance; the bound "
            "column is the proven figure.", ""]
    for m in sorted({r["graph"] for r in pt_rows}):
        pk = {r["pt_peak"] for r in pt_rows if r["graph"] == m}
        if len(pk) == 1:
            out += [f"On {m} every knob gives PyTorch's plan the same peak ({pk.pop() / mib:,.2f} MiB): lower "
                    "knobs only add recomputation; memsched's order alone (no recomputation) is lower.", ""]
    head = ["| graph | r | B MiB | load | floor MiB | PyTorch within B | memsched peak MiB | extra | "
            "recomputed ops | status | lower bound (extra) | gap | s | memsched run | dominates | how |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rr = [r for r in rows if r.get("budget_knob") is None and r.get("rel", "p0") == "p0"]
    if rr:
        out += ["### At budgets r x P0 (the issue's 0.8 / 0.6 / 0.4 / 0.2)", "",
                "P0 = the peak of PyTorch's knob-1.0 plan (its no-recompute plan; on GPT-2 the knob-1.0 plan "
                "already recomputes 24 cost-1 operators). *floor* F = the pinned inputs plus every required output "
                "(the parameters and their gradients): every schedule ends with them resident, so a budget "
                "below it is infeasible for every method. *PyTorch within B*: the cheapest of PyTorch's plans "
                "above (all knobs) whose peak fits B; memsched dominates when its peak and extra compute are at "
                "most that plan's, by this row's schedule (least compute found within B) or by memsched's schedule at that plan's knob row above (whose budget is the plan's peak, so it lies within B too). PyTorch's knob is a share of saved activation bytes, not a peak, so these "
                "budgets are reached by PyTorch only when one of its plans happens to fit. memsched: "
                "`solve_scale`; where a PyTorch plan fits and `solve_scale` did not prove optimality, the CP-SAT "
                "driver too (same time limit), the cheaper schedule kept (*how* says which; *s* is both).", ""]
        out += head + [_ratio_row(r, mib, rows) for r in rr] + [""]
    rf = [r for r in rows if r.get("budget_knob") is None and r.get("rel") == "floor"]
    if rf:
        out += ["### At budgets F + r x (P0 - F): a share r of the memory above the floor", "",
                "On these graphs the parameters and their gradients (F) are most of P0 (BERT-base and GPT-2 "
                "small at batch 1, sequence 128: F is 82 % and 76 % of P0, and above 0.8 x P0 on BERT), so r x P0 "
                "leaves no room for activations; these budgets give the activations (and the backward's "
                "temporaries) a share r of what they have in PyTorch's knob-1.0 plan. Columns as above.", ""]
        out += head + [_ratio_row(r, mib, rows) for r in rf] + [""]
    allr = rr + rf
    if allr:
        fits = [r for r in allr if r.get("pt_fit")]
        dom = [r for r in fits if _ratio_dom(r, rows, mib).startswith("yes")]
        inf = [r for r in allr if r["ms_status"] == "infeasible"]
        unk = [r for r in allr if "ms_peak" not in r and r["ms_status"] != "infeasible"]
        sched = [r for r in allr if "ms_peak" in r]
        ran = [r for r in sched if (r.get("ms_run") or {}).get("match")]
        out += [f"Budget rows: {len(allr)}; a PyTorch plan fits on {len(fits)}, and memsched dominates it on "
                f"{len(dom)} of them; {len(inf)} are proven infeasible for every schedule (the reason is in "
                f"*how*); memsched has a schedule on {len(sched)} ({len(ran)} executed with realized = modeled)"
                + (f" and none on {len(unk)}" if unk else ": every budget row has a schedule or a proof of infeasibility")
                + (" (" + ", ".join(f"{r['graph']} at " + (f"{r['ratio']} x P0" if r.get("rel", "p0") == "p0" else
                                           f"F + {r['ratio']} x (P0 - F)") for r in unk) + ": open, the lower bound "
                   "column is what is proven)" if unk else "") + ".", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,gpt2_small,bert_base")
    ap.add_argument("--budgets", default="1.0,0.8,0.6,0.4,0.2")
    ap.add_argument("--ratios", default="0.8,0.6,0.4,0.2", help="budgets r x P0")
    ap.add_argument("--floor-ratios", default="0.8,0.6,0.4,0.2", help="budgets F + r x (P0 - F)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds for the CP driver at each knob row")
    ap.add_argument("--scale-limit", type=float, default=60.0, help="seconds for solve_scale at each budget row")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="skip memsched run (numpy execution)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--render-only", action="store_true")
    a = ap.parse_args(argv)

    def key(r):
        return (r["model"], r.get("budget_knob"), r.get("ratio"), r.get("rel", "p0"))

    old = {key(r): r for r in json.loads(RESULTS.read_text())} if RESULTS.exists() else {}
    if not a.render_only:
        ratios = [float(x) for x in a.ratios.split(",") if x.strip()]
        fr = [float(x) for x in a.floor_ratios.split(",") if x.strip()]
        for m in a.models.split(","):
            for r in run_model(m, [float(x) for x in a.budgets.split(",")], a.time_limit, a.workers, ratios,
                               scale_limit=a.scale_limit, execute=not a.no_run, floor_ratios=fr):
                old[key(r)] = r
                if not a.no_write:
                    RESULTS.write_text(json.dumps(list(old.values()), indent=1) + "\n")
    rows = sorted(old.values(), key=lambda r: (r["model"], r.get("rel", "p0") == "floor", -(r.get("budget_knob") or 0),
                                               -(r.get("ratio") or 0)))
    models = ",".join(sorted({r["model"] for r in rows})) or a.models  # every model in the table
    cmd = (f"PYTHONPATH=$TFPKGS nice .venv/bin/python benchmarks/bench_partitioner.py --models {models} "
           f"--budgets {a.budgets} --ratios {a.ratios} --floor-ratios {a.floor_ratios} --time-limit {a.time_limit:g} --scale-limit {a.scale_limit:g}")
    text = render(rows, cmd)
    if not a.no_write:
        SECTION.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
