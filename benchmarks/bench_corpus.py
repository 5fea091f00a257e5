"""The heuristic-gap table on the real-model corpus (section 26-corpus).

For every training-step graph in instances/shipped/corpus/ (instances.extract_models
--corpus): operators, the given order's peak, each heuristic's peak, the Inductor-style
best-of (the given order and LPMF / BFS / DFS, the candidates PyTorch Inductor's
``reorder_for_peak_memory`` compares; re-implemented on memsched's model in
solvers/ordering/heuristics.py, the real pass is not called), memsched's best order and
certified lower bound from ``solve_exact`` within a time limit per graph, the gap and
the times. Every peak is the evaluator's.

    .venv/bin/python benchmarks/bench_corpus.py [--time-limit 60] [--only NAME,...] [--no-write]
    .venv/bin/python benchmarks/bench_corpus.py --inductor-only   # only the real pass's column

The real ``torch._inductor.memory.reorder_for_peak_memory`` is also run on every graph
(solvers/ordering/inductor_pass.py: stand-in scheduler nodes, one per operator; no GPU,
no Inductor compile) and its chosen order judged by the evaluator.

Results are merged per graph into benchmarks/results/corpus.json; the section lists
every shipped graph measured so far.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "instances" / "shipped" / "corpus"
SECTION = ROOT / "benchmarks" / "sections" / "26-corpus.md"
RESULTS = ROOT / "benchmarks" / "results" / "corpus.json"
INDUCTOR = ("given", "lpmf", "bfs", "dfs")
DEFAULT_CMD = ".venv/bin/python benchmarks/bench_corpus.py"
FIRST_DATE = "2026-12-01"  # the run that measured the rows recorded before rows kept their date


def real_pass(g, row: dict) -> None:
    """The real Inductor pass's order, judged by the evaluator (row keys ``real_*``)."""
    from memsched.formulations import order_peak
    from memsched.solvers.ordering.inductor_pass import inductor_reorder

    t = time.perf_counter()
    order, info = inductor_reorder(g)
    row["real_s"] = time.perf_counter() - t
    row["real"] = order_peak(g, order)
    row["real_method"] = info["method"]
    row["real_torch"] = info["torch"]


def run_graph(path: Path, limit: float, workers: int) -> dict:
    from memsched.formulations import order_peak
    from memsched.instances import load_graph
    from memsched.solvers.ordering.exact import solve_exact
    from memsched.solvers.ordering.heuristics import HEURISTICS, applicable

    g = load_graph(path)
    row = {"graph": g.name, "n": g.n_ops, "edges": sum(len(c) for c in g.consumers), "load": os.getloadavg()[0],
           "heur": {}}
    for nm in applicable(g):
        t = time.perf_counter()
        pk = order_peak(g, HEURISTICS[nm](g))
        row["heur"][nm] = {"peak": pk, "s": time.perf_counter() - t}
    row["given"] = row["heur"]["given"]["peak"]
    row["inductor"] = min(row["heur"][k]["peak"] for k in INDUCTOR)
    row["inductor_s"] = sum(row["heur"][k]["s"] for k in INDUCTOR)
    real_pass(g, row)
    t = time.perf_counter()
    res = solve_exact(g, time_limit=limit, workers=workers)
    row["exact_s"] = time.perf_counter() - t
    row["memsched"] = res.peak
    row["lower_bound"] = res.lower_bound
    row["status"] = res.status
    row["certified_by"] = res.extra.get("certified_by")
    row["segments"] = res.extra.get("segments")
    row["bounds"] = res.extra.get("bounds")
    return row


def pct(a, b):
    return 100.0 * (a - b) / a if a else 0.0


def fpct(x: float) -> str:
    """A gap in percent; small non-zero gaps keep their first significant digits."""
    return f"{x:.2f} %" if x == 0 or x >= 0.01 else f"{x:.4f} %"


