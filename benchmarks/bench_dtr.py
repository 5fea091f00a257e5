"""DTR replay: equivalence with unmodified simrd and speed ratio (section 60-dtr).

For every trace in ../shared/data/dtr-traces, every heuristic and a grid of ratios in
[0.1, 1.0], replays the trace with memsched's runtime and with unmodified simrd
(RuntimeV2EagerOptimized, overhead limit 2.0) side by side, and compares outcome, clock,
peak and eviction count. Replay wall times exclude parsing and the baseline run; the
speed ratio is simrd / memsched per run (median over the grid).

simrd is looked up in $SIMRD_DIR (default /work/scratch/dtr/simrd) and run with
$SIMRD_PYTHON (default /work/scratch/dtr/venv/bin/python, a venv with ``attrs``); the
benchmark skips the comparison when either is missing.

    .venv/bin/python benchmarks/bench_dtr.py [--quick] [--ratios N] [--traces a,b]
        [--heuristics h1,h2] [--cache FILE] [--no-write]
    .venv/bin/python benchmarks/bench_dtr.py --speed --traces lstm --heuristics dtr --speed-ratios 10
    .venv/bin/python benchmarks/bench_dtr.py --price-of-online [--cp-time 5] [--max-ops 200]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / ".." / "shared" / "data" / "dtr-traces"
SECTION = ROOT / "benchmarks" / "sections" / "60-dtr.md"

from memsched.instances.dtr_trace import parse_trace  # noqa: E402
from memsched.solvers.dtr.runtime import HEURISTICS, Runtime, baseline  # noqa: E402

PAPER = ["dtr", "dtr-eqclass", "dtr-local", "msps", "lru", "size", "random"]

# Driver run under simrd's interpreter: parses the log with simrd, runs the V1 baseline,
# then RuntimeV2EagerOptimized per ratio; prints one JSON line per run. Eviction counts
# come from wrapping the runtime's eviction telemetry hook (behaviour unchanged).
DRIVER = r'''
import sys, json, math, time, random
sys.path.insert(0, sys.argv[1]); sys.setrecursionlimit(10**7)
from simrd.runtime import RuntimeV1, RuntimeV2EagerOptimized, RematExceededError
from simrd.heuristic import HEURISTICS, Heuristic
import simrd.heuristic.ablation
from simrd.parse import parse_file
log, cls, ratios, limit, seed = sys.argv[2], sys.argv[3], [float(x) for x in sys.argv[4].split(',')], float(sys.argv[5]), int(sys.argv[6])
with open(log) as f:
    g = parse_file(f, start=True)
cb = g.get_closure()
rt = RuntimeV1(math.inf, Heuristic(), stats=False, trace=False); cb(rt)
s = rt.telemetry.summary
print(json.dumps({"baseline_memory": s["max_memory"], "baseline_compute": s["model_compute"],
                  "const_memory": s["model_const_memory"], "bottleneck_memory": s["bottleneck_memory"]}), flush=True)
bm, bc = s["max_memory"], s["model_compute"]
for r in ratios:
    rt = RuntimeV2EagerOptimized(int(bm * r), HEURISTICS[cls](), remat_limit=bc * (limit - 1), stats=False, trace=False)
    ev = [0]
    def hook(st, _o=rt._T_evict):
        ev[0] += 1; _o(st)
    rt._T_evict = hook
    random.seed(seed)
    out = "ok"; t0 = time.perf_counter()
    try:
        cb(rt)
    except MemoryError:
        out = "oom"
    except RematExceededError:
        out = "remat_exceeded"
    w = time.perf_counter() - t0
    print(json.dumps({"ratio": r, "budget": rt.budget, "outcome": out, "clock": rt.clock,
                      "peak": rt.telemetry.summary["max_memory"], "evictions": ev[0], "wall_s": w}), flush=True)
'''


def simrd_paths():
    d = Path(os.environ.get("SIMRD_DIR", "/work/scratch/dtr/simrd"))
    py = Path(os.environ.get("SIMRD_PYTHON", "/work/scratch/dtr/venv/bin/python"))
    if (d / "simrd" / "runtime" / "v2.py").is_file() and py.is_file():
        return d, py
    return None, None


def traces():
    man = json.loads((DATA / "manifest.json").read_text())
    return [(m["log"].split("-")[0], DATA / m["log"]) for m in man["models"]]


def ratio_grid(n: int) -> list[float]:
    return [round(0.1 + 0.9 * k / (n - 1), 6) for k in range(n)]


def run_memsched(tr, base, h, ratios, limit=2.0, seed=0):
    out = []
    for r in ratios:
        rt = Runtime(tr, int(base["baseline_memory"] * r), h, remat_limit=base["baseline_compute"] * (limit - 1),
                     seed=seed)
        t0 = time.perf_counter()
        o = rt.run()
        w = time.perf_counter() - t0
        out.append({"ratio": r, "budget": rt.budget, "outcome": o, "clock": rt.clock, "peak": rt.peak,
                    "evictions": rt.evictions, "wall_s": w})
    return out


def run_simrd(sd, py, path, h, ratios, limit=2.0, seed=0, partial: Path | None = None):
    """Run simrd on ``ratios``; with ``partial``, every result line is also appended to
    that file and an interrupted comparison resumes from it."""
    cls = HEURISTICS[h][0]
    done = []
    if partial is not None and partial.is_file():
        done = [json.loads(x) for x in partial.read_text().splitlines() if x.startswith("{")]
    base = done[0] if done else None
    got = {d["ratio"]: d for d in done[1:]}
    todo = [r for r in ratios if r not in got]
    if todo:
        p = subprocess.Popen([str(py), "-c", DRIVER, str(sd), str(path), cls, ",".join(map(str, todo)), str(limit),
                              str(seed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = True
        for line in p.stdout:
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if first:
                first = False
                if base is not None:
                    continue
                base = d
            else:
                got[d["ratio"]] = d
            if partial is not None:
                with open(partial, "a") as f:
                    f.write(line if line.endswith("\n") else line + "\n")
        if p.wait() != 0:
            raise RuntimeError(f"simrd failed: {p.stderr.read()[-2000:]}")
    return base, [got[r] for r in ratios]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="resnet32 only, 10 ratios, dtr + dtr-eqclass")
    ap.add_argument("--ratios", type=int, default=46)
    ap.add_argument("--traces", default=None)
    ap.add_argument("--heuristics", default=",".join(PAPER))
    ap.add_argument("--cache", default=None, help="JSONL file: reuse/append (trace, heuristic) comparisons")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--cached-only", action="store_true",
                    help="never start simrd: use cached rows and unfinished (partial) simrd runs only")
    ap.add_argument("--sweeps", action="store_true",
                    help="instead: budget sweeps of every trace (hole search + explanations) into "
                         "benchmarks/sections/60-dtr/, then rewrite the section")
    ap.add_argument("--sweep-heuristic", default="dtr")
    ap.add_argument("--step", type=float, default=0.01)
    ap.add_argument("--lo", type=float, default=0.1)
    ap.add_argument("--hi", type=float, default=1.0)
    ap.add_argument("--refine", default="scan")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--run-timeout", type=float, default=120.0)
    ap.add_argument("--tag", default="", help="suffix of the sweep result file")
    ap.add_argument("--speed", action="store_true",
                    help="instead: side-by-side timing on --speed-ratios ratios (benchmarks/sections/60-dtr/speed.json)")
    ap.add_argument("--speed-ratios", type=int, default=10)
    ap.add_argument("--speed-ratio-list", default=None, help="comma-separated ratios for --speed instead")
    ap.add_argument("--lookahead", action="store_true",
                    help="instead: DTR vs lookahead policies on the traces (benchmarks/sections/60-dtr/lookahead.json)")
    ap.add_argument("--price-of-online", action="store_true",
                    help="instead: DTR and lookahead policies vs the exact remat solver (CP-SAT) on the shipped "
                         "instances of <= --max-ops operators (benchmarks/sections/60-dtr/price_of_online.json)")
    ap.add_argument("--max-ops", type=int, default=200)
    ap.add_argument("--cp-time", type=float, default=5.0, help="CP-SAT time limit per instance and budget")
    a = ap.parse_args(argv)
    if a.price_of_online:
        return run_price_of_online(a)
    if a.sweeps:
        return run_sweeps(a)
    if a.lookahead:
        return run_lookahead(a)
    if a.speed:
        return run_speed(a)
    sd, py = simrd_paths()
    if sd is None:
        print("simrd not found (set SIMRD_DIR / SIMRD_PYTHON); skipping the equivalence benchmark")
        return 0
    if not (DATA / "manifest.json").is_file():
        print(f"no traces at {DATA}; skipping")
        return 0
    hs = a.heuristics.split(",")
    ratios = ratio_grid(a.ratios)
    tlist = traces()
    if a.quick:
        tlist, ratios, hs = tlist[:1], ratio_grid(10), ["dtr", "dtr-eqclass"]
    if a.traces:
        want = a.traces.split(",")
        tlist = [t for t in tlist if t[0] in want]
    cache = {}
    if a.cache and Path(a.cache).is_file():
        for line in Path(a.cache).read_text().splitlines():
            d = json.loads(line)
            cache[(d["trace"], d["heuristic"], tuple(d["ratios"]))] = d
    rows = []
    for name, path in tlist:
        tr = parse_trace(path)
        base = baseline(tr)
        for h in hs:
            key = (name, h, tuple(ratios))
            if key in cache:
                # simrd's results from the cache; memsched is always rerun with the current code
                d = dict(cache[key])
                d["memsched_orig"] = d["memsched"]  # measured side by side with simrd back then
                d["memsched"] = run_memsched(tr, base, h, ratios)
                d["baseline"] = base
                d["simrd_cached"] = True
                rows.append(d)
                eq = sum(_same(s, m) for s, m in zip(d["simrd"], d["memsched"]))
                print(f"{name:12s} {h:12s} equal {eq}/{len(ratios)} (simrd cached)", flush=True)
                continue
            load0 = os.getloadavg()[0]
            partial = Path(f"{a.cache}.{name}.{h}.partial") if a.cache else None
            if a.cached_only:
                if partial is None or not partial.is_file():
                    continue
                done = [json.loads(x) for x in partial.read_text().splitlines() if x.startswith("{")]
                sres = [x for x in done[1:] if x["ratio"] in ratios]
                if not sres:
                    continue
                rs = [x["ratio"] for x in sres]
                mres = run_memsched(tr, base, h, rs)
                rows.append({"trace": name, "heuristic": h, "ratios": rs, "load": load0,
                             "baseline_equal": all(done[0][k] == base[k] for k in done[0]), "baseline": base,
                             "simrd": sres, "memsched": mres, "simrd_cached": True, "partial": True})
                eq = sum(_same(x, y) for x, y in zip(sres, mres))
                print(f"{name:12s} {h:12s} equal {eq}/{len(rs)} (unfinished simrd run)", flush=True)
                continue
            sbase, sres = run_simrd(sd, py, path, h, ratios, partial=partial)
            mres = run_memsched(tr, base, h, ratios)
            d = {"trace": name, "heuristic": h, "ratios": ratios, "load": load0,
                 "baseline_equal": all(sbase[k] == base[k] for k in sbase), "baseline": base,
                 "simrd": sres, "memsched": mres}
            rows.append(d)
            if a.cache:
                with open(a.cache, "a") as f:
                    f.write(json.dumps(d) + "\n")
            eq = sum(_same(s, m) for s, m in zip(sres, mres))
            print(f"{name:12s} {h:12s} equal {eq}/{len(ratios)}  baseline_equal={d['baseline_equal']}  "
                  f"speed x{_median_ratio(sres, mres):.1f}", flush=True)
    if not a.no_write:
        write_section(rows, ratios, a)
    return 0


def _same(s, m) -> bool:
    return all(s[k] == m[k] for k in ("outcome", "clock", "peak", "evictions", "budget"))


def _median_ratio(sres, mres) -> float:
    rs = [s["wall_s"] / m["wall_s"] for s, m in zip(sres, mres) if m["wall_s"] > 0]
    return statistics.median(rs) if rs else float("nan")


def write_section(rows, ratios, a) -> None:
    SECTION.parent.mkdir(parents=True, exist_ok=True)
    L = ["## DTR replay: equivalence with simrd and speed", "",
         "memsched's DTR runtime (`solvers/dtr`) against unmodified simrd (uwsampl/dtr-prototype @ eff53cc4,",
         "RuntimeV2EagerOptimized, overhead limit 2.0, budget = int(ratio x baseline_memory)), run side by",
         "side in one job. A run is *equal* when outcome, clock, peak and eviction count (eager evictions",
         "included) all match exactly. Speed = simrd replay wall / memsched replay wall (parsing and the",
         "baseline run excluded), median over the ratios. `random` is seeded identically on both sides.",
         "Cached rows: simrd's results come from an earlier run of this script (`--cache`; simrd takes",
         "hours on the large traces on 2 shared cores) and memsched was rerun now with the current code for",
         "the equality check; their speed column, marked `(then)`, is the side-by-side ratio measured in",
         "that earlier run, with the memsched code of that time (all before the speed pass of docs/dtr.md",
         "section 2); the current side-by-side speed is the next table.",
         "", f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `benchmarks/bench_dtr.py`; the simrd "
         "runs behind cached rows, the sweeps and the speed table were measured earlier the same day.",
         "", f"Ratios: {len(rows[0]['ratios']) if rows else 0} evenly spaced in [0.1, 1.0]. "
         f"Machine: 2 shared cores; 1-minute load average at the start of each row is listed.",
         "", "Reproduce: `.venv/bin/python benchmarks/bench_dtr.py` (`--quick` for a 2-minute subset).", "",
         "| trace | heuristic | runs | equal | ok / oom / thrash | baseline equal | median speed (x) | simrd total s | memsched total s | load |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    all_ratios = []
    all_then: list[float] = []
    tot_eq = tot = 0
    for d in rows:
        s, m = d["simrd"], d["memsched"]
        eq = sum(_same(x, y) for x, y in zip(s, m))
        tot_eq += eq
        tot += len(s)
        oc = [x["outcome"] for x in m]
        if not d.get("simrd_cached"):
            all_ratios += [x["wall_s"] / y["wall_s"] for x, y in zip(s, m) if y["wall_s"] > 0]
        if d.get("simrd_cached") and d.get("memsched_orig"):
            sp = f"{_median_ratio(s, d['memsched_orig']):.1f} (then)"
            all_then.extend(x["wall_s"] / y["wall_s"] for x, y in zip(s, d["memsched_orig"]) if y["wall_s"] > 0)
        else:
            sp = "cached" if d.get("simrd_cached") else f"{_median_ratio(s, m):.1f}"
        L.append(f"| {d['trace']} | {d['heuristic']}{' (unfinished)' if d.get('partial') else ''} | {len(s)} | {eq} | {oc.count('ok')} / {oc.count('oom')} / "
                 f"{oc.count('remat_exceeded')} | {d['baseline_equal']} | {sp} | "
                 + (f"- | - | {_fmt_load(d.get('load'))} |" if d.get("simrd_cached") else
                    f"{sum(x['wall_s'] for x in s):.2f} | {sum(x['wall_s'] for x in m):.2f} | {d['load']:.2f} |"))
    L += ["", f"**Total: {tot_eq}/{tot} runs equal.**" + (
        f" Median speed ratio over the side-by-side rows: {statistics.median(all_ratios):.1f}x." if all_ratios
        else " Timings: see the side-by-side speed table.") + (
        f" Median of the `(then)` ratios over {len(all_then)} runs: {statistics.median(all_then):.1f}x."
        if all_then else ""), ""]
    mism = [(d, x, y) for d in rows for x, y in zip(d["simrd"], d["memsched"]) if not _same(x, y)]
    if mism:
        L += ["Mismatches (first 20):", "", "| trace | heuristic | ratio | simrd | memsched |", "|---|---|---|---|---|"]
        for d, x, y in mism[:20]:
            f = lambda r: f"{r['outcome']} clock={r['clock']} peak={r['peak']} ev={r['evictions']}"  # noqa: E731
            L.append(f"| {d['trace']} | {d['heuristic']} | {x['ratio']} | {f(x)} | {f(y)} |")
        L.append("")
    L += speed_section()
    L += sweep_section()
    L += lookahead_section()
    L += price_section()
    SECTION.write_text("\n".join(L) + "\n" + extras_text())
    print(f"wrote {SECTION}")


def extras_text() -> str:
    """The subsections written by the other DTR benchmark scripts, in order."""
    parts = [(SWEEPS / x).read_text().rstrip() + "\n\n" for x in EXTRA_SUBSECTIONS if (SWEEPS / x).is_file()]
    return "".join(parts)


def refresh_extras() -> None:
    """Replace the tail of the section (from the first extra subsection on) with the
    current extra subsections; called by bench_dtr_price.py and bench_dtr_harness.py after
    they rewrite theirs, so that the section (and BENCHMARKS.md) picks them up."""
    if not SECTION.is_file():
        return
    text = SECTION.read_text()
    cut = len(text)
    for x in EXTRA_SUBSECTIONS:
        f = SWEEPS / x
        if f.is_file():
            head = f.read_text().splitlines()[0]
            i = text.find("\n" + head + "\n")
            if i >= 0:
                cut = min(cut, i + 1)
    SECTION.write_text(text[:cut].rstrip() + "\n\n" + extras_text())
    print(f"refreshed {SECTION}")


SWEEPS = SECTION.parent / "60-dtr"
# subsections written by benchmarks/bench_dtr_price.py and benchmarks/bench_dtr_harness.py
EXTRA_SUBSECTIONS = ["price_traces.md", "harness_sweeps.md"]


MAX_EXPLAINED = 12  # holes explained per sweep (the section says when more were found)


def run_sweeps(a) -> int:
    from memsched.solvers.dtr import explain, sweep
    from memsched.solvers.dtr.explain import format_explanation
    from memsched.cli.dtr import plot_sweep

    if not (DATA / "manifest.json").is_file():
        print(f"no traces at {DATA}; skipping")
        return 0
    SWEEPS.mkdir(parents=True, exist_ok=True)
    tlist = traces()
    if a.traces:
        tlist = [t for t in tlist if t[0] in a.traces.split(",")]
    for name, path in tlist:
        load0 = os.getloadavg()[0]
        res = sweep(path, a.sweep_heuristic, lo=a.lo, hi=a.hi, step=a.step, resolution=1e-4, repeats=3,
                    run_timeout=a.run_timeout, jobs=min(2, a.jobs), refine=a.refine)
        d = res.to_json()
        d["load"] = load0
        d["explanations"] = []
        for h in res.holes[:MAX_EXPLAINED]:
            e = explain(path, h.first, h.feasible_below, heuristic=a.sweep_heuristic)
            d["explanations"].append({"hole": h.to_json(), "text": format_explanation(e)})
        stem = f"{name}-{a.sweep_heuristic}{a.tag}"
        (SWEEPS / f"{stem}.json").write_text(json.dumps(d))
        plot_sweep(res, str(SWEEPS / f"{stem}.png"))
        print(f"{name}: {len(res.points)} samples, {len(res.holes)} holes, {res.wall_s:.0f} s", flush=True)
    rows = []
    if a.cache and Path(a.cache).is_file():
        rows = [json.loads(x) for x in Path(a.cache).read_text().splitlines()]
    if rows:
        write_section(rows, None, a)
    return 0


def run_speed(a) -> int:
    sd, py = simrd_paths()
    if sd is None:
        print("simrd not found; skipping")
        return 0
    SWEEPS.mkdir(parents=True, exist_ok=True)
    f = SWEEPS / "speed.json"
    out = json.loads(f.read_text()) if f.is_file() else {"rows": []}
    ratios = ratio_grid(a.speed_ratios) if not a.speed_ratio_list else \
        [float(x) for x in a.speed_ratio_list.split(",")]
    tlist = traces()
    if a.traces:
        tlist = [t for t in tlist if t[0] in a.traces.split(",")]
    for name, path in tlist:
        tr = parse_trace(path)
        base = baseline(tr)
        for h in a.heuristics.split(","):
            load0 = os.getloadavg()[0]
            _, sres = run_simrd(sd, py, path, h, ratios)
            mres = run_memsched(tr, base, h, ratios)
            row = {"trace": name, "heuristic": h, "ratios": ratios, "load": load0,
                   "equal": sum(_same(x, y) for x, y in zip(sres, mres)),
                   "simrd_s": [x["wall_s"] for x in sres], "memsched_s": [y["wall_s"] for y in mres],
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
            # rows measured with earlier code ("superseded") are kept for the record
            out["rows"] = [r for r in out["rows"] if r.get("superseded") or (r["trace"], r["heuristic"]) != (name, h)] \
                + [row]
            f.write_text(json.dumps(out))
            print(name, h, f"x{_median_ratio(sres, mres):.1f}", flush=True)
    return 0


def speed_section() -> list[str]:
    f = SWEEPS / "speed.json"
    if not f.is_file():
        return []
    d = json.loads(f.read_text())
    L = ["### Replay speed, side by side", "",
         "simrd and memsched replay the same trace, heuristic and ratios back to back in one job",
         "(replay wall only: parsing and the baseline excluded). Ratio = simrd / memsched per run.",
         "Reproduce: `.venv/bin/python benchmarks/bench_dtr.py --speed --traces T --heuristics H`.",
         "Rows marked *measured DATE* were measured then with the current runtime (docs/dtr.md section 2,",
         "speed pass of 2026-11-29 12:00 UTC: lazy exact closure updates, dense storage bits); rows without a",
         "date were measured earlier the same day with older code; rows marked superseded are kept for the record.",
         "Every row's `equal` column is the equality check of that same side-by-side run.", "",
         "| trace | heuristic | runs | equal | simrd median s | memsched median s | median ratio | min ratio | load |",
         "|---|---|---|---|---|---|---|---|---|"]
    allr = []
    for r in d["rows"]:
        rs = [x / y for x, y in zip(r["simrd_s"], r["memsched_s"]) if y > 0]
        if not r.get("superseded"):
            allr += rs
        when = f" (measured {r['date']})" if r.get("date") else ""
        if r.get("superseded"):
            when = f" ({r['superseded']})"
        L.append(f"| {r['trace']} | {r['heuristic']}{when} | {len(rs)} | {r['equal']} | "
                 f"{statistics.median(r['simrd_s']):.3f} | {statistics.median(r['memsched_s']):.3f} | "
                 f"{statistics.median(rs):.1f} | {min(rs):.1f} | {r['load']:.1f} |")
    if allr:
        L += ["", f"**Median speed ratio over the {len(allr)} side-by-side runs of the rows not marked "
                  f"superseded: {statistics.median(allr):.1f}x.**"]
    return L + [""]


LOOKAHEAD = ["dtr", "lookahead-10", "lookahead-100", "lookahead-inf", "belady"]
LOOK_RATIOS = [0.12, 0.14, 0.16, 0.2, 0.3, 0.5]


def run_lookahead(a) -> int:
    from memsched.solvers.dtr import replay

    SWEEPS.mkdir(parents=True, exist_ok=True)
    tlist = traces()
    if a.traces:
        tlist = [t for t in tlist if t[0] in a.traces.split(",")]
    out = {"ratios": LOOK_RATIOS, "rows": [], "load": os.getloadavg()[0]}
    for name, path in tlist:
        tr = parse_trace(path)
        for h in LOOKAHEAD:
            cells = []
            for r in LOOK_RATIOS:
                x = replay(tr, r, heuristic=h, timeout=a.run_timeout)
                cells.append({"outcome": x.outcome, "overhead": x.overhead, "wall_s": x.wall_s})
            out["rows"].append({"trace": name, "heuristic": h, "cells": cells})
            print(name, h, [c["outcome"] if c["outcome"] != "ok" else round(c["overhead"], 4) for c in cells],
                  flush=True)
    (SWEEPS / "lookahead.json").write_text(json.dumps(out))
    return 0


def lookahead_section() -> list[str]:
    f = SWEEPS / "lookahead.json"
    if not f.is_file():
        return []
    d = json.loads(f.read_text())
    L = ["### Lookahead policies (commit-lag axis)", "",
         "Overhead (clock / baseline compute; `T` remat limit exceeded, `O` OOM, `?` timeout) of DTR (H = 0)",
         "against policies that know the next H operators (docs/dtr.md): `lookahead-H` replaces staleness",
         "by the known distance to the next use, `belady` evicts what is needed furthest in the future.",
         f"Reproduce: `.venv/bin/python benchmarks/bench_dtr.py --lookahead`. Load at start: {d['load']:.1f}.", "",
         "| trace | policy | " + " | ".join(f"r={r}" for r in d["ratios"]) + " |",
         "|---|---|" + "---|" * len(d["ratios"])]
    sym = {"oom": "O", "remat_exceeded": "T", "unresolved": "?"}
    for row in d["rows"]:
        cells = [f"{c['overhead']:.4f}" if c["outcome"] == "ok" else sym.get(c["outcome"], "?") for c in row["cells"]]
        L.append(f"| {row['trace']} | {row['heuristic']} | " + " | ".join(cells) + " |")
    return L + [""]


PRICE_POLICIES = ["dtr", "lookahead-10", "lookahead-inf", "belady"]
PRICE_RATIOS = [0.9, 0.8, 0.7]


def run_price_of_online(a) -> int:
    """Price of online: DTR (H = 0), lookahead-10 (H = 10), lookahead-inf and belady (H = inf)
    replaying each shipped graph in its given order (solvers.dtr.replay_graph, overhead limit
    inf so that only OOM fails), against the offline optimum of the exact remat solver
    (solve_remat method cp, 1 worker) at the same budget = floor(r x given-order peak)
    (formulations.ratio_budget; results computed before that rule used ceil, at most one byte more)."""
    import math

    from memsched.instances.formats import load_graph
    from memsched.solvers.dtr import replay_graph
    from memsched.solvers.remat.dispatch import resolve_budget, solve_remat

    SWEEPS.mkdir(parents=True, exist_ok=True)
    files = sorted((ROOT / "instances" / "shipped").glob("*.json")) + \
        sorted((ROOT / "instances" / "shipped" / "models").glob("*.json"))
    out = {"ratios": PRICE_RATIOS, "policies": PRICE_POLICIES, "cp_time": a.cp_time, "max_ops": a.max_ops,
           "load": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
    for f in files:
        g = load_graph(f)
        if g.n_ops > a.max_ops:
            continue
        base = g.total_cost()
        for r in PRICE_RATIOS:
            B = resolve_budget(g, r)
            row = {"instance": f.stem, "ops": g.n_ops, "ratio": r, "budget": B, "base": base, "dtr": {}}
            for h in PRICE_POLICIES:
                x = replay_graph(g, B, heuristic=h, overhead_limit=math.inf)
                row["dtr"][h] = x.compute if x.status == "feasible" else None
            c = solve_remat(g, B, method="cp", time_limit=a.cp_time)
            row["cp_status"] = c.status
            row["cp"] = c.compute
            row["cp_lb"] = c.lower_bound
            row["cp_s"] = round(c.wall_s, 2)
            out["rows"].append(row)
            print(f.stem, r, row["dtr"], c.status, c.compute, c.lower_bound, flush=True)
            (SWEEPS / "price_of_online.json").write_text(json.dumps(out))
    return 0


def price_section() -> list[str]:
    f = SWEEPS / "price_of_online.json"
    if not f.is_file():
        return []
    d = json.loads(f.read_text())
    pol = d["policies"]
    L = ["### Price of online (DTR vs the offline optimum on shipped graphs)", "",
         "Overhead = compute / compute of one pass (1.000 = no recomputation) at budget",
         "floor(r x peak of the given order) (formulations.ratio_budget; results computed before that rule used ceil, "
         "at most one byte more), for every shipped instance of at most "
         f"{d['max_ops']} operators. DTR policies replay the",
         "given order (`solvers.dtr.replay_graph`, overhead limit inf: only OOM fails, shown `O`); `dtr` is",
         "H = 0, `lookahead-10` knows the next 10 operators, `lookahead-inf` / `belady` the whole future",
         "(docs/dtr.md). `cp` = exact remat solver (`solve_remat(method='cp')`, free order, 1 worker,",
         f"{d['cp_time']} s): its overhead, `*` when proven optimal, else [its proven lower bound]; `inf` =",
         "proven infeasible, `-` = no schedule found in time. `price` = dtr / cp: exact where cp is optimal,",
         "otherwise a lower bound on the price (the optimum is <= cp's schedule). Note that cp may also reorder",
         "operators while DTR follows the given order. All schedules are re-checked by the evaluator.",
         f"Measured {d['date']}, load {d['load']:.1f} at start. "
         "Reproduce: `.venv/bin/python benchmarks/bench_dtr.py --price-of-online [--cp-time 5]`.", "",
         "| instance | ops | r | " + " | ".join(pol) + " | cp | price dtr/cp |",
         "|---|---|---|" + "---|" * (len(pol) + 2)]
    prices = []
    for row in d["rows"]:
        b = row["base"]
        cells = [f"{row['dtr'][h] / b:.3f}" if row["dtr"][h] is not None else "O" for h in pol]
        st = row["cp_status"]
        if st == "infeasible":
            cp = "inf"
        elif row["cp"] is None:
            cp = "-" + (f" [{row['cp_lb'] / b:.3f}]" if row.get("cp_lb") is not None else "")
        elif st == "optimal":
            cp = f"{row['cp'] / b:.3f}*"
        else:
            lb = f" [{row['cp_lb'] / b:.3f}]" if row.get("cp_lb") is not None else ""
            cp = f"{row['cp'] / b:.3f}{lb}"
        price = "-"
        if row["dtr"]["dtr"] is not None and row["cp"]:
            pr = row["dtr"]["dtr"] / row["cp"]
            prices.append(pr)
            price = f"{pr:.3f}"
        L.append(f"| {row['instance']} | {row['ops']} | {row['ratio']} | " + " | ".join(cells) + f" | {cp} | {price} |")
    if prices:
        L += ["", f"Median dtr / cp over the {len(prices)} cells where both have a schedule: "
                  f"{statistics.median(prices):.3f} (max {max(prices):.3f})."]
    return L + [""]


def _fmt_load(x) -> str:
    return f"{x:.1f}" if isinstance(x, (int, float)) and x == x else "-"


def _ascii_map(points, lo, hi, step=0.01):
    width = max(2, min(91, int(round((hi - lo) / step)) + 1))
    cells = [[] for _ in range(width)]
    for p in points:
        k = min(width - 1, max(0, int(round((p["ratio"] - lo) / (hi - lo) * (width - 1)))))
        cells[k].append(p["outcome"])
    sym = {"ok": ".", "oom": "O", "remat_exceeded": "T", "unresolved": "?", "nondeterministic": "N"}
    out = []
    for c in cells:
        if not c:
            out.append(" ")
        elif all(x == "ok" for x in c):
            out.append(".")
        elif any(x == "ok" for x in c):
            out.append("x")  # mixed within the cell
        else:
            out.append(sym.get(c[0], "?"))
    return "".join(out)


def sweep_section() -> list[str]:
    if not SWEEPS.is_dir():
        return []
    files = sorted(f for f in SWEEPS.glob("*.json") if "points" in json.loads(f.read_text()))
    if not files:
        return []
    L = ["### Budget sweeps and feasibility holes", "",
         "`memsched dtr sweep` protocol (docs/dtr.md): coarse grid, dense refinement at 1e-4 around every",
         "outcome change (or bisection where noted), 3 repeats at every change point and hole point,",
         "per-run timeouts recorded as unresolved. Map: one character per cell,",
         "(`.` ok, `T` remat limit exceeded, `O` OOM, `x` cell with both feasible and infeasible samples),",
         "at most 91 cells evenly over the row's ratio range [lo, hi].",
         "Plots: `benchmarks/sections/60-dtr/<trace>-<heuristic>.png`.",
         "Reproduce: `.venv/bin/python benchmarks/bench_dtr.py --sweeps [--traces resnet32] [--step 0.001]`.", "",
         "| trace | heuristic | step | refine | samples | smallest feasible | holes | unresolved | wall s | load |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    maps = []
    for f in files:
        d = json.loads(f.read_text())
        pr = d["params"]
        name = Path(d["trace"]).name.split("-")[0]
        L.append(f"| {name} | {d['heuristic']} | {pr['step']} | {pr.get('refine', 'scan')} | {d['samples']} | "
                 f"{d['min_feasible_ratio']} | {len(d['holes'])} | {len(d['unresolved'])} | {d['wall_s']:.0f} | "
                 f"{_fmt_load(d.get('load'))} |")
        maps.append(f"{name:10s} {d['heuristic']:4s} step {pr['step']:<6} [{pr['lo']}, {pr['hi']}] "
                    f"|{_ascii_map(d['points'], pr['lo'], pr['hi'], max(pr['step'], (pr['hi'] - pr['lo']) / 90))}|")
        for h in d["holes"]:
            maps.append(f"    hole: infeasible {h['first']:.4f}..{h['last']:.4f} "
                        f"({', '.join(sorted(set(h['outcomes'])))}) between feasible {h['feasible_below']:.4f} "
                        f"and {h['feasible_above']:.4f}")
    L += ["", "```"] + maps + ["```", ""]
    for f in files:
        d = json.loads(f.read_text())
        name = Path(d["trace"]).name.split("-")[0]
        if len(d["holes"]) > len(d.get("explanations", [])):
            L += [f"({name}, {d['heuristic']}: {len(d['holes'])} holes, the first "
                  f"{len(d.get('explanations', []))} explained below.)", ""]
        for e in d.get("explanations", []):
            h = e["hole"]
            L += [f"**Explanation: {name}, {d['heuristic']}, hole at {h['first']:.4f} vs feasible "
                  f"{h['feasible_below']:.4f}** (`memsched dtr explain TRACE --budget {h['first']} "
                  f"--vs {h['feasible_below']} --heuristic {d['heuristic']}`):", "", "```", e["text"], "```", ""]
    return L


if __name__ == "__main__":
    raise SystemExit(main())
