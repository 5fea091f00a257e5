"""`make gpu-check`: every shipped model graph run on a CUDA GPU, realized == modeled checked.

For every graph in instances/shipped/models/*.json this runs three emitted torch programs
on CUDA, each in a fresh process (memsched.solvers.executors.run_batch isolates CUDA
programs, so cached allocator blocks never carry over):

* ``best``  -- the best ordering heuristic's order (solvers.ordering.heuristics.best_with_peaks);
* ``remat`` -- one rematerializing schedule along that order: the DTR-score greedy
  (solvers.remat.dtr_greedy) at the first budget of 0.8 / 0.9 / 0.95 x the best peak that it
  fits, else the executors' recompute_schedule (largest multi-use tensors recomputed before
  their last consumer); a graph where neither recomputes anything has no remat row;
* ``arena`` -- the best order with one static arena (best-fit plan): one CUDA block, every
  tensor a view at its planned offset.

The exact figure is ``torch.cuda.memory_stats()["requested_bytes.all.peak"]`` (bytes the
program asked for; the caching allocator's rounding is not in it); the allocated and
reserved peaks are reported beside it. A row matches when realized == modeled (the
planned arena size for arena rows), the arena tensors sit at their planned offsets and
recomputations reproduce their bytes; the three programs of a graph must give identical
output hashes.

Writes benchmarks/results/gpu_check.json and benchmarks/sections/95-gpu-check.md (format:
docs/executors.md, "GPU check"). Exit status 0 when every row matches, 1 otherwise.
On a machine without a CUDA GPU it prints one line and exits 0.

    .venv/bin/python benchmarks/gpu_check.py            # what `make gpu-check` runs
    .venv/bin/python benchmarks/gpu_check.py --device cpu --models transformer_block_infer \\
        --out /tmp/gc                                   # the same pipeline on the CPU (torch profiler)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "instances" / "shipped" / "models"
REEXEC = "MEMSCHED_GPU_CHECK_REINSTALLED"


def gpu_names() -> list[str]:
    """The NVIDIA GPUs the driver reports (nvidia-smi -L, else /proc/driver/nvidia/gpus)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
            names = [ln.strip() for ln in out.splitlines() if ln.startswith("GPU ")]
            if names:
                return names
        except (OSError, subprocess.SubprocessError):
            pass
    proc = Path("/proc/driver/nvidia/gpus")
    return [p.name for p in sorted(proc.iterdir())] if proc.is_dir() else []


def pinned_torch() -> str:
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["torch"]
    return next(d for d in deps if d.startswith("torch"))


def ensure_cuda_torch() -> str | None:
    """None when torch sees a CUDA device; otherwise install the pinned torch from the package
    index (on Linux the PyPI wheel is the CUDA build) once and re-run; else the reason."""
    try:
        import torch

        if torch.cuda.is_available():
            return None
        why = f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"
    except ImportError:
        why = "torch is not installed"
    if os.environ.get(REEXEC):
        return why + " (even after reinstalling it)"
    spec = pinned_torch()
    print(f"gpu-check: {why}; installing {spec} with CUDA support ...", flush=True)
    cp = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--force-reinstall", spec])
    if cp.returncode != 0:
        return why + f"; `pip install {spec}` failed"
    os.execve(sys.executable, [sys.executable, *sys.argv], dict(os.environ, **{REEXEC: "1"}))
    return why  # not reached


def remat_schedule(g, order, best_peak):
    from memsched.formulations import evaluate
    from memsched.solvers.executors import recompute_schedule
    from memsched.solvers.remat.dtr_greedy import greedy_schedule

    for f in (0.8, 0.9, 0.95):
        s = greedy_schedule(g, int(f * best_peak), None, order)
        if s is not None and evaluate(g, s).recomputations:
            return s, f"dtr-greedy, budget {f} x best peak"
    s = recompute_schedule(g, order)
    if s is not None and evaluate(g, s).recomputations:
        return s, "recompute_schedule (3 largest multi-use tensors)"
    return None, None