def render(rows: list[dict], limit: float, workers: int, cmd: str) -> str:
    better = [r["graph"] for r in rows if "real" in r and r["real"] < r["inductor"]]
    worse = [r["graph"] for r in rows if "real" in r and r["real"] > r["inductor"]]
    limits = sorted({r.get("time_limit", limit) for r in rows})
    # each row keeps the command that measured it (rows from before commands were kept: the default one)
    cmds: dict = {}
    for r in rows:
        cmds.setdefault(r.get("cmd", DEFAULT_CMD), []).append(r)
    main_cmd = max(cmds, key=lambda c: len(cmds[c]))
    others = "".join(f"; `{c}` for {', '.join(r['graph'] for r in rs)}" for c, rs in cmds.items() if c != main_cmd)
    out = ["## Real training graphs: heuristic gaps", "",
           f"Measured on {', '.join(sorted({r.get('date', FIRST_DATE) for r in rows}))} (UTC; column *date*) "
           f"with `{main_cmd}` (every row but those "
           f"named next{others or ': none'}) on the shared 2-core "
           f"machine (load average at the start of each graph in the table; other jobs shared both cores), "
           f"`solve_exact` limited per graph to the seconds in column *limit* "
           f"({', '.join(f'{x:.0f}' for x in limits)} s) with the CP-SAT workers of column *workers*: a bounded time "
           "per graph because the CPU is shared; every row finished within it, so within the issue's 10 minutes. "
           "Graphs: instances/shipped/corpus/ (training steps, joint forward + backward, "
           "captured by `python -m memsched.instances.extract_models --corpus`; see its README). "
           "*Inductor best-of* = the lowest peak among the given order and memsched's re-implementations of "
           "Inductor's LPMF, BFS and DFS orders (the candidates of `reorder_for_peak_memory`). *Inductor pass* = "
           "the order returned by the real `torch._inductor.memory.reorder_for_peak_memory` (torch "
           f"{next((r['real_torch'] for r in rows if 'real_torch' in r), '?')}), driven on the same graph with one "
           "stand-in scheduler node per operator (solvers/ordering/inductor_pass.py; no GPU, no compile), judged "
           "by memsched's evaluator, with the method it picked by its own estimate (which has no operator "
           "workspace, hence it can pick an order that is worse on this model than its best candidate) and "
           "its time (the first graph's time includes importing torch; `--inductor-only` re-measures this column "
           "alone). The real pass and memsched's re-implemented candidates differ where operator workspace "
           "enters the keys (memsched's LPMF and DFS count it, Inductor's do not): here the real pass is better "
           f"on {', '.join(better) or 'no graph'} and worse on {', '.join(worse) or 'no graph'}. "
           "*memsched* = the best order `solve_exact` found (heuristics, beam, peak splitting and splitting at "
           "the last of a gradient set (docs/bounds.md 8), segments, window search, DP, CP-SAT); *lower bound* = "
           "its proven lower bound on the optimal peak of any order of the same graph (no recomputation: trap, "
           "pair, final-moment and last-of-set bounds, DP and CP-SAT proofs; docs/bounds.md); gap = (peak - "
           "lower bound) / peak. *status* optimal = certified (by whom); *exact s* = the solve's wall time (for "
           "a certified row, the time to certify). MiB = 2^20 bytes.",
           "",
           "| graph | operators | load | given peak | Inductor best-of | Inductor pass (method, s) | memsched best "
           "| lower bound | Inductor gap | Inductor pass gap | memsched gap | status | heuristics s | exact s | limit s "
           "| workers | date |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    mib = 1 << 20
    for r in rows:
        lb = r["lower_bound"]
        out.append(f"| {r['graph']} | {r['n']:,} | {r['load']:.1f} | {r['given'] / mib:,.2f} | "
                   f"{r['inductor'] / mib:,.2f} | "
                   + (f"{r['real'] / mib:,.2f} ({r['real_method']}, {r['real_s']:.2f})" if "real" in r else "-")
                   + f" | {r['memsched'] / mib:,.2f} | {lb / mib:,.2f} | "
                   f"{pct(r['inductor'], lb):.2f} % | "
                   + (f"{pct(r['real'], lb):.2f} %" if "real" in r else "-")
                   + f" | {fpct(pct(r['memsched'], lb))} | {r['status']}"
                   f"{' (' + r['certified_by'] + ')' if r['status'] == 'optimal' else ''} | "
                   f"{sum(h['s'] for h in r['heur'].values()):.2f} | {r['exact_s']:.1f} | "
                   f"{r.get('time_limit', limit):.0f} | {r.get('workers', 1)} | {r.get('date', FIRST_DATE)} |")
    cert = [r for r in rows if r["status"] == "optimal"]
    big = [r for r in rows if r["n"] >= 1000]
    out += ["", f"Certified optimal within the limit: {len(cert)} of {len(rows)} graphs. "
            f"Graphs of 1,000 operators or more: {len(big)}; of them within 1 % gap: "
            f"{sum(1 for r in big if pct(r['memsched'], r['lower_bound']) <= 1.0)}. "
            f"Largest gap: {fpct(max((pct(r['memsched'], r['lower_bound']) for r in rows), default=0))}.", "",
            "*Inductor gap* is Inductor's best-of measured against the lower bound: exactly its distance to the "
            "optimum on certified rows, at most that distance elsewhere."
            + (" On certified graphs it is up to "
               f"{max(pct(r['inductor'], r['lower_bound']) for r in cert):.2f} % "
               f"({max(cert, key=lambda r: pct(r['inductor'], r['lower_bound']))['graph']})." if cert else ""), "",
            "What changed since the previous table (issue 17; that run: 16 graphs, load 13-17, 60-120 s per graph, "
            "11 certified, open gaps bert_base_b1_s128 16.98 %, gpt2_medium_b1_s128 11.13 %, gpt2_medium_b2_s256 "
            "3.41 %, vit_b16_b1 0.44 %, llama_8l_b1_s128 0.06 %): on those graphs the *order* was what was off, and "
            "on the smaller gaps the bound as well. The peak of every heuristic (and of the old best order) sat where "
            "the tied embedding's two gradient contributions (94-206 MB each) are added at the end of the backward "
            "pass, with every weight gradient already computed. *Peak splitting* (docs/bounds.md 8) rebuilds the "
            "order around the minimum-cut state of the operator at the peak, which defers those weight gradients "
            "past the sum; *splitting at the last of a gradient set* ends the backward pass with the gradients "
            "whose inputs are cheapest. The *last-of-set bound* (docs/bounds.md 4a: the least memory while the "
            "last of the gradients of at least t bytes runs, one minimum cut per member) certifies the results. "
            "Not certified within the limit: "
            + (", ".join(f"{r['graph']} ({r['memsched'] - r['lower_bound']:,} B above the bound, "
                         f"{fpct(pct(r['memsched'], r['lower_bound']))})" for r in rows if r["status"] != "optimal")
               or "none") + ".", ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="rewrite the section from the results file")
    ap.add_argument("--inductor-only", action="store_true", help="add the real Inductor pass to the saved rows")
    a = ap.parse_args(argv)
    paths = sorted(CORPUS.glob("*.json.gz"))
    if a.only:
        keep = set(a.only.split(","))
        paths = [p for p in paths if p.name[: -len(".json.gz")] in keep]
    # results are merged by graph into benchmarks/results/corpus.json (``--only`` re-measures
    # some graphs); the section is rendered from every graph still shipped
    old = {r["graph"]: r for r in json.loads(RESULTS.read_text())} if RESULTS.exists() else {}
    if a.inductor_only:
        from memsched.instances import load_graph

        for p in paths:
            g = load_graph(p)
            if g.name in old:
                real_pass(g, old[g.name])
                print(g.name, old[g.name]["real"], old[g.name]["real_method"], f"{old[g.name]['real_s']:.2f} s",
                      flush=True)
        if not a.no_write:
            RESULTS.write_text(json.dumps(sorted(old.values(), key=lambda r: r["graph"]), indent=1) + "\n")
    for p in ([] if a.render_only or a.inductor_only else paths):
        row = run_graph(p, a.time_limit, a.workers)
        row["time_limit"] = a.time_limit
        row["workers"] = a.workers
        row["date"] = time.strftime("%Y-%m-%d", time.gmtime())
        row["cmd"] = " ".join([DEFAULT_CMD] + list(sys.argv[1:] if argv is None else argv))
        old[row["graph"]] = row
        print(json.dumps({k: v for k, v in row.items() if k != "heur"}), flush=True)
        if not a.no_write:
            RESULTS.write_text(json.dumps(sorted(old.values(), key=lambda r: r["graph"]), indent=1) + "\n")
    shipped = {p.name[: -len(".json.gz")] for p in CORPUS.glob("*.json.gz")}
    rows = sorted((r for r in old.values() if r["graph"] in shipped), key=lambda r: r["graph"])
    text = render(rows, a.time_limit, a.workers, DEFAULT_CMD)
    if not a.no_write:
        SECTION.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
