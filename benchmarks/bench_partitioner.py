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

    PYTHONPATH=/work/scratch/tfpkgs .venv/bin/python benchmarks/bench_partitioner.py \\
        [--models resnet50,gpt2_small] [--budgets 1.0,0.8,0.6,0.4,0.2] [--time-limit 60] [--no-write]

(``transformers`` is needed for the Hugging Face models only, and is not a dependency of
memsched: put an installation on PYTHONPATH.) Rows are merged per (model, budget) into
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


# ---------------------------------------------------------------- one model
def _memsched(g, B: int, base: float, limit: float, workers: int, row: dict) -> None:
    from memsched.formulations import evaluate
    from memsched.solvers.remat.dispatch import solve_remat

    t = time.perf_counter()
    res = solve_remat(g, B, method="cp", time_limit=limit, workers=workers)
    row["ms_s"] = time.perf_counter() - t
    row["ms_status"] = str(res.status)
    if res.schedule is not None:
        ev2 = evaluate(g, res.schedule)  # the one judge, again
        row["ms_peak"], row["ms_extra"] = ev2.peak, ev2.compute - base
        row["ms_recomputed_ops"] = len(res.schedule.computes()) - g.n_ops
    row["ms_lower_bound"] = res.lower_bound
    row["ms_message"] = res.message


def run_model(name: str, budgets: list[float], limit: float, workers: int, ratios=()) -> list[dict]:
    from memsched.formulations import evaluate
    from memsched.instances.corpus_aot import SIZES, capture_joint, joint_to_graph

    t = time.perf_counter()
    joint, inputs, kw = capture_joint(name)
    cap_s = time.perf_counter() - t
    b, s = SIZES[name]
    g = joint_to_graph(joint, f"{name}_b{b}{f'_s{s}' if s else ''}_aot_joint")
    base = sum(g.cost)
    rows = []
    for bud in budgets:
        sched, info = partition_schedule(g, joint, inputs, kw, bud)
        ev = evaluate(g, sched)
        row = {"model": name, "graph": g.name, "ops": g.n_ops, "tensors": g.n_tensors, "capture_s": cap_s,
               "budget_knob": bud, "load": os.getloadavg()[0], "base_flops": base, "pt_peak": ev.peak,
               "pt_extra": ev.compute - base, **info}
        _memsched(g, int(ev.peak), base, limit, workers, row)
        rows.append(row)
        print(json.dumps(row), flush=True)
    p0 = next((r["pt_peak"] for r in rows if r["budget_knob"] == 1.0), None)
    for ratio in (ratios if p0 is not None else ()):
        # memsched alone at a fraction of the no-recompute plan's peak (knob 1.0)
        row = {"model": name, "graph": g.name, "ops": g.n_ops, "tensors": g.n_tensors, "capture_s": cap_s,
               "budget_knob": None, "ratio": ratio, "B": int(ratio * p0), "load": os.getloadavg()[0],
               "base_flops": base}
        _memsched(g, int(ratio * p0), base, limit, workers, row)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


# ------------------------------------------------------------------ report
def _pct(x, base):
    """Extra compute as FLOPs and share of the no-recompute FLOPs (tiny figures stay visible)."""
    if not base:
        return "-"
    return f"{x:,.0f} ({100.0 * x / base:.3f} %)"


