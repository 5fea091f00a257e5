"""DTR under address-aware allocators (section 63-dtr-alloc).

Per shared trace and mode (allocator x heuristic: bytes/dtr, first-fit/dtr, best-fit/dtr,
caching/dtr, first-fit/coop, best-fit/coop): the smallest feasible budget sampled, the
holes among the samples, the evictions made for want of a block, and the compute overhead
of coop vs dtr under the same arena (same-run side by side, at the budgets where both
complete).

Dense scans with interval sharing (the section's first tables; ``--shared-side``,
``--shared-scans``): address-aware replays record every budget test (docs/dtr.md,
Allocators), so ``memsched dtr sweep --allocator`` takes every sample inside a finished
replay's budget interval from that replay, as for bytes. ``--shared-side`` runs a dense
sub-range with and without sharing (every sample compared, wall-time ratio);
``--shared-scans`` runs full dense 0.1-1.0 scans (bench_dtr_dense.py's capped pool, the
sweep itself) and re-runs random samples as independent ``replay_alloc`` replays.

Older sampling (the grid tables below them, kept): a descending grid 1.00, 0.95, ..., 0.10
(step 0.05); then every 0.01 in the 0.05 below the smallest feasible grid point; then every
0.001 in the 0.01 below the smallest feasible point so far (before sharing existed); holes
narrower than the grid can be missed there.

Each replay is one row of ``--results`` (JSON lines; ``--resume`` reuses rows of the same
trace, mode and ratio), so an interrupted run continues where it stopped.

    nice .venv/bin/python benchmarks/bench_dtr_alloc.py [--traces resnet32,transformer,treelstm,lstm]
        [--modes bytes/dtr,first-fit/dtr,...] [--cap-per-trace 900] [--run-timeout 60] [--resume]
    .venv/bin/python benchmarks/bench_dtr_alloc.py --write-only   (rebuild the section from the rows)
    .venv/bin/python benchmarks/bench_dtr_alloc.py --explain resnet32:0.147:caching[:HEURISTIC][,...]
        (dtr explain --allocator on those failures; the text goes into the section)
    nice .venv/bin/python benchmarks/bench_dtr_alloc.py --shared-side resnet32:0.10:0.20
        [--shared-modes first-fit/dtr,best-fit/dtr,caching/dtr]
    nice .venv/bin/python benchmarks/bench_dtr_alloc.py --shared-scans resnet32,transformer:best-fit/dtr:900
        [--shared-modes ...] [--cap 900] [--jobs 2] [--verify 300] [--verify-cap 240]
        (an entry is TRACE (every --shared-modes), TRACE:MODE or TRACE:MODE:CAP; rows in
        benchmarks/results/dtr_alloc_shared.json, a rerun of a (trace, mode) replaces its row)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"
SECTION = ROOT / "benchmarks" / "sections" / "63-dtr-alloc.md"
RESULTS = ROOT / "benchmarks" / "results" / "dtr_alloc.jsonl"
EXPLAIN = ROOT / "benchmarks" / "results" / "dtr_alloc_explain.json"
DENSE = ROOT / "benchmarks" / "results" / "dtr_alloc_dense.jsonl"
SHARED = ROOT / "benchmarks" / "results" / "dtr_alloc_shared.json"

from memsched.solvers.dtr.allocator import replay_alloc  # noqa: E402
from memsched.solvers.dtr.replay import load_trace  # noqa: E402
from memsched.solvers.dtr.sweep import find_holes  # noqa: E402

MODES = ["bytes/dtr", "first-fit/dtr", "best-fit/dtr", "caching/dtr", "first-fit/coop", "best-fit/coop"]
TRACES = ["resnet32", "transformer", "treelstm", "lstm"]


def trace_path(name: str) -> Path:
    hits = sorted(p for p in DATA.glob("*.log") if p.name.startswith(name))
    if not hits:
        raise SystemExit(f"no trace {name}* in {DATA}")
    return hits[0]


def grid(lo: float, hi: float, step: float) -> list[float]:
    n = int(round((hi - lo) / step))
    return [round(hi - k * step, 4) for k in range(n + 1)]


def make_one(tr, name: str, mode: str, rows: dict, out, timeout: float, deadline: float):
    """The replay of one ratio in one mode (reused from ``rows`` when there; None past the deadline)."""
    alloc, h = mode.split("/")

    def one(r):
        if r in rows:
            return rows[r]
        if time.time() > deadline:
            return None
        res = replay_alloc(tr, r, heuristic=h, allocator=alloc, timeout=timeout)
        rt = res.runtime
        if res.peak > res.budget:  # the arena and the byte count must agree (never seen)
            raise SystemExit(f"{name} {mode} {r}: peak {res.peak} > budget {res.budget}")
        row = {"trace": name, "mode": mode, "ratio": r, "budget": res.budget, "outcome": res.outcome,
               "clock": res.clock, "peak": res.peak, "overhead": res.overhead, "evictions": res.evictions,
               "frag_evictions": getattr(rt, "frag_evictions", 0), "windows": getattr(rt, "windows", 0),
               "wall_s": round(res.wall_s, 3), "load": os.getloadavg()[0]}
        rows[r] = row
        out.write(json.dumps(row) + "\n")
        out.flush()
        return row

    return one


def stage_ratios(rows: dict, stage: int) -> list[float]:
    """The ratios of protocol stage 0 (grid), 1 (0.01 scan), 2 (0.001 scan) given the rows so far."""
    if stage == 0:
        return grid(0.10, 1.00, 0.05)
    ok = [r for r, x in rows.items() if x["outcome"] == "ok"]
    if not ok:
        return []
    m = min(ok)
    width, step = (0.05, 0.01) if stage == 1 else (0.01, 0.001)
    return grid(max(0.10, round(m - width, 4)), m, step)[1:]


def run_trace(tr, name: str, modes: list[str], old: list[dict], out, timeout: float, cap: float) -> None:
    """All modes of one trace, stage by stage (every mode gets its grid before any scan)."""
    deadline = time.time() + cap
    rows = {m: {x["ratio"]: x for x in old if x["trace"] == name and x["mode"] == m} for m in modes}
    ones = {m: make_one(tr, name, m, rows[m], out, timeout, deadline) for m in modes}
    for stage in range(3):
        for m in modes:
            t0 = time.time()
            for r in stage_ratios(rows[m], stage):
                if ones[m](r) is None:
                    break
            ok = [r for r, x in rows[m].items() if x["outcome"] == "ok"]
            print(f"{name} {m} stage {stage}: {len(rows[m])} samples, smallest feasible {min(ok) if ok else None}, "
                  f"{time.time() - t0:.0f} s", flush=True)


def load_rows(path: Path = RESULTS) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def dense_order(lo: float, hi: float, res: float = 1e-4, min_stride: int = 1) -> list[list[float]]:
    """Every ratio of [lo, hi] at ``res``, in levels: stride 64 steps, then 32, ..., 1
    (each level only the ratios not in an earlier one), so a capped scan is evenly spread."""
    klo, khi = round(lo / res), round(hi / res)
    seen, levels = set(), []
    stride = 64
    while stride >= min_stride:
        lev = [k for k in range(klo, khi + 1, stride) if k not in seen] + ([khi] if khi not in seen else [])
        lev = sorted(set(lev))
        seen.update(lev)
        levels.append([round(k * res, 4) for k in lev])
        stride //= 2
    return levels


def run_dense(names: list[str], modes: list[str], lo: float, hi: float, cap: float, timeout: float,
              min_stride: int = 1) -> None:
    """Every 1e-4 of [lo, hi] per trace and mode, level by level across the modes (rows in DENSE,
    reused on a rerun), stopped at ``cap`` seconds per trace."""
    old = load_rows(DENSE)
    with DENSE.open("a") as out:
        for name in names:
            tr = load_trace(trace_path(name))
            deadline = time.time() + cap
            rows = {m: {x["ratio"]: x for x in old if x["trace"] == name and x["mode"] == m} for m in modes}
            ones = {m: make_one(tr, name, m, rows[m], out, timeout, deadline) for m in modes}
            for lev in dense_order(lo, hi, min_stride=min_stride):
                for m in modes:
                    for r in lev:
                        if ones[m](r) is None:
                            break
                if time.time() > deadline:
                    break
            print(f"{name} dense: " + ", ".join(f"{m} {len(rows[m])}" for m in modes), flush=True)


def dense_table(lo: float, hi: float, header: dict) -> list[str]:
    rows = load_rows(DENSE)
    if not rows:
        return []
    n = sum(len(x) for x in dense_order(lo, hi))
    L = ["", f"### Dense scan of {lo}-{hi} at 1e-4, every sample replayed (before interval sharing; kept)", "",
         f"Every 1e-4 of the range ({n} ratios per mode), visited coarse to fine (stride 0.0064, then halving), "
         f"the modes level by level, stopped at {header.get('dense_cap', '?')} s per trace; `resolution` says how "
         f"far it got (every 2e-4: the levels down to stride 2 complete, the last 1e-4 level not reached), so the "
         f"smallest feasible ratio and the holes are those of that evenly spread subset. Where this table and the "
         f"grid table above differ, this one holds: the grid misses feasible islands below a hole. "
         f"Load average at start: {header.get('dense_load', '?')}.", "",
         "| trace | mode | samples | resolution | smallest feasible | vs bytes | holes | hole samples | "
         "fragmentation samples | wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    full = {k: {r for lev in dense_order(lo, hi, min_stride=k) for r in lev} for k in (1, 2, 4, 8, 16, 32, 64)}
    by: dict = {}
    for x in rows:
        if lo - 1e-9 <= x["ratio"] <= hi + 1e-9:
            by.setdefault((x["trace"], x["mode"]), {})[x["ratio"]] = x
    holes_txt = []
    for t in TRACES:
        base = None
        for m in MODES:
            d = by.get((t, m))
            if not d:
                continue
            pts = sorted((r, x["outcome"]) for r, x in d.items())
            ok = [r for r, o in pts if o == "ok"]
            mf = min(ok) if ok else None
            if m == "bytes/dtr":
                base = mf
            holes = find_holes(pts)
            vs = "-" if mf is None or base is None else f"{mf - base:+.4f} ({mf / base:.3f}x)"
            got = {r for r, _ in pts}
            k = next((k for k in (1, 2, 4, 8, 16, 32, 64) if full[k] <= got), None)
            res = "partial" if k is None else f"every {k}e-4" + (" (all)" if k == 1 else "")
            if k is not None and k > 1 and len(got) > len(full[k]):
                res += " + part of the next level"
            L.append(f"| {t} | {m} | {len(pts)} | {res} | {'none' if mf is None else f'{mf:.4f}'} | {vs} | "
                     f"{len(holes)} | "
                     f"{sum(len(h.ratios) for h in holes)} | {sum(1 for _, o in pts if o == 'fragmentation')} | "
                     f"{sum(x['wall_s'] for x in d.values()):.0f} |")
            for h in holes[:12]:
                holes_txt.append(f"* {t} {m}: {h.first:.4f}-{h.last:.4f} ({len(h.ratios)}: "
                                 f"{', '.join(sorted(set(h.outcomes)))})")
            if len(holes) > 12:
                holes_txt.append(f"* {t} {m}: ... {len(holes) - 12} more")
    L += ["", "Holes of the dense scan (first 12 per mode):", ""] + (holes_txt or ["* none"])
    L += ["", "Command:", "", f"`nice .venv/bin/python benchmarks/bench_dtr_alloc.py {header.get('dense_args', '')}`"]
    return L


# ---------------------------------------------------------------- dense scans with interval sharing
SHARED_MODES = ["first-fit/dtr", "best-fit/dtr", "caching/dtr"]
# byte counting's smallest feasible ratio and holes from section 62's full dense scans (dtr, the same
# 0.1-1.0 1e-4 protocol, early stop on, which changes no feasibility); used for `vs bytes` where this
# run has no bytes/dtr row of its own (LSTM's scan there did not finish)
BYTES_62 = {"resnet32": (0.1466, 1), "transformer": (0.1594, 2), "treelstm": (0.1087, 11), "lstm": (0.1737, 114)}
_VER: dict = {}


def _shared_rows() -> dict:
    return json.loads(SHARED.read_text()) if SHARED.exists() else {"side": [], "scans": []}


def _put(kind: str, row: dict) -> None:
    d = _shared_rows()
    d[kind] = [x for x in d.get(kind, []) if (x["trace"], x["mode"]) != (row["trace"], row["mode"])] + [row]
    SHARED.write_text(json.dumps(d, indent=1))


def _ver_init(path: str) -> None:
    _VER["tr"] = load_trace(Path(path))


def _ver_one(ratio: float, h: str, alloc: str):
    # the Python runtime (AllocRuntime, engine='python'): independent of the compiled engine the sweep used
    r = replay_alloc(_VER["tr"], ratio, heuristic=h, allocator=alloc, engine="python")
    return ratio, (r.outcome, r.clock, r.peak, r.evictions)


def _pt(p):
    return (p.outcome, p.clock, p.peak, p.evictions)


def shared_side(spec: str, modes: list[str]) -> None:
    """Dense sub-range, in process, repeats 1: every sample replayed (share=False) vs interval
    sharing (share=True); every sample compared; wall-time ratio."""
    from memsched.solvers.dtr.replay import trace_baseline
    from memsched.solvers.dtr.sweep import sweep

    name, lo, hi = spec.split(":")
    tr = load_trace(trace_path(name))
    trace_baseline(tr)
    for mode in modes:
        alloc, h = mode.split("/")
        kw = dict(lo=float(lo), hi=float(hi), resolution=1e-4, repeats=1, run_timeout=None, allocator=alloc)
        la = os.getloadavg()[0]
        t = time.perf_counter()
        off = sweep(tr, h, share=False, **kw)
        t_off = time.perf_counter() - t
        t = time.perf_counter()
        on = sweep(tr, h, share=True, **kw)
        t_on = time.perf_counter() - t
        same = [(p.ratio,) + _pt(p) for p in off.points] == [(p.ratio,) + _pt(p) for p in on.points]
        assert same, (name, mode, "a shared sample differs from its own replay")
        row = {"trace": name, "mode": mode, "range": [float(lo), float(hi)], "samples": len(on.points),
               "off_replays": off.replays, "off_s": t_off, "on_replays": on.replays, "on_derived": on.derived,
               "on_s": t_on, "equal": same, "load": la, "holes": len(on.holes), "min_feasible": on.min_feasible(),
               "cmd": f"--shared-side {spec} --shared-modes {mode}"}
        print(f"side {name} {mode} [{lo}, {hi}]: {t_off:.1f} s ({off.replays} replays) vs {t_on:.1f} s "
              f"({on.replays} replays, {on.derived} derived), equal={same}", flush=True)
        _put("side", row)


def shared_widths(traces: str, modes: list[str], ratios: list[float]) -> None:
    """The budget-equivalence interval of one replay per (trace, mode, ratio), in 1e-4 steps of
    the baseline memory: a dense scan runs about samples / width replays."""
    from memsched.solvers.dtr.replay import trace_baseline

    for name in traces.split(","):
        tr = load_trace(trace_path(name))
        bm = trace_baseline(tr)["baseline_memory"]
        for mode in ["bytes/dtr"] + modes:
            alloc, h = mode.split("/")
            cells = []
            for r in ratios:
                res = replay_alloc(tr, r, heuristic=h, allocator=alloc)
                rt = res.runtime
                w = None if rt.eq_hi == float("inf") else (rt.eq_hi - rt.eq_lo) / (1e-4 * bm)
                cells.append([r, w, res.outcome, None if w is None else int(rt.eq_hi - rt.eq_lo)])
            print(f"widths {name} {mode}: {cells}", flush=True)
            _put("widths", {"trace": name, "mode": mode, "cells": cells, "load": os.getloadavg()[0],
                            "cmd": f"--shared-widths {traces} --shared-modes {','.join(modes)} --ratios "
                                   f"{','.join(f'{r:g}' for r in ratios)}"})


def _jit_key(r):
    rt = r.runtime
    return (r.outcome, r.clock, r.peak, r.evictions, r.eager_evictions, getattr(rt, "frag_evictions", 0),
            r.remat_compute, r.recomputations, r.failure, rt.eq_lo, rt.eq_hi)


def jit_side(traces: str, modes: list[str], ratios: list[float]) -> None:
    """Python (``AllocRuntime``, engine='python') vs compiled (engine='jit') replays of the same
    (trace, mode, ratio), overhead limit 2, in one process, order Python, compiled, compiled,
    Python per ratio; every pair compared (outcome, clock, peak, evictions, eager evictions,
    evictions for want of a block, remat compute, recomputations, the whole failure, eq_lo,
    eq_hi): the run stops on a difference."""
    from memsched.solvers.dtr import jit_runtime
    from memsched.solvers.dtr.replay import trace_baseline

    warm = jit_runtime.warm()
    for name in traces.split(","):
        tr = load_trace(trace_path(name))
        trace_baseline(tr)
        jit_runtime.trace_tables(tr)
        for mode in modes:
            alloc, h = mode.split("/")
            la = " / ".join(f"{x:.1f}" for x in os.getloadavg())
            tp = tj = 0.0
            per, outs = [], []
            for ratio in ratios:
                res, wp, wj = {}, 0.0, 0.0
                for side in ("python", "jit", "jit", "python"):
                    r = replay_alloc(tr, ratio, heuristic=h, allocator=alloc, engine=side)
                    k = _jit_key(r)
                    assert res.setdefault(side, k) == k, (name, mode, ratio, side)
                    if side == "jit":
                        wj += r.wall_s
                    else:
                        wp += r.wall_s
                assert res["python"] == res["jit"], (name, mode, ratio, "compiled != Python")
                tp += wp / 2
                tj += wj / 2
                per.append(wp / wj)
                outs.append(res["jit"][0])
            row = {"trace": name, "mode": mode, "ratios": ratios,
                   "outcomes": {o: outs.count(o) for o in sorted(set(outs))},
                   "python_s": tp, "jit_s": tj, "per": [min(per), statistics.median(per), max(per)], "load": la,
                   "warm_s": warm, "identical": True,
                   "cmd": f"--jit-side {traces} --shared-modes {','.join(modes)} --side-ratios "
                          f"{','.join(f'{x:g}' for x in ratios)}"}
            print(f"jit side {name} {mode}: Python {tp:.2f} s, compiled {tj:.3f} s, {tp / tj:.1f}x, {row['outcomes']}",
                  flush=True)
            _put("jit_side", row)


def shared_scans(entries: str, modes: list[str], cap: float, jobs: int, verify: int, verify_cap: float) -> None:
    """Full dense 0.1-1.0 scans at 1e-4 (repeats 3, interval sharing; no early stop, which the
    address-aware runtime does not have) in bench_dtr_dense.py's capped local pool, then random
    finished samples re-run as independent replay_alloc replays (a pool of --jobs processes)."""
    import random
    from concurrent.futures import ProcessPoolExecutor, wait

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_dtr_dense import _CappedExecutor  # the full scans' pool, stopped at a cap per replay

    from memsched.solvers.dtr.replay import trace_baseline
    from memsched.solvers.dtr.sweep import SweepInterrupted, sweep

    jobs_ = []
    for ent in entries.split(","):
        parts = ent.split(":")
        for m in ([parts[1]] if len(parts) > 1 else modes):
            jobs_.append((parts[0], m, float(parts[2]) if len(parts) > 2 else cap))
    trs: dict = {}
    rng = random.Random(0)
    for name, mode, cap_ in jobs_:
        alloc, h = mode.split("/")
        path = trace_path(name)
        if name not in trs:
            trs[name] = load_trace(path)
            trace_baseline(trs[name])
        tr = trs[name]
        la = os.getloadavg()
        t0 = time.perf_counter()
        try:
            r = sweep(tr, h, lo=0.1, hi=1.0, repeats=3, run_timeout=None, jobs=jobs, allocator=alloc,
                      executor=_CappedExecutor(jobs, t0 + cap_))
            finished = True
        except SweepInterrupted as e:
            r = e.partial[0]
            finished = False
        w = time.perf_counter() - t0
        from memsched.solvers.dtr import jit_runtime
        from memsched.solvers.dtr.replay import JIT_MIN_COMMANDS

        engine = ("compiled" if jit_runtime.supported(h, allocator=alloc) and jit_runtime.trace_tables(tr) is not None
                  and len(tr.schedule) >= JIT_MIN_COMMANDS else "Python")
        pts = [p for p in r.points if p.outcome in ("ok", "oom", "remat_exceeded", "fragmentation")]
        pts = rng.sample(pts, min(verify, len(pts)))
        by = {p.ratio: p for p in pts}
        tv = time.perf_counter()
        checked, bad = 0, []
        with ProcessPoolExecutor(jobs, initializer=_ver_init, initargs=(str(path),)) as ex:
            futs = [ex.submit(_ver_one, p.ratio, h, alloc) for p in pts]
            done, pending = wait(futs, timeout=verify_cap)
            for f in pending:
                f.cancel()
            for f in done:
                ratio, full = f.result()
                checked += 1
                if _pt(by[ratio]) != full:
                    bad.append(ratio)
        tv = time.perf_counter() - tv
        assert not bad, (name, mode, sorted(bad)[:5])
        holes = [{"first": x.first, "last": x.last, "n": len(x.ratios), "below": x.feasible_below,
                  "above": x.feasible_above, "outcomes": {o: x.outcomes.count(o) for o in sorted(set(x.outcomes))}}
                 for x in r.holes]
        row = {"trace": name, "mode": mode, "finished": finished, "cap": cap_, "wall_s": w,
               "load": " / ".join(f"{x:.1f}" for x in la), "samples": len(r.points), "replays": r.replays,
               "derived": r.derived, "repeat_derived": r.repeat_derived, "min_feasible": r.min_feasible(),
               "holes": holes, "frag_samples": sum(1 for p in r.points if p.outcome == "fragmentation"),
               "outcomes": {o: sum(1 for p in r.points if p.outcome == o) for o in sorted({p.outcome for p in r.points})},
               "verified": checked, "verify_s": tv, "jobs": jobs, "engine": engine,
               "cmd": f"--shared-scans {name}:{mode}:{cap_:g} --jobs {jobs} --verify {verify} --verify-cap {verify_cap:g}"}
        print(f"scan {name} {mode}: {'finished' if finished else 'capped'} {w:.0f} s, {len(r.points)} samples, "
              f"{r.replays} replays, {r.derived} derived, min feasible {r.min_feasible()}, {len(holes)} holes, "
              f"{row['frag_samples']} fragmentation, {checked} verified", flush=True)
        _put("scans", row)
        write_section(load_rows(), _header())


def shared_tables() -> list[str]:
    d = _shared_rows()
    if not d["side"] and not d["scans"]:
        return []
    L = ["### Dense 1e-4 scans with budget-interval sharing", "",
         "Address-aware replays record every comparison of the budget with a value (the byte tests, the arena's "
         "top-block fit and best-fit choice, the caching allocator's segment reserve, coop's window fits and its "
         "oom / pressure tests; docs/dtr.md, Allocators), so every budget of `[eq_lo, eq_hi)` runs the identical "
         "replay and `memsched dtr sweep --allocator ...` takes every sample inside a finished replay's interval "
         "from it (tests/test_dtr_alloc_intervals.py). Mode = allocator / heuristic, overhead limit 2.0, no run "
         "timeout."]
    if d["side"]:
        L += ["", "Side by side (one process, the same dense sub-range at 1e-4, repeats 1): every sample replayed "
              "(`share=False`) vs interval sharing; every sample of the two equal (ratio, outcome, clock, peak, "
              "evictions).", "",
              "| trace | mode | range | samples | every sample: replays | every sample: wall s | shared: replays | "
              "shared: derived | shared: wall s | speed-up | every sample equal | load at start |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in d["side"]:
            L.append(f"| {x['trace']} | {x['mode']} | {x['range'][0]}-{x['range'][1]} | {x['samples']} | "
                     f"{x['off_replays']} | {x['off_s']:.1f} | {x['on_replays']} | {x['on_derived']} | "
                     f"{x['on_s']:.1f} | {x['off_s'] / x['on_s']:.1f}x | {'yes' if x['equal'] else 'NO'} | "
                     f"{x['load']:.1f} |")
    if d.get("jit_side"):
        x0 = d["jit_side"][0]
        L += ["", "#### Compiled engine vs Python under allocators, side by side", "",
              "The same replays with the Python runtime (`AllocRuntime`, `replay_alloc(..., engine='python')`) and "
              "the compiled engine (`engine='jit'`, solvers/dtr/jit_runtime.py, 2026-12-04), overhead limit 2, no "
              "early stop (address-aware runs have none), one process, order Python, compiled, compiled, Python per "
              "ratio; wall seconds summed per side (the mean of each side's two replays). Identical: outcome, clock, "
              "peak, evictions, eager evictions, evictions for want of a block, remat compute, recomputations, the "
              "whole failure (request, free total, largest free block, layout) and the budget interval of every "
              f"pair (the run stops otherwise). numba's code was loaded before timing ({x0['warm_s']:.2f} s; a cold "
              "compile takes about 9 s, once per process and source change).", "",
              "| trace | mode | ratios | outcomes | Python s | compiled s | speed-up (sums) | per replay: min, median, "
              "max | identical | load at start |", "|---|---|---|---|---|---|---|---|---|---|"]
        order = {t: i for i, t in enumerate(TRACES)}
        for x in sorted(d["jit_side"], key=lambda x: (order.get(x["trace"], 9), SHARED_MODES.index(x["mode"])
                                                      if x["mode"] in SHARED_MODES else 9, x["mode"])):
            cnt = ", ".join(f"{o} {n}" for o, n in x["outcomes"].items())
            L.append(f"| {x['trace']} | {x['mode']} | {'/'.join(f'{r:g}' for r in x['ratios'])} | {cnt} | "
                     f"{x['python_s']:.2f} | {x['jit_s']:.3f} | {x['python_s'] / x['jit_s']:.1f}x | "
                     + ", ".join(f"{v:.1f}x" for v in x["per"]) + f" | {'yes' if x['identical'] else 'NO'} | "
                     f"{x['load']} |")
    if d.get("widths"):
        rs = d["widths"][0]["cells"]
        L += ["", "Interval widths: the budget-equivalence interval of one replay, in 1e-4 steps of the baseline "
              "memory (a dense scan runs about samples / width replays; below 1, nearly every sample is its own "
              "replay; below 0.1 steps the width in bytes), outcome in brackets.", "",
              "| trace | mode | " + " | ".join(f"ratio {c[0]:g}" for c in rs) + " |",
              "|---|---|" + "---|" * len(rs)]
        for x in d["widths"]:
            L.append(f"| {x['trace']} | {x['mode']} | " + " | ".join(
                f"{'inf' if w is None else f'{w:.1f}' if w >= 0.1 else f'{nb} B'} ({o})"
                for _r, w, o, nb in x["cells"]) + " |")
    if d["scans"]:
        L += ["", "Full dense scans: 0.1-1.0 at 1e-4 (9001 samples), repeats 3 (the samples next to an outcome "
              "change and hole interiors), interval sharing, no early stop (address-aware runs have none), a local "
              "pool of 2 worker processes (`sweep(..., jobs=2, allocator=...)`, bench_dtr_dense.py's capped "
              "executor: a scan not finished by its cap is stopped after a replay; the dense order samples the 0.01 grid "
              "first, then strides of 50, 25, 12, 6, 3 and 1 steps, so a stopped scan's samples are spread over the "
              "whole range, and its smallest feasible ratio and holes are those of the samples done). `vs bytes`: the smallest "
              "feasible ratio against byte counting's (`bytes/dtr` row of this table where there is one, else "
              "section 62's full dense scan with `dtr`). Engine: the replay engine of the sweep's replays "
              "(`replay_alloc`'s engine='auto': compiled = solvers/dtr/jit_runtime.py, exactly AllocRuntime's "
              "decisions, 2026-12-04; Python = AllocRuntime, the rows scanned before). Verified: random finished "
              "samples re-run as independent replays of the Python runtime (`AllocRuntime`, `replay_alloc(..., "
              "engine='python')`), whatever engine the sweep used (outcome, clock, peak, evictions equal).", "",
              "| trace | mode | engine | finished | wall s | load at start | samples | replays | derived | "
              "smallest feasible | vs bytes | holes | hole samples | fragmentation samples | "
              "verified vs independent Python replays |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        order = {t: i for i, t in enumerate(TRACES)}
        modes = ["bytes/dtr"] + SHARED_MODES + ["first-fit/coop", "best-fit/coop"]
        rows = sorted(d["scans"], key=lambda x: (order.get(x["trace"], 9), modes.index(x["mode"])
                                                   if x["mode"] in modes else 9))
        holes_txt = []
        for x in rows:
            mine = next((y for y in rows if y["trace"] == x["trace"] and y["mode"] == "bytes/dtr"
                         and y["finished"]), None)
            ref = (mine["min_feasible"], "") if mine else (BYTES_62.get(x["trace"], (None,))[0], " (s. 62)")
            mf = x["min_feasible"]
            vs = ("-" if x["mode"] == "bytes/dtr" or mf is None or ref[0] is None
                  else f"{mf - ref[0]:+.4f} ({mf / ref[0]:.3f}x){ref[1]}")
            fin = "yes" if x["finished"] else f"no (cap {x['cap']:g} s)"
            der = f"{x['derived']}" + (f" (+{x['repeat_derived']} repeats)" if x["repeat_derived"] else "")
            L.append(f"| {x['trace']} | {x['mode']} | {x.get('engine', 'Python')} | {fin} | {x['wall_s']:.0f} | "
                     f"{x['load']} | {x['samples']} | "
                     f"{x['replays']} | {der} | {'-' if mf is None else f'{mf:.4f}'} | {vs} | {len(x['holes'])} | "
                     f"{sum(hh['n'] for hh in x['holes'])} | {x['frag_samples']} | {x['verified']} random, all "
                     f"equal ({x['verify_s']:.0f} s) |")
            for hh in x["holes"][:15]:
                kinds = ", ".join(f"{o} {n}" for o, n in hh["outcomes"].items())
                holes_txt.append(f"* {x['trace']} {x['mode']}: infeasible {hh['first']:.4f}-{hh['last']:.4f} "
                                 f"({hh['n']} samples: {kinds}) between feasible {hh['below']:.4f} and "
                                 f"{hh['above']:.4f}")
            if len(x["holes"]) > 15:
                holes_txt.append(f"* {x['trace']} {x['mode']}: ... {len(x['holes']) - 15} more holes")
        L += ["", "Holes of the full scans (first 15 per scan):", ""] + (holes_txt or ["* none"])
    todo = []
    for t in TRACES:
        left = [m for m in SHARED_MODES + ["first-fit/coop", "best-fit/coop"]
                if not any(x["trace"] == t and x["mode"] == m and x["finished"] for x in d["scans"])]
        if left:
            todo.append(f"  nice .venv/bin/python benchmarks/bench_dtr_alloc.py --shared-scans "
                        f"{','.join(f'{t}:{m}' for m in left)} --cap 3600")
    if todo:
        L += ["", "Not finished or not run yet (a rerun replaces the row; with the compiled engine a `dtr` scan "
              "took 3-282 s on the shared machine; `coop` replays in Python: an hour or more):", ""] + todo
    cmds = list(dict.fromkeys([x["cmd"] for x in d["side"]] + [x["cmd"] for x in d.get("jit_side", [])]
                              + [x["cmd"] for x in d.get("widths", [])]
                              + [x["cmd"] for x in d["scans"]]))
    L += ["", "Commands (each rewrites its rows; load figures: 1-, 5-, 15-minute averages of the shared 2-core "
          "machine):", ""] + [f"  nice .venv/bin/python benchmarks/bench_dtr_alloc.py {c}" for c in cmds] + [""]
    return L


def _header() -> dict:
    hf = RESULTS.with_suffix(".header.json")
    return json.loads(hf.read_text()) if hf.exists() else {}


def write_section(rows: list[dict], header: dict) -> None:
    by: dict = {}
    for x in rows:
        by.setdefault((x["trace"], x["mode"]), {})[x["ratio"]] = x
    L = ["## DTR under address-aware allocators (Coop-style windows)", "",
         "Per shared trace and mode (`--allocator` / `--heuristic`): the smallest feasible ratio among the samples, "
         "the holes among the samples (an infeasible sample with feasible samples on both sides), the samples that "
         "failed with `fragmentation` (no block although the bytes fitted, nothing left to evict), and how much "
         "higher the smallest feasible ratio is than under byte counting. `coop` clears the contiguous arena window "
         "of least summed cost (docs/dtr.md, Allocators); it exists for the arenas only.", ""]
    L += shared_tables()
    L += ["### Grid sampling (measured before address-aware runs had interval sharing; kept)", "",
         "Where this grid and the dense scans above differ, the dense scans hold. "
         "Sampling actually done (the same for every mode): a descending grid 1.00, 0.95, ..., 0.10; then every "
         "0.01 in the 0.05 below the smallest feasible grid point; then every 0.001 in the 0.01 below the smallest "
         "feasible point so far. Not a dense scan (then, without interval sharing, a dense 1e-4 "
         "scan of six modes on four traces did not fit a session on the shared 2-core machine); holes narrower than "
         "the grid can be missed, and the smallest feasible ratio is that of the samples (a smaller feasible ratio "
         "can exist between them or in a hole). Replays stop at "
         f"{header.get('run_timeout', 60)} s (`unresolved`; never feasible).", "",
         f"Load average at start: {header.get('load', '?')}; one process (nice), replays one after another. "
         f"{header.get('note', '')}", "",
         "| trace | mode | samples | smallest feasible | vs bytes | holes | fragmentation samples | "
         "frag. evictions at the smallest feasible | wall s |",
         "|---|---|---|---|---|---|---|---|---|"]
    base = {}
    for (t, m), d in by.items():
        ok = [r for r, x in d.items() if x["outcome"] == "ok"]
        if m == "bytes/dtr" and ok:
            base[t] = min(ok)
    hole_lines = []
    for t in TRACES:
        for m in MODES:
            d = by.get((t, m))
            if not d:
                continue
            pts = sorted((r, x["outcome"]) for r, x in d.items())
            ok = [r for r, o in pts if o == "ok"]
            mf = min(ok) if ok else None
            holes = find_holes(pts)
            frag = sum(1 for _, o in pts if o == "fragmentation")
            vs = "-" if mf is None or t not in base else f"{mf - base[t]:+.3f} ({mf / base[t]:.3f}x)"
            fe = d[mf]["frag_evictions"] if mf is not None else "-"
            if m.endswith("coop") and mf is not None:
                fe = f"{fe} ({d[mf]['windows']} windows)"
            wall = sum(x["wall_s"] for x in d.values())
            L.append(f"| {t} | {m} | {len(pts)} | {'none' if mf is None else f'{mf:.3f}'} | {vs} | {len(holes)} | "
                     f"{frag} | {fe} | {wall:.0f} |")
            for h in holes:
                hole_lines.append(f"* {t} {m}: infeasible {h.first:.3f}-{h.last:.3f} ({len(h.ratios)} samples: "
                                  f"{', '.join(sorted(set(h.outcomes)))}) between feasible {h.feasible_below:.3f} "
                                  f"and {h.feasible_above:.3f}")
    L += ["", "Reading the table: the 0.01 and 0.001 scans sit below each mode's own smallest feasible grid point, "
          "so the hole counts are not a like-for-like comparison across modes (the dense table below is, on its "
          "range). `vs bytes` below 1 means that mode completed at a smaller sampled budget than byte-counting "
          "`dtr`: a different eviction rule, not a looser memory model (an arena never holds more than the budget; "
          "every row's peak was checked <= budget). `coop` here is Coop's sliding window only, without its cheap-"
          "tensor partitioning or in-place recomputation.", "",
          "Holes among the samples:", ""] + (hole_lines or ["* none"])
    # coop vs dtr under the same arena: compute at the ratios where both complete
    L += ["", "### coop vs dtr under the same arena", "",
          "Same samples, same process: the ratios where both heuristics complete; compute overhead = clock / "
          "baseline compute (simrd's metric). Ratio < 1: coop recomputes less.", "",
          "| trace | arena | common feasible samples | median overhead dtr | median overhead coop | "
          "median coop / dtr | coop lower / equal / higher | only dtr ok | only coop ok |",
          "|---|---|---|---|---|---|---|---|---|"]
    for t in TRACES:
        for a in ("first-fit", "best-fit"):
            d, c = by.get((t, f"{a}/dtr")), by.get((t, f"{a}/coop"))
            if not d or not c:
                continue
            both = sorted(set(d) & set(c))
            com = [r for r in both if d[r]["outcome"] == c[r]["outcome"] == "ok"]
            only_d = sum(1 for r in both if d[r]["outcome"] == "ok" != c[r]["outcome"])
            only_c = sum(1 for r in both if c[r]["outcome"] == "ok" != d[r]["outcome"])
            if not com:
                L.append(f"| {t} | {a} | 0 | - | - | - | - | {only_d} | {only_c} |")
                continue
            od = [d[r]["overhead"] for r in com]
            oc = [c[r]["overhead"] for r in com]
            rat = [y / x for x, y in zip(od, oc)]
            lo = sum(1 for x in rat if x < 1 - 1e-12)
            hi = sum(1 for x in rat if x > 1 + 1e-12)
            L.append(f"| {t} | {a} | {len(com)} | {statistics.median(od):.4f} | {statistics.median(oc):.4f} | "
                     f"{statistics.median(rat):.4f} | {lo} / {len(com) - lo - hi} / {hi} | {only_d} | {only_c} |")
    if header.get("dense_range"):
        L += dense_table(*header["dense_range"], header)
    if EXPLAIN.exists():
        ex = json.loads(EXPLAIN.read_text())
        L += ["", "### dtr explain --allocator on the shared traces", "",
              f"`memsched dtr explain TRACE --budget R --allocator A` (library `explain_alloc`, at most "
              f"{ex['max_pins']} single pins) on failures of the table above; load average at start {ex['load']}.", ""]
        for e in ex["runs"]:
            L += [f"{e['spec']} ({e['wall_s']:.1f} s):", "", "```"] + e["text"].splitlines() + ["```", ""]
        L += ["Command:", "", f"  nice .venv/bin/python benchmarks/bench_dtr_alloc.py --explain {ex['specs']}"]
    L += ["", "Command (rows in benchmarks/results/dtr_alloc.jsonl; `--resume` continues an interrupted run, "
          "`--write-only` rebuilds this section from the rows):", "",
          f"  nice .venv/bin/python benchmarks/bench_dtr_alloc.py {header.get('args', '')}".rstrip(), ""]
    SECTION.write_text("\n".join(L))


def hdr_file_exists() -> bool:
    return RESULTS.with_suffix(".header.json").exists()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--cap-per-trace", type=float, default=900.0, help="seconds per trace (all modes)")
    ap.add_argument("--run-timeout", type=float, default=60.0)
    ap.add_argument("--resume", action="store_true", help="reuse the rows already in the results file")
    ap.add_argument("--write-only", action="store_true")
    ap.add_argument("--note", default="")
    ap.add_argument("--explain", metavar="TRACE:RATIO:ALLOC[:HEURISTIC][,...]", help="explain these address-aware failures")
    ap.add_argument("--max-pins", type=int, default=5)
    ap.add_argument("--dense", metavar="LO,HI", help="every 1e-4 of LO..HI per trace and mode (capped)")
    ap.add_argument("--min-stride", type=int, default=1,
                    help="--dense: stop after the level of this stride (in 1e-4 steps; a top-up of a capped scan)")
    ap.add_argument("--shared-side", metavar="TRACE:LO:HI", help="dense sub-range with vs without interval sharing")
    ap.add_argument("--shared-scans", metavar="TRACE[:MODE[:CAP]],...", help="full dense scans with sharing")
    ap.add_argument("--shared-widths", metavar="TRACE,...", help="budget-interval widths per mode at --ratios")
    ap.add_argument("--jit-side", metavar="TRACE,...", help="Python vs compiled replays per mode at --side-ratios")
    ap.add_argument("--side-ratios", default="0.12,0.15,0.2,0.3,0.5,0.8")
    ap.add_argument("--ratios", default="0.15,0.2,0.3,0.5,0.8")
    ap.add_argument("--shared-modes", default=",".join(SHARED_MODES))
    ap.add_argument("--cap", type=float, default=900.0, help="--shared-scans: seconds per scan")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--verify", type=int, default=300)
    ap.add_argument("--verify-cap", type=float, default=240.0)
    a = ap.parse_args(argv)
    if a.shared_side or a.shared_scans or a.shared_widths or a.jit_side:
        if a.jit_side:
            jit_side(a.jit_side, a.shared_modes.split(","), [float(x) for x in a.side_ratios.split(",")])
        if a.shared_widths:
            shared_widths(a.shared_widths, a.shared_modes.split(","), [float(x) for x in a.ratios.split(",")])
        if a.shared_side:
            shared_side(a.shared_side, a.shared_modes.split(","))
        if a.shared_scans:
            shared_scans(a.shared_scans, a.shared_modes.split(","), a.cap, a.jobs, a.verify, a.verify_cap)
        write_section(load_rows(), _header())
        return 0
    if a.dense:
        lo, hi = (float(x) for x in a.dense.split(","))
        hf = RESULTS.with_suffix(".header.json")
        header = json.loads(hf.read_text()) if hf.exists() else {}
        cmd = " ".join(argv if argv is not None else sys.argv[1:])
        la = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        if a.min_stride > 1 and header.get("dense_range") == [lo, hi]:  # a top-up of the earlier scan
            header["dense_args"] += f"`, then (top-up) `nice .venv/bin/python benchmarks/bench_dtr_alloc.py {cmd}"
            header["dense_load"] += f"; top-up: {la}"
        else:
            header.update({"dense_range": [lo, hi], "dense_cap": a.cap_per_trace, "dense_load": la,
                           "dense_args": cmd})
        hf.write_text(json.dumps(header))
        run_dense(a.traces.split(","), a.modes.split(","), lo, hi, a.cap_per_trace, a.run_timeout, a.min_stride)
        write_section(load_rows(), header)
        return 0
    if a.explain:
        from memsched.solvers.dtr.explain import explain_alloc, format_alloc_explanation

        runs, la = [], " / ".join(f"{x:.1f}" for x in os.getloadavg())
        for spec in a.explain.split(","):
            name, ratio, alloc, *h = spec.split(":")
            h = h[0] if h else "dtr"
            t0 = time.perf_counter()
            d = explain_alloc(trace_path(name), float(ratio), alloc, heuristic=h, max_pins=a.max_pins)
            text = format_alloc_explanation(d).replace(str(DATA) + "/", "")
            runs.append({"spec": f"{name} ratio {ratio} under {alloc}, heuristic {h}", "text": text,
                         "wall_s": time.perf_counter() - t0})
            print(text, flush=True)
        EXPLAIN.write_text(json.dumps({"load": la, "max_pins": a.max_pins, "specs": a.explain, "runs": runs}))
        if hdr_file_exists():
            write_section(load_rows(), json.loads(RESULTS.with_suffix(".header.json").read_text()))
        return 0
    header = {"run_timeout": a.run_timeout, "note": a.note,
              "args": " ".join(x for x in (argv if argv is not None else sys.argv[1:]) if x != "--write-only")}
    hdr_file = RESULTS.with_suffix(".header.json")
    if a.write_only:
        if hdr_file.exists():
            header = dict(json.loads(hdr_file.read_text()), note=a.note or json.loads(hdr_file.read_text())["note"])
        write_section(load_rows(), header)
        return 0
    if not DATA.exists():
        raise SystemExit(f"{DATA}: the shared traces are absent")
    old = load_rows() if a.resume else []
    if not a.resume and RESULTS.exists() and RESULTS.stat().st_size:
        raise SystemExit(f"{RESULTS} exists: give --resume (or remove it)")
    la = os.getloadavg()
    prev = json.loads(hdr_file.read_text()) if a.resume and hdr_file.exists() else None
    header["load"] = (prev["load"] + "; resumed at " if prev else "") + " / ".join(f"{x:.1f}" for x in la)
    if prev and prev.get("args"):
        header["args"] = prev["args"]
    hdr_file.write_text(json.dumps(header))
    with RESULTS.open("a") as out:
        for name in a.traces.split(","):
            run_trace(load_trace(trace_path(name)), name, a.modes.split(","), old, out, a.run_timeout,
                      a.cap_per_trace)
            write_section(load_rows(), header)
    write_section(load_rows(), header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
