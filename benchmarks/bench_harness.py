"""Harness overhead: a 100-run sweep (benchmarks/specs/overhead.toml) on the local
pool with 2 jobs, and the same spec on a Dask LocalCluster (2 single-threaded
workers), side by side.

    .venv/bin/python benchmarks/bench_harness.py [--quick] [--no-dask] [--repeats N]

Writes benchmarks/results/harness_sweep.jsonl (the last local sweep's rows),
benchmarks/results/harness_sweep_dask.jsonl (the Dask sweep's rows),
benchmarks/results/harness_budgets.jsonl (a budget sweep for the Pareto and
feasibility figures), benchmarks/results/harness_overhead.json (the measurements) and re-renders
benchmarks/sections/80-harness.md and its figures (benchmarks/build_benchmarks_md.py
does the same from the committed files without measuring).

Overhead = everything but solver time. Wall: 1 - sum(solver wall) / (jobs x sweep
wall), sweep wall including spec parsing and instance hashing. CPU: 1 - sum(solver
CPU) / (driver CPU + all worker CPU).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memsched.solvers.harness import load_spec, run_sweep  # noqa: E402
from memsched.solvers.harness.report import final_table, load_results  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SPEC = ROOT / "benchmarks" / "specs" / "overhead.toml"


def _load() -> str:
    return "%.2f" % os.getloadavg()[0]


def measure(label, spec, out: Path, jobs=2, client=None, dask_cpu=None) -> dict:
    """One sweep; ``client``: run on Dask (``dask_cpu()``: CPU seconds its workers used so far)."""
    if out.exists():
        out.unlink()
    load0 = _load()
    r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    d0 = dask_cpu() if dask_cpu else 0.0
    t0 = time.perf_counter()
    s = run_sweep(spec, out, jobs=jobs, dask=client, progress=True)
    wall = time.perf_counter() - t0
    r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = lambda a, b: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)  # noqa: E731
    driver_cpu, child_cpu = cpu(r0, r1), cpu(c0, c1)
    if dask_cpu:
        child_cpu += dask_cpu() - d0
    m = {"label": label, "executor": s.executor, "jobs": jobs, "runs": s.executed, "wall_s": wall,
         "solver_wall_s": s.solver_wall_s, "solver_cpu_s": s.solver_cpu_s, "setup_s": s.setup_s,
         "import_s": s.import_s, "transfer_s": s.transfer_s, "worker_startup_s": s.worker_startup_s,
         "driver_cpu_s": driver_cpu, "worker_cpu_s": child_cpu, "total_cpu_s": driver_cpu + child_cpu,
         "statuses": s.statuses, "overhead_wall": 1 - s.solver_wall_s / (jobs * wall),
         "overhead_cpu": 1 - s.solver_cpu_s / (driver_cpu + child_cpu), "load": f"{load0} / {_load()}"}
    print(f"{label}: {s.executed} runs in {wall:.1f} s, solver {s.solver_wall_s:.1f} s wall over {jobs} slots: "
          f"overhead {100 * m['overhead_wall']:.2f}% wall, {100 * m['overhead_cpu']:.2f}% CPU (load {m['load']})",
          file=sys.stderr)
    return m


def _tree_cpu(pids) -> float:
    """CPU seconds of the processes ``pids`` and their live descendants (from /proc)."""
    tck = os.sysconf("SC_CLK_TCK")
    total, seen, stack = 0.0, set(), list(pids)
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
                children.setdefault(int(st[1]), []).append(int(d))
            except OSError:
                pass
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            st = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += (int(st[11]) + int(st[12]) + int(st[13]) + int(st[14])) / tck
        except OSError:
            pass
        stack += children.get(p, [])
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 s solver time limits (for a smoke check)")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--repeats", type=int, default=2, help="local sweeps to measure (default 2)")
    ap.add_argument("--no-budgets", action="store_true", help="skip the budget sweep (benchmarks/specs/budgets.toml)")
    ap.add_argument("--note", default="", help="a sentence to print under the table (e.g. other runs' figures)")
    args = ap.parse_args(argv)
    spec = load_spec(SPEC)
    if args.quick:
        for e in spec.solvers:
            e.time_limit, e.hard_limit = 1.0, 6.5
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "harness_sweep.jsonl"
    runs = []
    for k in range(args.repeats):
        runs.append(measure(f"local pool #{k + 1}", spec, out))
    notes = []
    if not args.no_dask:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            notes.append("Dask not installed: the Dask row was not measured.")
        else:
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
                    Client(lc) as client:
                pids = list(client.run(os.getpid).values())
                dout = RESULTS / "harness_sweep_dask.jsonl"
                # Dask worker processes (and their sidecars) are not our children: read their CPU from /proc
                runs.append(measure("Dask LocalCluster", spec, dout, client=client,
                                    dask_cpu=lambda: _tree_cpu(pids)))
                a, b = final_table(load_results(out)), final_table(load_results(dout))
                same = sum(x == y for x, y in zip(a, b))
                diff = [(x, y) for x, y in zip(a, b) if x != y]
                note = f"Local and Dask sweeps: {same} of {len(a)} runs identical in (status, objective, bound)"
                if diff:
                    sol = sorted({x[1] for x, _ in diff})
                    note += (f"; the {len(diff)} others are time-limited runs ({', '.join(sol)}) whose outcome "
                             f"depends on the CPU time they got (the load differs between the two sweeps)")
                notes.append(note + ". The Dask cluster was started before the timer (its start-up is not "
                             "counted); its scheduler runs in the driver process, whose CPU is counted.")
    if not args.no_budgets:
        bspec = load_spec(ROOT / "benchmarks" / "specs" / "budgets.toml")
        bout = RESULTS / "harness_budgets.jsonl"
        if bout.exists():
            bout.unlink()
        b = run_sweep(bspec, bout, jobs=2, progress=True)
        print(f"budget sweep: {b.executed} runs in {b.wall_s:.1f} s: {b.statuses}", file=sys.stderr)
    meta = {"machine": "2 cores / 24 GiB", "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": ".venv/bin/python benchmarks/bench_harness.py" + (" --quick" if args.quick else ""),
            "spec": str(SPEC.relative_to(ROOT)), "runs": runs, "notes": " ".join(notes + ([args.note] if args.note else []))}
    (RESULTS / "harness_overhead.json").write_text(json.dumps(meta, indent=1) + "\n")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from build_benchmarks_md import main as build

    return build([])


if __name__ == "__main__":
    sys.exit(main())