def render(rows: list[dict], cmd: str) -> str:
    mib = 1 << 20
    out = ["## Remat at scale: PyTorch's activation-memory-budget partitioner vs memsched (issue 17)", "",
           f"Measured on {time.strftime('%Y-%m-%d', time.gmtime())} (UTC) with `{cmd}` on the shared 2-core "
           "machine (1-minute load average per row). Graph: the AOTAutograd joint forward + backward graph of "
           "`loss = sum(model(x))` (the graph the partitioner cuts; corpus model builders, random weights), one "
           "memsched operator per non-view ATen call, cost = FLOPs by torch's flop-counter formulas (the "
           "partitioner's own runtime estimate `max(flops, 1)`: recomputing an operator without a FLOP "
           "formula, such as a pointwise one, costs 1 for both). *PyTorch*: the unmodified `min_cut_rematerialization_partition` at "
           "`activation_memory_budget` = knob; its forward/backward split turned into a memsched schedule "
           "(forward operators, then backward operators, recomputed forward operators counted again, every "
           "copy freed after its last read) and judged by the evaluator. *memsched*: `solve_remat(method='cp')` "
           "(CP-SAT, free order, default recompute cap) at budget B = PyTorch's evaluated peak, minimizing "
           "compute, re-judged by the evaluator; its lower bound is on the extra compute of any schedule "
           "within B for the asked problem (none claimed when the method's class is narrower). "
           "Extra compute: FLOPs (and % of the no-recompute FLOPs). MiB = 2^20 bytes.", "",
           "| graph | operators | knob | load | PyTorch peak MiB | PyTorch extra | saved / recomputed ops | "
           "partition s | memsched peak MiB | memsched extra | memsched recomputed ops | status | lower bound "
           "(extra) | memsched s | dominates |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pt_rows = [r for r in rows if r.get("budget_knob") is not None]
    for r in pt_rows:
        base = r["base_flops"]
        ms = "ms_peak" in r
        dom = ms and r["ms_peak"] <= r["pt_peak"] and r["ms_extra"] <= r["pt_extra"]
        lb = r.get("ms_lower_bound")
        out.append(f"| {r['graph']} | {r['ops']:,} | {r['budget_knob']} | {r['load']:.1f} | "
                   f"{r['pt_peak'] / mib:,.2f} | {_pct(r['pt_extra'], base)} | {r['saved']} / "
                   f"{r['recomputed_ops']} | {r['partition_s']:.1f} | "
                   + (f"{r['ms_peak'] / mib:,.2f} | {_pct(r['ms_extra'], base)} | {r['ms_recomputed_ops']}"
                      if ms else "- | - | -")
                   + f" | {r['ms_status']} | "
                   + (_pct(lb - base, base) if isinstance(lb, (int, float)) and lb >= base else "-")
                   + f" | {r['ms_s']:.1f} | {'yes' if dom else 'no'} |")
    n_dom = sum(1 for r in pt_rows if "ms_peak" in r and r["ms_peak"] <= r["pt_peak"] and r["ms_extra"] <= r["pt_extra"])
    out += ["", f"memsched's (peak, extra compute) is at least as good in both coordinates on {n_dom} of "
            f"{len(pt_rows)} rows.", ""]
    out += ["*status* is `solve_remat`'s. Its optimality test compares total compute with a relative "
            "tolerance of 1e-9 (solvers/result.py `same_value`): on totals of 5-10 x 10^10 FLOPs that is 50-100 "
            "FLOPs, so a row marked optimal with an extra of 27 and a bound of 1 is optimal only up to that "
            "tolerance (here: up to 26 recomputed operators of cost 1); the bound column is the proven figure.", ""]
    for m in sorted({r["graph"] for r in pt_rows}):
        pk = {r["pt_peak"] for r in pt_rows if r["graph"] == m}
        if len(pk) == 1:
            out += [f"On {m} every knob gives PyTorch's plan the same peak ({pk.pop() / mib:,.2f} MiB): lower "
                    "knobs only add recomputation; memsched's order alone (no recomputation) is lower.", ""]
    rr = [r for r in rows if r.get("budget_knob") is None]
    if rr:
        out += ["memsched alone at budgets r x P0 (P0 = the peak of PyTorch's knob-1.0 plan, no recomputation), "
                "the issue's 0.8 / 0.6 / 0.4 / 0.2 (PyTorch's knob sets a share of saved activation bytes, not a "
                "peak, so it has no row at these budgets; its lowest peak above is the comparison):", "",
                "| graph | r | B MiB | load | memsched peak MiB | extra | recomputed ops | status | lower bound "
                "(extra) | s | message |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rr:
            base, lb = r["base_flops"], r.get("ms_lower_bound")
            out.append(f"| {r['graph']} | {r['ratio']} | {r['B'] / mib:,.2f} | {r['load']:.1f} | "
                       + (f"{r['ms_peak'] / mib:,.2f} | {_pct(r['ms_extra'], base)} | {r['ms_recomputed_ops']}"
                          if "ms_peak" in r else "- | - | -")
                       + f" | {r['ms_status']} | "
                       + (_pct(lb - base, base) if isinstance(lb, (int, float)) and lb >= base else "-")
                       + f" | {r['ms_s']:.1f} | {(r.get('ms_message') or '')[:90]} |")
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,gpt2_small,bert_base")
    ap.add_argument("--budgets", default="1.0,0.8,0.6,0.4,0.2")
    ap.add_argument("--ratios", default="0.8,0.6,0.4,0.2")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--render-only", action="store_true")
    a = ap.parse_args(argv)
    def key(r):
        return (r["model"], r.get("budget_knob"), r.get("ratio"))

    old = {key(r): r for r in json.loads(RESULTS.read_text())} if RESULTS.exists() else {}
    if not a.render_only:
        ratios = [float(x) for x in a.ratios.split(",") if x.strip()]
        for m in a.models.split(","):
            for r in run_model(m, [float(x) for x in a.budgets.split(",")], a.time_limit, a.workers, ratios):
                old[key(r)] = r
                if not a.no_write:
                    RESULTS.write_text(json.dumps(list(old.values()), indent=1) + "\n")
    rows = sorted(old.values(), key=lambda r: (r["model"], -(r.get("budget_knob") or 0), -(r.get("ratio") or 0)))
    models = ",".join(sorted({r["model"] for r in rows})) or a.models  # every model in the table
    cmd = (f"PYTHONPATH=/work/scratch/tfpkgs .venv/bin/python benchmarks/bench_partitioner.py --models {models} "
           f"--budgets {a.budgets} --ratios {a.ratios} --time-limit {a.time_limit:g}")
    text = render(rows, cmd)
    if not a.no_write:
        SECTION.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