def plan_jobs(paths):
    """(graph, [(label, detail, schedule, arena plan or None)]) per model file."""
    from memsched.formulations import Schedule
    from memsched.instances import load_graph
    from memsched.solvers.executors import plan_arena
    from memsched.solvers.ordering.heuristics import best_with_peaks

    out = []
    for p in paths:
        g = load_graph(p)
        chosen, order, peaks = best_with_peaks(g)
        best = Schedule.from_order(g, order)
        rows = [("best", f"best order ({chosen})", best, None)]
        rs, how = remat_schedule(g, order, peaks[chosen])
        if rs is not None:
            rows.append(("remat", how, rs, None))
        plan = plan_arena(g, best, method="best-fit")
        rows.append(("arena", f"best order, arena {plan.method} ({plan.status})", best, plan))
        out.append((p.stem, g, rows))
    return out


def run_all(planned, device: str, parallel: int, timeout: float):
    """Run every program; returns the report rows (one per program)."""
    from memsched.formulations import evaluate
    from memsched.solvers.executors import run_batch
    from memsched.solvers.executors.runner import mismatch

    plain = [(g, s) for _, g, rows in planned for lab, _, s, plan in rows if plan is None]
    arena = [(g, s) for _, g, rows in planned for lab, _, s, plan in rows if plan is not None]
    res_plain = iter(run_batch(plain, "torch", device, max_bytes=None, parallel=parallel, timeout=timeout))
    # the arena plan is recomputed by run_batch (deterministic best-fit: the same plan)
    res_arena = iter(run_batch(arena, "torch", device, arena=True, max_bytes=None, parallel=parallel,
                               timeout=timeout, arena_method="best-fit"))
    report = []
    for name, g, rows in planned:
        group = []
        for lab, detail, s, plan in rows:
            r = next(res_arena) if plan is not None else next(res_plain)
            if plan is not None:
                assert r["arena_size"] == plan.size  # the same deterministic plan
            ev = evaluate(g, s)
            problem = mismatch(r)
            group.append({
                "graph": name, "schedule": lab, "detail": detail, "ops": g.n_ops, "events": len(s.events),
                "recomputations": ev.recomputations, "modeled_peak": r["modeled_peak"],
                "arena_size": r.get("arena_size"), "realized_peak": r["realized_peak"],
                "allocated_peak": r.get("allocated_peak"), "reserved_peak": r.get("reserved_peak"),
                "arena_offsets_ok": r.get("arena_offsets_ok"), "output_hash": r["output_hash"],
                "match": problem is None, "problem": problem, "wall_s": round(r["wall_s"], 4),
                "measure": r.get("measure")})
        same = len({x["output_hash"] for x in group}) == 1
        for x in group:
            x["identical_outputs"] = same
        report += group
    return report


def machine(device: str, gpus: list[str]) -> dict:
    import torch

    m = {"device": device, "torch": torch.__version__, "python": platform.python_version(),
         "cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    if device == "cuda":
        m.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda, gpus=gpus)
    return m


def mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:.2f}"


