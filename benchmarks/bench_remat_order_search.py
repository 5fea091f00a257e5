"""A search over orders of first computations for a low-budget free-order schedule (issue 14, deliverable 3).

The free-order class with a cap is the union, over the topological orders pi, of the
given-order classes of pi; the stage class of pi (Checkmate's; solvers/remat/stage_class.py)
is a part of each. So any stage-class schedule of any pi is a free-order schedule within the
caps. This script looks for one within the budget by searching over pi (a heuristic: it
proves nothing, and a failure to reach the budget refutes nothing):

1. simulated annealing over topological orders (move one operator to a random position
   between its last producer and its first consumer, one to three moves per step), scored by
   the least peak of the stage greedy (``stage_greedy`` with ext weights 0, 0.5, 1: a few
   milliseconds per order on 100 operators);
2. a local search on the best order with the stage model (``build_remat_cp(...,
   objective="peak", fix_order=pi, stage_class=True)``, capacity clipped at the budget, one
   CP-SAT worker, hinted by the incumbent made stage-class): each step moves one or two
   operators within a few positions of the incumbent's peak operator and keeps the new
   order when the model's least peak is not higher.

   With ``--model given`` stage 2 solves the whole given-order class of each order
   (``stage_class=False``: recomputations anywhere, a larger model) instead of its stage class;
   ``--start kept`` starts from the first-computation order of the kept least-peak schedule (and
   hints it) instead of the BFS order.

Every schedule reported is re-checked by the evaluator (peak, computations per operator
within the cap). Appends a row (with the best schedule) to
benchmarks/results/remat_order_search.jsonl, keeps the least-peak schedule of all runs alone in
benchmarks/results/remat_order_search_GRAPH_R_capC.json (``memsched eval`` / ``memsched run``
read it) and renders benchmarks/sections/47-remat-order-search.md
from the last row of each (graph, ratio, cap, seed).

    nice .venv/bin/python benchmarks/bench_remat_order_search.py --graph rl_n100 --ratio 0.6 --cap 1 \\
        --anneal-s 240 --search-s 1500 --step-s 10 --seed 1
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
import time
from pathlib import Path

from bench_remat_lowbudget import DATA, GRAPHS, KNOWN_CAP1_PEAK, ROOT  # the same instances (benchmarks/ is on sys.path)

RESULTS = ROOT / "benchmarks" / "results" / "remat_order_search.jsonl"
SECTION = ROOT / "benchmarks" / "sections" / "47-remat-order-search.md"
GREEDY_WEIGHTS = (0.0, 0.5, 1.0)


class OrderSearch:
    """The two searches on one graph, budget and cap (see the module docstring)."""

    def __init__(self, g, B: int, cap: int, seed: int, say=print, model: str = "stage"):
        self.g, self.B, self.say = g, int(B), say
        self.model = model  # "stage": Checkmate's stage class of each order; "given": the given-order class
        self.caps = [int(cap)] * g.n_ops
        self.rng = random.Random(seed)
        self.preds = [set() for _ in range(g.n_ops)]
        self.succs = [set() for _ in range(g.n_ops)]
        for v in range(g.n_ops):
            for j in g.op_in[v]:
                p = g.producer[j]
                if p >= 0:
                    self.preds[v].add(p)
                    self.succs[p].add(v)
        self.best = None  # (peak, compute, order, schedule, how)
        self.log: list = []
        self.t0 = time.perf_counter()

    def _take(self, peak, order, sched, how) -> None:
        from memsched.formulations import evaluate

        if self.best is None or peak < self.best[0]:
            ev = evaluate(self.g, sched)
            assert ev.peak == peak
            self.best = (peak, ev.compute, list(order), sched, how)
            t = round(time.perf_counter() - self.t0, 1)
            self.log.append([t, peak, how])
            self.say(f"  {t:7.1f}s  least peak {peak} B ({how}; budget {self.B} B)")

    def move(self, order, centre=None, reach=12):
        o = list(order)
        pos = {v: i for i, v in enumerate(o)}
        if centre is None:
            v = self.rng.randrange(len(o))
        else:
            v = o[min(len(o) - 1, max(0, pos[centre] + self.rng.randint(-reach, reach)))]
        i = pos[v]
        lo = max((pos[p] for p in self.preds[v]), default=-1) + 1
        hi = min((pos[s] for s in self.succs[v]), default=len(o))
        o.pop(i)
        if hi > i:
            hi -= 1
        if lo > i:
            lo -= 1
        o.insert(self.rng.randint(lo, hi), v)
        return o

    def greedy(self, order):
        from memsched.formulations import evaluate
        from memsched.solvers.remat.stage_class import stage_greedy

        best = None
        for w in GREEDY_WEIGHTS:
            s = stage_greedy(self.g, self.B, self.caps, order, ext_weight=w)
            if s is not None:
                pk = evaluate(self.g, s).peak
                if best is None or pk < best[0]:
                    best = (pk, s)
        return best

    def anneal(self, start, seconds: float):
        """Stage 1; returns the best order found."""
        end = time.perf_counter() + seconds
        cur, cs = start, self.greedy(start)
        best = (cs[0], cur)
        self._take(cs[0], cur, cs[1], "stage greedy, start order")
        temp, it = 500.0, 0
        while time.perf_counter() < end and best[0] > self.B:
            it += 1
            cand = cur
            for _ in range(self.rng.randint(1, 3)):
                cand = self.move(cand)
            s = self.greedy(cand)
            if s is None:
                continue
            d = s[0] - cs[0]
            if d <= 0 or self.rng.random() < math.exp(-d / temp):
                cur, cs = cand, s
                if s[0] < best[0]:
                    best = (s[0], cand)
                    self._take(s[0], cand, s[1], f"stage greedy, annealing step {it}")
            temp = max(20.0, temp * 0.9995)
        self.anneal_steps = it
        return best[1]

    def stage_model(self, order, hint, seconds: float):
        from memsched.formulations import Graph, evaluate
        from memsched.formulations.remat_cpsat import build_remat_cp
        from memsched.solvers.remat.cp import INTERRUPTED, run_cpsat
        from memsched.solvers.remat.stage_class import stage_sequence

        g = self.g
        cands = []
        gr = self.greedy(order)
        if gr is not None:
            cands.append(gr[1])
        if hint is not None:
            gp = Graph(g.ops, g.tensors, pinned=g.pinned, outputs=g.outputs,
                       order=tuple(g.ops[v].name for v in order), name=g.name)
            h2 = stage_sequence(gp, hint, order)
            if h2 is not None:
                cands.append(h2)
        h = min(cands, key=lambda s: evaluate(g, s).peak)
        cp = build_remat_cp(g, None, self.caps, objective="peak", fix_order=order, stage_class=self.model == "stage")
        cp.model.Add(cp.capacity >= max(0, (self.B - cp.const_bytes) // cp.mem_unit))
        cp.hint(h)
        _st, sol, _b, _w, _log = run_cpsat(cp, seconds, self.rng.randrange(10_000), 1, False, f"{self.model} model")
        if INTERRUPTED.is_set():  # Ctrl-C inside CP-SAT: the runner stopped the search and kept its incumbent
            if sol is not None:
                self._take(evaluate(g, sol[0]).peak, order, sol[0], f"{self.model} model, interrupted")
            raise KeyboardInterrupt
        best = (evaluate(g, h).peak, h)
        if sol is not None:
            pk = evaluate(g, sol[0]).peak
            if pk < best[0]:
                best = (pk, sol[0])
        return best

    def local(self, order, seconds: float, step: float, hint=None):
        """Stage 2 from ``order`` (``hint``: a schedule to start the first model from)."""
        from memsched.formulations import evaluate

        end = time.perf_counter() + seconds
        pk, s = self.stage_model(order, hint, 2 * step)
        self._take(pk, order, s, f"{self.model} model, start order")
        it = 0
        while time.perf_counter() < end and pk > self.B:
            it += 1
            centre = s.events[evaluate(self.g, s).peak_event][1]
            cand = self.move(order, centre)
            if self.rng.random() < 0.5:
                cand = self.move(cand, centre)
            p2, s2 = self.stage_model(cand, s, min(step, max(0.5, end - time.perf_counter())))
            if p2 <= pk:
                if p2 < pk:
                    self._take(p2, cand, s2, f"{self.model} model, local step {it}")
                order, pk, s = cand, p2, s2
        self.local_steps = it


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default="rl_n100", choices=sorted(GRAPHS))
    ap.add_argument("--ratio", type=float, default=0.6)
    ap.add_argument("--cap", type=int, default=1, help="extra computations per operator (default 1)")
    ap.add_argument("--anneal-s", type=float, default=240.0, help="seconds of stage 1 (annealing)")
    ap.add_argument("--search-s", type=float, default=1500.0, help="seconds of stage 2 (local search)")
    ap.add_argument("--step-s", type=float, default=10.0, help="CP-SAT seconds per order in stage 2")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model", choices=("stage", "given"), default="stage",
                    help="class searched per order in stage 2: 'stage' (Checkmate's stage class, the default) or "
                         "'given' (the whole given-order class of that order: recomputations anywhere; larger model)")
    ap.add_argument("--start", choices=("bfs", "kept"), default="bfs",
                    help="stage 1 starts from the BFS order (default) or from the first-computation order of the "
                         "kept least-peak schedule (benchmarks/results/remat_order_search_GRAPH_R_capC.json)")
    ap.add_argument("--report-only", action="store_true", help="re-render the section from the results file")
    a = ap.parse_args(argv)
    if a.report_only:
        lines = render([json.loads(x) for x in RESULTS.read_text().splitlines() if x.strip()])
        SECTION.write_text("\n".join(lines))
        print("\n".join(lines))
        return 0
    for name, v, ok in (("--ratio", a.ratio, a.ratio > 0), ("--cap", a.cap, a.cap >= 0),
                        ("--anneal-s", a.anneal_s, a.anneal_s >= 0), ("--search-s", a.search_s, a.search_s >= 0),
                        ("--step-s", a.step_s, a.step_s > 0)):
        if not (ok and math.isfinite(v)):
            ap.error(f"{name} must be {'positive' if name in ('--ratio', '--step-s') else 'non-negative'}, got {v}")
    path = DATA / GRAPHS[a.graph]
    if not path.exists():
        print(f"{path} is absent (../shared/data): nothing to run", file=sys.stderr)
        return 1
    from memsched.formulations import evaluate
    from memsched.formulations.schedule import Schedule
    from memsched.instances.formats import load_graph
    from memsched.solvers.ordering.heuristics import bfs_order
    from memsched.solvers.remat.dispatch import resolve_budget

    g = load_graph(path)
    B = resolve_budget(g, a.ratio)
    load0 = os.getloadavg()[0]
    print(f"{a.graph}: budget {B} B (r = {a.ratio}), cap {a.cap}, load {load0:.1f}", file=sys.stderr)
    srch = OrderSearch(g, B, a.cap, a.seed, say=lambda m: print(m, file=sys.stderr, flush=True), model=a.model)
    srch.anneal_steps = srch.local_steps = 0
    stopped = "finished"
    start, kept = bfs_order(g), None
    if a.start == "kept":
        sf = schedule_file(a.graph, a.ratio, a.cap)
        if not sf.exists():
            ap.error(f"--start kept: {sf} does not exist (run once with --start bfs)")
        kept = Schedule.from_names(g, json.loads(sf.read_text())["events"])
        start = first_computations(kept)
    try:
        pi = srch.anneal(start, a.anneal_s)
        if srch.best[0] > B:
            srch.local(pi, a.search_s, a.step_s, hint=kept if pi == start else None)
    except KeyboardInterrupt:
        stopped = "interrupted (Ctrl-C): the best so far"
    peak, compute, order, sched, how = srch.best
    ev = evaluate(g, sched)
    counts = ev.compute_counts
    ok_caps = all(c <= 1 + a.cap for c in counts)
    firsts = first_computations(sched)
    row = {"graph": a.graph, "file": path.name, "ratio": a.ratio, "budget": B, "cap": a.cap, "seed": a.seed,
           "model": a.model, "start": a.start,
           "anneal_s": a.anneal_s, "search_s": a.search_s, "step_s": a.step_s, "load_at_start": round(load0, 1),
           "wall_s": round(time.perf_counter() - srch.t0, 1), "stopped": stopped,
           "anneal_steps": srch.anneal_steps, "local_steps": srch.local_steps,
           "least_peak": ev.peak, "within_budget": ev.peak <= B, "compute": ev.compute,
           "max_computations_per_op": max(counts), "caps_respected": ok_caps, "how": how,
           "trace": srch.log, "first_computation_order": [g.ops[v].name for v in firsts],
           "schedule": sched.to_names(g),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    # the schedule alone, in the format `memsched eval` / `memsched run` read: the least peak over all runs
    sf = schedule_file(a.graph, a.ratio, a.cap)
    kept = json.loads(sf.read_text()).get("peak") if sf.exists() else None
    if kept is None or ev.peak < kept:
        sf.write_text(json.dumps({"graph": path.name, "budget": B, "cap": a.cap, "peak": ev.peak, "seed": a.seed,
                                  "events": row["schedule"]}) + "\n")
    with RESULTS.open("a") as f:
        f.write(json.dumps(row) + "\n")
    lines = render([json.loads(x) for x in RESULTS.read_text().splitlines() if x.strip()])
    SECTION.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if ok_caps else 2


def first_computations(sched) -> list:
    """The operators of ``sched`` in the order of their first computations."""
    from memsched.formulations.schedule import COMPUTE

    firsts, seen = [], set()
    for kind, x in sched.events:
        if kind == COMPUTE and x not in seen:
            seen.add(x)
            firsts.append(x)
    return firsts


def command(r: dict) -> str:
    return (f"nice .venv/bin/python benchmarks/bench_remat_order_search.py --graph {r['graph']} --ratio {r['ratio']} "
            f"--cap {r['cap']} --anneal-s {r['anneal_s']:g} --search-s {r['search_s']:g} --step-s {r['step_s']:g} "
            f"--seed {r['seed']}" + "".join(f" --{k} {r[k]}" for k in ("model", "start")
                                            if r.get(k) not in (None, "stage", "bfs")))


def schedule_file(graph: str, ratio: float, cap: int) -> Path:
    return RESULTS.parent / f"remat_order_search_{graph}_{ratio:g}_cap{cap}.json"


def known(r: dict) -> str:
    """The least cap-1 peak documented before this search (r = 0.6 only), or '-'."""
    k = KNOWN_CAP1_PEAK.get(r["graph"]) if abs(r["ratio"] - 0.6) < 1e-9 and r["cap"] == 1 else None
    return "-" if k is None else str(k)


def render(rows: list) -> list:
    """The section's lines: the last row of each (graph, ratio, cap, seed), in first-run order."""
    last: dict = {}
    for r in rows:
        last[(r["graph"], r["ratio"], r["cap"], r["seed"])] = r
    out = [
        "## Low budgets: a search over orders of first computations (free order, a heuristic)",
        "",
        "benchmarks/bench_remat_order_search.py (its docstring describes the two stages; results: "
        "benchmarks/results/remat_order_search.jsonl; each best schedule alone, which `memsched eval GRAPH FILE` "
        "and `memsched run GRAPH FILE` read, the least peak of all runs: "
        "benchmarks/results/remat_order_search_GRAPH_R_capC.json). "
        "A stage-class schedule of any topological "
        "order is a free-order schedule, so this looks for a schedule within the budget; it proves nothing, "
        "and not reaching the budget refutes nothing. One run per row; every schedule re-checked by the "
        "evaluator (peak, computations per operator within the cap).",
        "",
        "| graph | r | budget | cap | seed | least peak found | within budget | compute | "
        "most computations of one operator | previous least peak | annealing steps | local steps | s | "
        "load at start | how |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in last.values():
        out.append(f"| {r['graph']} | {r['ratio']} | {r['budget']} | {r['cap']} | {r['seed']} | {r['least_peak']} | "
                   f"{'yes' if r['within_budget'] else 'no'} | {r['compute']:g} | {r['max_computations_per_op']} | "
                   f"{known(r)} | {r['anneal_steps']} | "
                   f"{r['local_steps']} | {r['wall_s']} | {r['load_at_start']} | {r['how']} |")
    out.append("")
    for r in last.values():
        out.append(f"* {r['graph']} at {r['ratio']}, cap {r['cap']} ({r['date']}; {r['stopped']}): `{command(r)}`. "
                   "Progress (seconds: least peak, stage): "
                   + "; ".join(f"{t}: {p} ({h.split(',')[0]})" for t, p, h in r["trace"]) + ".")
    out.append("")
    return out


if __name__ == "__main__":
    sys.exit(main())
