"""Dense DTR sweeps: replaying every sample vs sharing budget-equivalence intervals
(section 62-dtr-dense).

Part 1 (side by side, one process, same range): a dense 1e-4 scan of ``--side-range``
of one trace with ``share=False`` (every sample replayed from the start: the protocol
before intervals) and with ``share=True`` (a sample inside a finished replay's
budget-equivalence interval takes its result); every sample of the two must agree
(outcome, clock, peak, evictions), and the wall-time ratio is reported.

Part 2: the full dense scan (default 0.1-1.0 at 1e-4, repeats 3) with sharing, per trace
and heuristic: wall time, replays run, samples derived, holes; ``--verify N`` random
samples per sweep re-run as independent replays and compared.

Part 3 (optional, ``--allocator-speed``): the default bytes path vs the address-aware
allocators on the same replays.

    .venv/bin/python benchmarks/bench_dtr_dense.py [--traces resnet32] [--heuristics dtr,dtr-eqclass]
        [--side-range 0.10,0.20] [--range 0.1,1.0] [--verify 200] [--allocator-speed] [--no-write]
    .venv/bin/python benchmarks/bench_dtr_dense.py --runtime-speed 306d4dc [--traces resnet32,lstm]
        (appends the bytes-path table: the runtime before vs after the interval bookkeeping)
    .venv/bin/python benchmarks/bench_dtr_dense.py --allocator-sweeps [--traces resnet32] [--step 0.01]
        (appends smallest feasible budget and holes per allocator mode)
    .venv/bin/python benchmarks/bench_dtr_dense.py --widths [--traces resnet32,transformer,treelstm,lstm]
        (appends the budget-equivalence interval widths per trace)
    .venv/bin/python benchmarks/bench_dtr_dense.py --divergence [--traces ...] [--ratios 0.15,0.3,0.5,0.7,0.9]
        (appends where replays at budgets 1, 10 and 100 resolution steps lower first differ:
        the most prefix sharing can save)
    .venv/bin/python benchmarks/bench_dtr_dense.py --prefix-side transformer:0.30:0.303,lstm:0.20:0.202
        (appends a side by side of dense sub-range scans: interval sharing only vs interval +
        prefix sharing, both orders, every sample compared)
    .venv/bin/python benchmarks/bench_dtr_dense.py --capped-scan transformer --cap 600 [--jobs 2]
        (appends a dense 0.1-1.0 scan stopped after --cap seconds: how much of it is done)
    .venv/bin/python benchmarks/bench_dtr_dense.py --full-scans resnet32,transformer,treelstm,lstm
        [--heuristics dtr,dtr-eqclass] [--cap 900] [--verify 500] [--verify-cap 300]
        (the full dense scans with early stop: wall per trace, holes, random samples checked against
        independent full replays; replaces the earlier full-scan tables of the section)
    .venv/bin/python benchmarks/bench_dtr_dense.py --hot-path REV [--traces ...] [--heuristics ...]
        (the DTR package at REV vs the working tree, same replays side by side)
    .venv/bin/python benchmarks/bench_dtr_dense.py --early-side transformer:0.12/0.15,lstm:0.12/0.15
        (thrashing replays without vs with early stop, side by side)
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"
SECTION = ROOT / "benchmarks" / "sections" / "62-dtr-dense.md"

from memsched.solvers.dtr.replay import replay, trace_baseline  # noqa: E402
from memsched.solvers.dtr.sweep import _load, sweep  # noqa: E402


def key(x):
    return (x.outcome, x.clock, x.peak, x.evictions)


def trace_path(name: str) -> Path:
    hits = sorted(p for p in DATA.glob("*.log") if p.name.startswith(name))
    if not hits:
        raise SystemExit(f"no trace {name}* in {DATA}")
    return hits[0]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", default="resnet32")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--side-range", default="0.10,0.20")
    ap.add_argument("--side-heuristic", default="dtr")
    ap.add_argument("--range", default="0.1,1.0")
    ap.add_argument("--resolution", type=float, default=1e-4)
    ap.add_argument("--verify", type=int, default=200)
    ap.add_argument("--allocator-speed", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    if not DATA.is_dir():
        print(f"skip: {DATA} absent")
        return 0
    cmd = "  .venv/bin/python benchmarks/bench_dtr_dense.py " + " ".join(sys.argv[1:])
    load = os.getloadavg()
    lines = ["## DTR dense sweeps: budget-equivalence intervals", "",
             "A replay reads its budget only through the tests `memory + need > budget` (before an operator "
             "and in the eviction loop). The largest tested value <= budget (`eq_lo`) and the smallest tested "
             "value > budget (`eq_hi`) bound an interval of budgets that answer every test alike, so every "
             "budget in `[eq_lo, eq_hi)` runs the identical replay (docs/dtr.md). A dense sweep takes a sample "
             "whose budget lies in a finished replay's interval from that replay (`derived`); determinism "
             "repeats always run.", "",
             f"Machine: 2 shared cores, heavily loaded by other helpers (load average at start "
             f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}): absolute times are inflated; compare the ratios "
             "(both sides ran in the same process, one after the other).", "", "Command:", "", cmd, ""]
    # ---------------------------------------------------------------- part 1
    t0name = a.traces.split(",")[0]
    p = trace_path(t0name)
    tr = _load(p)
    trace_baseline(tr)
    slo, shi = (float(x) for x in a.side_range.split(","))
    h = a.side_heuristic
    kw = dict(lo=slo, hi=shi, resolution=a.resolution, repeats=1, run_timeout=None)
    t = time.perf_counter()
    before = sweep(tr, h, share=False, **kw)
    tb = time.perf_counter() - t
    t = time.perf_counter()
    after = sweep(tr, h, share=True, **kw)
    ta = time.perf_counter() - t
    same = [key(x) for x in before.points] == [key(x) for x in after.points]
    assert same, "shared sweep differs from independent replays"
    print(f"side by side {p.name} {h} [{slo}, {shi}]: before {tb:.1f} s ({before.replays} replays), "
          f"after {ta:.1f} s ({after.replays} replays, {after.derived} derived), equal={same}", flush=True)
    lines += ["### Side by side (one trace, one range, repeats 1)", "",
              "| trace | heuristic | range | samples | before: replays | before: wall s | after: replays | "
              "after: derived | after: wall s | speed-up | every sample equal |",
              "|---|---|---|---|---|---|---|---|---|---|---|",
              f"| {p.name[:24]} | {h} | {slo}-{shi} | {len(after.points)} | {before.replays} | {tb:.1f} | "
              f"{after.replays} | {after.derived} | {ta:.1f} | {tb / ta:.1f}x | {'yes' if same else 'NO'} |", ""]
    # ---------------------------------------------------------------- part 2
    lo, hi = (float(x) for x in a.range.split(","))
    rng = random.Random(0)
    lines += [f"### Full dense scans ({lo}-{hi} at {a.resolution:g}, repeats 3, sharing on)", "",
              "| trace | heuristic | samples | replays run | derived | wall s | smallest feasible | holes | "
              "verified vs independent replays |", "|---|---|---|---|---|---|---|---|---|"]
    holes_txt = []
    for name in a.traces.split(","):
        p = trace_path(name)
        tr = _load(p)
        trace_baseline(tr)
        for h in a.heuristics.split(","):
            t = time.perf_counter()
            r = sweep(tr, h, lo=lo, hi=hi, resolution=a.resolution, repeats=3, run_timeout=None)
            w = time.perf_counter() - t
            pts = rng.sample(r.points, min(a.verify, len(r.points)))
            bad = [x.ratio for x in pts if key(x) != key(replay(tr, x.ratio, heuristic=h))]
            assert not bad, (p.name, h, bad[:5])
            mf = r.min_feasible()
            print(f"{p.name} {h}: {len(r.points)} samples, {r.replays} replays, {r.derived} derived, {w:.1f} s, "
                  f"{len(r.holes)} holes, {len(pts)} verified", flush=True)
            lines.append(f"| {p.name[:24]} | {h} | {len(r.points)} | {r.replays} | {r.derived} | {w:.1f} | "
                         f"{'-' if mf is None else f'{mf:.4f}'} | {len(r.holes)} | {len(pts)} random, all equal |")
            for hh in r.holes:
                holes_txt.append(f"* {p.name[:24]} {h}: infeasible {hh.first:.4f}-{hh.last:.4f} "
                                 f"({len(hh.ratios)} samples) between feasible {hh.feasible_below:.4f} and "
                                 f"{hh.feasible_above:.4f}")
    lines += [""] + (["Holes found:", ""] + holes_txt if holes_txt else ["No holes found."]) + [""]
    # ---------------------------------------------------------------- part 3
    if a.allocator_speed:
        lines += allocator_speed(a)
    text = "\n".join(lines) + "\n"
    print(text)
    if not a.no_write:
        SECTION.write_text(text)
        print(f"wrote {SECTION}")
    return 0


def allocator_speed(a) -> list[str]:
    from memsched.solvers.dtr.allocator import AllocRuntime
    from memsched.solvers.dtr.runtime import Runtime

    p = trace_path(a.traces.split(",")[0])
    tr = _load(p)
    b = trace_baseline(tr)
    lim = b["baseline_compute"] * 1.0
    ratios = [0.2, 0.3, 0.5, 0.7, 0.9]
    out = ["### Allocator modes: speed of the default bytes path", "",
           "Same replays (dtr), best of 3 per mode, interleaved; `bytes` is the default (simrd-exact).", "",
           "| mode | total wall s (5 ratios) | ratio to bytes | outcomes |", "|---|---|---|---|"]
    res = {}
    for mode in ("bytes", "best-fit", "first-fit", "caching"):
        best, outs = None, None
        for _ in range(3):
            t = time.perf_counter()
            o = []
            for r in ratios:
                bud = int(r * b["baseline_memory"])
                rt = (Runtime(tr, bud, "dtr", remat_limit=lim) if mode == "bytes"
                      else AllocRuntime(tr, bud, "dtr", remat_limit=lim, allocator=mode))
                o.append(rt.run())
            w = time.perf_counter() - t
            best = w if best is None else min(best, w)
            outs = o
        res[mode] = (best, outs)
    for mode, (w, o) in res.items():
        out.append(f"| {mode} | {w:.2f} | {w / res['bytes'][0]:.2f} | {', '.join(o)} |")
    return out + [""]


RT_MARK = "### Bytes path: runtime before vs after the budget-interval bookkeeping"


def runtime_speed(rev: str, traces: str, heuristics: str, mark: str | None = None, what: str = "") -> list[str]:
    """The runtime at ``rev`` (before eq_lo / eq_hi) vs the working tree's, same replays,
    interleaved, best of 3 per ratio."""
    import importlib.util
    import subprocess
    import tempfile

    from memsched.solvers.dtr import runtime as new_rt

    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:solvers/dtr/runtime.py"], check=True,
                         capture_output=True, text=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("old_dtr_runtime", f.name)
    old_rt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old_rt)
    os.unlink(f.name)
    load = os.getloadavg()
    out = [mark or RT_MARK, "", f"{what}Same replays, interleaved (old, new), best of 3 each; old = "
           f"solvers/dtr/runtime.py at {rev}. Load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.",
           "", "| trace | heuristic | ratios | old s | new s | new / old | identical results |",
           "|---|---|---|---|---|---|---|"]
    ratios = [0.15, 0.3, 0.5, 0.7, 0.9]
    for name in traces.split(","):
        tr = _load(trace_path(name))
        b = trace_baseline(tr)
        lim = b["baseline_compute"] * 1.0
        for h in heuristics.split(","):
            t_old = t_new = 0.0
            same = True
            for r in ratios:
                bud = int(r * b["baseline_memory"])
                bo = bn = None
                for _ in range(3):
                    t = time.perf_counter()
                    ro = old_rt.Runtime(tr, bud, h, remat_limit=lim)
                    oo = ro.run()
                    w = time.perf_counter() - t
                    bo = w if bo is None else min(bo, w)
                    t = time.perf_counter()
                    rn = new_rt.Runtime(tr, bud, h, remat_limit=lim)
                    on = rn.run()
                    w = time.perf_counter() - t
                    bn = w if bn is None else min(bn, w)
                    same &= (oo, ro.clock, ro.peak, ro.evictions) == (on, rn.clock, rn.peak, rn.evictions)
                t_old += bo
                t_new += bn
            print(f"runtime speed {name} {h}: old {t_old:.2f} s new {t_new:.2f} s", flush=True)
            out.append(f"| {name} | {h} | {len(ratios)} | {t_old:.2f} | {t_new:.2f} | {t_new / t_old:.2f} | "
                       f"{'yes' if same else 'NO'} |")
    return out + [""]


AL_MARK = "### Allocator modes: smallest feasible budget and holes"


def allocator_sweeps(traces: str, heuristic: str, step: float, resolution: float) -> list[str]:
    """A ``--step`` sweep (coarse grid, change intervals scanned at ``resolution``) per
    allocator mode; the smallest feasible ratio and the holes seen by that sampling."""
    from memsched.solvers.dtr.allocator import ALLOCATORS

    out = [AL_MARK, "",
           f"Heuristic {heuristic}; sampling: a quick-look sweep (`--step {step}`, change intervals scanned at "
           f"{resolution:g}, repeats 2), not a dense scan: holes between equal coarse outcomes can be missed here. "
           "The dense 1e-4 scans per allocator mode, with budget-interval sharing, are in section 63 (\"DTR under "
           "address-aware allocators\"); where they differ from this table, they hold.", "",
           "| trace | allocator | samples | wall s | smallest feasible | vs bytes | holes | fragmentation samples |",
           "|---|---|---|---|---|---|---|---|"]
    for name in traces.split(","):
        tr = _load(trace_path(name))
        trace_baseline(tr)
        mf_bytes = None
        for al in ALLOCATORS:
            t = time.perf_counter()
            r = sweep(tr, heuristic, lo=0.1, hi=1.0, step=step, resolution=resolution, repeats=2, run_timeout=None,
                      allocator=al)
            w = time.perf_counter() - t
            mf = r.min_feasible()
            if al == "bytes":
                mf_bytes = mf
            rise = "-" if mf is None or mf_bytes is None else f"{mf - mf_bytes:+.4f}"
            nfrag = sum(1 for p in r.points if p.outcome == "fragmentation")
            print(f"allocator {name} {al}: min feasible {mf}, {len(r.holes)} holes, {w:.1f} s", flush=True)
            out.append(f"| {name} | {al} | {len(r.points)} | {w:.1f} | {'-' if mf is None else f'{mf:.4f}'} | "
                       f"{rise} | {len(r.holes)} | {nfrag} |")
    return out + [""]


def _append_block(mark: str, block: str) -> None:
    text = SECTION.read_text() if SECTION.exists() else ""
    if mark in text:
        i = text.index(mark)
        j = text.find("\n### ", i + len(mark))
        text = text[:i] + (text[j + 1:] if j != -1 else "")
    SECTION.write_text(text.rstrip("\n") + "\n\n" + block)


def allocator_sweeps_main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--allocator-sweeps", action="store_true")
    ap.add_argument("--traces", default="resnet32")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--step", type=float, default=0.01)
    ap.add_argument("--resolution", type=float, default=1e-3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    block = "\n".join(allocator_sweeps(a.traces, a.heuristic, a.step, a.resolution))
    block += "\nCommand:\n\n  .venv/bin/python benchmarks/bench_dtr_dense.py " + " ".join(argv) + "\n"
    print(block)
    if not a.no_write:
        _append_block(AL_MARK, block)
    return 0


W_MARK = "### Interval widths per trace (why sharing helps ResNet-32 most)"


def widths_main(argv) -> int:
    """The budget-equivalence interval of one replay per (trace, ratio), in resolution steps:
    a dense scan runs about (samples / mean width) replays."""
    from memsched.solvers.dtr.runtime import Runtime

    ap = argparse.ArgumentParser()
    ap.add_argument("--widths", action="store_true")
    ap.add_argument("--traces", default="resnet32,transformer,treelstm,lstm")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--ratios", default="0.3,0.6,0.9")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    ratios = [float(x) for x in a.ratios.split(",")]
    out = [W_MARK, "", f"Heuristic {a.heuristic}; width = (eq_hi - eq_lo) / (1e-4 x baseline memory): the number of "
           "1e-4 budget steps that run the identical replay.", "",
           "| trace | " + " | ".join(f"ratio {r}" for r in ratios) + " | replay wall s (ratio 0.6) |",
           "|---|" + "---|" * len(ratios) + "---|"]
    for name in a.traces.split(","):
        tr = _load(trace_path(name))
        b = trace_baseline(tr)
        lim = b["baseline_compute"] * 1.0
        cells, w06 = [], None
        for r in ratios:
            t = time.perf_counter()
            rt = Runtime(tr, int(r * b["baseline_memory"]), a.heuristic, remat_limit=lim)
            o = rt.run()
            w = time.perf_counter() - t
            if r == 0.6:
                w06 = w
            width = "inf" if rt.eq_hi == float("inf") else f"{(rt.eq_hi - rt.eq_lo) / (1e-4 * b['baseline_memory']):.1f}"
            cells.append(f"{width} ({o})")
        print(f"widths {name}: {cells}", flush=True)
        out.append(f"| {name} | " + " | ".join(cells) + f" | {'-' if w06 is None else f'{w06:.2f}'} |")
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(W_MARK, block)
    return 0


SPLIT_MARK = "### Runtime split: replay speed before vs after"


def runtime_speed_main(argv) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime-speed", required=True, metavar="REV")
    ap.add_argument("--traces", default="resnet32")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--split", action="store_true", help="the block of the runtime split (issue 16)")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    mark = SPLIT_MARK if a.split else RT_MARK
    what = ("The runtime split into core, heuristics table, regions, eq classes, lookahead and baseline modules "
            "(docs/dtr.md section 2). ") if a.split else ""
    block = "\n".join(runtime_speed(a.runtime_speed, a.traces, a.heuristics, mark, what))
    block += "\nCommand:\n\n  .venv/bin/python benchmarks/bench_dtr_dense.py " + " ".join(
        x for x in argv if x != "--no-write") + "\n"
    print(block)
    if not a.no_write:
        _append_block(mark, block)
    return 0


DV_MARK = "### Where replays at nearby budgets first differ (the ceiling of prefix sharing)"


def divergence_main(argv) -> int:
    """Per (trace, ratio): one replay with its budget interval recorded before every command;
    for the budgets 1, 10 and 100 resolution steps lower, the first command where the
    interval no longer holds them (position in the schedule and share of the replay's
    time): a replay at that budget can share at most that prefix."""
    from memsched.solvers.dtr.runtime import Runtime

    ap = argparse.ArgumentParser()
    ap.add_argument("--divergence", action="store_true")
    ap.add_argument("--traces", default="resnet32,transformer,treelstm,lstm")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--ratios", default="0.15,0.3,0.5,0.7,0.9")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    steps = (1, 10, 100)
    out = [DV_MARK, "", f"Heuristic {a.heuristic}. Cell: share of the replay's time (and of its schedule) before the "
           "first command at which a budget k resolution steps (1e-4 x baseline memory) lower leaves the "
           "interval of the budget tests made so far; 'equal': the whole replay is shared (the final interval "
           "holds it, already used by interval sharing). Prefix sharing can save at most this share of a "
           "replay's time.", "",
           "| trace | ratio | outcome | replay s | " + " | ".join(f"{k} step{'s' if k > 1 else ''} lower" for k in steps)
           + " |", "|---|---|---|---|" + "---|" * len(steps)]
    for name in a.traces.split(","):
        tr = _load(trace_path(name))
        b = trace_baseline(tr)
        bm = b["baseline_memory"]
        for r in (float(x) for x in a.ratios.split(",")):
            marks = []

            def hook(rt, k):
                marks.append((k, rt.eq_lo, rt.eq_hi, time.perf_counter()))
                return k + 1
            bud = int(r * bm)
            rt = Runtime(tr, bud, a.heuristic, remat_limit=b["baseline_compute"])
            t0 = time.perf_counter()
            o = rt.resume(0, hook)
            tt = time.perf_counter() - t0
            cells = []
            for k in steps:
                lo = bud - int(k * 1e-4 * bm)
                m = next((m for m in marks if not (m[1] <= lo < m[2])), None)
                if m is None and rt.eq_lo <= lo < rt.eq_hi:
                    cells.append("equal")
                else:
                    m = m or marks[-1]
                    cells.append(f"{(m[3] - t0) / tt:.0%} ({m[0] / len(tr.schedule):.0%})")
            print(f"divergence {name} {r}: {o} {tt:.2f} s {cells}", flush=True)
            out.append(f"| {name} | {r} | {o} | {tt:.2f} | " + " | ".join(cells) + " |")
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(DV_MARK, block)
    return 0


PS_MARK = "### Prefix sharing: side by side"


def prefix_side_main(argv) -> int:
    """Dense sub-range scans (repeats 1, in-process): interval sharing only vs interval +
    prefix sharing, run in both orders (A B B A) so that load changes fall on both sides;
    every sample of the two must agree."""
    import importlib

    sweep_mod = importlib.import_module("memsched.solvers.dtr.sweep")

    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix-side", required=True, metavar="TRACE:LO:HI,...")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--resolution", type=float, default=1e-4)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    out = [PS_MARK, "", f"Heuristic {a.heuristic}, dense scan of each sub-range at {a.resolution:g}, repeats 1, "
           "in one process; A = interval sharing only (the default before), B = interval + prefix sharing "
           "(`sweep(..., prefix=True)`: one snapshot per replay, a replay resumes from the deepest snapshot "
           "whose budget interval holds its budget). Order A B B A, wall seconds summed per side; the snapshot "
           f"store is emptied before each B run. Load average at start {load[0]:.1f} / {load[1]:.1f} / "
           f"{load[2]:.1f} (2 cores shared with other helpers).", "",
           "| trace | range | samples | replays | resumed (of replays) | A: wall s | B: wall s | B / A | "
           "every sample equal |", "|---|---|---|---|---|---|---|---|---|"]
    for item in a.prefix_side.split(","):
        name, lo, hi = item.split(":")
        tr = _load(trace_path(name))
        trace_baseline(tr)
        kw = dict(lo=float(lo), hi=float(hi), resolution=a.resolution, repeats=1, run_timeout=None)
        walls = {False: 0.0, True: 0.0}
        res = {}
        for pre in (False, True, True, False):
            sweep_mod._PREFIX.clear()
            t = time.perf_counter()
            r = sweep(tr, a.heuristic, prefix=pre, **kw)
            walls[pre] += time.perf_counter() - t
            res.setdefault(pre, r)
        same = [key(x) for x in res[False].points] == [key(x) for x in res[True].points]
        assert same, (name, "prefix sharing changed a sample")
        rb = res[True]
        print(f"prefix side {name} [{lo}, {hi}]: A {walls[False]:.1f} s B {walls[True]:.1f} s, "
              f"{rb.resumed}/{rb.replays} resumed, equal={same}", flush=True)
        out.append(f"| {name} | {lo}-{hi} | {len(rb.points)} | {rb.replays} | {rb.resumed} | {walls[False]:.1f} | "
                   f"{walls[True]:.1f} | {walls[True] / walls[False]:.2f} | {'yes' if same else 'NO'} |")
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(PS_MARK, block)
    return 0


CS_MARK = "### Full dense scans within a time cap"


def capped_scan_main(argv) -> int:
    """A dense 0.1-1.0 scan (repeats 3, interval sharing, optionally prefix sharing) in a
    local pool of --jobs workers, stopped after --cap seconds: the samples covered show how
    far a full scan is from the cap."""
    from memsched.solvers.dtr.sweep import SweepInterrupted

    ap = argparse.ArgumentParser()
    ap.add_argument("--capped-scan", required=True, metavar="TRACE,...")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--cap", type=float, default=600.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-prefix", action="store_true")
    ap.add_argument("--verify", type=int, default=30)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    out = [CS_MARK, "", f"Heuristic {a.heuristic}, dense 0.1-1.0 at 1e-4 (9001 samples), repeats 3, interval "
           f"sharing{'' if a.no_prefix else ' + prefix sharing'}, {a.jobs} worker processes, stopped after "
           f"{a.cap:g} s (the dense order samples the 0.01 grid first, then halving strides). Load average at "
           f"start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. Verified: random finished samples re-run as "
           "independent replays.", "",
           "| trace | finished | samples done (of 9001) | replays | resumed | derived | wall s | holes so far | "
           "verified |", "|---|---|---|---|---|---|---|---|---|"]
    rng = random.Random(0)
    for name in a.capped_scan.split(","):
        tr = _load(trace_path(name))
        trace_baseline(tr)
        t0 = time.perf_counter()

        def stop(n):
            if time.perf_counter() - t0 > a.cap:
                raise KeyboardInterrupt

        try:
            r = sweep(tr, a.heuristic, lo=0.1, hi=1.0, repeats=3, run_timeout=None, jobs=a.jobs,
                      prefix=not a.no_prefix, progress=stop)
            finished = "yes"
        except SweepInterrupted as e:
            r = e.partial[0]
            finished = "no (cap)"
        w = time.perf_counter() - t0
        pts = [p for p in r.points if p.outcome in ("ok", "oom", "remat_exceeded")]
        pts = rng.sample(pts, min(a.verify, len(pts)))
        bad = [x.ratio for x in pts if key(x) != key(replay(tr, x.ratio, heuristic=a.heuristic))]
        assert not bad, (name, bad[:5])
        print(f"capped scan {name}: {finished}, {len(r.points)} samples, {r.replays} replays, {r.resumed} resumed, "
              f"{r.derived} derived, {w:.0f} s, {len(r.holes)} holes, {len(pts)} verified", flush=True)
        out.append(f"| {name} | {finished} | {len(r.points)} | {r.replays} | {r.resumed} | {r.derived} | {w:.0f} | "
                   f"{len(r.holes)} | {len(pts)} random, all equal |")
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(CS_MARK, block)
    return 0


PIN_MARK = "### dtr explain: single-pin search with shared prefixes"


def pin_search_main(argv) -> int:
    """dtr explain's single-pin search (the candidates of one hole) before vs after prefix
    sharing: independent pinned replays from the start vs forks of one unpinned run taken
    just before each candidate is computed; every try compared."""
    from memsched.solvers.dtr.explain import explain

    ap = argparse.ArgumentParser()
    ap.add_argument("--pin-search", required=True, metavar="TRACE:FAIL:OK,...")
    ap.add_argument("--heuristic", default="dtr")
    ap.add_argument("--max-pins", type=int, default=20)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    out = [PIN_MARK, "", f"Heuristic {a.heuristic}; the first {a.max_pins} candidates (storages evicted between the "
           "first divergence and the failure) of `explain(TRACE, FAIL, vs=OK)`. Before: one `replay(..., pin=[t])` "
           "per candidate, from the start; after: `search_pins` (forks of one unpinned run). Load average at start "
           f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}.", "",
           "| trace | failing / feasible ratio | candidates tried | rescues | before s | after s | after / before | "
           "every try equal |", "|---|---|---|---|---|---|---|---|"]
    for item in a.pin_search.split(","):
        name, fail, ok = item.split(":")
        tr = _load(trace_path(name))
        trace_baseline(tr)
        d = explain(tr, float(fail), vs=float(ok), heuristic=a.heuristic, max_pins=a.max_pins, pin_time_limit=None)
        ps = d.get("pin_search")
        if not ps:
            print(f"{name}: no divergence, no pin search")
            continue
        t = time.perf_counter()
        same = True
        for x in ps["tries"]:
            r = replay(tr, float(fail), heuristic=a.heuristic, pin=[x["tensor_id"]])
            same &= (r.outcome, r.clock, r.evictions) == (x["outcome"], x["clock"], x["evictions"])
        before = time.perf_counter() - t
        assert same, (name, "a forked pin run differs from its independent replay")
        after = ps["wall_s"]
        print(f"pin search {name} {fail}/{ok}: {ps['tried']} tries, before {before:.1f} s after {after:.1f} s", flush=True)
        out.append(f"| {name} | {fail} / {ok} | {ps['tried']} | {len(ps['rescues'])} | {before:.1f} | {after:.1f} | "
                   f"{after / before:.2f} | {'yes' if same else 'NO'} |")
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(PIN_MARK, block)
    return 0

FS_MARK = "### Full dense scans: every sample of 0.1-1.0 at 1e-4, early stop on"


class _CappedExecutor:
    """A local pool whose run stops (as a Ctrl-C does) at the first replay finished after
    ``deadline`` (time.perf_counter()), after recording it: the cap is checked per replay,
    not per batch (a dense level is one batch of thousands of samples)."""

    name = "local"

    def __init__(self, jobs: int, deadline: float):
        from memsched.solvers.pool.executors import LocalExecutor

        self.inner, self.deadline = LocalExecutor(jobs), deadline

    def run(self, tasks, texts, on_done):
        def wrapped(t, out):
            more = on_done(t, out)
            if time.perf_counter() > self.deadline:
                raise KeyboardInterrupt
            return more

        return self.inner.run(tasks, texts, wrapped)
_OLD_FULL = ("### Full dense scans (0.1-1.0 at 0.0001, repeats 3, sharing on)", CS_MARK)
_VTR: dict = {}


def _verify_init(path: str) -> None:
    _VTR["tr"] = _load(Path(path))
    trace_baseline(_VTR["tr"])


def _verify_one(ratio: float, h: str):
    # the Python runtime (engine='python'): independent of the compiled engine the sweeps use
    r = replay(_VTR["tr"], ratio, heuristic=h, engine="python")
    return ratio, (r.outcome, r.clock, r.peak, r.evictions), r.wall_s


def _agrees(p, full) -> bool:
    """A sweep sample vs its independent full replay: a sample stopped early (thrash_or_oom)
    must be a full remat_exceeded or oom; any other sample equal in outcome, clock, peak and
    evictions."""
    if p.outcome == "thrash_or_oom":
        return full[0] in ("remat_exceeded", "oom")
    return key(p) == full


def full_scans_main(argv) -> int:
    """Dense 0.1-1.0 scans at 1e-4 (repeats 3, interval sharing, early stop) of each trace
    and heuristic in a local pool of --jobs workers, each stopped after --cap seconds; then
    --verify random finished samples per scan re-run as independent full replays (no early
    stop; a pool of --jobs processes, at most --verify-cap seconds)."""
    from concurrent.futures import ProcessPoolExecutor, wait

    from memsched.solvers.dtr.sweep import SweepInterrupted

    ap = argparse.ArgumentParser()
    ap.add_argument("--full-scans", required=True, metavar="TRACE,...")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--cap", type=float, default=900.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verify", type=int, default=500)
    ap.add_argument("--verify-cap", type=float, default=300.0)
    ap.add_argument("--no-early-stop", action="store_true")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows (and holes, and commands) of the section's block for scans not in this run")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    early = not a.no_early_stop
    load = os.getloadavg()
    out = [FS_MARK, "", f"Dense 0.1-1.0 at 1e-4 (9001 samples), repeats 3, interval sharing, "
           f"{'early stop on (`sweep(..., early_stop=True)`)' if early else 'early stop off'}, {a.jobs} worker "
           f"processes, each scan stopped at its cap (--cap {a.cap:g} s unless given per scan) if not finished (checked after "
           f"every replay). Load average at start {load[0]:.1f} / {load[1]:.1f} / "
           f"{load[2]:.1f} (2 cores shared with other helpers). `thrash_or_oom`: samples stopped early by the proof "
           "(docs/dtr.md section 3, \"Early stop\"): infeasible, their full replay ends in remat_exceeded or oom, "
           "and their recorded clock is the clock at the stop, not the full run's. Verified: random finished "
           "samples re-run as independent full replays (no early stop, the Python runtime: "
           "`replay(..., engine='python')`, while the sweeps use the compiled engine where it applies, docs/dtr.md "
           "section 2) in a pool of the same size: an early-stopped "
           "sample must be a full remat_exceeded or oom, every other sample equal in outcome, clock, peak and "
           f"evictions (at most {a.verify} per scan, at most {a.verify_cap:g} s of verification per scan).", "",
           "| trace | heuristic | finished | wall s | load at start | samples done (of 9001) | replays | derived | "
           "thrash_or_oom samples | smallest feasible | holes | verified vs independent full replays |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    holes_txt = []
    rng = random.Random(0)
    jobs_ = []  # (trace, heuristic, cap): an entry is TRACE (every --heuristics), TRACE:H or TRACE:H:CAP
    for ent in a.full_scans.split(","):
        parts = ent.split(":")
        for h in ([parts[1]] if len(parts) > 1 else a.heuristics.split(",")):
            jobs_.append((parts[0], h, float(parts[2]) if len(parts) > 2 else a.cap))
    kept_rows, kept_holes, kept_cmds = [], [], []
    if a.keep and SECTION.exists() and FS_MARK in SECTION.read_text():
        text = SECTION.read_text()
        i = text.index(FS_MARK)
        j = text.find("\n### ", i + len(FS_MARK))
        blk = text[i:j if j != -1 else len(text)].splitlines()
        mine = {(n, h) for n, h, _ in jobs_}
        for ln in blk:
            cells = [c.strip() for c in ln.split("|")]
            if ln.startswith("| ") and len(cells) > 3 and not cells[1] == "trace" and (cells[1], cells[2]) not in mine:
                kept_rows.append(ln)
            elif ln.startswith("* ") and tuple(ln[2:].split(":")[0].split(" ")[:2]) not in mine:
                kept_holes.append(ln)
            elif ln.startswith("  .venv/bin/python benchmarks/bench_dtr_dense.py --full-scans"):
                kept_cmds.append(ln)
        out += kept_rows
        holes_txt += kept_holes
    trs: dict = {}
    for name, h, cap in jobs_:
        path = trace_path(name)
        if name not in trs:
            trs[name] = _load(path)
            trace_baseline(trs[name])
        tr = trs[name]
        if True:
            t0 = time.perf_counter()
            la = os.getloadavg()[0]

            def stop(n, cap=cap, t0=t0):
                if time.perf_counter() - t0 > cap:
                    raise KeyboardInterrupt

            try:
                r = sweep(tr, h, lo=0.1, hi=1.0, repeats=3, run_timeout=None, jobs=a.jobs, early_stop=early,
                          progress=stop, executor=_CappedExecutor(a.jobs, t0 + cap))
                finished = "yes"
            except SweepInterrupted as e:
                r = e.partial[0]
                finished = f"no (cap {cap:g} s)"
            w = time.perf_counter() - t0
            n_early = sum(1 for p in r.points if p.outcome == "thrash_or_oom")
            pts = [p for p in r.points if p.outcome in ("ok", "oom", "remat_exceeded", "thrash_or_oom")]
            pts = rng.sample(pts, min(a.verify, len(pts)))
            by_ratio = {p.ratio: p for p in pts}
            tv = time.perf_counter()
            checked, bad, vwall = 0, [], 0.0
            with ProcessPoolExecutor(a.jobs, initializer=_verify_init, initargs=(str(path),)) as ex:
                futs = [ex.submit(_verify_one, p.ratio, h) for p in pts]
                done, pending = wait(futs, timeout=a.verify_cap)
                for f in pending:
                    f.cancel()
                for f in done:
                    ratio, full, vw = f.result()
                    checked += 1
                    vwall += vw
                    if not _agrees(by_ratio[ratio], full):
                        bad.append(ratio)
            tv = time.perf_counter() - tv
            assert not bad, (name, h, sorted(bad)[:5])
            mf = r.min_feasible()
            line = (f"| {name} | {h} | {finished} | {w:.0f} | {la:.1f} | {len(r.points)} | {r.replays} | {r.derived}"
                    f"{f' (+{r.repeat_derived} repeats)' if r.repeat_derived else ''} | "
                    f"{n_early} | {'-' if mf is None else f'{mf:.4f}'} | {len(r.holes)} | {checked} random, all agree "
                    f"({tv:.0f} s) |")
            print(line, flush=True)
            out.append(line)
            for hh in r.holes:
                kinds = ", ".join(f"{o} {hh.outcomes.count(o)}" for o in sorted(set(hh.outcomes)))
                holes_txt.append(f"* {name} {h}: infeasible {hh.first:.4f}-{hh.last:.4f} ({len(hh.ratios)} samples: "
                                 f"{kinds}) between feasible {hh.feasible_below:.4f} and {hh.feasible_above:.4f}")
            _write_full(out, holes_txt, argv, a.no_write, done=False, kept_cmds=kept_cmds)
    _write_full(out, holes_txt, argv, a.no_write, done=True, kept_cmds=kept_cmds)
    return 0


def _write_full(out, holes_txt, argv, no_write: bool, done: bool, kept_cmds=()) -> None:
    """The full-scans block so far (rewritten after every scan, so an interrupted run keeps
    the scans it finished)."""
    cmd = "  .venv/bin/python benchmarks/bench_dtr_dense.py " + " ".join(x for x in argv if x != "--no-write")
    cmds = [c for c in kept_cmds if c != cmd] + [cmd]
    block = "\n".join(out + ([] if done else ["", "(run in progress: the scans above are done)"])
                      + ["", "Holes found (in the samples done):", ""] + (holes_txt or ["none"])
                      + ["", "Commands (the rows of earlier runs are kept with --keep):" if len(cmds) > 1
                         else "Command:", ""] + cmds + [""])
    if done:
        print(block)
    if not no_write:
        for m in _OLD_FULL:
            _drop_block(m)
        _append_block(FS_MARK, block)


ES_MARK = "### Early stop: thrashing replays side by side"


def early_side_main(argv) -> int:
    """Full replay vs early-stop replay at the given ratios, interleaved (full, early,
    early, full), wall seconds summed per side; outcome and stop position reported."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--early-side", required=True, metavar="TRACE:R1/R2/...,...")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    out = [ES_MARK, "", "The same replays without and with `early_stop` in one process, order full, early, early, "
           f"full; wall seconds summed per side. Load average at start {load[0]:.1f} / {load[1]:.1f} / "
           f"{load[2]:.1f} (2 cores shared with other helpers). Stop: share of the full replay's schedule "
           "position and remat compute at which the proof stopped the run.", "",
           "| trace | heuristic | ratios | full outcomes | early outcomes | stop at (schedule, remat) | full s | "
           "early s | early / full |", "|---|---|---|---|---|---|---|---|---|"]
    for spec_ in a.early_side.split(","):
        name, rs = spec_.split(":")
        ratios = [float(x) for x in rs.split("/")]
        tr = _load(trace_path(name))
        trace_baseline(tr)
        for h in a.heuristics.split(","):
            tf = te = 0.0
            fo, eo, where = [], [], []
            for r in ratios:
                for order in ("fe", "ef"):
                    for side in order:
                        x = replay(tr, r, heuristic=h, early_stop=side == "e", keep_runtime=True)
                        if side == "e":
                            te += x.wall_s
                            e = x
                        else:
                            tf += x.wall_s
                            f = x
                assert (e.outcome == "thrash_or_oom" and f.outcome in ("remat_exceeded", "oom")) or \
                    key(e) == key(f), (name, h, r)
                fo.append(f.outcome)
                eo.append(e.outcome)
                if e.outcome == "thrash_or_oom":
                    where.append(f"{e.runtime.pos / max(1, f.runtime.pos):.0%}, "
                                 f"{e.remat_compute / max(1, f.remat_compute):.0%}")
            cnt = lambda xs: ", ".join(f"{o} {xs.count(o)}" for o in sorted(set(xs)))  # noqa: E731
            line = (f"| {name} | {h} | {'/'.join(f'{r:g}' for r in ratios)} | {cnt(fo)} | {cnt(eo)} | "
                    f"{'; '.join(where) or '-'} | {tf / 2:.1f} | {te / 2:.1f} | {te / tf:.2f} |")
            print(line, flush=True)
            out.append(line)
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(ES_MARK, block)
    return 0


