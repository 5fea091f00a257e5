"""The depth-first down-set decision, interpreted vs compiled, side by side (docs/bounds.md 6c).

    nice .venv/bin/python benchmarks/bench_dp_decide.py [--rounds 2] [--only KEY,...]

Each case is one decision ``downset_decide(random_layered(n, seed), theta, max_states=cap)``
(lookahead and free moves on) run with ``engine="python"`` and ``engine="jit"`` in turn
(A B A B ... over ``--rounds``); every pair must return the same order, exactness and
state count (the script stops otherwise). Reported: best wall time of each engine, the
ratio, states per second. The compiled engine's first call in the process compiles (or
loads numba's cache); a warm-up decision runs before the timed ones.

``--lns`` also runs the exact driver's window search (``exact._window_lns``, docs/bounds.md
8) from the same heuristic order with breadth-first windows (``compiled=False``) and with
the compiled decision's windows (default), ``--lns-s`` seconds each, and records the peaks.

Writes benchmarks/results/dp_decide.jsonl (and dp_lns.jsonl) and
benchmarks/sections/31-dp-decide.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from memsched.instances.generators import random_layered  # noqa: E402
from memsched.solvers.ordering.downset_dp import downset_decide  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dp_decide.jsonl"
LNS_RESULTS = ROOT / "benchmarks" / "results" / "dp_lns.jsonl"
#: graphs of the window-search comparison: (n, seed)
LNS_GRAPHS = {"n500s0": (500, 0), "n500s2": (500, 2), "n1000s1": (1000, 1)}
SECTION = ROOT / "benchmarks" / "sections" / "31-dp-decide.md"

#: key: (n, seed, theta, state cap, what the decision is)
CASES = {
    "n100s2-proof": (100, 2, 57456, 2_000_000, "no order of peak 57,456 (the proof that certifies 57,457)"),
    "n183s9-cap": (183, 9, 84982, 200_000, "undecided at the state cap"),
    "n250s2-found": (250, 2, 108530, 2_000_000, "finds an order of peak <= 108,530"),
    "n500s2-cap": (500, 2, 298444, 200_000, "undecided at the state cap (issue 17's 108-byte gap)"),
}


def run_case(key: str, rounds: int) -> dict:
    n, seed, theta, cap, what = CASES[key]
    g = random_layered(n, seed)
    best = {"python": float("inf"), "jit": float("inf")}
    ref = None
    for _ in range(rounds):
        for eng in ("python", "jit"):
            t = time.perf_counter()
            r = downset_decide(g, theta, max_states=cap, engine=eng)
            dt = time.perf_counter() - t
            best[eng] = min(best[eng], dt)
            got = (r.order, r.exact, r.states)
            if ref is None:
                ref = got
            elif got != ref:
                raise SystemExit(f"{key}: engines disagree ({eng}): {got[1:]} vs {ref[1:]}")
    order, exact, states = ref
    outcome = "order found" if order is not None else ("exhausted (proof)" if exact else "state cap")
    return {"key": key, "n": n, "seed": seed, "theta": theta, "cap": cap, "what": what, "outcome": outcome,
            "states": states, "python_s": round(best["python"], 3), "jit_s": round(best["jit"], 3),
            "ratio": round(best["python"] / best["jit"], 1), "load1": round(os.getloadavg()[0], 2),
            "rounds": rounds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def run_lns(key: str, seconds: float) -> dict:
    from memsched.formulations import order_peak
    from memsched.solvers.ordering import exact as E

    n, seed = LNS_GRAPHS[key]
    g = random_layered(n, seed)
    o, pk, how, _ = E._heuristics(g, 0, time.perf_counter() + 20)
    row = {"key": key, "n": n, "seed": seed, "start": pk, "start_by": how, "seconds": seconds}
    for name, compiled in (("breadth_first", False), ("decision", True)):
        t = time.perf_counter()
        r = E._window_lns(g, o, 0, time.perf_counter() + seconds, compiled=compiled)
        row[name] = order_peak(g, r)
        row[name + "_s"] = round(time.perf_counter() - t, 1)
    row["load1"] = round(os.getloadavg()[0], 2)
    row["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return row


def _lns_lines() -> list[str]:
    if not LNS_RESULTS.is_file():
        return []
    rows = [json.loads(x) for x in LNS_RESULTS.read_text().splitlines()]
    out = ["", "### Window search of the exact driver: breadth-first windows vs decision windows", "",
           "From the same heuristic order (the best of the project's heuristics and the beam search), "
           "`exact._window_lns` with windows of 16-64 operators re-solved by the breadth-first DP (20,000 "
           "states; `compiled=False`, the search before docs/bounds.md 6c) and with windows of 16-192 operators "
           "re-solved by the compiled decision (200,000 states), each until no window around the peak improves "
           f"or {rows[0]['seconds']:.0f} s. Reproduce: `nice .venv/bin/python benchmarks/bench_dp_decide.py --lns`.",
           "", "| graph | start (heuristic) | breadth-first windows: peak (s) | decision windows: peak (s) | load | date |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| random_layered_n{r['n']}_s{r['seed']} | {r['start']:,} ({r['start_by']}) | "
                   f"{r['breadth_first']:,} ({r['breadth_first_s']}) | {r['decision']:,} ({r['decision_s']}) | "
                   f"{r['load1']} | {r['date']} |")
    return out


def write_section(rows: list[dict]) -> None:
    lines = ["## Exact ordering: the down-set decision, interpreted vs compiled (issue 17)", "",
             "What: one depth-first down-set decision (`downset_decide`, lookahead and free moves on; "
             "docs/bounds.md 6 and 6c) per row, run with the interpreted search (`engine=\"python\"`) and the "
             "compiled one (`engine=\"jit\"`, numba) in turn, A B A B; every run of a row returned the same "
             "order, exactness and state count. Times are the best of the rounds, in one process (the compiled "
             "engine warmed up first). Graphs: `random_layered(n, seed)`.", "",
             "Reproduce: `nice .venv/bin/python benchmarks/bench_dp_decide.py`", "",
             "| case | n | theta | decision | outcome | states | python s | jit s | ratio | jit states/s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['key']} | {r['n']} | {r['theta']:,} | {r['what']} | {r['outcome']} | {r['states']:,} | "
                     f"{r['python_s']:.2f} | {r['jit_s']:.2f} | {r['ratio']:.1f}x | "
                     f"{r['states'] / max(r['jit_s'], 1e-9):,.0f} | {r['load1']} |")
    dates = sorted({r["date"] for r in rows})
    lines += ["", f"Measured {dates[0]}" + (f" to {dates[-1]}" if len(dates) > 1 else "") +
              f" on the shared 2-core machine ({rows[0]['rounds']} rounds; load average at the end of each row)."]
    lines += _lns_lines()
    SECTION.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated case keys (default: all)")
    ap.add_argument("--lns", action="store_true", help="also compare the window searches (LNS_GRAPHS)")
    ap.add_argument("--lns-only", action="store_true", help="only the window searches")
    ap.add_argument("--lns-s", type=float, default=60.0, help="seconds per window search (default 60)")
    args = ap.parse_args()
    keys = [] if args.lns_only else (args.only.split(",") if args.only else list(CASES))
    downset_decide(random_layered(40, 0), 10**9, engine="jit")  # compile / load the cache
    old = {}
    if RESULTS.is_file():
        old = {d["key"]: d for d in map(json.loads, RESULTS.read_text().splitlines())}
    for k in keys:
        row = run_case(k, args.rounds)
        print(json.dumps(row), flush=True)
        old[k] = row
        RESULTS.write_text("".join(json.dumps(old[x]) + "\n" for x in CASES if x in old))
    if args.lns or args.lns_only:
        lold = {}
        if LNS_RESULTS.is_file():
            lold = {d["key"]: d for d in map(json.loads, LNS_RESULTS.read_text().splitlines())}
        for k in LNS_GRAPHS:
            row = run_lns(k, args.lns_s)
            print(json.dumps(row), flush=True)
            lold[k] = row
            LNS_RESULTS.write_text("".join(json.dumps(lold[x]) + "\n" for x in LNS_GRAPHS if x in lold))
    write_section([old[x] for x in CASES if x in old])


if __name__ == "__main__":
    main()
