"""The compiled replay engine vs the Python runtime, side by side (section 62-dtr-dense).

Per shared trace and heuristic, the same replays (``replay(..., engine='python')`` and
``replay(..., engine='jit')``, overhead limit 2, early stop on as the sweeps run them) in one
process, order Python, compiled, compiled, Python per ratio; wall seconds summed per side;
every pair compared: outcome, clock, peak, evictions, eager evictions, remat compute,
recomputations, failure and the budget interval (eq_lo, eq_hi) must be identical (the run
stops otherwise). numba's compiled code is loaded (or compiled) before timing; the time it
took is reported.

    .venv/bin/python benchmarks/bench_dtr_jit.py [--traces resnet32,transformer,treelstm,lstm]
        [--heuristics dtr] [--ratios 0.12,0.15,0.2,0.3,0.5,0.8] [--no-early-stop] [--no-write]

The full dense LSTM scan with the compiled engine is bench_dtr_dense.py's --full-scans.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dtr_dense import _append_block, trace_path  # noqa: E402

from memsched.solvers.dtr import jit_runtime  # noqa: E402
from memsched.solvers.dtr.replay import replay, trace_baseline  # noqa: E402
from memsched.solvers.dtr.sweep import _load  # noqa: E402

MARK = "### Compiled replay engine: Python vs compiled, side by side"


def key(r):
    rt = r.runtime
    return (r.outcome, r.clock, r.peak, r.evictions, r.eager_evictions, r.remat_compute, r.recomputations,
            r.failure, rt.eq_lo, rt.eq_hi)


def main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default="resnet32,transformer,treelstm,lstm")
    ap.add_argument("--heuristics", default="dtr")
    ap.add_argument("--ratios", default="0.12,0.15,0.2,0.3,0.5,0.8")
    ap.add_argument("--no-early-stop", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    early = not a.no_early_stop
    ratios = [float(x) for x in a.ratios.split(",")]
    warm_s = jit_runtime.warm()
    load = os.getloadavg()
    out = [MARK, "", "The same replays with the Python runtime (`replay(..., engine='python')`) and the compiled "
           "engine (`engine='jit'`, solvers/dtr/jit_runtime.py), overhead limit 2, "
           f"{'early stop on (as the sweeps run)' if early else 'early stop off'}, in one process, order Python, "
           "compiled, compiled, Python per ratio; wall seconds summed per side. Identical: outcome, clock, peak, "
           "evictions, eager evictions, remat compute, recomputations, failure and budget interval of every pair "
           f"(the run stops otherwise). Load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (2 "
           f"cores shared with other helpers). numba's code was loaded before timing in {warm_s:.2f} s (from its "
           "cache; a cold compile takes about 8-9 s, paid once per process and per source change).", "",
           "| trace | heuristic | ratios | outcomes | Python s | compiled s | speed-up (sums) | per replay: "
           "median, min, max | identical |", "|---|---|---|---|---|---|---|---|---|"]
    for name in a.traces.split(","):
        tr = _load(trace_path(name))
        trace_baseline(tr)
        jit_runtime.trace_tables(tr)
        for h in a.heuristics.split(","):
            tp = tj = 0.0
            per, outs = [], []
            for ratio in ratios:
                wp = wj = 0.0
                res = {}
                for side in ("python", "jit", "jit", "python"):
                    r = replay(tr, ratio, heuristic=h, early_stop=early, keep_runtime=True, engine=side)
                    k = key(r)
                    assert res.setdefault(side, k) == k, (name, h, ratio, side)
                    if side == "jit":
                        wj += r.wall_s
                    else:
                        wp += r.wall_s
                assert res["python"] == res["jit"], (name, h, ratio, res)
                tp += wp / 2
                tj += wj / 2
                per.append(wp / wj)
                outs.append(res["jit"][0])
            cnt = ", ".join(f"{o} {outs.count(o)}" for o in sorted(set(outs)))
            line = (f"| {name} | {h} | {'/'.join(f'{x:g}' for x in ratios)} | {cnt} | {tp:.2f} | {tj:.3f} | "
                    f"{tp / tj:.1f}x | {statistics.median(per):.1f}x, {min(per):.1f}x, {max(per):.1f}x | yes |")
            print(line, flush=True)
            out.append(line)
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_jit.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(MARK, block)
    return 0


if __name__ == "__main__":
    t = time.perf_counter()
    rc = main(sys.argv[1:])
    print(f"({time.perf_counter() - t:.0f} s)")
    raise SystemExit(rc)