def _drop_block(mark: str) -> None:
    """Remove the block that starts with ``mark`` (up to the next ### heading)."""
    if not SECTION.exists():
        return
    text = SECTION.read_text()
    if mark not in text:
        return
    i = text.index(mark)
    j = text.find("\n### ", i + len(mark))
    SECTION.write_text(text[:i].rstrip("\n") + "\n\n" + (text[j + 1:] if j != -1 else ""))


HP_MARK = "### Hot path: replay speed before vs after (evicted-neighbour sets)"


def hot_path_main(argv) -> int:
    """The DTR package at REV (every module of solvers/dtr, imported as its own package)
    vs the working tree's: the same replays, order old, new, new, old per ratio, wall
    seconds summed per side; every result compared (outcome, clock, peak, evictions,
    budget interval)."""
    import importlib
    import subprocess
    import tempfile

    from memsched.solvers.dtr import runtime as new_rt

    ap = argparse.ArgumentParser()
    ap.add_argument("--hot-path", required=True, metavar="REV")
    ap.add_argument("--traces", default="resnet32,transformer,treelstm,lstm")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--ratios", default="0.2,0.4,0.6,0.8")
    ap.add_argument("--title", default=HP_MARK[4:], help="the block's heading (a block of the same heading is replaced)")
    ap.add_argument("--early", action="store_true", help="both sides with early stop (as the full scans run)")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    mark = "### " + a.title
    tmp = tempfile.mkdtemp(prefix="old_dtr_")
    pkg = Path(tmp) / "old_dtr_pkg"
    pkg.mkdir()
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", a.hot_path, "solvers/dtr/"],
                           check=True, capture_output=True, text=True).stdout.split()
    for f in names:
        if f.endswith(".py"):
            (pkg / Path(f).name).write_text(subprocess.run(["git", "-C", str(ROOT), "show", f"{a.hot_path}:{f}"],
                                                           check=True, capture_output=True, text=True).stdout)
    sys.path.insert(0, tmp)
    old_rt = importlib.import_module("old_dtr_pkg.runtime")
    from memsched.solvers.dtr import eqscan

    warm_s = eqscan.warm()  # numba's compiled scan loaded before timing (once per process)
    load = os.getloadavg()
    out = [mark, "", f"The DTR package at {a.hot_path} (old) vs the working tree (new): the same replays "
           f"(ratios {a.ratios}, remat limit = baseline compute{', early stop on' if a.early else ''}), order old, "
           "new, new, old per ratio, wall seconds "
           f"summed per side, in one process. Load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
           "(2 cores shared with other helpers).", "",
           "Identical: outcome, clock, peak, evictions, eager evictions, recomputations, remat compute and the "
           "budget interval of every replay equal on both sides (and each side's two runs equal). The compiled "
           f"scan is loaded before timing (numba's cache; {warm_s:.2f} s in this process, paid once per process: "
           "a sweep worker pays it at its first eq choice).", "",
           "| trace | heuristic | old s | new s | new / old | identical results |", "|---|---|---|---|---|---|"]
    ratios = [float(x) for x in a.ratios.split(",")]
    for name in a.traces.split(","):
        tr = _load(trace_path(name))
        b = trace_baseline(tr)
        lim = b["baseline_compute"] * 1.0
        for h in a.heuristics.split(","):
            to = tn = 0.0
            same = True
            for r in ratios:
                bud = int(r * b["baseline_memory"])
                res = {}
                for side, mod in (("old", old_rt), ("new", new_rt), ("new", new_rt), ("old", old_rt)):
                    t = time.perf_counter()
                    rt = mod.Runtime(tr, bud, h, remat_limit=lim, **({"early_stop": True} if a.early else {}))
                    o = rt.run()
                    w = time.perf_counter() - t
                    if side == "old":
                        to += w
                    else:
                        tn += w
                    res.setdefault(side, set()).add((o, rt.clock, rt.peak, rt.evictions, rt.eager_evictions,
                                                     rt.remat_count, rt.remat_compute, rt.eq_lo, rt.eq_hi))
                same &= res["old"] == res["new"] and len(res["new"]) == 1
            line = f"| {name} | {h} | {to / 2:.2f} | {tn / 2:.2f} | {tn / to:.2f} | {'yes' if same else 'NO'} |"
            print(line, flush=True)
            out.append(line)
            assert same, (name, h)
    import shlex

    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + shlex.join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(mark, block)
    return 0



