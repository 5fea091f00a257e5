"""Benchmark: executable schedules of real models (docs/executors.md).

For every shipped real-model instance (instances/shipped/models/, inference and
training): the stock order's peak (the program order FX traced), the best ordering
heuristic's peak, the exact solver's peak and lower bound (certified optimal or the
gap), the realized peak of the emitted FX program (ATen ops called in that order)
for the stock and the best order, whether realized == modeled to the byte and the
outputs are bitwise identical, the saving, and the static arena (best-fit, CP-SAT when
best-fit misses) for the best order. The realized peak is measured twice, by
independent methods: a libc posix_memalign/free shim (blocks requested by torch's CPU
allocator, solvers/executors/fx.py) and the profiler's allocation events (the
importer's method for workspace); both must equal the model. The CUDA check is
benchmarks/gpu_check.py (`make gpu-check`).

    .venv/bin/python benchmarks/bench_exec.py [--quick] [--exact-time 30]

Writes benchmarks/sections/70-exec.md and benchmarks/results/exec.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memsched.formulations import Schedule, evaluate  # noqa: E402
from memsched.instances import load_graph  # noqa: E402

QUICK = ["ds_cnn_kws", "mobilenet_v1_025_vww", "transformer_block", "resnet18"]


def mib(n) -> str:
    return f"{n / 2**20:.2f}"


def bench_one(name: str, training: bool, exact_time: float) -> dict:
    from memsched.instances.extract_models import build
    from memsched.instances.torch_import import import_model
    from memsched.solvers.executors.fx import run_fx_schedules
    from memsched.solvers.executors import plan_arena
    from memsched.solvers.ordering.heuristics import best_with_peaks

    mode = "train" if training else "infer"
    shipped = ROOT / "instances" / "shipped" / "models" / f"{name}_{mode}.json"
    g = load_graph(shipped)
    stock = Schedule.from_order(g, g.given_order())
    stock_peak = evaluate(g, stock).peak
    t0 = time.perf_counter()
    chosen, order, peaks = best_with_peaks(g)
    heur_s = time.perf_counter() - t0
    best = Schedule.from_order(g, order)
    best_peak = peaks[chosen]
    row = {"model": name, "mode": mode, "ops": g.n_ops, "tensors": g.n_tensors, "stock_peak": stock_peak,
           "best_heuristic": chosen, "best_peak": best_peak, "heuristics_s": round(heur_s, 3)}
    try:
        from memsched.solvers.ordering.exact import solve_exact
    except ImportError:
        solve_exact = None
    if solve_exact is not None and exact_time > 0:
        res = solve_exact(g, time_limit=exact_time, workers=1)
        row.update(exact_peak=res.peak, lower_bound=res.lower_bound, exact_status=res.status,
                   certified=bool(res.extra.get("certified")), exact_s=round(res.wall_s, 2))
        if res.peak is not None and res.peak < best_peak:
            best, best_peak = res.schedule, res.peak
            row["best_source"] = "exact"
    row["final_peak"] = best_peak
    row["saving"] = (stock_peak - best_peak) / stock_peak if stock_peak else 0.0
    # re-import the model (same graph: checked) and run the emitted FX programs
    model, x = build(name)
    t0 = time.perf_counter()
    imp = import_model(model, (x,), training=training, name=g.name)
    row["import_s"] = round(time.perf_counter() - t0, 2)
    same = [o.name for o in imp.graph.ops] == [o.name for o in g.ops] and imp.graph.size == g.size
    row["reimport_identical_sizes"] = same
    g2 = imp.graph
    sched_stock = Schedule.from_names(g2, stock.to_names(g))
    sched_best = Schedule.from_names(g2, best.to_names(g))
    t0 = time.perf_counter()
    fx = run_fx_schedules(imp, [sched_stock, sched_best])
    row["fx_run_s"] = round(time.perf_counter() - t0, 2)
    row["stock_modeled_fx"], row["stock_realized"] = fx[0]["modeled_peak"], fx[0]["realized_peak"]
    row["best_modeled_fx"], row["best_realized"] = fx[1]["modeled_peak"], fx[1]["realized_peak"]
    row["stock_realized_profiler"], row["best_realized_profiler"] = (fx[0]["realized_peak_profiler"],
                                                                     fx[1]["realized_peak_profiler"])
    row["independent"] = all(r["independent"] and not r["shim_overflow"] for r in fx)
    row["aligned_all_over_model"] = max((r["aligned_peak_all"] or 0) - r["modeled_peak"] for r in fx)
    row["exact_match"] = all(r["realized_peak"] == r["realized_peak_profiler"] == r["modeled_peak"] for r in fx)
    row["identical_outputs"] = fx[0]["output_hash"] == fx[1]["output_hash"]
    row["realized_saving"] = (fx[0]["realized_peak"] - fx[1]["realized_peak"]) / fx[0]["realized_peak"]
    t0 = time.perf_counter()
    plan = plan_arena(g, best, time_limit=10.0)
    row.update(arena_size=plan.size, arena_method=plan.method, arena_status=plan.status,
               arena_best_fit=plan.extra["best_fit_size"], arena_s=round(time.perf_counter() - t0, 2))
    return row


def _diff(r) -> str:
    d = [r["stock_realized"] - r["stock_modeled_fx"], r["best_realized"] - r["best_modeled_fx"]]
    if "stock_realized_profiler" in r:
        d += [r["stock_realized_profiler"] - r["stock_modeled_fx"], r["best_realized_profiler"] - r["best_modeled_fx"]]
    return " / ".join(str(x) for x in d)


def _lib(r) -> str:
    return mib(r["aligned_all_over_model"]) if "aligned_all_over_model" in r else "-"


def render(rows: list[dict], args, load_before: str, load_after: str, wall: float) -> str:
    have_exact = any("exact_peak" in r for r in rows)
    lines = [
        "## Executable schedules of real models (bench_exec)",
        "",
        "What: every shipped real-model graph (torch.fx / make_fx ATen graphs built by "
        "`python -m instances.extract_models`; models defined in the repo, random weights, batch 1 "
        "(DeepLabV3 batch 2), training = joint forward+backward of sum(outputs)). "
        "Peaks are modeled by the evaluator; *realized* peaks are measured by running the emitted FX "
        "program (ATen ops called in the schedule's order, `del` at every free), for the stock order and "
        "for the best order found (the exact solver's when it beats the heuristics), by two independent "
        "methods: an LD_PRELOAD shim counting the posix_memalign blocks torch's CPU allocator (libc10) "
        "requests at the libc boundary (the realized figure), and the profiler's allocation events (the "
        "method the importer used to measure each operator's workspace). *Library-internal* is how far "
        "all aligned blocks (oneDNN/MKL scratch and primitive caches included, which the model does not "
        "contain) rose above the model in the worse of the two runs. "
        "Saving = (stock - best) / stock. The arena column is the static arena "
        "planned for the best order by `plan_arena` (method in parentheses) and its excess over the peak.",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs shared with other jobs; "
        f"load average before `{load_before}`, after `{load_after}`; torch {_torch_version()}, 1 thread; "
        f"total {wall:.0f} s.",
        "",
        f"Reproduce: `.venv/bin/python benchmarks/bench_exec.py{' --quick' if args.quick else ''} "
        f"--exact-time {args.exact_time:g}`",
        "",
        "| model | mode | ops | stock peak MiB | best peak MiB (method) | "
        + ("exact peak MiB | lower bound MiB | certified / gap | " if have_exact else "")
        + "realized stock MiB | realized best MiB | realized - modeled, bytes (shim stock / best, profiler "
        "stock / best) | library-internal MiB | identical outputs | saving | arena MiB (over peak) |",
        "|---|---|---:|---:|---:|" + ("---:|---:|---|" if have_exact else "") + "---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        ex = ""
        if have_exact:
            if "exact_peak" in r and r["exact_peak"] is not None:
                lb = r["lower_bound"]
                gap = "optimal" if r["certified"] else (f"gap {(r['exact_peak'] - lb) / r['exact_peak']:.1%}"
                                                       if lb else "-")
                ex = f"{mib(r['exact_peak'])} | {mib(lb) if lb is not None else '-'} | {gap} ({r['exact_s']} s) | "
            else:
                ex = "- | - | - | "
        lines.append(
            f"| {r['model']} | {r['mode']} | {r['ops']} | {mib(r['stock_peak'])} | {mib(r['best_peak'])} "
            f"({r['best_heuristic']}) | {ex}{mib(r['stock_realized'])} | {mib(r['best_realized'])} | "
            f"{_diff(r)} | {_lib(r)} | {'yes' if r['identical_outputs'] else 'NO'} | "
            f"{r['saving']:.1%} | {mib(r['arena_size'])} (+{(r['arena_size'] - r['final_peak']) / r['final_peak']:.1%}, "
            f"{r['arena_method']}) |")
    n = len(rows)
    lines += [
        "",
        f"Realized == modeled to the byte, by both methods, in {sum(r['exact_match'] for r in rows)} of {n} "
        f"model graphs (both schedules each; the independent shim measure was available in "
        f"{sum(bool(r.get('independent')) for r in rows)} of {n}); identical output hashes in "
        f"{sum(r['identical_outputs'] for r in rows)} of {n}. "
        "The workspace of each operator (e.g. convolution scratch) was measured at import and is part "
        "of the model, which is why the realized figures include it exactly.",
        "",
        "Exact byte counts, timings and the arena's best-fit size are in `benchmarks/results/exec.json`.",
        "",
    ]
    return "\n".join(lines)


def _torch_version() -> str:
    try:
        import torch

        return torch.__version__
    except ImportError:
        return "absent"


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    p.add_argument("--exact-time", type=float, default=30.0, help="seconds for the exact solver (0: skip)")
    p.add_argument("--models", nargs="*")
    p.add_argument("--render-only", action="store_true", help="re-render the section from benchmarks/results/exec.json")
    args = p.parse_args(argv)
    from memsched.instances.extract_models import MODELS

    names = args.models or (QUICK if args.quick else list(MODELS))
    res_path = ROOT / "benchmarks" / "results" / "exec.json"
    if args.render_only:
        data = json.loads(res_path.read_text())
        out = ROOT / "benchmarks" / "sections" / "70-exec.md"
        out.write_text(render(data["rows"], argparse.Namespace(**data["args"]), data["load_before"],
                              data["load_after"], data["wall_s"]))
        return 0
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1]
    t0 = time.perf_counter()
    rows = []
    for name in names:
        for training in (False, True):
            r = bench_one(name, training, args.exact_time)
            print(json.dumps(r), flush=True)
            rows.append(r)
    wall = time.perf_counter() - t0
    load_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1]
    out = ROOT / "benchmarks" / "sections" / "70-exec.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(rows, args, load_before.strip(), load_after.strip(), wall))
    res_path.parent.mkdir(parents=True, exist_ok=True)
    res_path.write_text(json.dumps({"args": {"quick": args.quick, "exact_time": args.exact_time},
                                    "load_before": load_before.strip(), "load_after": load_after.strip(),
                                    "wall_s": wall, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
