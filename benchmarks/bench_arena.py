"""Benchmark of the static arena planner (issue 18); writes benchmarks/sections/70-arena.md
and benchmarks/results/arena.json.

1. MiniMalloc's 11 challenging instances at capacity 1,048,576: memsched (``solve_arena``,
   auto, 60 s limit) next to MiniMalloc built from source (unmodified solver sources, run
   as a subprocess in the same run); every placement verified by the independent checker.
2. Capacity minimization: memsched's own search (branch and bound below each placement)
   vs MiniMalloc's bisection over its yes/no answer (``--minimize_capacity``).
3. Every shipped model graph, best heuristic order: arena vs peak, certified or not, next
   to the previous planner (executors' best fit, then CP-SAT 10 s).
4. Random families of 50..1000 buffers: greedy best fit vs the exact search.

    nice .venv/bin/python benchmarks/bench_arena.py [--minimalloc PATH] [--quick]

MiniMalloc build (sources never enter this repository): see docs/arena.md ("Reference").
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memsched.formulations import evaluate  # noqa: E402
from memsched.instances import SHIPPED, load_graph  # noqa: E402
from memsched.instances.arena_csv import Buffer, read_arena_csv  # noqa: E402
from memsched.solvers.arena import check_placement, solve_arena  # noqa: E402
from memsched.solvers.arena.bounds import max_live  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "arena" / "minimalloc-challenging"
CAP = 1048576
OFFSETS: dict = {}  # instance -> the capacity run's placement (seeds the minimization)


def load() -> str:
    try:
        return os.getloadavg().__repr__()
    except OSError:
        return "?"


def run_minimalloc(exe: str, csv: Path, capacity: int, minimize: bool, timeout: float):
    """(height or None, seconds, note). Time is the subprocess wall time (includes reading the CSV)."""
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "out.csv"
        cmd = [exe, f"--capacity={capacity}", f"--input={csv}", f"--output={out}", "--validate",
               f"--timeout={int(timeout)}s"]
        if minimize:
            cmd.append("--minimize_capacity")
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t, "killed"
        dt = time.perf_counter() - t
        m = re.search(r"Validation PASS, height (\d+)", r.stderr + r.stdout)
        if m and out.exists():
            # re-check MiniMalloc's placement with our own checker
            bufs = read_arena_csv(csv)
            offs = {}
            for line in out.read_text().splitlines()[1:]:
                cells = line.split(",")
                offs[cells[0]] = int(cells[-1])
            h = check_placement(bufs, [offs[b.id] for b in bufs])
            return h, dt, "ok"
        return None, dt, (r.stderr.strip().splitlines() or ["no output"])[-1][:80]


def fmt_t(x):
    return "-" if x is None else (f"{x:.2f}" if x < 10 else f"{x:.1f}")


def bench_challenging(exe, tl, lines, res):
    lines += ["## MiniMalloc's challenging instances (capacity 1,048,576)", "",
              f"memsched: `solve_arena(buffers, capacity=1048576)` (auto: greedy, canonical search with CP-SAT in "
              f"its round robin), {tl:g} s limit, one process, 1 thread; every placement re-checked by "
              "`memsched.solvers.arena.check` (independent of the planner). MiniMalloc: the unmodified C++ solver "
              "(default flags) run as a subprocess on the same file right after, its output placement re-checked "
              "by the same checker. Ratio = memsched time / MiniMalloc time (< 1: memsched faster).", "",
              "| instance | buffers | max live | memsched status | memsched arena | memsched s | search nodes | "
              "MiniMalloc height | MiniMalloc s | ratio |",
              "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    ratios = []
    rows = []
    for f in sorted(DATA.glob("*.csv")):
        bufs = read_arena_csv(f)
        r = solve_arena(bufs, capacity=CAP, time_limit=tl)
        if r.offsets is not None:
            check_placement(bufs, r.offsets, CAP)
        mh, mt, note = run_minimalloc(exe, f, CAP, False, tl) if exe else (None, None, "not run")
        ratio = r.wall_s / mt if (mt and r.offsets is not None and mh is not None) else None
        if ratio is not None:
            ratios.append(ratio)
        name = f.name.split(".")[0]
        OFFSETS[name] = r.offsets
        rows.append({"instance": name, "buffers": len(bufs), "max_live": r.max_live, "status": r.status,
                     "arena": r.arena_size, "wall_s": r.wall_s, "nodes": r.nodes, "minimalloc_height": mh,
                     "minimalloc_s": mt, "minimalloc_note": note, "lower_bound": r.lower_bound})
        lines.append(f"| {name} | {len(bufs)} | {r.max_live} | {r.status} | {r.arena_size or '-'} | "
                     f"{fmt_t(r.wall_s)} | {r.nodes} | {mh if mh is not None else note} | {fmt_t(mt)} | "
                     f"{'-' if ratio is None else f'{ratio:.2f}'} |")
        print(lines[-1], flush=True)
    solved = sum(1 for x in rows if x["arena"] is not None and x["arena"] <= CAP)
    lines += ["", f"Solved within the capacity: {solved} of {len(rows)} (each within {tl:g} s)."]
    if ratios:
        lines.append(f"Time ratio memsched / MiniMalloc over the {len(ratios)} instances both solved: median "
                     f"{statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}).")
        # an instance memsched did not solve counts with ratio >= its limit / MiniMalloc's time
        allr = ratios + [tl / x["minimalloc_s"] for x in rows if x["arena"] is None and x["minimalloc_s"]]
        if len(allr) > len(ratios):
            lines.append(f"Over all {len(allr)} instances MiniMalloc solved (memsched's timeouts counted as ratio >= "
                         f"limit / MiniMalloc time): median {statistics.median(allr):.2f}.")
    # a fresh process pays for loading the compiled kernel (numba's cache) inside its first solve;
    # the rows above are warm. Measured on K (the quickest), and the ratios recomputed with it.
    k = DATA / f"K.{CAP}.csv"
    if k.exists():
        cold = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-m", "memsched.cli.main", "arena", str(k), f"--capacity={CAP}", "--json"],
                               capture_output=True, text=True, cwd=ROOT)
            if r.returncode == 0:
                cold.append(json.loads(r.stdout)["wall_s"])
        warm = next((x["wall_s"] for x in rows if x["instance"] == "K"), None)
        if cold and warm is not None:
            extra = min(cold) - warm
            cr = [(x["wall_s"] + extra) / x["minimalloc_s"] for x in rows
                  if x["arena"] is not None and x["minimalloc_s"] and x["minimalloc_height"] is not None]
            lines.append(f"Cold start: in a fresh process (`memsched arena K.{CAP}.csv --capacity {CAP}`) the solve "
                         f"takes {min(cold):.2f} s on K against {warm:.2f} s warm, i.e. {extra:.2f} s of loading the "
                         f"compiled kernel; with that added to every instance the median ratio is "
                         f"{statistics.median(cr):.2f} (max {max(cr):.2f}). MiniMalloc's times include its process "
                         "start.")
            res["cold_start"] = {"cold_s": cold, "warm_s": warm, "median_ratio_with_cold": statistics.median(cr)}
    lines.append("")
    res["challenging"] = rows
    return rows


def bench_minimize(exe, tl, lines, res, rows):
    lines += ["## Capacity minimization", "",
              "memsched: `solve_arena(buffers, incumbent=<the capacity run's placement>)` with no capacity "
              "(seeded: it never ends above a placement already known), and the same without the seed: greedy, "
              "a fit search at the proven bound, the branch and bound below the best placement, then bisection "
              "by fit searches (2 s probes, doubled when the probes meet; an unanswered probe is no claim), "
              "CP-SAT with time left; an exhausted search proves its bound (rounded up to the sizes' gcd, "
              "docs/arena.md). Where the capacity run already placed everything within the max-live bound, that "
              "run is the proof (arena = max live) and is not repeated. MiniMalloc: `--minimize_capacity` "
              "(bisection over [0, 1,048,576] on its yes/no answer; a probe cut by the time limit counts as no), same "
              "time limit.", "",
              "| instance | max live | memsched least arena (seeded) | proven lower bound | gap | memsched s | "
              "unseeded arena | unseeded s | MiniMalloc least | MiniMalloc s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    out = []
    for row in rows:
        f = DATA / f"{row['instance']}.{CAP}.csv"
        bufs = read_arena_csv(f)
        un, unt = "-", "-"
        if row["arena"] is not None and row["arena"] == row["max_live"]:
            arena, lb, wall, src = row["arena"], row["max_live"], row["wall_s"], " (capacity run)"
        else:
            r = solve_arena(bufs, time_limit=tl, incumbent=OFFSETS.get(row["instance"]))
            check_placement(bufs, r.offsets)
            arena, lb, wall, src = r.arena_size, r.lower_bound, r.wall_s, ""
            r2 = solve_arena(bufs, time_limit=tl)
            check_placement(bufs, r2.offsets)
            un, unt = r2.arena_size, fmt_t(r2.wall_s)
            lb = max(lb, r2.lower_bound)
        mh, mt, note = run_minimalloc(exe, f, CAP, True, tl) if exe else (None, None, "not run")
        gap = (arena - lb) / lb if lb else 0.0
        out.append({"instance": row["instance"], "arena": arena, "lower_bound": lb, "wall_s": wall,
                    "unseeded_arena": un, "minimalloc_least": mh, "minimalloc_s": mt, "minimalloc_note": note})
        lines.append(f"| {row['instance']} | {row['max_live']} | {arena} | {lb} | {100 * gap:.2f}% | "
                     f"{fmt_t(wall)}{src} | {un} | {unt} | {mh if mh is not None else note} | {fmt_t(mt)} |")
        print(lines[-1], flush=True)
    lines += ["", "Proven lower bound: the larger of the two runs' (both are proofs). No closed-form bound above max "
              "live is used beyond the gcd rounding; the gaps of the instances with slack are open (neither a "
              "placement nearer the bound nor a proof that none exists was found in the time).", ""]
    res["minimize"] = out


def bench_models(tl, lines, res, quick):
    from memsched.solvers.executors.arena import best_fit, buffers_of, cpsat_plan
    from memsched.solvers.ordering import dispatch as ordering

    lines += ["## Shipped model graphs: arena for the best order", "",
              "Order: the best ordering heuristic (`memsched order --method best`). Buffers: every tensor's "
              "lifetime in that schedule (plus operator workspaces). Baseline (what `plan_arena` did before this "
              "issue, now on the one planner's pieces): greedy best fit, then CP-SAT 10 s when it misses the peak. "
              f"New: `solve_arena`, {tl:g} s. Certified = the arena equals a proven lower bound (the peak, or a "
              "bound proven by an exhausted search).", "",
              "| model | buffers | peak | greedy + CP-SAT arena (gap) | new arena | gap | certified | new s |",
              "|---|---:|---:|---:|---:|---:|---|---:|"]
    out = []
    files = sorted((SHIPPED / "models").glob("*.json"))
    if quick:
        files = files[:4]
    for p in files:
        g = load_graph(p)
        r0 = ordering.solve_order(g, method="best", exact=False, time_limit=30, workers=1)
        sched = r0.schedule
        peak = evaluate(g, sched).peak
        bufs = buffers_of(g, sched)
        off, old = best_fit(bufs)
        if old > peak:
            o2, s2, _ = cpsat_plan(bufs, time_limit=10.0)
            if o2 is not None and s2 < old:
                old = s2
        ab = [Buffer(str(k), b.start + 1, b.end + 1, b.size) for k, b in enumerate(bufs)]
        r = solve_arena(ab, time_limit=tl)
        check_placement(ab, r.offsets)
        assert max_live(ab) == peak
        cert = r.arena_size == r.lower_bound
        name = p.stem
        out.append({"model": name, "buffers": len(ab), "peak": peak, "baseline": old, "arena": r.arena_size,
                    "lower_bound": r.lower_bound, "certified": cert, "wall_s": r.wall_s})
        lines.append(f"| {name} | {len(ab)} | {peak} | {old} ({100 * (old - peak) / peak:.2f}%) | {r.arena_size} | "
                     f"{100 * (r.arena_size - peak) / peak:.2f}% | "
                     f"{'yes' if cert else f'no (bound {r.lower_bound})'} | {fmt_t(r.wall_s)} |")
        print(lines[-1], flush=True)
    n_eq = sum(1 for x in out if x["arena"] == x["peak"])
    lines += ["", f"Arena = peak on {n_eq} of {len(out)} model graphs; certified on "
                  f"{sum(1 for x in out if x['certified'])} of {len(out)}.", ""]
    res["models"] = out


def random_family(n: int, seed: int) -> list[Buffer]:
    """n buffers on a horizon of n steps: start uniform, length 1 + geometric(mean n/20),
    size 2^U(6, 14) rounded to 64 bytes. Deterministic in (n, seed)."""
    rng = random.Random(seed * 100003 + n)
    out = []
    for k in range(n):
        lo = rng.randrange(n)
        length = 1 + int(rng.expovariate(20.0 / n))
        size = max(64, int(2 ** rng.uniform(6, 14)) // 64 * 64)
        out.append(Buffer(str(k), lo, lo + length, size))
    return out


def bench_random(tl, lines, res, quick):
    sizes = [50, 200] if quick else [50, 200, 500, 1000]
    seeds = range(3) if quick else range(5)
    lines += ["## Random families: greedy best fit vs exact search", "",
              f"`random_family(n, seed)` in this script (start uniform on n steps, length 1 + exponential with "
              f"mean n/20, size 2^U(6,14) rounded to 64 bytes), seeds {seeds.start}..{seeds.stop - 1}. Minimize the "
              f"arena, {tl:g} s each. Greedy = the best of four best-fit orders; 'proved' = arena equals a proven "
              "lower bound.", "",
              "| buffers | instances | greedy = max live | greedy gap (mean) | exact proved | exact gap (mean) | "
              "exact improved greedy | exact s (median / max) |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    out = []
    for n in sizes:
        rows = []
        for s in seeds:
            bufs = random_family(n, s)
            r = solve_arena(bufs, time_limit=tl)
            check_placement(bufs, r.offsets)
            rows.append(r)
            out.append({"n": n, "seed": s, "max_live": r.max_live, "greedy": r.greedy_size, "arena": r.arena_size,
                        "lower_bound": r.lower_bound, "status": r.status, "wall_s": r.wall_s})
        g_eq = sum(1 for r in rows if r.greedy_size == r.max_live)
        ggap = statistics.mean((r.greedy_size - r.lower_bound) / r.lower_bound for r in rows)
        egap = statistics.mean((r.arena_size - r.lower_bound) / r.lower_bound for r in rows)
        proved = sum(1 for r in rows if r.status == "optimal")
        better = sum(1 for r in rows if r.arena_size < r.greedy_size)
        ts = [r.wall_s for r in rows]
        lines.append(f"| {n} | {len(rows)} | {g_eq} | {100 * ggap:.2f}% | {proved} | {100 * egap:.2f}% | {better} | "
                     f"{fmt_t(statistics.median(ts))} / {fmt_t(max(ts))} |")
        print(lines[-1], flush=True)
    lines += ["", "Gaps are against the proven lower bound of each instance.", ""]
    res["random"] = out


ABL_HEAD = "## Ablation: how a group starts after the search splits"


def bench_ablation(tl):
    """The fit search alone (round robin of WAT, TAW, TWA, no CP-SAT) at capacity 1,048,576 under
    the three split modes of the compiled kernel. Returns the section's lines."""
    from memsched.solvers.arena import exact
    from memsched.solvers.arena.buffers import components

    t0 = time.perf_counter()
    lines = [ABL_HEAD, "",
             f"Reproduce: `nice .venv/bin/python benchmarks/bench_arena.py --ablation` (this section only; load average "
             f"at start {load()}). The fit search alone (`exact._fit`, method `search`: the three preorders in "
             f"round robin, no CP-SAT) at capacity 1,048,576, {tl:g} s limit, under each way a group of a split "
             "starts: **restart + re-rank** (the default: canonical order restarted, preorder recomputed from the "
             "current section totals), **restart** (static ranks), **continue** (from the split's offset and rank, "
             "static ranks: the search before this change). All three are complete (docs/arena.md); only the "
             "order of exploration differs. Each independent part (time points no buffer crosses) is searched "
             "alone, as `solve_arena` does. Seconds (search nodes); '-' = no answer in the limit.", "",
             "| instance | restart + re-rank | restart | continue |", "|---|---:|---:|---:|"]
    rows = []
    for f in sorted(DATA.glob("*.csv")):
        live = [b for b in read_arena_csv(f) if b.size > 0]
        parts = [exact._Part([live[i] for i in c]) for c in components(live)]  # as solve_arena splits
        cells = []
        for mode in (2, 1, 0):
            st: dict = {}
            t = time.perf_counter()
            r = "found"
            for part in parts:  # one deadline for all parts; every part must be placed
                r, off, h = exact._fit(part, CAP, t + tl, "search", st, split_mode=mode)
                if r != "found":
                    break
                check_placement(part.bufs, off, CAP)
            dt = time.perf_counter() - t
            rows.append({"instance": f.name.split(".")[0], "mode": mode, "result": r, "wall_s": dt,
                         "nodes": st.get("nodes", 0), "parts": len(parts)})
            cells.append(f"{fmt_t(dt)} ({st.get('nodes', 0)})" if r == "found" else f"- ({st.get('nodes', 0)})")
        lines.append(f"| {f.name.split('.')[0]} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    solved = {m: sum(1 for x in rows if x["mode"] == m and x["result"] == "found") for m in (2, 1, 0)}
    lines += ["", f"Found within {tl:g} s: restart + re-rank {solved[2]}, restart {solved[1]}, continue {solved[0]} "
              f"of {len(rows) // 3}. Load average at end {load()}; {time.perf_counter() - t0:.0f} s.", ""]
    (ROOT / "benchmarks" / "results" / "arena_ablation.json").write_text(json.dumps(rows, indent=1))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minimalloc", default="/work/scratch/mm_src/build/minimalloc",
                    help="MiniMalloc binary built from source (skipped when absent)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--model-time", type=float, default=20.0)
    ap.add_argument("--random-time", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ablation", action="store_true",
                    help="only the split-mode ablation (replaces that section of 70-arena.md)")
    ap.add_argument("--ablation-time", type=float, default=30.0)
    a = ap.parse_args()
    exe = a.minimalloc if Path(a.minimalloc).exists() else None
    # warm-up: the compiled search is built (or loaded from numba's cache) before any timing
    from memsched.solvers.arena.kernel import ENGINE
    from memsched.solvers.arena.exact import search_fits

    warm = [Buffer("a", 0, 2, 2), Buffer("b", 1, 3, 2), Buffer("c", 2, 4, 2), Buffer("d", 0, 1, 1)]
    search_fits(warm, 6)
    out = ROOT / "benchmarks" / "sections" / "70-arena.md"
    old = out.read_text() if out.exists() else ""
    kept = old[old.index(ABL_HEAD):] if ABL_HEAD in old else ""
    if a.ablation:
        from memsched.solvers.arena import exact

        part = exact._Part(warm)
        for mode in (0, 1, 2):  # compile the kernel before timing
            exact._fit(part, 6, time.perf_counter() + 60, "search", {}, split_mode=mode)
        body = old[:old.index(ABL_HEAD)] if ABL_HEAD in old else old
        out.write_text(body.rstrip("\n") + "\n\n" + "\n".join(bench_ablation(a.ablation_time)))
        print(f"wrote {out}")
        return
    t0 = time.perf_counter()
    lines = ["## Static arena planning (bench_arena)", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs shared with other jobs; load average at start "
             f"{load()}. Search engine: {ENGINE} (compiled before timing starts).", "",
             f"Reproduce: `nice .venv/bin/python benchmarks/bench_arena.py{' --quick' if a.quick else ''}` "
             "(MiniMalloc built as in docs/arena.md, default path /work/scratch/mm_src/build/minimalloc).", ""]
    res: dict = {}
    if DATA.exists():
        rows = bench_challenging(exe, a.time_limit, lines, res)
        bench_minimize(exe, a.time_limit, lines, res, rows)
    else:
        lines += [f"(challenging instances absent: {DATA})", ""]
    bench_models(a.model_time, lines, res, a.quick)
    bench_random(a.random_time, lines, res, a.quick)
    lines += [f"Load average at end {load()}; total {time.perf_counter() - t0:.0f} s. Exact figures: "
              "`benchmarks/results/arena.json`.", ""]
    out.write_text("\n".join(lines) + ("\n" + kept if kept else ""))
    (ROOT / "benchmarks" / "results" / "arena.json").write_text(json.dumps(res, indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