PR_MARK = "### Where a replay's time goes (cProfile, by part of the runtime)"


def _profile_part(fn: str, name: str) -> str:
    """The part of the runtime a profiled function belongs to."""
    if "<dtr heuristic cost" in fn or name in ("scan", "choose", "_eq_pick", "_choose") or "fromiter" in name:
        return "eviction choice"
    if fn.endswith("regions.py"):
        return "regions (e*)"
    if fn.endswith("eqclass.py") or fn.endswith("eqscan.py"):
        return "eq classes"
    if name in ("remat_lower_bound", "_early_check"):
        return "early-stop bound"
    if fn.endswith("runtime.py"):
        return "core (per command)"
    return "other (builtins, numpy, sets)"


def profile_main(argv) -> int:
    """One replay per trace, heuristic and ratio under cProfile (early stop on, as the
    scans run); internal time grouped by part of the runtime."""
    import cProfile
    import pstats

    from memsched.solvers.dtr import eqscan
    from memsched.solvers.dtr.runtime import Runtime

    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--traces", default="resnet32,transformer,treelstm,lstm")
    ap.add_argument("--heuristics", default="dtr,dtr-eqclass")
    ap.add_argument("--ratios", default="0.15,0.3,0.6")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args(argv)
    eqscan.warm()
    parts = ["eviction choice", "regions (e*)", "eq classes", "core (per command)", "early-stop bound",
             "other (builtins, numpy, sets)"]
    load = os.getloadavg()
    out = [PR_MARK, "", f"One replay per trace, heuristic and ratio ({a.ratios}; early stop on, remat limit = "
           "baseline compute, as in the full scans) under cProfile, internal time summed per part of the runtime "
           "(share of the profiled total; cProfile inflates call-heavy code, so read the shares, not the "
           f"seconds). Load average at start {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. Parts: eviction "
           "choice = the pool scan (Python, or the compiled eq scan with its pool gathering); regions = "
           "regions.py (absorb, rebuild, closures, weights, update logs); eq classes = eqclass.py and the "
           "compiled scan's mirrors; core = runtime.py per command (compute, materialize, locks, edges, "
           "eviction bookkeeping, state set-up); early-stop bound = the lower bound's passes; other = builtins "
           "called from all of these (set and list methods, numpy).", "",
           "| trace | heuristic | replays (outcomes) | profiled s | " + " | ".join(parts) + " | top functions |",
           "|---|---|---|---|" + "---|" * len(parts) + "---|"]
    for name in a.traces.split(","):
        tr = _load(trace_path(name))
        b = trace_baseline(tr)
        for h in a.heuristics.split(","):
            pr = cProfile.Profile()
            outs = []
            for r in (float(x) for x in a.ratios.split(",")):
                bud = int(r * b["baseline_memory"])
                rt = Runtime(tr, bud, h, remat_limit=b["baseline_compute"], early_stop=True)
                pr.enable()
                outs.append(rt.run())
                pr.disable()
            st = pstats.Stats(pr)
            acc = dict.fromkeys(parts, 0.0)
            funcs = []
            for (fn, _ln, nm), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
                acc[_profile_part(fn, nm)] += tt
                label = ("heuristics.choose (compiled expression)" if fn.startswith("<dtr heuristic cost")
                         else nm if fn == "~" else f"{Path(fn).name.replace('.py', '')}.{nm}")
                funcs.append((tt, label))
            tot = sum(acc.values()) or 1.0
            funcs.sort(reverse=True)
            top = ", ".join(f"{f} {100 * t / tot:.0f}%" for t, f in funcs[:3])
            oc = ", ".join(f"{o} {outs.count(o)}" for o in sorted(set(outs)))
            line = (f"| {name} | {h} | {len(outs)} ({oc}) | {tot:.2f} | "
                    + " | ".join(f"{100 * acc[p] / tot:.0f}%" for p in parts) + f" | {top} |")
            print(line, flush=True)
            out.append(line)
    block = "\n".join(out + ["", "Command:", "", "  .venv/bin/python benchmarks/bench_dtr_dense.py "
                              + " ".join(x for x in argv if x != "--no-write"), ""])
    print(block)
    if not a.no_write:
        _append_block(PR_MARK, block)
    return 0


