"""DTR budget sweeps through the harness's worker pool: several (trace, heuristic)
sweeps sharing one pool vs the same sweeps one after another in this process.

    .venv/bin/python benchmarks/bench_dtr_harness.py [--quick] [--rounds N]

Configurations, run interleaved in one process (round-robin, ``--rounds`` times):

* ``sequential``: each sweep in turn, replays inline (``sweep(..., jobs=1)``);
* ``pool-1``: all sweeps at once through a harness LocalExecutor with 1 worker;
* ``pool-2``: the same with 2 workers (``memsched dtr sweep A B --jobs 2``).

Every configuration must give identical points and holes (checked). Writes
benchmarks/sections/60-dtr/harness_sweeps.{md,json}. Skips when the traces are absent.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"
OUT = ROOT / "benchmarks" / "sections" / "60-dtr"


def traces(names):
    man = json.loads((DATA / "manifest.json").read_text())
    out = []
    for n in names:
        for m in man["models"]:
            if m["log"].startswith(n):
                out.append((n, str((DATA / m["log"]).resolve())))
    return out


def _cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


def run(config, pairs, kw):
    from memsched.solvers.dtr.sweep import InlineExecutor, sweep_many
    from memsched.solvers.pool.executors import LocalExecutor

    load0 = os.getloadavg()[0]
    d0, c0 = _cpu()
    t0 = time.perf_counter()
    if config == "sequential":
        res = [r for p in pairs for r in sweep_many([p], executor=InlineExecutor(), **kw)]
    else:
        res = sweep_many(pairs, executor=LocalExecutor(int(config[-1])), **kw)
    wall = time.perf_counter() - t0
    d1, c1 = _cpu()
    return res, {"config": config, "wall_s": wall, "driver_cpu_s": d1 - d0, "workers_cpu_s": c1 - c0,
                 "load_before": load0, "load_after": os.getloadavg()[0],
                 "replays": sum(r.replays for r in res), "replay_wall_s": sum(p.wall_s for r in res for p in r.points)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="coarser protocol (step 0.05, bisect)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--traces", default="resnet32,transformer")
    ap.add_argument("--heuristic", default="dtr")
    a = ap.parse_args(argv)
    if not (DATA / "manifest.json").is_file():
        print(f"no traces at {DATA}; skipping")
        return 0
    tl = traces(a.traces.split(","))
    pairs = [(p, a.heuristic) for _, p in tl]
    kw = dict(lo=0.1, hi=1.0, step=0.05 if a.quick else 0.02, resolution=1e-3, repeats=3, run_timeout=120.0,
              refine="bisect" if a.quick else "scan")
    rows, ref = [], None
    for rnd in range(a.rounds):
        for config in ("sequential", "pool-1", "pool-2"):
            res, row = run(config, pairs, kw)
            key = [([(p.ratio, p.outcome, p.clock, p.peak, p.evictions, p.runs) for p in r.points],
                    [h.to_json() for h in r.holes]) for r in res]
            if ref is None:
                ref = key
            row["identical"] = key == ref
            row["round"] = rnd
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not row["identical"]:
                print(f"{config}: results differ from the sequential run", file=sys.stderr)
                return 1
    samples = {Path(r.trace).name.split("-")[0]: (len(r.points), len(r.holes), r.min_feasible()) for r in res}
    cmd = (f"memsched dtr sweep {' '.join(Path(p).name for _, p in tl)} --heuristic {a.heuristic} --lo 0.1 --hi 1.0 "
           f"--step {kw['step']} --resolution {kw['resolution']} --repeats 3 --refine {kw['refine']} --jobs 2")
    by = {}
    for r in rows:
        by.setdefault(r["config"], []).append(r)
    seq = {r["round"]: r["wall_s"] for r in by["sequential"]}
    L = ["### DTR sweeps through the harness pool", "",
         f"Two sweeps ({', '.join(n for n, _ in tl)}; heuristic {a.heuristic}) sharing one harness worker pool vs "
         "the same sweeps one after another in-process. Protocol: "
         f"lo 0.1, hi 1.0, step {kw['step']}, resolution {kw['resolution']}, repeats 3, refine {kw['refine']}. "
         "All configurations gave identical points and holes (checked by the script).", "",
         f"Machine: 2 shared CPU cores; other jobs were running (load average in the table). "
         f"Rounds: {a.rounds}, configurations interleaved; the ratio is the sequential wall of the same round "
         "over this wall. CPU: of this process (driver) and of its finished child processes (workers).", "",
         "Reproduce: `.venv/bin/python benchmarks/bench_dtr_harness.py" + (" --quick" if a.quick else "")
         + f" --rounds {a.rounds}` (equivalent CLI: `{cmd}` vs `--jobs 1`).", "",
         "| config | round | wall s | speed-up vs sequential | replays | sum of replay walls s | driver CPU s | workers CPU s "
         "| load before | load after |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['config']} | {r['round']} | {r['wall_s']:.1f} | {seq[r['round']] / r['wall_s']:.2f}x | {r['replays']} "
                 f"| {r['replay_wall_s']:.1f} | {r['driver_cpu_s']:.1f} | {r['workers_cpu_s']:.1f} "
                 f"| {r['load_before']:.2f} | {r['load_after']:.2f} |")
    L += ["", "Per trace (samples, hole regions, smallest feasible ratio): "
          + "; ".join(f"{k}: {v[0]} samples, {v[1]} holes, {v[2]}" for k, v in samples.items()), ""]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "harness_sweeps.md").write_text("\n".join(L))
    (OUT / "harness_sweeps.json").write_text(json.dumps({"params": kw, "traces": [n for n, _ in tl],
                                                         "heuristic": a.heuristic, "rows": rows}, indent=1))
    print("\n".join(L))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_dtr

    bench_dtr.refresh_extras()  # the DTR section includes this subsection
    return 0


if __name__ == "__main__":
    sys.exit(main())