def render(data: dict) -> str:
    m = data["machine"]
    rows = data["rows"]
    bad = [r for r in rows if not (r["match"] and r["identical_outputs"])]
    where = (f"{m.get('gpu')} (CUDA {m.get('cuda')})" if m["device"] == "cuda" else f"CPU {m['cpu']}")
    if m["device"] == "cuda":
        how = ("each program in a fresh process. Realized = `torch.cuda.memory_stats()['requested_bytes.all.peak']` "
               "above the baseline before the first event (exact requested bytes); the caching allocator's "
               "allocated and reserved peaks are shown beside it.")
    else:
        how = ("run on the CPU (a dry run of the pipeline, programs batched in one process). Realized = the torch "
               "profiler's allocation events (max of the CPU allocator's running total).")
    lines = [
        f"## GPU check: shipped model graphs on {m['device'].upper()} (gpu_check)",
        "",
        "What: every shipped real-model graph (instances/shipped/models) as an emitted torch program on "
        f"`{m['device']}`: the best ordering heuristic's order, one rematerializing schedule along it, and the "
        f"best order in one static arena (best-fit); {how} "
        "Match: realized == modeled (arena rows: == the planned arena size, tensors at their planned offsets).",
        "",
        f"Machine: {where}; torch {m['torch']}; total {data['wall_s']:.0f} s.",
        "",
        "Reproduce: `make gpu-check` (= `.venv/bin/python benchmarks/gpu_check.py`)",
        "",
        "| graph | schedule | ops | recomputations | modeled MiB | realized (requested) bytes | "
        "realized - modeled | allocated MiB | reserved MiB | match | identical outputs |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        target = r["arena_size"] if r["schedule"] == "arena" else r["modeled_peak"]
        lines.append(
            f"| {r['graph']} | {r['detail']} | {r['ops']} | {r['recomputations']} | {mib(target)} | "
            f"{r['realized_peak']} | {r['realized_peak'] - target} | {mib(r['allocated_peak'])} | "
            f"{mib(r['reserved_peak'])} | {'yes' if r['match'] else 'NO'} | "
            f"{'yes' if r['identical_outputs'] else 'NO'} |")
    lines += ["", f"{len(rows) - len(bad)} of {len(rows)} programs match and agree on their outputs."
              + ("" if not bad else " Mismatches: " + "; ".join(r["problem"] or f"{r['graph']} outputs differ"
                                                                for r in bad)), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cuda (default); cpu runs the same pipeline with the torch CPU profiler measure")
    ap.add_argument("--models", nargs="*", help="graph file stems (default: every shipped model graph)")
    ap.add_argument("--out", help="folder for gpu_check.json and 95-gpu-check.md (default: benchmarks/results "
                                  "and benchmarks/sections)")
    ap.add_argument("--parallel", type=int, default=4, help="programs run at the same time (fresh processes)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per program")
    args = ap.parse_args(argv)
    gpus = []
    if args.device == "cuda":
        gpus = gpu_names()
        if not gpus:
            print("gpu-check: no CUDA GPU on this machine (none reported by nvidia-smi or /proc/driver/nvidia); "
                  "nothing to run")
            return 0
        why = ensure_cuda_torch()
        if why is not None:
            print(f"gpu-check: {len(gpus)} GPU(s) found but {why}", file=sys.stderr)
            return 1
    sys.path.insert(0, str(ROOT))
    paths = sorted(MODELS.glob("*.json"))
    if args.models:
        want = set(args.models)
        paths = [p for p in paths if p.stem in want]
        missing = want - {p.stem for p in paths}
        if missing:
            print(f"gpu-check: --models: no graph {', '.join(sorted(missing))} in {MODELS}", file=sys.stderr)
            return 2
    t0 = time.perf_counter()
    planned = plan_jobs(paths)
    t_plan = time.perf_counter() - t0
    rows = run_all(planned, args.device, args.parallel, args.timeout)
    data = {"machine": machine(args.device, gpus), "wall_s": round(time.perf_counter() - t0, 1),
            "plan_s": round(t_plan, 1), "rows": rows,
            "all_match": all(r["match"] and r["identical_outputs"] for r in rows)}
    res = Path(args.out) if args.out else ROOT / "benchmarks" / "results"
    sec = Path(args.out) if args.out else ROOT / "benchmarks" / "sections"
    res.mkdir(parents=True, exist_ok=True)
    sec.mkdir(parents=True, exist_ok=True)
    (res / "gpu_check.json").write_text(json.dumps(data, indent=1) + "\n")
    (sec / "95-gpu-check.md").write_text(render(data))
    n_ok = sum(r["match"] and r["identical_outputs"] for r in rows)
    print(f"gpu-check: {n_ok}/{len(rows)} programs realize their modeled peak on {args.device} "
          f"({data['wall_s']:.0f} s); wrote {res / 'gpu_check.json'} and {sec / '95-gpu-check.md'}")
    return 0 if data["all_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