if __name__ == "__main__":
    if "--profile" in sys.argv[1:]:
        raise SystemExit(profile_main(sys.argv[1:]))
    if any(x.startswith("--pin-search") for x in sys.argv[1:]):
        raise SystemExit(pin_search_main(sys.argv[1:]))
    if "--divergence" in sys.argv[1:]:
        raise SystemExit(divergence_main(sys.argv[1:]))
    if any(x.startswith("--prefix-side") for x in sys.argv[1:]):
        raise SystemExit(prefix_side_main(sys.argv[1:]))
    if any(x.startswith("--hot-path") for x in sys.argv[1:]):
        raise SystemExit(hot_path_main(sys.argv[1:]))
    if any(x.startswith("--full-scans") for x in sys.argv[1:]):
        raise SystemExit(full_scans_main(sys.argv[1:]))
    if any(x.startswith("--early-side") for x in sys.argv[1:]):
        raise SystemExit(early_side_main(sys.argv[1:]))
    if any(x.startswith("--capped-scan") for x in sys.argv[1:]):
        raise SystemExit(capped_scan_main(sys.argv[1:]))
    if "--widths" in sys.argv[1:]:
        raise SystemExit(widths_main(sys.argv[1:]))
    if "--allocator-sweeps" in sys.argv[1:]:
        raise SystemExit(allocator_sweeps_main(sys.argv[1:]))
    if any(x.startswith("--runtime-speed") for x in sys.argv[1:]):
        raise SystemExit(runtime_speed_main(sys.argv[1:]))
    raise SystemExit(main())
